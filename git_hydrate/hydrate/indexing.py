"""Building a tree's word index (:mod:`.index`) while its blobs are read.

A first task on a tree reads every blob, and ranking then needs the index of
the whole tree. :class:`IndexBuilder` takes each file's facts as reading learns
them and appends its postings at once (per word, compact arrays: 4 bytes a
number; a word met in one file only, one ``bytes``), so no blob's facts are
kept as objects, and :meth:`IndexBuilder.finish` encodes the tables one bucket
at a time into one buffer, freeing what it has encoded as it goes.

The bytes are those of an index built from every file's facts in path order
(:func:`build`, the reference): per word its postings by file position; the
words of a bucket in the order of the file that first holds them (as that
file's facts list them). When files are fed out of path order (a blob read
through git after the work tree's, a second path of a blob, facts taken from
the cache), each touched word's postings are sorted by position at the end:
the same postings; only the order of words within a bucket may then differ.
"""

from __future__ import annotations

import heapq
import struct
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final, TypeAlias

import msgspec

from ..store import Repository
from .index import WordIndex, array_header
from .kept import keep_streamed
from .terms import BlobFacts, defines_names, paths_words, symbol_words

__all__ = ["IndexBuilder", "SortedPaths", "Split", "build"]

#: Words per bucket of a table, about (see :class:`.index._Layout`).
_BUCKET: Final = 64
#: One posting ``(file, count)`` in the machine's order (the file's is little-endian).
_PAIR: Final = struct.Struct("=II").pack
_encoder: Final = msgspec.msgpack.Encoder()
_named_decoder: Final = msgspec.msgpack.Decoder(list[tuple[int, str, int]])

#: The words of one defined name (:func:`.terms.symbol_words`).
Split: TypeAlias = tuple[str, ...]
#: A word's postings while building: one pair as bytes, or an array of pairs.
_Postings: TypeAlias = "bytes | array[int]"
#: The files of an index (see :class:`.index.WordIndex`): paths, blob ids, lengths.
_Files: TypeAlias = tuple[list[str], list[str], Sequence[int], Sequence[int]]


class SortedPaths:
    """The files of an index being built: ``paths``, sorted (a file's position is
    its index in them), found without a dict of every path, and the blob id of
    each file whose facts were fed (:meth:`feed`)."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        self.oids = [""] * len(self.paths)  # "": facts not fed (never served)
        self._next = 0  # (where the next path fed most likely is: files come in order)

    def position(self, path: str) -> int | None:
        """Where ``path`` is among :attr:`paths` (``None``: not there), found at once
        when files are fed in order, else by bisection (no dict of 30,000 paths)."""
        paths, at = self.paths, self._next
        if at >= len(paths) or paths[at] != path:
            at = bisect_left(paths, path)
            if at >= len(paths) or paths[at] != path:
                return None
        self._next = at + 1
        return at

    def contains(self, path: str) -> bool:
        """Whether ``path`` is one of :attr:`paths`."""
        return self.position(path) is not None

    def has(self, path: str) -> bool:
        """Whether ``path``'s facts were fed."""
        position = self.position(path)
        return position is not None and self.oids[position] != ""

    def add(
        self, path: str, oid: str, facts: BlobFacts, splits: Sequence[Split] | None = None
    ) -> None:
        """Index the file at ``path`` (one of :attr:`paths`), blob ``oid``, of ``facts``
        (``splits``: :func:`.terms.symbol_words` of each of its symbols, if known)."""
        position = self.position(path)
        if position is None:
            raise KeyError(path)
        self.feed([position], oid, facts, splits)

    def feed(
        self,
        positions: Sequence[int],
        oid: str,
        facts: BlobFacts,
        splits: Sequence[Split] | None = None,
        raw: bytes | None = None,
    ) -> None:
        """Index the files at ``positions`` (each once), blob ``oid``, of ``facts``
        (``raw``: encoded, if they are)."""
        raise NotImplementedError

    def settle(self) -> None:
        """Finish feeding what was put off, if anything was (see :meth:`has`)."""


