"""The warnings task-add and task-edit give about what they were told: a
dependency on no task here, a file in play or test that is a pattern."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ._common import shown, warn

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = ["warn_not_here", "warn_patterns"]


def warn_not_here(ledger: Ledger, task_id: str, depends_on: Sequence[str]) -> None:
    """A line on stderr for each of ``depends_on`` that is no task here: kept (a
    pull may bring it), but the task is not ready until it is here and done."""
    for dep, alike in ledger.not_here(depends_on):
        slip = f"; did you mean {shown(alike)}?" if alike and alike != task_id else ""
        warn(
            f"{shown(task_id)} depends on {shown(dep)}, which is no task here: "
            f"{shown(task_id)} waits for it until it exists (a pull may bring it) "
            f"and is done{slip}"
        )


def warn_patterns(ledger: Ledger, task: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """A line on stderr for each file in play or test just given whose path holds a
    glob character and names no file of the work tree: it is kept as a path (one
    file, maybe one to create), and add-tree is what takes files by pattern."""
    top = ledger.repo.work_tree
    for key, what in (("files", "file in play"), ("tests", "test")):
        if not given.get(key):
            continue
        for entry in task[key]:
            path = entry["path"]
            if not _GLOB.intersection(path) or (
                top is not None and os.path.lexists(os.path.join(top, path))
            ):
                continue
            warn(
                f"{shown(task['task_id'])}: {what} {shown(path)} is kept as one path, not a "
                f"pattern (to attach the files it matches: git hydrate add-tree "
                f"{shown(task['task_id'])} {shlex.quote(path)})"
            )


#: The characters that make a path a pattern to git.
_GLOB: Final = frozenset("*?[")
