"""Many new objects written as one pack, indexed and put in place by git itself.

A bulk write (an import's thousands of tasks: a blob, a tree and a commit each)
written loose leaves tens of thousands of files, and the next command that runs
``git gc --auto`` (a ``git fetch``, so every pull) is held up in the foreground
by git's housekeeping (``benchmarks/RESULTS.md``). A :class:`PackBatch` keeps
the objects of such a write in memory, each compressed as it is added, and
:func:`pack_stream` makes of them one pack as git's pack format describes it
(``Documentation/gitformat-pack.txt``: whole objects, no deltas, the repository's
hash as the trailer). The caller hands that stream to ``git index-pack --stdin``,
which checks every object, writes the pack and its index under temporary names
and renames them into place as a fetch does (the index last: a pack is seen
only once its index is), with the modes ``core.sharedRepository`` asks for. A
batch that is dropped (its write failed before the end) writes nothing at all.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterator
from typing import Final

from ..errors import NotWritable
from .base import RepositoryBase
from .lockfiles import stamp
from .process import GitRun, reason

__all__ = ["PackBatch", "PackedWrites", "index_pack", "pack_stream"]

#: The object type numbers of the pack format.
_TYPES: Final = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}


def _entry_header(kind: bytes, size: int) -> bytes:
    """An object's header in a pack: its type and size, seven bits a byte."""
    header = bytearray([(_TYPES[kind] << 4) | (size & 0x0F)])
    size >>= 4
    while size:
        header[-1] |= 0x80
        header.append(size & 0x7F)
        size >>= 7
    return bytes(header)


class PackBatch:
    """The objects of one bulk write, kept compressed until they go into a pack.

    Args:
        sha256: Whether the repository names objects by SHA-256 (else SHA-1).
    """

    def __init__(self, sha256: bool) -> None:
        import hashlib  # (OpenSSL's start-up: only where a digest is made)

        self._new_digest = hashlib.sha256 if sha256 else hashlib.sha1
        #: Each object's pack entry (header, compressed content), by id.
        self.entries: dict[bytes, bytes] = {}

    def add(self, kind: bytes, data: bytes) -> bytes:
        """Keep ``data`` as an object of ``kind`` (once, however often added); its id
        (what git names it: :meth:`~.objects.Objects.hash_object`)."""
        digest = self._new_digest(b"%s %d\0" % (kind, len(data)))
        digest.update(data)
        oid = digest.hexdigest().encode("ascii")
        if oid not in self.entries:
            # (the loose writer's level: big objects are written fastest)
            level = 1 if len(data) > 256 * 1024 else zlib.Z_DEFAULT_COMPRESSION
            self.entries[oid] = _entry_header(kind, len(data)) + zlib.compress(data, level)
        return oid

    def __len__(self) -> int:
        return len(self.entries)


