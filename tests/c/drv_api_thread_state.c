/* Thread state of the calling thread vs the pool's threads (ts_context.c, ts_pool.c):
 *   fpcr  the caller runs with FPCR rounding upward and flush-to-zero (fp32 GEMM 64x96x50 with
 *         products in the subnormal range): the built-in pool of 4 threads and a caller's
 *         parallel_for on 3 pthreads give the same bits as the one-thread call; the caller's
 *         FPCR is unchanged by the call, and each caller-pool thread's FPCR is its own again
 *         after its tasks;
 *   svl   (SME builds, Linux) a pool of 4 threads created at the default streaming vector
 *         length, then the caller moves to every other SVL the CPU takes (prctl
 *         PR_SME_SET_VL): the pooled fp32 and int8 GEMMs give the one-thread call's bits; the
 *         workers' SVL is their own again afterwards (a caller-pool thread checks);
 *   fork  after fork() the child's context with a built-in pool of 4 threads still computes
 *         (on the calling thread: the workers are not copied) the parent's bits, and frees it.
 * Argument: fpcr | svl | fork. Prints "failures N" last. */
#include "drv_api_common.h"   /* first: it sets _DEFAULT_SOURCE */

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fpcr.h"

#ifndef PR_SME_SET_VL
#define PR_SME_SET_VL 63        /* Linux include/uapi/linux/prctl.h */
#define PR_SME_GET_VL 64
#endif
#define PR_SME_VL_LEN_MASK 0xffff

#define M 64
#define N 96
#define K 50

static float A[M * K], B[K * N], C0[M * N], C1[M * N];
static int8_t A8[M * K], B8[K * N];
static int32_t I0[M * N], I1[M * N];

/* ---- a caller's pool: 3 pthreads that start in the state the process had at the start (as
 * the long-lived threads of an engine's pool would), each checking its FPCR / SVL is that
 * again after its tasks (threads created now would inherit the caller's, Linux clone) ---- */
typedef struct {
    size_t n, next;
    ts_task_fn task;
    void *arg;
    pthread_mutex_t lock;
    uint64_t base_fpcr;
    long base_vl;             /* 0: no SME */
    int changed;              /* a thread's state differed after its tasks */
} own_pool;
static own_pool pool = { 0, 0, NULL, NULL, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

static long sme_vl(void)
{
    long vl = prctl(PR_SME_GET_VL, 0, 0, 0, 0);
    return vl < 0 ? 0 : vl & PR_SME_VL_LEN_MASK;
}

static void *own_worker(void *p)
{
    own_pool *pool = (own_pool *)p;
    set_fpcr(pool->base_fpcr);
    if (pool->base_vl != 0)
        prctl(PR_SME_SET_VL, pool->base_vl, 0, 0, 0);
    const uint64_t fpcr = get_fpcr();
    const long vl = sme_vl();
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t i = pool->next++;
        pthread_mutex_unlock(&pool->lock);
        if (i >= pool->n)
            break;
        pool->task(pool->arg, i);
    }
    if (get_fpcr() != fpcr || sme_vl() != vl) {
        pthread_mutex_lock(&pool->lock);
        pool->changed = 1;
        pthread_mutex_unlock(&pool->lock);
    }
    return NULL;
}

static void own_parallel_for(void *p, size_t n, ts_task_fn task, void *arg)
{
    own_pool *pool = (own_pool *)p;
    pthread_t t[3];
    pool->n = n;
    pool->next = 0;
    pool->task = task;
    pool->arg = arg;
    for (int i = 0; i < 3; ++i)
        pthread_create(&t[i], NULL, own_worker, pool);
    for (int i = 0; i < 3; ++i)
        pthread_join(t[i], NULL);
}

static void fill(void)
{
    for (size_t i = 0; i < M * K; ++i) {
        A[i] = (float)((int)(rng_next() % 2001) - 1000) * 1e-21f;   /* products ~1e-39: subnormal */
        A8[i] = rand_s8();
    }
    for (size_t i = 0; i < K * N; ++i) {
        B[i] = (float)((int)(rng_next() % 2001) - 1000) * 1e-21f;
        B8[i] = rand_s8();
    }
}

/* Contexts made before the caller's state changes: a built-in pool of 4 threads (its workers
 * keep the state they started with) and the caller's pool above. */
static ts_context *builtin, *caller_pool;

static void make_contexts(void)
{
    pool.base_fpcr = get_fpcr();
    pool.base_vl = sme_vl();
    CHECK(ts_context_create(&builtin) == TS_OK && ts_context_set_num_threads(builtin, 4) == TS_OK
          && ts_context_create(&caller_pool) == TS_OK
          && ts_context_set_parallel_for(caller_pool, own_parallel_for, &pool) == TS_OK,
          "contexts");
}

