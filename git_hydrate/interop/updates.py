"""An import's updates of the tasks it made before: checked item by item as the
input is read, then merged and written together.

Each update is a three-way merge (:mod:`git_hydrate.merge`) of the task's base
(what the upstream said at the last import), the task as it is here, and the
item. Written one by one, each cost a ``git update-ref`` process and loose
objects: 3,000 changed issues took 17 s and left 9,000 loose objects for the
next command's ``git gc --auto``. Together, their commits go into one pack and
their refs move in one transaction. An update that changes a task's parent or
dependencies is written on its own, after a cycle check under the graph lock,
and so is every update when a task moved since it was read (another writer).
"""

from __future__ import annotations

import time
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from ..attachments import check_text_secrets
from ..dependencies import check_no_cycle
from ..errors import HydrateError, ValidationError
from ..hydrate.forked import signals_held
from ..merge import Side, merge_states
from ..model import Task
from ..taskrefs import Change, TaskRefs, TaskState, Unchanged, task_message
from ..tasks import free_text

if TYPE_CHECKING:
    from .bases import Bases
    from .report import ImportReport

__all__ = ["Updates", "base_task", "update", "without_dangling"]


class _Pending(NamedTuple):
    """An update checked against the task as read: to merge and write."""

    task_id: str
    fields: dict[str, Any]
    base: Task | None
    state: TaskState
    source_id: str


def base_task(task: Task, fields: dict[str, Any]) -> Task:
    """``task`` with the upstream's fields: what the next import merges against."""
    return msgspec.structs.replace(task, **fields)


def without_dangling(depends_on: list[str], gone: AbstractSet[str]) -> tuple[list[str], str]:
    """``depends_on`` less the tasks the import left out (``gone``), and the warning
    that says so (``""``: none was): kept, the task would wait for ever on a task
    that is not here."""
    dangling = [d for d in depends_on if d in gone]
    if not dangling:
        return depends_on, ""
    kept = [d for d in depends_on if d not in gone]
    return kept, f"its dependency {', '.join(dangling)} was left out: dropped"


def _record_base(bases: Bases, pending: _Pending) -> None:
    """Keep what the upstream says of ``pending``'s task for the next import."""
    bases.new[pending.task_id] = base_task(pending.base or pending.state.task, pending.fields)


def _checked(
    refs: TaskRefs,
    task_id: str,
    fields: dict[str, Any],
    into: tuple[Bases, ImportReport],
    allow: bool | None,
    source_id: str = "",
) -> _Pending | None:
    """The update of ``task_id`` to ``fields``, checked (``None``: the upstream did
    not change since the last import, reported unchanged).

    Raises:
        ValidationError: the task here came from elsewhere, or the upstream's
            text holds a secret.
    """
    bases, report = into
    base = bases.get(task_id)
    state = refs.load(task_id)
    if state.task.source != fields["source"]:
        came = f"from {state.task.source}" if state.task.source else "by hand"
        raise ValidationError(
            f"task {task_id} exists here and was made {came}; import with another --prefix"
        )
    if base is not None and all(getattr(base, name) == value for name, value in fields.items()):
        report["unchanged"].append(task_id)
        return None
    check_text_secrets(refs.repo.settings, free_text(base_task(state.task, fields)), allow)
    return _Pending(task_id, fields, base, state, source_id or task_id)


def _merged(
    pending: _Pending, current: TaskState, conflicts: list[dict[str, Any]]
) -> Change[None]:
    """The change that merges the upstream's fields into ``current`` (the conflicts
    put in ``conflicts``); :class:`Unchanged` when the task would stay as it is."""
    task_id, fields, base = pending.task_id, pending.fields, pending.base
    theirs = base_task(base if base is not None else current.task, fields)
    ours = Side(current.task, current.links, time=int(time.time()) - 1, commit="")
    upstream = Side(theirs, current.links, time=int(time.time()), commit="")
    merged = merge_states(Side(base, current.links) if base else None, ours, upstream)
    conflicts[:] = [
        {"task_id": task_id, "field": c.field, "kept": c.chosen} for c in merged.conflicts
    ]
    if merged.task == current.task:
        raise Unchanged(None)
    return Change(
        task=merged.task,
        links=current.links,
        message=task_message(f"import {task_id}", "import", task_id, source=fields["source"]),
        result=None,
    )


def _edges(task: Task) -> tuple[Any, ...]:
    return tuple(task.depends_on), task.parent


