/* ts_cache_sysfs.c — a core's L1D and L2 sizes as Linux describes them, for an engine to pass to
 * ts_context_set_cache_sizes: /sys/devices/system/cpu/cpuN/cache/indexI/{level,type,size}
 * (Linux Documentation/ABI/testing/sysfs-devices-system-cpu: "size" in KiB with a "K" suffix;
 * "M" and "G" are taken too). The library never reads them on its own: under an emulator or in
 * a container the files describe the host's caches, not the core the code runs on (QEMU user
 * mode shows the host's /sys), and on a big.LITTLE system the sizes are per core while a
 * thread may move; the caller knows which cores its threads run on.
 * Plain C99. */
#include <stdio.h>

#include "ts_context_internal.h"
#include "ts_error_internal.h"

int ts_parse_cache_size(const char *text, size_t *out)
{
    size_t value = 0, digits = 0, unit = 1;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; ++p, ++digits) {
        if (value > ((size_t)-1 - 9) / 10)
            return -1;
        value = value * 10 + (size_t)(*p - '0');
    }
    if (*p == 'K')
        unit = (size_t)1 << 10;
    else if (*p == 'M')
        unit = (size_t)1 << 20;
    else if (*p == 'G')
        unit = (size_t)1 << 30;
    p += unit != 1;
    if (*p == '\n')
        ++p;
    if (digits == 0 || *p != '\0' || value > (size_t)-1 / unit)
        return -1;
    *out = value * unit;
    return 0;
}

/* The first line of dir/name into buf (without its end), or -1. */
static int read_line(const char *dir, const char *name, char *buf, int len)
{
    char path[512];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char *got = fgets(buf, len, f);
    fclose(f);
    return got != NULL ? 0 : -1;
}

static int line_is(const char *line, const char *word)
{
    size_t i = 0;
    for (; word[i] != '\0'; ++i)
        if (line[i] != word[i])
            return 0;
    return line[i] == '\0' || line[i] == '\n';
}

int ts_cache_sizes_in(const char *cache_dir, size_t *l1d_bytes, size_t *l2_bytes)
{
    size_t l1 = 0, l2 = 0;
    if (cache_dir == NULL || l1d_bytes == NULL || l2_bytes == NULL)
        return ts_fail(TS_EINVAL, "cache_dir, l1d_bytes or l2_bytes is NULL");
    for (int i = 0; i < 16; ++i) {      /* index0.. : L1I, L1D, L2, L3 on the cores we know */
        char dir[400], level[16], type[32], size[32];
        size_t bytes;
        if (snprintf(dir, sizeof dir, "%s/index%d", cache_dir, i) >= (int)sizeof dir)
            return ts_fail(TS_EINVAL, "cache_dir too long");
        if (read_line(dir, "level", level, sizeof level) != 0)
            break;                                        /* no more caches */
        if (read_line(dir, "type", type, sizeof type) != 0
            || read_line(dir, "size", size, sizeof size) != 0)
            continue;
        if (!line_is(type, "Data") && !line_is(type, "Unified"))
            continue;                                     /* Instruction */
        if (ts_parse_cache_size(size, &bytes) != 0)
            return ts_fail(TS_EINVAL, "a cache size file is not a number with K, M or G");
        if (line_is(level, "1"))
            l1 = bytes;
        else if (line_is(level, "2"))
            l2 = bytes;
    }
    if (l1 == 0 || l2 == 0)
        return ts_fail(TS_EINVAL, "no L1 data or L2 cache described there");
    *l1d_bytes = l1;
    *l2_bytes = l2;
    return TS_OK;
}

int ts_cache_sizes_sysfs(unsigned cpu, size_t *l1d_bytes, size_t *l2_bytes)
{
    char dir[64];
    if (l1d_bytes == NULL || l2_bytes == NULL)
        return ts_fail(TS_EINVAL, "l1d_bytes or l2_bytes is NULL");
    snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu%u/cache", cpu);
    return ts_cache_sizes_in(dir, l1d_bytes, l2_bytes);
}
