"""The C drivers bundled with the kernels: the plain C99 tree under drivers/, copied with the
prefix applied, plus the one file that varies per build, rendered from the registry.

drivers/include/tilesmith.h and drivers/src/ts_*.{c,h} are ordinary C written with the prefix
`ts_` / `TS_`; they compile and are tested as they are. Copying applies PREFIX by rewriting
every identifier (and file name) that starts with `ts_` / `TS_` to start with the prefix / its
upper case instead (whole identifiers only: `ts_gemm_f32` -> `acme_gemm_f32`, never the `ts_`
inside `counts_x`). The public header keeps its name. The build-specific file is
`<prefix>dispatch.c` (templates/c/dispatch.c.j2): the kernel paths of each GEMM type of
gen.registry whose kernels this build has. The kernels' prototypes are `<prefix>kernels.h`
(gen.generate_cli).
"""
from __future__ import annotations

import re
from pathlib import Path

from .blocking import block_variant_classes, cache_sizes, class_blocks, run_time_facts
from .cores import ARM_PARTS, GENERIC, MEMORY
from .registry import BY_KEY, dispatch_paths, manifest_dispatch_paths, qdyn_kind  # noqa: F401  (public here too)
from .templating import template_environment

DRIVERS = Path(__file__).resolve().parent.parent / "drivers"
PUBLIC_HEADER = "tilesmith.h"
SOURCE_PREFIX = "ts_"
GENERATED = ("dispatch.c",)          # rendered per build from templates/c/<name>.j2
_IDENTIFIER = re.compile(r"\b(ts|TS)_(?=\w)")


def apply_prefix(text: str, prefix: str) -> str:
    """`text` with every identifier starting ts_ / TS_ starting with prefix / prefix.upper()."""
    upper = prefix.upper()
    return _IDENTIFIER.sub(lambda m: prefix if m.group(1) == "ts" else upper, text)


def output_name(name: str, prefix: str) -> str:
    """File name in the output folder of a driver file named `name` in the tree (or of a
    generated file named without prefix, e.g. "dispatch.c")."""
    if name == PUBLIC_HEADER:
        return name
    if name.startswith(SOURCE_PREFIX):
        name = name[len(SOURCE_PREFIX):]
    return prefix + name


def tree_files() -> list[Path]:
    """Every file of the C tree, public header first."""
    return [DRIVERS / "include" / PUBLIC_HEADER] + sorted((DRIVERS / "src").glob("ts_*.[ch]"))


