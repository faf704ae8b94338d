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
asked (the file is mapped once, to check it and find where each bucket lies),
so a task holds its files' paths, blob ids and lengths, not the whole index.

It is derived and disposable like :mod:`.listings`: kept at
``<common dir>/hydrate/rank-index/<tree id>``, private to this user, a
missing, foreign, damaged (checked by its CRC-32) or unreadable file is a miss,
never an error;
bounded (the :data:`MAX_INDEXES` used last are kept; a use touches the file).

An index answers for a path only while the path's blob is the one it was
built from: the others (a tree k files away, a path it never saw, a modified
work-tree file) are scored from their facts, so any kept index serves any
tree, in work proportional to the difference. When it serves too few of the
candidates, :func:`word_index` gives none and the caller builds a new one
(:mod:`.indexing`) and keeps it (:func:`keep`, or :func:`keep_streamed` as it
is encoded).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import sys
import weakref
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from operator import eq
from typing import BinaryIO, Final, NamedTuple, TypeAlias, cast

import msgspec

from ..store import Repository, open_regular_fd, private_file
from ..store.tempfiles import temporary_name

__all__ = [
    "MAX_INDEXES",
    "Served",
    "Whereabouts",
    "WordIndex",
    "has_index",
    "keep",
    "keep_streamed",
    "reopen",
    "word_index",
]

#: The first line of a kept index; another (an older layout or stemmer) is a miss.
#: The second is the CRC-32 of the rest, in hex: a file that does not match it is
#: a miss too (a flipped bit would decode, and rank otherwise than the facts).
HEADER: Final = b"# git-hydrate rank-index 2\n"
_CHECK: Final = len(b"01234567\n")
#: Indexes kept at most (about the size of the blob facts of their trees each).
MAX_INDEXES: Final = 4
#: An index that would leave more than this share of the candidates to their facts
#: is not used: building one anew is then about as cheap.
_MOST_UNSERVED: Final = 0.125


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
_BODY: Final = len(HEADER) + _CHECK

#: An index's files, by position: paths, blob ids, counts of path and content words.
#: (The counts of content words as an ``array``: most are above 256, a Python int each in a list.)
_Files: TypeAlias = tuple[list[str], list[str], Sequence[int], Sequence[int]]


class _File:
    """A kept index's file, open for reading its buckets (closed with the last
    index that reads it; replaced meanwhile, it is still the file it was)."""

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size  # (size: of the body)
        weakref.finalize(self, os.close, fd)

    def read(self, start: int, end: int) -> bytes:
        """The body's bytes from ``start`` to ``end``."""
        return os.pread(self.fd, end - start, _BODY + start)


class _Kept:
    """One table's buckets, read from a kept index's file when asked (``starts``:
    where each bucket starts in the body, and where the last ends)."""

    def __init__(self, file: _File, starts: array[int]) -> None:
        self._file, self.starts = file, starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, i: int) -> bytes:
        return self._file.read(self.starts[i], self.starts[i + 1])


#: One table's buckets: held (as parts of the index's bytes) or read when asked.
_Table: TypeAlias = "list[msgspec.Raw] | _Kept"


