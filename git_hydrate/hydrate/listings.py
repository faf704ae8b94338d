"""The listings of trees already read, kept by tree id: a known tree is not listed again.

``git ls-tree -r -l`` of a 30,000-file tree costs git a third of a second of CPU
(it looks up every blob's size), and parsing it as much again. A tree never
changes, so its listing is a pure function of its id: it is kept at
``<common dir>/hydrate/tree-listings/<tree id>``, derived and disposable like the
sha256 cache (a missing, foreign, damaged or unreadable file is a miss, never
an error; deleting the folder is always safe). A listing carries the CRC-32 and
length of its entries: a path it names points at a blob that is read and
attached unchecked, so one damaged byte would attach another file's body, or
name a blob that is not there on every run.

A tree that is not kept is listed from the newest kept one and git's own diff of
the two trees (``git diff-tree -r``, which skips every subtree the two share by
id), plus one ``git cat-file --batch-check`` for the sizes of the blobs it
names: work in proportion to the change, not to the tree. The result is the
listing ``git ls-tree`` would give, entry for entry (``tests/test_listings.py``).

Bounded: the :data:`MAX_TREES` listings used last are kept (a use touches the
file). A listing that names a blob this repository lacks (a partial clone) is
not kept: the blob may arrive later. Trusted only when private to this user
(:func:`~git_hydrate.store.read_private`): a planted listing could point a path
at another blob.
"""

from __future__ import annotations

import contextlib
import os
import sys
from array import array
from operator import itemgetter
from typing import Final

import msgspec

from ..errors import GitFailed
from ..store import Repository
from ..store.keyed import sealed, unsealed
from .rules import FileEntry, decode_path
from .sources import blob_sizes, list_tree

__all__ = ["MAX_TREES", "keep_by_tree", "tree_entries"]

#: The first line of a kept listing; another (an older layout) is a miss. The second
#: is the CRC-32 (hex) and the length of the entries that follow (:class:`_Columns`).
HEADER: Final = b"# git-hydrate tree-listing 3\n"
#: Listings kept at most (about 60 bytes a file each).
MAX_TREES: Final = 8
#: A neighbour that differs in more than this share of its files is not used:
#: listing the tree whole is then as cheap.
_MOST_CHANGED: Final = 0.5

_KINDS: Final = ("file", "symlink", "submodule", "unreadable")
#: One entry: raw path, kind (an index of :data:`_KINDS`), blob id (20 or 32 bytes), size.
_Row = tuple[bytes, int, bytes, int]


class _Columns(msgspec.Struct, array_like=True):
    """A kept listing's entries as four columns, each one value (30,000 entries
    decode as 4 values, not 30,000 tuples of 4: 20 -> 11 ms): the raw paths joined
    by NUL (which no path holds), each kind (a byte: an index of :data:`_KINDS`),
    the blob ids end to end, and the sizes (8 bytes each, little-endian)."""

    paths: bytes
    kinds: bytes
    oids: bytes
    sizes: bytes


_decoder: Final = msgspec.msgpack.Decoder(_Columns)
_encoder: Final = msgspec.msgpack.Encoder()
_MODE_SYMLINK: Final = 0o120000
_MODE_GITLINK: Final = 0o160000


def _folder(repo: Repository) -> str:
    return os.path.join(repo.common_dir, "hydrate", "tree-listings")


def _entries(rows: list[_Row]) -> list[FileEntry]:
    return [
        FileEntry(path=decode_path(raw), size=size, kind=_KINDS[kind], oid=oid.hex())
        for raw, kind, oid, size in rows
    ]


def _columns(rows: list[_Row]) -> _Columns:
    sizes = array("q", map(itemgetter(3), rows))
    if sys.byteorder == "big":
        sizes.byteswap()
    return _Columns(
        b"\0".join(map(itemgetter(0), rows)),
        bytes(map(itemgetter(1), rows)),
        b"".join(map(itemgetter(2), rows)),
        sizes.tobytes(),
    )


def _sizes(columns: _Columns) -> array[int]:
    sizes = array("q")
    sizes.frombytes(columns.sizes)
    if sys.byteorder == "big":
        sizes.byteswap()
    return sizes


def _column_entries(columns: _Columns, width: int) -> list[FileEntry]:
    """The entries of ``columns`` (blob ids ``width`` bytes each), as :func:`_entries`
    gives those of its rows (each column in one pass in C: the paths decoded at once,
    the ids turned to hex at once)."""
    n = len(columns.kinds)
    paths = columns.paths.decode("utf-8", "surrogateescape").split("\0") if n else []
    digits = columns.oids.hex()
    oids = [digits[at : at + 2 * width] for at in range(0, 2 * width * n, 2 * width)]
    kinds = map(_KINDS.__getitem__, columns.kinds)
    return list(map(FileEntry, paths, _sizes(columns), kinds, oids))


def _column_rows(columns: _Columns, width: int) -> list[_Row]:
    n, ids = len(columns.kinds), columns.oids
    paths = columns.paths.split(b"\0") if n else []
    oids = [ids[at : at + width] for at in range(0, width * n, width)]
    return list(zip(paths, columns.kinds, oids, _sizes(columns), strict=True))


