/* tbcount — QEMU TCG plugin: how many times every translation block (TB) executes and,
 * optionally, the data-cache misses its loads and stores cause on simulated cores.
 *
 * Build (host compiler, no QEMU headers needed):
 *     gcc -O2 -shared -fPIC -fvisibility=hidden -o tbcount.so tbcount.c -lpthread
 * Use:
 *     qemu-aarch64 -cpu max -plugin ./tbcount.so,out=PROFILE.txt[,mark=HEXADDR][,cache=SPEC…] PROG
 *
 * mark=HEXADDR: every time the block at that guest address executes, all counts restart from
 * zero, so only what runs after the last such execution is reported (the benchmark places a
 * marker function right before the operation it measures). With caches, the mark also empties
 * them: the measured operation starts cold, its operands coming from memory at first touch.
 *
 * cache=NAME:L1_BYTES:L1_WAYS:L2_BYTES:L2_WAYS:LINE_BYTES (repeatable, up to MAX_CACHES): also
 * simulate this core's L1D and L2 on every guest load and store. Policies: true LRU per set;
 * write-back, write-allocate L1D; an L1D miss reads the line from L2 (allocating it there, an
 * L2 miss reads it from memory); an L1D dirty eviction writes the line into L2 (allocating it
 * without a read; its own dirty victim goes to memory); L2 is neither inclusive nor exclusive
 * of L1D. Write streaming: the linefill of a line that stores write whole before it is needed
 * reads nothing from memory (see ws_store). Each vCPU (each guest thread under qemu-user) has private caches (qemu-user may give
 * a new thread the index of one that has exited: their counts then add up). Addresses are
 * guest virtual addresses (qemu-user has no other: qemu_plugin_get_hwaddr gives NULL there).
 * Instruction fetches are not simulated, nor DC ZVA (QEMU writes the block without a memory
 * callback and API v1 cannot read its address register): its executions are counted instead.
 * Every miss and write-back is charged to the block of
 * the access that caused it. With caches, executions are counted per vCPU too (a callback per
 * block instead of the inline add) so per-thread figures are exact.
 *
 * At guest exit it writes, after a "# tbcount 2" header and a "# cache INDEX NAME L1 WAYS L2
 * WAYS LINE" line per simulated core, one line per block executed (after the mark):
 *     <vaddr hex> <instructions> <executions> <instruction bytes hex>
 * and, with caches, below each block, per vCPU that ran it:
 *     v <vcpu> <executions> <memory accesses>
 *     m <vcpu> <cache index> <L1D misses> <L2 misses> <L1D write-backs> <L2 write-backs>
 *     z <vcpu> <DC ZVA executions>
 * (m and z lines only when one of their counts is non-zero). A block is identified by its guest
 * address and its bytes, so a block QEMU translates again keeps one counter. Without caches,
 * counting is an inline add at block entry (exact for a single-threaded guest).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The QEMU plugin API, version 1 --------------------------------------------------
 * Declared here because Debian ships no qemu-plugin.h. Source: QEMU 7.2,
 * include/qemu/qemu-plugin.h (QEMU_PLUGIN_VERSION 1); only the entry points used below. */
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t;          /* opaque here: not read */
typedef uint32_t qemu_plugin_meminfo_t;          /* size shift, sign, endianness, store bits */
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
void qemu_plugin_outs(const char *string);

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

/* ---- Block table: open addressing, entries never move (QEMU holds &entry->count) ----- */
typedef struct {
    uint64_t vaddr;
    uint64_t count;          /* incremented by QEMU's inline add at every block entry */
    uint64_t base;           /* count at the last mark: the report is count - base */
    size_t id;               /* 0, 1, 2… in order of creation: index of the per-vCPU counters */
    size_t n_insns;
    size_t n_bytes;
    unsigned char *bytes;
} block;

static block **table;
static size_t table_size;    /* power of two */
static size_t table_used;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static char *out_path;
static uint64_t mark_vaddr;
static bool have_mark;

static void die(const char *what)
{
    fprintf(stderr, "tbcount: %s\n", what);
    abort();
}

static uint64_t block_hash(uint64_t vaddr, const unsigned char *bytes, size_t n)
{
    uint64_t h = vaddr * 0x9E3779B97F4A7C15ull;   /* FNV-1a over the bytes, seeded by address */
    for (size_t i = 0; i < n; i++) h = (h ^ bytes[i]) * 0x100000001B3ull;
    return h ^ (h >> 29);
}