class WordIndex:
    """Postings of the words of a set of files (see the module's docstring)."""

    def __init__(
        self,
        files: _Files,
        tables: list[_Table],
        data: bytes | bytearray | memoryview | list[bytes] | _File,
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
        files: _Files,
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
        if isinstance(data, _File):
            return data.read(0, data.size)
        return b"".join(data) if isinstance(data, list) else data

    def chunks(self) -> list[bytes | bytearray | memoryview]:
        """:meth:`encode`'s bytes in parts, as they are held (not joined)."""
        data = self._data
        if isinstance(data, _File):
            return [self.encode()]
        return list(data) if isinstance(data, list) else [data]

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
        n = len(self.paths)
        return found if all(0 <= i < n for i, _name, _count in found) else []

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


def _folder(repo: Repository) -> str:
    return os.path.join(repo.common_dir, "hydrate", "rank-index")


def _kept(folder: str) -> list[tuple[int, str]]:
    """``(last used, tree id)`` of each kept index."""
    try:
        with os.scandir(folder) as it:
            found = [(e.stat().st_mtime_ns, e.name) for e in it if len(e.name) in (40, 64)]
    except OSError:
        return []
    return sorted(found)


def _load(path: str) -> WordIndex | None:
    """The index kept at ``path``, its buckets read from the file when asked (the
    file is mapped while its CRC is checked and its layout decoded, then only its
    paths, blob ids, lengths and where each bucket lies are held)."""
    try:
        fd = open_regular_fd(path)  # (a FIFO in its place is refused, not waited on)
    except OSError:
        return None
    try:
        found = _opened(fd)
    except (OSError, ValueError, BufferError, OverflowError):
        found = None
    if found is None:
        os.close(fd)
        return None
    files, spans, size = found
    kept = _File(fd, size)
    return WordIndex(files, [_Kept(kept, starts) for starts in spans], kept)


def _opened(fd: int) -> tuple[_Files, list[array[int]], int] | None:
    """The files of the index open as ``fd``, where each table's buckets lie in its
    body, and the body's size; ``None``: not a sound index of this user's."""
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode) or not private_file(status) or status.st_size < _BODY:
        return None
    with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as view, memoryview(view) as whole:
        if bytes(whole[: len(HEADER)]) != HEADER:
            return None
        with whole[_BODY:] as body:
            if whole[len(HEADER) : _BODY] != b"%08x\n" % zlib.crc32(body):
                return None  # damaged (or cut short): built again
            layout = _decoded(body)
            if layout is None:
                return None
            lengths = array("q", layout.lengths)
            files = (layout.paths, layout.oids, layout.path_lengths, lengths)
            spans = _spans([layout.terms, layout.path_words, layout.names], body)
            del layout  # (its buckets are views of the mapping, unmapped next)
            size = len(body)
    return (files, spans, size) if spans is not None else None


def _spans(tables: list[list[msgspec.Raw]], body: memoryview) -> list[array[int]] | None:
    """Where each table's buckets start in ``body`` (and where its last ends): the
    tables are its last three values, each an array header then its buckets."""
    spans: list[array[int]] = []
    end = len(body)
    for table in reversed(tables):
        sizes = list(map(len, table))
        begin = end - sum(sizes)
        header = array_header(len(table))
        if body[begin - len(header) : begin] != header:
            return None
        spans.append(array("Q", accumulate(sizes, initial=begin)))
        end = begin - len(header)
    spans.reverse()
    return spans


def has_index(repo: Repository, tree: str) -> bool:
    """Whether an index of ``tree`` is kept (not whether it is sound)."""
    return os.path.isfile(os.path.join(_folder(repo), tree))


class Whereabouts(msgspec.Struct, array_like=True):
    """Where an index just kept (:func:`keep_streamed`) lies, for another process to
    read it (:func:`reopen`) without reading the file whole: each file's count of
    path words, where each table's buckets start in its body (and the last ends),
    the body's size, and the file's device and inode."""

    path_lengths: list[int]
    spans: list[list[int]]
    size: int
    device: int
    inode: int

    @classmethod
    def of(cls, index: WordIndex) -> Whereabouts | None:
        """Where ``index`` lies, if it is read from its kept file."""
        data, tables = index._data, index._tables
        if not isinstance(data, _File) or not all(isinstance(t, _Kept) for t in tables):
            return None
        status = os.fstat(data.fd)
        spans = [list(cast(_Kept, table).starts) for table in tables]
        return cls(list(index.path_lengths), spans, data.size, status.st_dev, status.st_ino)


def reopen(
    repo: Repository,
    tree: str,
    where: Whereabouts,
    paths: list[str],
    oids: list[str],
    lengths: Sequence[int],
) -> WordIndex | None:
    """The index kept as ``tree``'s by another process, which said ``where`` it lies
    (``paths``, ``oids``, ``lengths``: its files' paths, blob ids and counts of content
    words, as its head holds them); ``None`` if that file is no longer there."""
    try:
        fd = open_regular_fd(os.path.join(_folder(repo), tree))
    except OSError:
        return None
    status = os.fstat(fd)
    if (status.st_dev, status.st_ino, status.st_size) != (
        where.device,
        where.inode,
        _BODY + where.size,
    ) or len(where.path_lengths) != len(paths):
        os.close(fd)
        return None
    kept = _File(fd, where.size)
    files = (paths, oids, where.path_lengths, lengths)
    return WordIndex(files, [_Kept(kept, array("Q", starts)) for starts in where.spans], kept)


