/* ts_pool.c — the built-in thread pool behind ts_context_set_num_threads: n - 1 pthreads
 * workers and the calling thread. Tasks are dealt statically: thread `id` (the caller 0, the
 * workers 1 .. n-1) runs tasks id, id + n, id + 2n, ... (OpenMP's schedule(static, 1)), so
 * equal tasks give equal shares however late a worker wakes up. One call's tasks run at a time
 * (calls sharing a pool queue on call_lock). Built with TS_NO_THREADS (no pthreads), only a
 * pool of one thread exists. After fork() the child has none of the workers (POSIX: only the
 * forking thread is copied): a pool created by another process runs every task on the calling
 * thread (the same results: they never depend on the thread count) and is freed without
 * joining (fork between calls: a call in flight on another thread holds the pool's locks). Plain C99 + POSIX threads. */
#include <stdlib.h>

#include "ts_context_internal.h"
#include "ts_error_internal.h"

#ifndef TS_NO_THREADS
#include <pthread.h>
#include <unistd.h>

struct ts_pool {
    pthread_mutex_t call_lock;   /* held for the whole of one parallel_for */
    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t wake;         /* a new job (generation) or stop */
    pthread_cond_t done;         /* finished reached n */
    pthread_t *workers;
    void *slots;                 /* worker_slot[n_workers] */
    unsigned n_workers;
    ts_task_fn task;
    void *arg;
    size_t n, finished;
    unsigned long generation;
    int stop;
    pid_t owner;                 /* the process whose threads these are (fork: see above) */
};

typedef struct {
    ts_pool *pool;
    unsigned id;                 /* 1 .. n_workers */
} worker_slot;

/* Runs thread id's tasks of the current job; called and returns with pool->lock held. */
static void run_share(ts_pool *p, size_t id)
{
    const size_t n = p->n, stride = (size_t)p->n_workers + 1;
    ts_task_fn task = p->task;
    void *arg = p->arg;
    size_t ran = 0;
    pthread_mutex_unlock(&p->lock);
    for (size_t i = id; i < n; i += stride, ++ran)
        task(arg, i);
    pthread_mutex_lock(&p->lock);
    p->finished += ran;
    if (ran != 0 && p->finished == n)
        pthread_cond_signal(&p->done);
}

static void *worker_main(void *arg)
{
    worker_slot *slot = (worker_slot *)arg;
    ts_pool *p = slot->pool;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        run_share(p, slot->id);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void ts_pool_parallel_for(void *pool, size_t n, ts_task_fn task, void *arg)
{
    ts_pool *p = (ts_pool *)pool;
    if (n == 0)
        return;
    if (p->owner != getpid()) {   /* a forked child: no workers */
        for (size_t i = 0; i < n; ++i)
            task(arg, i);
        return;
    }
    pthread_mutex_lock(&p->call_lock);
    pthread_mutex_lock(&p->lock);
    p->task = task;
    p->arg = arg;
    p->n = n;
    p->finished = 0;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    run_share(p, 0);
    while (p->finished < p->n)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->call_lock);
}

/* Stops and joins the first `started` workers, frees everything. */
static void pool_destroy(ts_pool *p, unsigned started)
{
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0; i < started; ++i)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->call_lock);
    free(p->workers);
    free(p->slots);
    free(p);
}

int ts_pool_create(unsigned n, ts_pool **out)
{
    ts_pool *p = (ts_pool *)calloc(1, sizeof *p);
    if (p == NULL)
        return ts_fail(TS_ENOMEM, "out of memory (the thread pool)");
    p->n_workers = n > 1 ? n - 1 : 0;
    p->owner = getpid();
    p->workers = (pthread_t *)calloc(p->n_workers + 1, sizeof *p->workers);
    worker_slot *slots = (worker_slot *)calloc(p->n_workers + 1, sizeof *slots);
    p->slots = slots;
    if (p->workers == NULL || slots == NULL) {
        free(p->workers);
        free(slots);
        free(p);
        return ts_fail(TS_ENOMEM, "out of memory (the thread pool)");
    }
    pthread_mutex_init(&p->call_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (unsigned i = 0; i < p->n_workers; ++i) {
        slots[i].pool = p;
        slots[i].id = i + 1;
        if (pthread_create(&p->workers[i], NULL, worker_main, &slots[i]) != 0) {
            pool_destroy(p, i);
            return ts_fail(TS_ENOMEM, "pthread_create failed (the thread pool)");
        }
    }
    *out = p;
    return TS_OK;
}

void ts_pool_free(ts_pool *pool)
{
    if (pool == NULL)
        return;
    if (pool->owner == getpid()) {
        pool_destroy(pool, pool->n_workers);
        return;
    }
    /* A forked child: no workers to stop, and the condition variables still count the
     * parent's waiting workers, so destroying them would wait forever (glibc); only the
     * memory is freed. */
    free(pool->workers);
    free(pool->slots);
    free(pool);
}

#else /* TS_NO_THREADS: a pool of one thread runs the tasks in order */

struct ts_pool {
    int unused;
};

void ts_pool_parallel_for(void *pool, size_t n, ts_task_fn task, void *arg)
{
    (void)pool;
    for (size_t i = 0; i < n; ++i)
        task(arg, i);
}

int ts_pool_create(unsigned n, ts_pool **out)
{
    if (n > 1)
        return ts_fail(TS_EINVAL, "built with TS_NO_THREADS: one thread only");
    ts_pool *p = (ts_pool *)calloc(1, sizeof *p);
    if (p == NULL)
        return ts_fail(TS_ENOMEM, "out of memory (the thread pool)");
    *out = p;
    return TS_OK;
}

void ts_pool_free(ts_pool *pool)
{
    free(pool);
}
#endif
