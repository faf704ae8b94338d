"""Retrieval from the task's text: which files does it describe? Pure: no I/O.

Three lexical signals, each a file's own measure in [0, 1]:

* **contents** — BM25 of the task's words against each file's words (code,
  docstrings, comments; identifiers split on case and ``_``), its path's words
  and the names it defines, those two counted several times over (a file that
  *defines* ``ShellComplete`` is more about it than one that calls it). The
  inverse document frequency comes from the contents, so a word every file
  holds (``option`` in click) weighs little, wherever it appears;
* **mentions** — a path, a file name (``core.py``) or a module
  (``click.core``) the text names;
* **seeds** — the best content hits, with their strength: ranking then
  propagates co-change and test pairing from them, as from a file in play;
* **past commits** — BM25 of the task's words against the subject lines of
  the history's commits: the files the best-matching ones changed (a task is
  often like an earlier change, in any language).

Without contents (a file whose facts are unknown) only its path's words count.
"""

from __future__ import annotations

import heapq
import math
import posixpath
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, compress, islice, repeat
from operator import add, ge, gt, itemgetter, mul, not_, truediv
from typing import TYPE_CHECKING, Final

from .terms import BlobFacts, path_words, tokenize, words

if TYPE_CHECKING:
    from .index import Served, WordIndex

__all__ = ["Hits", "lexical_hits", "similar_commits"]

#: How many times a path's words and a file's defined names count, beside its contents.
_PATH_BOOST: Final = 2
_SYMBOL_BOOST: Final = 2
#: A file whose contents hold none of the task's words, only its path does, keeps
#: this share of its score: path words alone must not buy the budget.
_PATH_ONLY: Final = 0.4
_K1: Final = 1.2
_B: Final = 0.75

#: Files that collect every change's words (changelogs, release notes): their match
#: counts this much, and they seed nothing.
_AGGREGATE_SHARE: Final = 0.3
_AGGREGATE_WORDS: Final = (
    r"(?:changes|changelog|history|news|releases?|release[-_]notes|whatsnew|"
    r"authors|contributors)(?:\.(?:md|rst|txt|markdown|adoc))?$"
)
_AGGREGATE_NAME: Final = re.compile(_AGGREGATE_WORDS, re.IGNORECASE)
#: The same names among names one a line (a cheap test of a whole tree first).
_AGGREGATE_NAME_IN: Final = re.compile("^" + _AGGREGATE_WORDS, re.IGNORECASE | re.MULTILINE)

#: Lines that say who, not what (``Co-authored-by: A <a@b>``), and e-mail addresses.
_TRAILER: Final = re.compile(r"^[ \t]*[A-Za-z][A-Za-z-]*-by:.*$|\S+@\S+", re.MULTILINE)

_MENTION: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+")


@dataclass
class Hits:
    """What the task's text finds: per path the content score (best = 1), the words
    it matched, the names it defines that match, the mention that names it, and the
    seeds (best hits first, with their score)."""

    lexical: dict[str, float] = field(default_factory=dict)
    matched: Mapping[str, list[str]] = field(default_factory=dict)
    defines: Mapping[str, list[str]] = field(default_factory=dict)
    mentioned: dict[str, str] = field(default_factory=dict)
    seeds: list[tuple[str, float]] = field(default_factory=list)


#: Per path: its counts of the asked words, its length; the sum of all lengths; per
#: path its defined names that hold an asked word; the paths whose contents hold one.
_Documents = tuple[dict[str, dict[str, int]], dict[str, int], int, dict[str, list[str]], set[str]]


def _documents(
    paths: Sequence[str], facts: Mapping[str, BlobFacts], asked: set[str]
) -> _Documents:
    """Each path's counts of the asked words, its length, its defined names that
    hold an asked word, and the paths whose contents hold one: from each path and
    its facts, one path at a time."""
    in_contents: set[str] = set()
    tfs: dict[str, dict[str, int]] = {}
    lengths: dict[str, int] = {}
    defines: dict[str, list[str]] = {}
    for path in paths:
        tf: Counter[str] = Counter()
        own = path_words(path)
        for word in own:
            if word in asked:
                tf[word] += _PATH_BOOST
        length = len(own) * _PATH_BOOST
        known = facts.get(path)
        if known is not None and known.text:
            terms = known.terms
            held = [word for word in asked if word in terms]  # (the query is the smaller)
            for word in held:
                tf[word] += known.terms[word]
                in_contents.add(path)
            length += known.length
            # a defined name's words are among the file's words: none held, none match
            for name in known.symbols if held else ():
                hit = [w for w in words(name) if w in asked]
                if hit:
                    defines.setdefault(path, []).append(name)
                    for word in hit:
                        tf[word] += _SYMBOL_BOOST
        tfs[path] = tf
        lengths[path] = length
    return tfs, lengths, sum(lengths.values()), defines, in_contents


