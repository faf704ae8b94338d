"""Ranking's word index of a tree's files, kept by tree id: a new task scores only
the files that hold its words, and decodes the facts of no other blob.

Lexical scoring (:mod:`.retrieval`) needs, per asked word, the files whose
contents, path or defined names hold it. Asking every file's facts that
question costs a Python loop over the whole tree (and decoding every blob's
facts first); the index turns it around: word -> postings ``(file, count)``,
kept for the words of contents, of paths and of defined names (each name's
postings say which name), with each file's blob id and lengths. Each word's
postings are kept as encoded bytes and decoded only when the word is asked.

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
(:mod:`.indexing`) and keeps it (:func:`keep`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import zlib
from array import array
from collections.abc import Iterable, Mapping, Sequence
from operator import eq
from typing import Final, NamedTuple, cast

import msgspec

from ..store import Repository, read_private

__all__ = ["MAX_INDEXES", "Served", "WordIndex", "has_index", "keep", "word_index"]

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


class WordIndex:
    """Postings of the words of a set of files (see the module's docstring)."""

    def __init__(
        self,
        layout: _Layout,
        data: bytes | bytearray | memoryview | list[bytes],
        positions: dict[str, int] | None = None,
    ) -> None:
        self._layout = layout
        self._data = data  # (what the layout's postings are views of, or its parts)
        self._positions = positions
        self._buckets: dict[tuple[int, int], dict[str, msgspec.Raw]] = {}

    @classmethod
    def of_parts(
        cls,
        head: list[bytes],
        files: tuple[list[str], list[str], list[int], list[int]],
        tables: Sequence[tuple[bytes, list[bytes]]],
        positions: dict[str, int],
    ) -> WordIndex:
        """The index whose encoding is ``head`` then each table's header and buckets,
        held as those parts: not decoded again (a first task's paths, blob ids and
        lengths would be held twice), nor joined (one buffer the size of the index,
        beside the tables it was encoded from). ``files`` are the paths, blob ids,
        path and content lengths ``head`` encodes; ``positions`` each path's
        position."""
        parts = list(head)
        for header, buckets in tables:
            parts.append(header)
            parts += buckets
        raws = [[msgspec.Raw(bucket) for bucket in buckets] for _header, buckets in tables]
        return cls(_Layout(*files, *raws), parts, positions)

    @property
    def paths(self) -> list[str]:
        """The files indexed, by position."""
        return self._layout.paths

    @property
    def path_lengths(self) -> list[int]:
        """Each file's count of path words, by position."""
        return self._layout.path_lengths

    @property
    def lengths(self) -> list[int]:
        """Each file's count of content words (0: binary or unknown), by position."""
        return self._layout.lengths

    def encode(self) -> bytes | bytearray | memoryview:
        """The index as kept on disk (after :data:`HEADER`)."""
        data = self._data
        return b"".join(data) if isinstance(data, list) else data

    def chunks(self) -> list[bytes | bytearray | memoryview]:
        """:meth:`encode`'s bytes in parts, as they are held (not joined)."""
        data = self._data
        return list(data) if isinstance(data, list) else [data]

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> WordIndex | None:
        """An index from :meth:`encode`'s bytes; ``None`` if they do not decode."""
        try:
            layout = _decoder.decode(data)
        except (msgspec.DecodeError, ValueError):
            return None
        n = len(layout.paths)
        if not len(layout.oids) == len(layout.path_lengths) == len(layout.lengths) == n:
            return None
        return cls(layout, data)

    def serving(
        self, paths: Iterable[str], oids: Mapping[str, str]
    ) -> tuple[bytearray, list[str]]:
        """Which files the index answers for among ``paths`` (a flag per position:
        the path is asked and its blob, ``oids[path]``, is the one indexed), and the
        paths it does not answer for, in the order given."""
        blobs = self._layout.oids
        paths = list(paths)
        if paths == list(oids) and all(oids.values()):
            # the paths asked are those of ``oids``: each position's flag at once, without
            # a step per path; when every path asked is served, none is left
            live = bytearray(map(eq, map(oids.get, self._layout.paths), blobs))
            if live.count(1) == len(paths):
                return live, []
        if self._positions is None:
            self._positions = {path: i for i, path in enumerate(self._layout.paths)}
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
        return self._postings(self._find(0, self._layout.terms, word))

    def path_words(self, word: str) -> array[int]:
        """``[file, count, ...]`` of the files whose paths hold ``word``."""
        return self._postings(self._find(1, self._layout.path_words, word))

    def names(self, word: str) -> list[tuple[int, str, int]]:
        """``(file, name, count)`` of each defined name whose words hold ``word``."""
        raw = self._find(2, self._layout.names, word)
        try:
            found = _named.decode(raw) if raw is not None else []
        except (msgspec.DecodeError, ValueError):
            return []  # (damaged: a miss, never an error)
        n = len(self._layout.paths)
        return found if all(0 <= i < n for i, _name, _count in found) else []

    def _find(self, which: int, table: list[msgspec.Raw], word: str) -> msgspec.Raw | None:
        """``word``'s encoded postings in ``table`` (the ``which``-th), if any."""
        if not table:
            return None
        key = (which, zlib.crc32(word.encode("utf-8", "surrogatepass")) % len(table))
        bucket = self._buckets.get(key)
        if bucket is None:
            try:
                bucket = self._buckets[key] = _bucket.decode(table[key[1]])
            except (msgspec.DecodeError, ValueError):
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
    data = read_private(path)
    if data is None or not data.startswith(HEADER):
        return None
    body = memoryview(data)[len(HEADER) + _CHECK :]  # (no copy of the file)
    if data[len(HEADER) : len(HEADER) + _CHECK] != b"%08x\n" % zlib.crc32(body):
        return None  # damaged (or cut short): built again
    return WordIndex.decode(body)


def has_index(repo: Repository, tree: str) -> bool:
    """Whether an index of ``tree`` is kept (not whether it is sound)."""
    return os.path.isfile(os.path.join(_folder(repo), tree))


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
        kept = [name for _when, name in _kept(folder) if name != tree]
        for name in kept[: max(len(kept) - MAX_INDEXES + 1, 0)]:
            os.unlink(os.path.join(folder, name))
