"""A task as other tools read it: Markdown for an issue, beads JSONL, task-master JSON.

``markdown`` is ready for ``gh issue create --body-file -`` or ``gh issue
comment``; ``json-beads`` and ``json-taskmaster`` are the formats ``import``
reads, written so that an import of them changes nothing (every field both
tools know makes the round trip).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from ..errors import ValidationError
from ..ids import is_task_id
from ..model import Task
from .formats import BEADS_STATUS_KEY, DEFAULT_PREFIX, EVERY_CRITERION

__all__ = ["EXPORT_FORMATS", "TASKMASTER_DEPTH", "export_tasks"]

#: The deepest part ``json-taskmaster`` nests (a task at the top is 1): each level
#: nests its object two JSON levels deeper, and import reads 64 at most (31 levels
#: round-trip, 32 do not; a long id may stop a chain sooner: it is checked too).
TASKMASTER_DEPTH: Final = 31

#: The formats ``export --format`` writes.
EXPORT_FORMATS: Final = ("markdown", "json-beads", "json-taskmaster")
_TO_BEADS_STATUS: Final = {
    "open": "open",
    "in_progress": "in_progress",
    "review": "in_progress",
    "blocked": "blocked",
    "done": "closed",
    "cancelled": "closed",
}
#: What tells beads' ``closed`` and ``in_progress`` apart, so that import reads
#: them back: beads' own reason for a closing (which its conditional-blocks
#: read as a failure), and a ``metadata`` key beads keeps as it is.
_BEADS_STATUS_EXTRA: Final[dict[str, dict[str, Any]]] = {
    "cancelled": {"close_reason": "cancelled"},
    "review": {"metadata": {BEADS_STATUS_KEY: "review"}},
}
_TO_BEADS_KIND: Final = {"fix": "bug", "planning": "epic"}
_TO_TM_STATUS: Final = {
    "open": "pending",
    "in_progress": "in-progress",
    "review": "review",
    "blocked": "blocked",
    "done": "done",
    "cancelled": "cancelled",
}
_TO_TM_PRIORITY: Final = {1: "high", 2: "medium", 3: "low"}


def export_tasks(tasks: Sequence[Task], fmt: str) -> str:
    """``tasks`` in ``fmt`` (one of :data:`EXPORT_FORMATS`)."""
    if fmt == "markdown":
        return "\n---\n\n".join(_markdown(task) for task in tasks)
    if fmt == "json-beads":
        return "".join(json.dumps(_beads(t), ensure_ascii=False) + "\n" for t in tasks)
    if fmt == "json-taskmaster":
        return json.dumps({"tasks": _taskmaster(tasks)}, indent=2, ensure_ascii=False) + "\n"
    raise ValidationError(f"unknown export format {fmt!r}; one of: {', '.join(EXPORT_FORMATS)}")


def _markdown(task: Task) -> str:
    lines = [f"# {task.title}", "", task.objective.strip(), "", "## Acceptance", ""]
    lines += [task.acceptance.strip(), ""]
    lines += _checklist(task)
    if task.acceptance_criteria:
        lines.append("")
    for heading, notes in (("Files in play", task.files), ("Tests", task.tests)):
        if notes:
            lines += [f"## {heading}", ""]
            lines += [f"- `{n.path}`" + (f" — {n.note}" if n.note else "") for n in notes]
            lines.append("")
    if task.depends_on or task.parent:
        lines += ["## Depends on", ""]
        lines += [f"- {dep}" for dep in task.depends_on]
        lines += [f"- part of {task.parent}"] if task.parent else []
        lines.append("")
    if task.checkpoints:
        last = task.checkpoints[-1]
        lines += ["## Latest checkpoint", "", f"{last.summary} ({last.at})", ""]
        lines += [
            f"{label}: {value}"
            for label, value in (("Evidence", last.evidence), ("Next", last.next_step))
            if value
        ]
        lines += [""] if last.evidence or last.next_step else []
    source = f" (from {task.source})" if task.source else ""
    lines.append(f"_Task {task.id}, {task.status}{source}, exported by git-hydrate._")
    return "\n".join(lines) + "\n"


def _checklist(task: Task) -> list[str]:
    """The acceptance criteria as Markdown checkboxes (ticked once the task is done)."""
    return [f"- [{'x' if task.status == 'done' else ' '}] {c}" for c in task.acceptance_criteria]


def _beads_acceptance(task: Task) -> str:
    """The acceptance, then the criteria as checkboxes: beads' ``acceptance_criteria``,
    whose checkbox lines import reads back as the criteria and the rest as the
    acceptance. The acceptance is written whole: a line of it that reads as a
    checkbox (typed so, or left by an older import) comes back as a criterion,
    never lost; a criterion it already holds is not written twice."""
    text = task.acceptance.strip()
    if not task.acceptance_criteria:
        return text
    held = {line.strip() for line in text.splitlines()}
    checklist = "\n".join(line for line in _checklist(task) if line not in held)
    if text in ("", EVERY_CRITERION):
        return checklist  # (the acceptance says only that the criteria hold)
    return f"{text}\n\n{checklist}" if checklist else text


def _source_id(task_id: str, fmt: str) -> str:
    prefix = DEFAULT_PREFIX[fmt]
    return task_id[len(prefix) :] if prefix and task_id.startswith(prefix) else task_id


def _beads(task: Task) -> dict[str, Any]:
    deps: list[dict[str, str]] = [
        {"issue_id": task.id, "depends_on_id": _source_id(d, "beads"), "type": "blocks"}
        for d in task.depends_on
    ]
    if task.parent:
        deps.append({"issue_id": task.id, "depends_on_id": task.parent, "type": "parent-child"})
    return {
        "id": _source_id(task.id, "beads"),
        "title": task.title,
        "description": task.objective,
        "acceptance_criteria": _beads_acceptance(task),
        "status": _TO_BEADS_STATUS[task.status],
        **_BEADS_STATUS_EXTRA.get(task.status, {}),
        "priority": task.priority,
        "issue_type": _TO_BEADS_KIND.get(task.kind, "task"),
        "labels": list(task.tags),
        "dependencies": deps,
    }


def _taskmaster(tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Top-level tasks with their subtasks nested (a child of a task exported too)."""
    chosen = {task.id for task in tasks}
    by_parent: dict[str, list[Task]] = {}
    for task in tasks:
        by_parent.setdefault(task.parent if task.parent in chosen else "", []).append(task)
    # each exported task's id as import will read it: a nested one is "parent.number"
    paths: dict[str, str] = {}

    def place(top: Task) -> None:
        """The paths of ``top`` and its descendants (a loop, not a recursion: a chain
        of parents of any depth), refused when one is deeper than import reads back."""
        todo = [(top, "", 1)]
        while todo:
            task, parent_path, depth = todo.pop()
            source = _source_id(task.id, "taskmaster")
            last = source.rsplit(".", 1)[-1]
            path = paths[task.id] = f"{parent_path}.{last}" if parent_path else source
            if depth > TASKMASTER_DEPTH or not is_task_id(DEFAULT_PREFIX["taskmaster"] + path):
                raise ValidationError(
                    f"json-taskmaster nests each part in its parent, and {task.id} would be "
                    f"{depth} levels deep, more than import reads back: export it with "
                    "--format json-beads (parents as links)"
                )
            children = by_parent.get(task.id, [])
            todo += [(child, path, depth + 1) for child in reversed(children)]

    def one(task: Task) -> dict[str, Any]:
        path = paths[task.id]
        entry: dict[str, Any] = {
            "id": _tm_number(path.rsplit(".", 1)[-1] if task.parent in chosen else path),
            "title": task.title,
            "description": task.objective,
            "details": "",
            "testStrategy": task.acceptance,
            "status": _TO_TM_STATUS[task.status],
            "dependencies": [
                _tm_dep(paths.get(d) or _source_id(d, "taskmaster"), path) for d in task.depends_on
            ],
            "priority": _TO_TM_PRIORITY.get(task.priority, "medium"),
        }
        if task.acceptance_criteria:
            entry["acceptanceCriteria"] = list(task.acceptance_criteria)
        children = by_parent.get(task.id, [])
        if children:
            entry["subtasks"] = [one(child) for child in children]
        return entry

    for task in by_parent.get("", []):
        place(task)
    _refuse_unplaced([task.id for task in tasks if task.id not in paths])
    return [one(task) for task in by_parent.get("", [])]


