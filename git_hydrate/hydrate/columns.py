"""The files a word index serves, scored a column per asked word. Pure: no I/O.

:func:`.retrieval.lexical_hits` scores the files a kept (or just built) word
index answers for from its postings rather than file by file: each asked word
is a column of the files that hold it (in its contents, its path's words or its
defined names, counted over as :func:`.retrieval._documents` counts a file from
its facts) with their counts, and BM25 is a few passes over those columns.

A column holds only the rows that hold its word, in row order (two arrays,
4 bytes a row), unless one row in :data:`_SPARSE` or more does: then a count per
row, 0 where it is not. A ticket's thousands of words are mostly in a few files
each, and a count of every file per word cost asked words x files (a ticket of
3,000 distinct words at 30,000 files: 6.3 s of CPU and 800 MiB for ``add-tree
--prompt``; 1.6 s and 115 MiB so). A word's postings are dropped once counted
(issue 33: the peak memory of a task).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, compress, islice, repeat
from operator import add, gt, itemgetter, lt, mul, sub, truediv
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .index import Served, WordIndex

__all__ = ["Columns", "Named", "Tfs", "columns"]

#: How many times a path's words and a file's defined names count, beside its contents.
PATH_BOOST: Final = 2
SYMBOL_BOOST: Final = 2
#: A file whose contents hold none of the task's words, only its path does, keeps
#: this share of its score: path words alone must not buy the budget.
PATH_ONLY: Final = 0.4
K1: Final = 1.2
B: Final = 0.75
#: The share of its match a file that collects every change's words keeps.
AGGREGATE_SHARE: Final = 0.3


def _array(typecode: str, values: Iterable[int]) -> array[int]:
    """An ``array`` of ``values`` (made from a list: from an iterator, each value is
    appended on its own, twice as slow)."""
    found = array(typecode)
    found.fromlist(list(values))
    return found


def _consume(values: Iterable[object]) -> None:
    """Run ``values`` out (each a call made for its effect, in C)."""
    deque(values, 0)


#: A word's column: the rows that hold it, in order, and its count in each; or, a
#: word many rows hold, ``None`` and a count per row (0 where it is not).
Column = tuple["array[int] | None", "array[int]"]


class Columns:
    """The files an index serves that hold an asked word, a row each (in index
    order), with a column per asked word: the rows that hold it and its counts (a
    word many rows hold: its count in each row)."""

    def __init__(self, index: WordIndex, held: set[int] | None, found: set[int] | None) -> None:
        n = len(index.paths)
        #: Whether every file the index holds is a row (its row is then its position).
        self.whole = found is None or len(found) == n
        self.positions: Sequence[int] = (
            range(n) if self.whole else _array("I", sorted(found or ()))
        )
        self.paths: list[str] = (
            index.paths if self.whole else list(map(index.paths.__getitem__, self.positions))
        )
        path_lengths, content_lengths = index.path_lengths, index.lengths
        if not self.whole:
            path_lengths = list(map(path_lengths.__getitem__, self.positions))
            content_lengths = list(map(content_lengths.__getitem__, self.positions))
        lengths = map(add, map(mul, path_lengths, repeat(PATH_BOOST)), content_lengths)
        self.lengths = _array("q", lengths)
        #: Whether each file's contents hold an asked word (else its path alone does):
        #: ``None``, every file's do.
        self.held = None if held is None else bytearray(map(held.__contains__, self.positions))
        self.columns: dict[str, Column] = {}
        self._at: array[int] | None = None
        self._rows: dict[str, int] | None = None
        self._sorted: bool | None = None
        #: Per row that holds one, the words of the columns of the rows that hold them;
        #: the columns of a count per row (both made when first asked: a row is not
        #: asked every word; a list per row of 30,000 was 2 MiB more at the peak).
        self._by_row: dict[int, list[str]] | None = None
        self._every: list[tuple[str, array[int]]] = []

    def add(self, word: str, parts: list[tuple[array[int], array[int]]], unique: int) -> None:
        """``word``'s column, of the postings ``parts`` (each files and counts, in file
        order; the first ``unique`` each file once, as the index's are), a file's
        counts summed; a word many rows hold: a count per row (0 where it is not)."""
        held = [part for part in parts if part[0]]
        n = len(self.positions)
        if not held or sum(len(files) for files, _counts in held) * _SPARSE < n:
            # (each file once, in order: the index's postings are, and bisection needs it)
            first = bool(held) and any(held[0] is part for part in parts[:unique])
            alone = first and len(held) == 1 and _increasing(held[0][0])
            files, counts = held[0] if alone else _summed(held, first)
            rows = files if self.whole else _array("I", self.rows_of(files))
            self.columns[word] = (rows, counts)
            return
        (files, counts), *more = held
        if held[0] is not parts[0]:  # (no posting of its contents: each part added)
            dense, more = [0] * n, held
        elif len(files) == n:  # (every row, in order)
            dense = counts.tolist()
        else:
            dense = [0] * n
            for row, count in zip(self.rows_of(files), counts, strict=True):
                dense[row] = count
        for files, counts in more:
            for row, count in zip(self.rows_of(files), counts, strict=True):
                dense[row] += count
        self.columns[word] = (None, array("I", dense))

    def held_by(self) -> dict[str, int]:
        """Per asked word, how many rows hold it."""
        return {
            word: len(counts) - counts.count(0) if rows is None else len(rows)
            for word, (rows, counts) in self.columns.items()
        }

    def rows_of(self, files: Iterable[int]) -> Iterable[int]:
        """The rows of the files at ``files`` (positions in the index; each a row)."""
        if self.whole:
            return files
        if self._at is None:
            # (by position: an array of rows, not a dict of 30,000 ints)
            at = self._at = array("q", bytes(8 * (max(self.positions, default=-1) + 1)))
            for row, position in enumerate(self.positions):
                at[position] = row
        return map(self._at.__getitem__, files)

    def row(self, path: str) -> int | None:
        """``path``'s row (``None``: not here): found by bisection when the paths are
        sorted (a tree's, as git lists them, mostly are), else by a dict made when
        first asked (30,000 files: 2 MiB, for the reasons of the few kept)."""
        paths = self.paths
        if self._sorted is None:
            self._sorted = all(map(lt, paths, islice(paths, 1, None)))
        if self._sorted:
            at = bisect_left(paths, path)
            return at if at < len(paths) and paths[at] == path else None
        if self._rows is None:
            self._rows = dict(zip(paths, range(len(paths)), strict=True))
        return self._rows.get(path)

    def tf(self, path: str) -> dict[str, int] | None:
        """The asked words of ``path`` with their counts (``None``: not here)."""
        row = self.row(path)
        if row is None:
            return None
        if self._by_row is None:  # (the words of each row, of all the columns, once)
            by_row: defaultdict[int, list[str]] = defaultdict(list)
            for word, (rows, counts) in self.columns.items():
                if rows is None:
                    self._every.append((word, counts))
                else:
                    _consume(map(list.append, map(by_row.__getitem__, rows), repeat(word)))
            self._by_row = dict(by_row)
        found = {word: count for word, counts in self._every if (count := counts[row])}
        for word in self._by_row.get(row, ()):
            rows, counts = self.columns[word]
            found[word] = counts[bisect_left(rows or (), row)]
        return found

    def scores(
        self, average: float, weight: Mapping[str, float], aggregates: set[str]
    ) -> array[float]:
        """Each row's BM25 score, as :func:`.retrieval._scores` gives a file's."""
        norms: dict[int, float] = {}  # (by length: many files share one)
        for length in set(self.lengths):
            norms[length] = K1 * (1 - B + B * length / average)
        # (a word a file lacks adds an exact 0.0, weights being positive: the sum,
        # exactly rounded, is the same without it; so a row sums the terms of the
        # words it holds, and of the words many rows hold, with their 0.0)
        every = [
            (weight[word], counts) for word, (rows, counts) in self.columns.items() if rows is None
        ]
        some = [
            (weight[word], rows, counts)
            for word, (rows, counts) in self.columns.items()
            if rows is not None and rows
        ]
        scores = array("d")
        for start in range(0, len(self.paths), _BLOCK):  # (a block of rows at a time)
            end = min(start + _BLOCK, len(self.paths))
            scores.fromlist(_block(every, some, norms, self.lengths, start, end))
        if self.held is not None:
            for row in compress(range(len(scores)), map((0).__eq__, self.held)):
                scores[row] *= PATH_ONLY
        if aggregates:
            for row, path in enumerate(self.paths):
                if path in aggregates:
                    scores[row] *= AGGREGATE_SHARE
        return scores


#: Rows scored at a time: the terms of a block are Python floats.
_BLOCK: Final = 4096


def _terms(weight: float, counts: Sequence[int], norms: Iterable[float]) -> Iterator[float]:
    """weight * f * k1 / (f + norm) of each count f, as the formula reads."""
    k1 = K1 + 1
    return map(
        truediv, map(mul, map(mul, repeat(weight), counts), repeat(k1)), map(add, counts, norms)
    )


def _block(
    every: list[tuple[float, array[int]]],
    some: list[tuple[float, array[int], array[int]]],
    norms: dict[int, float],
    lengths: array[int],
    start: int,
    end: int,
) -> list[float]:
    """The scores of the rows from ``start`` to ``end``: per row the terms of the
    columns of a count per row (``every``) and of the words it holds of the others
    (``some``: the rows of each in the block), summed exactly rounded."""
    rows = list(map(norms.__getitem__, lengths[start:end]))
    terms = [list(_terms(weight, counts[start:end], rows)) for weight, counts in every]
    each: Iterable[Iterable[float]] = zip(*terms, strict=True) if terms else repeat((), len(rows))
    if some:
        held: list[list[float]] = [[] for _row in rows]
        for weight, at, counts in some:
            low, high = bisect_left(at, start), bisect_left(at, end)
            if low == high:
                continue
            here, f = at[low:high], counts[low:high]
            found = _terms(weight, f, map(norms.__getitem__, map(lengths.__getitem__, here)))
            put = map(held.__getitem__, map(sub, here, repeat(start)))
            _consume(map(list.append, put, found))
        each = map(chain, each, held)
    return list(map(math.fsum, each))


def columns(served: Served, asked: set[str]) -> tuple[Columns, int, Named]:
    """The files ``served`` answers for that hold an asked word, as columns; the
    sum of the lengths of every file it serves; and per file its defined names
    that hold an asked word (in a file whose contents hold one), found when asked."""
    index, live = served.postings, served.live
    every = all(live)  # (a new task on a known tree: no posting to filter)
    total = PATH_BOOST * sum(compress(index.path_lengths, live))
    total += sum(compress(index.lengths, live))
    n = len(index.paths)
    # each word's postings, of the files served, as two arrays (files, counts)
    by_path = {word: _live(index.path_words(word), live, every, PATH_BOOST) for word in asked}
    by_contents = {word: _live(index.terms(word), live, every, 1) for word in asked}
    # the files whose contents hold an asked word (``None``: every file's; a word every
    # file holds says so at once, postings being one a file)
    held: set[int] | None = None
    if not (every and any(len(files) == n for files, _counts in by_contents.values())):
        held = set().union(*(files for files, _counts in by_contents.values()))
    found = None if held is None else held.union(*(files for files, _c in by_path.values()))
    table = Columns(index, held, found)
    del found
    named: dict[str, tuple[array[int], list[str]]] = {}
    for word in asked:
        parts = [by_contents.pop(word), by_path.pop(word)]
        names = _names(index, word, held)
        if names is not None:
            files, spelled, times = names
            named[word] = (files, spelled)
            parts.append((files, times))
        table.add(word, parts, 2)
        del parts, names
    return table, total, Named(named, table, index.paths)


def _increasing(files: array[int]) -> bool:
    """Whether ``files`` are in order, each once."""
    return all(map(lt, files, islice(files, 1, None)))


def _summed(
    held: list[tuple[array[int], array[int]]], first: bool
) -> tuple[array[int], array[int]]:
    """The files of ``held`` (each files and counts; ``first``: the first part each
    file once) in order, with the sum of their counts in each."""
    summed: dict[int, int] = dict(zip(*held[0], strict=True)) if first else {}
    for files, counts in held[1:] if first else held:
        for file, count in zip(files, counts, strict=True):
            summed[file] = summed.get(file, 0) + count
    order = sorted(summed)  # (in order already unless a later part adds a file)
    return array("I", order), array("I", map(summed.__getitem__, order))


#: A word whose postings are at least one in this many rows is a count per row.
_SPARSE: Final = 8


def _live(
    postings: array[int], live: bytearray, every: bool, times: int
) -> tuple[array[int], array[int]]:
    """``postings`` (``file, count, ...``) as files and counts (each ``times``), of the
    files ``live`` flags."""
    files, counts = postings[0::2], postings[1::2]
    if not every and files:
        flags = bytes(map(live.__getitem__, files))
        files, counts = _array("I", compress(files, flags)), _array("I", compress(counts, flags))
    if times != 1 and counts:
        counts = _array("I", map(mul, counts, repeat(times)))
    return files, counts


def _names(
    index: WordIndex, word: str, held: set[int] | None
) -> tuple[array[int], list[str], array[int]] | None:
    """The postings of the names that hold ``word`` (:meth:`.index.WordIndex.names`)
    in the files of ``held`` (``None``: every file), in file order: their files,
    the names, and their counts as a column counts them (``None``: none)."""
    found = index.names(word)
    files = list(map(itemgetter(0), found))
    if held is not None and not held.issuperset(files):
        # (a name counts in a file whose contents hold one)
        found = [entry for entry in found if entry[0] in held]
        files = list(map(itemgetter(0), found))
    if not found:
        return None
    if any(map(gt, files, islice(files, 1, None))):  # (kept in file order; else sorted)
        found.sort(key=itemgetter(0))
        files = list(map(itemgetter(0), found))
    times = map(mul, map(itemgetter(2), found), repeat(SYMBOL_BOOST))
    return _array("I", files), list(map(itemgetter(1), found)), _array("I", times)


class Named(Mapping[str, list[str]]):
    """Per file an index serves, its defined names that hold an asked word, found
    when asked (of 30,000 files, only the reasons of those kept are spelled): from
    each asked word's postings of names (the files, in order, and the names), by
    the words whose names a file has (a list per file that has one, made when first asked) and
    the file's first posting of each."""

    def __init__(
        self, named: dict[str, tuple[array[int], list[str]]], table: Columns, paths: list[str]
    ) -> None:
        self._named, self._table, self._paths = named, table, paths
        self._by_file: dict[int, list[str]] | None = None

    def __getitem__(self, path: str) -> list[str]:
        names = self.named(path)
        if not names:
            raise KeyError(path)
        return names

    def named(self, path: str) -> list[str]:
        """``path``'s names (none: ``[]``, without an exception: most files asked
        define none)."""
        row = self._table.row(path)
        if row is None:
            return []
        i = self._table.positions[row]
        if self._by_file is None:  # (a file's words, not every word asked per file)
            by_file: defaultdict[int, list[str]] = defaultdict(list)
            for word, (files, _words) in self._named.items():
                _consume(map(list.append, map(by_file.__getitem__, files), repeat(word)))
            self._by_file = dict(by_file)  # (only the files that hold a name asked)
        names: dict[str, None] = {}
        for word in dict.fromkeys(self._by_file.get(i, ())):
            files, words = self._named[word]
            at = bisect_left(files, i)  # (the file's postings of a word are together)
            while at < len(files) and files[at] == i:
                names[words[at]] = None
                at += 1
        return list(names)

    def _files(self) -> set[int]:
        return set().union(*(files for files, _words in self._named.values()))

    def defining(self, names: set[str]) -> list[str]:
        """The paths that define one of ``names``, in index order (from the postings:
        not each file asked in turn)."""
        found = {
            files[at]
            for files, words in self._named.values()
            for at in compress(range(len(words)), map(names.__contains__, words))
        }
        return list(map(self._paths.__getitem__, sorted(found)))

    def __iter__(self) -> Iterator[str]:
        return map(self._paths.__getitem__, sorted(self._files()))

    def __len__(self) -> int:
        return len(self._files())


class Tfs(Mapping[str, Mapping[str, int]]):
    """Per path its counts of the asked words: of the files scored from their facts
    (a dict each) and of those the index served (from their columns, when asked)."""

    def __init__(self, tfs: Mapping[str, Mapping[str, int]], table: Columns) -> None:
        self._tfs, self._table = tfs, table

    def __getitem__(self, path: str) -> Mapping[str, int]:
        found = self._tfs.get(path)
        if found is None:
            found = self._table.tf(path)
        if found is None:
            raise KeyError(path)
        return found

    def __iter__(self) -> Iterator[str]:
        return chain(self._tfs, self._table.paths)

    def __len__(self) -> int:
        return len(self._tfs) + len(self._table.paths)