def _write_one(refs: TaskRefs, pending: _Pending, into: tuple[Bases, ImportReport]) -> None:
    """Merge and write one update on the task as it is now (re-read on a race),
    checking for a cycle under the graph lock when its edges change."""
    bases, report = into
    task_id = pending.task_id
    conflicts: list[dict[str, Any]] = []
    changed: list[bool] = []  # (whether the last merge, the one written, changed anything)

    def apply(current: TaskState) -> Change[None]:
        conflicts.clear()
        changed[:] = [False]
        change = _merged(pending, current, conflicts)
        if _edges(change.task) != _edges(current.task):
            check_no_cycle(refs, task_id, change.task.depends_on, change.task.parent)
        changed[:] = [True]
        return change

    # the merge may add edges: checked and written in turn, under the graph lock; the
    # task and its base land together (see Updates.flush), an interrupt held only
    # then, not while the lock is waited for
    with refs.graph_lock(), signals_held():
        refs.write(task_id, apply)
        _record_base(bases, pending)
        bases.save(f"import: {task_id}")
    report["conflicts"] += conflicts
    # (updated by this run's write: another import's write of the same is not counted)
    report["updated" if changed == [True] else "unchanged"].append(task_id)


def update(
    refs: TaskRefs,
    task_id: str,
    fields: dict[str, Any],
    into: tuple[Bases, ImportReport],
    dry_run: bool,
    allow: bool | None,
) -> None:
    """Check, merge and write one update now (see the module's docstring)."""
    pending = _checked(refs, task_id, fields, into, allow)
    if pending is None:
        return
    if dry_run:
        into[1]["updated"].append(task_id)
        return
    _write_one(refs, pending, into)


class Updates:
    """The updates of one import: :meth:`add` checks each as its item is read,
    :meth:`flush` merges and writes them together."""

    def __init__(
        self,
        refs: TaskRefs,
        into: tuple[Bases, ImportReport],
        allow: bool | None,
        dry_run: bool,
    ) -> None:
        self.refs, self.into, self.allow, self.dry_run = refs, into, allow, dry_run
        self.pending: list[_Pending] = []

    def _without(self, pending: _Pending, gone: AbstractSet[str]) -> _Pending:
        """``pending`` without its dependencies on ``gone`` (:func:`without_dangling`)."""
        if "depends_on" not in pending.fields:  # (the source left them out: kept)
            return pending
        kept, why = without_dangling(pending.fields["depends_on"], gone)
        if not why:
            return pending
        self.into[1]["warnings"].append({"item": pending.source_id, "warning": why})
        return pending._replace(fields={**pending.fields, "depends_on": kept})

    def add(self, task_id: str, fields: dict[str, Any], source_id: str) -> None:
        """Check the update of ``task_id`` to ``fields`` (raising what makes item
        ``source_id`` fail) and keep it for :meth:`flush`."""
        pending = _checked(self.refs, task_id, fields, self.into, self.allow, source_id)
        if pending is not None:
            self.pending.append(pending)

    def flush(self, gone: AbstractSet[str] = frozenset()) -> None:
        """Write the updates kept: those that leave a task's edges as they are in
        one pack and one ref transaction, the others (and, should any task have
        moved meanwhile, all of them) one by one, each failure reported. A
        dependency on an item the import left out (``gone``) is dropped, said."""
        bases, report = self.into
        pending, self.pending = [self._without(p, gone) for p in self.pending], []
        if self.dry_run:
            report["updated"] += [p.task_id for p in pending]
            return
        alone: list[_Pending] = []
        together: dict[str, tuple[TaskState, Change[Any]]] = {}
        conflicts: dict[str, list[dict[str, Any]]] = {}
        for item in pending:
            found = conflicts[item.task_id] = []
            try:
                change = _merged(item, item.state, found)
            except Unchanged:
                _record_base(bases, item)
                report["unchanged"].append(item.task_id)
                continue
            if _edges(change.task) != _edges(item.state.task) or len(pending) == 1:
                alone.append(item)
            else:
                together[item.task_id] = (item.state, change)
        summary = f"hydrate: import {len(together)} update(s)"
        moved: set[str] = set()
        again: set[str] = set()
        # The updated tasks and their bases land together, an interrupt held until
        # both have: stopped between them, the next import would merge against the
        # older base and take a local edit made since for a change on both sides.
        with signals_held():
            try:
                if together:
                    moved, again = self.refs.update_many(together, summary)
            except HydrateError:  # (one that cannot be written: each on its own says which)
                again = set(together)
            for item in pending:
                if item.task_id not in together:
                    continue
                if item.task_id in again:
                    alone.append(item)
                    continue
                _record_base(bases, item)
                report["conflicts"] += conflicts[item.task_id]
                report["updated" if item.task_id in moved else "unchanged"].append(item.task_id)
            if together:
                bases.save(f"import: {len(together)} update(s)")
        for item in alone:
            try:
                _write_one(self.refs, item, self.into)
            except HydrateError as exc:
                report["errors"].append({"item": item.source_id, "error": str(exc)})
