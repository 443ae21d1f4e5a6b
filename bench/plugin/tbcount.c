/* tbcount — QEMU TCG plugin: how many times every translation block (TB) executes.
 *
 * Build (host compiler, no QEMU headers needed):
 *     gcc -O2 -shared -fPIC -fvisibility=hidden -o tbcount.so tbcount.c -lpthread
 * Use:
 *     qemu-aarch64 -cpu max -plugin ./tbcount.so,out=PROFILE.txt[,mark=HEXADDR] PROGRAM ARGS…
 *
 * mark=HEXADDR: every time the block at that guest address executes, all counts restart from
 * zero, so only what runs after the last such execution is reported (the benchmark places a
 * marker function right before the operation it measures).
 *
 * At guest exit it writes one line per block executed (after the mark):
 *     <vaddr hex> <instructions> <executions> <instruction bytes hex>
 * preceded by a "# tbcount 1" header line. A block is identified by its guest address and its
 * bytes, so a block QEMU translates again (after a TB-cache flush) keeps one counter. Counting
 * is an inline add at block entry (no helper call): exact for a single-threaded guest, which
 * is all the benchmark runs; the translation callback itself is serialised by a mutex.
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
struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

/* ---- Block table: open addressing, entries never move (QEMU holds &entry->count) ----- */
typedef struct {
    uint64_t vaddr;
    uint64_t count;          /* incremented by QEMU's inline add at every block entry */
    uint64_t base;           /* count at the last mark: the report is count - base */
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
    qemu_plugin_outs("tbcount: ");
    qemu_plugin_outs(what);
    qemu_plugin_outs("\n");
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
    table_insert(b);
    return b;
}

/* ---- Callbacks ------------------------------------------------------------------------ */
/* The marker block runs: every count restarts from here. */
static void on_mark(unsigned int vcpu_index, void *userdata)
{
    (void)vcpu_index; (void)userdata;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < table_size; i++)
        if (table[i]) table[i]->base = table[i]->count;
    pthread_mutex_unlock(&table_lock);
}

/* Translation: gather the block's bytes, find its counter, attach an inline increment. */
static void on_tb_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n_insns = qemu_plugin_tb_n_insns(tb);
    size_t n_bytes = 0;
    for (size_t i = 0; i < n_insns; i++)
        n_bytes += qemu_plugin_insn_size(qemu_plugin_tb_get_insn(tb, i));
    unsigned char *bytes = malloc(n_bytes ? n_bytes : 1);
    if (!bytes) die("out of memory");
    size_t at = 0;
    for (size_t i = 0; i < n_insns; i++) {
        const struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        size_t size = qemu_plugin_insn_size(insn);
        memcpy(bytes + at, qemu_plugin_insn_data(insn), size);
        at += size;
    }
    pthread_mutex_lock(&table_lock);
    block *b = block_lookup(qemu_plugin_tb_vaddr(tb), bytes, n_bytes, n_insns);
    pthread_mutex_unlock(&table_lock);
    free(bytes);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
    if (have_mark && qemu_plugin_tb_vaddr(tb) == mark_vaddr)
        qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static int compare_by_address(const void *x, const void *y)
{
    const block *a = *(const block *const *)x, *b = *(const block *const *)y;
    if (a->vaddr != b->vaddr) return a->vaddr < b->vaddr ? -1 : 1;
    return a->n_bytes < b->n_bytes ? -1 : a->n_bytes > b->n_bytes;
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
        if (table[i] && table[i]->count != table[i]->base) list[n++] = table[i];
    qsort(list, n, sizeof *list, compare_by_address);
    fprintf(f, "# tbcount 1: vaddr n_insns executions bytes\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%llx %zu %llu ", (unsigned long long)list[i]->vaddr, list[i]->n_insns,
                (unsigned long long)(list[i]->count - list[i]->base));
        for (size_t j = 0; j < list[i]->n_bytes; j++) fprintf(f, "%02x", list[i]->bytes[j]);
        fputc('\n', f);
    }
    if (fclose(f) != 0) die("cannot write the output file");
    free(list);
    pthread_mutex_unlock(&table_lock);
}

/* Arguments: out=PATH (required), mark=HEXADDR (optional). */
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0 && argv[i][4]) {
            out_path = strdup(argv[i] + 4);
        } else if (strncmp(argv[i], "mark=", 5) == 0 && argv[i][5]) {
            char *end;
            mark_vaddr = strtoull(argv[i] + 5, &end, 16);
            have_mark = true;
            if (*end) {
                qemu_plugin_outs("tbcount: mark= needs a hexadecimal address\n");
                return -1;
            }
        } else {
            qemu_plugin_outs("tbcount: unknown argument (expected out=PATH or mark=HEXADDR): ");
            qemu_plugin_outs(argv[i]);
            qemu_plugin_outs("\n");
            return -1;
        }
    }
    if (!out_path) {
        qemu_plugin_outs("tbcount: missing argument out=PATH\n");
        return -1;
    }
    table_grow();
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_translate);
    qemu_plugin_register_atexit_cb(id, on_guest_exit, NULL);
    return 0;
}