class PackedWrites(RepositoryBase):
    """Bulk writes as one pack (mixed into :class:`~.objects.Objects`, whose
    writers hand their objects to :attr:`_pack_batch` while it is set)."""

    _pack_batch: PackBatch | None = None
    #: The objects of the last pack written, and that pack's file.
    _just_packed: tuple[frozenset[bytes], str] = (frozenset(), "")
    #: The ``.keep`` files of the packs written whose refs are not written yet.
    _kept: tuple[str, ...] = ()

    @contextlib.contextmanager
    def packed_writes(self) -> Iterator[None]:
        """Write the objects of the block (``write_object``, ``write_blobs`` and
        what calls them) into one pack when it ends, through ``git index-pack``;
        a block that raises writes none of them. Nothing in the block may read
        what it wrote. An object present already goes into the pack too: being
        in a new pack is its freshening (see ``Objects._freshen_loose``)."""
        if self._pack_batch is not None:  # (within an outer block: its pack)
            yield
            return
        batch = self._pack_batch = PackBatch(self._sha256)
        try:
            yield
        finally:
            self._pack_batch = None
        pack_dir = os.path.join(self.common_dir, "objects", "pack")
        name = index_pack(self.git, pack_dir, list(batch.entries.values()), self._sha256)
        if name:
            path = os.path.join(pack_dir, name)
            self._just_packed = frozenset(batch.entries), path
            self._kept = (*self._kept, path.removesuffix(".pack") + ".keep")

    def release_packs(self) -> None:
        """Let git's housekeeping have the packs :meth:`packed_writes` wrote: call it
        once the refs that reach their objects are written (or given up). Until
        then each pack has a ``.keep`` file, as a fetch's has until its refs land:
        a ``git repack -a -d`` meanwhile would drop a pack no ref reaches yet."""
        kept, self._kept = self._kept, ()
        for path in kept:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def just_packed(self, oid: bytes) -> bool:
        """Whether ``oid`` is in the pack :meth:`packed_writes` wrote last, that
        pack still there, its mtime made now (so that, as for any object found
        present, ``git gc --prune`` cannot take it from under a new ref)."""
        oids, path = self._just_packed
        if oid not in oids:
            return False
        try:
            os.utime(path)
        except OSError:
            return False  # repacked or pruned since: look for it as for any other
        return True


def pack_stream(entries: list[bytes], sha256: bool) -> bytes:
    """The pack of ``entries`` (from :attr:`PackBatch.entries`): version 2, then
    the entries, then the hash of all that (SHA-256 in a SHA-256 repository)."""
    import hashlib  # (OpenSSL's start-up: only where a digest is made)

    body = b"".join([b"PACK", (2).to_bytes(4, "big"), len(entries).to_bytes(4, "big"), *entries])
    digest = hashlib.sha256(body) if sha256 else hashlib.sha1(body)
    return body + digest.digest()


def index_pack(
    git: Callable[..., GitRun], pack_dir: str, entries: list[bytes], sha256: bool
) -> str:
    """Hand the pack of ``entries`` to ``git index-pack --stdin`` (through ``git``,
    a repository's :meth:`~.base.RepositoryBase.git`) and return the new pack's
    file name in ``pack_dir`` (``""``: there were no entries, or git did not say).
    Should git fail or be stopped, the part it received (``tmp_pack_*`` in
    ``pack_dir``, which git leaves behind) is removed; an empty one is left,
    since it could be another writer's just made (``git gc`` prunes old ones).

    Raises:
        NotWritable: git could not write the pack (git's reason is given).
    """
    if not entries:
        return ""
    stream = pack_stream(entries, sha256)
    done = False
    try:
        # (--keep: a .keep file beside the pack from its first moment, as a fetch's,
        # until the caller's refs reach it: see PackedWrites.release_packs)
        keep = f"--keep={stamp()}"  # (names its maker, as a lock file does)
        proc = git(["index-pack", "--stdin", keep], input=stream, check=False)
        done = proc.returncode == 0
    finally:
        if not done:
            _remove_received(pack_dir, stream)
    if not done:
        raise NotWritable(f"cannot write a pack of {len(entries):,} objects: {reason(proc)}")
    # (git prints "keep\t<its hash>", a .keep having been asked for)
    kind, _tab, digest = proc.stdout.strip().partition(b"\t")
    return f"pack-{digest.decode('ascii')}.pack" if kind == b"keep" and digest.isalnum() else ""


def _remove_received(pack_dir: str, stream: bytes) -> None:
    """Remove each ``tmp_pack_*`` of ``pack_dir`` that holds the start of
    ``stream``: what a failed ``git index-pack`` received of it (a concurrent
    fetch's temporary pack holds other bytes, and is left alone)."""
    try:
        names = [name for name in os.listdir(pack_dir) if name.startswith("tmp_pack_")]
    except OSError:
        return
    for name in names:
        path = os.path.join(pack_dir, name)
        with contextlib.suppress(OSError):
            with open(path, "rb") as fh:
                received = fh.read(len(stream) + 1)
            if received and stream.startswith(received):
                os.unlink(path)
