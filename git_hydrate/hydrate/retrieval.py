"""Retrieval from the task's text: which files does it describe? Pure: no I/O.

Three lexical signals, each a file's own measure in [0, 1]:

* **contents** — BM25 of the task's words against each file's words (code,
  docstrings, comments; identifiers split on case and ``_``), its path's words
  and the names it defines, those two counted several times over (a file that
  *defines* ``ShellComplete`` is more about it than one that calls it). The
  inverse document frequency comes from the contents, so a word every file
  holds (``option`` in click) weighs little, wherever it appears;
* **mentions** — a path, a file name (``core.py``) or a module
  (``click.core``) the text names; and a name the text spells out as code
  does (``rebuild_auth``, ``ShellComplete``) that a file defines;
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
import re
from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, repeat
from operator import add, ge, itemgetter, truediv
from typing import TYPE_CHECKING, Final

from .areas import area_files
from .columns import (
    AGGREGATE_SHARE,
    K1,
    PATH_BOOST,
    PATH_ONLY,
    SYMBOL_BOOST,
    B,
    Columns,
    Named,
    Tfs,
    columns,
)
from .mentions import IDENTIFIER, SPELLED_FILES, mentions
from .terms import BlobFacts, defines_names, path_words, tokenize, words

if TYPE_CHECKING:
    from .index import Served

__all__ = ["Hits", "lexical_hits", "similar_commits", "spelled_names"]

#: How many times a path's words and a file's defined names count, beside its contents;
#: the share a file whose contents hold none of the task's words (only its path) keeps:
#: path words alone must not buy the budget; BM25's parameters.
_PATH_BOOST: Final = PATH_BOOST
_SYMBOL_BOOST: Final = SYMBOL_BOOST
_PATH_ONLY: Final = PATH_ONLY
_K1: Final = K1
_B: Final = B

#: Files that collect every change's words (changelogs, release notes) or every
#: option's (manual pages): their match counts this much, and they seed nothing.
_AGGREGATE_SHARE: Final = AGGREGATE_SHARE
_AGGREGATE_WORDS: Final = (
    r"(?:(?:changes|changelog|history|news|releases?|release[-_]notes|whatsnew|authors"
    # (a project's own: ``doc/telescope_changelog.txt``; possessive: a name fails at
    # its first character that is no letter, digit, ``_`` or ``-``, never tried again)
    r"|contributors|(?:[a-z0-9]++[_-])++changelog)(?:\.(?:md|rst|txt|markdown|adoc|asciidoc|org|pod"
    r"|rdoc|textile))?"
    # a manual page (``fzf.1``, ``tmux.1``): a command's every option, in a ticket's words
    r"|[A-Za-z][\w.-]*[A-Za-z_]\.[1-9])$"
)
_AGGREGATE_NAME: Final = re.compile(_AGGREGATE_WORDS, re.IGNORECASE)
#: A repository's overview: in a small repository (``lexical_hits(overview=True)``) it
#: describes every file, so it holds every task's words, and weighs as an aggregate.
_OVERVIEW_NAME: Final = re.compile(r"readme(?:\.(?:md|rst|txt|markdown|adoc))?$", re.IGNORECASE)
#: The same names among names one a line (a cheap test of a whole tree first).
_AGGREGATE_NAME_IN: Final = re.compile("^" + _AGGREGATE_WORDS, re.IGNORECASE | re.MULTILINE)
#: What a name :data:`_AGGREGATE_WORDS` accepts holds, lower-cased: one of these words,
#: or it ends with a dot and a digit from 1 (a manual page; names one a line).
_AGGREGATE_PARTS: Final = (
    "change",
    "history",
    "news",
    "release",
    "whatsnew",
    "authors",
    "contributors",
)
_MANUAL_END: Final = re.compile(r"\.[1-9]$", re.MULTILINE)

#: Lines that say who, not what (``Co-authored-by: A <a@b>``), and e-mail addresses.
_TRAILER: Final = re.compile(r"^[ \t]*[A-Za-z][A-Za-z-]*-by:.*$|\S+@\S+", re.MULTILINE)


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
    #: The files the title's area names (:func:`.areas.area_files`), with that area.
    areas: dict[str, str] = field(default_factory=dict)


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
            # a defined name's words are among the file's words: none held, none match (a
            # document's names are its examples')
            for name in known.symbols if held and defines_names(path) else ():
                hit = [w for w in words(name) if w in asked]
                if hit:
                    defines.setdefault(path, []).append(name)
                    for word in hit:
                        tf[word] += _SYMBOL_BOOST
        tfs[path] = tf
        lengths[path] = length
    return tfs, lengths, sum(lengths.values()), defines, in_contents


def _spelled(word: str) -> bool:
    """Whether ``word`` can only be a name: ``_`` inside it, or a capital after its
    first letter (``rebuild_auth``, ``ShellComplete``; not ``session``, ``Session``,
    ``HTTP`` or ``__init__``)."""
    inner = word.strip("_")
    return "_" in inner or (inner[1:] != inner[1:].lower() and inner != inner.upper())


def spelled_names(text: str, defines: Mapping[str, list[str]]) -> dict[str, str]:
    """The files (of ``defines``: per path, its defined names that hold a word of
    the text) that define a name ``text`` spells out whole, as code does: path ->
    the first such name. A plain word (``session``) names no file this way, nor
    does a name more than :data:`.mentions.SPELLED_FILES` files define (an interface's
    method, Go's ``ServeHTTP``: the text names none of them by it)."""
    spelled = set(filter(_spelled, IDENTIFIER.findall(_TRAILER.sub(" ", text))))
    if not spelled:
        return {}
    own: dict[str, list[str]] = {}
    # (the files that may define one, from the names' postings: asking each of 30,000
    # files for its names cost 2 s of CPU for a ticket of 200 words)
    for path in defines.holding(spelled) if isinstance(defines, _Defines) else defines:
        names = defines.get(path)
        mine = [name for name in names or () if name in spelled]
        if mine:
            own[path] = mine
    files = Counter(chain.from_iterable(map(set, own.values())))
    found: dict[str, str] = {}
    for path, mine in own.items():
        for name in mine:
            if files[name] <= SPELLED_FILES:
                found[path] = name
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
    overview: bool = False,
) -> Hits:
    """The files the task's ``text`` describes, by their contents and paths; the
    ``seeds`` best that score at least ``floor`` of the best one seed the rest
    (``overview``: a README counts as an aggregate, as a changelog does).
    With a word ``index`` (:func:`.index.word_index`), the files it serves are
    scored from its postings, the others from ``facts``: the same hits."""
    text = _TRAILER.sub(" ", text)
    hits = Hits(mentioned=mentions(text, paths), areas=area_files(text, paths))
    query = Counter(tokenize(text))
    if not query or not paths:
        return hits
    asked = set(query)
    table: Columns | None = None
    named: Named | None = None
    if index is None:
        tfs, lengths, total, defines, in_contents = _documents(paths, facts, asked)
    else:  # (the files the index serves from their postings, the others from their facts)
        tfs, lengths, total, defines, in_contents = _documents(index.unserved, facts, asked)
        table, served_total, named = columns(index, asked)
        total += served_total
    n = len(paths)
    average = total / n or 1.0
    df = Counter(chain.from_iterable(tfs.values()))
    scored = list(tfs)
    if table is not None:
        df.update(table.held_by())
        scored += table.paths
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in asked}
    # (each factor as the formula reads: (1 + log q) * idf * f * (k1 + 1) / (f + norm))
    weight = {w: (1 + math.log(query[w])) * idf[w] for w in asked}
    aggregates = _aggregates(scored, overview)
    del scored
    scores = _scores(tfs, lengths, average, weight, in_contents, aggregates)
    # the files the index served: their scores a column, in its rows' order
    served = table.scores(average, weight, aggregates) if table is not None else array("d")
    top = max(max(scores.values(), default=0.0), max(served, default=0.0))
    if top <= 0:
        return hits
    every = chain(scores, table.paths) if table is not None else iter(scores)
    hits.lexical = dict(
        zip(every, map(truediv, chain(scores.values(), served), repeat(top)), strict=True)
    )
    del served
    every_tf = tfs if table is None else Tfs(tfs, table)
    hits.matched = _Matched(every_tf, {w: -value for w, value in idf.items()})
    from_facts = {p: names for p, names in defines.items() if p in scores}
    hits.defines = _Defines(from_facts, named, hits.lexical)
    hits.seeds = _seeds(hits.lexical, aggregates, seeds, floor)
    return hits


