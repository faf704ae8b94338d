"""Reading a stored task's bodies for the walk: ahead, in packing order.

The walk asks for bodies one by one, in the order of its entries. A
:class:`BodyReader` answers each from what add-tree left in memory (a
:class:`~git_hydrate.pack.memo.BodyMemo`), from the work tree when the file
there holds the same bytes, or from git: each miss reads that body and the
following ones in one pipelined ``cat-file`` round, and at once asks git for
the round after, which git reads while the walk measures this one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Final

from ..errors import CorruptData
from ..model import Link
from ..store import Prefetch
from ..taskrefs import TaskRefs
from .boundaries import mark_ahead
from .entries import Attachment
from .memo import BodyMemo

__all__ = ["BodyReader"]

#: The most bodies one read-ahead round asks git for.
_ROUND_BODIES: Final = 256
#: The bytes of bodies one round reads at most (the budget, when smaller, but
#: not under 64 KiB).
_ROUND_BYTES: Final = 1 << 20


class BodyReader:
    """The body loader of one packing of ``task_id``: call it with an attachment.

    A round leaves out what the walk will skip unread (expired, or larger than a
    round): such a body is read only if asked for. Bodies the walk has passed
    are dropped.

    Args:
        refs: The task refs (bodies are checked against their links there).
        task_id: The task packed.
        entries: Its attachments in packing order, as stored: each has its
            ``oid`` and ``size`` (and, for a file, its ``path``).
        max_bytes: The byte budget (a round reads no more than it).
        now: The moment expiry is judged at.
        memo: Bodies add-tree read in this process, taken from there first.
    """

    def __init__(
        self,
        refs: TaskRefs,
        task_id: str,
        entries: Sequence[Attachment],
        max_bytes: int | None,
        now: float,
        memo: BodyMemo | None = None,
    ) -> None:
        self.refs = refs
        self.task_id = task_id
        self.entries = entries
        self.now = now
        self.memo = memo if memo is not None else BodyMemo()
        #: Each entry's index in packing order, by blob id.
        self.position = {_oid(entry): index for index, entry in enumerate(entries)}
        # (an invalid budget is the walk's to refuse, before any body is read)
        usable = max_bytes if isinstance(max_bytes, int) and max_bytes > 0 else _ROUND_BYTES
        #: The bytes one round reads at most.
        self.window = max(64 * 1024, min(_ROUND_BYTES, usable))
        #: Bodies read and not yet asked for, by blob id.
        self.ready: dict[str, bytes] = {}
        #: The round git is reading now (at most one).
        self.inflight: list[tuple[list[str], Prefetch]] = []
        #: The next entry a round may take.
        self.cursor = 0
        #: Bodies of a round git stopped on: each is read alone, if asked for.
        self.suspect: set[str] = set()
        #: The work-tree file that may hold a blob, by blob id.
        self.on_disk: dict[str, bytes] = {}

    def __call__(self, entry: Attachment) -> str:
        """The checked text of ``entry``'s body."""
        oid = _oid(entry)
        known = self.memo.take(oid, entry.hash) if oid in self.memo else None
        if known is not None:
            # hashed in this process already (the sha256 is the link's): only decoded
            try:
                text = known[0].decode("utf-8")
            except UnicodeDecodeError:
                pass  # read again below, so that the error names the body
            else:
                if known[1] is not None:
                    mark_ahead(text, known[1])
                return text
        link = Link(sha256=entry.hash, oid=oid, size=_size(entry), source=entry.source)
        from_disk = self._from_worktree(entry, link)
        if from_disk is not None:
            return from_disk
        if oid not in self.ready:
            self._collect(self.position.get(oid))
        if oid not in self.ready:
            self._read_now(entry)
        self._read_ahead()
        data = self.ready.pop(oid, None)
        if data is None:
            return self.refs.read_body(self.task_id, link)  # names what is wrong
        return self.refs.check_body(self.task_id, link, data)

    def _from_worktree(self, entry: Attachment, link: Link) -> str | None:
        """The body from the work tree's file, when that file hashes to the link's
        sha256; ``None``: read it through git."""
        oid = link.oid
        if oid not in self.ready and oid not in self.on_disk:
            self._in_worktree(entry)
        path = self.on_disk.pop(oid, None)
        if path is None:
            return None
        copy = self.refs.repo.worktree_file(path, link.size)
        digest = hashlib.sha256(copy).hexdigest() if copy is not None else None
        if copy is None or digest != link.sha256:
            return None
        if oid in self.position:
            self.cursor = max(self.cursor, self.position[oid] + 1)
        self._read_ahead()
        return self.refs.check_body(self.task_id, link, copy, sha256=digest)

    def _in_worktree(self, entry: Attachment) -> bool:
        """Whether the work tree has a file of this body's size where the link says:
        then it is read from there (and through git only if it holds something else)."""
        path = entry.path
        if not path:
            return False
        raw = os.fsencode(path)
        if not self.refs.repo.worktree_has(raw, _size(entry)):
            return False
        self.on_disk[_oid(entry)] = raw
        return True

    def _unread_by_walk(self, entry: Attachment) -> bool:
        """Whether a round leaves this body out (read only if asked for)."""
        expires = entry.expires
        oid = _oid(entry)
        return (
            _size(entry) > self.window
            or (expires is not None and expires <= self.now)
            or oid in self.suspect
            or oid in self.memo  # read already, by add-tree
            or self._in_worktree(entry)
        )

    def _round_from(self, start: int, size: int = 0) -> list[str]:
        """The blob ids of the round that starts at entry ``start`` (``size``:
        bytes the round holds already). A round looks no further than a window's
        bytes of attachments, read or not: when the work tree holds the bodies, a
        round takes none of them, and looking at every attachment of a task (each
        an ``lstat``) cost more than a walk that reads a few dozen."""
        names: list[str] = []
        index = start
        looked = size
        while index < len(self.entries) and len(names) < _ROUND_BODIES:
            later = self.entries[index]
            if not self._unread_by_walk(later):
                if size + _size(later) > self.window:
                    break
                names.append(_oid(later))
                size += _size(later)
            looked += _size(later)
            index += 1
            if looked > self.window:
                break
        self.cursor = max(self.cursor, index)
        return names

    def _absorb(self, names: list[str], answers: list[tuple[bytes, bytes] | None]) -> None:
        for name, answer in zip(names, answers, strict=True):
            if answer is not None and answer[0] == b"blob":
                self.ready[name] = answer[1]

    def _collect(self, here: int | None) -> None:
        """Take in the round git was reading, and drop what the walk has passed."""
        for names, pending in self.inflight:
            # A round that fails (a damaged object in it) is read again body by
            # body, so the error names the body that is damaged.
            try:
                self._absorb(names, pending.collect())
            except CorruptData:
                self.suspect.update(names)
        self.inflight.clear()
        if here is not None:
            for name in [n for n in self.ready if self.position.get(n, here) < here]:
                del self.ready[name]  # passed by the walk

    def _read_now(self, entry: Attachment) -> None:
        """Read ``entry``'s body now, with the round after it when the walk will read it."""
        oid = _oid(entry)
        names = [oid]
        here = self.position.get(oid)
        if here is not None:
            self.cursor = max(self.cursor, here + 1)
            if not self._unread_by_walk(entry):
                names += self._round_from(here + 1, _size(entry))
        try:
            self._absorb(names, self.refs.repo.read_many([n.encode("ascii") for n in names]))
        except CorruptData:
            self.suspect.update(names)  # read alone by the caller, so the error names it

    def _read_ahead(self) -> None:
        """Ask git for the next round, unless one is on its way."""
        if not self.inflight and self.cursor < len(self.entries):
            names = self._round_from(self.cursor)
            if names:
                pending = self.refs.repo.prefetch([n.encode("ascii") for n in names])
                self.inflight.append((names, pending))


def _oid(entry: Attachment) -> str:
    """A stored attachment's blob id (a body at hand is never asked for)."""
    assert entry.oid is not None, entry.source
    return entry.oid


def _size(entry: Attachment) -> int:
    """A stored attachment's recorded size."""
    assert entry.size is not None, entry.source
    return entry.size
