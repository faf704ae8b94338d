"""Word indexes kept by tree id: their files, written and read back.

A kept index (:mod:`.index`) is ``<common dir>/hydrate/rank-index/<tree id>``:
:data:`.index.HEADER`, the CRC-32 of the rest, the body (the index's
encoding), a trailer saying where the body's columns and buckets lie, and the
trailer's length. Reading one checks its CRC a megabyte at a time, then reads
the trailer and the files' columns only (never the file whole, nor a mapping
of it: its pages would count as the reader's); buckets are read when asked.
Private to this user, derived and disposable: a missing, foreign, damaged or
unreadable file is a miss, never an error; the :data:`MAX_INDEXES` used last
are kept (a use touches the file). Written as encoded (:func:`keep_streamed`),
or by another process, which says where it lies (:class:`Whereabouts`,
:func:`reopen`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import struct
import zlib
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import BinaryIO, Final

import msgspec

from ..store import Repository, open_regular_fd, private_file
from ..store.tempfiles import temporary_name
from .index import (
    BODY,
    HEADER,
    FileTable,
    IndexFile,
    IndexFiles,
    Served,
    WordIndex,
    array_header,
)

__all__ = [
    "MAX_INDEXES",
    "Whereabouts",
    "has_index",
    "keep",
    "keep_streamed",
    "kept_folder",
    "reopen",
    "word_index",
]

_CHECK: Final = BODY - len(HEADER)  # (the CRC line)
_encoder: Final = msgspec.msgpack.Encoder()

#: Indexes kept at most (about the size of the blob facts of their trees each).
MAX_INDEXES: Final = 4
#: An index that would leave more than this share of the candidates to their facts
#: is not used: building one anew is then about as cheap.
_MOST_UNSERVED: Final = 0.125


class _Trailer(msgspec.Struct, array_like=True):
    """Where a kept index's body holds its parts, so they are read without reading
    it whole: where its array header and each files' column (paths, blob ids, path
    and content lengths) end, and where each table's buckets start (and its last
    ends)."""

    head: list[int]
    spans: list[list[int]]


#: The trailer's length, after it (little-endian).
_LENGTH: Final = struct.Struct("<Q")
#: Bytes read at a time while a kept index's CRC is checked.
_READ: Final = 1 << 20


_trailer: Final = msgspec.msgpack.Decoder(_Trailer)
_strs: Final = msgspec.msgpack.Decoder(list[str])
_ints: Final = msgspec.msgpack.Decoder(list[int])


def kept_folder(repo: Repository) -> str:
    """Where the kept indexes are."""
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
    except (OSError, ValueError, BufferError, OverflowError, struct.error):
        found = None
    if found is None:
        os.close(fd)
        return None
    files, spans, size = found
    kept = IndexFile(fd, size)
    return WordIndex(files, [FileTable(kept, starts) for starts in spans], kept)


def _opened(fd: int) -> tuple[IndexFiles, list[array[int]], int] | None:
    """The files of the index open as ``fd``, where each table's buckets lie in its
    body, and the body's size; ``None``: not a sound index of this user's. The
    file is read a megabyte at a time for its CRC, then only its trailer and the
    files' columns (no mapping of it: its pages would count as this process's)."""
    status = os.fstat(fd)
    size = status.st_size
    if not stat.S_ISREG(status.st_mode) or not private_file(status):
        return None
    if size < BODY + _LENGTH.size or os.pread(fd, len(HEADER), 0) != HEADER:
        return None
    crc, at = 0, BODY
    while at < size:
        chunk = os.pread(fd, min(_READ, size - at), at)
        if not chunk:
            return None  # (cut short meanwhile)
        crc, at = zlib.crc32(chunk, crc), at + len(chunk)
    if os.pread(fd, _CHECK, len(HEADER)) != b"%08x\n" % crc:
        return None  # damaged (or cut short): built again
    (length,) = _LENGTH.unpack(os.pread(fd, _LENGTH.size, size - _LENGTH.size))
    body = size - BODY - _LENGTH.size - length
    if not 0 <= body <= size:
        return None
    trailer = _trailer.decode(os.pread(fd, length, BODY + body))
    if not _sound(trailer, body, lambda start, end: os.pread(fd, end - start, BODY + start)):
        return None
    head = trailer.head
    data = memoryview(os.pread(fd, head[-1], BODY))
    paths, oids = _strs.decode(data[head[0] : head[1]]), _strs.decode(data[head[1] : head[2]])
    path_lengths = _ints.decode(data[head[2] : head[3]])
    lengths = array("q", _ints.decode(data[head[3] : head[4]]))
    if not len(oids) == len(path_lengths) == len(lengths) == len(paths):
        return None
    return (paths, oids, path_lengths, lengths), [array("Q", s) for s in trailer.spans], body


def _sound(trailer: _Trailer, body: int, read: Callable[[int, int], bytes]) -> bool:
    """Whether ``trailer`` lays out a body of ``body`` bytes as :class:`_Layout`
    does: its array header, four columns, then three tables, each an array header
    (checked, ``read(start, end)`` of the body) then its buckets, end to end."""
    head, spans = trailer.head, trailer.spans
    if len(head) != 5 or len(spans) != 3 or any(len(span) < 1 for span in spans):
        return False
    ends = [*head, *(n for span in spans for n in span)]
    if not ends[0] > 0 or any(b < a for a, b in itertools.pairwise(ends)):
        return False
    if read(0, head[0]) != array_header(7) or spans[-1][-1] != body:
        return False
    end = head[-1]
    for span in spans:
        header = array_header(len(span) - 1)
        if span[0] - end != len(header) or read(end, span[0]) != header:
            return False
        end = span[-1]
    return True


def has_index(repo: Repository, tree: str) -> bool:
    """Whether an index of ``tree`` is kept (not whether it is sound)."""
    return os.path.isfile(os.path.join(kept_folder(repo), tree))


class Whereabouts(msgspec.Struct, array_like=True):
    """Where an index just kept (:func:`keep_streamed`) lies, for another process to
    read it (:func:`reopen`) without reading the file whole: each file's count of
    path words, where each table's buckets start in its body (and the last ends),
    the body's size, and the file's device, inode, size and CRC line."""

    path_lengths: list[int]
    spans: list[list[int]]
    size: int
    device: int
    inode: int
    length: int
    check: bytes

    @classmethod
    def of(cls, index: WordIndex) -> Whereabouts | None:
        """Where ``index`` lies, if it is read from its kept file."""
        kept = index.kept_file()
        if kept is None:
            return None
        file, spans = kept
        status = os.fstat(file.fd)
        check = os.pread(file.fd, _CHECK, len(HEADER))
        where = (file.size, status.st_dev, status.st_ino, status.st_size, check)
        return cls(list(index.path_lengths), [list(starts) for starts in spans], *where)


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
    words, as its head holds them); ``None`` if that file is no longer there (its
    device, inode, size and CRC line tell: a file of the same tree written since,
    whose buckets may lie elsewhere, is another file)."""
    try:
        fd = open_regular_fd(os.path.join(kept_folder(repo), tree))
    except OSError:
        return None
    try:
        status = os.fstat(fd)
        same = (status.st_dev, status.st_ino, status.st_size) == (
            where.device,
            where.inode,
            where.length,
        ) and os.pread(fd, _CHECK, len(HEADER)) == where.check
    except OSError:
        same = False
    if not same or len(where.path_lengths) != len(paths):
        os.close(fd)
        return None
    kept = IndexFile(fd, where.size)
    files = (paths, oids, where.path_lengths, lengths)
    return WordIndex(files, [FileTable(kept, array("Q", starts)) for starts in where.spans], kept)