def _seeds(
    lexical: dict[str, float], aggregates: set[str], seeds: int, floor: float
) -> list[tuple[str, float]]:
    """The ``seeds`` best hits at least ``floor`` of the best one (ties: by path),
    no aggregate, with their values."""
    strong = list(compress(lexical, map(ge, lexical.values(), repeat(floor))))
    if aggregates:
        strong = [p for p in strong if p not in aggregates]
    if len(strong) > seeds > 0:  # (the best are among those at least the seeds-th best value)
        least = heapq.nlargest(seeds, map(lexical.__getitem__, strong))[-1]
        strong = [p for p in strong if lexical[p] >= least]
    best = heapq.nsmallest(seeds, strong, key=lambda p: (-lexical[p], p))
    return [(p, lexical[p]) for p in best]


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
        served: Named | None = None,
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

    def holding(self, names: set[str]) -> Iterator[str]:
        """The paths that define one of ``names``, in :meth:`__iter__`'s order."""
        yield from (path for path, defined in self._names.items() if not names.isdisjoint(defined))
        served, scored = self._served, self._scored
        if served is not None and scored is not None:
            yield from (path for path in served.defining(names) if path in scored)

    def __len__(self) -> int:
        return sum(1 for _path in self)


def _public_short_first(name: str) -> tuple[bool, int, str]:
    return name.startswith("_"), len(name), name


