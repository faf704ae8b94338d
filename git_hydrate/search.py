"""Finding tasks by their words: ranked hits with a one-line snippet.

A task's searchable text — title, objective, acceptance, criteria, tags,
files in play, tests and checkpoints — is a pure function of its tip commit,
so its terms are kept in a disposable index keyed by tip
(``<common dir>/hydrate/search-index-2``, a :class:`~git_hydrate.listing.SummaryCache`):
a warm search reads the refs and that one file. Attached bodies
(``attachments=True``) are indexed by blob id in ``search-bodies`` the same
way, so a body shared by many tasks is read once.

Ranking is BM25 over those terms (the title counts three times), with words
split on case and ``_`` so that ``retryHeader`` and ``retry_header`` meet
``retry header``. Ties fall to the task id: the order is deterministic. A task
the query names by its id (a word of it, case aside) comes first.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypedDict

import msgspec

from . import validate
from .archive import read_archive
from .errors import CorruptData, ValidationError
from .listing import SummaryCache, decode_entries
from .stemming import stem
from .store import Repository, open_regular
from .taskrefs import TaskRefs, TaskState
from .taskrefs.decode import read_states

__all__ = ["SearchHit", "search_tasks", "terms_of"]

#: BM25's parameters (the usual ones).
_K1: Final = 1.2
_B: Final = 0.75
#: How often the title's words count.
_TITLE_WEIGHT: Final = 3
#: The index file under ``<common dir>/hydrate/`` (a new layout, a new name).
_INDEX: Final = "search-index-2"
#: Bodies larger than this are not indexed for ``--attachments`` (named in a warning).
_MAX_BODY_BYTES: Final = 1 << 20
#: Lines of a body kept for its snippet.
_MAX_BODY_LINES: Final = 2000
#: Bodies read from git at a time when indexing.
_READ_CHUNK: Final = 256
_SNIPPET_CHARS: Final = 120
_WORD: Final = re.compile(r"[^\W_]+")
_PARTS: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


class _Entry(TypedDict):
    """A task's index entry (:func:`_entry`) as the index keeps it; an older one
    lacks ``stemmed`` (its terms hold accented words also without their accents,
    and plurals also as their word) and is made again."""

    task_id: str
    terms: str
    length: int
    lines: str
    title: str
    status: str
    links: list[tuple[str, str, int]]
    stemmed: bool


class _BodyEntry(TypedDict):
    """A body's index entry (:func:`_body_entry`) as the body index keeps it."""

    terms: dict[str, int]
    length: int
    lines: list[str]
    stemmed: bool


class SearchHit(TypedDict):
    """One task found by :func:`search_tasks`."""

    task_id: str
    title: str
    status: str
    score: float
    #: The line that matched best, trimmed to about 120 characters.
    snippet: str
    #: Where that line is: ``title``, ``objective``, ``checkpoint``, ``attachment <source>``...
    #: (``id``: the query named the task by its id, and no line holds its words)
    field: str
    archived: bool


def terms_of(text: str) -> list[str]:
    """The search terms of ``text``: each word lowercased, and a word written in
    camelCase or snake_case also as its parts; a plural or an ``-ing``/``-ed`` form
    also as its word (:func:`.stemming.stem`); a word with accents also without them
    (``café`` is found by ``cafe``, as people type it)."""
    found: list[str] = []
    for word in _WORD.findall(text.replace("_", " ")):
        whole = word.casefold()
        found.append(whole)
        if word.isascii():
            parts = [part.lower() for part in _PARTS.findall(word)]
            if len(parts) > 1:
                found += parts
            # (plurals and -ing/-ed forms meet their word: ``timestamps`` is found by
            # ``timestamp``, ``retryHeaders`` by ``retry header``)
            last = parts[-1] if parts else ""
            if last.isalpha() and (base := stem(last)) != last:
                found.append(whole[: len(whole) - len(last)] + base)
                if len(parts) > 1:
                    found.append(base)
            continue
        bare = _without_accents(whole)
        if bare != whole:
            found.append(bare)
    return found


def _searched(text: str) -> str:
    """``text`` casefolded, and (when it is not ASCII) again without its accents: every
    term of it is a piece of this."""
    folded = text.casefold()
    return folded if folded.isascii() else f"{folded}\n{_without_accents(folded)}"


