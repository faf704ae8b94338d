"""Creating, changing and reading task documents (the fields, not the context)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Final, cast

import msgspec

from . import textpolicy, validate
from .dependencies import check_no_cycle, check_no_cycles
from .errors import Conflict, ValidationError
from .model import INITIAL_STATION, Task
from .results import TaskDict
from .taskrefs import Change, TaskRefs, TaskState, Unchanged, default_title, iso_utc, task_message

__all__ = [
    "EDITABLE_FIELDS",
    "add_task",
    "add_tasks",
    "edit_task",
    "free_text",
    "get_task",
    "new_task_change",
    "task_dict",
]

#: Fields ``edit_task`` may change (the station moves through ``set_status``).
EDITABLE_FIELDS: Final = (
    "title",
    "objective",
    "acceptance",
    "acceptance_criteria",
    "scope",
    "kind",
    "priority",
    "token_budget",
    "tags",
    "files",
    "tests",
    "depends_on",
    "parent",
)

#: The check that normalises each editable field.
_CHECKS: Final[dict[str, Callable[[Any], Any]]] = {
    "title": lambda v: validate.one_line_text(v, "title").strip(),
    "objective": lambda v: validate.text(v, "objective", required=True),
    "acceptance": lambda v: validate.text(v, "acceptance", required=True),
    "acceptance_criteria": lambda v: validate.text_list(v, "acceptance criterion"),
    "scope": lambda v: validate.text_list(v, "scope key"),
    "kind": validate.kind,
    "priority": validate.priority,
    "token_budget": validate.token_count,
    "tags": lambda v: validate.text_list(v, "tag"),
    "files": lambda v: validate.path_notes(v, "file in play"),
    "tests": lambda v: validate.path_notes(v, "test"),
    "depends_on": lambda v: validate.dependencies(v, ""),  # then checked against the task
    "parent": lambda v: validate.parent(v, ""),  # then checked against the task
}


def _fields_of(values: dict[str, Any]) -> list[textpolicy.Field]:
    """The text-policy fields among ``values`` (editable field -> value)."""
    found: list[textpolicy.Field] = []
    for key in textpolicy.TASK_FIELDS:  # the objective first: a title may come from it
        if values.get(key) is not None:
            found += textpolicy.value_fields(key, values[key])
    return found


def free_text(task: Task) -> list[tuple[str, str]]:
    """``(what, text)`` of every text field of ``task`` a user wrote."""
    fields = _fields_of({key: getattr(task, key) for key in textpolicy.TASK_FIELDS})
    return [(field.what, field.value) for field in fields]


def task_dict(state: TaskState, archived: bool = False) -> TaskDict:
    """A task's fields as a plain dict, plus ``attachments``, ``tip`` and ``archived``."""
    data: dict[str, Any] = msgspec.to_builtins(state.task)
    data.pop("format", None)
    data["task_id"] = data.pop("id")
    checkpoints = data.get("checkpoints") or []
    data["checkpoint"] = (
        {k: checkpoints[-1][k] for k in ("summary", "evidence", "next_step")}
        if checkpoints
        else None
    )
    data["attachments"] = len(state.links)
    data["tip"] = state.tip.decode() if state.tip else None
    data["archived"] = archived
    return cast(TaskDict, data)


def _check_parent(refs: TaskRefs, parent: str) -> None:
    """Refuse a parent that is not a live task here (archived: say how to bring it back)."""
    if parent and not refs.exists(parent):
        missing = refs.missing(parent)
        raise type(missing)(f"cannot be a part of {parent}: {missing}")


def get_task(refs: TaskRefs, task_id: str) -> TaskDict:
    """A live or archived task's fields (``archived`` says which)."""
    state, archived = refs.load_any(task_id)
    return task_dict(state, archived)


def new_task_change(
    refs: TaskRefs,
    task_id: str,
    objective: str,
    acceptance: str,
    *,
    title: str | None = None,
    acceptance_criteria: Iterable[str] = (),
    scope: Iterable[str] = (),
    kind: str = "code",
    priority: int = 2,
    token_budget: int = 0,
    tags: Iterable[str] = (),
    files: Iterable[Any] = (),
    tests: Iterable[Any] = (),
    status: str = INITIAL_STATION,
    depends_on: Iterable[str] = (),
    parent: str | None = None,
    source: str = "",
    allow_secrets: bool | None = None,
    parent_checked: bool = False,
) -> Change[None]:
    """The change that creates a task, every field checked (see :func:`add_task`).

    Free text that looks like it holds a credential is refused
    (:class:`~git_hydrate.errors.SecretDetected`) unless ``allow_secrets``
    (``None``: ``git config hydrate.allowSecrets``).
    """
    validate.task_id(task_id)
    objective = validate.text(objective, "objective", required=True)
    acceptance = validate.text(acceptance, "acceptance", required=True)
    title = validate.one_line_text(title, "title").strip() if title else ""
    task = Task(
        id=task_id,
        title=title or default_title(objective),
        objective=objective,
        acceptance=acceptance,
        acceptance_criteria=validate.text_list(acceptance_criteria, "acceptance criterion"),
        scope=validate.text_list(scope, "scope key"),
        kind=validate.kind(kind),
        priority=validate.priority(priority),
        token_budget=validate.token_count(token_budget),
        tags=validate.text_list(tags, "tag"),
        files=validate.path_notes(files, "file in play"),
        tests=validate.path_notes(tests, "test"),
        status=validate.station(status),
        created_at=iso_utc(refs.clock()),
        depends_on=validate.dependencies(depends_on, task_id),
        parent=validate.parent(parent, task_id),
        source=validate.one_line_text(source, "source").strip(),
    )
    if not parent_checked:
        _check_parent(refs, task.parent)
    _check_text_policy(refs, task, allow_secrets)
    return Change(task=task, links=[], message=_creation_message(task), result=None)


