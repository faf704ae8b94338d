"""``prompt --refresh``: every add-tree run a task recorded, taken again in order.

A revision run whose inputs are those it recorded is recognised without
listing a file (:mod:`.selections`); the answer at a tip where every run was
recognised is remembered (:mod:`git_hydrate.pack.refresh_memo`).
"""

from __future__ import annotations

from typing import Any

from .. import validate
from ..errors import ValidationError
from ..model import Selection
from ..pack.refresh_memo import own_runs, remember
from ..results import HydrateResult
from ..taskrefs import TaskRefs
from .pathspec import Pathspec
from .selections import MAX_SELECTIONS, Scope, described, identity, not_taken_here
from .tree import add_tree

__all__ = ["refresh"]


def refresh(refs: TaskRefs, task_id: str) -> list[HydrateResult | dict[str, str]]:
    """Take every add-tree run the task recorded again, in the order they were made.

    A revision run whose commit, options, rules, task and links are those it
    recorded is recognised without listing a file (``recognised: True``). Only
    runs this clone made itself are taken: a selection that came with the task
    from a remote could name any directory or ref here, so it is answered
    ``{"selection": ..., "error": ...}`` with the add-tree command that adopts
    it; so is a run that cannot be taken here. The others go on.
    """
    validate.task_id(task_id)
    own = own_runs(refs.repo)
    results: list[HydrateResult | dict[str, str]] = []
    # What a refresh at this tip answers while nothing else changes (the memo):
    # each recognised run's revision and pin, and what was said of each run.
    pinned: list[tuple[str, str]] = []
    said: list[dict[str, Any]] = []
    state = refs.load(task_id)
    start = state.tip.decode("ascii") if state.tip is not None else None
    runs = state.task.selections[-MAX_SELECTIONS:]
    anchors = {note.path for note in (*state.task.files, *state.task.tests)}
    identities = [identity(task_id, s) for s in runs]
    taken = [known in own for known in identities]
    scopes = [Scope(s.prefix, Pathspec(s.pathspecs), anchors) for s in runs]
    for index, selection in enumerate(runs):
        what = described(selection)
        if not taken[index]:
            notice = not_taken_here(refs, task_id, what)
            results.append(notice)
            said.append(dict(notice))
            continue
        # (a link a later run taken here also answers for is placed by that run)
        later = [scopes[j] for j in range(index + 1, len(runs)) if taken[j]]
        try:
            results.append(done := _again(refs, task_id, selection, later))
        except ValidationError as exc:
            results.append({"selection": what, "error": str(exc)})
            said.append({})  # (never kept: an error here may be gone next time)
            continue
        if done.get("recognised") and done.get("commit") and done.get("tip") == start:
            pinned.append((selection.rev, str(done["commit"])))
            said.append({k: done[k] for k in ("from", "unchanged", "recognised")})
        else:
            said.append({})
    # Kept only for the tip every run was recognised at, and only if no other writer
    # moved the task meanwhile: the answer must be of one state, the one it names.
    if start is not None and all(said) and refs.tip(task_id) == state.tip:
        remember(refs.repo, task_id, start, pinned, identities, said)
    return results


def _again(
    refs: TaskRefs, task_id: str, selection: Selection, later: list[Scope]
) -> HydrateResult:
    """The recorded run ``selection`` taken again, recognised when nothing changed;
    ``later``: the scopes of the runs taken after it."""
    return add_tree(
        refs,
        task_id,
        selection.pathspecs,
        rev=selection.rev if selection.mode == "rev" else None,
        worktree=selection.mode == "worktree",
        directory=selection.dir if selection.mode == "dir" else None,
        prefix=selection.prefix,
        priority=selection.priority,
        ranked=selection.ranked,
        max_file_bytes=selection.max_file_bytes,
        max_total_bytes=selection.max_total_bytes,
        recognise=True,
        placed_later=(lambda link: any(scope(link) for scope in later)) if later else None,
    )
