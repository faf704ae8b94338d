"""Ranking's word index of a tree's files, kept by tree id: a new task scores only
the files that hold its words, and decodes the facts of no other blob.

Lexical scoring (:mod:`.retrieval`) needs, per asked word, the files whose
contents, path or defined names hold it. Asking every file's facts that
question costs a Python loop over the whole tree (and decoding every blob's
facts first); the index turns it around: word -> postings ``(file, count)``,
kept for the words of contents, of paths and of defined names (each name's
postings say which name), with each file's blob id and lengths. Each word's
postings are kept as encoded bytes and decoded only when the word is asked; a
kept index's buckets of words are read from its file when a word of theirs is
asked (the file is read once, a megabyte at a time, to check its CRC; a trailer
says where its files' columns and each bucket lie), so a task holds its files'
paths, blob ids and lengths, not the whole index (nor a mapping of it).

It is derived and disposable like :mod:`.listings`: kept at
``<common dir>/hydrate/rank-index/<tree id>`` (:mod:`.kept`: how the file is
written, checked and read back).

An index answers for a path only while the path's blob is the one it was
built from: the others (a tree k files away, a path it never saw, a modified
work-tree file) are scored from their facts, so any kept index serves any
tree, in work proportional to the difference. When it serves too few of the
candidates, :func:`.kept.word_index` gives none and the caller builds a new
one (:mod:`.indexing`) and keeps it (:func:`.kept.keep`, or
:func:`.kept.keep_streamed` as it is encoded).
"""

from __future__ import annotations

import os
import sys
import weakref
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from operator import eq, itemgetter
from typing import Final, NamedTuple, TypeAlias, cast

import msgspec

__all__ = [
    "BODY",
    "HEADER",
    "FileTable",
    "IndexFile",
    "IndexFiles",
    "Served",
    "WordIndex",
    "array_header",
]

#: The first line of a kept index; another (an older layout, stemmer or rule of defined
#: names) is a miss.
#: The second is the CRC-32 of the rest, in hex: a file that does not match it is
#: a miss too (a flipped bit would decode, and rank otherwise than the facts). Then
#: the body (:class:`_Layout`), then its trailer (:class:`_Trailer`) and the
#: trailer's length (:data:`_LENGTH`).
HEADER: Final = b"# git-hydrate rank-index 8\n"
_CHECK: Final = len(b"01234567\n")


class _Layout(msgspec.Struct, array_like=True):
    """The encoded index: per file (by position) its path, blob id (``""``: facts
    unknown, never served), count of path words and of content words; per word the
    encoded postings of contents and paths (``file, count, file, count...`` as
    little-endian 32-bit integers in one bytes value) and of defined names
    (``[[file, name, count]...]``), in three tables of buckets (a word is in bucket
    ``crc32(word) % buckets``; each bucket a map of word to postings)."""

    paths: list[str]
    oids: list[str]
    path_lengths: list[int]
    lengths: list[int]
    terms: list[msgspec.Raw]
    path_words: list[msgspec.Raw]
    names: list[msgspec.Raw]


#: Words per bucket of a table, about: a word's postings are found by decoding its
#: bucket alone (of a 30,000-file tree's 150,000 words, most named once, a Python
#: object each would cost more than the search they save).
_BUCKET: Final = 64

_decoder: Final = msgspec.msgpack.Decoder(_Layout)
_bucket: Final = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])
_bytes: Final = msgspec.msgpack.Decoder(bytes)
_named: Final = msgspec.msgpack.Decoder(list[tuple[int, str, int]])
_encoder: Final = msgspec.msgpack.Encoder()


def _decoded(data: bytes | bytearray | memoryview) -> _Layout | None:
    """The layout of an index's bytes (its tables' buckets views of them), if sound."""
    try:
        layout = _decoder.decode(data)
    except (msgspec.DecodeError, ValueError):
        return None
    n = len(layout.paths)
    if not len(layout.oids) == len(layout.path_lengths) == len(layout.lengths) == n:
        return None
    return layout


def array_header(n: int) -> bytes:
    """The msgpack header of an array of ``n`` items (the shortest form, as the
    encoder writes it)."""
    if n < 16:
        return bytes((0x90 | n,))
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


#: A kept index's body (its layout) starts after its two lines.
BODY: Final = len(HEADER) + _CHECK