static bool block_equals(const block *b, uint64_t vaddr, const unsigned char *bytes, size_t n)
{
    return b->vaddr == vaddr && b->n_bytes == n && memcmp(b->bytes, bytes, n) == 0;
}

static void table_insert(block *b)
{
    size_t mask = table_size - 1;
    size_t i = block_hash(b->vaddr, b->bytes, b->n_bytes) & mask;
    while (table[i]) i = (i + 1) & mask;
    table[i] = b;
    table_used++;
}

static void table_grow(void)
{
    block **old = table;
    size_t old_size = table_size;
    table_size = old_size ? old_size * 2 : 4096;
    table = calloc(table_size, sizeof *table);
    if (!table) die("out of memory");
    table_used = 0;
    for (size_t i = 0; i < old_size; i++)
        if (old[i]) table_insert(old[i]);
    free(old);
}

static size_t blocks_created;

/* The entry for this block, created on first sight. Caller holds table_lock. */
static block *block_lookup(uint64_t vaddr, const unsigned char *bytes, size_t n_bytes, size_t n_insns)
{
    if (2 * (table_used + 1) > table_size) table_grow();
    size_t mask = table_size - 1;
    for (size_t i = block_hash(vaddr, bytes, n_bytes) & mask; table[i]; i = (i + 1) & mask)
        if (block_equals(table[i], vaddr, bytes, n_bytes)) return table[i];
    block *b = calloc(1, sizeof *b);
    if (!b || !(b->bytes = malloc(n_bytes ? n_bytes : 1))) die("out of memory");
    memcpy(b->bytes, bytes, n_bytes);
    b->vaddr = vaddr;
    b->n_bytes = n_bytes;
    b->n_insns = n_insns;
    b->id = blocks_created++;
    table_insert(b);
    return b;
}

/* ---- Cache simulation ------------------------------------------------------------------ */
#define MAX_CACHES 8
#define MAX_VCPUS 256
#define NAME_MAX_LEN 31
#define EMPTY_WAY UINT64_MAX         /* a way holding no line */
#define NO_LINE UINT64_MAX

typedef struct {
    char name[NAME_MAX_LEN + 1];
    uint64_t l1_bytes, l1_ways, l2_bytes, l2_ways, line_bytes;
} cache_spec;

/* One level: sets x ways entries, each set ordered most recently used first. An entry is
 * (line number << 1) | dirty, or EMPTY_WAY. */
typedef struct {
    uint64_t *ways_of_sets;
    uint64_t set_mask;
    unsigned ways;
} cache_level;

typedef struct {
    uint64_t l1_misses, l2_misses, l1_writebacks, l2_writebacks;
} miss_counts;

/* Write streaming (Arm Cortex-A76 TRM 100798 A6.2.6 "Write streaming mode"; the Neoverse N2 /
 * V1, Cortex-A710 / A510 TRMs describe the same mechanism): a store that misses L1D starts a
 * linefill, but when the core has stores pending to the whole line while it waits for the
 * linefill (memset, memcpy, a packer writing its panels in order), the L1 switches to write
 * streaming and such lines go out to L2 without being read from memory. Modeled per line: the
 * WS_PENDING most recent lines whose L1D miss a store caused are kept with the bytes stores
 * have written to them since; a line written whole before a load reads it and before
 * WS_PENDING newer store misses displace it needed no linefill, so the read from memory its
 * L2 miss stood for is taken back from the block that was charged (the line itself stays
 * allocated: it was written to L2 and L1D, and its write-back still counts). A line stores
 * leave partly unwritten (a GEMM kernel's C tile rows, 48 of 64 bytes, their neighbours written
 * by a later call) keeps its linefill. Caches with lines over 64 bytes: not modeled. */
#define WS_PENDING 4

typedef struct {
    uint64_t line;               /* NO_LINE: a free entry */
    uint64_t written;            /* one bit per byte of the line written since the miss */
    size_t block_id;             /* the block its misses were charged to */
    bool l2_missed;              /* the miss read the line from memory */
} pending_fill;

