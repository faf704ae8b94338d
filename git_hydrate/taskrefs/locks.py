"""Locks of this tool's own, beside git's: an ``O_EXCL`` file in the common dir.

git's ref locks guard one ref each. Two checks span more than the refs a
write moves, so their writers take turns on a lock file of their own:
a new id's case-folded name (:mod:`.admission`) and the graph of parents and
dependencies (:meth:`TaskRefs.graph_lock`). Each is held for the few
milliseconds of a check and a ref update, and names the process that made it
(:mod:`git_hydrate.store.lockfiles`): one whose maker is gone (killed) is taken
over at once; one that names no maker and is older than
:data:`~.retry.STALE_LOCK_SECONDS` was left by a writer that died and is taken
over too; one whose maker runs is waited for. A command ended by Ctrl-C, SIGTERM
or SIGHUP removes the locks it holds.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

from ..errors import Busy, NotWritable
from ..store import Repository, lockfiles
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
    taken = False
    with lockfiles.guarded():
        try:
            while True:
                with lockfiles.deferred():  # (no ending between its making and `taken`)
                    taken = _made(repo, path)
                if taken:
                    break
                _wait_or_take_over(path, deadline, busy)
            yield
        finally:
            if taken:
                with lockfiles.deferred(), contextlib.suppress(OSError):
                    os.unlink(path)


def _made(repo: Repository, path: str) -> bool:
    """Whether the lock file ``path`` was made (``False``: another writer holds it)."""
    try:
        lockfiles.create(path)
    except FileExistsError:
        return False
    except OSError as exc:  # a read-only repository, say: as any other write
        why = exc.strerror or exc
        where = repo.common_dir
        raise NotWritable(f"cannot write to the repository ({where}): {why}") from None
    return True


def _wait_or_take_over(path: str, deadline: float, busy: Callable[[], Busy]) -> None:
    """Take the lock ``path`` over if its maker is gone (or, naming none, it is
    older than a live writer keeps one); else wait a moment, or give up."""
    judged = lockfiles.maker_gone(path)
    if judged is not None:
        lockfiles.take_over(path, judged)
        return
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return  # released meanwhile
    if time.time() - stat.st_mtime > STALE_LOCK_SECONDS and lockfiles.maker_runs(path) is None:
        lockfiles.take_over(path, stat)
        return
    if time.monotonic() > deadline:
        raise busy()
    import random  # (only on contention: not on every command's start-up)

    time.sleep(0.005 + random.random() * 0.01)
