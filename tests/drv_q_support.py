"""Shared helpers of the requant / im2col / uzp driver tests: build a harness against the C
tree under drivers/ (as it is for the prefix ts_, else copied with the prefix applied, as
`python3 -m gen generate` does)."""
from __future__ import annotations

from pathlib import Path

from cross import compile_aarch64
from gen.drivers import DRIVERS, copy_drivers

TREE_INCLUDES = [DRIVERS / "include", DRIVERS / "src"]


def render_templates(out_dir, names, *, prefix="ts_", arch="v86") -> dict[str, Path]:
    """Copy the tree's drivers for every name (e.g. "requant.c") with `prefix` into out_dir,
    with the headers they include. Returns {name: copied path}. (`arch` is unused: these
    drivers are the same on every ARCH.)"""
    names = ("tilesmith.h", "build_internal.h", "error_internal.h", "quant_internal.h",
             "span_internal.h", "error.c", *names)
    tree = {name: name if name == "tilesmith.h" else "ts_" + name for name in names}
    copied = copy_drivers(prefix, out_dir, names=set(tree.values()))
    return {name: copied[tree[name]] for name in names}


def build_harness(tmp_path, harness, templates, *, link=(), prefix="ts_", compiler="gcc",
                  march="armv8-a", flags=(), binary_name=None):
    """Build tests/c/<harness> together with the drivers named in `link` (names as for
    render_templates; a harness may instead #include a driver .c to reach its static
    functions), always with error.c (ts_last_error, which every driver records into). With
    prefix ts_ straight from the tree (drivers/include, drivers/src on the include path), else
    from a copy with the prefix applied. C99, warnings are errors. Returns the binary path."""
    link = ("error.c", *link)
    if prefix == "ts_":
        includes = TREE_INCLUDES
        sources = [DRIVERS / "src" / f"ts_{name}" for name in link]
    else:
        gen_dir = Path(tmp_path) / f"gen_{prefix}"
        paths = render_templates(gen_dir, templates, prefix=prefix)
        includes = [gen_dir]
        sources = [paths[name] for name in link]
    binary = Path(tmp_path) / (binary_name or f"{Path(harness).stem}_{compiler}")
    source = Path(__file__).resolve().parent / "c" / harness
    return compile_aarch64([source, *sources], binary, includes=includes, compiler=compiler,
                           march=march, flags=["-std=c99", "-Wpedantic", "-Werror", *flags])
