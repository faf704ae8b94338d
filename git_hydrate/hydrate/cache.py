"""The sha256 cache: each blob's sha256 and content class, read once ever.

A tree's own verdicts are also kept by tree id (:meth:`Sha256Cache.of_tree`): a
new task on a known tree reads those of its own files, not the whole cache.

Derived and disposable: deleting it is always safe (the next add-tree reads
the blobs again). A class is a verdict of the rules of the day (the secret
scan above all): the file names the version of the code that decides it
(:func:`rules_version`), and a file of another version is dropped whole, so a
blob is scanned again after the rules change. Bounded: past
:data:`MAX_ENTRIES` blobs, those the saving run did not use go first, oldest
first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import zlib
from functools import lru_cache
from itertools import compress, repeat
from operator import itemgetter
from typing import Final, TypeAlias, cast

import msgspec

from ..store import Repository, open_regular, private_file, read_private, write_derived
from ..store.keyed import check_line, sealed, unsealed
from .listings import keep_by_tree

__all__ = ["MAX_ENTRIES", "MAX_TREES", "Sha256Cache", "keep_compiled_prefilter", "rules_version"]

#: Blobs kept at most (about 110 bytes each: 44 MB).
MAX_ENTRIES: Final = 400_000
#: Trees whose own verdicts are kept at most (about 100 bytes a file each).
MAX_TREES: Final = 8
#: The code that decides a blob's class (package-relative): the secret rules (every
#: module of ``secrets/``), the skip rules, what generated code says of itself, and
#: the marks of git-hydrate's own output.
_DECIDING: Final = (
    "secrets/",
    "hydrate/rules.py",
    "hydrate/generated.py",
    "pack/render.py",
    "pack/seed.py",
)
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _deciding_files() -> list[str]:
    files: list[str] = []
    for name in _DECIDING:
        path = os.path.join(_PACKAGE, name)
        if not name.endswith("/"):
            files.append(path)
            continue
        with contextlib.suppress(OSError):
            files += [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith(".py")]
    return files


@lru_cache(maxsize=1)
def rules_version() -> str:
    """The digest of the code that classifies a blob (:data:`_DECIDING`): any change
    to it, even one that looks harmless, makes every cached verdict unknown."""
    digest = hashlib.sha256()
    for path in _deciding_files():
        digest.update(os.path.relpath(path, _PACKAGE).encode() + b"\0")
        try:
            with open(path, "rb") as fh:
                digest.update(fh.read())
        except OSError:
            digest.update(b"-")  # (an install without the source: a version of its own)
        digest.update(b"\0")
    return digest.hexdigest()[:32]


#: The first line of the file holding the secret scan's compiled prefilter.
_PREFILTER_HEADER: Final = b"# git-hydrate secret-prefilter %s\n"


def keep_compiled_prefilter(repo: Repository, *, scanning: int | None = None) -> None:
    """Keep the secret scan's compiled prefilter (optional ``hyperscan``) in
    ``<common dir>/hydrate/secret-prefilter``, so that a process loads it instead
    of compiling it (40 ms). Derived and disposable: the file names the key of
    what it holds (expressions, library version, machine); any other is rebuilt.
    ``scanning``: how many bytes are about to be scanned; below what makes the
    prefilter worth building (:data:`git_hydrate.secrets.PREFILTER_AFTER`), the
    scan goes on without it and nothing is kept.
    """
    from ..secrets import PREFILTER_AFTER, keep_compiled

    if scanning is not None and scanning < PREFILTER_AFTER:
        return

    path = os.path.join(repo.common_dir, "hydrate", "secret-prefilter")
    owner = os.getpid()  # (a forked child, see .forked, writes no file)

    def load(key: str) -> bytes | None:
        header = _PREFILTER_HEADER % key.encode("ascii")
        data = read_private(path)  # a scanner nobody else could have planted, or none
        return data[len(header) :] if data is not None and data.startswith(header) else None

    def save(key: str, data: bytes) -> None:
        if os.getpid() != owner:
            return
        with contextlib.suppress(OSError):  # only saves time
            header = _PREFILTER_HEADER % key.encode("ascii")
            repo.replace_file(path, [header, data], private=True)

    keep_compiled(load, save)


#: One cache line; anything else in a block is ignored.
_CACHE_LINE: Final = re.compile(
    rb"^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{64}) "
    rb"(text|empty|binary|not_utf8|lfs_pointer|own_output|secret|generated)$",
    re.MULTILINE,
)
#: The line before each block of cache lines: the block's CRC-32 (hex) and length.
_BLOCK_HEAD: Final = re.compile(rb"# ([0-9a-f]{8}) ([0-9]{1,9})\n")
#: Cache lines a block holds at most: what one damaged byte costs (those blobs read
#: again), against one check each (a first task's 30,000 lines: 470 blocks).
_BLOCK_LINES: Final = 64


def _seal(out: bytearray, block: bytearray) -> None:
    """Append ``block`` (cache lines) to ``out`` after its head, and empty it."""
    out += b"# " + check_line(block)
    out += block
    block.clear()


def _sound_blocks(data: bytes, at: int) -> tuple[list[tuple[int, int]], bool]:
    """Where the blocks of ``data`` from ``at`` on are whose CRC-32 and length are
    those written (start and end of each), and whether anything else was found: a
    damaged block, or one cut short (a run killed while appending; a concurrent
    one still appending). A block that does not check is skipped up to the next
    ``#``, where a head may start, so the blocks after it still count."""
    spans: list[tuple[int, int]] = []
    damaged, end = False, len(data)
    while at < end:
        head = _BLOCK_HEAD.match(data, at)
        if head is not None:
            start = head.end()
            stop = start + int(head[2])
            if stop <= end and zlib.crc32(memoryview(data)[start:stop]) == int(head[1], 16):
                spans.append((start, stop))
                at = stop
                continue
        damaged = True
        # (only a head holds "#": a block cut mid-line runs into the next one's head)
        at = data.find(b"#", at + 1)
        if at < 0:
            break
    return spans, damaged


