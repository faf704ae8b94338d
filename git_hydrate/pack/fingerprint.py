"""The code that decides a derived result, as ``stat`` sees it.

A development install (``pip install -e``, or a checkout on ``PYTHONPATH``)
keeps its version string from commit to commit, so a cache keyed by the version
alone could answer with what older code computed. The size and mtime of the
modules that compute it go into such keys; nothing is imported to get them.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, Final

__all__ = [
    "PACKAGE_DIR",
    "PACKER_INPUTS",
    "code_fingerprint",
    "installed_fingerprint",
    "packer_fingerprint",
    "packer_modules",
]

#: The package's directory (module paths are relative to it).
PACKAGE_DIR: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The modules outside ``pack/`` whose code decides what the packer reads and
#: renders: the task's fields and their stored form. ``tests/test_architecture.py``
#: holds this to the modules that ``pack/`` imports from the package.
PACKER_INPUTS: Final = ("codec.py", "model.py", "tasks.py")


def code_fingerprint(modules: Iterable[str], root: str = PACKAGE_DIR) -> list[int]:
    """``[size, mtime_ns]`` of each module under ``root`` (``-1, -1`` when missing)."""
    found: list[int] = []
    for name in modules:
        try:
            stat = os.stat(os.path.join(root, name))
        except OSError:
            found += [-1, -1]
            continue
        found += [stat.st_size, stat.st_mtime_ns]
    return found


def installed_fingerprint(modules: Iterable[str]) -> str:
    """Which of ``modules`` this process would import, as a fingerprint (each
    top-level package's location, size and modification time, or its absence):
    installing or upgrading one changes it. Nothing is imported."""
    import importlib.util

    found = []
    for name in sorted(modules):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        try:
            stat = os.stat(origin) if origin else None
        except OSError:
            stat = None
        found.append(f"{name}={origin}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{name}=-")
    return ";".join(found)


def packer_modules(root: str = PACKAGE_DIR) -> list[str]:
    """Every module of ``pack/`` (found, not listed by hand), then :data:`PACKER_INPUTS`."""
    try:
        names = sorted(n for n in os.listdir(os.path.join(root, "pack")) if n.endswith(".py"))
    except OSError:
        names = []
    return [*(f"pack/{name}" for name in names), *PACKER_INPUTS]


def packer_fingerprint(root: str = PACKAGE_DIR) -> list[Any]:
    """The names and :func:`code_fingerprint` of :func:`packer_modules`: a module
    added, removed, or changed changes it."""
    modules = packer_modules(root)
    return [modules, code_fingerprint(modules, root)]