#: An index's files, by position: paths, blob ids, counts of path and content words.
#: (The counts of content words as an ``array``: most are above 256, a Python int each in a list.)
IndexFiles: TypeAlias = tuple[list[str], list[str], Sequence[int], Sequence[int]]


class IndexFile:
    """A kept index's file, open for reading its buckets (closed with the last
    index that reads it; replaced meanwhile, it is still the file it was)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size  # (size: of the body)
        weakref.finalize(self, os.close, fd)

    def read(self, start: int, end: int) -> bytes:
        """The body's bytes from ``start`` to ``end``."""
        return os.pread(self.fd, end - start, BODY + start)


class FileTable:
    """One table's buckets, read from a kept index's file when asked (``starts``:
    where each bucket starts in the body, and where the last ends)."""

    def __init__(self, file: IndexFile, starts: array[int]) -> None:
        self._file, self.starts = file, starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, i: int) -> bytes:
        return self._file.read(self.starts[i], self.starts[i + 1])


#: One table's buckets: held (as parts of the index's bytes) or read when asked.
_Table: TypeAlias = "list[msgspec.Raw] | FileTable"


class WordIndex:
    """Postings of the words of a set of files (see the module's docstring)."""

    def __init__(
        self,
        files: IndexFiles,
        tables: list[_Table],
        data: bytes | bytearray | memoryview | list[bytes] | IndexFile,
        positions: dict[str, int] | None = None,
    ) -> None:
        self._files = files
        self._tables = tables
        #: What the tables are views of, or the parts they are, or the file they are read from.
        self._data = data
        self._positions = positions
        self._buckets: dict[tuple[int, int], dict[str, msgspec.Raw]] = {}

    @classmethod
    def of_parts(
        cls,
        head: list[bytes],
        files: IndexFiles,
        tables: Sequence[tuple[bytes, list[bytes]]],
        positions: dict[str, int] | None = None,
    ) -> WordIndex:
        """The index whose encoding is ``head`` then each table's header and buckets,
        held as those parts: not decoded again (a first task's paths, blob ids and
        lengths would be held twice), nor joined (one buffer the size of the index,
        beside the tables it was encoded from). ``files`` are the paths, blob ids,
        path and content lengths ``head`` encodes; ``positions`` each path's
        position (made when asked if not given)."""
        parts = list(head)
        for header, buckets in tables:
            parts.append(header)
            parts += buckets
        raws: list[_Table] = [[msgspec.Raw(b) for b in buckets] for _header, buckets in tables]
        return cls(files, raws, parts, positions)

    @property
    def files(self) -> IndexFiles:
        """The files indexed: their paths, blob ids, path and content lengths."""
        return self._files

    def kept_file(self) -> tuple[IndexFile, list[array[int]]] | None:
        """The file this index is read from and where each table's buckets lie in
        it, if it is read from a kept file."""
        data, tables = self._data, self._tables
        if not isinstance(data, IndexFile) or not all(isinstance(t, FileTable) for t in tables):
            return None
        return data, [cast(FileTable, table).starts for table in tables]

    @property
    def paths(self) -> list[str]:
        """The files indexed, by position."""
        return self._files[0]

    @property
    def path_lengths(self) -> Sequence[int]:
        """Each file's count of path words, by position."""
        return self._files[2]

    @property
    def lengths(self) -> Sequence[int]:
        """Each file's count of content words (0: binary or unknown), by position."""
        return self._files[3]

    def encode(self) -> bytes | bytearray | memoryview:
        """The index as kept on disk (after :data:`HEADER`)."""
        data = self._data
        if isinstance(data, IndexFile):
            return data.read(0, data.size)
        return b"".join(data) if isinstance(data, list) else data

    def chunks(self) -> list[bytes | bytearray | memoryview]:
        """:meth:`encode`'s bytes in parts, as they are held (not joined)."""
        data = self._data
        if isinstance(data, IndexFile):
            return [self.encode()]
        return list(data) if isinstance(data, list) else [data]

    def parts(self) -> tuple[list[bytes], list[list[bytes]]]:
        """:meth:`encode`'s bytes as :func:`.kept.keep_streamed` takes them: the head (the
        array header, each files' column encoded), then each table's header and
        buckets: those it is held as (:meth:`of_parts`), else encoded again."""
        data = self._data
        if isinstance(data, list):  # (not copied, nor its columns encoded twice)
            at = len(data) - sum(1 + len(table) for table in self._tables)
            held_head, held_tables = data[:at], []
            for table in self._tables:
                held_tables.append(data[at : at + 1 + len(table)])
                at += 1 + len(table)
            return held_head, held_tables
        head = [array_header(7), *(_encoder.encode(list(column)) for column in self._files)]
        tables = [
            [array_header(len(table)), *(bytes(table[i]) for i in range(len(table)))]
            for table in self._tables
        ]
        return head, tables

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> WordIndex | None:
        """An index from :meth:`encode`'s bytes; ``None`` if they do not decode."""
        layout = _decoded(data)
        if layout is None:
            return None
        files = (layout.paths, layout.oids, layout.path_lengths, layout.lengths)
        return cls(files, [layout.terms, layout.path_words, layout.names], data)

    def serving(
        self, paths: Iterable[str], oids: Mapping[str, str]
    ) -> tuple[bytearray, list[str]]:
        """Which files the index answers for among ``paths`` (a flag per position:
        the path is asked and its blob, ``oids[path]``, is the one indexed), and the
        paths it does not answer for, in the order given."""
        blobs = self._files[1]
        paths = list(paths)
        if paths == list(oids) and all(oids.values()):
            # the paths asked are those of ``oids``: each position's flag at once, without
            # a step per path; when every path asked is served, none is left
            asked = list(map(oids.get, self.paths))
            live = bytearray(map(eq, asked, blobs))
            if live.count(1) == len(paths):
                if len(paths) == len(blobs):
                    # each blob id is the caller's, equal: its own (decoded from a kept
                    # file: 30,000 strings at 30,000 files) are freed; not when the index
                    # holds files not asked, whose ids the caller does not have
                    self._files = (self.paths, cast(list[str], asked), *self._files[2:])
                return live, []
        if self._positions is None:
            self._positions = {path: i for i, path in enumerate(self.paths)}
        positions = self._positions
        live = bytearray(len(blobs))
        unserved: list[str] = []
        for path in paths:
            i = positions.get(path)
            if i is not None and blobs[i] and blobs[i] == oids.get(path):
                live[i] = 1
            else:
                unserved.append(path)
        return live, unserved

    def terms(self, word: str) -> array[int]:
        """``[file, count, ...]`` of the files whose contents hold ``word``."""
        return self._postings(self._find(0, word))

    def path_words(self, word: str) -> array[int]:
        """``[file, count, ...]`` of the files whose paths hold ``word``."""
        return self._postings(self._find(1, word))

    def names(self, word: str) -> list[tuple[int, str, int]]:
        """``(file, name, count)`` of each defined name whose words hold ``word``."""
        raw = self._find(2, word)
        try:
            found = _named.decode(raw) if raw is not None else []
        except (msgspec.DecodeError, ValueError):
            return []  # (damaged: a miss, never an error)
        files = list(map(itemgetter(0), found))  # (checked in C: 30,000 names a word)
        return found if not files or 0 <= min(files) <= max(files) < len(self.paths) else []

    def _find(self, which: int, word: str) -> msgspec.Raw | None:
        """``word``'s encoded postings in the ``which``-th table, if any."""
        table = self._tables[which]
        if not len(table):
            return None
        key = (which, zlib.crc32(word.encode("utf-8", "surrogatepass")) % len(table))
        bucket = self._buckets.get(key)
        if bucket is None:
            try:
                bucket = self._buckets[key] = _bucket.decode(table[key[1]])
            except (msgspec.DecodeError, ValueError, OSError):
                bucket = self._buckets[key] = {}  # (damaged: a miss, never an error)
        return bucket.get(word)

    def _postings(self, raw: msgspec.Raw | None) -> array[int]:
        found = array("I")
        try:
            found.frombytes(_bytes.decode(raw) if raw is not None else b"")
        except (msgspec.DecodeError, ValueError):
            return array("I")  # (damaged: a miss, never an error)
        if sys.byteorder == "big":
            found.byteswap()
        files = found[0::2]
        if len(found) % 2 or (files and not 0 <= min(files) <= max(files) < len(self.paths)):
            return array("I")
        return found


class Served(NamedTuple):
    """An index, which of its files it serves (a flag per position) and the paths it
    leaves to their facts."""

    postings: WordIndex
    live: bytearray
    unserved: list[str]
