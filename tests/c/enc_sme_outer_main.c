/* Runs tests/c/enc_sme_outer.S (rewritten to .inst words) against a C reference.
 * Usage: enc_sme_outer_main SVL_BYTES -- exits 0 and prints "ok" when every case matches. */
#include <stdio.h>
#include <stdlib.h>

long enc_sme_svl(void);
long enc_sme_outer(const float *a, const float *b, float *c, float *ct, long k, long n);

static float a_value(long kk, long i) { return (float)((i * 7 + kk * 3) % 11 - 5); }
static float b_value(long kk, long j) { return (float)((j * 5 + kk * 2) % 9 - 4); }
static float c_value(long i, long j) { return (float)((i * 13 + j) % 17 - 8); }
#define SENTINEL 999.0f

/* ZA0.S[i][j] after the call: small integers, so fp32 sums are exact. */
static float expected(long i, long j, long k, long n) {
    float sum = c_value(i, j);
    for (long kk = 0; kk < k && j < n; kk++) sum += a_value(kk, i) * b_value(kk, j);
    return sum;
}

static int run_case(long s, long k, long n) {
    float *a = malloc(sizeof(float) * (size_t)(k ? k : 1) * s);
    float *b = malloc(sizeof(float) * (size_t)(k ? k : 1) * s);
    float *c = malloc(sizeof(float) * s * s), *ct = malloc(sizeof(float) * s * s);
    for (long kk = 0; kk < k; kk++)
        for (long i = 0; i < s; i++) {
            a[kk * s + i] = a_value(kk, i);
            b[kk * s + i] = b_value(kk, i);
        }
    for (long i = 0; i < s * s; i++) { c[i] = c_value(i / s, i % s); ct[i] = SENTINEL; }
    long svl = enc_sme_outer(a, b, c, ct, k, n);
    int bad = svl != s * 4;
    for (long i = 0; i < s && !bad; i++)
        for (long j = 0; j < s && !bad; j++) {
            float want = expected(i, j, k, n);
            if (c[i * s + j] != want || ct[j * s + i] != want) {
                printf("k=%ld n=%ld: c[%ld][%ld]=%g ct[%ld][%ld]=%g, expected %g\n", k, n, i, j,
                       c[i * s + j], j, i, ct[j * s + i], want);
                bad = 1;
            }
        }
    if (svl != s * 4) printf("k=%ld n=%ld: returned SVL %ld bytes, expected %ld\n", k, n, svl, s * 4);
    free(a); free(b); free(c); free(ct);
    return bad;
}

int main(int argc, char **argv) {
    long want_bytes = argc > 1 ? atol(argv[1]) : 0;
    long svl = enc_sme_svl();
    if (svl != want_bytes) {
        printf("SVL %ld bytes, expected %ld\n", svl, want_bytes);
        return 1;
    }
    long s = svl / 4;
    long cases[][2] = {{0, s}, {1, s}, {3, s}, {4, s - 1}, {5, 1}, {2, 0}};
    int bad = 0;
    for (unsigned t = 0; t < sizeof cases / sizeof cases[0]; t++)
        bad |= run_case(s, cases[t][0], cases[t][1]);
    if (!bad) printf("ok svl=%ld\n", svl);
    return bad;
}
