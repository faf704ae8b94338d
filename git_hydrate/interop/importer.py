"""Bringing items of other tools in as tasks: created once, updated by a merge after.

Each imported task records where it came from (``source``: the issue's URL, or
``FORMAT:ID``). What the upstream said at the last import is kept as that
task's *base* (``refs/hydrate/imports``: one commit whose tree holds one
``task.json`` per imported task, written once per run), so importing again is
a three-way merge by the same rules as a pull (:mod:`git_hydrate.merge`):
fields changed upstream come in, fields changed only here stay, and a field
changed on both sides takes the upstream value (the import is the newer
side). A task id that exists here but came from elsewhere is refused.

An item that cannot be imported (an id that cannot be a task id, a field over
1 MiB, a secret in its text, a dependency cycle) is reported with its reason
and nothing of it is written; the others are imported.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from .. import validate
from ..dependencies import (
    cycles,
    edge_graph,
    find_cycle,
    not_here,
    queue_summaries,
    shown_cycle,
)
from ..errors import Conflict, HydrateError, ValidationError
from ..hydrate.testpaths import is_test_path
from ..model import PathNote
from ..taskrefs import (
    Change,
    TaskRefs,
    default_title,
)
from ..tasks import add_tasks, new_task_change
from ..textpolicy import LINE
from .bases import IMPORTS_REF, Bases
from .formats import DEFAULT_PREFIX, Item
from .report import ImportReport
from .updates import Updates, update, without_dangling

__all__ = ["IMPORTS_REF", "ImportReport", "import_items"]

#: The largest text field an item may carry.
MAX_FIELD_BYTES: Final = 1 << 20
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")


def task_id_for(item: Item, prefix: str) -> str:
    """The task id of ``item``: the prefix, then its source id (spaces and the like
    become ``-``)."""
    return validate.task_id(prefix + _UNSAFE.sub("-", item.source_id).strip("-."))


#: Spaces a line may not break at: a title is not cut there either.
_NO_BREAK: Final = frozenset("\u00a0\u2007\u202f")


def _title_within(title: str) -> tuple[str, str]:
    """``title`` within the length of a line (:data:`.textpolicy.LINE`), and what to
    warn of it: a longer one is cut at its last space within the limit (at the
    limit, when no space is in its second half) and ends in ``...``, so the item
    comes in rather than being left out for a title a tracker allowed."""
    limit = LINE.limit
    if len(title) <= limit:
        return title, ""

    def breaks(ch: str) -> bool:
        return ch.isspace() and ch not in _NO_BREAK

    head = title[: limit - 3]
    end = len(head)
    if not breaks(title[end]):  # (else a word ends where the head does)
        while end > limit // 2 and not breaks(head[end - 1]):
            end -= 1
    cut = (head[:end] if end > limit // 2 else head).rstrip() + "..."
    said = f"its title is longer than {limit:,} characters ({len(title):,}): cut to {len(cut):,}"
    return cut, said


def _lines_within(item: Item) -> tuple[str, list[str], list[str]]:
    """``item``'s acceptance, criteria and tags, each criterion and tag one line of
    at most :data:`.textpolicy.LINE`'s length: a longer criterion is kept at the end
    of the acceptance (a text of many lines), a longer tag left out (a tag that long
    names nothing), each said in a warning, so the item comes in."""
    limit = LINE.limit
    criteria = [validate.folded(c) for c in item.criteria if c.strip()]
    long = [c for c in criteria if len(c) > limit]
    acceptance = (
        "\n\n".join([item.acceptance.rstrip(), *long]).strip() if long else item.acceptance
    )
    if long:
        item.warnings.append(
            f"{len(long)} acceptance criteria longer than {limit:,} characters: kept in the "
            "acceptance"
        )
    tags = list(dict.fromkeys(validate.folded(t) for t in item.tags if t.strip()))
    if any(len(t) > limit for t in tags):
        item.warnings.append(f"a tag longer than {limit:,} characters: left out")
    return (
        acceptance,
        [c for c in criteria if len(c) <= limit],
        [t for t in tags if len(t) <= limit],
    )


def _check_sizes(item: Item) -> None:
    for what, value in (("title", item.title), ("objective", item.objective)):
        if len(value.encode("utf-8", "replace")) > MAX_FIELD_BYTES:
            raise ValidationError(f"its {what} is over 1 MiB")
    if sum(len(c) for c in item.criteria) > MAX_FIELD_BYTES:
        raise ValidationError("its acceptance criteria are over 1 MiB")


def _fields(item: Item, prefix: str, known: set[str]) -> dict[str, Any]:
    """The task fields an item sets (the same for a new task and an update)."""
    title, cut = _title_within(validate.folded(item.title))
    if cut:
        item.warnings.append(cut)  # (reported with the item's other warnings)
    deps = []
    for dep in item.depends_on:
        try:
            deps.append(task_id_for(Item(source_id=dep), prefix))
        except ValidationError:
            continue  # an id that cannot be a task id cannot be waited for either
    parent = ""
    if item.parent:
        try:
            candidate = task_id_for(Item(source_id=item.parent), prefix)
        except ValidationError:
            candidate = ""
        parent = candidate if candidate in known else ""
    acceptance, criteria, tags = _lines_within(item)
    return {
        # (no title: the objective's first line, as task-add gives it, else the source id)
        "title": title or default_title(item.objective) or item.source_id,
        "objective": item.objective,
        "acceptance": acceptance,
        "acceptance_criteria": criteria,
        "tags": tags,
        "files": [PathNote(path=p) for p in dict.fromkeys(item.files)],
        "tests": [PathNote(path=p) for p in dict.fromkeys(item.tests)],
        "kind": item.kind,
        "priority": item.priority,
        "status": item.status,
        "depends_on": list(dict.fromkeys(deps)),
        "parent": parent,
        "source": item.source,
    }


def _prepared(item: Item, prefix: str) -> Item:
    """``item`` as it is imported: the paths its text names that are tests (by the
    rule ranking pairs tests by, or under a test folder: :func:`.is_test_path`)
    moved from its files in play to its tests, after the tests it named as such;
    without the paths that no task may hold (one that leaves the repository,
    ``../other-repo/lib.py``: such a path in a description left the whole item out),
    and with a warning of each, and of an id that is no task id as it is (``a/b``),
    saying the task's."""
    kept: dict[str, list[str]] = {"files": [], "tests": []}
    named = {
        "files": [p for p in item.files if not is_test_path(p)],
        "tests": [*item.tests, *(p for p in item.files if is_test_path(p))],
    }
    warnings = list(item.warnings)
    if not item.error:
        with contextlib.suppress(ValidationError):  # (no task id at all: said later)
            task_id = task_id_for(item, prefix)
            if task_id != prefix + item.source_id:
                warnings.append(f"its id {item.source_id!r} is no task id: imported as {task_id}")
    for key, what in (("files", "file in play"), ("tests", "test")):
        for path in named[key]:
            try:
                validate.entries_from([path], "", what)
            except ValidationError as exc:
                warnings.append(f"{exc}: left out of the task's {key}")
                continue
            kept[key].append(path)
    if len(warnings) == len(item.warnings) and kept["files"] == item.files:
        return item
    return dataclasses.replace(item, warnings=warnings, files=kept["files"], tests=kept["tests"])