def _within(term: str, folded: str) -> bool:
    """Whether ``term`` can be a term of the text ``folded`` (:func:`_searched`'s):
    every term is a piece of it, but for a stem ending in ``y`` (``entry``, of
    ``entries``), whose letters but the last are."""
    return (term[:-1] if term.endswith("y") else term) in folded


def _without_accents(word: str) -> str:
    """``word`` without its combining marks (``résumé``: ``resume``)."""
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _lines(state: TaskState) -> list[tuple[str, str]]:
    """``(field, line)`` of every searchable line of a task."""
    task = state.task
    lines: list[tuple[str, str]] = [("title", task.title)]
    for field, text in (("objective", task.objective), ("acceptance", task.acceptance)):
        lines += [(field, line) for line in text.splitlines() if line.strip()]
    lines += [("criterion", c) for c in task.acceptance_criteria]
    lines += [("tag", t) for t in task.tags]
    lines += [("file", f"{n.path} {n.note}".strip()) for n in (*task.files, *task.tests)]
    for checkpoint in task.checkpoints:
        for text in (checkpoint.summary, checkpoint.evidence, checkpoint.next_step):
            lines += [("checkpoint", line) for line in text.splitlines() if line.strip()]
    return lines


def _packed_terms(counts: Mapping[str, int]) -> str:
    """Term counts as one string, `` term:count term:count ``: an index of 10,000
    tasks then decodes as 10,000 strings instead of 10,000 dicts."""
    return " " + " ".join(f"{term}:{n}" for term, n in sorted(counts.items())) + " "


def _tf(packed: str, term: str) -> int:
    """How often ``term`` is counted in a :func:`_packed_terms` string."""
    at = packed.find(f" {term}:")
    if at < 0:
        return 0
    start = at + len(term) + 2
    return int(packed[start : packed.index(" ", start)])


def _entry(state: TaskState) -> dict[str, Any]:
    """A task's index entry: its term counts, length, lines, title and station."""
    counts: Counter[str] = Counter()
    lines = _lines(state)
    for field, line in lines:
        words = terms_of(line)
        for _ in range(_TITLE_WEIGHT if field == "title" else 1):
            counts.update(words)
    return {
        "task_id": state.task.id,
        "terms": _packed_terms(counts),
        "length": sum(counts.values()),
        "lines": "\n".join(f"{field}\t{' '.join(line.split())}" for field, line in lines),
        "title": state.task.title,
        "status": state.task.status,
        "links": [[link.oid, link.source, link.size] for link in state.links],
        "stemmed": True,
    }


def _split_lines(lines: str) -> list[tuple[str, str]]:
    return [(field, line) for field, _tab, line in (x.partition("\t") for x in lines.split("\n"))]


def _body_entry(text: str) -> dict[str, Any]:
    """A body's index entry: its term counts, length and (at most 2,000) lines with a
    word, each line tokenised once."""
    counts: Counter[str] = Counter()
    kept: list[str] = []
    for line in text.splitlines():
        words = terms_of(line)
        counts.update(words)
        if words and len(kept) < _MAX_BODY_LINES:
            kept.append(" ".join(line.split())[:400])
    return {"terms": dict(counts), "length": sum(counts.values()), "lines": kept, "stemmed": True}