def word_index(
    repo: Repository, tree: str | None, paths: Sequence[str], oids: Mapping[str, str]
) -> Served | None:
    """A kept index that serves most of ``paths`` (``oids``: their blobs): ``tree``'s
    own, else the one used last; with which files it serves and the paths it leaves
    to their facts. ``None`` when none is kept or it would serve too few."""
    folder = kept_folder(repo)
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
    head, tables = index.parts()
    keep_streamed(repo, tree, index.files, head, tables)  # (the kept one dropped: closed)


def _prune(folder: str, tree: str) -> None:
    """Remove the indexes used longest ago but :data:`MAX_INDEXES` (``tree``'s kept)."""
    kept = [name for _when, name in _kept(folder) if name != tree]
    for name in kept[: max(len(kept) - MAX_INDEXES + 1, 0)]:
        os.unlink(os.path.join(folder, name))


def keep_streamed(
    repo: Repository,
    tree: str,
    files: IndexFiles,
    head: Iterable[bytes],
    tables: Iterable[Iterable[bytes]],
    positions: dict[str, int] | None = None,
) -> WordIndex | None:
    """Keep as ``tree``'s the index whose bytes are ``head`` then each table's parts
    (its array header, then its buckets), written as they come: none is held (a
    first task's index, 17 MB at 30,000 files, was held whole while ranking). The
    index answers from the file (:class:`.index.FileTable`). ``files``: the paths, blob ids
    and lengths ``head`` encodes; ``positions``: each path's. ``None`` if it
    could not be written (the parts are spent: rank from the facts instead)."""
    folder = kept_folder(repo)
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
        kept = IndexFile(fd, size)
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
    return WordIndex(files, [FileTable(kept, starts) for starts in spans], kept, positions)


def _written(
    out: BinaryIO, head: Iterable[bytes], tables: Iterable[Iterable[bytes]]
) -> tuple[list[array[int]], int, int]:
    """Write :data:`HEADER`, a CRC line to fill, ``head``, each table's parts and
    the trailer: where each table's buckets start in the body (and its last
    ends), the body's size and the CRC-32 of body and trailer."""
    out.write(HEADER + b"%08x\n" % 0)
    crc = at = 0
    ends: list[int] = []
    for part in head:
        out.write(part)
        crc, at = zlib.crc32(part, crc), at + len(part)
        ends.append(at)
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
    trailer = _encoder.encode(_Trailer(ends, [list(starts) for starts in spans]))
    trailer += _LENGTH.pack(len(trailer))
    out.write(trailer)
    return spans, at, zlib.crc32(trailer, crc)