def copy_drivers(prefix: str, out_dir, names=None) -> dict[str, Path]:
    """Copy the tree's files (all, or those whose tree name is in `names`, e.g. "ts_requant.c";
    the public header always) into `out_dir` with `prefix` applied. Returns {tree name: path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {}
    for source in tree_files():
        if names is not None and source.name != PUBLIC_HEADER and source.name not in names:
            continue
        path = out_dir / output_name(source.name, prefix)
        path.write_text(apply_prefix(source.read_text(), prefix))
        written[source.name] = path
    return written


def with_blocks(dispatch: dict, cpu: str) -> dict:
    """dispatch_paths with each path's cache blocks (gen.blocking: KC, MC and the longest K
    run unsplit) for a CPU= build; a core-class variant's for its class's cores (it runs on
    those only). A CPU=generic build's generic path is preceded by a block variant for each
    core class whose blocks differ (gen.blocking block_variant_classes) and that has no kernel
    variant of the instruction in the type's table: the same kernel and panels with that class's
    blocks, core_class set, so dispatch gives it to that class's cores (ts_select_path_class:
    the first usable path of the core's class or generic). The qdyn type's paths run their own
    loops (ts_qdyn*.c, no blocks) and get none."""
    def blocks(path: dict, where: str) -> dict:
        shape = (path["instruction"], path["ep"], path["hp"], path["lp"])
        return dict(path, **dict(zip(("kc_steps", "mc_panels", "kw_steps"),
                                     class_blocks(where, *shape))),
                    **dict(zip(("block_l1", "block_l2", "block_elem", "kw_from_l2"),
                               run_time_facts(where, *shape))))

    def table(key: str, paths: list) -> list:
        out = []
        for path in paths:
            cls = path.get("core_class", GENERIC)
            if cpu == GENERIC and cls == GENERIC and BY_KEY[key].epilogue != "dequant" and not path.get("svl_bytes"):
                kernel_variants = {p.get("core_class") for p in paths
                                   if p["instruction"] == path["instruction"]}
                out += [blocks(dict(path, core_class=c), c)
                        for c in block_variant_classes(path["instruction"], path["ep"],
                                                       path["hp"], path["lp"])
                        if c not in kernel_variants]
            out.append(blocks(path, cls if cpu == GENERIC else cpu))
        return out
    return {key: table(key, paths) for key, paths in dispatch.items()}


def cpu_cores() -> list[tuple]:
    """(name, MIDR_EL1 part number, core class, L1D bytes, L2 bytes, reference) of every Arm core
    gen.cores.ARM_PARTS names: the drivers' one table of them (ts_cpu_cores). The caches are
    gen.cores.MEMORY's for the cores it models (the sizes a call's blocks follow on that core when
    the context passes none, drivers/src/ts_blocks.c ts_select_sized_path), else 0 and None."""
    assert len({part for part, _ in ARM_PARTS.values()}) == len(ARM_PARTS), "a part twice"
    assert set(MEMORY) <= set(ARM_PARTS), "caches of a core dispatch does not know"
    rows = []
    for name, (part, cls) in ARM_PARTS.items():
        m = MEMORY.get(name)
        rows.append((name, part, cls, m.l1d.size if m else 0, m.l2.size if m else 0,
                     m.reference if m else None))
    return rows


def base_context(prefix: str, arch: str, manifest: dict, main: dict, dispatch: dict) -> dict:
    """The variables the generated driver file's template sees."""
    cpu = manifest.get("cpu", GENERIC)
    l1, l2 = cache_sizes(cpu)
    return dict(p=prefix, P=prefix.upper(), arch=arch, cpu=cpu, l1=l1, l2=l2,
                manifest=manifest, main=main, dispatch=dispatch, cpu_cores=cpu_cores(),
                macros={key: BY_KEY[key].macro for key in dispatch})


def render_templates(names, context: dict, out_dir) -> list[Path]:
    """Render templates/c/<name>.j2 for every name (e.g. "dispatch.c") with `context` into
    `out_dir` under its output name; returns the files written, in the order of `names`."""
    out_dir = Path(out_dir)
    env = template_environment()
    written = []
    for name in names:
        path = out_dir / output_name(name, context["p"])
        path.write_text(env.get_template(f"c/{name}.j2").render(**context))
        written.append(path)
    return written


def render_drivers(manifest: dict, out_dir) -> list[Path]:
    """The whole C side of a build into `out_dir`: the tree with the manifest's prefix, the
    dispatch tables of its kernels, and CMakeLists.txt (a static library target
    `<prefix>tilesmith` of every .c and the manifest's kernels). Returns the files written."""
    prefix = manifest["prefix"]
    main = {k["instruction"]: k for k in manifest["kernels"] if k.get("role", "main") == "main"}
    context = base_context(prefix, manifest["arch"], manifest, main,
                           with_blocks(manifest_dispatch_paths(manifest),
                                       manifest.get("cpu", GENERIC)))
    copied = copy_drivers(prefix, out_dir)
    written = list(copied.values()) + render_templates(GENERATED, context, out_dir)
    sources = sorted(p.name for p in written if p.suffix == ".c")
    sources += sorted(f["file"] for k in manifest["kernels"]
                      for f in [k] + k.get("variants", []))      # epilogue variants too
    sources += sorted(k["file"] for k in manifest.get("sme_kernels", []))
    sources += sorted(k["file"] for k in manifest.get("sme_packers", []))
    sources += sorted(k["file"] for k in manifest.get("qdyn_kernels", []))
    cmake = Path(out_dir) / "CMakeLists.txt"
    cmake.write_text(template_environment().get_template("c/CMakeLists.txt.j2").render(
        sources=sources, **context))
    return written + [cmake]