class _BodyIndex:
    """Term counts and lines of attached bodies, by blob id (a disposable file)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.path = os.path.join(repo.common_dir, "hydrate", "search-bodies")
        self.entries: dict[str, dict[str, Any]] = {}
        self.changed = False
        with contextlib.suppress(OSError, msgspec.DecodeError), open_regular(self.path) as fh:
            self.entries = decode_entries(fh.read(), _BodyEntry)

    def of(self, oids: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = sorted(set(oids))
        # (an entry of an earlier version, without accent-free or stemmed terms, is made again)
        missing = [oid for oid in wanted if "stemmed" not in self.entries.get(oid, {})]
        for start in range(0, len(missing), _READ_CHUNK):  # (not every body in memory at once)
            chunk = missing[start : start + _READ_CHUNK]
            answers = self.repo.read_many([oid.encode() for oid in chunk])
            for oid, answer in zip(chunk, answers, strict=True):
                if answer is None or answer[0] != b"blob":
                    continue  # doctor names a missing body; search has nothing to say of it
                self.entries[oid] = _body_entry(answer[1].decode("utf-8", "replace"))
                self.changed = True
        return {oid: self.entries[oid] for oid in wanted if oid in self.entries}

    def save(self, keep: set[str]) -> None:
        stale = set(self.entries) - keep
        if not self.changed and not stale:
            return
        kept = {oid: e for oid, e in self.entries.items() if oid in keep}
        with contextlib.suppress(OSError):
            self.repo.replace_file(self.path, [msgspec.msgpack.encode(kept)])


def _archived_entries(refs: TaskRefs) -> dict[str, dict[str, Any]]:
    """Index entries of the archived tasks (read from their last commits)."""
    try:
        archived = read_archive(refs.repo).index.tasks
    except CorruptData:
        return {}
    tips = {task_id: entry.tip.encode("ascii") for task_id, entry in archived.items()}
    found: dict[str, dict[str, Any]] = {}
    for task_id, state in read_states(refs.repo, tips).items():
        if not isinstance(state, CorruptData):
            found[task_id] = _entry(state)
    return found


def _bm25(query: list[str], docs: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Each document's BM25 score for ``query`` (documents without a query term left out).

    A document's ``terms`` are packed (:func:`_packed_terms`) or a dict."""
    if not docs:
        return {}
    average = sum(d["length"] for d in docs.values()) / len(docs) or 1.0
    scores: dict[str, float] = {}
    for term in dict.fromkeys(query):
        needle = f" {term}:"
        having = []
        for key, doc in docs.items():
            terms = doc["terms"]
            if isinstance(terms, str):
                if needle in terms:
                    having.append((key, doc, _tf(terms, term)))
            elif term in terms:
                having.append((key, doc, terms[term]))
        if not having:
            continue
        idf = math.log(1 + (len(docs) - len(having) + 0.5) / (len(having) + 0.5))
        for key, doc, tf in having:
            norm = tf + _K1 * (1 - _B + _B * doc["length"] / average)
            scores[key] = scores.get(key, 0.0) + idf * tf * (_K1 + 1) / norm
    return scores


def _best_line(query: set[str], lines: Iterable[tuple[str, str]]) -> tuple[int, str, str]:
    """``(hits, field, line)`` of the line holding the most query terms (the first such)."""
    best: tuple[int, str, str] = (0, "", "")
    for field, line in lines:
        folded = _searched(line)
        # (a term of a line is a piece of the line casefolded, or of it without its
        # accents: one absent from both is not among the line's terms, and the line
        # need not be tokenised)
        if not any(_within(term, folded) for term in query):
            continue
        hits = len(query & set(terms_of(line)))
        if hits > best[0]:
            best = (hits, field, line)
    return best


class _Snippets:
    """The line that matches a query best in a task, its attached bodies included.

    A body's best line is found once, however many tasks link it, and only for the
    bodies of the tasks asked about."""

    def __init__(self, query: set[str], bodies: Mapping[str, Mapping[str, Any]]) -> None:
        self.query = query
        self.bodies = bodies
        self.most: dict[str, int] = {}
        self.best: dict[str, tuple[int, str]] = {}

    def _most(self, oid: str) -> int:
        """How many query terms a line of the body could hold at most."""
        most = self.most.get(oid)
        if most is None:
            folded = _searched("\n".join(self.bodies[oid]["lines"]))
            most = self.most[oid] = sum(_within(term, folded) for term in self.query)
        return most

    def _in_body(self, oid: str) -> tuple[int, str]:
        found = self.best.get(oid)
        if found is None:
            lines = self.bodies[oid]["lines"]
            hits, _field, line = _best_line(self.query, (("", x) for x in lines))
            found = self.best[oid] = (hits, line)
        return found

    def of(self, doc: Mapping[str, Any]) -> tuple[str, str]:
        """``(field, line)``: the task's own lines first, then its bodies in link order
        (a body that cannot beat the line found so far is not looked into)."""
        hits, field, line = _best_line(self.query, _split_lines(doc["lines"]))
        for oid, source, _size in doc.get("links", ()) if self.bodies else ():
            if hits >= len(self.query):
                break
            if oid in self.bodies and self._most(oid) > hits:
                body_hits, body_line = self._in_body(oid)
                if body_hits > hits:
                    hits, field, line = body_hits, f"attachment {source}", body_line
        return field, _trimmed(self.query, line)


def _trimmed(query: set[str], line: str) -> str:
    """``line`` trimmed to about 120 characters around its first hit."""
    line = " ".join(line.split())
    if len(line) > _SNIPPET_CHARS:
        lowered = line.lower()
        first = min((lowered.find(t) for t in query if t in lowered), default=0)
        start = max(0, min(first - 30, len(line) - _SNIPPET_CHARS))
        line = ("…" if start else "") + line[start : start + _SNIPPET_CHARS].strip() + "…"
    return line


