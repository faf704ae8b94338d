"""A `git-hydrate` executable on PATH that runs this checkout, for tests driving the real git."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .conftest import ROOT


def hydrate_on_path(directory: Path) -> dict[str, str]:
    """Write ``directory/git-hydrate`` (runs ``python -m git_hydrate`` from the checkout)
    and return an environment whose PATH finds it first."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "git-hydrate"
    script.write_text(
        f"#!/bin/sh\nPYTHONPATH='{ROOT}' exec '{sys.executable}' -m git_hydrate \"$@\"\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{directory}{os.pathsep}{env.get('PATH', '')}"
    return env