/* Everything one vCPU owns: only its own thread writes it (the mark excepted). */
typedef struct {
    cache_level l1[MAX_CACHES], l2[MAX_CACHES];
    pending_fill pending[MAX_CACHES][WS_PENDING];
    unsigned pending_next[MAX_CACHES];   /* the entry the next store miss replaces (FIFO) */
    uint64_t last_line;          /* smallest-line number of the last access, or NO_LINE */
    bool last_dirty;             /* that line is dirty in every L1D */
    size_t capacity;             /* block ids the arrays below hold */
    uint64_t *executions;        /* [block id] */
    uint64_t *accesses;          /* [block id] */
    uint64_t *dc_zva;            /* [block id]: DC ZVA executions */
    miss_counts *misses;         /* [block id * n_caches + cache] */
} vcpu_state;

static cache_spec caches[MAX_CACHES];
static unsigned n_caches;
static unsigned line_shift[MAX_CACHES];   /* log2 of each cache's line size */
static unsigned min_line_shift;  /* the smallest of them */
static vcpu_state *vcpus[MAX_VCPUS];
static unsigned n_vcpus;         /* highest vCPU index seen + 1 */

static unsigned log2_exact(uint64_t x)
{
    unsigned s = 0;
    while ((1ull << s) < x) s++;
    return s;
}

static void level_init(cache_level *lv, uint64_t bytes, uint64_t ways, uint64_t line_bytes)
{
    uint64_t sets = bytes / (ways * line_bytes);
    lv->ways = (unsigned)ways;
    lv->set_mask = sets - 1;
    lv->ways_of_sets = malloc(sets * ways * sizeof *lv->ways_of_sets);
    if (!lv->ways_of_sets) die("out of memory");
    memset(lv->ways_of_sets, 0xff, sets * ways * sizeof *lv->ways_of_sets);   /* EMPTY_WAY */
}

static void level_flush(cache_level *lv)
{
    memset(lv->ways_of_sets, 0xff, (lv->set_mask + 1) * lv->ways * sizeof *lv->ways_of_sets);
}

/* Access `line` (marking it dirty when `write`): true on a hit. On a miss the line is
 * allocated as most recently used and *dirty_victim is the dirty line it evicted, or NO_LINE. */
static bool level_access(cache_level *lv, uint64_t line, bool write, uint64_t *dirty_victim)
{
    uint64_t *set = lv->ways_of_sets + (line & lv->set_mask) * lv->ways;
    for (unsigned i = 0; i < lv->ways; i++) {
        if (set[i] != EMPTY_WAY && set[i] >> 1 == line) {
            uint64_t entry = set[i] | write;
            memmove(set + 1, set, i * sizeof *set);
            set[0] = entry;
            return true;
        }
    }
    uint64_t victim = set[lv->ways - 1];
    memmove(set + 1, set, (lv->ways - 1) * sizeof *set);
    set[0] = line << 1 | write;
    *dirty_victim = victim != EMPTY_WAY && (victim & 1) ? victim >> 1 : NO_LINE;
    return false;
}

/* One line's access on one simulated core (L1D, then L2 on a miss), counted in *m: true on an
 * L1D hit; *l2_missed tells whether a miss also missed L2. */
static bool hierarchy_access(vcpu_state *v, unsigned c, uint64_t line, bool store, miss_counts *m,
                             bool *l2_missed)
{
    uint64_t l1_victim, l2_victim;
    *l2_missed = false;
    if (level_access(&v->l1[c], line, store, &l1_victim)) return true;
    m->l1_misses++;
    if (!level_access(&v->l2[c], line, false, &l2_victim)) {
        m->l2_misses++;
        *l2_missed = true;
        if (l2_victim != NO_LINE) m->l2_writebacks++;
    }
    if (l1_victim != NO_LINE) {
        m->l1_writebacks++;
        if (!level_access(&v->l2[c], l1_victim, true, &l2_victim) && l2_victim != NO_LINE)
            m->l2_writebacks++;
    }
    return false;
}

/* Bits lo..hi (0 <= lo <= hi < 64) set. */
static uint64_t byte_bits(unsigned lo, unsigned hi)
{
    uint64_t upto = hi == 63 ? ~0ull : (1ull << (hi + 1)) - 1;
    return upto & ~((1ull << lo) - 1);
}

/* The pending fill of `line` on cache c, or NULL. */
static pending_fill *ws_find(vcpu_state *v, unsigned c, uint64_t line)
{
    for (unsigned i = 0; i < WS_PENDING; i++)
        if (v->pending[c][i].line == line) return &v->pending[c][i];
    return NULL;
}