def _asked(query: str, limit: int) -> list[str]:
    """The words of ``query``; a query without one, or a ``limit`` below 1, refused."""
    words = terms_of(query)
    if not words:
        raise ValidationError(
            f"search for what? {validate.shown_value(query)} holds no word to look for"
        )
    if limit < 1:
        raise ValidationError(f"--limit must be a positive number, not {limit}")
    return words


def search_tasks(
    refs: TaskRefs,
    query: str,
    *,
    archived: bool = False,
    attachments: bool = False,
    limit: int = 20,
    damaged: list[str] | None = None,
    too_large: list[tuple[str, str]] | None = None,
) -> list[SearchHit]:
    """The tasks that match ``query`` best, best first (see the module's docstring);
    ``damaged``, given, gets the ids of the damaged live tasks left out, and
    ``too_large`` each attachment not searched for its size (task id, source).

    Raises:
        ValidationError: the query holds no word, or ``limit`` is not positive.
    """
    words = _asked(query, limit)
    entries = SummaryCache(refs.repo, _INDEX, _Entry).summaries(refs, _entry)
    docs = {t: e for t, e in entries.items() if "error" not in e}
    if damaged is not None:
        damaged += [t for t, e in entries.items() if "error" in e]
    was_archived: set[str] = set()
    if archived:
        for task_id, entry in _archived_entries(refs).items():
            if task_id not in docs:
                docs[task_id] = entry
                was_archived.add(task_id)
    bodies: dict[str, dict[str, Any]] = {}
    if attachments:
        docs, bodies = _with_bodies(refs.repo, docs, words)
        if too_large is not None:
            too_large += _too_large(docs)
    scores = _bm25(words, docs)
    # (a task the query names by its id comes first: people look one up so)
    asked = {token.casefold() for token in query.split()}
    named = {task_id for task_id in docs if task_id.casefold() in asked}
    top = max(scores.values(), default=0.0) + 1.0
    for task_id in named:
        scores[task_id] = top + scores.get(task_id, 0.0)
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    snippets = _Snippets(set(words), bodies)
    hits: list[SearchHit] = []
    for task_id, score in ranked:
        doc = docs[task_id]
        field, snippet = snippets.of(doc)
        if task_id in named and not snippet:
            field, snippet = "id", doc["title"]
        hits.append(
            {
                "task_id": task_id,
                "title": doc["title"],
                "status": doc["status"],
                "score": round(score, 4),
                "snippet": snippet,
                "field": field,
                "archived": task_id in was_archived,
            }
        )
    return hits


def _too_large(docs: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Each attachment of ``docs`` whose body is too large to search: (task id, source)."""
    return sorted(
        (task_id, source)
        for task_id, doc in docs.items()
        for _oid, source, size in doc.get("links", ())
        if size > _MAX_BODY_BYTES
    )


def _with_bodies(
    repo: Repository, docs: dict[str, dict[str, Any]], query: list[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """``docs`` with each task's attached bodies' counts of the ``query`` terms and
    lengths added (once per link), and the bodies by blob id; bodies over 1 MiB are
    left out. Each distinct body is looked at once, however many tasks link it."""
    index = _BodyIndex(repo)
    oids = {
        oid
        for d in docs.values()
        for oid, _s, size in d.get("links", ())
        if size <= _MAX_BODY_BYTES
    }
    bodies = index.of(oids)
    index.save(oids)
    terms = list(dict.fromkeys(query))
    lengths = {oid: body["length"] for oid, body in bodies.items()}
    having: dict[str, list[int]] = {}
    for oid, body in bodies.items():
        found = [body["terms"].get(term, 0) for term in terms]
        if any(found):
            having[oid] = found
    merged: dict[str, dict[str, Any]] = {}
    for task_id, doc in docs.items():
        links = doc.get("links")
        if not links:
            merged[task_id] = doc
            continue
        counts = [_tf(doc["terms"], term) for term in terms]
        length = doc["length"]
        for oid, _source, _size in links:
            length += lengths.get(oid, 0)
            more = having.get(oid)
            if more is not None:
                counts = [n + m for n, m in zip(counts, more, strict=True)]
        tf = {term: n for term, n in zip(terms, counts, strict=True) if n}
        merged[task_id] = {**doc, "terms": tf, "length": length}
    return merged, bodies
