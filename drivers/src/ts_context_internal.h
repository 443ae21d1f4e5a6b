/* ts_context_internal.h — the execution context (ts_context.c) and the built-in thread pool
 * (ts_pool.c) as the drivers see them. Not public API. Plain C99. */
#ifndef TS_CONTEXT_INTERNAL_H
#define TS_CONTEXT_INTERNAL_H

#include <stddef.h>

#include "tilesmith.h"
#include "ts_pack_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The built-in pool (ts_pool.c): n - 1 worker threads plus the calling thread. */
typedef struct ts_pool ts_pool;
/* TS_OK, TS_ENOMEM (memory or threads), TS_EINVAL (n > 1 in a TS_NO_THREADS build). */
int ts_pool_create(unsigned n, ts_pool **out);
void ts_pool_free(ts_pool *pool);                     /* NULL is a no-op */
/* ts_parallel_for_fn of the pool: one call's tasks at a time, the caller runs tasks too. */
void ts_pool_parallel_for(void *pool, size_t n, ts_task_fn task, void *arg);

struct ts_context {
    uint32_t tag;                      /* TS_TAG_CONTEXT while live (ts_error_internal.h); first */
    ts_parallel_for_fn parallel_for;   /* NULL: tasks run in order on the calling thread */
    void *pool;                        /* its first argument */
    ts_pool *own_pool;                 /* the built-in pool, or NULL */
    unsigned threads;                  /* how many tasks may run at once (split target) */
    unsigned pool_width;               /* ts_context_set_pool_width; 0: TS_CALLER_POOL_SPLIT */
    int has_mask;                      /* feature_mask set: it replaces the global mask */
    unsigned feature_mask;
    int core_class;                    /* ts_context_set_cpu: TS_CORE_AUTO ("auto") or a class */
    unsigned cpu_part;                 /* ... and a named core's MIDR_EL1 part (its cache
                                          blocks, ts_blocks.c); 0 for "auto" and "generic" */
    void *workspace;                   /* caller's buffer, or NULL: allocate per call */
    size_t workspace_bytes;
    unsigned *workspace_busy;          /* -> busy_word (ts_context_create): mutable through a
                                          const context, as calls take one */
    unsigned busy_word;                /* 1 while a call uses the workspace (TS_EBUSY) */
    size_t l1d_bytes, l2_bytes;        /* ts_context_set_cache_sizes; 0: the path's own blocks */
    unsigned pack_layouts;             /* ts_context_set_pack_layouts: TS_LAYOUT_* bits */
};

/* The workspace guard: a call claims ctx's workspace with one atomic exchange (acquire) and
 * gives it back with a release store, so calls sharing a context never share scratch memory.
 * The flag is mutable state of a const context, like the built-in pool's: reached through the
 * context's pointer to it (*ctx->workspace_busy), not by casting const away. */
#if defined(__GNUC__) || defined(__clang__)
#  define TS_TRY_CLAIM(x) (__atomic_exchange_n(&(x), 1u, __ATOMIC_ACQUIRE) == 0u)
#  define TS_UNCLAIM(x)   __atomic_store_n(&(x), 0u, __ATOMIC_RELEASE)
#else
#  error "tilesmith's drivers need GCC / Clang atomic builtins (__atomic_exchange_n)"
#endif

/* Tasks a caller's parallel_for is assumed to run at once unless ts_context_set_pool_width
 * says otherwise (the work split of a context with a caller's pool; balanced shares for 1, 2,
 * 4 and 8 threads). */
#define TS_CALLER_POOL_SPLIT 8u

/* How many tasks can run at once with ctx (1 for NULL): what the work is split for. */
unsigned ts_context_threads(const ts_context *ctx);
/* The TS_LAYOUT_* bits ctx's GEMM packers store (both for NULL). */
unsigned ts_context_pack_layouts(const ts_context *ctx);
/* task(arg, i) for i in [0, n) with ctx's parallel_for (NULL ctx: in order, this thread). */
void ts_context_run(const ts_context *ctx, size_t n, ts_task_fn task, void *arg);

/* ---- dispatch with a context (ts_cpu.c; CPU names: ts_pack_internal.h ts_cpu_cores) -------- */
/* The path a call with ctx runs: ctx's feature mask (the global one when ctx is NULL or has
 * none) and ctx's CPU (ts_context_set_cpu: that name's core class; "auto" or NULL ctx: the
 * class of the core the calling thread runs on, MIDR_EL1 read per call). */
const ts_path *ts_select_path_ctx(const ts_context *ctx, int gemm_type);

/* The path a call with ctx runs, with its cache blocks for ctx's cache sizes (ts_blocks.c):
 * path itself when ctx is NULL or sets no size, path is NULL or its blocks do not follow a
 * core's caches (SME, GEMV); otherwise *sized, a copy of path with kc_steps, mc_panels and
 * kw_steps re-derived by gen/blocking.py's rules. */
const ts_path *ts_sized_path(const ts_context *ctx, const ts_path *path, ts_path *sized);

/* ts_select_path_ctx, and the Arm part number of the core the calling thread runs on when the
 * path follows that core (ctx's CPU "auto"; 0 otherwise or for other cores): MIDR_EL1 read
 * once (ts_cpu.c). */
const ts_path *ts_select_path_core(const ts_context *ctx, int gemm_type, unsigned *arm_part);

/* The path a call with ctx runs, with the cache blocks it runs: ts_sized_path for a context
 * that sets cache sizes; otherwise those of the core the thread runs on where the build knows
 * its part's caches (ts_cpu_cores), else the path's own (ts_blocks.c). */
const ts_path *ts_select_sized_path(const ts_context *ctx, int gemm_type, ts_path *sized);

/* The blocks a call with ctx may run `path` with, for the workspace sizes (the largest serves
 * a call on any core): i = 0 ts_sized_path; without sizes in ctx, i = 1 .. count those of the
 * known cores (ts_cpu_cores' with caches); NULL past the last. */
const ts_path *ts_sized_path_at(const ts_context *ctx, const ts_path *path, size_t i,
                                ts_path *sized);

/* The blocks (kc_steps, mc_panels, kw_steps) a workspace bound has sized one path with so
 * far: the cores of ts_sized_path_at often share them, and each distinct set is sized once. */
#define TS_BLOCKS_SEEN 8
typedef struct {
    size_t count;
    struct { size_t kc_steps, mc_panels, kw_steps; } blocks[TS_BLOCKS_SEEN];
} ts_blocks_seen;

/* 1 when path's blocks are in *seen already; else 0, and they are added (while there is room:
 * a full set answers 0, so a path is sized again rather than skipped). */
int ts_blocks_seen_before(ts_blocks_seen *seen, const ts_path *path);

/* ts_cache_sysfs.c: "1024K" / "2M" / "1G" / "32768" (an optional newline after) into bytes,
 * 0; anything else -1. The sizes of the Data / Unified caches of levels 1 and 2 described
 * under cache_dir (Linux: /sys/devices/system/cpu/cpuN/cache), as ts_cache_sizes_sysfs. */
int ts_parse_cache_size(const char *text, size_t *out);
int ts_cache_sizes_in(const char *cache_dir, size_t *l1d_bytes, size_t *l2_bytes);

#ifdef __cplusplus
}
#endif
#endif /* TS_CONTEXT_INTERNAL_H */
