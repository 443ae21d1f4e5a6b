/* ts_context.c — the execution context: creation, setters, and how a call runs its tasks.
 * (ts_context_workspace_size lives with the GEMM's workspace layout, in ts_gemm.c.)
 * Plain C99. */
#include <stdint.h>
#include <stdlib.h>

#include "ts_context_internal.h"
#include "ts_error_internal.h"

int ts_context_create(ts_context **out)
{
    if (out == NULL)
        return ts_fail(TS_EINVAL, "out (where the context goes) is NULL");
    ts_context *ctx = (ts_context *)calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return ts_fail(TS_ENOMEM, "out of memory (the context)");
    ctx->tag = TS_TAG_CONTEXT;
    ctx->threads = 1;
    ctx->workspace_busy = &ctx->busy_word;
    ctx->core_class = TS_CORE_AUTO;
    ctx->pack_layouts = TS_LAYOUT_GEMM | TS_LAYOUT_GEMV;
    *out = ctx;
    return TS_OK;
}

void ts_context_free(ts_context *ctx)
{
    /* not a live context (another handle type, freed already): nothing to free */
    if (ctx == NULL || !ts_context_ok(ctx))
        return;
    ts_pool_free(ctx->own_pool);
    ctx->tag = TS_TAG_FREED;
    free(ctx);
}

/* A context a setter may change: not NULL and live (ts_handle_ok); else the reason recorded. */
static int settable(const ts_context *ctx)
{
    return ctx != NULL ? ts_context_ok(ctx) : ts_reject("ctx is NULL");
}

/* Drops the built-in pool, if any: one thread, no parallel_for. */
static void drop_pool(ts_context *ctx)
{
    ts_pool_free(ctx->own_pool);
    ctx->own_pool = NULL;
    ctx->parallel_for = NULL;
    ctx->pool = NULL;
    ctx->threads = 1;
}

int ts_context_set_parallel_for(ts_context *ctx, ts_parallel_for_fn fn, void *pool)
{
    if (!settable(ctx))
        return TS_EINVAL;
    drop_pool(ctx);
    if (fn != NULL) {
        ctx->parallel_for = fn;
        ctx->pool = pool;
        ctx->threads = ctx->pool_width != 0 ? ctx->pool_width : TS_CALLER_POOL_SPLIT;
    }
    return TS_OK;
}

int ts_context_set_pool_width(ts_context *ctx, unsigned n)
{
    if (!settable(ctx))
        return TS_EINVAL;
    if (n == 0 || n > TS_MAX_THREADS)
        return ts_fail(TS_EINVAL, "pool width not in 1..TS_MAX_THREADS");
    ctx->pool_width = n;
    if (ctx->parallel_for != NULL && ctx->own_pool == NULL)   /* a caller's pool is set */
        ctx->threads = n;
    return TS_OK;
}

int ts_context_set_num_threads(ts_context *ctx, unsigned n)
{
    ts_pool *pool = NULL;
    if (!settable(ctx))
        return TS_EINVAL;
    if (n == 0 || n > TS_MAX_THREADS)
        return ts_fail(TS_EINVAL, "thread count not in 1..TS_MAX_THREADS");
    if (n > 1) {
        int err = ts_pool_create(n, &pool);   /* before dropping the old one: error = no change */
        if (err != TS_OK)
            return err;
    }
    drop_pool(ctx);
    if (pool != NULL) {
        ctx->own_pool = pool;
        ctx->parallel_for = ts_pool_parallel_for;
        ctx->pool = pool;
        ctx->threads = n;
    }
    return TS_OK;
}

int ts_context_set_feature_mask(ts_context *ctx, unsigned mask)
{
    if (!settable(ctx))
        return TS_EINVAL;
    ctx->has_mask = 1;
    ctx->feature_mask = mask;
    return TS_OK;
}

int ts_context_clear_feature_mask(ts_context *ctx)
{
    if (!settable(ctx))
        return TS_EINVAL;
    ctx->has_mask = 0;      /* ts_select_path_ctx reads the global mask again, call by call */
    ctx->feature_mask = 0;
    return TS_OK;
}

int ts_context_set_cpu(ts_context *ctx, const char *cpu)
{
    int core_class;
    if (!settable(ctx))
        return TS_EINVAL;
    if (cpu == NULL)
        return ts_fail(TS_EINVAL, "cpu is NULL");
    if (ts_cpu_lookup(cpu, &core_class) != TS_OK)
        return ts_fail(TS_EINVAL, "cpu is not \"auto\", \"generic\" or a core name of "
                                  "ts_context_set_cpu's list (tilesmith.h)");
    ctx->core_class = core_class;
    ctx->cpu_part = ts_cpu_named_part(cpu);
    return TS_OK;
}

int ts_context_set_workspace(ts_context *ctx, void *buf, size_t bytes)
{
    if (!settable(ctx))
        return TS_EINVAL;
    ctx->workspace = bytes != 0 ? buf : NULL;
    ctx->workspace_bytes = buf != NULL ? bytes : 0;
    return TS_OK;
}

