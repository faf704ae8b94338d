"""The per-blob facts cache: what ranking learned of each blob, computed once.

Keyed by blob id (a blob never changes, so an entry never goes stale), shared
by every task of the repository and its worktrees at
``<common dir>/hydrate/blob-facts``, and disposable like the sha256 cache:
deleting it is always safe, and a missing, foreign, damaged or unreadable file
is a miss, never an error. It holds :class:`~.terms.BlobFacts` (size, text or
binary, word counts, defined names); a run that has every candidate's facts
reads no file body to rank. A run appends the facts it learned as one chunk
(one ``O_APPEND`` write: a new commit of k files costs k entries written, not
the whole file again, and concurrent runs never lose each other's chunks), or
a chunk per megabyte when it learns a whole tree; a chunk that does not decode
ends the file, which the next run rewrites whole.
Bounded: past :data:`MAX_ENTRIES` blobs, the file is rewritten with those not
used by the run that saves dropped, oldest first.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Iterable, Mapping
from typing import Final

import msgspec

from ..store import Repository, read_private, write_derived
from .terms import BlobFacts, blob_facts

__all__ = ["MAX_ENTRIES", "FactsCache", "gather"]

#: The file's first line; another (an older layout, stemmer or rule of defined names) is
#: a miss. Then chunks, each ``<length> <CRC-32>\n`` and that many bytes of msgpack (blob
#: id -> facts).
HEADER: Final = b"# git-hydrate blob-facts 6\n"
#: Blobs kept at most (about 3 KB each in a Python project).
MAX_ENTRIES: Final = 60_000

#: A chunk's entries are decoded one at a time, when asked: a run that needs the
#: facts of 20 blobs of 30,000 does not make Python objects of the others.
_decoder: Final = msgspec.msgpack.Decoder(dict[str, msgspec.Raw])
_facts: Final = msgspec.msgpack.Decoder(BlobFacts)
_encoder: Final = msgspec.msgpack.Encoder()
#: Bytes of encoded facts a run learning many blobs holds before it appends them as
#: a chunk (:meth:`FactsCache.put_encoded`): a tree's worth would be 10 MB at
#: 30,000 files, and twice that again while being written.
_FLUSH: Final = 1 << 20


def _framed(chunk: bytes) -> bytes:
    """A chunk as the file holds it: its length and CRC-32 on a line, then itself
    (a bit flipped, or a chunk cut short and another appended after it, is a
    damaged chunk, not facts that decode otherwise)."""
    return b"%d %d\n%s" % (len(chunk), zlib.crc32(chunk), chunk)


class FactsCache:
    """A derived, disposable map from blob id to :class:`BlobFacts`."""

    def __init__(self, path: str, repo: Repository | None = None) -> None:
        self.path = path
        self.repo = repo
        self._entries: dict[str, BlobFacts | msgspec.Raw] | None = None
        self._new: dict[str, BlobFacts | msgspec.Raw] = {}
        self._used: set[str] = set()
        self._damaged: set[str] = set()
        self._whole = True  # (whether the file read was whole: else it is rewritten)
        #: Entries this run appended already (:meth:`put_encoded`), and the bytes of
        #: encoded facts in :attr:`_new`.
        self._saved: set[str] = set()
        self._pending = 0

    @classmethod
    def of(cls, repo: Repository) -> FactsCache:
        """The cache of ``repo``, at ``<common dir>/hydrate/blob-facts``."""
        return cls(os.path.join(repo.common_dir, "hydrate", "blob-facts"), repo)

    def _read(self) -> dict[str, BlobFacts | msgspec.Raw]:
        """Every chunk's entries, up to the first that does not decode."""
        data = read_private(self.path)
        if data is None:
            # A missing file is whole: the first chunk appended makes it. One that
            # is there but not read (another user could have written it, or it
            # cannot be read) is rewritten whole: appending to it heals nothing.
            self._whole = not os.path.lexists(self.path)
            return {}
        self._whole = data.startswith(HEADER)
        if not self._whole:
            return {}
        entries: dict[str, BlobFacts | msgspec.Raw] = {}
        view, start = memoryview(data), len(HEADER)
        while start < len(data):
            end = data.find(b"\n", start, start + 24)
            size, _, crc = data[start:end].partition(b" ")
            if end < 0 or not size.isdigit() or not crc.isdigit():
                self._whole = False
                break
            stop = end + 1 + int(size)
            try:
                if stop > len(data) or zlib.crc32(view[end + 1 : stop]) != int(crc):
                    raise ValueError("a chunk cut short or damaged")
                entries.update(_decoder.decode(view[end + 1 : stop]))
            except (msgspec.DecodeError, ValueError):
                self._whole = False  # damaged: what follows is a miss, rewritten
                break
            start = stop
        return entries

    def _load(self) -> dict[str, BlobFacts | msgspec.Raw]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def get(self, oid: str) -> BlobFacts | None:
        """The facts of blob ``oid``, if known."""
        entries = self._load()
        found = entries.get(oid)
        if isinstance(found, msgspec.Raw):
            try:
                found = entries[oid] = _facts.decode(found)
            except (msgspec.DecodeError, ValueError):
                del entries[oid]  # (a damaged entry is a miss; the file is rewritten)
                self._damaged.add(oid)
                self._whole = False
                return None
        if found is not None:
            self._used.add(oid)
        return found

    def peek(self, oid: str) -> BlobFacts | None:
        """The facts of blob ``oid``, if known, decoded for this use only (kept
        encoded: the facts of a whole tree, asked once each, as objects would
        be most of a first run's memory)."""
        found = self._load().get(oid) or self._new.get(oid)
        if isinstance(found, msgspec.Raw):
            try:
                decoded: BlobFacts = _facts.decode(found)
            except (msgspec.DecodeError, ValueError):
                return self.get(oid)  # (a damaged entry: dropped as get() drops it)
            found = decoded
        if found is not None:
            self._used.add(oid)
        return found

    def put_encoded(self, oid: str, facts: BlobFacts, raw: bytes | None = None) -> None:
        """:meth:`put` for a run that learns many blobs: the facts are kept encoded
        (:meth:`peek` decodes them) and appended a chunk at a time, about
        :data:`_FLUSH` bytes each (no more are held; only :meth:`put`'s and
        :meth:`get`'s entries are asked back). ``raw``: ``facts`` encoded already."""
        entries = self._load()
        if oid in entries:
            self._used.add(oid)  # (a new one is used as such: see save())
        if oid in entries or oid in self._new or oid in self._saved:
            return
        kept = self._new[oid] = msgspec.Raw(_encoder.encode(facts) if raw is None else raw)
        self._pending += len(kept)
        if self._pending >= _FLUSH and self._whole:
            if self._held() <= MAX_ENTRIES:
                self._append()
            self._pending = 0  # (past the bound: asked again a chunk's worth later)

    def _held(self) -> int:
        """How many entries the file would hold with the new ones."""
        entries = self._load()
        return len(entries) + len(self._saved) + sum(oid not in entries for oid in self._new)

    def _append(self) -> None:
        """Append :attr:`_new` as one chunk (one ``O_APPEND`` write)."""
        chunk = _encoder.encode(self._new)
        try:
            write_derived(self.repo, self.path, HEADER, _framed(chunk), whole=False)
        except OSError:
            # not appended (a full disk, a file another user made): no chunk is
            # tried again this run; save() tries to rewrite the file once
            self._whole = False
            return
        self._saved.update(self._new)
        self._new.clear()
        self._pending = 0

    def put(self, oid: str, facts: BlobFacts) -> None:
        """Remember a blob's facts (written by :meth:`save`)."""
        entries = self._load()
        if oid in entries:
            self._used.add(oid)
        else:  # (new: used by this run as such, see save())
            entries[oid] = self._new[oid] = facts

    def save(self) -> None:
        """Append the new entries as one chunk (the first makes a missing file);
        rewrite the file whole instead when it is damaged or of another layout, or
        when it would hold more than
        :data:`MAX_ENTRIES` (merged with what it holds now, pruned). Failures are
        ignored: the cache only saves time."""
        if not self._new:
            return
        if self._whole and self._held() <= MAX_ENTRIES:
            self._append()
            return
        merged = self._read()  # (another run may have added some meanwhile)
        for oid in self._damaged:
            merged.pop(oid, None)
        merged.update(self._new)
        if len(merged) > MAX_ENTRIES:
            # keep what this run used (asked, learned, appended), then the newest of
            # the rest (insertion order)
            used = self._used | self._new.keys() | self._saved
            others = [oid for oid in merged if oid not in used]
            drop = len(merged) - MAX_ENTRIES
            for oid in others[:drop]:
                del merged[oid]
        chunk = _encoder.encode(merged)
        with contextlib.suppress(OSError):
            write_derived(self.repo, self.path, HEADER, _framed(chunk), whole=True)
            self._used.update(self._new)  # (still used by this run, if it saves again)
            self._new.clear()
            self._whole = True


def gather(
    repo: Repository,
    oids: Mapping[str, str],
    known: Mapping[str, BlobFacts] | None = None,
    cache: FactsCache | None = None,
) -> dict[str, BlobFacts]:
    """The facts of each path's blob (``oids``: path -> blob id): from the cache,
    else from ``known`` (facts of blobs just read, by blob id), else read through
    git. New facts are saved to the cache."""
    cache = cache or FactsCache.of(repo)
    by_oid: dict[str, BlobFacts] = {}
    missing: list[str] = []
    for oid in dict.fromkeys(oids.values()):
        facts = cache.get(oid)
        if facts is None and known is not None and oid in known:
            facts = known[oid]
            cache.put(oid, facts)
        if facts is None:
            missing.append(oid)
        else:
            by_oid[oid] = facts
    for oid, data in _read(repo, missing):
        by_oid[oid] = facts = blob_facts(data)
        cache.put(oid, facts)
    cache.save()
    return {path: by_oid[oid] for path, oid in oids.items() if oid in by_oid}


def _read(repo: Repository, oids: list[str]) -> Iterable[tuple[str, bytes]]:
    return repo.stream_blobs(oids) if oids else ()