class IndexBuilder(SortedPaths):
    """The word index of ``paths`` (sorted: a file's position is its index in
    them), built from each file's facts as they come (:meth:`add`)."""

    def __init__(self, paths: Sequence[str]) -> None:
        super().__init__(paths)
        self._lengths = [0] * len(self.paths)
        self._terms: dict[str, _Postings] = {}
        #: Per word its postings of defined names, each ``[file, name, count]`` as
        #: msgpack, one after the other; how many, for words in more than one.
        self._names: dict[str, bytes | bytearray] = {}
        self._named: dict[str, int] = {}
        self._last = -1  # (the greatest position fed: one below it is out of order)
        self._unsorted: set[str] = set()
        self._unsorted_names: set[str] = set()
        #: The later paths of a blob fed at its first (a blob at several paths), each
        #: added once the files fed reach it: added at once, every file between them
        #: would come out of order, and most words be sorted again at the end (0.1 s
        #: of a first task on mypy's 1,921 files, 101 of them a blob met before).
        self._extras: list[tuple[int, str, BlobFacts, Sequence[Split] | None]] = []
        #: The paths' word counts and table, encoded (:meth:`index_paths`).
        self._path_parts: tuple[list[int], list[bytes]] | None = None

    def feed(
        self,
        positions: Sequence[int],
        oid: str,
        facts: BlobFacts,
        splits: Sequence[Split] | None = None,
        raw: bytes | None = None,
    ) -> None:
        """:meth:`add_at` of each of ``positions`` (``raw``: unused here): the first
        now, the others when the files fed reach them (:meth:`settle` adds the rest)."""
        first, *rest = sorted(positions)
        self._add_extras(first)
        self.add_at(first, oid, facts, splits)
        for at in rest:
            heapq.heappush(self._extras, (at, oid, facts, splits))

    def settle(self) -> None:
        """Add every file put off (:meth:`feed`): :meth:`has` then knows them all."""
        self._add_extras(None)

    def _add_extras(self, before: int | None) -> None:
        extras = self._extras
        while extras and (before is None or extras[0][0] < before):
            at, oid, facts, splits = heapq.heappop(extras)
            self.add_at(at, oid, facts, splits)

    def add_at(
        self, position: int, oid: str, facts: BlobFacts, splits: Sequence[Split] | None = None
    ) -> None:
        """:meth:`add` of the file at ``position`` (see :meth:`position`)."""
        if self.oids[position]:
            return  # (fed once)
        self.oids[position] = oid
        if not facts.text:
            return
        self._lengths[position] = facts.length
        late = position < self._last
        if not late:
            self._last = position
        terms, pair = self._terms, _PAIR
        get = terms.get
        for word, count in facts.terms.items():
            postings = get(word)
            if postings is None:
                terms[word] = pair(position, count)
            elif isinstance(postings, bytes):
                grown = terms[word] = array("I", postings)
                grown.append(position)
                grown.append(count)
            else:
                postings.append(position)
                postings.append(count)
        if facts.symbols and defines_names(self.paths[position]):
            self._add_names(position, facts.symbols, late, splits)
        if late:
            self._unsorted.update(facts.terms)

    def _add_names(
        self, position: int, symbols: Sequence[str], late: bool, splits: Sequence[Split] | None
    ) -> None:
        names, named, encode = self._names, self._named, _encoder.encode
        if splits is None or len(splits) != len(symbols):
            splits = list(map(symbol_words, symbols))
        for name, split in zip(symbols, splits, strict=True):
            for word in dict.fromkeys(split) if len(split) > 1 else split:
                entry = encode((position, name, split.count(word)))
                held = names.get(word)
                if held is None:
                    names[word] = entry
                elif isinstance(held, bytes):
                    names[word] = bytearray(held) + entry
                    named[word] = 2
                else:
                    held += entry
                    named[word] += 1
                if late:
                    self._unsorted_names.add(word)

    def finish(self) -> WordIndex:
        """The index, held (the builder is spent: its tables are freed as they are
        encoded)."""
        files, head, tables = self._parts()
        held = [(next(parts), list(parts)) for parts in tables]
        return WordIndex.of_parts(head, files, held)

    def keep(
        self, repo: Repository, tree: str, beat: Callable[[], None] | None = None
    ) -> WordIndex | None:
        """The index, kept as ``tree``'s: each bucket written as it is encoded, and
        read from the file when ranking asks it (:func:`.index.keep_streamed`;
        ``None``: it could not be written). The builder is spent. ``beat``: called
        before each part is encoded (a sign of life, :mod:`.indexer`)."""
        files, head, tables = self._parts()
        if beat is not None:
            tables = [_beating(table, beat) for table in tables]
        # (no positions: the files read are served all at once, without them)
        return keep_streamed(repo, tree, files, head, tables)

    def _parts(self) -> tuple[_Files, list[bytes], list[Iterator[bytes]]]:
        """The files table, the head of the encoding, and each table's parts (its
        header, then its buckets, encoded as they are asked)."""
        self.settle()
        self._sort_late()
        path_lengths, in_paths = self._path_parts or self._paths_encoded()
        self._path_parts = None
        head = [
            array_header(7),
            *map(_encoder.encode, (self.paths, self.oids, path_lengths, self._lengths)),
        ]
        files = (self.paths, self.oids, path_lengths, array("q", self._lengths))
        self._lengths = []
        named = self._named
        tables = [
            _table(_postings(self._terms)),
            iter(in_paths),
            _table(
                self._names,
                lambda word, held: msgspec.Raw(array_header(named.get(word, 1)) + held),
            ),
        ]
        return files, head, tables

    def index_paths(self) -> None:
        """Index the paths now, their table encoded (built after the contents, its
        words and postings as objects stacked on theirs: 3 MiB at 30,000 files)."""
        self._path_parts = self._paths_encoded()

    def _paths_encoded(self) -> tuple[list[int], list[bytes]]:
        """Each path's count of words, and the paths' table encoded (its parts)."""
        lengths, table = _path_table(self.paths)
        return lengths, list(_table(_postings(table)))

    def _sort_late(self) -> None:
        """Put the postings of the words fed out of path order in position order."""
        terms = self._terms
        for word in self._unsorted:
            postings = terms[word]
            if type(postings) is array:
                pairs = sorted(zip(postings[0::2], postings[1::2], strict=True))
                terms[word] = array("I", [n for pair in pairs for n in pair])
        names, named = self._names, self._named
        for word in self._unsorted_names:
            held = names[word]
            if type(held) is bytes:
                continue  # (one posting)
            entries = _named_decoder.decode(array_header(named[word]) + held)
            entries.sort(key=itemgetter(0))  # (stable: a file's own order is kept)
            names[word] = bytearray(b"".join(map(_encoder.encode, entries)))
        self._unsorted.clear()
        self._unsorted_names.clear()


