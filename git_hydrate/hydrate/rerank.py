"""``git hydrate rank``: rank a task's hydrated files again, without reading a body.

After ``task-edit --file-in-play`` (or when the history moved on), the
priorities add-tree and add-diff gave are recomputed from what ranking
reads — paths, sizes, the task and the history — in one commit. Links whose
priority was not ranked (notes, ``--priority``, ``--no-rank``) are left alone.

Ranking weighs a file against the others, so a link a revision or work-tree run
recorded by this clone answers for ranks among every file that run would rank
now (as add-tree ranks them: right after add-tree nothing moves); the others
(a ``--dir`` run's: a walk gives no blob ids, and its bodies are not read here;
add-diff's, which add-diff ranks among themselves too) rank among themselves,
by HEAD's history. The result names each run and the commit whose history
ranked its links, apart from the commit that ranked the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

import msgspec

from .. import validate
from ..errors import ValidationError
from ..model import Link, Selection, Task
from ..pack.refresh_memo import own_runs
from ..taskrefs import Change, TaskRefs, TaskState, Unchanged, task_message
from .diff import ORIGIN as DIFF_ORIGIN
from .links import DIFF_TOP, TREE_TOP, limits, spelled
from .listings import tree_entries
from .pathspec import Pathspec
from .placement import Place, place
from .rules import FileEntry
from .selections import Scope, described, identity
from .sources import absent_blobs, from_rev, from_worktree, resolve_rev
from .tree import ORIGIN as TREE_ORIGIN
from .tree import apply_rules

__all__ = ["RankResult", "RunRanked", "rerank"]


class RunRanked(TypedDict):
    """An add-tree run of this clone whose links ``rank`` ranked among every file it
    would rank now: the run (its add-tree options), the commit whose history ranked
    them, and how many links it placed."""

    run: str
    commit: str | None
    links: int


class RankResult(TypedDict):
    """What ``rank`` did: links whose place changed, those that kept it, and the
    task's files in play and tests that are not attached (``add-tree`` attaches them).
    ``commit``: the commit whose history ranked the links no run of ``runs`` placed
    (``--rev``: every link), ``None`` when there was none."""

    task_id: str
    reranked: int
    unchanged: int
    missing: list[str]
    changed: bool
    commit: str | None
    runs: list[RunRanked]


def rerank(refs: TaskRefs, task_id: str, *, rev: str | None = None) -> RankResult:
    """Rank the task's ranked tree and diff links again (by the history of ``rev``;
    else of each add-tree run's commit, HEAD for a work-tree run, and HEAD for
    the links no run covers).

    Raises:
        ValidationError: ``rev`` names no commit.
        NotFound: no live task ``task_id``.
    """
    validate.task_id(task_id)
    commit = refs.repo.rev_parse(rev or "HEAD")
    if rev is not None and commit is None:
        raise ValidationError(f"{rev!r} does not name a commit in this repository")

    def apply(state: TaskState) -> Change[RankResult]:
        runs: list[RunRanked] = []
        new, alone = _ranked_again(refs, state, commit, runs, pinned=rev is not None)
        result = _result(task_id, state, new, commit if alone or rev else None, runs)
        moved = result["reranked"]
        if not moved:
            raise Unchanged(result)
        return Change(
            task=state.task,
            links=new,
            message=task_message(
                f"rank {task_id} ({moved} reranked)",
                "rank",
                task_id,
                reranked=str(moved),
                **({"source": result["commit"]} if result["commit"] else {}),
            ),
            result=result,
        )

    return refs.write(task_id, apply)


def _ranked_again(
    refs: TaskRefs, state: TaskState, commit: str | None, runs: list[RunRanked], *, pinned: bool
) -> tuple[list[Link], int]:
    """The task's links in their order, each ranked tree and diff link with its
    new place where its priority changed (a score alone is not worth a commit),
    and how many links ranked by ``commit`` among themselves (no run of ``runs``
    placed them). ``pinned``: ``commit``'s history ranks every link (``--rev``),
    not each run's own."""
    links = {id(link): link for link in state.links}
    by_commit = 0
    for origin, top in ((TREE_ORIGIN, TREE_TOP), (DIFF_ORIGIN, DIFF_TOP - 1)):
        group = [
            link
            for link in state.links
            if link.origin == origin and link.score is not None and link.path
        ]
        placed = (
            _in_runs(refs, state, group, commit if pinned else None, runs)
            if origin == TREE_ORIGIN
            else {}
        )
        alone = [link for link in group if id(link) not in placed]
        by_commit += len(alone)
        if alone:  # (no recorded run covers them: ranked among themselves)
            places = _placed(refs, state.task, alone, commit, top, origin == TREE_ORIGIN)
            placed.update((id(link), places[link.path]) for link in alone)
        for link in group:
            priority, score, reason = placed[id(link)]
            if priority != link.priority:
                links[id(link)] = msgspec.structs.replace(
                    link, priority=priority, score=score, reason=spelled(reason)
                )
    return list(links.values()), by_commit


