"""``git hydrate rank``: rank a task's hydrated files again, without reading a body.

After ``task-edit --file-in-play`` (or when the history moved on), the
priorities add-tree and add-diff gave are recomputed from what ranking
reads — paths, sizes, the task and the history — in one commit. Links whose
priority was not ranked (notes, ``--priority``, ``--no-rank``) are left alone.
"""

from __future__ import annotations

from typing import TypedDict

import msgspec

from .. import validate
from ..errors import ValidationError
from ..model import Link
from ..taskrefs import Change, TaskRefs, TaskState, Unchanged, task_message
from .diff import ORIGIN as DIFF_ORIGIN
from .links import DIFF_TOP, TREE_TOP, spelled
from .placement import place
from .tree import ORIGIN as TREE_ORIGIN

__all__ = ["RankResult", "rerank"]


class RankResult(TypedDict):
    """What ``rank`` did: links whose place changed, those that kept it, and the
    task's files in play and tests that are not attached (``add-tree`` attaches them)."""

    task_id: str
    reranked: int
    unchanged: int
    missing: list[str]
    changed: bool
    commit: str | None


def rerank(refs: TaskRefs, task_id: str, *, rev: str | None = None) -> RankResult:
    """Rank the task's ranked tree and diff links again (history of ``rev``, else HEAD).

    Raises:
        ValidationError: ``rev`` names no commit.
        NotFound: no live task ``task_id``.
    """
    validate.task_id(task_id)
    commit = refs.repo.rev_parse(rev or "HEAD")
    if rev is not None and commit is None:
        raise ValidationError(f"{rev!r} does not name a commit in this repository")

    def apply(state: TaskState) -> Change[RankResult]:
        new = _ranked_again(refs, state, commit)
        result = _result(task_id, state, new, commit)
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
                **({"source": commit} if commit else {}),
            ),
            result=result,
        )

    return refs.write(task_id, apply)


def _ranked_again(refs: TaskRefs, state: TaskState, commit: str | None) -> list[Link]:
    """The task's links in their order, each ranked tree and diff link with its
    new place where its priority changed (a score alone is not worth a commit)."""
    links = {id(link): link for link in state.links}
    for origin, top in ((TREE_ORIGIN, TREE_TOP), (DIFF_ORIGIN, DIFF_TOP - 1)):
        group = [
            link
            for link in state.links
            if link.origin == origin and link.score is not None and link.path
        ]
        places = place(
            refs.repo,
            state.task,
            {link.path: link.size for link in group},
            commit=commit,
            top=top,
            priority=None,
            ranked=True,
            oids={link.path: link.oid for link in group} if origin == TREE_ORIGIN else None,
        )
        for link in group:
            priority, score, reason = places[link.path]
            if priority != link.priority:
                links[id(link)] = msgspec.structs.replace(
                    link, priority=priority, score=score, reason=spelled(reason)
                )
    return list(links.values())


def _result(task_id: str, state: TaskState, new: list[Link], commit: str | None) -> RankResult:
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
    }
