"""Temporary files of the caches under ``<common dir>/hydrate/``: named, found, pruned.

Every derived file is written whole to a temporary file beside it and renamed
over it (:meth:`~git_hydrate.store.base.RepositoryBase.replace_file`). A
writer killed before the rename leaves the temporary file behind (a prompt's
can be tens of megabytes), so its name says who wrote it:
``<name>.<pid>.<8 hex>.tmp``. One is *stale* when its writer is gone (no
process of that id here, and untouched for :data:`DEAD_WRITER_SECONDS`) or
when it has not been written for :data:`SAFE_AGE_SECONDS` whoever holds the
id (a reused one); a live writer touches its file with every chunk.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Final, TypedDict

    class Temporary(TypedDict):
        """One temporary file: where, how big, how long untouched, whether stale."""

        path: str
        size: int
        age_seconds: float
        pid: int
        stale: bool


__all__ = [
    "DEAD_WRITER_SECONDS",
    "SAFE_AGE_SECONDS",
    "find_temporaries",
    "remove_stale_temporaries",
    "temporary_name",
]

#: A temporary file untouched this long is stale even if a process of its
#: writer's id runs (the id was reused, or it is another machine's).
SAFE_AGE_SECONDS: Final = 3600.0
#: A temporary file whose writer is gone is stale once untouched this long
#: (a margin for a process id of another machine sharing the directory).
DEAD_WRITER_SECONDS: Final = 60.0

_HEX: Final = frozenset("0123456789abcdef")


def _writer(name: str) -> int | None:
    """The process id in a temporary file's name, or ``None`` if it is not one
    (``re`` is left out: the command line's fast path imports this module)."""
    parts = name.rsplit(".", 3)
    if len(parts) != 4 or parts[3] != "tmp" or len(parts[2]) != 8 or not set(parts[2]) <= _HEX:
        return None
    pid = parts[1]
    return int(pid) if pid.isascii() and pid.isdigit() and len(pid) <= 10 else None


def temporary_name(path: str) -> str:
    """A fresh temporary name beside ``path``, naming this process (unique per writer:
    two threads of one process may write the same path)."""
    return f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"


def _running(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process (EPERM): running
    return True


def find_temporaries(directory: str, now: float | None = None) -> list[Temporary]:
    """Every temporary file under ``directory`` (recursively), sorted by path."""
    now = time.time() if now is None else now
    found: list[Temporary] = []
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            pid = _writer(name)
            if pid is None:
                continue
            path = os.path.join(dirpath, name)
            try:
                status = os.lstat(path)
            except OSError:
                continue  # renamed into place meanwhile
            age = max(0.0, now - status.st_mtime)
            stale = age >= SAFE_AGE_SECONDS or (
                age >= DEAD_WRITER_SECONDS and pid != os.getpid() and not _running(pid)
            )
            found.append(
                {
                    "path": path,
                    "size": status.st_size,
                    "age_seconds": round(age, 1),
                    "pid": pid,
                    "stale": stale,
                }
            )
    return sorted(found, key=lambda temporary: temporary["path"])


def remove_stale_temporaries(directory: str, now: float | None = None) -> list[Temporary]:
    """Remove the stale temporary files under ``directory``; return what was removed."""
    removed: list[Temporary] = []
    for temporary in find_temporaries(directory, now):
        if not temporary["stale"]:
            continue
        try:
            os.unlink(temporary["path"])
        except OSError:
            continue  # gone meanwhile, or not ours to remove
        removed.append(temporary)
    return removed