class _Columns:
    """The files a word index serves that hold an asked word (:func:`_columns`), a
    column per asked word: each file's count of it (path and defined names counted
    over, as :func:`_documents` counts them), so that scoring is a few passes over
    columns rather than a step per file and word."""

    def __init__(self, index: WordIndex, held: set[int], found: set[int]) -> None:
        self.positions = sorted(found)  # (in the index)
        self.paths = list(map(index.paths.__getitem__, self.positions))
        path_lengths, content_lengths = index.path_lengths, index.lengths
        self.lengths = list(
            map(
                add,
                map(mul, map(path_lengths.__getitem__, self.positions), repeat(_PATH_BOOST)),
                map(content_lengths.__getitem__, self.positions),
            )
        )
        #: Whether each file's contents hold an asked word (else its path alone does).
        self.held = list(map(held.__contains__, self.positions))
        self.counts: dict[str, list[int]] = {}
        self._at: dict[int, int] | None = None
        self._rows: dict[str, int] | None = None

    def at(self) -> dict[int, int]:
        """Each file's row, by its position in the index."""
        if self._at is None:
            self._at = dict(zip(self.positions, range(len(self.positions)), strict=True))
        return self._at

    def tf(self, path: str) -> dict[str, int] | None:
        """The asked words of ``path`` with their counts (``None``: not here)."""
        if self._rows is None:
            self._rows = dict(zip(self.paths, range(len(self.paths)), strict=True))
        row = self._rows.get(path)
        if row is None:
            return None
        return {word: count for word, column in self.counts.items() if (count := column[row])}

    def scores(
        self, average: float, weight: Mapping[str, float], aggregates: set[str]
    ) -> dict[str, float]:
        """Each file's BM25 score, as :func:`_scores` gives it."""
        norms: dict[int, float] = {}  # (by length: many files share one)
        for length in set(self.lengths):
            norms[length] = _K1 * (1 - _B + _B * length / average)
        rows = list(map(norms.__getitem__, self.lengths))
        k1 = _K1 + 1
        # per word and file weight * f * k1 / (f + norm), as the formula reads (a word a
        # file lacks adds an exact 0.0: the sum, exactly rounded, is the same; so a word
        # no file holds is left out)
        terms = [
            list(
                map(
                    truediv,
                    map(mul, map(mul, repeat(weight[word]), column), repeat(k1)),
                    map(add, column, rows),
                )
            )
            for word, column in self.counts.items()
            if any(column)
        ]
        scores = list(map(math.fsum, zip(*terms, strict=True)))
        if not terms:
            scores = [0.0] * len(self.paths)
        for row in compress(range(len(scores)), map(not_, self.held)):
            scores[row] *= _PATH_ONLY
        if aggregates:
            for row, path in enumerate(self.paths):
                if path in aggregates:
                    scores[row] *= _AGGREGATE_SHARE
        return dict(zip(self.paths, scores, strict=True))


def _columns(served: Served, asked: set[str]) -> tuple[_Columns, int, _Named]:
    """The files ``served`` answers for that hold an asked word, as columns; the
    sum of the lengths of every file it serves; and per file its defined names
    that hold an asked word (in a file whose contents hold one), found when asked."""
    index, live = served.postings, served.live
    every = all(live)  # (a new task on a known tree: no posting to filter)
    total = _PATH_BOOST * sum(compress(index.path_lengths, live))
    total += sum(compress(index.lengths, live))
    by_path: dict[str, dict[int, int]] = {}
    for word in asked:
        postings = index.path_words(word)
        pairs = zip(postings[0::2], postings[1::2], strict=True)
        by_path[word] = {i: times * _PATH_BOOST for i, times in pairs if live[i]}
    by_contents: dict[str, dict[int, int]] = {}
    held: set[int] = set()
    for word in asked:
        postings = index.terms(word)
        pairs = zip(postings[0::2], postings[1::2], strict=True)
        by_contents[word] = counts = dict(pairs) if every else {i: c for i, c in pairs if live[i]}
        held.update(counts)
    found = held.union(*(words.keys() for words in by_path.values()))
    columns = _Columns(index, held, found)
    rows = columns.positions
    for word in asked:
        column = list(map(by_contents[word].get, rows, repeat(0)))
        if by_path[word]:
            at = columns.at()
            for i, times in by_path[word].items():
                column[at[i]] += times
        columns.counts[word] = column
    return columns, total, _names(index, held, columns)


