"""Render the C drivers bundled with the kernels: every `templates/c/*.j2` into the output folder.

`templates/c/NAME.h.j2` / `NAME.c.j2` become `<out>/<prefix>NAME.h|c`, except the public header
`tilesmith.h.j2`, which keeps its name. Templates see:
  p, P       symbol prefix as given (e.g. "ts_") and upper-cased for macros ("TS_")
  arch       "v8" | "v82" | "v86"
  manifest   the kernel manifest (dict, as written to manifest.json)
  main       {instruction key: kernel entry} for the main tile of every generated instruction
"""
from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
PUBLIC_HEADER = "tilesmith.h"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)


def output_name(template_name: str, prefix: str) -> str:
    name = template_name[:-len(".j2")]
    return name if name == PUBLIC_HEADER else prefix + name


def render_drivers(manifest: dict, out_dir) -> list[Path]:
    """Render every driver template for `manifest` into `out_dir`; returns the files written."""
    out_dir = Path(out_dir)
    prefix = manifest["prefix"]
    main = {k["instruction"]: k for k in manifest["kernels"] if k.get("role", "main") == "main"}
    context = dict(p=prefix, P=prefix.upper(), arch=manifest["arch"], manifest=manifest, main=main)
    env = _environment()
    written = []
    for template in sorted((TEMPLATES / "c").glob("*.j2")):
        text = env.get_template(f"c/{template.name}").render(**context)
        path = out_dir / output_name(template.name, prefix)
        path.write_text(text)
        written.append(path)
    return written
