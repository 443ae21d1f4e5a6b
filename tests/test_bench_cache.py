"""bench: the tbcount plugin's cache simulation against miss counts derived by hand from
synthetic access patterns run under qemu-aarch64, per-vCPU counts with two guest threads, the
plugin's argument errors, and the report's roofline arithmetic.

Two simulated cores: "tiny" (L1D 4 KiB 4-way = 16 sets, L2 32 KiB 8-way = 64 sets) and
Neoverse N2 as gen/cores.py models it (L1D 64 KiB 4-way = 256 sets, L2 1 MiB 8-way = 2048
sets); 64-byte lines. Each pattern is a leaf assembly loop after the mark (the caches are
empty there), so every access it makes is known."""
import subprocess

import pytest

from bench import report as rep
from bench import symbols as sym
from bench.mca import CycleModel
from bench.profile import balance, memory_profile, profile_all, thread_profile
from bench.tbcount import ProfileError, build_plugin, cache_argument, run_profiled
from bench.workloads import DispatchPath, Workload
from cross import GCC, QEMU
from gen.cores import MEMORY, CacheLevel, MemoryModel

KIB = 1024
TINY = MemoryModel(CacheLevel(4 * KIB, 4), CacheLevel(32 * KIB, 8), 32.0, 4.0, "test")
CACHES = {"tiny": TINY, "neoverse-n2": MEMORY["neoverse-n2"]}