#: The first line of a tree's kept verdicts; the second names the rules' version, the
#: third is the CRC-32 and length of the rest (:func:`~git_hydrate.store.keyed.sealed`:
#: a flipped bit could turn a secret into text).
_TREE_HEADER: Final = b"# git-hydrate tree-verdicts 4\n"
_CLASSES: Final = (
    "text",
    "empty",
    "binary",
    "not_utf8",
    "lfs_pointer",
    "own_output",
    "secret",
    "generated",
)
_CLASS_INDEX: Final = {cls: i for i, cls in enumerate(_CLASSES)}


class _TreeVerdicts(msgspec.Struct, array_like=True):
    """A tree's kept verdicts, as columns in the order of its files read: their blob
    ids and sha256 digests (hex, one a line) and a class each (an index of
    :data:`_CLASSES`)."""

    oids: str
    digests: str
    classes: bytes


_tree_decoder: Final = msgspec.msgpack.Decoder(_TreeVerdicts)


def _tree_verdicts(path: str, version: bytes, oids: str) -> tuple[list[str], list[str]] | None:
    """The digests and classes the tree's kept file at ``path`` holds for the blobs
    ``oids`` (one a line, in order); ``None``: none, not this user's, of another
    layout or rules' version, damaged, or kept for other blobs (another file set of
    the tree)."""
    body = unsealed(path, version)
    if body is None:
        return None
    try:
        kept = _tree_decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    if kept.oids != oids or max(kept.classes, default=0) >= len(_CLASSES):
        return None
    digests = kept.digests.split("\n") if kept.digests else []
    if len(digests) != len(kept.classes) or set(map(len, digests)) - {64}:
        return None
    return digests, list(map(_CLASSES.__getitem__, kept.classes))


#: A blob's entry: ``(sha256, class)``, or a row ``(blob id, sha256, class, size)``.
_Entry: TypeAlias = "tuple[str, str] | tuple[str, str, str, int]"


def _verdict(entry: _Entry) -> tuple[str, str]:
    """``(sha256, class)`` of an entry."""
    return (entry[1], entry[2]) if len(entry) == 4 else entry


