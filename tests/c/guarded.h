/* Test buffers placed flush against PROT_NONE guard pages: any read or write past the end
 * (or, with guarded_alloc_front, before the start) of a buffer faults at once. */
#ifndef TS_TEST_GUARDED_H
#define TS_TEST_GUARDED_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct { void *map; size_t map_len; } guarded_region;

/* Returns a buffer of `size` bytes whose last byte is the last byte before a guard page
 * (tail = 1) or whose first byte is the first byte after a guard page (tail = 0). */
static inline void *guarded_alloc_at(size_t size, int tail, guarded_region *r)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (size + page - 1) / page * page;
    if (body == 0) body = page;
    r->map_len = body + 2 * page;
    char *m = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); exit(2); }
    if (mprotect(m, page, PROT_NONE) || mprotect(m + page + body, page, PROT_NONE)) {
        perror("mprotect"); exit(2);
    }
    r->map = m;
    return tail ? m + page + body - size : m + page;
}
static inline void *guarded_alloc(size_t size, guarded_region *r) { return guarded_alloc_at(size, 1, r); }
static inline void guarded_free(guarded_region *r) { if (r->map) munmap(r->map, r->map_len); r->map = NULL; }

/* Deterministic test data (xorshift64*). The helpers are static inline: harnesses built with
 * -Werror need not use all of them. */
static uint64_t ts_test_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t rng_next(void)
{
    ts_test_rng ^= ts_test_rng >> 12; ts_test_rng ^= ts_test_rng << 25; ts_test_rng ^= ts_test_rng >> 27;
    return ts_test_rng * 0x2545F4914F6CDD1Dull;
}
#endif
