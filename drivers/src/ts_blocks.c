/* ts_blocks.c — a path's cache blocks (kc_steps, mc_panels, kw_steps) for cache sizes known
 * only at run time: ts_context_set_cache_sizes. The generator sizes every path's blocks for
 * the smallest L1D and L2 of the cores its class covers (gen/blocking.py): for the
 * out-of-order class that is Cortex-A710's 512 KB L2, while a Neoverse N2 or V1 may have 1 MB
 * (their TRMs allow 512 KB or 1 MB), so the MIDR part number alone does not give the size. An
 * engine that knows its hardware passes the sizes; the blocks are then re-derived here with
 * the generator's rules (gen/blocking.py block_sizes and whole_k_steps, which
 * tests/test_drivers_cache_sizes.py checks this against). A context that passes no sizes
 * gets, on a core whose MIDR_EL1 part number the build's table gives caches (ts_cpu_cores, from
 * gen/cores.py MEMORY: one configuration per modeled core, e.g. the Neoverse N2's 1 MB of
 * Alibaba's Yitian 710), the blocks for that core's caches (ts_select_sized_path); other cores, and
 * contexts with a fixed CPU (ts_context_set_cpu), the path's own.
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

/* path with its blocks for L1D l1 and L2 l2 bytes (0: the path's own): path itself when they
 * are its own or its blocks do not follow a core's caches, else *sized. */
static const ts_path *sized_for(const ts_path *path, size_t l1, size_t l2, ts_path *sized)
{
    if (path == NULL || path->block_l1 == 0)
        return path;
    l1 = l1 != 0 ? l1 : path->block_l1;
    l2 = l2 != 0 ? l2 : path->block_l2;
    if (l1 == path->block_l1 && l2 == path->block_l2)
        return path;
    *sized = *path;
    derive_blocks(sized, l1, l2);
    return sized;
}

static int sets_sizes(const ts_context *ctx)
{
    return ctx != NULL && (ctx->l1d_bytes != 0 || ctx->l2_bytes != 0);
}

const ts_path *ts_sized_path(const ts_context *ctx, const ts_path *path, ts_path *sized)
{
    if (!sets_sizes(ctx))
        return path;
    return sized_for(path, ctx->l1d_bytes, ctx->l2_bytes, sized);
}

/* The i-th (from 0) core of ts_cpu_cores whose caches the build models, NULL past the last. */
static const ts_cpu_core *core_with_caches(size_t i)
{
    size_t count;
    const ts_cpu_core *cores = ts_cpu_cores(&count);
    for (size_t c = 0; c < count; ++c)
        if (cores[c].l1d_bytes != 0 && i-- == 0)
            return &cores[c];
    return NULL;
}

const ts_path *ts_select_sized_path(const ts_context *ctx, int gemm_type, ts_path *sized)
{
    unsigned part;
    const ts_path *path = ts_select_path_core(ctx, gemm_type, &part);
    if (sets_sizes(ctx) || part == 0)
        return ts_sized_path(ctx, path, sized);
    const ts_cpu_core *core;
    for (size_t i = 0; (core = core_with_caches(i)) != NULL; ++i)
        if (core->part == part)
            return sized_for(path, core->l1d_bytes, core->l2_bytes, sized);
    return path;
}

const ts_path *ts_sized_path_at(const ts_context *ctx, const ts_path *path, size_t i,
                                ts_path *sized)
{
    if (i == 0)
        return ts_sized_path(ctx, path, sized);
    const ts_cpu_core *core = core_with_caches(i - 1);
    if (sets_sizes(ctx) || core == NULL)
        return NULL;
    return sized_for(path, core->l1d_bytes, core->l2_bytes, sized);
}

int ts_blocks_seen_before(ts_blocks_seen *seen, const ts_path *path)
{
    for (size_t i = 0; i < seen->count; ++i)
        if (seen->blocks[i].kc_steps == path->kc_steps
            && seen->blocks[i].mc_panels == path->mc_panels
            && seen->blocks[i].kw_steps == path->kw_steps)
            return 1;
    if (seen->count < TS_BLOCKS_SEEN) {
        seen->blocks[seen->count].kc_steps = path->kc_steps;
        seen->blocks[seen->count].mc_panels = path->mc_panels;
        seen->blocks[seen->count].kw_steps = path->kw_steps;
        ++seen->count;
    }
    return 0;
}
