/* fpcr.h — read and write the calling thread's FPCR (AArch64, GCC / Clang inline assembly), for
 * the harnesses that run code under non-default rounding, flush-to-zero or default-NaN modes
 * (Arm ARM: FPCR.RMode bits 23:22, FZ bit 24, DN bit 25). */
#ifndef TESTS_FPCR_H
#define TESTS_FPCR_H

#include <stdint.h>

static inline uint64_t get_fpcr(void)
{
    uint64_t v;
    __asm__ volatile("mrs %0, fpcr" : "=r"(v));
    return v;
}

static inline void set_fpcr(uint64_t v)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(v));
}

#endif /* TESTS_FPCR_H */