# name -> (offset of the first access, accesses per pass, stride bytes, passes, instruction)
PATTERNS = {
    "stream_once": (0, 4096, 64, 1, "ldr x3, [x1]"),             # 256 KiB, one load per line
    "twice_below_l1": (0, 32, 64, 2, "ldr x3, [x1]"),            # 2 KiB twice
    "twice_256k": (0, 4096, 64, 2, "ldr x3, [x1]"),              # 256 KiB twice
    "dense_2k": (0, 256, 8, 1, "ldr x3, [x1]"),                  # every 8 bytes of 2 KiB
    "one_set_5": (0, 5, 128 * KIB, 10, "ldr x3, [x1]"),          # 5 lines of one set, 10 rounds
    "one_set_9": (0, 9, 128 * KIB, 10, "ldr x3, [x1]"),          # 9 lines of one set, 10 rounds
    "straddle": (60, 10, 128, 1, "ldr x3, [x1]"),                # 8 bytes across two lines
    "store_256k": (0, 4096, 64, 1, "str x3, [x1]"),              # write 256 KiB once
    "fill_256k": (0, 32768, 8, 1, "str x3, [x1]"),               # every byte of 256 KiB
    "half_fill_256k": (0, 16384, 16, 1, "str x3, [x1]"),         # half of each line's bytes
}
# name -> the lines loaded, in order, as multiples of 128 KiB (all in one set, see one_set_5)
SEQUENCES = {
    "lru_order": (0, 1, 2, 3, 0, 4, 0),
}
# name -> 8-byte stores, in order, as (64-byte line, byte offset) of consecutive lines:
# line 0 is written whole only after four newer lines' store misses (the plugin keeps the four
# most recent pending linefills), line 4 right after its own
WS_LINES = [(line, 0) for line in range(5)]
STORE_SEQUENCES = {
    "fill_late": tuple(WS_LINES + [(0, off) for off in range(8, 64, 8)]
                       + [(4, off) for off in range(8, 64, 8)]),
}
# Hand-derived (L1D misses, L2 misses, L1D write-backs, L2 write-backs) per core, caches
# empty at the start, true LRU:
EXPECTED = {
    # every line is new: a miss everywhere
    "stream_once": {"tiny": (4096, 4096, 0, 0), "neoverse-n2": (4096, 4096, 0, 0)},
    # 32 lines, 2 per L1D set: the second pass hits
    "twice_below_l1": {"tiny": (32, 32, 0, 0), "neoverse-n2": (32, 32, 0, 0)},
    # 4096 lines: beyond both L1Ds (64 / 1024 lines; a sequential sweep larger than an LRU
    # cache misses on every line); beyond tiny's L2 (512 lines), within N2's (16384 lines)
    "twice_256k": {"tiny": (8192, 8192, 0, 0), "neoverse-n2": (8192, 4096, 0, 0)},
    # 256 loads, 8 per line: 32 lines
    "dense_2k": {"tiny": (32, 32, 0, 0), "neoverse-n2": (32, 32, 0, 0)},
    # a 128 KiB stride maps every line to one set of each level (a multiple of 16 / 256 sets x
    # 64 B and of 64 / 2048 sets x 64 B): 5 lines cycle through 4 L1D ways (all miss) but
    # stay in 8 L2 ways (5 cold misses); 9 lines miss in both
    "one_set_5": {"tiny": (50, 5, 0, 0), "neoverse-n2": (50, 5, 0, 0)},
    "one_set_9": {"tiny": (90, 90, 0, 0), "neoverse-n2": (90, 90, 0, 0)},
    # each load covers bytes 60..67 of a 128-byte pair of lines: two lines per load
    "straddle": {"tiny": (20, 20, 0, 0), "neoverse-n2": (20, 20, 0, 0)},
    # 5 store misses; line 0's linefill was displaced before its last byte came (needed: read
    # from memory), line 4's was not (write streaming: nothing read)
    "fill_late": {"tiny": (5, 4, 0, 0), "neoverse-n2": (5, 4, 0, 0)},
    # 4 cold misses; line 0 hits and becomes most recent, so line 4 evicts line 1 (FIFO would
    # evict line 0: 6 misses) and the last load of line 0 hits: 5 misses in L1D, 5 in L2
    "lru_order": {"tiny": (5, 5, 0, 0), "neoverse-n2": (5, 5, 0, 0)},
    # 4096 stores, write-allocate: every line misses once. L1D write-backs: all but the lines
    # still in L1D at the end (4096 - 64; 4096 - 1024). tiny's L2: line i is read into set
    # i % 64 and line i - 64 (the L1D victim, same set) written back into it, so each set
    # holds its last 8 lines and every eviction after the first 8 of a set is dirty:
    # 64 sets x (64 - 8). N2's L2 holds all 4096 lines: nothing goes to memory.
    "store_256k": {"tiny": (4096, 4096, 4032, 64 * 56), "neoverse-n2": (4096, 4096, 3072, 0)},
    # write streaming: each line is written whole (8 stores) right after the store that missed,
    # so its linefill read nothing from memory: no L2 miss counts; the lines still go through
    # both levels as in store_256k, so the write-backs are the same
    "fill_256k": {"tiny": (4096, 0, 4032, 64 * 56), "neoverse-n2": (4096, 0, 3072, 0)},
    # 32 of each line's 64 bytes written: every linefill was needed, as in store_256k
    "half_fill_256k": {"tiny": (4096, 4096, 4032, 64 * 56),
                       "neoverse-n2": (4096, 4096, 3072, 0)},
}