/* A load of `line` on cache c: a pending fill of it was needed (it keeps its counts). */
static void ws_load(vcpu_state *v, unsigned c, uint64_t line)
{
    pending_fill *p = ws_find(v, c, line);
    if (p) p->line = NO_LINE;
}

/* A store to bytes lo..hi of `line` on cache c (l1_hit: the access hit L1D; l2_missed: its miss
 * read the line from memory): a miss opens a pending fill, replacing the oldest; a line whose
 * bytes are all written ends its fill with the read from memory taken back (write streaming,
 * see pending_fill). The caller has reserved block_id's counters. */
static void ws_store(vcpu_state *v, unsigned c, uint64_t line, unsigned lo, unsigned hi,
                     bool l1_hit, bool l2_missed, size_t block_id)
{
    if (caches[c].line_bytes > 64) return;      /* one bit per byte: lines up to 64 bytes */
    const uint64_t full = caches[c].line_bytes == 64 ? ~0ull : (1ull << caches[c].line_bytes) - 1;
    pending_fill *p = ws_find(v, c, line);
    if (!p) {
        if (l1_hit) return;
        p = &v->pending[c][v->pending_next[c]];
        v->pending_next[c] = (v->pending_next[c] + 1) % WS_PENDING;
        *p = (pending_fill){ line, 0, block_id, l2_missed };
    }
    p->written |= byte_bits(lo, hi);
    if ((p->written & full) != full) return;
    if (p->l2_missed) v->misses[p->block_id * n_caches + c].l2_misses--;
    p->line = NO_LINE;
}

static void ws_clear(vcpu_state *v)
{
    for (unsigned c = 0; c < n_caches; c++) {
        for (unsigned i = 0; i < WS_PENDING; i++) v->pending[c][i].line = NO_LINE;
        v->pending_next[c] = 0;
    }
}

static vcpu_state *vcpu_new(void)
{
    vcpu_state *v = calloc(1, sizeof *v);
    if (!v) die("out of memory");
    for (unsigned c = 0; c < n_caches; c++) {
        level_init(&v->l1[c], caches[c].l1_bytes, caches[c].l1_ways, caches[c].line_bytes);
        level_init(&v->l2[c], caches[c].l2_bytes, caches[c].l2_ways, caches[c].line_bytes);
    }
    v->last_line = NO_LINE;
    ws_clear(v);
    return v;
}

static vcpu_state *vcpu_get(unsigned int index)
{
    if (index >= MAX_VCPUS) die("more vCPUs than MAX_VCPUS");
    vcpu_state *v = __atomic_load_n(&vcpus[index], __ATOMIC_ACQUIRE);
    if (v) return v;
    pthread_mutex_lock(&table_lock);
    if (!vcpus[index]) {
        __atomic_store_n(&vcpus[index], vcpu_new(), __ATOMIC_RELEASE);
        if (index + 1 > n_vcpus) n_vcpus = index + 1;
    }
    pthread_mutex_unlock(&table_lock);
    return vcpus[index];
}

static void *grow_zeroed(void *p, size_t old_n, size_t new_n, size_t size)
{
    unsigned char *q = realloc(p, new_n * size);
    if (!q) die("out of memory");
    memset(q + old_n * size, 0, (new_n - old_n) * size);
    return q;
}

/* Make room for block `id` in this vCPU's counters (only its own thread calls this). */
static void vcpu_reserve(vcpu_state *v, size_t id)
{
    if (id < v->capacity) return;
    size_t n = v->capacity ? v->capacity : 1024;
    while (n <= id) n *= 2;
    v->executions = grow_zeroed(v->executions, v->capacity, n, sizeof *v->executions);
    v->accesses = grow_zeroed(v->accesses, v->capacity, n, sizeof *v->accesses);
    v->dc_zva = grow_zeroed(v->dc_zva, v->capacity, n, sizeof *v->dc_zva);
    v->misses = grow_zeroed(v->misses, v->capacity * n_caches, n * n_caches, sizeof *v->misses);
    v->capacity = n;
}

/* Zero a vCPU's counts and empty its caches (at the mark). */
static void vcpu_reset(vcpu_state *v)
{
    memset(v->executions, 0, v->capacity * sizeof *v->executions);
    memset(v->accesses, 0, v->capacity * sizeof *v->accesses);
    memset(v->dc_zva, 0, v->capacity * sizeof *v->dc_zva);
    memset(v->misses, 0, v->capacity * n_caches * sizeof *v->misses);
    for (unsigned c = 0; c < n_caches; c++) {
        level_flush(&v->l1[c]);
        level_flush(&v->l2[c]);
    }
    v->last_line = NO_LINE;
    ws_clear(v);
}

