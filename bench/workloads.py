"""The whole operations the benchmark profiles, the dispatch paths each runs, and the build of
their program (bench/workloads.c linked with a generated tilesmith folder)."""
from __future__ import annotations

import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from gen.isa import GENERATED, check_arch
from gen.registry import GEMM_TYPES, forcing_features

WORKLOADS_C = Path(__file__).resolve().parent / "workloads.c"
CROSS_CC = "aarch64-linux-gnu-gcc"


@dataclass(frozen=True)
class DispatchPath:
    """One dispatch path: the features left enabled (workloads.c FEATURES argument) and the
    MAC instruction the dispatcher should then pick (a gen.isa key)."""
    name: str
    features: str
    instruction: str


def _paths(t) -> tuple:
    """A GEMM type's dispatch paths, slowest first, from gen.registry."""
    return tuple(DispatchPath(p.bench_name, "+".join(forcing_features(t, p)) or "none",
                              p.instruction) for p in reversed(t.chain))


# Per data type (bench dtype), slowest first: derived from gen.registry.
PATHS = {t.bench_dtype: _paths(t) for t in GEMM_TYPES if t.bench_dtype}
DTYPE_LABEL = {t.bench_dtype: t.bench_label for t in GEMM_TYPES if t.bench_dtype}
CONV_DTYPES = tuple(t.bench_dtype for t in GEMM_TYPES if t.bench_dtype and t.bench_conv)
# The qdyn GEMM type's weight formats (bench/workloads.c bench_gemm_qdyn): "qdyn" is int8 per
# channel (the registry's bench dtype); int4 per channel and per block of 32 run the same paths.
QDYN_FORMATS = {"qdyn": "int8 per channel", "qdyn4": "int4 per channel",
                "qdyn4b32": "int4 block 32"}
for _fmt in QDYN_FORMATS:
    PATHS[_fmt] = PATHS["qdyn"]
    DTYPE_LABEL[_fmt] = f"qdyn {QDYN_FORMATS[_fmt]}"
# issue 12's qdyn workloads beyond GEMM_SHAPES: the LLaMA-7B MLP width N = 11008
QDYN_SHAPES = (("gemv11008", "decode GEMV M=1 N=11008 K=4096", (1, 11008, 4096)),
               ("prefill11008", "prefill GEMM M=128 N=11008 K=4096", (128, 11008, 4096)))


@dataclass(frozen=True)
class Workload:
    name: str                  # unique id, e.g. "gemm512-s8"
    title: str                 # what it is, e.g. "GEMM 512³ int8"
    kind: str                  # "gemm" | "conv"
    dtype: str                 # "f32" | "bf16" | "s8"
    dims: tuple                # gemm: (M, N, K); conv: CONV_FIELDS
    shape: str = ""            # the shape group (the same shape in another dtype shares it)
    prepacked: bool = False    # B (weights / conv filter) packed once before the measurement
    shape_title: str = ""      # the shape group's title, e.g. "GEMM 512³"
    batch: int = 1             # conv: images per call
    newest_only: bool = False  # profile only the type's newest path (the costly large shapes)
    threads: int = 1           # the built-in pool's threads (workloads.c threads=N), > 1: a
                               # copy of a workload (name -N t) on its newest path only

    @property
    def macs(self) -> int:
        if self.kind == "gemm":
            m, n, k = self.dims
            return m * n * k
        c = dict(zip(CONV_FIELDS, self.dims))
        return (self.batch * conv_out(c, "h") * conv_out(c, "w") * c["out_c"] * c["k_h"] * c["k_w"]
                * c["in_c"])

    def args(self, path: DispatchPath, cache_sizes: tuple[int, int] | None = None) -> list[str]:
        """The program's arguments; `cache_sizes` (L1D, L2 bytes): the calls' blocks sized for
        those caches (bench/workloads.c cache=, ts_context_set_cache_sizes)."""
        op = [f"threads={self.threads}"] if self.threads > 1 else []
        op += [f"cache={cache_sizes[0]}:{cache_sizes[1]}"] if cache_sizes else []
        op += [self.kind + ("-prepacked" if self.prepacked else "")]
        op += [self.dtype] if self.kind == "gemm" else []
        return [*op, path.features, *map(str, self.dims), *([str(self.batch)] if self.batch > 1 else [])]

    def paths(self, arch: str) -> list[DispatchPath]:
        """The paths of this workload that an ARCH build has kernels for (the newest of them
        only, for a newest_only workload)."""
        paths = [p for p in PATHS[self.dtype] if p.instruction in GENERATED[check_arch(arch)]]
        return paths[-1:] if self.newest_only else paths

    def missing_paths(self, arch: str) -> list[DispatchPath]:
        """Paths the ARCH build has no kernels for (not those newest_only leaves out)."""
        built = [p for p in PATHS[self.dtype] if p.instruction in GENERATED[check_arch(arch)]]
        return [p for p in PATHS[self.dtype] if p not in built]


