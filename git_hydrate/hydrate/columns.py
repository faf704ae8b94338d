"""The files a word index serves, scored a column per asked word. Pure: no I/O.

:func:`.retrieval.lexical_hits` scores the files a kept (or just built) word
index answers for from its postings rather than file by file: each asked word
is a column of every file's count of it (its path's words and its defined
names counted over, as :func:`.retrieval._documents` counts a file from its
facts), and BM25 is a few passes over those columns (a word few files hold:
over the rows that hold it, not every row).

At 30,000 files that all hold an asked word a column is 30,000 counts: they
are ``array`` columns (8 bytes a file), filled from the postings in C, not
dicts or lists of Python numbers, and a word's postings are dropped once
counted (issue 33: the peak memory of a task).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, compress, islice, repeat
from operator import add, gt, itemgetter, lt, mul, truediv
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


class Columns:
    """The files an index serves that hold an asked word, a row each (in index
    order), with a column per asked word: each file's count of it."""

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
        lengths = map(
            add,
            map(mul, map(path_lengths.__getitem__, self.positions), repeat(PATH_BOOST)),
            map(content_lengths.__getitem__, self.positions),
        )
        self.lengths = _array("q", lengths)
        #: Whether each file's contents hold an asked word (else its path alone does):
        #: ``None``, every file's do.
        self.held = None if held is None else bytearray(map(held.__contains__, self.positions))
        self.counts: dict[str, list[int]] = {}
        self._at: array[int] | None = None
        self._rows: dict[str, int] | None = None
        self._sorted: bool | None = None

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
        return {word: count for word, column in self.counts.items() if (count := column[row])}

    def scores(
        self, average: float, weight: Mapping[str, float], aggregates: set[str]
    ) -> array[float]:
        """Each row's BM25 score, as :func:`.retrieval._scores` gives a file's."""
        norms: dict[int, float] = {}  # (by length: many files share one)
        for length in set(self.lengths):
            norms[length] = K1 * (1 - B + B * length / average)
        # (a word a file lacks adds an exact 0.0, weights being positive: the sum,
        # exactly rounded, is the same without it; so a word no file holds is left out,
        # and a word few files hold is summed in only where it is)
        dense: list[tuple[float, list[int]]] = []
        sparse: dict[int, list[float]] = {}  # (by row: the terms of the words few hold)
        for word, column in self.counts.items():
            held = len(column) - column.count(0)
            if held * _SPARSE > len(column):
                dense.append((weight[word], column))
            elif held:
                _sparse_terms(weight[word], column, norms, self.lengths, sparse)
        scores = array("d")
        for start in range(0, len(self.paths), _BLOCK):  # (a block of rows at a time)
            lengths = self.lengths[start : start + _BLOCK]
            scores.fromlist(_block(dense, norms, lengths, start, sparse))
        if self.held is not None:
            for row in compress(range(len(scores)), map((0).__eq__, self.held)):
                scores[row] *= PATH_ONLY
        if aggregates:
            for row, path in enumerate(self.paths):
                if path in aggregates:
                    scores[row] *= AGGREGATE_SHARE
        return scores


#: Rows scored at a time: each asked word's terms of a block are Python floats.
_BLOCK: Final = 4096
#: A word held by fewer than one row in this many is scored only where it is held
#: (a ticket's hundreds of words are mostly rare: each a pass over every row cost
#: 2 s of CPU for 300 words at 30,000 files).
_SPARSE: Final = 8


def _sparse_terms(
    weight: float,
    column: list[int],
    norms: dict[int, float],
    lengths: array[int],
    into: dict[int, list[float]],
) -> None:
    """The terms of one word in the rows that hold it, by row, into ``into`` (each
    as :func:`_block` computes it)."""
    k1 = K1 + 1
    for row in compress(range(len(column)), column):
        f = column[row]
        into.setdefault(row, []).append(weight * f * k1 / (f + norms[lengths[row]]))