/* ---- Callbacks ------------------------------------------------------------------------ */
static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu_index)
{
    (void)id;
    vcpu_get(vcpu_index);
}

/* A block starts on a vCPU (cache mode): count it there. */
static void on_tb_exec(unsigned int vcpu_index, void *userdata)
{
    const block *b = userdata;
    vcpu_state *v = vcpu_get(vcpu_index);
    vcpu_reserve(v, b->id);
    v->executions[b->id]++;
}

/* A load or store of `block` on a vCPU: every simulated core sees it. */
static void on_mem(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata)
{
    const block *b = userdata;
    vcpu_state *v = vcpu_get(vcpu_index);
    bool store = qemu_plugin_mem_is_store(info);
    uint64_t last_byte = vaddr + (1ull << qemu_plugin_mem_size_shift(info)) - 1;
    vcpu_reserve(v, b->id);
    v->accesses[b->id]++;
    uint64_t small_line = vaddr >> min_line_shift;
    /* Same (smallest) line as this vCPU's previous access: it is every L1D's most recently
     * used line already, so nothing changes unless a store must first mark it dirty (only the
     * line's pending fill, if any, sees the access). */
    bool same = small_line == v->last_line && last_byte >> min_line_shift == small_line
                && (!store || v->last_dirty);
    miss_counts *m = v->misses + b->id * n_caches;
    for (unsigned c = 0; c < n_caches; c++) {
        const uint64_t offset_mask = caches[c].line_bytes - 1;
        for (uint64_t line = vaddr >> line_shift[c]; line <= last_byte >> line_shift[c]; line++) {
            bool l1_hit = true, l2_missed = false;
            if (!same) l1_hit = hierarchy_access(v, c, line, store, &m[c], &l2_missed);
            if (!store) {
                ws_load(v, c, line);
                continue;
            }
            unsigned lo = line == vaddr >> line_shift[c] ? (unsigned)(vaddr & offset_mask) : 0;
            unsigned hi = line == last_byte >> line_shift[c] ? (unsigned)(last_byte & offset_mask)
                                                             : (unsigned)offset_mask;
            ws_store(v, c, line, lo, hi, l1_hit, l2_missed, b->id);
        }
    }
    if (same) return;
    /* the line is now most recently used everywhere; dirty for sure only after a store */
    v->last_line = last_byte >> min_line_shift == small_line ? small_line : NO_LINE;
    v->last_dirty = store;
}

/* A DC ZVA of `block` runs on a vCPU: counted, not simulated. */
static void on_dc_zva(unsigned int vcpu_index, void *userdata)
{
    const block *b = userdata;
    vcpu_state *v = vcpu_get(vcpu_index);
    vcpu_reserve(v, b->id);
    v->dc_zva[b->id]++;
}

/* DC ZVA, Xt (SYS #3, C7, C4, #1, Xt; Arm ARM C5.3): 0xd50b7420 | t. */
static bool is_dc_zva(const struct qemu_plugin_insn *insn)
{
    uint32_t word;
    if (qemu_plugin_insn_size(insn) != 4) return false;
    memcpy(&word, qemu_plugin_insn_data(insn), 4);
    return (word & 0xffffffe0u) == 0xd50b7420u;
}

/* The marker block runs: every count restarts from here (and the caches start empty). */
static void on_mark(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index; (void)userdata;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < table_size; i++)
        if (table[i]) table[i]->base = table[i]->count;
    for (unsigned i = 0; i < n_vcpus; i++)
        if (vcpus[i]) vcpu_reset(vcpus[i]);
    pthread_mutex_unlock(&table_lock);
}

/* The block's bytes, gathered from its instructions (caller frees). */
static unsigned char *tb_bytes(struct qemu_plugin_tb *tb, size_t n_insns, size_t *n_bytes)
{
    size_t total = 0;
    for (size_t i = 0; i < n_insns; i++)
        total += qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
    unsigned char *bytes = malloc(total ? total : 1);
    if (!bytes) die("out of memory");
    size_t at = 0;
    for (size_t i = 0; i < n_insns; i++) {
        const struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        size_t size = qemu_plugin_insn_size(insn);
        memcpy(bytes + at, qemu_plugin_insn_data(insn), size);
        at += size;
    }
    *n_bytes = total;
    return bytes;
}