def _parent_id(item: Item, prefix: str) -> str:
    """The task id of ``item``'s parent (``""``: none, or not a valid id)."""
    try:
        return task_id_for(Item(source_id=item.parent), prefix)
    except ValidationError:
        return ""


def _parent_warning(
    item: Item, prefix: str, fields: dict[str, Any], left_out: set[str]
) -> list[str]:
    """What to say of a parent ``item`` names that its task will not have."""
    if not item.parent or fields["parent"]:
        return []
    parent = _parent_id(item, prefix) or item.parent
    if parent in left_out:
        return [f"its parent {parent} was left out: imported without a parent"]
    return [
        f"its parent {parent} is not a task here nor in the input: imported without a "
        f"parent (importing this again once {parent} is here sets it)"
    ]


class _Twice(ValidationError):
    """An id already met earlier in the same input: this copy is left out, the
    first is imported (its children with it)."""


def _parent_first(items: list[Item]) -> tuple[list[Item], dict[str, list[str]]]:
    """Items with each parent before its children (the input order otherwise), and
    each item on a cycle of parents in the input with that cycle (its ids, from it
    back to it).

    Each id's depth (how many ancestors it has in the input) is found once, from
    its parent's: linear in the items, however long a chain of parents is. On a
    cycle of parents each member counts the cycle's length.
    """
    by_id: dict[str, Item] = {}
    for item in items:
        by_id.setdefault(item.source_id, item)  # (of an id met twice, the first is imported)
    depth: dict[str, int] = {}
    loops: dict[str, list[str]] = {}
    for start in by_id:
        path: list[str] = []
        at: dict[str, int] = {}
        node = start
        while node and node in by_id and node not in depth and node not in at:
            at[node] = len(path)
            path.append(node)
            node = by_id[node].parent
        base = depth.get(node, -1)
        if node in at:  # (a cycle of parents, met on this walk)
            loop, path = path[at[node] :], path[: at[node]]
            base = len(loop)
            depth.update(dict.fromkeys(loop, base))
            for i, member in enumerate(loop):
                loops[member] = [*loop[i:], *loop[:i], member]
        for node in reversed(path):
            base += 1
            depth[node] = base
    ordered = sorted(items, key=lambda item: depth[item.parent] + 1 if item.parent in depth else 0)
    return ordered, loops