/* The one-thread results (C0, I0), then each context's (C1, I1) must equal them. */
static void compare_contexts(const char *what)
{
    CHECK(ts_gemm_f32(M, N, K, A, K, B, N, C0, N) == TS_OK, "%s: f32 one thread", what);
    CHECK(ts_gemm_s8s32(M, N, K, A8, K, B8, N, I0, N) == TS_OK, "%s: s8s32 one thread", what);
    for (int mode = 0; mode < 2; ++mode) {
        const ts_context *ctx = mode == 0 ? builtin : caller_pool;
        memset(C1, 0, sizeof C1);
        memset(I1, 0, sizeof I1);
        int rc = ts_gemm_f32_ctx(ctx, M, N, K, A, K, B, N, C1, N);
        CHECK(rc == TS_OK && memcmp(C0, C1, sizeof C0) == 0, "%s: f32 %s differs from one thread",
              what, mode == 0 ? "built-in pool of 4" : "caller's pool");
        rc = ts_gemm_s8s32_ctx(ctx, M, N, K, A8, K, B8, N, I1, N);
        CHECK(rc == TS_OK && memcmp(I0, I1, sizeof I0) == 0,
              "%s: s8s32 %s differs from one thread", what,
              mode == 0 ? "built-in pool of 4" : "caller's pool");
    }
    CHECK(!pool.changed, "%s: a caller-pool thread kept the caller's FPCR / SVL", what);
}

static void fpcr_case(void)
{
    const uint64_t saved = get_fpcr();
    /* FPCR.RMode = 0b01 (round towards +Inf, bits 23:22), FPCR.FZ (bit 24): Arm ARM FPCR */
    const uint64_t caller = (saved & ~(3ull << 22)) | (1ull << 22) | (1ull << 24);
    set_fpcr(caller);
    compare_contexts("fpcr");
    CHECK(get_fpcr() == caller, "fpcr: the call changed the caller's FPCR");
    set_fpcr(saved);
}

static void svl_case(void)
{
    const long start = sme_vl();
    if (start == 0) {
        printf("no SME\n");
        return;
    }
    static const long lengths[] = { 16, 32, 64, 128, 256 };
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; ++i) {
        if (lengths[i] == start)
            continue;
        long got = prctl(PR_SME_SET_VL, lengths[i], 0, 0, 0);
        if (got < 0 || (got & PR_SME_VL_LEN_MASK) != lengths[i])
            continue;   /* a length this CPU does not take */
        char what[32];
        snprintf(what, sizeof what, "svl %ld (pool at %ld)", lengths[i], start);
        compare_contexts(what);
        printf("checked %s\n", what);
        prctl(PR_SME_SET_VL, start, 0, 0, 0);
    }
}

static void fork_case(void)
{
    ts_context *ctx = NULL;
    CHECK(ts_context_create(&ctx) == TS_OK && ts_context_set_num_threads(ctx, 4) == TS_OK,
          "fork: context");
    CHECK(ts_gemm_f32(M, N, K, A, K, B, N, C0, N) == TS_OK, "fork: one thread");
    CHECK(ts_gemm_f32_ctx(ctx, M, N, K, A, K, B, N, C1, N) == TS_OK, "fork: parent's pool");
    pid_t child = fork();
    if (child == 0) {
        alarm(120);   /* a hang fails the test instead of stalling it */
        memset(C1, 0, sizeof C1);
        int rc = ts_gemm_f32_ctx(ctx, M, N, K, A, K, B, N, C1, N);
        ts_context_free(ctx);
        _exit(rc == TS_OK && memcmp(C0, C1, sizeof C0) == 0 ? 0 : 3);
    }
    int status = 0;
    CHECK(child > 0 && waitpid(child, &status, 0) == child, "fork: waitpid");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "fork: the child's call %s (status 0x%x)",
          WIFSIGNALED(status) ? "hung or crashed" : "was wrong", status);
    ts_context_free(ctx);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    fill();
    make_contexts();
    if (strcmp(mode, "fpcr") == 0)
        fpcr_case();
    else if (strcmp(mode, "svl") == 0)
        svl_case();
    else if (strcmp(mode, "fork") == 0)
        fork_case();
    else
        CHECK(0, "unknown mode \"%s\"", mode);
    ts_context_free(builtin);
    ts_context_free(caller_pool);
    printf("failures %d\n", failures);
    return failures != 0;
}