/* Translation: find the block's counter, attach the counting (and memory) callbacks. */
static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n_insns = qemu_plugin_tb_n_insns(tb), n_bytes;
    unsigned char *bytes = tb_bytes(tb, n_insns, &n_bytes);
    pthread_mutex_lock(&table_lock);
    block *b = block_lookup(qemu_plugin_tb_vaddr(tb), bytes, n_bytes, n_insns);
    pthread_mutex_unlock(&table_lock);
    free(bytes);
    if (n_caches) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, b);
        for (size_t i = 0; i < n_insns; i++) {
            struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
            qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS,
                                             QEMU_PLUGIN_MEM_RW, b);
            if (is_dc_zva(insn))
                qemu_plugin_register_vcpu_insn_exec_cb(insn, on_dc_zva, QEMU_PLUGIN_CB_NO_REGS, b);
        }
    } else {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
    }
    if (have_mark && qemu_plugin_tb_vaddr(tb) == mark_vaddr)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

/* ---- Output --------------------------------------------------------------------------- */
static int compare_by_address(const void *x, const void *y)
{
    const block *a = *(const block *const *)x, *b = *(const block *const *)y;
    if (a->vaddr != b->vaddr) return a->vaddr < b->vaddr ? -1 : 1;
    return a->n_bytes < b->n_bytes ? -1 : a->n_bytes > b->n_bytes;
}

/* Executions of a block after the mark, over all vCPUs. */
static uint64_t block_executions(const block *b)
{
    if (!n_caches) return b->count - b->base;
    uint64_t total = 0;
    for (unsigned i = 0; i < n_vcpus; i++)
        if (vcpus[i] && b->id < vcpus[i]->capacity) total += vcpus[i]->executions[b->id];
    return total;
}

static void write_vcpu_lines(FILE *f, const block *b)
{
    for (unsigned i = 0; i < n_vcpus; i++) {
        const vcpu_state *v = vcpus[i];
        if (!v || b->id >= v->capacity || !(v->executions[b->id] || v->accesses[b->id])) continue;
        fprintf(f, "v %u %llu %llu\n", i, (unsigned long long)v->executions[b->id],
                (unsigned long long)v->accesses[b->id]);
        for (unsigned c = 0; c < n_caches; c++) {
            const miss_counts *m = &v->misses[b->id * n_caches + c];
            if (m->l1_misses || m->l2_misses || m->l1_writebacks || m->l2_writebacks)
                fprintf(f, "m %u %u %llu %llu %llu %llu\n", i, c, (unsigned long long)m->l1_misses,
                        (unsigned long long)m->l2_misses, (unsigned long long)m->l1_writebacks,
                        (unsigned long long)m->l2_writebacks);
        }
        if (v->dc_zva[b->id])
            fprintf(f, "z %u %llu\n", i, (unsigned long long)v->dc_zva[b->id]);
    }
}

static void write_block(FILE *f, const block *b, uint64_t executions)
{
    fprintf(f, "%llx %zu %llu ", (unsigned long long)b->vaddr, b->n_insns,
            (unsigned long long)executions);
    for (size_t j = 0; j < b->n_bytes; j++) fprintf(f, "%02x", b->bytes[j]);
    fputc('\n', f);
    if (n_caches) write_vcpu_lines(f, b);
}

/* Guest exit: write the executed blocks, sorted by address (deterministic output). */
static void on_guest_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id; (void)userdata;
    pthread_mutex_lock(&table_lock);
    FILE *f = fopen(out_path, "w");
    if (!f) die("cannot open the output file");
    block **list = malloc((table_used + 1) * sizeof *list);
    if (!list) die("out of memory");
    size_t n = 0;
    for (size_t i = 0; i < table_size; i++)
        if (table[i] && block_executions(table[i])) list[n++] = table[i];
    qsort(list, n, sizeof *list, compare_by_address);
    fprintf(f, "# tbcount 2: vaddr n_insns executions bytes\n");
    for (unsigned c = 0; c < n_caches; c++)
        fprintf(f, "# cache %u %s %llu %llu %llu %llu %llu\n", c, caches[c].name,
                (unsigned long long)caches[c].l1_bytes, (unsigned long long)caches[c].l1_ways,
                (unsigned long long)caches[c].l2_bytes, (unsigned long long)caches[c].l2_ways,
                (unsigned long long)caches[c].line_bytes);
    for (size_t i = 0; i < n; i++) write_block(f, list[i], block_executions(list[i]));
    if (fclose(f) != 0) die("cannot write the output file");
    free(list);
    pthread_mutex_unlock(&table_lock);
}