def _block(
    used: list[tuple[float, list[int]]],
    norms: dict[int, float],
    lengths: array[int],
    start: int,
    sparse: Mapping[int, list[float]],
) -> list[float]:
    """The scores of the rows from ``start`` (``lengths``: theirs): per word and file
    weight * f * k1 / (f + norm), as the formula reads, summed exactly rounded, with
    the terms ``sparse`` holds for a row (the words few rows hold)."""
    end = start + len(lengths)
    rows = list(map(norms.__getitem__, lengths))
    k1 = K1 + 1
    terms = [
        list(
            map(
                truediv,
                map(mul, map(mul, repeat(weight), column[start:end]), repeat(k1)),
                map(add, column[start:end], rows),
            )
        )
        for weight, column in used
    ]
    if not sparse:
        if not terms:
            return [0.0] * len(lengths)
        return list(map(math.fsum, zip(*terms, strict=True)))
    each = zip(*terms, strict=True) if terms else repeat((), len(lengths))
    found = map(sparse.get, range(start, end), repeat(()))
    return list(map(math.fsum, map(chain, each, found)))


def columns(served: Served, asked: set[str]) -> tuple[Columns, int, Named]:
    """The files ``served`` answers for that hold an asked word, as columns; the
    sum of the lengths of every file it serves; and per file its defined names
    that hold an asked word (in a file whose contents hold one), found when asked."""
    index, live = served.postings, served.live
    every = all(live)  # (a new task on a known tree: no posting to filter)
    total = PATH_BOOST * sum(compress(index.path_lengths, live))
    total += sum(compress(index.lengths, live))
    n = len(index.paths)
    # each word's postings, of the files served, as two arrays (files, counts): a dict
    # each is made one word at a time (at 30,000 files, 2 MiB a word)
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
    everyone = array("I", table.positions) if table.whole else table.positions
    for word in asked:
        files, counts = by_contents.pop(word)
        if files == everyone:  # (every row, in order)
            column = counts.tolist()
        else:  # (each posting put in its row: a word few files hold costs what they are)
            column = [0] * len(table.positions)
            for row, times in zip(table.rows_of(files), counts, strict=True):
                column[row] = times
        del files, counts
        files, counts = by_path[word]
        for row, times in zip(table.rows_of(files), counts, strict=True):
            column[row] += times
        table.counts[word] = column
    del everyone
    return table, total, _names(index, held, table)


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


def _names(index: WordIndex, held: set[int] | None, table: Columns) -> Named:
    """Count into ``table`` the asked words of the names the files of ``held``
    (``None``: every file) define (their postings, :meth:`.index.WordIndex.names`);
    those names by file."""
    named: dict[str, tuple[array[int], list[str]]] = {}
    for word, column in table.counts.items():
        found = index.names(word)
        files = list(map(itemgetter(0), found))
        if held is not None and not held.issuperset(files):
            # (a name counts in a file whose contents hold one)
            found = [entry for entry in found if entry[0] in held]
            files = list(map(itemgetter(0), found))
        if not found:
            continue
        if any(map(gt, files, islice(files, 1, None))):  # (kept in file order; else sorted)
            found.sort(key=itemgetter(0))
            files = list(map(itemgetter(0), found))
        times = list(map(itemgetter(2), found))
        named[word] = (_array("I", files), list(map(itemgetter(1), found)))
        del found
        at = table.rows_of(files)
        if max(times) == 1:
            for row in at:
                column[row] += SYMBOL_BOOST
        else:
            for row, count in zip(at, times, strict=True):
                column[row] += count * SYMBOL_BOOST
    return Named(named, table, index.paths)


class Named(Mapping[str, list[str]]):
    """Per file an index serves, its defined names that hold an asked word, found
    when asked (of 30,000 files, only the reasons of those kept are spelled): from
    each asked word's postings of names (the files, in order, and the names), by
    the file's first posting (a dict per word, made when first asked)."""

    def __init__(
        self, named: dict[str, tuple[array[int], list[str]]], table: Columns, paths: list[str]
    ) -> None:
        self._named, self._table, self._paths = named, table, paths
        self._first: list[tuple[dict[int, int], array[int], list[str]]] | None = None

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
        if self._first is None:
            self._first = [
                (
                    dict(zip(reversed(files), range(len(files) - 1, -1, -1), strict=True)),
                    files,
                    words,
                )
                for files, words in self._named.values()
            ]
        names: dict[str, None] = {}
        for first, files, words in self._first:
            at = first.get(i)  # (the file's postings of a word are together, from there)
            while at is not None and at < len(files) and files[at] == i:
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