CONV_FIELDS = ("in_h", "in_w", "in_c", "out_c", "k_h", "k_w", "stride",
               "pad_top", "pad_left", "pad_bottom", "pad_right")


def conv_out(c: dict, axis: str) -> int:
    """Output height ("h") or width ("w") of a convolution (dilation 1)."""
    size = c[f"in_{axis}"]
    pads = (c["pad_top"], c["pad_bottom"]) if axis == "h" else (c["pad_left"], c["pad_right"])
    k = c["k_h"] if axis == "h" else c["k_w"]
    return (size + sum(pads) - k) // c["stride"] + 1


GEMM_SHAPES = (
    ("gemm256", "GEMM 256³", (256, 256, 256)),
    ("gemm512", "GEMM 512³", (512, 512, 512)),
    ("gemv", "decode GEMV M=1 N=K=4096", (1, 4096, 4096)),
    # LLaMA-7B's MLP up/gate projection (hidden 4096 -> 11008), one decode token; prepacked only
    ("gemv11008", "decode GEMV M=1 N=11008 K=4096", (1, 11008, 4096)),
    ("prefill", "prefill GEMM M=128 N=K=4096", (128, 4096, 4096)),
)
CONV_LAYERS = (
    # ResNet-50 stage 2, 3x3 64->64 at 56x56, SAME padding.
    ("conv-resnet50-3x3", "conv ResNet-50 3×3 64→64 56×56", (56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1)),
    # MobileNetV2 bottleneck expansion, 1x1 24->144 at 56x56.
    ("conv-mbv2-1x1", "conv MobileNetV2 1×1 24→144 56×56", (56, 56, 24, 144, 1, 1, 1, 0, 0, 0, 0)),
    # ResNet-50 v1.5 stage 3 entry, 3x3 stride 2 128->128, 56x56 -> 28x28; TFLite SAME padding
    # puts the one padding row/column at the bottom/right.
    ("conv-resnet50-3x3s2", "conv ResNet-50 3×3/2 128→128 56×56",
     (56, 56, 128, 128, 3, 3, 2, 0, 0, 1, 1)),
)


# Shapes whose operands exceed every modeled L2 (gen/cores.py MEMORY), for the cache model:
# profiled on the newest path of each type only (bench time); the older paths' instruction
# mix is what prefill M=128 and the batch-1 conv show.
# prefill M=512: B is 16 MiB (int8) to 64 MiB (fp32); fp32 and int8 only: bfmmla under QEMU
# took 473 s for this shape (fp32 159 s, int8 15 s, with the cache model).
LARGE_GEMM_SHAPES = (("prefill512", "prefill GEMM M=512 N=K=4096", (512, 4096, 4096)),)
# ResNet-50 3x3 64->64 at 56x56, batch 4: 784 KiB of int8 input, 1.8 MiB of im2col matrix.
LARGE_CONV_LAYERS = (("conv-resnet50-3x3-b4", "conv ResNet-50 3×3 64→64 56×56 batch 4",
                      CONV_LAYERS[0][2], 4),)


# Shapes whose B is a layer's weights: also profiled with B packed once beforehand (the steady
# state of inference), which shows what packing B costs on every plain call.
PREPACKED_SHAPES = ("gemv", "gemv11008", "prefill", *(name for name, _, _ in CONV_LAYERS))
# Shapes profiled with B prepacked only (weights are packed once in inference; packing 45 M
# elements under QEMU on every plain call would only add bench time).
PREPACKED_ONLY = ("gemv11008",)
PREPACKED = "-prepacked"


