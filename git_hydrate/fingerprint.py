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
    from typing import Final

__all__ = ["PACKAGE_DIR", "code_fingerprint"]

#: The package's directory (module paths are relative to it).
PACKAGE_DIR: Final = os.path.dirname(os.path.abspath(__file__))


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
