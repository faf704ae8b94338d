"""Noticing that the refs moved, without reading ten thousand ref files every poll.

The page asks every few seconds whether anything changed. Reading every ref under
``refs/hydrate/`` costs about 20 ms per thousand loose refs, so :class:`RefsWatch`
reads them again only when a cheap stamp changes: the modification times of the
directories under ``refs/hydrate/`` (a ref is written through a lock file created
beside it, which changes its directory) and of ``packed-refs`` and a reftable's
``tables.list``. A stamp whose newest time is within :data:`RACY_SECONDS` of the
moment it was taken is not trusted (a second write in the same clock tick would
leave it unchanged, as git's "racy" index entries), and every
:data:`FULL_READ_SECONDS` the refs are read again whatever the stamp says.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from typing import Final

from ..taskrefs import TASK_REF_PREFIX, TaskRefs, names_a_task

__all__ = ["FULL_READ_SECONDS", "RACY_SECONDS", "RefsWatch", "refs_version"]

#: A stamp this recent (seconds) may hide a second write: read the refs again.
RACY_SECONDS: Final = 2.0
#: Read every ref again at least this often (seconds), whatever the stamp says.
FULL_READ_SECONDS: Final = 30.0
_PREFIX: Final = b"refs/hydrate/"
#: Where the task refs are, below :data:`_PREFIX`.
_PREFIX_TASKS: Final = TASK_REF_PREFIX.removeprefix(_PREFIX)


def refs_version(refs: TaskRefs) -> str:
    """A short digest of every ref under ``refs/hydrate/``: it changes when a task,
    the archive or a removal record changes, and only then."""
    return _digest(refs.repo.refs_under(_PREFIX))


def _digest(found: dict[bytes, bytes]) -> str:
    digest = hashlib.sha256()
    for name, oid in sorted(found.items()):
        digest.update(name + b" " + oid + b"\n")
    return digest.hexdigest()[:20]


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_ino, info.st_size)


class RefsWatch:
    """The version of ``refs/hydrate/*`` (:func:`refs_version`), read again only
    when the refs may have moved."""

    def __init__(self, refs: TaskRefs, clock: Callable[[], float] = time.time) -> None:
        self.refs = refs
        self.clock = clock
        self.full_reads = 0
        self._stamp: list[tuple[str, tuple[int, int, int] | None]] | None = None
        self._trusted = False
        self._read_at = 0.0
        self._version = ""
        self._tips: dict[str, bytes] = {}

    def stamp(self) -> list[tuple[str, tuple[int, int, int] | None]]:
        """What changes whenever a ref under ``refs/hydrate/`` is written."""
        common = self.refs.repo.common_dir
        files = [
            os.path.join(common, "packed-refs"),
            os.path.join(common, "reftable", "tables.list"),
        ]
        found = [(path, _stat(path)) for path in files]
        top = os.path.join(common, "refs", "hydrate")
        found.append((top, _stat(top)))
        for directory, subdirs, _files in os.walk(top):
            for name in subdirs:
                path = os.path.join(directory, name)
                found.append((path, _stat(path)))
        return found

    def version(self) -> str:
        """The refs' version now."""
        now = self.clock()
        stamp = self.stamp()
        if self._trusted and stamp == self._stamp and now - self._read_at < FULL_READ_SECONDS:
            return self._version
        found = self.refs.repo.refs_under(_PREFIX)
        self._version = _digest(found)
        tasks = _PREFIX_TASKS
        self._tips = {
            name[len(tasks) :].decode("ascii"): oid
            for name, oid in found.items()
            if name.startswith(tasks) and names_a_task(name[len(tasks) :])
        }
        self.full_reads += 1
        newest = max((s[0] for _path, s in stamp if s is not None), default=0) / 1e9
        self._trusted = now - newest > RACY_SECONDS
        self._stamp = stamp
        self._read_at = now
        return self._version

    def tips_of(self, version: str) -> dict[str, bytes] | None:
        """Every live task's tip as the read that gave ``version`` found them
        (what :meth:`TaskRefs.task_tips` said then); ``None`` if that was not
        the last read."""
        return self._tips if version == self._version and version else None
