"""``git hydrate rank --suggest``: the files the task's text describes, with reasons.

When a task names few files in play, ranking finds them from its text: the
paths it names, and the best content hits (:mod:`.retrieval`), which then seed
co-change and test pairing as a file in play does. This lists those files for
a person to accept into ``--file-in-play``, reading nothing but the facts
cache (and the blobs it has not seen yet), and writing no task.
"""

from __future__ import annotations

import msgspec

from .. import validate
from ..settings import Settings
from ..taskrefs import TaskRefs
from .facts import gather
from .links import limit
from .placement import task_text
from .rank import Weights
from .retrieval import lexical_hits
from .rules import path_rule
from .sources import from_rev, resolve_rev

__all__ = ["Suggested", "Suggestion", "suggest"]


class Suggested(msgspec.Struct, frozen=True):
    """One file to accept into ``--file-in-play``: ``score`` is its content match
    (the best is 1; 1 for a path the task names), ``reason`` says why."""

    path: str
    score: float
    reason: str


class Suggestion(msgspec.Struct, frozen=True):
    """What ``rank --suggest`` answers (JSON keys stable: ``task_id``, ``commit``,
    ``suggestions``, ``in_play``)."""

    task_id: str
    commit: str | None
    suggestions: list[Suggested]
    #: The task's files in play already (never suggested again).
    in_play: list[str]


def _candidates(refs: TaskRefs, rev: str, settings: Settings) -> tuple[str | None, dict[str, str]]:
    """The commit ``rev`` names and the blob of each file add-tree could take from it."""
    resolved = resolve_rev(refs.repo, rev)
    source = from_rev(refs.repo, rev, resolved)
    max_file = limit(settings, None, "hydrate.maxFileBytes", "max file bytes")
    oids = {
        entry.path: entry.oid
        for entry in source.entries
        if entry.oid is not None and path_rule(entry, max_file) is None
    }
    return resolved[0], oids


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
    commit, oids = _candidates(refs, "HEAD" if rev is None else rev, refs.repo.settings)
    facts = gather(refs.repo, oids)
    text = task_text(task)
    in_play = list(dict.fromkeys(text.files_in_play))
    paths = sorted(path for path, known in facts.items() if known.text)
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
    return Suggestion(task_id, commit, chosen, in_play)