def _names(index: WordIndex, held: set[int], columns: _Columns) -> _Named:
    """Count into ``columns`` the asked words of the names the files of ``held``
    define (their postings, :meth:`.index.WordIndex.names`); those names by file."""
    # (every file a row, as in a new task on a known tree: a file's row is its position)
    whole = len(columns.positions) == len(index.paths)
    named: dict[str, list[tuple[int, str, int]]] = {}
    for word, column in columns.counts.items():
        found = index.names(word)
        files = list(map(itemgetter(0), found))
        if not held.issuperset(files):  # (a name counts in a file whose contents hold one)
            found = [entry for entry in found if entry[0] in held]
            files = list(map(itemgetter(0), found))
        if not found:
            continue
        if any(map(gt, files, islice(files, 1, None))):  # (kept in file order; else sorted)
            found.sort(key=itemgetter(0))
            files = list(map(itemgetter(0), found))
        named[word] = found
        at = files if whole else list(map(columns.at().__getitem__, files))
        times = list(map(itemgetter(2), found))
        if max(times) == 1:
            for row in at:
                column[row] += _SYMBOL_BOOST
        else:
            for row, count in zip(at, times, strict=True):
                column[row] += count * _SYMBOL_BOOST
    return _Named(named, index.paths)


def _down(count: int) -> range:
    """``count - 1`` down to 0."""
    return range(count - 1, -1, -1)


class _Named(Mapping[str, list[str]]):
    """Per file an index serves, its defined names that hold an asked word, found
    when asked (of 30,000 files, only the reasons of those kept are spelled): from
    each asked word's postings of names (``(file, name, count)`` in file order), by
    the first posting of the file."""

    def __init__(self, named: dict[str, list[tuple[int, str, int]]], paths: list[str]) -> None:
        self._named, self._paths = named, paths
        self._first: list[tuple[list[tuple[int, str, int]], dict[int, int]]] = []
        self._positions: dict[str, int] | None = None

    def __getitem__(self, path: str) -> list[str]:
        names = self.named(path)
        if not names:
            raise KeyError(path)
        return names

    def named(self, path: str) -> list[str]:
        """``path``'s names (none: ``[]``, without an exception: most files asked
        define none)."""
        i = self._where().get(path, -1)
        names: dict[str, None] = {}
        for found, first in self._first:
            at = first.get(i)  # (the file's postings of a word are together, from there)
            while at is not None and at < len(found) and found[at][0] == i:
                names[found[at][1]] = None
                at += 1
        return list(names)

    def _where(self) -> dict[str, int]:
        """Each path's position; each word's postings with each file's first one."""
        if self._positions is None:
            self._first = [
                (
                    found,
                    dict(zip(map(itemgetter(0), reversed(found)), _down(len(found)), strict=True)),
                )
                for found in self._named.values()
            ]
            self._positions = dict(zip(self._paths, range(len(self._paths)), strict=True))
        return self._positions

    def _files(self) -> set[int]:
        return set().union(*(map(itemgetter(0), found) for found in self._named.values()))

    def __iter__(self) -> Iterator[str]:
        return map(self._paths.__getitem__, sorted(self._files()))

    def __len__(self) -> int:
        return len(self._files())


class _Tfs(Mapping[str, Mapping[str, int]]):
    """Per path its counts of the asked words: of the files scored from their facts
    (a dict each) and of those the index served (from their columns, when asked)."""

    def __init__(self, tfs: Mapping[str, Mapping[str, int]], columns: _Columns) -> None:
        self._tfs, self._columns = tfs, columns

    def __getitem__(self, path: str) -> Mapping[str, int]:
        found = self._tfs.get(path)
        if found is None:
            found = self._columns.tf(path)
        if found is None:
            raise KeyError(path)
        return found

    def __iter__(self) -> Iterator[str]:
        return chain(self._tfs, self._columns.paths)

    def __len__(self) -> int:
        return len(self._tfs) + len(self._columns.paths)


def _mentions(text: str, paths: Sequence[str]) -> dict[str, str]:
    """Paths the text names: a path's tail (``click/core.py``), a file name
    (``core.py``) or a dotted module (``click.core``)."""
    named = {m.strip("./").lower() for m in _MENTION.findall(text)}
    if not named:
        return {}
    found: dict[str, str] = {}
    for path in paths:
        lower = path.lower()
        base = posixpath.basename(lower)
        module = posixpath.splitext(lower)[0].replace("/", ".")
        for mention in sorted(named):
            if (
                lower == mention
                or lower.endswith("/" + mention)
                or (mention == base and "." in base)
                or ("/" not in mention and module.endswith(mention) and "." in mention)
            ):
                found[path] = mention
                break
    return found