def pattern_source() -> str:
    """_start: bench_mark, then the pattern chosen by argc (1 = the first), then exit.
    Between the mark and the exit only the pattern touches memory."""
    names = [*PATTERNS, *SEQUENCES, *STORE_SEQUENCES]
    lines = ["    .text", "    .global _start", "    .type _start, %function", "_start:",
             "    ldr x19, [sp]", "    bl bench_mark"]
    for i, name in enumerate(names, start=1):
        lines += [f"    cmp x19, #{i}", f"    b.ne 9{i}f", f"    bl {name}", "    b 99f", f"9{i}:"]
    lines += ["99:", "    mov x0, #0", "    mov x8, #93", "    svc #0", "    .size _start, .-_start",
              "    .type bench_mark, %function", "bench_mark:", "    ret",
              "    .size bench_mark, .-bench_mark"]
    for name, (offset, count, stride, passes, insn) in PATTERNS.items():
        lines += [f"    .type {name}, %function", f"{name}:", "    adrp x0, buf",
                  "    add x0, x0, :lo12:buf", f"    mov x4, #{stride}", f"    mov x5, #{passes}",
                  "2:", f"    add x1, x0, #{offset}", f"    mov x2, #{count}",
                  "1:", f"    {insn}", "    add x1, x1, x4", "    subs x2, x2, #1", "    b.ne 1b",
                  "    subs x5, x5, #1", "    b.ne 2b", "    ret", f"    .size {name}, .-{name}"]
    for name, sequence in SEQUENCES.items():
        lines += [f"    .type {name}, %function", f"{name}:", "    adrp x0, buf",
                  "    add x0, x0, :lo12:buf"]
        for k in sequence:      # 128 KiB = 0x20 << 12
            lines += [f"    add x1, x0, #{0x20 * k}, lsl #12", "    ldr x3, [x1]"]
        lines += ["    ret", f"    .size {name}, .-{name}"]
    for name, stores in STORE_SEQUENCES.items():
        lines += [f"    .type {name}, %function", f"{name}:", "    adrp x0, buf",
                  "    add x0, x0, :lo12:buf"]
        lines += [f"    str x3, [x0, #{64 * line + offset}]" for line, offset in stores]
        lines += ["    ret", f"    .size {name}, .-{name}"]
    lines += ["    .bss", "    .balign 4096", "buf:", f"    .skip {2 * 1024 * KIB}"]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_cache")
    (d / "patterns.S").write_text(pattern_source())
    program = d / "patterns"
    proc = subprocess.run([GCC, "-nostdlib", "-static", "-no-pie", str(d / "patterns.S"), "-o",
                           str(program)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    table = sym.SymbolTable.from_elf(program)
    return d, program, build_plugin(d / "plugin"), table.address_of("bench_mark")


def totals(blocks, core):
    out = [0, 0, 0, 0]
    for b in blocks:
        for (_, name), m in b.misses.items():
            if name == core:
                for i, v in enumerate((m.l1, m.l2, m.l1_writebacks, m.l2_writebacks)):
                    out[i] += v
    return tuple(out)


@pytest.mark.parametrize("pattern", [*PATTERNS, *SEQUENCES, *STORE_SEQUENCES])
def test_misses_match_hand_derived_counts(built, pattern):
    d, program, plugin, mark = built
    argc = [*PATTERNS, *SEQUENCES, *STORE_SEQUENCES].index(pattern) + 1
    blocks, _ = run_profiled(program, ["x"] * (argc - 1), plugin, d / f"{pattern}.tb", mark=mark,
                             caches=CACHES)
    for core, expected in EXPECTED[pattern].items():
        assert totals(blocks, core) == expected, core
    if pattern in PATTERNS:
        offset, count, stride, passes, _ = PATTERNS[pattern]
        accesses = count * passes
    else:
        accesses = len({**SEQUENCES, **STORE_SEQUENCES}[pattern])
    # the plugin saw every access, all on vCPU 0
    assert sum(a for b in blocks for v, (_, a) in b.vcpus.items()) == accesses
    assert {v for b in blocks for v in b.vcpus} == {0}
    # without caches the same run gives the same block counts and no cache data (the marker
    # block's own execution aside: the inline add runs after the mark callback)
    plain, _ = run_profiled(program, ["x"] * (argc - 1), plugin, d / f"{pattern}.plain.tb", mark=mark)
    assert [(b.vaddr, b.count) for b in plain if b.vaddr != mark] == \
        [(b.vaddr, b.count) for b in blocks if b.vaddr != mark]
    assert not any(b.vcpus or b.misses for b in plain)


def test_cores_with_one_geometry_are_simulated_once(built):
    """N2 and V1 share their L1D/L2 geometry (gen/cores.py): one simulation, both names."""
    d, program, plugin, mark = built
    assert MEMORY["neoverse-v1"].l1d == MEMORY["neoverse-n2"].l1d
    caches = {"neoverse-n2": MEMORY["neoverse-n2"], "tiny": TINY, "neoverse-v1": MEMORY["neoverse-v1"]}
    blocks, _ = run_profiled(program, ["x"] * 2, plugin, d / "alias.tb", mark=mark, caches=caches)
    declared = [line for line in (d / "alias.tb").read_text().splitlines() if line.startswith("# cache")]
    assert [line.split()[3] for line in declared] == ["neoverse-n2", "tiny"]
    for core in ("neoverse-n2", "neoverse-v1"):       # twice_256k, as above
        assert totals(blocks, core) == (8192, 4096, 0, 0)
    assert totals(blocks, "tiny") == (8192, 8192, 0, 0)


def test_misses_add_up_per_group(built):
    """memory_profile files the pattern's misses under its function's group (`other`)."""
    d, program, plugin, mark = built
    blocks, _ = run_profiled(program, [], plugin, d / "group.tb", mark=mark, caches=CACHES)
    groups = [sym.group_of(sym.SymbolTable.from_elf(program).lookup(b.vaddr)) for b in blocks]
    mem = memory_profile(blocks, groups, "tiny")
    assert (mem["other"]["l1_misses"], mem["other"]["l2_misses"]) == (4096, 4096)
    assert mem["total"]["accesses"] == 4096 and mem["kernel"]["l1_misses"] == 0


THREADS_C = r"""
#include <pthread.h>
#include <stdio.h>
void touch_lines(char *p, long n);
void bench_mark(void);
static char bufs[2][64 * 1024] __attribute__((aligned(64)));
static const long lines[2] = {100, 300};
static pthread_barrier_t barrier;
static void *worker(void *arg)
{
    long i = (long)arg;
    pthread_barrier_wait(&barrier);     /* both threads exist: distinct vCPUs */
    touch_lines(bufs[i], lines[i]);
    return NULL;
}
int main(void)
{
    pthread_t t[2];
    pthread_barrier_init(&barrier, NULL, 2);
    bench_mark();
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (long i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
"""
TOUCH_S = """
    .text
    .global touch_lines
    .type touch_lines, %function
touch_lines:            // x0 = buffer, x1 = lines (> 0): one load per 64-byte line
1:  ldr x2, [x0]
    add x0, x0, #64
    subs x1, x1, #1
    b.ne 1b
    ret
    .size touch_lines, .-touch_lines
    .global bench_mark
    .type bench_mark, %function
bench_mark:
    ret
    .size bench_mark, .-bench_mark
"""


@pytest.fixture(scope="module")
def threads_program(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench_threads")
    (d / "threads.c").write_text(THREADS_C)
    (d / "touch.S").write_text(TOUCH_S)
    program = d / "threads"
    proc = subprocess.run([GCC, "-O2", "-static", "-pthread", str(d / "threads.c"),
                           str(d / "touch.S"), "-o", str(program)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return program


class LoopCost:
    """A stand-in cycle model: touch_lines' loop block (its bytes are unique in the program,
    unlike its lone `ret`) 2 cycles, every other block 0."""
    def __init__(self, loop_code):
        self.loop_code = loop_code

    def cycles(self, cpu, code):
        return 2.0 if code == self.loop_code else 0.0


def test_two_threads_are_counted_per_vcpu(built, threads_program, tmp_path):
    _, _, plugin, _ = built
    program = threads_program
    table = sym.SymbolTable.from_elf(program)
    blocks, out = run_profiled(program, [], plugin, tmp_path / "threads.tb",
                               mark=table.address_of("bench_mark"), caches=CACHES)
    assert out.strip() == "done"
    touch = [b for b in blocks if table.lookup(b.vaddr) == "touch_lines"]
    insns, l1, l2 = {}, {}, {}
    for b in touch:
        for vcpu, (executions, _) in b.vcpus.items():
            insns[vcpu] = insns.get(vcpu, 0) + executions * b.n_insns
        for (vcpu, core), m in b.misses.items():
            if core == "neoverse-n2":
                l1[vcpu] = l1.get(vcpu, 0) + m.l1
                l2[vcpu] = l2.get(vcpu, 0) + m.l2
    # two vCPUs besides the main thread's, one per worker: 4 instructions per line + ret;
    # private caches, cold: one L1D and one L2 miss per line
    assert len(insns) == 2 and 0 not in insns
    by_lines = {n: v for v in insns for n in (100, 300) if insns[v] == 4 * n + 1}
    assert sorted(by_lines) == [100, 300]
    for n, vcpu in by_lines.items():
        assert (l1[vcpu], l2[vcpu]) == (n, n)
    # the block totals are the sums over vCPUs
    for b in blocks:
        assert b.count == sum(e for e, _ in b.vcpus.values())
    # per-thread cycles: 2 per line; balance over the threads that ran the operation (the main
    # thread too: it runs pthread_create/join, costed 0 here)
    groups = [sym.group_of(table.lookup(b.vaddr)) for b in blocks]
    [loop] = [b.code for b in touch if b.n_insns == 4]
    t = thread_profile(blocks, groups, LoopCost(loop), "neoverse-n2")
    assert sorted(c for c in t["cycles"].values() if c) == [200.0, 600.0]
    assert t["cycles"].get(0, 0.0) == 0.0
    mean = 800.0 / len(t["cycles"])
    assert t["balance"] == pytest.approx(600.0 / mean)
    for n, vcpu in by_lines.items():        # its own lines plus its thread start-up's
        assert t["l1_misses"][vcpu] >= n and t["l2_misses"][vcpu] >= n


def test_profile_all_with_caches(built, threads_program, tmp_path):
    """The pipeline adds "memory" and "threads" per simulated core (the program ignores the
    workload's arguments)."""
    _, _, plugin, _ = built
    toy = Workload("toy", "toy", "gemm", "s8", (1, 1, 1), "toy")
    [profile] = profile_all(threads_program, [(toy, DispatchPath("i8mm", "x", "smmla"))], plugin,
                            tmp_path, CycleModel(tmp_path / "mca.json"), ["neoverse-n2"],
                            progress=lambda _: None, caches={"neoverse-n2": MEMORY["neoverse-n2"]})
    assert profile["error"] is None
    mem = profile["memory"]["neoverse-n2"]
    assert mem["other"]["l1_misses"] >= 400 and mem["total"]["l1_misses"] >= mem["other"]["l1_misses"]
    threads = profile["threads"]["neoverse-n2"]
    assert len(threads["cycles"]) == 3 and all(c > 0 for c in threads["cycles"].values())
    values = list(threads["cycles"].values())
    assert threads["balance"] == pytest.approx(max(values) / (sum(values) / 3))


def test_balance_is_max_over_mean():
    assert balance({0: 100.0, 1: 300.0}) == pytest.approx(1.5)      # mean 200
    assert balance({3: 7.0}) == 1.0
    assert balance({}) is None


@pytest.mark.parametrize("spec,message", [
    ("cache=x:4096:4:32768:8:48", "LINE_BYTES must be a power of two"),
    ("cache=x:4096:4:32768", "expected 5 decimal numbers"),
    ("cache=x:4096:4:32768:8:64:9", "expected 5 decimal numbers"),
    ("cache=x:4k:4:32768:8:64", "expected 5 decimal numbers"),
    ("cache=:4096:4:32768:8:64", "NAME 1-31 characters"),
    ("cache=x:3000:4:32768:8:64", "not a multiple of ways x line"),
    ("cache=x:12288:4:32768:8:64", "number of sets is not a power of two"),
    ("cache=x:4096:0:32768:8:64", "sizes and ways must be positive"),
    ("cache=x:4096:4:32768:8:64,cache=x:4096:4:32768:8:64", "NAME given twice"),
    ("mark=12z", "hexadecimal"),
    ("bogus=1", "unknown argument"),
])
def test_plugin_rejects_bad_arguments(built, tmp_path, spec, message):
    d, program, plugin, _ = built
    proc = subprocess.run([QEMU, "-plugin", f"{plugin},out={tmp_path / 'x.tb'},{spec}", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    [line] = [l for l in proc.stderr.splitlines() if l.startswith("tbcount: ")]
    assert line.startswith(f"tbcount: {spec.split(',')[-1]}: ") and message in line, proc.stderr
    assert not (tmp_path / "x.tb").exists()


def test_too_many_caches_is_an_error(built, tmp_path):
    _, program, plugin, _ = built
    specs = ",".join(f"cache=c{i}:4096:4:32768:8:64" for i in range(9))
    proc = subprocess.run([QEMU, "-plugin", f"{plugin},out={tmp_path / 'x.tb'},{specs}", str(program)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "at most 8" in proc.stderr


def test_cache_argument_spells_the_geometry():
    assert cache_argument("neoverse-n2", MEMORY["neoverse-n2"]) == \
        "cache=neoverse-n2:65536:4:1048576:8:64"
    with pytest.raises(ValueError, match="one line size"):
        cache_argument("odd", MemoryModel(CacheLevel(4096, 4, 64), CacheLevel(32768, 8, 128), 1, 1, ""))


def test_parse_rejects_a_malformed_miss_line():
    from bench.tbcount import parse_profile
    head = "# tbcount 2: x\n# cache 0 tiny 4096 4 32768 8 64\n400000 1 5 1f2003d5\n"
    [b] = parse_profile(head + "v 0 5 2\nm 0 0 1 2 3 4\n")
    assert b.vcpus == {0: (5, 2)} and (b.misses[(0, "tiny")].l2_writebacks) == 4
    with pytest.raises(ProfileError, match="malformed"):
        parse_profile(head + "m 0 0 1 2\n")
    with pytest.raises(ProfileError, match="malformed"):
        parse_profile(head + "m 0 7 1 2 3 4\n")          # cache 7 was not declared


DC_ZVA_S = """
    .text
    .global _start
_start:
    adrp x0, buf
    add x0, x0, :lo12:buf
    mov x2, #64
1:  dc zva, x0
    add x0, x0, #64
    subs x2, x2, #1
    b.ne 1b
    mov x0, #0
    mov x8, #93
    svc #0
    .bss
    .balign 4096
buf: .skip 8192
"""


def test_dc_zva_is_counted_not_simulated(built, tmp_path):
    """QEMU zeroes a DC ZVA block without a memory callback: the plugin counts the executions
    (64 here) and the misses stay zero."""
    _, _, plugin, _ = built
    (tmp_path / "zva.S").write_text(DC_ZVA_S)
    program = tmp_path / "zva"
    subprocess.run([GCC, "-nostdlib", "-static", "-no-pie", str(tmp_path / "zva.S"), "-o",
                    str(program)], check=True)
    blocks, _ = run_profiled(program, [], plugin, tmp_path / "zva.tb", caches=CACHES)
    assert sum(n for b in blocks for n in b.dc_zva.values()) == 64
    assert totals(blocks, "tiny") == (0, 0, 0, 0)
    mem = memory_profile(blocks, ["other"] * len(blocks), "tiny")
    assert (mem["total"]["dc_zva"], mem["total"]["accesses"]) == (64, 0)


def test_no_cache_option():
    from bench.__main__ import parse_args
    assert parse_args(["--no-cache"]).no_cache and not parse_args([]).no_cache
