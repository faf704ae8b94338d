"""A first task's word index, built by a process of its own.

A first task reads every blob of its tree and indexes their words as it goes
(:mod:`.indexing`). In one process, the index being built (about 30 MiB at
30,000 files: the words as keys, their postings) stood on top of what reading
holds, and the two made the run's peak. :func:`start` forks a child *before
the tree is listed*, while this process holds little more than its imports;
:meth:`Indexer.take` hands it the tree's sorted paths, and reading then sends
it each blob's facts, encoded as the blob-facts cache keeps them
(:class:`Sent`, in place of :class:`.indexing.IndexBuilder`). The child builds
the index from them exactly as this process would, and keeps it as the tree's
(:func:`.index.keep_streamed`); this process reads it back from that file.
Neither process holds both the reading and the index, and the child's work
(adding the postings, encoding the tables) leaves this process's.

The child writes that one file and nothing else: it starts no process, reads
no object, holds none of this process's pipes but its two (:func:`.forked.detach`),
dies with this process, and leaves by ``os._exit``. When it is gone (it
failed, was killed, answered nothing for :data:`.forked.PATIENCE` seconds),
no index is kept and ranking reads the facts saved in the cache, as when an
index cannot be written; the output is the same either way.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import struct
import time
import weakref
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Final

import msgspec

from ..store import Repository
from .forked import PATIENCE, can_fork, detach, fork, reap, signals_held
from .index import WordIndex
from .indexing import IndexBuilder, SortedPaths, Split
from .kept import Whereabouts, kept_folder, reopen
from .terms import BlobFacts

__all__ = ["MIN_FILES", "Indexer", "Sent", "start"]

#: Trees with fewer files are indexed here: the child would cost more than it saves
#: (at 3,000 files: +0.07 s of CPU for 3 MiB less, paired).
MIN_FILES: Final = 5_000
#: A message's kind and its body's length.
_HEAD: Final = struct.Struct("=cI")
#: Bytes held before they are written to the child, and read at a time there.
_CHUNK: Final = 1 << 16
_encoder: Final = msgspec.msgpack.Encoder()
_paths: Final = msgspec.msgpack.Decoder(list[str])
_facts: Final = msgspec.msgpack.Decoder(BlobFacts)
#: One blob's files: their positions, its id, its facts encoded, its names' words.
_Fed = tuple[list[int], str, msgspec.Raw, list[Split] | None]
_fed: Final = msgspec.msgpack.Decoder(_Fed)
#: The child's answer: its mark, its length, then where the index it kept lies.
_SIZE: Final = struct.Struct("=Q")
_ANSWER: Final = b"="
#: What the child sends while it keeps the index, at least every :data:`_BEAT`
#: seconds: it is alive (this process waits :data:`.forked.PATIENCE` seconds from
#: the last sign, not from the start: a tree of a million files takes longer).
_ALIVE: Final = b"."
_BEAT: Final = 1.0
_answer: Final = msgspec.msgpack.Decoder(Whereabouts)


def start(repo: Repository, tree: str) -> Indexer | None:
    """An indexer for the first reading of ``tree`` (no index of it kept), forked
    now, or ``None``: this process may not fork (:func:`.forked.can_fork`), or the
    work tree's index lists fewer than :data:`MIN_FILES` files (if its tree is this
    one's size: :meth:`Indexer.take` counts them; no index, a bare repository: forked)."""
    if not can_fork():
        return None
    listed = _listed(repo)
    if listed is not None and listed < MIN_FILES:
        return None
    return Indexer.forked(repo)


def _listed(repo: Repository) -> int | None:
    """How many entries the work tree's index holds (its header says), if it can
    tell: ``None`` for no index, a split one (most entries in a shared file) or
    one that may be sparse (a folder outside the sparse checkout is one entry)."""
    if repo.settings.boolean("index.sparse", False):
        return None
    path = os.environ.get("GIT_INDEX_FILE") or os.path.join(repo.git_dir, "index")
    try:
        with open(path, "rb") as index:
            head = index.read(12)
        if any(name.startswith("sharedindex.") for name in os.listdir(repo.git_dir)):
            return None
    except OSError:
        return None
    if len(head) < 12 or head[:4] != b"DIRC":
        return None
    return int.from_bytes(head[8:12], "big")


