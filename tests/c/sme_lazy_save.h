/* sme_lazy_save.h — the lazy ZA save check of the SME harnesses (sme_kernel_harness.c,
 * sme_pack_harness.c). A routine that may use ZA, called with a lazy save pending (PSTATE.ZA on,
 * TPIDR2_EL0 pointing at a TPIDR2 block: AAPCS64 SME, "ZA lazy saving scheme"), must commit it
 * first: the block's buffer then holds the caller's first num_za_save_slices ZA slices (SVL
 * bytes each) and not one byte more. The including harness defines, before this header: S (32-bit
 * lanes of a streaming vector), rng_next() (guarded.h), FAIL(...) and the sme_abi_helpers.S
 * declarations sme_svcr, sme_set_tpidr2 and sme_za_fill. */
#ifndef TESTS_SME_LAZY_SAVE_H
#define TESTS_SME_LAZY_SAVE_H

#include <stdint.h>
#include <stdlib.h>

/* The TPIDR2 block (AAPCS64 SME): the save buffer and how many ZA slices to save into it. */
typedef struct { void *za_save_buffer; uint16_t num_za_save_slices; uint8_t reserved[6]; } tpidr2_block;

/* ZA filled with random bytes and a lazy save of `slices` slices pending, then run(arg): one
 * call of the routine named `symbol`, which checks its results and SVCR = 0 and TPIDR2_EL0 = 0
 * afterwards itself; then the buffer must hold exactly those slices. */
static void check_lazy_save(const char *symbol, unsigned slices, void (*run)(const void *arg),
                            const void *arg)
{
    long svl = S * 4, rows = svl;           /* ZA: SVL/8 = svl bytes-per-vector rows */
    uint8_t *za = malloc((size_t)(rows * svl)), *buf = malloc((size_t)(rows * svl));
    for (long i = 0; i < rows * svl; i++) { za[i] = (uint8_t)(rng_next() >> 7); buf[i] = 0xa5; }
    tpidr2_block block = {buf, (uint16_t)slices, {0}};
    sme_za_fill(za);
    if (sme_svcr() != 2) FAIL("lazy save setup: SVCR = 0x%llx, expected ZA on",
                              (unsigned long long)sme_svcr());
    sme_set_tpidr2((uint64_t)(uintptr_t)&block);
    run(arg);
    for (long i = 0; i < rows * svl; i++) {
        uint8_t want = i < (long)slices * svl ? za[i] : 0xa5;
        if (buf[i] != want) {
            FAIL("%s: lazy save of %u slices: buffer byte %ld = 0x%02x, expected 0x%02x",
                 symbol, slices, i, buf[i], want);
            break;
        }
    }
    sme_set_tpidr2(0);
    free(za); free(buf);
}

#endif /* TESTS_SME_LAZY_SAVE_H */
