"""The one Jinja2 environment setup shared by the kernel emitter and the driver renderer."""
from __future__ import annotations

from pathlib import Path

import jinja2

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def template_environment() -> jinja2.Environment:
    """Templates under templates/; undefined variables are errors; whitespace as written."""
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                              trim_blocks=True, lstrip_blocks=True)
