"""Locks of this tool's own, beside git's: an ``O_EXCL`` file in the common dir.

git's ref locks guard one ref each. Two checks span more than the refs a
write moves, so their writers take turns on a lock file of their own:
a new id's case-folded name (:mod:`.admission`) and the graph of parents and
dependencies (:meth:`TaskRefs.graph_lock`). Each is held for the few
milliseconds of a check and a ref update; one older than
:data:`~.retry.STALE_LOCK_SECONDS` was left by a writer that died and is
taken over.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

from ..errors import Busy, NotWritable
from ..store import Repository
from .retry import STALE_LOCK_SECONDS

__all__ = ["held"]


@contextlib.contextmanager
def held(repo: Repository, name: str, busy: Callable[[], Busy]) -> Iterator[None]:
    """Hold the lock file ``name`` in ``repo``'s common dir while the block runs.

    Raises:
        Busy: what ``busy`` returns, when another writer held it for longer than
            twice :data:`STALE_LOCK_SECONDS`.
        NotWritable: the lock file cannot be made (a read-only repository).
    """
    path = os.path.join(repo.common_dir, name)
    deadline = time.monotonic() + 2 * STALE_LOCK_SECONDS
    while True:
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            pass
        except OSError as exc:  # a read-only repository, say: as any other write
            why = exc.strerror or exc
            where = repo.common_dir
            raise NotWritable(f"cannot write to the repository ({where}): {why}") from None
        try:
            age = time.time() - os.stat(path).st_mtime
        except FileNotFoundError:
            continue  # released meanwhile
        if age > STALE_LOCK_SECONDS:
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        if time.monotonic() > deadline:
            raise busy()
        import random  # (only on contention: not on every command's start-up)

        time.sleep(0.005 + random.random() * 0.01)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