def import_items(
    refs: TaskRefs,
    items: Iterable[Item],
    fmt: str,
    *,
    prefix: str | None = None,
    dry_run: bool = False,
    allow_secrets: bool | None = None,
) -> ImportReport:
    """Create or update one task per item (see the module's docstring)."""
    chosen = DEFAULT_PREFIX.get(fmt, "") if prefix is None else prefix
    report = _empty_report(fmt, dry_run)
    listed, loops = _parent_first([_prepared(item, chosen) for item in items])
    known = set(refs.task_names())
    sources: dict[str, str] = {}  # (task id: the item it is made from, for warnings)
    bases = Bases(refs)
    updates = Updates(refs, (bases, report), allow_secrets, dry_run)
    seen: set[str] = set()
    pending: dict[str, Change[None]] = {}
    fields_of: dict[str, dict[str, Any]] = {}
    asked: dict[str, tuple[str, list[str]]] = {}  # (each task: its item, its dependencies)
    left_out: set[str] = set()
    later: list[tuple[str, str, dict[str, Any]]] = []
    for item in listed:
        report["ignored"].update({n: report["ignored"].get(n, 0) + 1 for n in item.ignored})
        try:
            task_id = _checked_id(item, chosen, seen, loops)
            fields = _fields(item, chosen, known)
            asked[task_id] = (item.source_id, fields["depends_on"])
            if task_id in known and task_id not in pending:
                _queue_update(refs, item, task_id, fields, (pending, later, updates))
            else:
                if item.parent and _parent_id(item, chosen) in left_out:
                    raise ValidationError(f"its parent {_parent_id(item, chosen)} was left out")
                pending[task_id] = _creation(refs, task_id, fields, allow_secrets)
                fields_of[task_id] = fields
                sources[task_id] = item.source_id
                known.add(task_id)
            left_out.discard(task_id)  # (an unreadable copy before this one stands for none)
            warnings = [*item.warnings, *_parent_warning(item, chosen, fields, left_out)]
            report["warnings"] += [{"item": item.source_id, "warning": w} for w in warnings]
        except HydrateError as exc:
            report["errors"].append({"item": item.source_id, "error": str(exc)})
            if not isinstance(exc, _Twice):  # (a second copy: the first stands)
                with contextlib.suppress(ValidationError):
                    left_out.add(task_id_for(item, chosen))
    updates.flush(left_out - (known - set(pending)))  # (those not here before it either)
    batch = _without_refusals(refs, pending, report)
    batch = _without_dangling(pending, batch, (left_out, known), report, sources)
    if dry_run:
        report["created"] += list(batch)
    else:
        meanwhile = _as_update(refs, fields_of, (bases, report), allow_secrets)
        _flush(refs, batch, bases, report, meanwhile)
    _update_later(refs, later, (bases, report), dry_run, allow_secrets)
    _finish(refs, (bases, report), asked, left_out | set(pending), dry_run)
    return report


def _queue_update(
    refs: TaskRefs,
    item: Item,
    task_id: str,
    fields: dict[str, Any],
    queues: tuple[dict[str, Change[None]], list[tuple[str, str, dict[str, Any]]], Updates],
) -> None:
    """Queue the update of ``task_id`` from ``item``: the fields it gives (those it
    leaves out stay as the task has them), once made the new parent this run makes."""
    pending, later, updates = queues
    given = {k: v for k, v in fields.items() if k not in item.absent}
    if "source" in item.absent:  # (an issue without its URL: the task's, if this issue's)
        given["source"] = _source_here(refs, task_id, fields["source"])
    if given.get("parent") in pending:  # (its new parent is made by this run)
        later.append((item.source_id, task_id, given))
    else:
        updates.add(task_id, given, item.source_id)


def _source_here(refs: TaskRefs, task_id: str, fallback: str) -> str:
    """The source of ``task_id`` when it is the issue that an item without its URL
    names by ``fallback`` (``github:12``): its URL ends with the issue's number
    (``.../issues/12``); else ``fallback`` (refused: the task came from elsewhere)."""
    source = refs.load(task_id).task.source
    number = fallback.rpartition(":")[2]
    return source if source == fallback or source.endswith(f"/issues/{number}") else fallback


