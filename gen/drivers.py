"""Render the C drivers bundled with the kernels: every `templates/c/*.j2` into the output folder.

`templates/c/NAME.h.j2` / `NAME.c.j2` become `<out>/<prefix>NAME.h|c`, except the public header
`tilesmith.h.j2`, which keeps its name. Templates see:
  p, P       symbol prefix as given (e.g. "ts_") and upper-cased for macros ("TS_")
  arch       "v8" | "v82" | "v86"
  manifest   the kernel manifest (dict, as written to manifest.json)
  main       {instruction key: kernel entry} for the main tile of every generated instruction
  dispatch   {gemm type: [path, ...]} the kernel paths of each public GEMM type that this
             manifest has kernels for, most preferred first (see DISPATCH / dispatch_paths)
"""
from __future__ import annotations

from pathlib import Path

from .isa import INSTRUCTIONS
from .templating import TEMPLATES, template_environment

PUBLIC_HEADER = "tilesmith.h"

# Runtime dispatch policy of the public GEMM types: (instruction, packed element) in order of
# preference. The first path whose kernel exists in the manifest and whose CPU feature is
# present (and not masked) runs. Packed elements:
#   f32       fp32 as given                      s8   int8 as given
#   bf16      bf16 bits, RNE from fp32           s16  int8 sign-extended to int16
#   f32_bf16  fp32 holding the bf16-rounded value (the bf16 GEMM on cores without bfmmla:
#             same inputs, same meaning as the bfmmla path)
DISPATCH = {
    "f32": (("fmla_f32", "f32"),),
    "bf16": (("bfmmla", "bf16"), ("fmla_f32", "f32_bf16")),
    "s8": (("smmla", "s8"), ("sdot", "s8"), ("smlal", "s16")),
}
# What the kernel reads for each packed element (must match gen.isa's operand type).
PACKED_OPERAND = {"f32": "fp32", "f32_bf16": "fp32", "bf16": "bf16", "s8": "int8", "s16": "int16"}
# gen.isa feature name -> public feature bit macro suffix ({{ P }}FEAT_...).
FEATURE_MACRO = {None: None, "dotprod": "DOTPROD", "i8mm": "I8MM", "bf16": "BF16"}


def output_name(template_name: str, prefix: str) -> str:
    name = template_name[:-len(".j2")]
    return name if name == PUBLIC_HEADER else prefix + name


def dispatch_paths(main: dict) -> dict:
    """{gemm type: [path dict]} for the kernels present in `main`, most preferred first.
    A path dict holds the kernel entry's symbol and tile (ep, hp, lp), the instruction, the
    packed element and the feature macro suffix (None when Armv8.0 has it)."""
    paths = {}
    for gemm_type, choices in DISPATCH.items():
        paths[gemm_type] = []
        for instruction, packed in choices:
            if instruction not in main:
                continue
            inst = INSTRUCTIONS[instruction]
            assert inst.a_type == PACKED_OPERAND[packed], (instruction, packed)
            kernel = main[instruction]
            paths[gemm_type].append(dict(
                instruction=instruction, packed=packed, symbol=kernel["symbol"],
                ep=int(kernel["ep"]), hp=int(kernel["hp"]), lp=int(kernel["lp"]),
                feature=FEATURE_MACRO[inst.feature]))
        if not paths[gemm_type] or paths[gemm_type][-1]["feature"] is not None:
            baseline = [i for i, _ in choices if INSTRUCTIONS[i].feature is None]
            raise ValueError(f"manifest has no Armv8.0 kernel for the {gemm_type} GEMM "
                             f"(needs one of {baseline})")
    return paths


def base_context(prefix: str, arch: str, manifest: dict, main: dict, dispatch: dict) -> dict:
    """The variables every driver template sees (see the module docstring)."""
    return dict(p=prefix, P=prefix.upper(), arch=arch, manifest=manifest, main=main,
                dispatch=dispatch)


def render_templates(names, context: dict, out_dir) -> list[Path]:
    """Render templates/c/<name>.j2 for every name (e.g. "gemm.c") with `context` into
    `out_dir` under its output name; returns the files written, in the order of `names`."""
    out_dir = Path(out_dir)
    env = template_environment()
    written = []
    for name in names:
        path = out_dir / output_name(name + ".j2", context["p"])
        path.write_text(env.get_template(f"c/{name}.j2").render(**context))
        written.append(path)
    return written


def render_drivers(manifest: dict, out_dir) -> list[Path]:
    """Render every driver template for `manifest` into `out_dir`; returns the files written."""
    prefix = manifest["prefix"]
    main = {k["instruction"]: k for k in manifest["kernels"] if k.get("role", "main") == "main"}
    context = base_context(prefix, manifest["arch"], manifest, main, dispatch_paths(main))
    names = [t.name[:-len(".j2")] for t in sorted((TEMPLATES / "c").glob("*.j2"))]
    return render_templates(names, context, out_dir)