/* ---- Arguments ------------------------------------------------------------------------ */
static int arg_error(const char *arg, const char *why)
{
    fprintf(stderr, "tbcount: %s: %s\n", arg, why);
    return -1;
}

static bool is_power_of_two(uint64_t x)
{
    return x && !(x & (x - 1));
}

/* One level's geometry: a whole number of sets, a power of two of them. */
static const char *check_level(uint64_t bytes, uint64_t ways, uint64_t line)
{
    if (!bytes || !ways) return "sizes and ways must be positive";
    if (bytes % (ways * line)) return "a size is not a multiple of ways x line";
    if (!is_power_of_two(bytes / (ways * line))) return "the number of sets is not a power of two";
    return NULL;
}

/* cache=NAME:L1_BYTES:L1_WAYS:L2_BYTES:L2_WAYS:LINE_BYTES */
static int parse_cache(const char *arg)
{
    const char *spec = arg + strlen("cache="), *colon = strchr(spec, ':');
    cache_spec c = {0};
    if (n_caches == MAX_CACHES) return arg_error(arg, "too many cache= arguments (at most 8)");
    if (!colon || colon == spec || colon - spec > NAME_MAX_LEN)
        return arg_error(arg, "expected NAME:L1_BYTES:L1_WAYS:L2_BYTES:L2_WAYS:LINE_BYTES "
                              "(NAME 1-31 characters)");
    memcpy(c.name, spec, (size_t)(colon - spec));
    uint64_t *fields[] = {&c.l1_bytes, &c.l1_ways, &c.l2_bytes, &c.l2_ways, &c.line_bytes};
    const char *p = colon + 1;
    for (size_t i = 0; i < 5; i++) {
        char *end;
        if (*p < '0' || *p > '9') return arg_error(arg, "expected 5 decimal numbers after NAME");
        *fields[i] = strtoull(p, &end, 10);
        if (*end != (i < 4 ? ':' : '\0')) return arg_error(arg, "expected 5 decimal numbers after NAME");
        p = end + 1;
    }
    if (!is_power_of_two(c.line_bytes) || c.line_bytes < 16)
        return arg_error(arg, "LINE_BYTES must be a power of two, at least 16");
    const char *why = check_level(c.l1_bytes, c.l1_ways, c.line_bytes);
    if (!why) why = check_level(c.l2_bytes, c.l2_ways, c.line_bytes);
    if (why) return arg_error(arg, why);
    for (unsigned i = 0; i < n_caches; i++)
        if (strcmp(caches[i].name, c.name) == 0) return arg_error(arg, "NAME given twice");
    caches[n_caches++] = c;
    return 0;
}

static int parse_arg(const char *arg)
{
    if (strncmp(arg, "out=", 4) == 0 && arg[4]) {
        out_path = strdup(arg + 4);
        return 0;
    }
    if (strncmp(arg, "mark=", 5) == 0 && arg[5]) {
        char *end;
        mark_vaddr = strtoull(arg + 5, &end, 16);
        have_mark = true;
        return *end ? arg_error(arg, "mark= needs a hexadecimal address") : 0;
    }
    if (strncmp(arg, "cache=", 6) == 0) return parse_cache(arg);
    return arg_error(arg, "unknown argument (expected out=PATH, mark=HEXADDR or "
                          "cache=NAME:L1_BYTES:L1_WAYS:L2_BYTES:L2_WAYS:LINE_BYTES)");
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++)
        if (parse_arg(argv[i]) != 0) return -1;
    if (!out_path) {
        fprintf(stderr, "tbcount: missing argument out=PATH\n");
        return -1;
    }
    min_line_shift = 63;
    for (unsigned c = 0; c < n_caches; c++) {
        line_shift[c] = log2_exact(caches[c].line_bytes);
        if (line_shift[c] < min_line_shift) min_line_shift = line_shift[c];
    }
    table_grow();
    if (n_caches) qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}
