/* ts_context.c — the execution context: creation, setters, and how a call runs its tasks.
 * (ts_context_workspace_size lives with the GEMM's workspace layout, in ts_gemm.c.)
 * Plain C99. */
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
    ctx->threads = 1;
    ctx->core_class = TS_CORE_AUTO;
    *out = ctx;
    return TS_OK;
}

void ts_context_free(ts_context *ctx)
{
    if (ctx == NULL)
        return;
    ts_pool_free(ctx->own_pool);
    free(ctx);
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
    if (ctx == NULL)
        return ts_fail(TS_EINVAL, "ctx is NULL");
    drop_pool(ctx);
    if (fn != NULL) {
        ctx->parallel_for = fn;
        ctx->pool = pool;
        ctx->threads = TS_CALLER_POOL_SPLIT;
    }
    return TS_OK;
}

int ts_context_set_num_threads(ts_context *ctx, unsigned n)
{
    ts_pool *pool = NULL;
    if (ctx == NULL)
        return ts_fail(TS_EINVAL, "ctx is NULL");
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
    if (ctx == NULL)
        return ts_fail(TS_EINVAL, "ctx is NULL");
    ctx->has_mask = 1;
    ctx->feature_mask = mask;
    return TS_OK;
}

int ts_context_set_cpu(ts_context *ctx, const char *cpu)
{
    int core_class;
    if (ctx == NULL)
        return ts_fail(TS_EINVAL, "ctx is NULL");
    if (ts_cpu_lookup(cpu, &core_class) != TS_OK)
        return ts_fail(TS_EINVAL, "cpu is NULL or not \"auto\" or a CPU= name of this build");
    ctx->core_class = core_class;
    return TS_OK;
}

int ts_context_set_workspace(ts_context *ctx, void *buf, size_t bytes)
{
    if (ctx == NULL)
        return ts_fail(TS_EINVAL, "ctx is NULL");
    ctx->workspace = bytes != 0 ? buf : NULL;
    ctx->workspace_bytes = buf != NULL ? bytes : 0;
    return TS_OK;
}

unsigned ts_context_threads(const ts_context *ctx)
{
    return ctx != NULL ? ctx->threads : 1;
}

void ts_context_run(const ts_context *ctx, size_t n, ts_task_fn task, void *arg)
{
    if (ctx != NULL && ctx->parallel_for != NULL && n > 1) {
        ctx->parallel_for(ctx->pool, n, task, arg);
        return;
    }
    for (size_t i = 0; i < n; ++i)
        task(arg, i);
}
