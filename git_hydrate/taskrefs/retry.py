"""The one retry policy of every writer, and what a write that gave up says.

Every change is one commit moved onto its ref by a compare-and-swap. A writer
that loses the race re-applies its change to what the winner wrote, on the
attempts of :func:`attempts`; a lock older than any live writer keeps one is
named at once instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Final

from ..errors import Busy
from ..ids import ref_name
from ..store import Repository, lockfiles

__all__ = ["MAX_ATTEMPTS", "STALE_LOCK_SECONDS", "attempts", "busy", "lock_left_behind"]

#: How often a write re-applies its change after losing a race before giving up.
MAX_ATTEMPTS: Final = 64
#: A ref lock older than this was left behind by a writer that died: git holds
#: one for milliseconds. A write that finds one gives up at once and names it.
STALE_LOCK_SECONDS: Final = 10.0


def attempts(limit: int = MAX_ATTEMPTS) -> Iterator[int]:
    """Attempt numbers for a write that may lose races: jittered, growing back-off.

    The first attempt starts at once; each later one after a random pause of
    a few milliseconds that grows with the attempt (bounded), so that writers
    that collided spread out. A loop that exhausts them raises :class:`Busy`.
    """
    for attempt in range(limit):
        if attempt:
            import random  # (only on a retry: not on every command's start-up)

            time.sleep(random.uniform(0.001, 0.004) * min(attempt, 10))
        yield attempt


def lock_left_behind(repo: Repository, ref: bytes) -> bool:
    """Whether a lock file stopping ``ref`` (its own, or ``packed-refs.lock``)
    is older than any live writer keeps one."""
    for lock in repo.ref_locks(ref):
        try:
            old = time.time() - os.stat(lock).st_mtime > STALE_LOCK_SECONDS
        except OSError:
            continue
        if old and lockfiles.maker_runs(lock) is None:  # (a live git-hydrate's is waited for)
            return True
    return False


def busy(repo: Repository, task_id: str) -> Busy:
    """Why a write of ``task_id`` gave up: a lock left behind, or constant change."""
    for lock in repo.ref_locks(ref_name(task_id)):
        try:
            age = time.time() - os.stat(lock).st_mtime
        except OSError:
            continue
        return Busy(
            f"task {task_id} is locked by {lock} ({age:.0f} s old); if no git or "
            f"git-hydrate process is writing it, {lockfiles.clearing(age)}"
        )
    return Busy(
        f"task {task_id} kept changing under this write ({MAX_ATTEMPTS} attempts); try again"
    )
