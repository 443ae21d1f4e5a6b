/* ts_blocks.c — a path's cache blocks (kc_steps, mc_panels, kw_steps) for cache sizes known
 * only at run time: ts_context_set_cache_sizes. The generator sizes every path's blocks for
 * the smallest L1D and L2 of the cores its class covers (gen/blocking.py): for the
 * out-of-order class that is Cortex-A710's 512 KB L2, while a Neoverse N2 or V1 may have 1 MB
 * (their TRMs allow 512 KB or 1 MB), so the MIDR part number alone does not give the size. An
 * engine that knows its hardware passes the sizes; the blocks are then re-derived here with
 * the generator's rules (gen/blocking.py block_sizes and whole_k_steps, which
 * tests/test_drivers_cache_sizes.py checks this against).
 *
 * Results do not depend on the blocks: every output element is the same kernel's
 * accumulation over k in order, whatever the K blocks (int32 exactly; fp32 through C's fp32
 * accumulators, which a K block stores and the next loads unchanged: the same fused
 * multiply-add chain), and the M blocks only group the A panels.
 * Plain C99. */
#include "ts_context_internal.h"

static size_t at_least_1(size_t n)
{
    return n != 0 ? n : 1;
}

/* gen/blocking.py block_sizes and whole_k_steps for L1D l1 and L2 l2 bytes. */
static void derive_blocks(ts_path *p, size_t l1, size_t l2)
{
    const size_t step = p->lp * p->block_elem;      /* bytes of one k-step of one row */
    p->kc_steps = at_least_1((l1 / 2) / (p->hp * step));
    p->mc_panels = at_least_1((l2 / 2) / (p->kc_steps * step * p->ep));
    p->kw_steps = p->kc_steps;
    if (p->kw_from_l2) {
        size_t fit = l2 / ((p->mc_panels * p->ep + p->hp) * step);
        p->kw_steps = fit > p->kc_steps ? fit : p->kc_steps;
    }
}

const ts_path *ts_sized_path(const ts_context *ctx, const ts_path *path, ts_path *sized)
{
    if (ctx == NULL || path == NULL || path->block_l1 == 0
        || (ctx->l1d_bytes == 0 && ctx->l2_bytes == 0))
        return path;
    *sized = *path;
    derive_blocks(sized, ctx->l1d_bytes != 0 ? ctx->l1d_bytes : path->block_l1,
                  ctx->l2_bytes != 0 ? ctx->l2_bytes : path->block_l2);
    return sized;
}
