"""The add-tree runs a task records (its selections), and recognising one again.

A task remembers each add-tree run it was given (:class:`~git_hydrate.model.Selection`,
with the digest of everything that decided its links), so that ``prompt
--refresh`` can answer an unchanged run without listing a file. This clone
also keeps which runs it made itself, and under what code and attributes
files (its own record, never shared).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from typing import Final

import msgspec

from .. import __version__
from ..model import TREE_ORIGIN, Link, Selection, Task
from ..pack.refresh_memo import local_inputs, own_runs, own_selections_path
from ..results import HydrateResult
from ..taskrefs import TaskRefs, TaskState

__all__ = [
    "MAX_SELECTIONS",
    "SELECTION_VERSION",
    "adopt",
    "described",
    "identity",
    "inputs",
    "local",
    "recognised",
    "record",
    "recorded",
]

ORIGIN: Final = TREE_ORIGIN

#: Bumped when the rules, reading or ranking change what a run attaches: a run
#: recorded under another version is never taken as unchanged.
SELECTION_VERSION: Final = 1
#: How many add-tree selections a task remembers (the oldest is forgotten).
MAX_SELECTIONS: Final = 16


def same_selection(a: Selection, b: Selection) -> bool:
    """Whether two runs take the same files (their options may differ)."""
    return (a.mode, a.rev, a.dir, a.pathspecs, a.prefix) == (
        b.mode,
        b.rev,
        b.dir,
        b.pathspecs,
        b.prefix,
    )


def recorded(task: Task, selection: Selection) -> Selection | None:
    for known in task.selections:
        if same_selection(known, selection):
            without = msgspec.structs.replace(known, inputs="")
            return known if without == selection else None
    return None


def record(task: Task, selection: Selection) -> Task:
    """The task with ``selection`` recorded (replacing the same run's, newest last)."""
    others = [s for s in task.selections if not same_selection(s, selection)]
    kept = [*others, selection][-MAX_SELECTIONS:]
    return task if kept == task.selections else msgspec.structs.replace(task, selections=kept)


def inputs(
    fixed: list[object],
    selection: Selection,
    task: Task,
    links: list[Link],
) -> str:
    """The digest of everything that decides a revision run's links."""
    ranking = [
        task.title,
        task.objective,
        task.acceptance,
        task.acceptance_criteria,
        task.scope,
        task.tags,
        task.files,
        task.tests,
    ]
    # Every link, not only the run's own: a file whose body another link holds is
    # skipped as a duplicate, so removing that link changes what the run attaches.
    held = sorted(
        (link.sha256, link.source, link.path, link.origin, link.priority) for link in links
    )
    parts = [
        SELECTION_VERSION,
        __version__,
        fixed,
        msgspec.structs.replace(selection, inputs=""),
        ranking,
        held,
    ]
    return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()


def recognised(
    task_id: str,
    state: TaskState,
    mine: Callable[[Link], bool],
    selection: Selection,
    pinned: str,
) -> HydrateResult:
    """The answer of a recognised run: the state it was recognised at (its ``tip``)."""
    held = [link for link in state.links if mine(link)]
    tip = state.tip
    return {
        "task_id": task_id,
        "mode": "rev",
        "from": f"{selection.rev} {pinned}" if selection.rev != pinned else pinned,
        "commit": pinned,
        "files": len(held),
        "added": 0,
        "updated": 0,
        "unchanged": len(held),
        "reranked": 0,
        "removed": 0,
        "removed_paths": [],
        "skipped": [],
        "total_bytes": sum(link.size for link in held),
        "changed": False,
        "recognised": True,
        "tip": tip.decode("ascii") if tip is not None else None,
    }


def identity(task_id: str, selection: Selection) -> str:
    """A selection of a task as this clone knows it (its options, not its digest)."""
    options = msgspec.structs.replace(selection, inputs="")
    return hashlib.sha256(msgspec.json.encode([task_id, options])).hexdigest()


def local(refs: TaskRefs) -> str:
    """What decides a run here beside what the task records: the code of the modules
    that decide it and the attributes files outside the tree (machine-local, so kept
    in this clone's record, never in the shared task)."""
    return hashlib.sha256(msgspec.json.encode(local_inputs(refs.repo))).hexdigest()


def adopt(refs: TaskRefs, task_id: str, selection: Selection, here: str) -> None:
    """Remember that this clone ran ``selection`` itself, and under what code and
    attributes files (``prompt --refresh`` runs only such selections: one recorded
    elsewhere could name any directory or ref). The record is this user's alone
    (written ``0600``, trusted only then): another member of a shared repository
    could otherwise adopt a selection for them."""
    known = own_runs(refs.repo)
    key = identity(task_id, selection)
    if known.get(key) == here:
        return
    known[key] = here
    lines = "".join(f"{key} {value}\n" for key, value in sorted(known.items()))
    with contextlib.suppress(OSError):  # derived: losing it only asks for one add-tree again
        refs.repo.replace_file(
            own_selections_path(refs.repo), [lines.encode("ascii")], private=True
        )


def described(selection: Selection) -> str:
    """A selection as the add-tree options that make it."""
    words = {"rev": f"--rev {selection.rev}", "worktree": "--worktree"}.get(
        selection.mode, f"--dir {selection.dir}"
    )
    if selection.prefix:
        words += f" --prefix {selection.prefix}"
    return " ".join([words, *selection.pathspecs])