def _refuse_unplaced(task_ids: list[str]) -> None:
    """Refuse the tasks no top-level one leads to: on a cycle of parents (a merge
    of two clones can close one) or under one, they would be left out unsaid."""
    if not task_ids:
        return
    shown = ", ".join(sorted(task_ids)[:5]) + (", ..." if len(task_ids) > 5 else "")
    raise ValidationError(
        f"json-taskmaster nests each part in its parent, and {shown} "
        f"{'is' if len(task_ids) == 1 else 'are'} on a cycle of "
        f"parents, or under one: break it with git hydrate task-edit {min(task_ids)} "
        "--no-parent, or export with --format json-beads (parents as links)"
    )


def _tm_number(text: str) -> int | str:
    """``text`` as a JSON number when it is one written plainly (``12``, not ``012``)."""
    return int(text) if text.isascii() and text.isdigit() and str(int(text)) == text else text


def _tm_dep(dep: str, path: str) -> int | str:
    """The dependency ``dep`` of the task ``path`` (both ids as import reads them) as
    task-master writes it, which import reads back: in a subtask, a sibling by its
    number, another task's subtask as ``"4.2"``, a top-level task by its id as a
    string (``"2"``: a number there would be the sibling 2)."""
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if not parent:
        return _tm_number(dep)
    head, _, last = dep.rpartition(".")
    number = _tm_number(last)
    return number if head == parent and isinstance(number, int) else dep