class Sha256Cache:
    """A derived, disposable map from blob id to ``(sha256, classification)``.

    Stored as ``<common dir>/hydrate/sha256-cache``: a header line, a line naming
    the rules' version (:func:`rules_version`), then one ``<oid> <sha256>
    <class>`` line per blob, appended as blobs are first read, in blocks of at
    most :data:`_BLOCK_LINES` lines, each after a line ``# <CRC-32> <length>``
    of it. A blob's content never changes, so an entry never goes stale (under
    one version); a missing, foreign or damaged file is simply rebuilt: a block
    that does not check is ignored (its blobs are read again), and the file is
    then written again whole. Deleting the file is always safe. Its verdicts are
    acted on unchecked (a blob it calls text is not scanned for secrets again, a
    digest is committed as the body's), so it is written readable and writable
    by this user only and trusted only then
    (:func:`~git_hydrate.store.read_private`): in a shared repository another
    member could plant a line. (The blocks' CRC-32 tells damage, not a forger.)
    """

    #: The version follows the classification rules (secrets, own_output, generated):
    #: older files are rebuilt.
    HEADER: Final = b"# git-hydrate sha256-cache 11\n"

    def __init__(self, path: str, repo: Repository | None = None) -> None:
        self.path = path
        self.repo = repo  # shares what it creates as core.sharedRepository asks
        #: Per blob ``(sha256, class)``, or the reading's row of a blob put
        #: (:meth:`put_row`: ``(blob id, sha256, class, size)``).
        self._entries: dict[str, _Entry] | None = None
        #: The blobs put that were not known, in order (their entries are in ``_entries``:
        #: not a second dict of 30,000 at a first task's reading, issue 33).
        self._new: list[str] = []
        #: Whether a row was put (its entry is the row: :meth:`known` maps it).
        self._rows = False
        self._used: set[str] = set()
        self._rewrite = False

    @property
    def header(self) -> bytes:
        """The file's first two lines: the layout, then the rules' version."""
        return self.HEADER + b"# rules %s\n" % rules_version().encode("ascii")

    @classmethod
    def of(cls, repo: Repository) -> Sha256Cache:
        """The cache of ``repo``, at ``<common dir>/hydrate/sha256-cache``."""
        return cls(os.path.join(repo.common_dir, "hydrate", "sha256-cache"), repo)

    def _load(self) -> dict[str, _Entry]:
        if self._entries is not None:
            return self._entries
        entries: dict[str, _Entry] = {}
        data = read_private(self.path) or b""
        header = self.header
        if not data.startswith(header):
            self._rewrite = True  # none, another layout, or verdicts of other rules
        else:
            # (a swapped or changed digest would be committed as the sha256 of a body
            # that has another: only blocks that check are read)
            spans, damaged = _sound_blocks(data, len(header))
            for start, stop in spans:
                for oid, digest, cls in _CACHE_LINE.findall(data, start, stop):
                    entries[oid.decode("ascii")] = (digest.decode("ascii"), cls.decode("ascii"))
            self._rewrite = damaged  # (written again whole, without what did not check)
        self._entries = entries
        return entries

    def get(self, oid: str) -> tuple[str, str] | None:
        """``(sha256, class)`` of the blob ``oid`` if it was seen before (under the
        rules of this version)."""
        found = self._load().get(oid)
        if found is not None:
            self._used.add(oid)
        return _verdict(found) if found is not None else None

    def known(self, oids: list[str]) -> list[tuple[str, str] | None]:
        """What :meth:`get` answers for each of ``oids`` (``None``: unknown), at once."""
        found = list(map(self._load().get, oids))
        self._used.update(compress(oids, found))
        if self._rows:  # (a row put, saved or not: its verdict)
            return [_verdict(entry) if entry is not None else None for entry in found]
        return cast(list[tuple[str, str] | None], found)

    def of_tree(self, tree: str, oids: list[str]) -> tuple[list[str], list[str]] | None:
        """The sha256 digests and classes of the blobs ``oids`` (files of ``tree``, in
        order) as :meth:`keep_tree` kept them for the same blobs, without loading the
        whole cache; ``None``: not kept so."""
        if not self._whole_is_sound():
            return None
        path = self._tree_path(tree)
        found = _tree_verdicts(path, self._tree_header, "\n".join(oids))
        if found is not None:
            with contextlib.suppress(OSError):
                os.utime(path)  # used last: kept longest
        return found

    def _whole_is_sound(self) -> bool:
        """Whether the whole cache is there, this user's alone, of this layout and
        rules: a tree's verdicts are a view of it (the cache removed, damaged or open
        to others: every blob is read again, as without them)."""
        header = self.header
        try:
            with open_regular(self.path) as fh:
                return private_file(os.fstat(fh.fileno())) and fh.read(len(header)) == header
        except OSError:
            return False

    def _tree_path(self, tree: str) -> str:
        return os.path.join(os.path.dirname(self.path), "tree-verdicts", tree)

    @property
    def _tree_header(self) -> bytes:
        return _TREE_HEADER + b"# rules %s\n" % rules_version().encode("ascii")

    def keep_tree(self, tree: str, oids: list[str], verdicts: list[tuple[str, str]]) -> None:
        """Keep the ``(sha256, class)`` of each blob of ``oids`` (files of ``tree``, in
        order) by tree id, for :meth:`of_tree`: private, CRC-checked, the
        :data:`MAX_TREES` used last. Failing only costs time."""
        digests = list(map(itemgetter(0), verdicts))
        classes = list(map(_CLASS_INDEX.get, map(itemgetter(1), verdicts), repeat(-1)))
        if self.repo is None or min(classes, default=0) < 0 or set(map(len, digests)) - {64}:
            return  # (a class of another version: not kept)
        kept = _TreeVerdicts("\n".join(oids), "\n".join(digests), bytes(classes))
        body = msgspec.msgpack.encode(kept)
        folder = os.path.dirname(self._tree_path(tree))
        keep_by_tree(self.repo, folder, tree, sealed(self._tree_header, body), MAX_TREES)

    def put(self, oid: str, digest: str, cls: str) -> None:
        """Remember a blob (written by :meth:`save`)."""
        entries = self._load()
        if oid in entries:
            self._used.add(oid)
        else:  # (new: used by this run as such, not named in ``_used`` too)
            entries[oid] = (digest, cls)
            self._new.append(oid)

    def put_row(self, row: tuple[str, str, str, int]) -> None:
        """:meth:`put` of ``row`` (blob id, sha256, class, size), held as it is: the
        reading that learned it holds it already (not a second tuple per blob:
        30,000 at a first task's reading, issue 33)."""
        entries = self._load()
        oid = row[0]
        if oid in entries:
            self._used.add(oid)
        else:
            entries[oid] = row
            self._new.append(oid)
            self._rows = True

    def save(self) -> None:
        """Append the new entries (or rewrite a damaged file). Failures are ignored:
        the cache only saves time."""
        if not self._new and not self._rewrite:
            return
        entries = self._load()
        if len(entries) > MAX_ENTRIES:
            # keep what this run used, then the newest of the rest (insertion order)
            used, new = self._used, set(self._new)
            others = [oid for oid in entries if oid not in used and oid not in new]
            for oid in others[: len(entries) - MAX_ENTRIES]:
                del entries[oid]
            self._rewrite = True
        # (one buffer grown block by block: not a list of every line, then their join)
        lines, block = bytearray(), bytearray()
        for count, oid in enumerate(entries if self._rewrite else self._new, 1):
            d, c = _verdict(entries[oid])
            block += b"%s %s %s\n" % (oid.encode(), d.encode(), c.encode())
            if count % _BLOCK_LINES == 0:
                _seal(lines, block)
        if block:
            _seal(lines, block)
        try:
            # (the buffer as it is: no copy of 30,000 lines)
            write_derived(
                self.repo, self.path, self.header, cast(bytes, lines), whole=self._rewrite
            )
        except OSError:
            return
        self._used.update(self._new)  # (still used by this run, if it saves again)
        self._new.clear()
        self._rewrite = False
