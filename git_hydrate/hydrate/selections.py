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
import os
import shlex
from collections.abc import Callable, Iterable
from typing import Final

import msgspec

from .. import __version__
from ..model import TREE_ORIGIN, Link, Selection, SkippedFile, Task
from ..pack.refresh_memo import local_inputs, own_runs, own_selections_path
from ..results import HydrateResult, UnattachedDict
from ..taskrefs import TaskRefs, TaskState
from .pathspec import Pathspec
from .rules import FileEntry, Skipped

__all__ = [
    "MAX_SELECTIONS",
    "SELECTION_VERSION",
    "Scope",
    "adopt",
    "described",
    "identity",
    "inputs",
    "local",
    "named_skips",
    "not_taken_here",
    "options",
    "ranked_high",
    "recognised",
    "record",
    "recorded",
    "unattached",
]

ORIGIN: Final = TREE_ORIGIN

#: Bumped when the rules, reading or ranking change what a run attaches: a run
#: recorded under another version is never taken as unchanged.
SELECTION_VERSION: Final = 4
#: A file withheld as a secret is recorded with its run (and the prompt says it
#: exists) when it ranked among this many attachments' places ...
WITHHELD_TOP: Final = 25
#: ... the first of them this many at most.
MAX_WITHHELD: Final = 5
#: How many add-tree selections a task remembers (the oldest is forgotten).
MAX_SELECTIONS: Final = 16


class Scope:
    """Whether a link is one this run answers for: a file link under its prefix,
    within its pathspec or one of the task's files in play and tests."""

    __slots__ = ("anchors", "prefix", "spec")

    def __init__(self, prefix: str, spec: Pathspec, anchors: set[str]) -> None:
        self.prefix, self.spec, self.anchors = prefix, spec, anchors

    def __call__(self, link: Link) -> bool:
        return (
            link.origin == ORIGIN
            and link.source == self.prefix + link.path
            and (self.spec.matches(link.path) or link.path in self.anchors)
        )


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
            return known if options(known) == selection else None
    return None


def options(selection: Selection) -> Selection:
    """A recorded run as its options alone: without the digest of its inputs and
    what it found (the files the task names it left out)."""
    if not selection.inputs and not selection.skipped:
        return selection
    return msgspec.structs.replace(selection, inputs="", skipped=[])


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
        options(selection),
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
    return hashlib.sha256(msgspec.json.encode([task_id, options(selection)])).hexdigest()


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


def not_taken_here(refs: TaskRefs, task_id: str, what: str) -> dict[str, str]:
    """What a refresh answers for a run this clone has no record of: recorded in
    another clone; or, when this clone cannot keep its record (its hydrate folder
    not a writable directory), that (running it again would record nothing)."""
    folder = os.path.dirname(own_selections_path(refs.repo))
    if os.path.exists(folder) and not (os.path.isdir(folder) and os.access(folder, os.W_OK)):
        why = "is not writable" if os.path.isdir(folder) else "is not a directory"
        return {
            "selection": what,
            "error": f"not taken: this clone cannot record its own runs ({folder} {why}); "
            f"once it can, run: git hydrate add-tree {shlex.quote(task_id)} {what}",
        }
    return {
        "selection": what,
        "error": "recorded in another clone, so not taken here; to take it, "
        f"run it once yourself: git hydrate add-tree {shlex.quote(task_id)} {what}",
    }


def described(selection: Selection) -> str:
    """A selection as the add-tree options that make it again, each quoted for a
    POSIX shell: its values can come from a remote (a ``dir`` of ``/x; rm -rf ~``
    must reach add-tree as one argument, not run), and a pathspec that starts
    with ``-`` follows ``--``."""
    words = {"rev": ["--rev", selection.rev], "worktree": ["--worktree"]}.get(
        selection.mode, ["--dir", selection.dir]
    )
    if selection.prefix:
        words += ["--prefix", selection.prefix]
    if selection.priority is not None:
        words += ["--priority", str(selection.priority)]
    if not selection.ranked:
        words.append("--no-rank")
    for option, value in (
        ("--max-file-bytes", selection.max_file_bytes),
        ("--max-total-bytes", selection.max_total_bytes),
    ):
        if value is not None:
            words += [option, str(value)]
    if any(spec.startswith("-") for spec in selection.pathspecs):
        words.append("--")
    return shlex.join([*words, *selection.pathspecs])


def ranked_high(withheld: dict[str, int]) -> list[str]:
    """The files withheld as secrets that ranked among the first
    :data:`WITHHELD_TOP` attachments' places (``withheld``: each one's place), the
    first :data:`MAX_WITHHELD` of them: a worker should learn that they exist and
    were withheld on purpose, not recreate or overlook them."""
    return [path for path, at in withheld.items() if at < WITHHELD_TOP][:MAX_WITHHELD]


def named_skips(
    task: Task,
    skipped: Iterable[Skipped],
    entries: Iterable[FileEntry],
    withheld: Iterable[str] = (),
) -> list[SkippedFile]:
    """What a run left out of the files ``task`` names (its files in play and
    tests), and the ``withheld`` secrets that rank high (:func:`ranked_high`),
    with each one's blob when the run had it from git (``entries``): recorded
    with the run, so that a prompt can say why it lacks them."""
    named = {note.path for note in (*task.files, *task.tests)}.union(withheld)
    found: dict[str, SkippedFile] = {}
    for skip in skipped:
        if skip.path in named and skip.path not in found:
            found[skip.path] = SkippedFile(path=skip.path, reason=skip.reason, bytes=skip.bytes)
    if found:
        for entry in entries:
            known = found.get(entry.path)
            if known is not None and entry.oid:
                found[entry.path] = msgspec.structs.replace(known, oid=entry.oid)
    return sorted(found.values(), key=lambda skip: skip.path)


def unattached(task: Task, skips: Iterable[SkippedFile]) -> list[UnattachedDict]:
    """The ``unattached`` of add-tree's result: each file the task names that the
    run left out, how the task names it, and why."""
    roles = {note.path: "named test" for note in task.tests}
    roles.update({note.path: "file in play" for note in task.files})
    return [
        {"path": s.path, "named": roles[s.path], "reason": s.reason, "bytes": s.bytes}
        for s in skips
        if s.path in roles  # (not a withheld secret the task does not name)
    ]