def _path_table(paths: Sequence[str]) -> tuple[list[int], dict[str, _Postings]]:
    """Each path's count of words, and per word the paths holding it (in order)."""
    lengths: list[int] = []
    table: dict[str, _Postings] = {}
    get, pair = table.get, _PAIR
    for position, own in enumerate(paths_words(paths)):
        lengths.append(len(own))
        for word in dict.fromkeys(own) if len(own) > 1 else own:
            postings = get(word)
            if postings is None:
                table[word] = pair(position, own.count(word))
            elif isinstance(postings, bytes):
                grown = table[word] = array("I", postings)
                grown += array("I", (position, own.count(word)))
            else:
                postings.append(position)
                postings.append(own.count(word))
    return lengths, table


def _postings(table: dict[str, _Postings]) -> dict[str, _Postings]:
    """``table`` with each word's postings as the file keeps them (little-endian
    32-bit integers): as they are on a little-endian machine."""
    if sys.byteorder == "big":
        for word, postings in table.items():
            swapped = array("I", postings)
            swapped.byteswap()
            table[word] = swapped
    return table


def _table(
    table: dict[str, Any], raw: Callable[[str, Any], msgspec.Raw] | None = None
) -> Iterator[bytes]:
    """``table`` encoded as buckets of about :data:`_BUCKET` words (a word in bucket
    ``crc32(word) % buckets``), each word's postings as they are (an array as its
    bytes) or, with ``raw``, as ``raw(word, postings)`` encodes them: the table's
    array header, then each bucket's bytes, encoded as they are asked. A bucket
    holds its words last met first for postings, first met first with ``raw`` (as
    the reference build did). ``table`` is emptied as it is encoded."""
    count = max(1, len(table) // _BUCKET)
    buckets: list[list[str]] = [[] for _ in range(count)]
    for word in table if raw is not None else reversed(table):
        buckets[zlib.crc32(word.encode("utf-8", "surrogatepass")) % count].append(word)
    yield array_header(count)
    pop, encode = table.pop, _encoder.encode
    for i, words in enumerate(buckets):
        buckets[i] = []  # (each bucket's words freed with its postings)
        if raw is not None:
            yield encode({word: raw(word, pop(word)) for word in words})
            continue
        bucket = {word: pop(word) for word in words}
        for word, postings in bucket.items():
            if type(postings) is array:
                bucket[word] = memoryview(postings)
        yield encode(bucket)


def build(oids: Mapping[str, str], facts: Mapping[str, BlobFacts]) -> WordIndex:
    """The index of the files ``oids`` names (path -> blob id), from ``facts``
    (path -> the facts of its blob; a path without is indexed by its path only
    and never served)."""
    builder = IndexBuilder(sorted(oids))
    for path in builder.paths:
        known = facts.get(path)
        if known is not None:
            builder.add(path, oids[path], known)
    return builder.finish()


def _beating(parts: Iterator[bytes], beat: Callable[[], None]) -> Iterator[bytes]:
    """``parts``, with ``beat()`` called before each is made."""
    while True:
        beat()
        part = next(parts, None)
        if part is None:
            return
        yield part
