"""Shared helpers of the requant / im2col / uzp driver tests: render the driver templates they
need into a folder (as `python3 -m gen generate` would) and build a harness against them."""
from __future__ import annotations

from pathlib import Path

from cross import compile_aarch64
from gen.drivers import base_context, render_templates as render_driver_templates

# A stand-in for the kernel generator's manifest: these drivers read only prefix and arch.
FAKE_MANIFEST_KERNELS: list = []


def render_templates(out_dir, names, *, prefix="ts_", arch="v86") -> dict[str, Path]:
    """Render templates/c/<name>.j2 for every name (e.g. "requant.c") into out_dir.
    Returns {name: rendered path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = {"prefix": prefix, "arch": arch, "kernels": FAKE_MANIFEST_KERNELS}
    context = base_context(prefix, arch, manifest, main={}, dispatch={})
    names = ("tilesmith.h", "quant_internal.h", "span_internal.h", *names)
    paths = dict(zip(names, render_driver_templates(names, context, out_dir)))
    return paths


def build_harness(tmp_path, harness, templates, *, link=(), prefix="ts_", compiler="gcc",
                  march="armv8-a", flags=(), binary_name=None):
    """Render `templates` (names as for render_templates) with `prefix`, then build
    tests/c/<harness> together with the rendered sources named in `link` (a harness may instead
    #include a rendered .c to reach its static functions). C99, warnings are errors, the
    rendered folder on the include path. Returns the binary path."""
    gen_dir = Path(tmp_path) / f"gen_{prefix}"
    paths = render_templates(gen_dir, templates, prefix=prefix)
    binary = Path(tmp_path) / (binary_name or f"{Path(harness).stem}_{compiler}")
    source = Path(__file__).resolve().parent / "c" / harness
    return compile_aarch64([source, *[paths[name] for name in link]], binary, includes=[gen_dir],
                           compiler=compiler, march=march,
                           flags=["-std=c99", "-Wpedantic", "-Werror", *flags])