def _check_text_policy(refs: TaskRefs, task: Task, allow_secrets: bool | None) -> None:
    """Refuse a new task whose free text breaks the policy (see :mod:`.textpolicy`)."""
    textpolicy.check_all(
        refs.repo.settings,
        _fields_of({key: getattr(task, key) for key in textpolicy.TASK_FIELDS}),
        allow_secrets,
    )


def _creation_message(task: Task) -> str:
    """The commit message of the change that creates ``task``."""
    return task_message(
        f"task-add {task.id}", "task-add", task.id, title=task.title, status=task.status
    )


def add_task(
    refs: TaskRefs, task_id: str, objective: str, acceptance: str, **fields: Any
) -> TaskDict:
    """Create a task. Creating one that exists is a :class:`Conflict`.

    Free text that looks like it holds a credential is refused
    (:class:`~git_hydrate.errors.SecretDetected`) unless ``allow_secrets``
    (``None``: ``git config hydrate.allowSecrets``). The fields are those of
    :func:`new_task_change`.
    """
    change = new_task_change(refs, task_id, objective, acceptance, **fields)
    edges = bool(change.task.depends_on or change.task.parent)
    with refs.name_lock(task_id), _graph_lock(refs, edges):
        refs.check_new_id(task_id)  # an id differing only by case, created meanwhile
        check_no_cycle(refs, task_id, change.task.depends_on, change.task.parent)
        refs.create(task_id, change, lambda: _exists(task_id))
    return get_task(refs, task_id)


def add_tasks(
    refs: TaskRefs,
    changes: dict[str, Change[None]],
    first: Callable[[], Callable[[], None]] | None = None,
) -> list[str]:
    """Create many tasks (each change from :func:`new_task_change`) in one ref
    transaction; returns the ids created, in order. ``first``: see
    :meth:`~git_hydrate.taskrefs.TaskRefs.create_many` (called only on its way).

    The ids' case-folded locks are held together, each id is checked as
    :func:`add_task` checks it, and the refs are created all at once. If a ref
    appeared meanwhile, the tasks are created one by one instead, and the
    first one that exists raises :class:`Conflict` (the ones before it are made).
    """
    with contextlib.ExitStack() as stack:
        for task_id in sorted(changes, key=str.casefold):
            stack.enter_context(refs.name_lock(task_id))
        for task_id in changes:
            refs.check_new_id(task_id)
        edges = any(change.task.depends_on or change.task.parent for change in changes.values())
        stack.enter_context(_graph_lock(refs, edges))
        check_no_cycles(refs, {tid: change.task for tid, change in changes.items()})
        if refs.create_many(changes, first):
            return list(changes)
        for task_id, change in changes.items():
            refs.create(task_id, change, functools.partial(_exists, task_id))
    return list(changes)


def _graph_lock(refs: TaskRefs, edges: bool) -> AbstractContextManager[None]:
    """The graph lock when a write adds parent or dependency edges (its cycle
    check and its ref update then see no other such write between them)."""
    return refs.graph_lock() if edges else contextlib.nullcontext()


def _exists(task_id: str) -> Conflict:
    return Conflict(
        f"task {task_id} already exists; change it with: git hydrate task-edit {task_id}"
    )


def edit_task(
    refs: TaskRefs, task_id: str, *, allow_secrets: bool | None = None, **fields: Any
) -> TaskDict:
    """Change some of a task's fields (see :data:`EDITABLE_FIELDS`); new free text
    is checked for credentials as :func:`add_task` does."""
    unknown = sorted(set(fields) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError(
            f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE_FIELDS)}"
        )
    validate.task_id(task_id)
    values = {key: _CHECKS[key](value) for key, value in fields.items() if value is not None}
    if "depends_on" in values:
        values["depends_on"] = validate.dependencies(values["depends_on"], task_id)
    if "parent" in values:
        values["parent"] = validate.parent(values["parent"], task_id)
        _check_parent(refs, values["parent"])
    textpolicy.check_all(refs.repo.settings, _fields_of(values), allow_secrets)
    edges = "depends_on" in values or bool(values.get("parent"))

    def apply(state: TaskState) -> Change[None]:
        wanted = dict(values)
        if wanted.get("title") == "":  # as task-add: the objective's first line
            wanted["title"] = default_title(wanted.get("objective", state.task.objective))
        changed = sorted(k for k, v in wanted.items() if getattr(state.task, k) != v)
        if not changed:
            raise Unchanged(None)
        task = msgspec.structs.replace(state.task, **{k: wanted[k] for k in changed})
        return Change(
            task=task,
            links=state.links,
            message=task_message(
                f"task-edit {task_id} ({', '.join(changed)})",
                "task-edit",
                task_id,
                fields=", ".join(changed),
            ),
            result=None,
        )

    with _graph_lock(refs, edges):
        if edges:
            check_no_cycle(refs, task_id, values.get("depends_on"), values.get("parent"))
        refs.write(task_id, apply)
    return get_task(refs, task_id)
