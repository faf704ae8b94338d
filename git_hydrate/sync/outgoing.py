"""What a push may send: nothing that a pull of it would refuse.

A pull skips a fetched task or shared ref that fails its checks
(:func:`~.merging.validate_remote`, :func:`~.union.check_shared_ref`), and
skips it again on every pull after, in every clone: pushed, damage never
heals. So a push holds what it would send to those very checks, not to a list
of its own that could drift from them, and sends the rest.

Only what the remote lacks is checked: a ref whose local value is the one the
mirror says the remote holds sends nothing, so a push of a few changed tasks
checks a few; a first push checks each task once, in the few pipelined reads
a pull of as many tasks makes.
"""

from __future__ import annotations

from ..errors import CorruptData
from ..store import Repository
from ..taskrefs import TaskRefs
from .merging import prefetch_remote, validate_remote
from .union import check_shared_ref

__all__ = ["refused_shared_ref", "refused_tasks"]


def refused_tasks(refs: TaskRefs, tips: dict[str, bytes]) -> dict[str, str]:
    """``{task_id: why}`` of the tasks among ``tips`` (``{task_id: tip}``) that a
    pull of them would skip as invalid; ``why`` is what the pull would say."""
    refused: dict[str, str] = {}
    if not tips:
        return refused
    with refs.repo.remembering():
        decoded = prefetch_remote(refs, tips)
        for task_id, tip in tips.items():
            try:
                validate_remote(refs, task_id, tip, decoded.get(task_id))
            except CorruptData as exc:
                refused[task_id] = str(exc).removeprefix(f"task {task_id}: ")
    return refused


def refused_shared_ref(repo: Repository, ref: bytes, tip: bytes) -> str | None:
    """Why a pull would skip ``ref`` (the archive or the removal record) at
    ``tip``; ``None`` when it would take it."""
    try:
        check_shared_ref(repo, ref, tip)
    except CorruptData as exc:
        return str(exc).removeprefix(f"{ref.decode()}: ")
    return None
