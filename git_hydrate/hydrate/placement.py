"""Where hydrated files pack: ranked for the task, or at one priority the user chose.

The priority scale (higher packs first; ties by sha256, as the seed orders):

* a note added with ``context-add`` has priority 0 unless given another;
* ``add-diff`` ranks its diffs from :data:`~.links.DIFF_TOP` (-1) down;
* ``add-tree`` ranks its files from :data:`~.links.TREE_TOP` (-1,000,000)
  down: the task's files in play first, then its named tests, then the rest
  by relevance (:mod:`.rank`);
* an explicit ``--priority N`` wins: every file of that run gets N, unranked;
  ``--no-rank`` gives every file priority 0, as before ranking existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..model import Task
from ..store import Repository
from .building import Building
from .facts import gather
from .history import Begun, History, read_history, without_templates
from .index import Served
from .indexer import Indexer
from .indexing import build
from .kept import has_index, keep, word_index
from .links import Reason, ranked_priority
from .rank import Candidate, TaskText, rank
from .terms import BlobFacts

__all__ = ["Place", "place", "prepare", "task_text"]

#: ``(priority, score, reason)`` of one file (the reason spelled when it is kept:
#: :func:`.links.spelled`).
Place = tuple[int, float | None, Reason]


def task_text(task: Task) -> TaskText:
    """What ranking reads of a task: its words, files in play and named tests."""
    words = [
        task.title,
        task.objective,
        task.acceptance,
        *task.acceptance_criteria,
        *task.scope,
        *(f"{note.path} {note.note}" for note in (*task.files, *task.tests)),
    ]
    return TaskText(
        "\n".join(words),
        files_in_play=[note.path for note in task.files],
        tests=[note.path for note in task.tests],
    )


def place(
    repo: Repository,
    task: Task,
    sizes: Mapping[str, int],
    *,
    commit: str | None,
    top: int,
    priority: int | None,
    ranked: bool,
    oids: Mapping[str, str] | None = None,
    known: Mapping[str, BlobFacts] | None = None,
    tree: str | None = None,
    index: Building | None = None,
    begun: Begun | None = None,
) -> Mapping[str, Place]:
    """The place of every path in ``sizes`` (path -> bytes).

    Args:
        commit: The source revision whose history ranks (``None``: no history).
        top: The priority of the band's first file.
        priority: A priority the user gave: every file gets it, unranked.
        ranked: ``False`` for ``--no-rank`` (every file at 0).
        oids: Each path's blob, to rank by its contents too (from the facts
            cache, else ``known``, else read; without, by paths alone).
        known: Facts of blobs just read (blob id -> facts).
        tree: The tree ``oids`` lists, if one: a word index is kept by its id.
        index: That tree's word index, built while its blobs were read
            (:func:`prepare`); ``None``: a kept one is looked for.
        begun: ``commit``'s ``git log``, begun while the blobs were read.
    """
    if priority is not None or not ranked:
        flat = priority or 0
        return {path: (flat, None, "") for path in sizes}
    history = read_history(repo, commit, begun) if commit else History([], [])
    # (the contents first: the candidates are not held while a kept index is checked)
    facts, served = _contents(repo, oids, known, tree, index) if oids else ({}, None)
    text = task_text(task)
    # (a line the history's messages repeat is a template's: it names no file)
    text = replace(text, text=without_templates(text.text, history.templates))
    found = rank(
        list(map(Candidate, sizes, sizes.values())),
        text,
        history.paths,
        facts=facts,
        subjects=history.subjects,
        index=served,
    )
    return found.places(top, ranked_priority)  # (each made when looked up)


def _contents(
    repo: Repository,
    oids: Mapping[str, str],
    known: Mapping[str, BlobFacts] | None,
    tree: str | None,
    index: Building | None,
) -> tuple[dict[str, BlobFacts], Served | None]:
    """What ranking reads of the files' contents: a kept word index that serves most
    of them and the facts of the rest; else the facts of every file, and (for a
    tree) a new index built from them and kept."""
    paths = list(oids)
    if index is not None:
        served = index.served(oids)
        if served is not None:
            return {}, served
    served = word_index(repo, tree, paths, oids)
    if served is not None:
        rest = {path: oids[path] for path in served.unserved}
        return (gather(repo, rest, known) if rest else {}), served
    facts = gather(repo, oids, known)
    if tree is None:
        return facts, None
    built = build(oids, facts)
    keep(repo, tree, built)
    return facts, Served(built, *built.serving(paths, oids))


def prepare(
    repo: Repository, tree: str | None, oids: Mapping[str, str], indexer: Indexer | None = None
) -> Building | None:
    """The word index to build while the blobs of ``tree`` are read (``oids``: the
    blob of each file to rank), or ``None``: no tree, or a kept index will serve
    (the tree's own; else the one used last, if it serves most files). Looked for
    again after reading, not held meanwhile: the sha256 cache is in memory then.
    ``indexer``: a process to build it in (:func:`.indexer.start`), ended if unused."""
    if tree is None or has_index(repo, tree) or word_index(repo, None, list(oids), oids):
        if indexer is not None:
            indexer.close()
        return None
    return Building(repo, tree, oids, indexer)