def _placed(
    refs: TaskRefs, task: Task, group: list[Link], commit: str | None, top: int, by_oid: bool
) -> Mapping[str, Place]:
    """The place of each link of ``group`` ranked among themselves alone."""
    return place(
        refs.repo,
        task,
        {link.path: link.size for link in group},
        commit=commit,
        top=top,
        priority=None,
        ranked=True,
        oids={link.path: link.oid for link in group} if by_oid else None,
    )


def _in_runs(
    refs: TaskRefs,
    state: TaskState,
    group: list[Link],
    pinned: str | None,
    runs: list[RunRanked],
) -> dict[int, Place]:
    """The place of each tree link of ``group`` that a ranked revision run this clone
    made answers for, ranked among every file that run would rank now (its
    candidates, listed again without reading a body) by the history of its commit
    (``pinned``: of that one), as add-tree ranks them; a link two runs answer for
    is placed by the later one, as a refresh does."""
    placed: dict[int, Place] = {}
    own = own_runs(refs.repo)
    anchors = {note.path for note in (*state.task.files, *state.task.tests)}
    for selection in state.task.selections:
        if (
            selection.mode == "dir"  # (a walk gives no blob ids: its files' bodies unread)
            or not selection.ranked
            or selection.priority is not None
            or identity(state.task.id, selection) not in own
        ):
            continue
        mine = Scope(selection.prefix, Pathspec(selection.pathspecs), anchors)
        held = [link for link in group if mine(link)]
        universe = _candidates(refs, selection, anchors, held) if held else None
        if universe is None:
            continue
        (history, tree), sizes, oids = universe
        for link in held:  # (what is attached ranks: its blob, should the tree have moved)
            sizes[link.path], oids[link.path] = link.size, link.oid
        places = place(
            refs.repo,
            state.task,
            sizes,
            commit=pinned or history,
            top=TREE_TOP,
            priority=None,
            ranked=True,
            oids=oids,
            tree=tree,  # (the word index kept of the tree serves)
        )
        placed.update((id(link), places[link.path]) for link in held)
        runs.append({"run": described(selection), "commit": pinned or history, "links": len(held)})
    return placed


def _candidates(
    refs: TaskRefs, selection: Selection, anchors: set[str], held: list[Link]
) -> tuple[tuple[str | None, str | None], dict[str, int], dict[str, str]] | None:
    """The commit (``None``: a tree was named) and tree a revision run reads now,
    and the files it would rank, each with its size and blob (listed, and the
    rules applied, as add-tree does: no body read);
    ``None`` when the run cannot be taken now (its revision gone, say), or when a
    partial clone lacks a blob it would take: git would fetch it to size it."""
    spec = Pathspec(selection.pathspecs)
    try:
        max_file, max_total = limits(
            refs.repo.settings, selection.max_file_bytes, selection.max_total_bytes
        )
        resolved: tuple[str | None, str | None]
        if selection.mode == "worktree":  # (ranked by HEAD's history, as add-tree does)
            source = from_worktree(refs.repo)
            resolved = (refs.repo.rev_parse("HEAD"), None)
        else:
            resolved = commit_tree = resolve_rev(refs.repo, selection.rev)
            source = from_rev(refs.repo, selection.rev, commit_tree, tree_entries)
            if source.unsized and _lacks(refs, commit_tree[1], source.entries, spec, anchors):
                return None
        source.held = frozenset(link.path for link in held)
        candidates, _ = apply_rules(refs, source, spec, anchors, max_file, max_total)
    except ValidationError:
        return None
    sizes = {entry.path: entry.size for entry in candidates}
    oids = {entry.path: entry.oid for entry in candidates if entry.oid is not None}
    return resolved, sizes, oids


def _lacks(
    refs: TaskRefs, tree: str, entries: list[FileEntry], spec: Pathspec, anchors: set[str]
) -> bool:
    """Whether this partial clone lacks the blob of a file of ``tree`` the run takes."""
    absent = absent_blobs(refs.repo, tree)
    return any(
        entry.oid in absent
        for entry in entries
        if not spec or spec.matches(entry.path) or entry.path in anchors
    )


def _result(
    task_id: str, state: TaskState, new: list[Link], commit: str | None, runs: list[RunRanked]
) -> RankResult:
    """What ranking ``state``'s links as ``new`` did."""
    moved = sum(1 for a, b in zip(state.links, new, strict=True) if a != b)
    attached = {link.path for link in state.links}
    wanted = [note.path for note in (*state.task.files, *state.task.tests)]
    return {
        "task_id": task_id,
        "reranked": moved,
        "unchanged": sum(1 for link in new if link.score is not None) - moved,
        "missing": [path for path in dict.fromkeys(wanted) if path not in attached],
        "changed": bool(moved),
        "commit": commit,
        "runs": runs,
    }