def _finish(
    refs: TaskRefs,
    into: tuple[Bases, ImportReport],
    asked: dict[str, tuple[str, list[str]]],
    items: set[str],
    dry_run: bool,
) -> None:
    """The bases of what is left saved; a warning for each dependency of a task
    made or updated (``asked``: its item and dependencies) on no task here that is
    not one of the run's ``items`` (kept, as task-add keeps it: a pull may bring
    it). One on an item the run left out was dropped, with its own warning."""
    bases, report = into
    if not dry_run:
        bases.save(f"import {report['format']}: {len(bases.new)} task(s)")
    for task_id in [t for t in (*report["created"], *report["updated"]) if t in asked]:
        source_id, depends_on = asked[task_id]
        wanted = [d for d in depends_on if d not in items]
        # (no "did you mean": an import's ids are the source's, one apart by design)
        for dep, _alike in not_here(refs, wanted):
            warning = f"depends on {dep}, which is no task here: it waits for it until it is"
            report["warnings"].append({"item": source_id, "warning": warning})
    report["ignored"] = dict(sorted(report["ignored"].items()))


def _without_dangling(
    pending: dict[str, Change[None]],
    batch: dict[str, Change[None]],
    left: tuple[set[str], set[str]],
    report: ImportReport,
    sources: dict[str, str],
) -> dict[str, Change[None]]:
    """The creations (``batch``, of ``pending``), each dependency on a task this
    run left out (``left``: the ids left out while reading, and every id known,
    those here before the run included) dropped with a warning: kept, the task
    would wait for ever on a task that does not exist."""
    left_out, known = left
    here = known - set(pending)
    gone = (set(pending) - set(batch) | left_out) - here
    if not gone:
        return batch
    kept: dict[str, Change[None]] = {}
    for task_id, change in batch.items():
        depends_on, why = without_dangling(list(change.task.depends_on), gone)
        if why:
            change = msgspec.structs.replace(
                change, task=msgspec.structs.replace(change.task, depends_on=depends_on)
            )
            report["warnings"].append({"item": sources.get(task_id, task_id), "warning": why})
            pending[task_id] = change  # (the task as made: _finish reads its edges)
        kept[task_id] = change
    return kept


def _checked_id(item: Item, prefix: str, seen: set[str], loops: dict[str, list[str]]) -> str:
    """``item``'s task id, once it is one an import may make: readable, met once
    (added to ``seen``), on no cycle of parents, its fields within their sizes."""
    if item.error:
        raise ValidationError(item.error)
    task_id = task_id_for(item, prefix)
    if task_id in seen:
        raise _Twice(f"appears twice in the input (as {task_id})")
    seen.add(task_id)
    if item.source_id in loops:  # (each would be made without its parent)
        raise ValidationError(f"cycle of parents: {shown_cycle(loops[item.source_id])}")
    _check_sizes(item)
    return task_id


def _update_later(
    refs: TaskRefs,
    later: list[tuple[str, str, dict[str, Any]]],
    into: tuple[Bases, ImportReport],
    dry_run: bool,
    allow: bool | None,
) -> None:
    """The updates that name as parent a task this run was to make, once it was
    made (or not: :func:`_with_parent_made`)."""
    bases, report = into
    made = set(report["created"])
    for source_id, task_id, fields in later:
        try:
            fields = _with_parent_made(refs, task_id, fields, made, report, source_id)
            update(refs, task_id, fields, (bases, report), dry_run, allow)
        except HydrateError as exc:
            report["errors"].append({"item": source_id, "error": str(exc)})


def _with_parent_made(
    refs: TaskRefs,
    task_id: str,
    fields: dict[str, Any],
    made: set[str],
    report: ImportReport,
    source_id: str,
) -> dict[str, Any]:
    """The update of ``task_id`` whose new parent this run was to make: as it is if
    the parent was made, else with the parent the task has (it would name a task
    that is not here), said in a warning."""
    if fields["parent"] in made:
        return fields
    why = f"its new parent {fields['parent']} was left out: its parent is unchanged"
    report["warnings"].append({"item": source_id, "warning": why})
    return {**fields, "parent": refs.load(task_id).task.parent}


def _empty_report(fmt: str, dry_run: bool) -> ImportReport:
    """The report of an import of nothing yet."""
    return {
        "format": fmt,
        "created": [],
        "updated": [],
        "unchanged": [],
        "errors": [],
        "warnings": [],
        "ignored": {},
        "conflicts": [],
        "dry_run": dry_run,
    }