def all_workloads() -> list[Workload]:
    out = []
    for prepacked in (False, True):
        tag, note = (PREPACKED, ", B prepacked") if prepacked else ("", "")
        out += [Workload(f"{name}-{t.bench_dtype}{tag}", f"{title} {t.bench_label}{note}",
                         "gemm", t.bench_dtype, dims, name + tag, prepacked, title + note)
                for name, title, dims in GEMM_SHAPES for t in GEMM_TYPES
                if name in t.bench_shapes and (not prepacked or name in PREPACKED_SHAPES)
                and (prepacked or name not in PREPACKED_ONLY)]
        note = note.replace("B", "filter")
        out += [Workload(name + tag + ("" if dtype == "s8" else f"-{dtype}"),
                         f"{title} {DTYPE_LABEL[dtype]}{note}", "conv", dtype, dims, name + tag,
                         prepacked, title + note)
                for name, title, dims in CONV_LAYERS for dtype in CONV_DTYPES
                if not prepacked or name in PREPACKED_SHAPES]
    # the qdyn in-call runs say so (issue 12's table times weights prepacked)
    out = [replace(w, title=w.title + IN_CALL) if w.dtype == "qdyn" and not w.prepacked else w
           for w in out]
    out += qdyn_workloads()
    return out + large_workloads()


# issue 12's table times GEMM 512³ with the weights prepacked; the qdyn formats run it both ways
# (the in-call workload, titled so, also counts packing B).
IN_CALL = ", B packed in the call"


def qdyn_workloads() -> list[Workload]:
    """issue 12 deliverable 5: int4 per channel / block 32 on the registry's qdyn shapes, every
    format at N = 11008 (weights prepacked), and GEMM 512³ of every format with the weights
    prepacked (issue 12's table) beside the in-call one (B packed in every call)."""
    base = {name: (title, dims) for name, title, dims in GEMM_SHAPES}
    out = []
    for fmt in QDYN_FORMATS:
        title, dims = base["gemm512"]
        out.append(Workload(f"gemm512-{fmt}{PREPACKED}", f"{title} {DTYPE_LABEL[fmt]}, B prepacked",
                            "gemm", fmt, dims, "gemm512" + PREPACKED, True,
                            title + ", B prepacked"))
    for fmt in ("qdyn4", "qdyn4b32"):
        for name in ("gemv", "prefill", "gemm512"):
            title, dims = base[name]
            prepacked = name in PREPACKED_SHAPES
            tag, note = (PREPACKED, ", B prepacked") if prepacked else ("", IN_CALL)
            out.append(Workload(f"{name}-{fmt}{tag}", f"{title} {DTYPE_LABEL[fmt]}{note}", "gemm",
                                fmt, dims, name + tag, prepacked,
                                title + (note if prepacked else "")))
    for fmt in QDYN_FORMATS:
        for name, title, dims in QDYN_SHAPES:
            out.append(Workload(f"{name}-{fmt}{PREPACKED}",
                                f"{title} {DTYPE_LABEL[fmt]}, B prepacked", "gemm", fmt, dims,
                                name + PREPACKED, True, title + ", B prepacked"))
    return out


def with_threads(workloads, counts) -> list[Workload]:
    """The workloads, then a copy of each with each thread count > 1 of `counts` (newest path
    only: the balance is a property of the split, the paths' instruction mixes are shown once)."""
    out = list(workloads)
    for t in counts:
        if t > 1:
            out += [replace(w, name=f"{w.name}-{t}t", title=f"{w.title}, {t} threads",
                            shape=f"{w.shape}-{t}t", threads=t, newest_only=True)
                    for w in workloads]
    return out


def large_workloads() -> list[Workload]:
    """The shapes beyond L2 (LARGE_*): fp32 and int8 GEMM, int8 conv, newest path only."""
    out = [Workload(f"{name}-{dtype}", f"{title} {DTYPE_LABEL[dtype]}", "gemm", dtype, dims, name,
                    shape_title=title, newest_only=True)
           for name, title, dims in LARGE_GEMM_SHAPES for dtype in ("f32", "s8")]
    out += [Workload(name, f"{title} int8", "conv", "s8", dims, name, shape_title=title,
                     batch=batch, newest_only=True)
            for name, title, dims, batch in LARGE_CONV_LAYERS]
    return out


def build_program(gen_dir, output) -> Path:
    """Link bench/workloads.c with every driver (.c) and kernel (.S) of a generated folder into
    a static, non-PIE aarch64 executable (fixed addresses: block address = symbol address)."""
    gen_dir, output = Path(gen_dir), Path(output)
    if not (gen_dir / "tilesmith.h").exists():
        raise FileNotFoundError(f"{gen_dir}: no tilesmith.h (generate first: python3 -m gen generate)")
    sources = sorted(gen_dir.glob("*.c")) + sorted(gen_dir.glob("*.S"))
    output.parent.mkdir(parents=True, exist_ok=True)
    cmd = [CROSS_CC, "-march=armv8-a", "-O2", "-static", "-no-pie", "-Wall", "-I", str(gen_dir),
           str(WORKLOADS_C), *map(str, sources), "-o", str(output), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building the workloads failed: {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return output
