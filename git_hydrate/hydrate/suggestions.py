"""``git hydrate rank --suggest``: the files the task's text describes, with reasons.

When a task names few files in play, ranking finds them from its text: the
paths it names, and the best content hits (:mod:`.retrieval`), which then seed
co-change and test pairing as a file in play does. This lists those files for
a person to accept into ``--file-in-play``, reading nothing but the facts
cache (and the blobs it has not seen yet), and writing no task. In a partial
clone it fetches no blob: a file whose blob is not here is matched by its path
alone, and the answer counts them (``unread``).
"""

from __future__ import annotations

import msgspec

from .. import validate
from ..settings import Settings
from ..store import Repository
from ..taskrefs import TaskRefs
from .facts import gather
from .links import limit
from .placement import task_text
from .rank import Weights
from .retrieval import lexical_hits
from .rules import FileEntry, path_rule
from .sources import absent_blobs, from_rev, resolve_rev, sized_by_git

__all__ = ["Suggested", "Suggestion", "suggest"]


class Suggested(msgspec.Struct, frozen=True):
    """One file to accept into ``--file-in-play``: ``score`` is its content match
    (the best is 1; 1 for a path the task names), ``reason`` says why."""

    path: str
    score: float
    reason: str


class Suggestion(msgspec.Struct, frozen=True):
    """What ``rank --suggest`` answers (JSON keys stable: ``task_id``, ``commit``,
    ``suggestions``, ``in_play``, ``unread``)."""

    task_id: str
    commit: str | None
    suggestions: list[Suggested]
    #: The task's files in play already (never suggested again).
    in_play: list[str]
    #: How many of the files were matched by their paths alone: a partial clone
    #: lacks their blobs (none is fetched; add-tree fetches those it takes).
    unread: int = 0


def _candidates(
    refs: TaskRefs, rev: str, settings: Settings
) -> tuple[str | None, dict[str, str], set[str]]:
    """The commit ``rev`` names, the blob of each file add-tree could take from it,
    and the paths of those whose blob this (partial) clone lacks."""
    resolved = resolve_rev(refs.repo, rev, unborn="nothing to rank: commit first")
    source = from_rev(refs.repo, rev, resolved)
    max_file = limit(settings, None, "hydrate.maxFileBytes", "max file bytes")
    entries, absent = source.entries, set[str]()
    if source.unsized and source.tree is not None:
        entries, absent = _sized_here(refs.repo, entries, source.tree)
    oids = {
        entry.path: entry.oid
        for entry in entries
        if entry.oid is not None and path_rule(entry, max_file) is None
    }
    return resolved[0], oids, {path for path, oid in oids.items() if oid in absent}


def _sized_here(
    repo: Repository, entries: list[FileEntry], tree: str
) -> tuple[list[FileEntry], set[str]]:
    """A partial clone's ``entries`` (listed without sizes), sized where their blob
    is here, and the blobs that are not. Asked about an absent blob, even its size,
    git fetches it: such a file is judged by its path and kind alone (a size of 1
    stands for one no size rule skips)."""
    absent = absent_blobs(repo, tree)
    here = sized_by_git(repo, [e for e in entries if e.oid not in absent], named=False)
    away = [msgspec.structs.replace(e, size=1) for e in entries if e.oid in absent]
    return [*here, *away], absent


def suggest(refs: TaskRefs, task_id: str, *, rev: str | None = None) -> Suggestion:
    """The files ranking would treat as in play for ``task_id``, from the files of
    ``rev`` (default ``HEAD``): the paths the task names, then the content hits
    that seed co-change and test pairing, best first.

    Raises:
        ValidationError: ``rev`` names no commit or tree.
        NotFound: no live task ``task_id``.
    """
    validate.task_id(task_id)
    task = refs.load(task_id).task
    commit, oids, unread = _candidates(refs, "HEAD" if rev is None else rev, refs.repo.settings)
    facts = gather(refs.repo, {path: oid for path, oid in oids.items() if path not in unread})
    text = task_text(task)
    in_play = list(dict.fromkeys(text.files_in_play))
    # (a file whose blob is not here: its path's words and its name alone)
    paths = sorted([*(path for path, known in facts.items() if known.text), *unread])
    w = Weights()
    hits = lexical_hits(text.text, paths, facts, seeds=w.seeds, floor=w.seed_floor)
    found: dict[str, Suggested] = {}
    for path, mention in sorted(hits.mentioned.items()):
        found[path] = Suggested(path, 1.0, f"named in the task ('{mention}')")
    for path, strength in hits.seeds:
        if path not in found:
            defines = hits.defines.get(path)
            reason = (
                "defines " + ", ".join(defines[:3])
                if defines
                else "matches " + ", ".join(f"'{w}'" for w in hits.matched.get(path, []))
            )
            found[path] = Suggested(path, round(strength, 4), reason)
    # (a file in play or a named test already is not suggested again)
    chosen = [s for s in found.values() if s.path not in in_play and s.path not in text.tests]
    return Suggestion(task_id, commit, chosen, in_play, len(unread))
