"""The current task of a work tree: started explicitly, or named by the branch.

``start`` records a task id in ``hydrate/current-task`` under the path git
gives for it (``git rev-parse --git-path``): inside the work tree's own git
directory, so every linked work tree has its own current task, while tasks
stay shared. When nothing was started, the current branch's name is matched
against ``hydrate.taskPattern`` (the same pattern the pre-push hook uses) and
the first id of an existing task wins. ``@`` stands for the current task
wherever a task id is taken; for ``task-add``, for the first id the branch
names (the task to create).
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Final

from . import lifecycle
from .errors import Conflict, NoIdentity, NotFound, ValidationError
from .ids import is_task_id
from .model import INITIAL_STATION
from .settings import SETTINGS, Settings
from .store import open_regular
from .taskrefs import TaskRefs

__all__ = [
    "CURRENT",
    "CURRENT_FILE",
    "DEFAULT_TASK_PATTERN",
    "clear",
    "compile_task_pattern",
    "current",
    "held_by_another",
    "new_id",
    "resolve",
    "start",
]

#: The id that stands for the work tree's current task.
CURRENT: Final = "@"
#: Where the started task is recorded, as a ``git rev-parse --git-path`` name.
CURRENT_FILE: Final = "hydrate/current-task"
#: ``hydrate.taskPattern``'s default: ids such as M-1002 or ABC-12.
DEFAULT_TASK_PATTERN: Final = next(
    str(s.default) for s in SETTINGS if s.key == "hydrate.taskPattern"
)


def compile_task_pattern(settings: Settings) -> re.Pattern[str]:
    """``hydrate.taskPattern`` compiled; the whole match is the id, or its first group.

    Raises:
        ValidationError: the configured pattern is not a valid regular expression.
    """
    raw = settings.text("hydrate.taskPattern") or DEFAULT_TASK_PATTERN
    try:
        return re.compile(raw)
    except re.error as exc:
        raise ValidationError(
            f"git config hydrate.taskPattern is not a valid regular expression: {exc}"
        ) from None


def _path(refs: TaskRefs) -> str:
    return refs.repo.git_path(CURRENT_FILE)


def _started(refs: TaskRefs) -> str | None:
    try:
        with open_regular(_path(refs)) as fh:
            value = fh.read().decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if is_task_id(value) else None


def current(refs: TaskRefs) -> dict[str, Any] | None:
    """The work tree's current task: ``{task_id, source, branch}`` or ``None``.

    ``source`` is ``started`` (recorded by :func:`start`, if that task is still
    here: :func:`gone` says when not) or ``branch`` (an id of an existing task
    found in the branch name by ``hydrate.taskPattern``).
    """
    branch = refs.repo.symbolic_ref("HEAD")
    started = _started(refs)
    if started is not None and refs.exists(started):
        return {"task_id": started, "source": "started", "branch": branch}
    for found in _ids_in(refs, branch):
        if refs.exists(found):
            return {"task_id": found, "source": "branch", "branch": branch}
    return None


def _ids_in(refs: TaskRefs, branch: str | None) -> list[str]:
    """The task ids ``hydrate.taskPattern`` finds in ``branch``, in order."""
    if branch is None:
        return []
    pattern = compile_task_pattern(refs.repo.settings)
    found = (m.group(1) if pattern.groups else m.group(0) for m in pattern.finditer(branch))
    return [task_id for task_id in found if task_id and is_task_id(task_id)]


def new_id(refs: TaskRefs, task_id: str) -> str:
    """``task_id`` itself, or for ``@`` the id the branch names, whether or not
    that task exists (``task-add @`` creates the task a branch was named after).

    Raises:
        NotFound: ``@`` on a branch whose name holds no task id.
    """
    if task_id != CURRENT:
        return task_id
    branch = refs.repo.symbolic_ref("HEAD")
    ids = _ids_in(refs, branch)
    if ids:
        return ids[0]
    shown = "a detached HEAD" if branch is None else f"branch {branch!r}"
    raise NotFound(
        f"task-add @ creates the task the branch is named after, and {shown} names "
        "none (hydrate.taskPattern): give the ID"
    )


def gone(refs: TaskRefs) -> str | None:
    """The task started here, if it is no longer here (removed or archived, here
    or by a pull): :func:`current` passes over it."""
    started = _started(refs)
    return started if started is not None and not refs.exists(started) else None


def gone_line(task_id: str) -> str:
    """What to say of a started task that :func:`gone` names."""
    return (
        f"the task started here, {task_id}, is no longer here (removed or archived); "
        "forget it with: git hydrate current --clear"
    )


def resolve(refs: TaskRefs, task_id: str) -> str:
    """``task_id`` itself, or for ``@`` the current task's id.

    Raises:
        NotFound: ``@`` with no current task.
    """
    if task_id != CURRENT:
        return task_id
    found = current(refs)
    if found is None:
        left = gone(refs)
        if left is not None:
            raise NotFound(gone_line(left))
        raise NotFound(
            "no current task in this work tree: start one with git hydrate start ID, "
            "or name the branch after a task (hydrate.taskPattern)"
        )
    return str(found["task_id"])


def start(refs: TaskRefs, task_id: str) -> dict[str, Any]:
    """Make ``task_id`` the work tree's current task and move it to ``in_progress``.

    The move goes through the lifecycle (a task at ``done`` must be reopened
    first); a task already in progress is left as it is. The id is recorded
    only once the move succeeded.

    Returns ``{task_id, from, to, changed, previous, held_by}``; ``previous`` is
    the task started before, if any; ``held_by`` whoever else holds the task
    (``Name <email>`` and since when; it stays theirs), else ``""``.
    """
    task_id = resolve(refs, task_id)
    previous = _started(refs)
    task = refs.load(task_id).task
    moved: dict[str, Any] | None = None
    if task.status == INITIAL_STATION and not task.assignee:
        # A ready task nobody holds is claimed here: its holder is shown, and the
        # claim travels with the task (claim --remote makes it atomic for a team).
        # One that waits for a dependency is only moved, as before claims existed.
        from .claims import claim  # the sync layer it uses, only when a task is started

        with contextlib.suppress(Conflict):
            claimed = claim(refs, task_id, local=True)
            moved = {
                "task_id": task_id,
                "from": INITIAL_STATION,
                "to": claimed["status"],
                "changed": claimed["changed"],
            }
    if moved is None:
        moved = dict(lifecycle.set_status(refs, task_id, "in_progress"))
    refs.repo.replace_file(_path(refs), [task_id.encode("ascii") + b"\n"])
    moved["previous"] = previous
    moved["held_by"] = held_by_another(refs, task_id)
    return moved


def held_by_another(refs: TaskRefs, task_id: str) -> str:
    """Who holds ``task_id`` if not this identity (``NAME since TIME``), else ``""``:
    starting it (or a checkpoint on it) took nothing from them, and two people may
    now work on it."""
    from .claims import default_holder

    task = refs.load(task_id).task
    if not task.assignee:
        return ""
    try:
        me = default_holder(refs)
    except NoIdentity:  # (a task already in progress is started without a commit)
        me = ""
    if task.assignee == me:
        return ""
    return task.assignee + (f" since {task.claimed_at}" if task.claimed_at else "")


def clear(refs: TaskRefs) -> str | None:
    """Forget the started task (the branch name may still name one); return its id."""
    previous = _started(refs)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_path(refs))
    return previous