def _aggregate(path: str) -> bool:
    """Whether ``path`` is a file that collects every change's words (a changelog)
    or every option's (a manual page)."""
    return _AGGREGATE_NAME.match(path.rpartition("/")[2]) is not None


def _aggregates(paths: Sequence[str], overview: bool = False) -> set[str]:
    """The paths :func:`_aggregate` accepts (one search over all their names); with
    ``overview``, the READMEs too."""
    found = {p for p in paths if _OVERVIEW_NAME.match(p.rpartition("/")[2])} if overview else set()
    bases = list(map(itemgetter(2), map(str.rpartition, paths, repeat("/"))))
    names = "\n".join(bases)
    if _none_aggregate(names) or _AGGREGATE_NAME_IN.search(names) is None:
        return found
    if names.count("\n") != len(paths) - 1:  # (a name holding a line break)
        return found | {path for path in paths if _aggregate(path)}
    # (the names found where they are among all of them: no name searched again)
    starts = [0, *accumulate(map(add, map(len, bases), repeat(1)))]
    lines = (bisect_right(starts, m.start()) - 1 for m in _AGGREGATE_NAME_IN.finditer(names))
    return found | {paths[line] for line in lines}


def _none_aggregate(names: str) -> bool:
    """Whether no name of ``names`` (one a line) can be an aggregate's, by what each
    such name holds (:data:`_AGGREGATE_PARTS`, :data:`_MANUAL_END`): a few scans
    in C where the search of every line for the pattern costs 20 ms at 30,000 files.
    ASCII only (ignoring case, a non-ASCII letter can match an ASCII one: the Kelvin
    sign a k)."""
    if not names.isascii():
        return False
    lowered = names.lower()
    if any(part in lowered for part in _AGGREGATE_PARTS):
        return False
    return _MANUAL_END.search(lowered) is None


def similar_commits(
    text: str,
    subjects: Sequence[str],
    history: Sequence[Sequence[str]],
    *,
    count: int = 20,
    half_life: float = 500.0,
    floor: float = 0.3,
    spread: int = 0,
) -> dict[str, float]:
    """The files changed by the ``count`` past commits whose subjects best match
    ``text`` (BM25, recency-decayed with ``half_life`` commits), each file's value
    a noisy OR of those commits' matches. A match counts against the best one, or
    against ``floor`` of what a subject of average length holding each of the
    text's words once would score, whichever is more: a task no past commit is
    much like (its best match is one common word, ``server``) lifts their files
    little. A commit of more than ``spread`` files (0: any) gives each ``spread``
    over their count of its match: the more files a like commit changed, the less
    each is likely to be one the task needs. ``subjects[i]`` is the subject of the
    commit that changed ``history[i]``."""
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
    # (such a subject scores each word's idf: (k1 + 1) / (1 + k1) at f = 1)
    top = max(matches[0][0], floor * math.fsum(idf.values()))
    missed: dict[str, float] = {}
    for score, age in matches[:count]:
        files = history[age] if age < len(history) else ()
        share = score / top * (spread / len(files) if 0 < spread < len(files) else 1)
        for path in files:
            missed[path] = missed.get(path, 1.0) * (1.0 - share)
    return {path: 1.0 - value for path, value in missed.items()}