def word_index(
    repo: Repository, tree: str | None, paths: Sequence[str], oids: Mapping[str, str]
) -> Served | None:
    """A kept index that serves most of ``paths`` (``oids``: their blobs): ``tree``'s
    own, else the one used last; with which files it serves and the paths it leaves
    to their facts. ``None`` when none is kept or it would serve too few."""
    folder = _folder(repo)
    names = [tree] if tree else []
    names += [name for _when, name in reversed(_kept(folder)) if name != tree][:1]
    for name in names:
        path = os.path.join(folder, name)
        index = _load(path)
        if index is None:
            continue
        live, unserved = index.serving(paths, oids)
        if len(unserved) > _MOST_UNSERVED * max(len(paths), 1):
            continue
        with contextlib.suppress(OSError):
            os.utime(path)  # used last: kept longest
        return Served(index, live, unserved)
    return None


def keep(repo: Repository, tree: str, index: WordIndex) -> None:
    """Keep ``index`` as ``tree``'s, and prune past :data:`MAX_INDEXES`. Failures are
    ignored: the index only saves time."""
    folder = _folder(repo)
    with contextlib.suppress(OSError):
        chunks = index.chunks()
        crc = 0
        for chunk in chunks:
            crc = zlib.crc32(chunk, crc)
        # (a new index's parts are written as they are: no copy of them)
        body = [cast(bytes, chunk) for chunk in chunks]
        path = os.path.join(folder, tree)
        repo.replace_file(path, [HEADER, b"%08x\n" % crc, *body], private=True)
        _prune(folder, tree)


def _prune(folder: str, tree: str) -> None:
    """Remove the indexes used longest ago but :data:`MAX_INDEXES` (``tree``'s kept)."""
    kept = [name for _when, name in _kept(folder) if name != tree]
    for name in kept[: max(len(kept) - MAX_INDEXES + 1, 0)]:
        os.unlink(os.path.join(folder, name))


def keep_streamed(
    repo: Repository,
    tree: str,
    files: _Files,
    head: Iterable[bytes],
    tables: Iterable[Iterable[bytes]],
    positions: dict[str, int] | None = None,
) -> WordIndex | None:
    """Keep as ``tree``'s the index whose bytes are ``head`` then each table's parts
    (its array header, then its buckets), written as they come: none is held (a
    first task's index, 17 MB at 30,000 files, was held whole while ranking). The
    index answers from the file (:class:`_Kept`). ``files``: the paths, blob ids
    and lengths ``head`` encodes; ``positions``: each path's. ``None`` if it
    could not be written (the parts are spent: rank from the facts instead)."""
    folder = _folder(repo)
    path = os.path.join(folder, tree)
    temporary, fd = None, -1
    try:
        repo.make_dirs(folder)
        temporary = temporary_name(path)
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(temporary, flags | getattr(os, "O_CLOEXEC", 0), 0o600)
        with open(fd, "wb", closefd=False) as out:
            spans, size, crc = _written(out, head, tables)
            out.seek(len(HEADER))
            out.write(b"%08x\n" % crc)
        os.replace(temporary, path)
        temporary = None
        kept = _File(fd, size)
    except OSError:
        return None
    finally:
        if temporary is not None:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    with contextlib.suppress(OSError):
        _prune(folder, tree)
    return WordIndex(files, [_Kept(kept, starts) for starts in spans], kept, positions)


def _written(
    out: BinaryIO, head: Iterable[bytes], tables: Iterable[Iterable[bytes]]
) -> tuple[list[array[int]], int, int]:
    """Write :data:`HEADER`, a CRC line to fill, ``head`` and each table's parts:
    where each table's buckets start in the body (and its last ends), the body's
    size and its CRC-32."""
    out.write(HEADER + b"%08x\n" % 0)
    crc = at = 0
    for part in head:
        out.write(part)
        crc, at = zlib.crc32(part, crc), at + len(part)
    spans: list[array[int]] = []
    for table in tables:
        parts = iter(table)
        header = next(parts)
        out.write(header)
        crc, at = zlib.crc32(header, crc), at + len(header)
        starts = array("Q", [at])
        for bucket in parts:
            out.write(bucket)
            crc, at = zlib.crc32(bucket, crc), at + len(bucket)
            starts.append(at)
        spans.append(starts)
    return spans, at, crc