def lexical_hits(
    text: str,
    paths: Sequence[str],
    facts: Mapping[str, BlobFacts],
    *,
    seeds: int = 3,
    floor: float = 0.5,
    index: Served | None = None,
) -> Hits:
    """The files the task's ``text`` describes, by their contents and paths; the
    ``seeds`` best that score at least ``floor`` of the best one seed the rest.
    With a word ``index`` (:func:`.index.word_index`), the files it serves are
    scored from its postings, the others from ``facts``: the same hits."""
    text = _TRAILER.sub(" ", text)
    hits = Hits(mentioned=_mentions(text, paths))
    query = Counter(tokenize(text))
    if not query or not paths:
        return hits
    asked = set(query)
    columns: _Columns | None = None
    named: _Named | None = None
    if index is None:
        tfs, lengths, total, defines, in_contents = _documents(paths, facts, asked)
    else:  # (the files the index serves from their postings, the others from their facts)
        tfs, lengths, total, defines, in_contents = _documents(index.unserved, facts, asked)
        columns, served_total, named = _columns(index, asked)
        total += served_total
    n = len(paths)
    average = total / n or 1.0
    df = Counter(chain.from_iterable(tfs.values()))
    scored = list(tfs)
    if columns is not None:
        for word, column in columns.counts.items():
            df[word] += len(column) - column.count(0)
        scored += columns.paths
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in asked}
    # (each factor as the formula reads: (1 + log q) * idf * f * (k1 + 1) / (f + norm))
    weight = {w: (1 + math.log(query[w])) * idf[w] for w in asked}
    aggregates = _aggregates(scored)
    scores = _scores(tfs, lengths, average, weight, in_contents, aggregates)
    if columns is not None:
        scores.update(columns.scores(average, weight, aggregates))
    top = max(scores.values(), default=0.0)
    if top <= 0:
        return hits
    hits.lexical = dict(zip(scores, map(truediv, scores.values(), repeat(top)), strict=True))
    every_tf = tfs if columns is None else _Tfs(tfs, columns)
    hits.matched = _Matched(every_tf, {w: -value for w, value in idf.items()})
    from_facts = {p: names for p, names in defines.items() if p in scores}
    hits.defines = _Defines(from_facts, named, scores)
    # the best hits at least ``floor`` of the best one (ties: by path), no aggregate
    strong = list(compress(hits.lexical, map(ge, hits.lexical.values(), repeat(floor))))
    if aggregates:
        strong = [p for p in strong if p not in aggregates]
    if len(strong) > seeds > 0:  # (the best are among those at least the seeds-th best value)
        least = heapq.nlargest(seeds, map(hits.lexical.__getitem__, strong))[-1]
        strong = [p for p in strong if hits.lexical[p] >= least]
    best = heapq.nsmallest(seeds, strong, key=lambda p: (-hits.lexical[p], p))
    hits.seeds = [(p, hits.lexical[p]) for p in best]
    return hits


def _scores(
    tfs: Mapping[str, Mapping[str, int]],
    lengths: Mapping[str, int],
    average: float,
    weight: Mapping[str, float],
    in_contents: set[str],
    aggregates: set[str],
) -> dict[str, float]:
    """Each path's BM25 score (of the files with a matched word)."""
    k1 = _K1 + 1
    norms: dict[int, float] = {}  # (by length: many files share one)
    fsum = math.fsum
    scores: dict[str, float] = {}
    for path, tf in tfs.items():
        if not tf:
            continue
        length = lengths[path]
        norm = norms.get(length)
        if norm is None:
            norm = norms[length] = _K1 * (1 - _B + _B * length / average)
        # exactly rounded: the same in any order of words (the index's and the facts'
        # differ; a last bit breaks ties between equal files)
        score = fsum([weight[w] * f * k1 / (f + norm) for w, f in tf.items()])
        if path not in in_contents:
            score *= _PATH_ONLY
        if path in aggregates:
            score *= _AGGREGATE_SHARE
        scores[path] = score
    return scores