class Indexer:
    """The child process that builds and keeps a tree's word index."""

    def __init__(self, pid: int, down: int, up: int, folder: str) -> None:
        self.pid: int | None = pid
        self._down, self._up = down, up  # (to the child; from it)
        self._held = bytearray()
        #: Ends the child: by :meth:`close`, or when this object is lost (an interrupt
        #: let through just after it was made) or the interpreter exits.
        self._end = weakref.finalize(self, _end, pid, down, up, folder)

    @classmethod
    def forked(cls, repo: Repository) -> Indexer | None:
        """The child, forked now (``None``: it could not be)."""
        try:
            down = os.pipe()
        except OSError:
            return None
        try:
            up = os.pipe()
        except OSError:
            _close(*down)
            return None
        _mode = repo.shared_mode  # (read here: the child starts no git process for it)
        parent, where = os.getpid(), kept_folder(repo)
        with signals_held():  # (the child is recorded before an interrupt is let through)
            pid = fork()
            if pid == 0:  # pragma: no cover - the child (its index is checked by the tests)
                _close(down[1], up[0])
                _serve(repo, down[0], up[1], parent)
            _close(down[0], up[1])
            if pid < 0:
                _close(down[1], up[0])
                return None
            os.set_blocking(down[1], False)
            return cls(pid, down[1], up[0], where)

    def take(self, paths: Sequence[str]) -> Sent | None:
        """Begin the index of ``paths`` (sorted), fed through what this returns;
        ``None`` (the child ended): too few paths to be worth it, or it is gone."""
        if self.pid is None or len(paths) < MIN_FILES:
            self.close()
            return None
        self.put(b"P", _encoder.encode(paths))
        return Sent(self, paths) if self.pid is not None else None

    def put(self, kind: bytes, body: bytes) -> None:
        """Send the child a message (held until a chunk's worth is)."""
        if self.pid is None:
            return
        self._held += _HEAD.pack(kind, len(body))
        self._held += body
        if len(self._held) >= _CHUNK:
            self._flush()

    def keep(self, repo: Repository, tree: str, sent: Sent) -> WordIndex | None:
        """Have the child keep the index of ``sent`` as ``tree``'s and end; the index,
        read from the file it wrote where it said its parts lie (``None``: not kept)."""
        self.put(b"K", tree.encode("ascii"))
        self._flush()
        meanwhile, sent.meanwhile = sent.meanwhile, None
        if meanwhile is not None:
            meanwhile()
        answer = self._answer()
        self.close()
        if answer is None:
            return None
        return reopen(repo, tree, answer, sent.paths, sent.oids, sent.lengths)

    def _answer(self) -> Whereabouts | None:
        """The child's answer to :meth:`keep` (``None``: it kept nothing, is gone, or
        gave no sign of life for :data:`.forked.PATIENCE` seconds)."""
        data = bytearray()
        while self.pid is not None and _waited(self._up, select.POLLIN):
            try:
                chunk = os.read(self._up, _CHUNK)
            except OSError:
                return None
            if not chunk:
                break
            data += chunk if data else chunk.lstrip(_ALIVE)  # (signs of life, then the answer)
            if _whole(data):
                break
        if not _whole(data) or len(data) != 1 + _SIZE.size + _SIZE.unpack_from(data, 1)[0]:
            return None
        try:
            return _answer.decode(memoryview(data)[1 + _SIZE.size :])
        except (msgspec.DecodeError, ValueError):
            return None

    def close(self) -> None:
        """End the child (if it runs) and free its pipes."""
        if self.pid is None:
            return
        self.pid, self._held = None, bytearray()
        self._end()

    def _flush(self) -> None:
        """Write what is held; the child is given up if it takes none of it for
        :data:`.forked.PATIENCE` seconds, or is gone."""
        held, self._held = self._held, bytearray()
        view = memoryview(held)
        while view and self.pid is not None:
            try:
                view = view[os.write(self._down, view) :]
            except BlockingIOError:
                if not _waited(self._down, select.POLLOUT):
                    self.close()
            except OSError:
                self.close()
        view.release()