static int cache_size_ok(size_t bytes)
{
    return bytes == 0 || (bytes >= TS_CACHE_MIN_BYTES && bytes <= TS_CACHE_MAX_BYTES);
}

int ts_context_set_cache_sizes(ts_context *ctx, size_t l1d_bytes, size_t l2_bytes)
{
    if (!settable(ctx))
        return TS_EINVAL;
    if (!cache_size_ok(l1d_bytes))
        return ts_fail(TS_EINVAL, "l1d_bytes not 0 or in TS_CACHE_MIN_BYTES..TS_CACHE_MAX_BYTES");
    if (!cache_size_ok(l2_bytes))
        return ts_fail(TS_EINVAL, "l2_bytes not 0 or in TS_CACHE_MIN_BYTES..TS_CACHE_MAX_BYTES");
    if (l1d_bytes != 0 && l2_bytes != 0 && l2_bytes < l1d_bytes)
        return ts_fail(TS_EINVAL, "l2_bytes smaller than l1d_bytes");
    ctx->l1d_bytes = l1d_bytes;
    ctx->l2_bytes = l2_bytes;
    return TS_OK;
}

unsigned ts_context_threads(const ts_context *ctx)
{
    return ctx != NULL ? ctx->threads : 1;
}

int ts_context_set_pack_layouts(ts_context *ctx, unsigned layouts)
{
    if (!settable(ctx))
        return TS_EINVAL;
    if (layouts == 0 || (layouts & ~(TS_LAYOUT_GEMM | TS_LAYOUT_GEMV)) != 0)
        return ts_fail(TS_EINVAL, "layouts is not TS_LAYOUT_GEMM, TS_LAYOUT_GEMV or both");
    ctx->pack_layouts = layouts;
    return TS_OK;
}

unsigned ts_context_pack_layouts(const ts_context *ctx)
{
    return ctx != NULL ? ctx->pack_layouts : TS_LAYOUT_GEMM | TS_LAYOUT_GEMV;
}

/* ---- the calling thread's state, adopted by tasks on other threads -------------------------
 * A task run by a pool thread must compute exactly what the calling thread would: with the
 * caller's FPCR (rounding mode, flush-to-zero: fp32 results identical for every thread count,
 * tilesmith.h) and, on Linux with SME, the caller's streaming vector length (the call chose
 * its SME path, packed its panels and sized its tiles for the caller's SVL, which is per
 * thread: prctl PR_SME_SET_VL). A task whose thread differs takes the caller's state for the
 * task and returns to its own after it. */
typedef struct {
    uint64_t fpcr;
    size_t svl_bytes;     /* 0: no SME on this CPU */
} thread_state;

#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#  define TS_HAVE_FPCR 1
#endif
#if defined(TS_HAVE_FPCR) && (defined(__linux__) || defined(__ANDROID__))
#  include <sys/prctl.h>
#  ifndef PR_SME_SET_VL
#    define PR_SME_SET_VL 63   /* Linux include/uapi/linux/prctl.h (6.3+; SME since 5.19) */
#  endif
#  define TS_SET_SVL 1
#endif

static thread_state this_thread_state(void)
{
    thread_state s = { 0, 0 };
#ifdef TS_HAVE_FPCR
    __asm__ volatile("mrs %0, fpcr" : "=r"(s.fpcr));
#endif
    if (ts_cpu_features() & TS_FEAT_SME)   /* RDSVL only where SME exists */
        s.svl_bytes = ts_sme_svl_bytes();
    return s;
}

static void set_thread_state(const thread_state *to, const thread_state *from)
{
#ifdef TS_HAVE_FPCR
    if (to->fpcr != from->fpcr)
        __asm__ volatile("msr fpcr, %0" : : "r"(to->fpcr));
#endif
#ifdef TS_SET_SVL
    if (to->svl_bytes != from->svl_bytes)   /* this thread's SVL for later SME code */
        prctl(PR_SME_SET_VL, (unsigned long)to->svl_bytes, 0UL, 0UL, 0UL);
#endif
    (void)to;
    (void)from;
}

typedef struct {
    ts_task_fn task;
    void *arg;
    thread_state caller;
} adopting_task;

static void run_adopting(void *p, size_t i)
{
    const adopting_task *t = (const adopting_task *)p;
    const thread_state own = this_thread_state();
    set_thread_state(&t->caller, &own);
    t->task(t->arg, i);
    set_thread_state(&own, &t->caller);
}

void ts_context_run(const ts_context *ctx, size_t n, ts_task_fn task, void *arg)
{
    if (ctx != NULL && ctx->parallel_for != NULL && n > 1) {
        adopting_task t = { task, arg, this_thread_state() };
        ctx->parallel_for(ctx->pool, n, run_adopting, &t);
        return;
    }
    for (size_t i = 0; i < n; ++i)
        task(arg, i);
}
