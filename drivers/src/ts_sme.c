/* ts_sme.c — what dispatch needs to run the SME kernels (ARCH v92, README "SME kernels"):
 * the streaming vector length, read at run time, which picks the one of the generated SME
 * paths (one per SVL 128..2048 bits, ts_dispatch.c) whose tile and panel layout fit it.
 *
 * The SME kernels take the NEON kernels' packed layout (a k-step is ep rows / hp columns x lp
 * elements, each row's / column's lp values contiguous) with ep = tr * S, hp = tc * S,
 * S = SVL / 32; so the ordinary driver loop (ts_gemm.c) serves them once the path's ep / hp
 * are those of the running SVL, and the path's streaming packers (gen/sme_pack.py,
 * ts_path.sme_pack_a / sme_pack_b; the C packers for other strides) pack their panels. A
 * packed B handle keeps its path, so it records the SVL it was packed for: used after the SVL
 * changed (prctl PR_SME_SET_VL) or with TS_FEAT_SME masked off, the handle is not the
 * selected path and *_prepacked returns TS_EINVAL (tilesmith.h), as for any other change of
 * dispatch.
 *
 * No SVE or SME instruction runs outside the kernels and the packers but RDSVL, and only when
 * the CPU reports FEAT_SME: the library built with -march=armv8-a runs on any Armv8.0 core.
 * Plain C99 plus one compile-guarded inline-assembly word. */
#include "ts_pack_internal.h"

size_t ts_sme_svl_bytes(void)
{
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    /* RDSVL X0, #1: X0 = SVL in bytes. "RDSVL ... This instruction does not require the PE to
     * be in Streaming SVE mode" (Arm DDI0616 SME supplement, RDSVL); written as its word
     * (encoder: `python3 -m encoder encode "rdsvl x0, #1"` = 0x04bf5820) so that assemblers
     * without SME accept it. */
    register unsigned long svl __asm__("x0");
    __asm__ volatile(".inst 0x04bf5820" : "=r"(svl));
    return (size_t)svl;
#else
    return 0;   /* no SME detection on this target (ts_cpu.c): never called */
#endif
}

int ts_sme_path_fits(const ts_path *path)
{
    return path->svl_bytes == 0 || path->svl_bytes == ts_sme_svl_bytes();
}