def _creation(
    refs: TaskRefs, task_id: str, fields: dict[str, Any], allow: bool | None
) -> Change[None]:
    """The checked change that creates ``task_id`` (nothing written yet)."""
    return new_task_change(
        refs,
        task_id,
        fields["objective"],
        fields["acceptance"],
        title=fields["title"],
        acceptance_criteria=fields["acceptance_criteria"],
        kind=fields["kind"],
        priority=fields["priority"],
        tags=fields["tags"],
        files=fields["files"],
        tests=fields["tests"],
        status=fields["status"],
        depends_on=fields["depends_on"],
        parent=fields["parent"] or None,
        source=fields["source"],
        allow_secrets=allow,
        # a parent imported in this run exists by the time its children are made
        parent_checked=True,
    )


def _without_refusals(
    refs: TaskRefs, pending: dict[str, Change[None]], report: ImportReport
) -> dict[str, Change[None]]:
    """The pending creations less those that cannot be made, each named in the
    report: one that closes a cycle of parents and dependencies with the live
    tasks and the creations before it, or whose parent is so left out — what
    creating them one by one in order (parents first) would find, from one
    reading of the live tasks.

    Only a task on a cycle of the whole graph (live and new tasks) can close
    one, and only with others on it: each such task is checked against those
    alone.
    """
    new = {task_id: change.task for task_id, change in pending.items()}
    if not any(task.depends_on or task.parent for task in new.values()):
        return pending
    summaries: dict[str, Any] = dict(queue_summaries(refs))
    for task_id, task in new.items():
        summaries[task_id] = {"depends_on": list(task.depends_on), "parent": task.parent}
    graph = edge_graph(summaries)
    looped = cycles(graph)
    refused: dict[str, str] = {}
    later = set(new)
    for task_id, task in new.items():
        later.discard(task_id)
        if task.parent in refused:
            refused[task_id] = f"its parent {task.parent} was left out"
        elif task_id in looped:
            kept = {t for t in looped if t not in later and t not in refused}
            sub = {t: [d for d in graph[t] if d in kept] for t in kept}
            cycle = find_cycle(sub, task_id)
            if cycle is not None:
                refused[task_id] = f"cycle of parents and dependencies: {shown_cycle(cycle)}"
    report["errors"] += [{"item": task_id, "error": why} for task_id, why in refused.items()]
    return {task_id: change for task_id, change in pending.items() if task_id not in refused}


def _as_update(
    refs: TaskRefs,
    fields_of: dict[str, dict[str, Any]],
    into: tuple[Bases, ImportReport],
    allow: bool | None,
) -> Callable[[str], bool]:
    """What takes a task this run was to make, found made meanwhile, as an update
    when it came from the same source (two imports of one file at once: the one
    that lost the race sees the other's tasks as unchanged, not as failures)."""
    bases, report = into

    def as_update(task_id: str) -> bool:
        try:
            there = refs.load(task_id).task
        except HydrateError:
            return False
        if there.source != fields_of[task_id]["source"]:
            return False
        update(refs, task_id, fields_of[task_id], (bases, report), False, allow)
        return True

    return as_update


def _flush(
    refs: TaskRefs,
    pending: dict[str, Change[None]],
    bases: Bases,
    report: ImportReport,
    meanwhile: Callable[[str], bool],
) -> None:
    """Create the pending tasks (one ref transaction when all of them can be made;
    else, should a task be made meanwhile, one by one, each failure named on its
    own and its children left out with it) and note their bases. ``meanwhile``
    takes a task another import of the same source made meanwhile as an update
    (``True``: it did), not as a failure."""
    if not pending:
        return
    # Their bases are written with them, and land just before them: an import
    # stopped once the tasks exist but not their bases would take a local edit
    # made since for the upstream's at the next import, and undo it (a base of
    # a task not made is never read: that task is made anew).
    bases.new.update((task_id, change.task) for task_id, change in pending.items())
    summary = f"import: {len(pending)} new task(s)"
    try:
        created = add_tasks(refs, pending, lambda: bases.written(summary))
    except HydrateError:  # (an id made meanwhile, or a cycle closed meanwhile: find which)
        created = []
        failed: set[str] = set()
        for task_id, change in pending.items():
            try:
                if change.task.parent in failed:
                    raise ValidationError(f"its parent {change.task.parent} was left out")
                created += add_tasks(refs, {task_id: change})
            except HydrateError as exc:
                if isinstance(exc, Conflict) and meanwhile(task_id):
                    continue
                failed.add(task_id)
                report["errors"].append({"item": task_id, "error": str(exc)})
    if bases.new:  # (the bases did not land with the tasks: those made, at the end)
        for task_id in set(pending) - set(created) - set(report["updated"]):
            bases.new.pop(task_id, None)
    report["created"] += created