def _rows(entries: list[FileEntry]) -> list[_Row]:
    return [
        (e.raw_path, _KINDS.index(e.kind), bytes.fromhex(e.oid or ""), e.size) for e in entries
    ]


def _load(path: str, tree: str) -> _Columns | None:
    """The kept listing of ``tree`` at ``path``; ``None``: none, another layout,
    damaged (its CRC-32 or length not those written, its columns not of one
    length, a kind out of range), or not this user's."""
    body = unsealed(path, HEADER)  # (a listing nobody else could have planted, or none)
    if body is None:
        return None
    try:
        columns = _decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    n = len(columns.kinds)
    width = len(tree) // 2  # (a blob id is as long as the tree's: SHA-1 or SHA-256)
    if (
        len(columns.oids) != width * n
        or len(columns.sizes) != 8 * n
        or columns.paths.count(b"\0") != max(n - 1, 0)
        or (not n and columns.paths)
        or (n and max(columns.kinds) >= len(_KINDS))
    ):
        return None
    return columns


def _neighbour(folder: str, tree: str) -> str | None:
    """The kept listing used last, other than ``tree``'s."""
    try:
        with os.scandir(folder) as it:
            kept = [(e.stat().st_mtime_ns, e.name) for e in it if e.name != tree]
    except OSError:
        return None
    kept = [(when, name) for when, name in kept if len(name) in (40, 64)]
    return max(kept)[1] if kept else None


def _changed(repo: Repository, base: str, tree: str) -> list[tuple[int, str, bytes]]:
    """``(new mode, new blob id, raw path)`` of each path that differs (mode 0: gone)."""
    out = repo.git(["diff-tree", "-r", "-z", "--no-renames", base, tree]).stdout
    fields = out.split(b"\0")
    changes: list[tuple[int, str, bytes]] = []
    for meta, raw in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        _old_mode, new_mode, _old, new, _status = meta[1:].split(b" ")
        changes.append((int(new_mode, 8), new.decode("ascii"), raw))
    return changes


def _patched(repo: Repository, rows: list[_Row], base: str, tree: str) -> list[_Row] | None:
    """``tree``'s listing from ``base``'s (``rows``) and the diff of the two trees;
    ``None`` when they differ too much for that to pay."""
    changes = _changed(repo, base, tree)
    if len(changes) > _MOST_CHANGED * max(len(rows), 1):
        return None
    blobs = [oid for mode, oid, _raw in changes if mode and mode != _MODE_GITLINK]
    sizes = blob_sizes(repo, list(dict.fromkeys(blobs)))
    by_path = {row[0]: row for row in rows}
    for mode, oid, raw in changes:
        if not mode:
            by_path.pop(raw, None)
            continue
        size = 0 if mode == _MODE_GITLINK else sizes.get(oid)
        kind = (
            "submodule"
            if mode == _MODE_GITLINK
            else "unreadable"
            if size is None
            else "symlink"
            if mode == _MODE_SYMLINK
            else "file"
        )
        by_path[raw] = (raw, _KINDS.index(kind), bytes.fromhex(oid), size or 0)
    # git lists a tree recursively in the byte order of the full paths
    return [by_path[raw] for raw in sorted(by_path)]


def _keep(repo: Repository, folder: str, tree: str, rows: list[_Row]) -> None:
    if any(kind == _KINDS.index("unreadable") for _raw, kind, _oid, _size in rows):
        return  # a blob this clone lacks may arrive: the listing would change
    body = _encoder.encode(_columns(rows))
    keep_by_tree(repo, folder, tree, sealed(HEADER, body), MAX_TREES)


def keep_by_tree(repo: Repository, folder: str, tree: str, chunks: list[bytes], most: int) -> None:
    """Write ``chunks`` as ``folder``'s file of ``tree`` (private, by rename), then
    remove the files of the trees used longest ago beyond ``most``. Failing only
    costs time: nothing is raised."""
    with contextlib.suppress(OSError):
        repo.replace_file(os.path.join(folder, tree), chunks, private=True)
        with os.scandir(folder) as it:
            kept = sorted(
                (e.stat().st_mtime_ns, e.path)
                for e in it
                if len(e.name) in (40, 64) and e.name != tree
            )
        for _when, path in kept[: max(len(kept) - most + 1, 0)]:
            os.unlink(path)


def tree_entries(repo: Repository, tree: str) -> list[FileEntry]:
    """Every blob and submodule of ``tree``, as :func:`~.sources.list_tree` of
    ``git ls-tree -r -z -l`` gives them: from the kept listing, else from the
    newest kept one and the diff of the two trees, else from ``git ls-tree``."""
    folder = _folder(repo)
    path = os.path.join(folder, tree)
    width = len(tree) // 2
    columns = _load(path, tree)
    if columns is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # used last: kept longest
        return _column_entries(columns, width)
    base = _neighbour(folder, tree)
    known = _load(os.path.join(folder, base), base) if base is not None else None
    if base is not None and known is not None:
        try:
            rows = _patched(repo, _column_rows(known, width), base, tree)
        except GitFailed:
            rows = None  # (the kept tree may be gone: pruned by git gc)
        if rows is not None:
            _keep(repo, folder, tree, rows)
            return _entries(rows)
    entries = list_tree(repo.ls_tree(tree))
    _keep(repo, folder, tree, _rows(entries))
    return entries