class _Matched(Mapping[str, list[str]]):
    """Per path with a matched word, the three that weigh most in it (ties:
    alphabetical), worked out when asked: only the reasons of the files kept
    are spelled."""

    def __init__(self, tfs: Mapping[str, Mapping[str, int]], rarity: Mapping[str, float]) -> None:
        self._tfs, self._rarity = tfs, rarity
        self._spelled: dict[str, list[str]] = {}

    def __getitem__(self, path: str) -> list[str]:
        found = self._spelled.get(path)
        if found is None:
            tf = self._tfs.get(path)
            if not tf:
                raise KeyError(path)
            rarity = self._rarity
            ordered = sorted([(rarity[w] * f, w) for w, f in tf.items()])
            found = self._spelled[path] = [w for _weight, w in ordered[:3]]
        return found

    def __iter__(self) -> Iterator[str]:
        return (path for path, tf in self._tfs.items() if tf)

    def __len__(self) -> int:
        return sum(1 for tf in self._tfs.values() if tf)


class _Defines(Mapping[str, list[str]]):
    """Per path, its defined names that hold an asked word (public, then short,
    first), sorted when asked: of the files scored from their facts (``names``),
    and of those an index served (``served``, of the paths in ``scored``)."""

    def __init__(
        self,
        names: dict[str, list[str]],
        served: _Named | None = None,
        scored: Mapping[str, float] | None = None,
    ) -> None:
        self._names = names
        self._served, self._scored = served, scored
        self._sorted: dict[str, list[str]] = {}

    def __getitem__(self, path: str) -> list[str]:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def get(self, path: str, default: list[str] | None = None) -> list[str] | None:  # type: ignore[override]
        """:meth:`__getitem__`'s answer, else ``default`` (without an exception: most
        files asked define none)."""
        found = self._sorted.get(path)
        if found is not None:
            return found
        names = self._names.get(path)
        if names is None:
            if self._served is None or self._scored is None or path not in self._scored:
                return default
            names = self._served.named(path)
            if not names:
                return default
        if len(names) > 1:
            names = sorted(names, key=_public_short_first)
        self._sorted[path] = names
        return names

    def __iter__(self) -> Iterator[str]:
        served, scored = self._served, self._scored
        if served is None or scored is None:
            return iter(self._names)
        return chain(self._names, (path for path in served if path in scored))

    def __len__(self) -> int:
        return sum(1 for _path in self)


def _public_short_first(name: str) -> tuple[bool, int, str]:
    return name.startswith("_"), len(name), name


def _aggregate(path: str) -> bool:
    """Whether ``path`` is a file that collects every change's words (a changelog)."""
    return _AGGREGATE_NAME.match(path.rpartition("/")[2]) is not None


def _aggregates(paths: Sequence[str]) -> set[str]:
    """The paths :func:`_aggregate` accepts (one search over all their names)."""
    names = "\n".join(map(itemgetter(2), map(str.rpartition, paths, repeat("/"))))
    if _AGGREGATE_NAME_IN.search(names) is None:
        return set()
    return {path for path in paths if _aggregate(path)}


def similar_commits(
    text: str,
    subjects: Sequence[str],
    history: Sequence[Sequence[str]],
    *,
    count: int = 20,
    half_life: float = 500.0,
) -> dict[str, float]:
    """The files changed by the ``count`` past commits whose subjects best match
    ``text`` (BM25, recency-decayed with ``half_life`` commits), each file's value
    a noisy OR of those commits' matches (the best = 1). ``subjects[i]`` is the
    subject of the commit that changed ``history[i]``."""
    query = set(tokenize(_TRAILER.sub(" ", text)))
    if not query or not subjects:
        return {}
    # only subjects holding a query word's first letters are split into words (a
    # word's every form shares them); a subject's length is its count of words
    starts = {word[:5] for word in query}
    docs: list[Counter[str]] = []
    lengths: list[int] = []
    for subject in subjects:
        lower = subject.lower()
        lengths.append(len(lower.split()))
        held = any(start in lower for start in starts)
        docs.append(Counter(w for w in tokenize(subject) if w in query) if held else Counter())
    n = len(docs)
    average = sum(lengths) / n or 1.0
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.keys())
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in query}
    matches: list[tuple[float, int]] = []
    for age, doc in enumerate(docs):
        if not doc:
            continue
        norm = _K1 * (1 - _B + _B * lengths[age] / average)
        score = sum(idf[w] * f * (_K1 + 1) / (f + norm) for w, f in doc.items())
        if half_life > 0:
            score *= 0.5 ** (age / half_life)
        matches.append((score, age))
    matches.sort(key=lambda pair: (-pair[0], pair[1]))
    if not matches or matches[0][0] <= 0:
        return {}
    top = matches[0][0]
    missed: dict[str, float] = {}
    for score, age in matches[:count]:
        for path in history[age] if age < len(history) else ():
            missed[path] = missed.get(path, 1.0) * (1.0 - score / top)
    return {path: 1.0 - value for path, value in missed.items()}