class Sent(SortedPaths):
    """What reading feeds instead of an :class:`.indexing.IndexBuilder` when the
    index is built by the child: each file's position and facts, sent (its blob
    id and count of words kept here: the index's head, read back without it)."""

    def __init__(self, indexer: Indexer, paths: Sequence[str]) -> None:
        super().__init__(paths)
        self.indexer = indexer
        self.lengths = array("q", bytes(8 * len(self.paths)))
        #: Done while the child keeps the index (:meth:`.building.Building.while_kept`).
        self.meanwhile: Callable[[], None] | None = None

    def feed(
        self,
        positions: Sequence[int],
        oid: str,
        facts: BlobFacts,
        splits: Sequence[Split] | None = None,
        raw: bytes | None = None,
    ) -> None:
        """Index the files at ``positions``, blob ``oid`` (``raw``: ``facts`` encoded);
        each file once, as :meth:`.indexing.IndexBuilder.add_at` does."""
        oids, lengths = self.oids, self.lengths
        new = [at for at in positions if not oids[at]]
        for at in new:  # (recorded even when the child is gone: these files were read)
            oids[at] = oid
            if facts.text:
                lengths[at] = facts.length
        if not new or self.indexer.pid is None:
            return
        encoded = msgspec.Raw(_encoder.encode(facts) if raw is None else raw)
        self.indexer.put(b"F", _encoder.encode((new, oid, encoded, splits)))

    def keep(self, repo: Repository, tree: str) -> WordIndex | None:
        """The index, kept by the child as ``tree``'s (``None``: it was not)."""
        return self.indexer.keep(repo, tree, self)


def _serve(repo: Repository, down: int, up: int, parent: int) -> None:  # pragma: no cover
    """The child: build the index of what comes through ``down``, keep it when
    asked and answer through ``up``; never returns."""
    code = 1
    try:
        gc.disable()  # (no finaliser of this process's objects runs here; no cycles made)
        detach(parent, down, up)
        builder: IndexBuilder | None = None
        for kind, body in _messages(down):
            if kind == b"P":
                builder = IndexBuilder(_paths.decode(body))
                builder.index_paths()
            elif kind == b"F" and builder is not None:
                positions, oid, raw, splits = _fed.decode(body)
                facts = _facts.decode(raw)
                for at in positions:
                    builder.add_at(at, oid, facts, splits)
            elif kind == b"K" and builder is not None:
                index = builder.keep(repo, body.decode("ascii"), _beating(up))
                where = Whereabouts.of(index) if index is not None else None
                if where is not None:
                    answer = _encoder.encode(where)
                    _write(up, _ANSWER + _SIZE.pack(len(answer)) + answer)
                break
        code = 0
    except BaseException:  # (this process ranks from the facts)
        code = 1
    finally:
        os._exit(code)


def _whole(data: bytearray) -> bool:
    """Whether ``data`` holds the child's whole answer (or more)."""
    if len(data) < 1 + _SIZE.size:
        return False
    return data[:1] == _ANSWER and len(data) >= 1 + _SIZE.size + _SIZE.unpack_from(data, 1)[0]


def _beating(up: int) -> Callable[[], None]:  # pragma: no cover - the child
    """A sign of life to send through ``up``, at most every :data:`_BEAT` seconds."""
    last = time.monotonic()

    def beat() -> None:
        nonlocal last
        now = time.monotonic()
        if now - last >= _BEAT:
            _write(up, _ALIVE)
            last = now

    return beat


def _messages(fd: int) -> Iterator[tuple[bytes, bytes]]:  # pragma: no cover - the child
    """The messages coming through ``fd`` until its end (or one cut short)."""
    buffer, at, wanted = bytearray(), 0, _HEAD.size
    while True:
        if len(buffer) - at >= _HEAD.size:
            kind, length = _HEAD.unpack_from(buffer, at)
            end = at + _HEAD.size + length
            if end <= len(buffer):
                yield kind, bytes(buffer[at + _HEAD.size : end])
                at = end
                continue
            wanted = end - len(buffer)  # (a message read whole, not a chunk at a time)
        chunk = os.read(fd, max(wanted, _CHUNK))
        if not chunk:
            return
        del buffer[:at]
        buffer += chunk
        at, wanted = 0, _HEAD.size


def _end(pid: int, down: int, up: int, where: str) -> None:
    """End the child ``pid`` (its pipes' ends here closed, it reaped, killed first
    if it still runs) and remove what it left half-written; not cut short by an
    interrupt (a second Ctrl-C would leave the child unreaped, its file behind)."""
    with signals_held():
        _close(down, up)
        if not reap(pid):
            _forget(where, pid)


def _forget(where: str, pid: int) -> None:
    """Remove what the child ``pid``, killed or failed, left half-written in
    ``where`` (its temporary files name it)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(where):
            if name.endswith(".tmp") and f".{pid}." in name:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(where, name))


def _write(fd: int, data: bytes) -> None:  # pragma: no cover - the child
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _waited(fd: int, event: int) -> bool:
    """Whether ``fd`` is ready for ``event`` within :data:`.forked.PATIENCE` seconds."""
    poll = select.poll()
    poll.register(fd, event)
    return bool(poll.poll(PATIENCE * 1000))


def _close(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
