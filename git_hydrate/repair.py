"""``doctor --repair``: mend the tasks a pull would refuse, where a write can.

:func:`.sync.merging.check_task_json` refuses a task whose ``task.json`` or
links file holds a key twice in one object, or a date that is none; ``push``
holds such a task back and ``doctor`` names it. Every command reads such a
file as msgspec decodes it (the last value of a key), so writing the task
again as it is read writes each key once; a date that is none is replaced by
what the task's history says: ``created_at`` by the time of its first
commit, ``claimed_at`` and a checkpoint's ``at`` by the time of its last one
(no earlier than they can have been); a dependency on itself, or itself as
its parent, is dropped. Each mended task is one commit on its
ref, its message naming what was mended. Nothing else is touched.
"""

from __future__ import annotations

import contextlib
from functools import partial
from typing import Any, Final

import msgspec

from . import codec, validate
from .errors import CorruptData, ValidationError
from .ids import ref_name
from .model import LINKS_FANNED_FORMAT, Checkpoint, LinkList, Task
from .sync.merging import task_json_problem
from .taskrefs import Change, TaskRefs, TaskState, iso_utc, task_message
from .taskrefs.layout import link_shard_path

__all__ = ["repair"]

_ACTION: Final = "doctor-repair"


def repair(refs: TaskRefs) -> list[dict[str, Any]]:
    """Mend each task a pull would refuse and a write can mend: per task mended,
    its id, what was wrong (``was``) and whether it is mended now (``ok``; if not,
    ``problem`` says what remains)."""
    done: list[dict[str, Any]] = []
    for task_id in refs.task_ids():
        was = _problem(refs, task_id)
        if not was:
            continue
        entry: dict[str, Any] = {"task_id": task_id, "was": was, "ok": True}
        # (a task that cannot be read at all is no write's to mend: named, and the
        # others are still mended)
        with contextlib.suppress(CorruptData):
            refs.write(task_id, partial(_mended, refs, task_id))
        left = _problem(refs, task_id)
        if left:
            entry.update(ok=False, problem=left)
        done.append(entry)
    return done


def _problem(refs: TaskRefs, task_id: str) -> str:
    """Why a pull would refuse the task, or why it cannot be read (``""``: neither)."""
    try:
        return task_json_problem(task_id, refs.load(task_id))
    except CorruptData as exc:
        return str(exc).removeprefix(f"task {task_id}: ")


def _mended(refs: TaskRefs, task_id: str, state: TaskState) -> Change[None]:
    """The task as it is read, each date that is none replaced (see the module),
    and every links file written again (each key once)."""
    task = state.task
    tip = refs.tip(task_id)
    last = refs.repo.read_commit_info(tip).commit_time if tip is not None else None
    dates: list[str] = []
    if not _is_date(task.created_at):
        first = _first_commit_time(refs, task_id)
        task = msgspec.structs.replace(task, created_at=_stamp(first if first else last))
        dates.append("created_at")
    if not _is_date(task.claimed_at):
        task = msgspec.structs.replace(task, claimed_at=_stamp(last))
        dates.append("claimed_at")
    task = _checkpoints_mended(task, _stamp(last), dates)
    if task_id in task.depends_on:
        task = msgspec.structs.replace(
            task, depends_on=[d for d in task.depends_on if d != task_id]
        )
        dates.append("depends_on itself")
    if task.parent == task_id:
        task = msgspec.structs.replace(task, parent="")
        dates.append("parent itself")
    # (a write whose tree is the task's makes no commit: what it cannot mend stays named)
    bodies = _links_rewritten(refs, state)
    what = ", ".join(dates) or "keys written once"
    return Change(
        task=task,
        links=state.links,
        bodies=bodies,
        message=task_message(f"doctor --repair {task_id} ({what})", _ACTION, task_id),
        result=None,
    )


def _checkpoints_mended(task: Task, stamp: str, dates: list[str]) -> Task:
    """``task`` with each checkpoint's date that is none replaced by ``stamp``."""
    steps: list[Checkpoint] = []
    for index, step in enumerate(task.checkpoints):
        if not _is_date(step.at):
            step = msgspec.structs.replace(step, at=stamp)
            dates.append(f"checkpoints[{index}].at")
        steps.append(step)
    return msgspec.structs.replace(task, checkpoints=steps) if steps != task.checkpoints else task


def _links_rewritten(refs: TaskRefs, state: TaskState) -> dict[bytes, bytes | None]:
    """The fanned-out links files whose bytes are not what this version writes of
    what they decode to (a key twice), written again (``links.json`` is written
    by every write)."""
    changes: dict[bytes, bytes | None] = {}
    if state.shards is None:
        return changes
    for prefix, stored in state.raw_shards.items():
        group = state.shards.get(prefix, [])
        data = codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group))
        if data != stored:
            changes[link_shard_path(prefix)] = refs.repo.write_blob(data)
    return changes


def _is_date(value: str) -> bool:
    try:
        validate.timestamp(value, "date")
    except ValidationError:
        return False
    return True


def _stamp(moment: int | None) -> str:
    return iso_utc(moment) if moment is not None else ""


def _first_commit_time(refs: TaskRefs, task_id: str) -> int | None:
    """The committer time of the task's first commit (``None``: git cannot say)."""
    proc = refs.repo.git(
        ["log", "--max-parents=0", "--format=%ct", ref_name(task_id).decode()], check=False
    )
    times = proc.stdout.decode("ascii", "replace").split()
    return int(times[-1]) if proc.returncode == 0 and times and times[-1].isdigit() else None
