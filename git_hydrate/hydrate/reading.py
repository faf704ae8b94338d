"""add-tree's reading stage: the sha256, blob id and class of every candidate.

Each distinct blob is read once, ever: what reading learns goes to the sha256
cache (:mod:`.cache`), so re-hydrating an unchanged tree reads no blob at all.
A file read from disk (a work tree or directory) keeps its body, to be written
as a blob if it is picked.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from sys import intern
from typing import Final

import msgspec

from ..pack.boundaries import marks as marks_of
from ..pack.memo import BodyMemo
from ..secrets.prefilter import shared_prefilter
from ..store import BeyondSymlink, ConfinedTree
from ..taskrefs import TaskRefs
from .building import Building
from .cache import Sha256Cache, keep_compiled_prefilter
from .facts import FactsCache
from .forked import both_ends
from .rules import FileEntry, Skipped, classify
from .terms import BlobFacts, blob_facts, symbol_words

__all__ = ["Content", "Progress", "read_content"]

_path = attrgetter("path")
_encoder: Final = msgspec.msgpack.Encoder()
_facts: Final = msgspec.msgpack.Decoder(BlobFacts)
#: What the forked child sends of a blob (:class:`_Worktree`): ``None``, not the
#: work tree's; else its sha256, class, size, facts (if wanted), body (if kept), the
#: words of its defined names and its body's marks (if the memo marks).
_sent: Final = msgspec.msgpack.Decoder(
    tuple[str, str, int, msgspec.Raw, bytes | None, list[tuple[str, ...]], list[int] | None] | None
)
#: The facts the child did not send (encoded ``None``).
_NO_FACTS: Final = msgspec.Raw(b"\xc0")
_size = attrgetter("size")

#: The classes whose blobs ranking knows the words of: text, and generated text (its
#: words count in every file's weights as before it was told apart, and a file the
#: task names is taken anyway); a blob's facts follow its content alone.
_WORDED: Final = ("text", "generated")

#: Called as ``progress(files_done, files_total, bytes_done)`` while content is read.
Progress = Callable[[int, int, int], None]


@dataclass
class Content:
    """What reading the candidates found: per path ``(oid, sha256, class, size)``,
    the bodies of files read from disk (to write if picked), and what failed."""

    info: dict[str, tuple[str, str, str, int]] = field(default_factory=dict)
    to_write: dict[str, bytes] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    files_done: int = 0
    bytes_done: int = 0
    #: Keeps the text bodies read, for the prompt that follows (``add-tree --prompt``).
    memo: BodyMemo = field(default_factory=BodyMemo)
    #: What ranking learns of each blob read (by blob id), so it reads none again;
    #: nothing when the run does not rank.
    facts: dict[str, BlobFacts] = field(default_factory=dict)
    learning: bool = True
    #: The blob-facts cache, opened at the first blob read: a blob it knows (read
    #: again because the sha256 cache missed) is not tokenised again.
    kept: FactsCache | None = None
    #: The tree's word index being built: it takes the facts of each blob read
    #: instead of :attr:`facts` (and the facts cache, encoded).
    building: Building | None = None
    #: Saving what reading learned (the sha256 cache, the tree's verdicts), when
    #: :func:`read_content` left it to :meth:`save`.
    saving: Callable[[], None] | None = None

    def save(self) -> None:
        """Save what reading learned, if :func:`read_content` left it to this (once)."""
        saving, self.saving = self.saving, None
        if saving is not None:
            saving()

    def learn(self, oid: str, cls: str, data: bytes, paths: Iterable[str]) -> None:
        """Keep the facts of a blob just read (a text's words; of others, none),
        unless the facts cache has them already; or give them to the index being
        built, for the files ``paths`` that hold the blob."""
        if not self.learning:
            return
        building = self.building
        if building is not None:
            known = building.known(oid)
            new = known is None
            if known is None:
                known = blob_facts(data) if cls in _WORDED else BlobFacts(False, len(data))
            building.learn(oid, paths, known, new=new)
            return
        if self.kept is not None and self.kept.get(oid) is not None:
            return
        self.facts[oid] = blob_facts(data) if cls in _WORDED else BlobFacts(False, len(data))

    def wants(self, oid: str, cls: str) -> bool:
        """Whether :meth:`learn` would tokenise blob ``oid`` (of class ``cls``)."""
        if not self.learning or cls not in _WORDED:
            return False
        if self.building is not None:
            return self.building.known(oid) is None
        return self.kept is None or self.kept.get(oid) is None

    def learn_sent(
        self,
        oid: str,
        cls: str,
        size: int,
        raw: msgspec.Raw | None,
        paths: Iterable[str],
        splits: list[tuple[str, ...]],
    ) -> bool:
        """:meth:`learn` of a blob another process read and tokenised (``raw``: its
        facts encoded, if :meth:`wants` said so there; ``splits``: the words of each
        defined name); ``False`` if they are wanted here but were not sent (nothing
        is learned then)."""
        if not self.learning:
            return True
        building = self.building
        if building is None and self.kept is not None and self.kept.get(oid) is not None:
            return True
        known = building.known(oid) if building is not None else None
        new = known is None
        if known is None:
            if cls not in _WORDED:
                known = BlobFacts(False, size)
            elif raw is None:
                return False
            else:
                known = _facts.decode(raw)
        if building is None:
            self.facts[oid] = known
            return True
        encoded = bytes(memoryview(raw)) if new and raw is not None else None
        building.learn(oid, paths, known, new=new, raw=encoded, splits=splits if new else None)
        return True


def _read_from_disk(
    refs: TaskRefs,
    entry: FileEntry,
    reading: tuple[int, ConfinedTree | None],
    cache: Sha256Cache,
    found: Content,
) -> None:
    """Read a file from disk (``reading``: the largest file read, and where from),
    never through a symbolic link on its way (one swapped in since it was listed)."""
    max_file, files = reading
    try:
        if files is None:
            raise FileNotFoundError(entry.path)
        data = files.read(entry.raw_path, max_file + 1)
    except BeyondSymlink:
        found.skipped.append(Skipped(entry.path, "beyond_symlink", 0))
        return
    except OSError:
        found.skipped.append(Skipped(entry.path, "unreadable", entry.size))
        return
    if len(data) > max_file:
        found.skipped.append(Skipped(entry.path, "too_large", len(data)))
        return
    oid = refs.repo.blob_id(data).decode("ascii")
    cls = classify(data)
    digest = hashlib.sha256(data).hexdigest()
    cache.put(oid, digest, cls)  # saves the read once these files are committed
    found.learn(oid, cls, data, (entry.path,))
    if cls == "text":
        found.memo.offer(oid, digest, data)
    found.info[entry.path] = (oid, digest, cls, len(data))
    found.to_write[oid] = data
    found.files_done += 1
    found.bytes_done += len(data)


class _Unread:
    """The blobs left to read, each with the files that hold it: its first file,
    and the others of the few blobs more than one file holds (not a list per
    blob: 30,000 lists of one at a first task's reading)."""

    def __init__(self) -> None:
        self.first: dict[str, FileEntry] = {}
        self.more: dict[str, list[FileEntry]] = {}

    def add(self, oid: str, entry: FileEntry) -> None:
        """Note that ``entry`` holds blob ``oid``."""
        if self.first.setdefault(oid, entry) is not entry:
            self.more.setdefault(oid, []).append(entry)

    def entries(self, oid: str) -> list[FileEntry]:
        """The files that hold blob ``oid``, in the order added."""
        more = self.more.get(oid)
        return [self.first[oid]] if more is None else [self.first[oid], *more]

    def paths(self, oid: str) -> list[str]:
        """The paths of :meth:`entries`."""
        more = self.more.get(oid)
        first = self.first[oid].path
        return [first] if more is None else [first, *(entry.path for entry in more)]


class _Worktree:
    """Reading the unread blobs the work tree holds as they are (the others, to
    read through git), shared with a forked child (:func:`.forked.both_ends`):
    it reads, hashes, scans and tokenises blobs from the end, and this process
    takes what it sent in order, as if it had read them itself."""

    def __init__(
        self,
        refs: TaskRefs,
        unread: _Unread,
        take: Callable[[str, bytes], None],
        taken: Callable[[str, str, str, int], None],
        found: Content,
    ) -> None:
        self.repo, self.take, self.taken, self.found = refs.repo, take, taken, found
        self.unread, self.oids = unread, list(unread.first)
        self.through_git: list[str] = []
        #: Bytes of text bodies the child may still send for the memo: once its
        #: texts do not fit, one process's memo would have overflowed (a text
        #: merged without its body drops the memo), so it sends no more.
        self.room = found.memo.limit - found.memo.size if found.memo.limit else -1
        # Every body fits the memo and the prompt, which neutralises them all:
        # each process finds the marks of its share as it reads (not after it).
        total = sum(e.size for e in unread.first.values())
        if 0 <= total <= self.room and total <= found.memo.prompt_bytes:
            found.memo.marking = True

    def run(self) -> list[str]:
        """Read them all: the blobs left to read through git."""
        self.found.wants("", "text")  # (the facts cache read once, before the fork)
        shared_prefilter()  # (the secret scan's, compiled or loaded once: the child has it)
        both_ends(len(self.oids), self.own, self.remote, self.merge)
        return self.through_git

    def own(self, i: int) -> None:
        oid = self.oids[i]
        first = self.unread.first[oid]
        data = self.repo.worktree_blob(first.raw_path, oid, first.size)
        if data is None:
            self.through_git.append(oid)
        else:
            self.take(oid, data)

    def remote(self, j: int) -> bytes:
        """In the child: what :meth:`own` would learn of item ``j``, encoded."""
        oid = self.oids[j]
        first = self.unread.first[oid]
        data = self.repo.worktree_blob(first.raw_path, oid, first.size)
        if data is None:
            return _encoder.encode(None)
        cls = classify(data)
        digest = hashlib.sha256(data).hexdigest()
        raw, splits = _NO_FACTS, []
        if self.found.wants(oid, cls):
            facts = blob_facts(data)
            raw = msgspec.Raw(_encoder.encode(facts))
            splits = list(map(symbol_words, facts.symbols))  # (split here, not there)
        body, marks = None, None
        if cls == "text":
            body = data if len(data) <= self.room else None
            self.room = self.room - len(data) if body is not None else -1
            if body is not None and self.found.memo.marking:
                marks = marks_of(data.decode("utf-8"))
        return _encoder.encode((digest, cls, len(data), raw, body, splits, marks))

    def merge(self, j: int, result: bytes) -> None:
        """Take what the child learned of item ``j`` (read it here if that is short)."""
        oid = self.oids[j]
        try:
            sent = _sent.decode(result)
        except msgspec.DecodeError:  # (damaged: read here, as without the child)
            self.own(j)
            return
        if sent is None:
            self.through_git.append(oid)
            return
        digest, cls, size, facts, body, splits, marks = sent
        cls, raw = intern(cls), None if facts == _NO_FACTS else facts
        paths = self.unread.paths(oid)
        if not self.found.learn_sent(oid, cls, size, raw, paths, splits):
            self.own(j)
            return
        if cls == "text":
            if body is not None:
                self.found.memo.offer(oid, digest, body, marks)
            elif self.found.memo.limit:
                self.found.memo.drop()  # (it could not have held them all)
        self.taken(oid, digest, cls, size)


def read_content(
    refs: TaskRefs,
    candidates: list[FileEntry],
    max_file: int,
    progress: Progress | None,
    *,
    worktree_copies: bool = False,
    memo: BodyMemo | None = None,
    learning: bool = True,
    building: Building | None = None,
    tree: str | None = None,
    later: bool = False,
    files: ConfinedTree | None = None,
) -> Content:
    """sha256, oid and class of every candidate: from the cache, the disk, or git
    (``worktree_copies``: a blob the work tree holds as it is, from there; ``files``:
    where a candidate without a blob id is read).
    ``building``: the word index built from the facts of the blobs read. ``tree``:
    the tree the candidates are files of (its verdicts are kept by its id).
    ``later``: what was learned is saved by :meth:`Content.save`, not before
    returning (once the index being built is kept: its memory is then free)."""
    cache = Sha256Cache.of(refs.repo)
    keep_compiled_prefilter(refs.repo)
    found = Content(memo=memo if memo is not None else BodyMemo(), learning=learning)
    found.building = building if learning else None
    found.kept = FactsCache.of(refs.repo) if learning else None  # (read at the first read)
    total = len(candidates)
    oids = [e.oid or "" for e in candidates]  # ("": read from disk; the cache asked once)
    if tree is not None and _of_tree(cache, tree, candidates, oids, found):
        return found
    unread = _known(refs, candidates, oids, (max_file, progress, files), cache, found)

    def take(oid: str, data: bytes) -> None:
        cls = classify(data)
        digest = hashlib.sha256(data).hexdigest()
        found.learn(oid, cls, data, unread.paths(oid))
        if cls == "text":
            found.memo.offer(oid, digest, data)
        taken(oid, digest, cls, len(data))

    def taken(oid: str, digest: str, cls: str, size: int) -> None:
        _record(cache, found, unread.entries(oid), (oid, digest, cls, size))
        if progress is not None:
            progress(found.files_done, total, found.bytes_done)

    through_git = list(unread.first)
    if worktree_copies and refs.repo.work_tree is not None:
        through_git = _Worktree(refs, unread, take, taken, found).run()
    for oid, data in refs.repo.stream_blobs(through_git) if through_git else ():
        take(oid, data)
    found.saving = partial(_save, cache, tree, candidates, oids, found.info)
    if not later:
        found.save()
    return found


def _known(
    refs: TaskRefs,
    candidates: list[FileEntry],
    oids: list[str],
    reading: tuple[int, Progress | None, ConfinedTree | None],
    cache: Sha256Cache,
    found: Content,
) -> _Unread:
    """Record the candidates the sha256 cache knows and read those on disk (``reading``:
    the largest file read, the progress callback, and where files are read): the
    blobs left to read."""
    max_file, progress, files = reading
    unread = _Unread()
    for entry, hit in zip(candidates, cache.known(oids), strict=True):
        oid = entry.oid
        if oid is None:
            _read_from_disk(refs, entry, (max_file, files), cache, found)
            if progress is not None:
                progress(found.files_done, len(candidates), found.bytes_done)
        elif hit is None:
            unread.add(oid, entry)
        else:
            found.info[entry.path] = (oid, hit[0], intern(hit[1]), entry.size)  # (few classes)
            found.files_done += 1
    return unread


def _save(
    cache: Sha256Cache,
    tree: str | None,
    candidates: list[FileEntry],
    oids: list[str],
    info: dict[str, tuple[str, str, str, int]],
) -> None:
    """Save the sha256 cache, and keep the tree's verdicts (for the next task)."""
    cache.save()
    _keep_tree(cache, tree, candidates, oids, info)


def _record(
    cache: Sha256Cache, found: Content, entries: list[FileEntry], row: tuple[str, str, str, int]
) -> None:
    """Record what reading learned of a blob (``row``: its id, sha256, class and
    size) for its files ``entries``, and in the sha256 cache."""
    cache.put_row(row)
    for entry in entries:
        found.info[entry.path] = row
        found.files_done += 1
        found.bytes_done += row[3]


def _keep_tree(
    cache: Sha256Cache,
    tree: str | None,
    candidates: list[FileEntry],
    oids: list[str],
    info: dict[str, tuple[str, str, str, int]],
) -> None:
    """Keep the verdicts of the candidates, files of ``tree``, unless one failed."""
    if tree is None:
        return
    read = [info.get(entry.path) for entry in candidates]
    verdicts = [(row[1], row[2]) for row in read if row is not None]
    if len(verdicts) == len(oids):
        cache.keep_tree(tree, oids, verdicts)


def _of_tree(
    cache: Sha256Cache, tree: str, candidates: list[FileEntry], oids: list[str], found: Content
) -> bool:
    """Whether the tree's kept verdicts answer for every candidate (each file's
    record then made in C, from git's listing and those verdicts)."""
    kept = cache.of_tree(tree, oids)
    if kept is None:
        return False
    rows = zip(oids, *kept, map(_size, candidates), strict=True)
    found.info.update(zip(map(_path, candidates), rows, strict=True))
    found.files_done = len(candidates)
    return True
