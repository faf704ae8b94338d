"""Objects: reading through the cat-file reader, writing loose objects and packs.

Reads of loose objects are answered in-process (:mod:`.loose`), the rest by one
``git cat-file --batch`` process (no dulwich import for commands that only
read); writes produce loose objects exactly as git does (temporary file,
rename) so that concurrent writers and ``git gc`` never see half an object;
many new blobs at once go into one pack through dulwich, and the objects of a
bulk write into one pack through git (:mod:`.packs`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

from ..errors import CorruptData, NotWritable
from .base import Identity
from .catfile import CatFile, Prefetch, digest_of, stream_objects
from .commits import CommitInfo, parse_commit_tree
from .loose import LooseReader
from .packs import PackedWrites
from .perms import current_umask, shared_file_mode
from .process import format_tz, not_writable

if TYPE_CHECKING:
    from dulwich.objects import ShaFile

__all__ = ["MODE_BLOB", "MODE_TREE", "CommitInfo", "Objects", "parse_commit_tree"]

MODE_BLOB: Final = 0o100644
MODE_TREE: Final = 0o040000
#: The largest object :meth:`Objects.remembering` keeps (bodies past it are streamed).
_MEMO_OBJECT_BYTES: Final = 64 << 10
#: What :meth:`Objects.remembering` keeps in all, at most.
_MEMO_BYTES: Final = 64 << 20
#: Reads sent at once while remembering (at most ~16 KiB of requests, under a pipe's buffer).
_MEMO_CHUNK: Final = 256
#: The feature :class:`CatFile` asks of git first (remembered when git lacks it).
_COMMANDS: Final = "cat-file --batch-command"
#: A spec naming the same object forever: a full id, or a full id and a path.
_IMMUTABLE_SPEC: Final = re.compile(rb"\A(?:[0-9a-f]{40}|[0-9a-f]{64})(?::|\Z)")


class Objects(PackedWrites):
    """Reading and writing git objects (mixed into :class:`~git_hydrate.store.Repository`)."""

    #: The objects :meth:`remembering` keeps, by the spec that read them.
    _memo: dict[bytes, tuple[bytes, bytes]] | None = None
    _memo_bytes = 0
    _memo_trees: dict[bytes, dict[bytes, tuple[int, bytes]]] = {}  # noqa: RUF012 - replaced, never changed
    _loose: LooseReader | Literal[False] | None = None  # False: git reads all (see _answers)

    def _batch(self) -> CatFile:
        """The cat-file process, ready for a new read: earlier prefetches are
        settled first (one that failed keeps its error), and a process that
        stopped is replaced, so a read never inherits another read's failure."""
        if self._cat_file is not None:
            self._cat_file.settle()
            if self._cat_file.broken:
                self._cat_file.close()
                self._cat_file = None
        if self._cat_file is None:
            commands, told = not self.lacks(_COMMANDS), lambda: self._remember_lacking(_COMMANDS)
            self._cat_file = CatFile(self.git_dir, self._cwd, self._env, commands, told)
        return self._cat_file

    def resolve_object(self, spec: bytes) -> bytes | None:
        """The id of the object ``spec`` names (git's object name syntax), or ``None``."""
        found = self._batch().resolve(spec)
        return None if found is None else found[0]

    def rev_parse(self, spec: str, kind: str = "commit") -> str | None:
        """The id ``spec^{kind}`` names (``commit``, ``tree``, ``object``), or ``None``.

        Asked of the cat-file process that reads objects (no process of its own),
        unless ``spec`` holds a path (``rev:path``, ``:/text``), which git reads
        relative to the work tree and its current directory, or a reflog or
        branch-relation suffix (``@{u}``, ``@{5}``, ``@{push}``), on which cat-file
        stops when there is nothing to name (where rev-parse says "no such
        revision"): those, and any spec cat-file stops on, go to ``git rev-parse``.
        """
        if ":" not in spec and "@{" not in spec:
            name = f"{spec}^{{{kind}}}".encode("utf-8", "surrogateescape")
            try:
                found = self.resolve_object(name)
            except CorruptData:
                pass  # the reader stopped on this spec (and is replaced): ask rev-parse
            else:
                return None if found is None else found.decode("ascii")
        proc = self.git(["rev-parse", "--verify", "--quiet", f"{spec}^{{{kind}}}"], check=False)
        oid = proc.stdout.decode("ascii", "replace").strip()
        return oid if proc.returncode == 0 and oid else None

    def read_raw(self, spec: bytes) -> tuple[bytes, bytes]:
        """``(type, content)`` of the object ``spec`` names (an id or ``rev:path``).

        Raises:
            CorruptData: the object is missing.
        """
        found = self.read_many([spec])[0]
        if found is None:
            raise CorruptData(f"object {spec.decode('utf-8', 'replace')} is missing")
        return found

    def is_commit(self, oid: bytes) -> bool:
        """Whether ``oid`` is present here and a commit."""
        found = self.read_many([oid])[0]
        return found is not None and found[0] == b"commit"

    def read_many(self, specs: list[bytes]) -> list[tuple[bytes, bytes] | None]:
        """``(type, content)`` or ``None`` (missing) for each spec, in one pipelined pass."""
        memo = self._memo
        if memo is None:
            return self._answers(specs)
        wanted = [spec for spec in specs if spec not in memo]
        if wanted:
            answers = self._answers(wanted, chunk=_MEMO_CHUNK)
            for spec, found in zip(wanted, answers, strict=True):
                if (
                    found is not None
                    and len(found[1]) <= _MEMO_OBJECT_BYTES
                    and self._memo_bytes < _MEMO_BYTES
                    and _IMMUTABLE_SPEC.match(spec)
                ):
                    memo[spec] = found
                    self._memo_bytes += len(found[1]) + len(spec)
            if len(wanted) == len(specs):
                return answers
        known = dict(zip(wanted, answers, strict=True)) if wanted else {}
        return [memo[spec] if spec in memo else known[spec] for spec in specs]

    def _answers(self, specs: list[bytes], chunk: int = 64) -> list[tuple[bytes, bytes] | None]:
        """What ``git cat-file --batch`` answers for each spec: from the loose files
        while they can tell, then from git, for good (see :mod:`.loose`)."""
        if self._loose is None:
            self._loose = (
                LooseReader.opened(self.common_dir, self._environ(), self._sha256) or False
            )
        answers = self._loose.read_many(specs) if self._loose else []
        if len(answers) == len(specs):
            return answers
        self._loose = False
        return answers + self._batch().get_many(specs[len(answers) :], chunk)

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """Keep the small objects read by id (or ``id:path``) until the block
        ends, so that many reads of one object cost one; with :meth:`read_many`
        beforehand, checking thousands of fetched tasks takes a few pipelined
        passes instead of a round trip per tree. Objects never change, so what
        is kept cannot go stale; it costs memory (small objects only)."""
        outer = self._memo
        if outer is None:
            self._memo, self._memo_bytes, self._memo_trees = {}, 0, {}
        try:
            yield
        finally:
            if outer is None:
                self._memo, self._memo_bytes, self._memo_trees = None, 0, {}

    def remember_as(self, aliases: Iterable[tuple[bytes, bytes]]) -> None:
        """While :meth:`remembering`, answer each ``(spec, oid)``'s ``spec`` (such as
        ``tip:task.json``) with the kept object ``oid`` it names (the entry of
        ``tip``'s tree, read by the caller): git then never resolves the path,
        which costs it the commit and the tree inflated again. A spec whose
        object is not kept (too large, not read) is left to git."""
        memo = self._memo
        if memo is None:
            return
        for spec, oid in aliases:
            found = memo.get(oid)
            if found is not None and spec not in memo and _IMMUTABLE_SPEC.match(spec):
                memo[spec] = found

    def prefetch(self, specs: list[bytes]) -> Prefetch:
        """Send reads of ``specs`` (at most a few hundred) to git without waiting:
        git works on them while the caller goes on; :meth:`Prefetch.collect`
        returns what :meth:`read_many` would have. Any other read first takes
        the answers of earlier prefetches off the pipe, so order never breaks."""
        return self._batch().send(specs)

    def _read_typed(self, oid: bytes, kind: bytes) -> bytes:
        found_kind, data = self.read_raw(oid)
        if found_kind != kind:
            raise CorruptData(
                f"object {oid.decode()} is a {found_kind.decode()}, not a {kind.decode()}"
            )
        return data

    def read_blob(self, oid: bytes) -> bytes:
        """The content of the blob ``oid``."""
        return self._read_typed(oid, b"blob")

    def blob_digest(self, oid: bytes, limit: int) -> tuple[int, str | None, bool]:
        """``(size, sha256 hex, is UTF-8)`` of the blob ``oid``, streamed: a body
        of any size costs a megabyte of memory. Over ``limit`` bytes it is not
        read (sha256 ``None``).

        Raises:
            CorruptData: the blob is missing, or the object is not a blob.
        """
        found = self._digest(oid, limit)
        if found is None:
            raise CorruptData(f"object {oid.decode('utf-8', 'replace')} is missing")
        kind, size, sha256, utf8 = found
        if kind != b"blob":
            raise CorruptData(f"object {oid.decode()} is a {kind.decode()}, not a blob")
        return size, sha256, utf8

    def _digest(self, oid: bytes, limit: int) -> tuple[bytes, int, str | None, bool] | None:
        """What :meth:`CatFile.digest` answers of ``oid`` (from the kept object if any)."""
        kept = self._memo.get(oid) if self._memo is not None else None
        return digest_of(kept, limit) if kept is not None else self._batch().digest(oid, limit)

    def read_tree(self, oid: bytes) -> dict[bytes, tuple[int, bytes]]:
        """The entries of the tree ``oid`` as ``{name: (mode, oid)}`` (a copy of
        the parsed entries kept while :meth:`remembering`)."""
        if self._memo is None:
            return self.parse_tree(oid, self._read_typed(oid, b"tree"))
        entries = self._memo_trees.get(oid)
        if entries is None:
            entries = self._memo_trees[oid] = self.parse_tree(oid, self._read_typed(oid, b"tree"))
        return dict(entries)

    def read_trees(self, oids: list[bytes]) -> list[Mapping[bytes, tuple[int, bytes]] | None]:
        """The entries of each tree of ``oids`` (``None``: missing, not a tree, or
        malformed), read in one pipelined pass, each parsed once and kept while
        :meth:`remembering` (then the kept entries themselves: not to be changed)."""
        trees: list[Mapping[bytes, tuple[int, bytes]] | None] = []
        kept = self._memo_trees if self._memo is not None else None
        for oid, found in zip(oids, self.read_many(oids), strict=True):
            entries = None if kept is None else kept.get(oid)
            if entries is None and found is not None and found[0] == b"tree":
                with contextlib.suppress(CorruptData):
                    entries = self.parse_tree(oid, found[1])
                    if kept is not None:
                        kept[oid] = entries
            trees.append(entries)
        return trees

    def parse_tree(self, oid: bytes, data: bytes) -> dict[bytes, tuple[int, bytes]]:
        """The entries of tree ``oid`` whose content is ``data`` (read elsewhere)."""
        size = 32 if self._sha256 else 20
        entries: dict[bytes, tuple[int, bytes]] = {}
        pos, end, find = 0, len(data), data.index
        try:
            while pos < end:
                space = find(b" ", pos)
                nul = find(b"\0", space)
                stop = nul + 1 + size
                if stop > end:
                    raise ValueError("truncated entry")
                entries[data[space + 1 : nul]] = (
                    int(data[pos:space], 8),
                    data[nul + 1 : stop].hex().encode(),
                )
                pos = stop
        except ValueError:
            raise CorruptData(f"tree {oid.decode()} is malformed") from None
        return entries

    def read_commit_tree(self, oid: bytes) -> tuple[bytes, list[bytes]]:
        """The tree id and parent ids of the commit ``oid``."""
        return parse_commit_tree(oid, self._read_typed(oid, b"commit"))

    def read(self, oid: bytes) -> ShaFile:
        """Read one object as a dulwich object (for history walks).

        Raises:
            CorruptData: the object is missing or unreadable.
        """
        try:
            return self._repo.object_store[oid]  # type: ignore[index]
        except KeyError:
            raise CorruptData(f"object {oid.decode()} is missing from the repository") from None
        except Exception as exc:
            raise CorruptData(f"object {oid.decode()} is unreadable: {exc}") from None

    def read_commit_info(self, oid: bytes) -> CommitInfo:
        """The fields of the commit ``oid`` as plain Python values.

        Raises:
            CorruptData: ``oid`` is missing or is not a commit.
        """
        from dulwich.objects import Commit

        obj = self.read(oid)
        if not isinstance(obj, Commit):
            raise CorruptData(f"object {oid.decode()} is a {obj.type_name.decode()}, not a commit")
        return CommitInfo(
            oid=oid,
            tree=bytes(obj.tree),
            parents=[bytes(p) for p in obj.parents],
            author=obj.author.decode("utf-8", "replace"),
            author_time=int(obj.author_time),
            committer=obj.committer.decode("utf-8", "replace"),
            commit_time=int(obj.commit_time),
            message=obj.message.decode("utf-8", "replace"),
        )

    def stream_blobs(self, oids: list[str]) -> Iterator[tuple[str, bytes]]:
        """``(oid, content)`` of many blobs, streamed through one cat-file process.

        Raises:
            CorruptData: a blob is missing or cut short.
        """
        argv, cwd, env = self.git_invocation()
        return stream_objects(argv, cwd, env, oids)

    def worktree_has(self, path: bytes, size: int) -> bool:
        """Whether :meth:`worktree_file` may find the file (one ``lstat``): a regular
        file of ``size`` bytes at ``path``, relative to the work tree's top, never
        climbing out of it nor through a symbolic link on its way
        (:attr:`work_tree_files`)."""
        files = self.work_tree_files
        if files is None or not path:
            return False
        try:  # (a link's path can come from a remote: an absolute one or ".." is missing)
            info = files.lstat(path)
        except OSError:
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size == size

    def worktree_file(self, path: bytes, size: int) -> bytes | None:
        """The ``size`` bytes of the regular file at ``path`` (relative to the work
        tree's top), or ``None``: no work tree, a path that is absolute or climbs
        out, a missing file, one of another size, a symlink or a file beyond one
        (not followed: :attr:`work_tree_files`), a FIFO or device (never opened).

        What the bytes are is the caller's to check (:meth:`worktree_blob`, or a
        link's sha256): a file the page cache holds is read far faster than git
        inflates the blob it may hold.
        """
        files = self.work_tree_files
        if files is None or not path:
            return None
        try:  # (one open, no lstat first; a file of another size is not read)
            fd = files.open_fd(path)
        except OSError:
            return None
        with open(fd, "rb") as fh:
            if os.fstat(fd).st_size != size:
                return None
            try:
                data = fh.read(size + 1)
            except OSError:
                return None
        return data if len(data) == size else None

    def worktree_blob(self, path: bytes, oid: str, size: int) -> bytes | None:
        """The content of blob ``oid`` (``size`` bytes) read from the work tree file at
        ``path`` (see :meth:`worktree_file`), when that file holds exactly that blob:
        the bytes read hash to ``oid``. ``None`` otherwise, and the blob is to be read
        through git: a modified, filtered or missing file never stands in for it.
        """
        data = self.worktree_file(path, size)
        if data is None or self.blob_id(data) != oid.encode("ascii"):
            return None
        return data

    def has_object(self, oid: bytes) -> bool:
        """Whether ``oid`` is present (loose, packed or in an alternate)."""
        store: Any = self._repo.object_store
        return oid in store

    def hash_object(self, kind: bytes, data: bytes) -> bytes:
        """The id git gives ``data`` as an object of ``kind`` (SHA-1 or SHA-256)."""
        import hashlib  # (OpenSSL's start-up: only where a digest is made)

        digest = hashlib.sha256() if self._sha256 else hashlib.sha1()
        digest.update(b"%s %d\0" % (kind, len(data)))
        digest.update(data)
        return digest.hexdigest().encode("ascii")

    def blob_id(self, data: bytes) -> bytes:
        """The id ``data`` has (or would have) as a blob, without writing it."""
        return self.hash_object(b"blob", data)

    def write_blob(self, data: bytes) -> bytes:
        """Store ``data`` as a loose blob (unless present) and return its id."""
        return self.write_object(b"blob", data)

    def write_object(self, kind: bytes, data: bytes) -> bytes:
        """Store one loose object the way git does and return its id.

        The compressed object goes to a temporary file in ``objects/xx/`` that
        is then renamed into place, so a reader never sees half an object and
        concurrent writers of the same object (same name, same bytes) cannot
        hurt each other. ``git repack -d``/``git prune-packed`` may remove an
        emptied ``objects/xx`` directory at any moment; the write then simply
        starts again.
        """
        if self._pack_batch is not None:
            return self._pack_batch.add(kind, data)
        oid = self.hash_object(kind, data)
        name = oid.decode("ascii")
        directory = os.path.join(self.common_dir, "objects", name[:2])
        path = os.path.join(directory, name[2:])
        if self._freshen_loose(path) or self.just_packed(oid):
            return oid
        # zlib's fastest level, git's own for loose objects (core.looseCompression
        # unset): a task's 700 KB of link shards 18.8 -> 5.8 ms, 11 % larger until
        # gc packs them at the pack's level.
        compressed = zlib.compress(b"%s %d\0" % (kind, len(data)) + data, 1)
        for attempt in range(50):
            temporary = os.path.join(directory, f"tmp_obj_{os.getpid()}_{os.urandom(6).hex()}")
            try:
                self.make_dirs(directory)
                fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            except FileNotFoundError:
                time.sleep(0.001 * min(attempt + 1, 10))
                continue
            except OSError as exc:
                raise not_writable(exc, directory) from None
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(compressed)
                self.share(temporary)
                os.replace(temporary, path)
                return oid
            except FileNotFoundError:
                time.sleep(0.001 * min(attempt + 1, 10))
            except OSError as exc:
                raise not_writable(exc, directory) from None
            finally:
                if os.path.exists(temporary):
                    os.unlink(temporary)
        raise NotWritable(f"cannot write object {name}: its directory keeps disappearing")

    def write_blobs(self, datas: list[bytes], *, pack_threshold: int = 64) -> list[bytes]:
        """Store many blobs; return their ids in order.

        Up to ``pack_threshold`` new blobs are written loose; more go into one
        pack (through dulwich), because thousands of loose files — or of small
        packs — make every later read slower.
        """
        if self._pack_batch is not None:
            return [self._pack_batch.add(b"blob", data) for data in datas]
        oids = [self.blob_id(data) for data in datas]
        seen: set[bytes] = set()
        missing: list[tuple[bytes, bytes]] = []
        for data, oid in zip(datas, oids, strict=True):
            if oid in seen:
                continue
            seen.add(oid)
            if not self._freshen_loose(self._loose_path(oid)) and not self.just_packed(oid):
                missing.append((oid, data))
        if len(missing) <= pack_threshold:
            for _oid, data in missing:
                self.write_object(b"blob", data)
            return oids
        from dulwich.objects import Blob

        blobs = [Blob.from_string(data) for oid, data in missing if not self._freshen_packed(oid)]
        try:
            pack = self._repo.object_store.add_objects([(blob, None) for blob in blobs])
        except OSError as exc:
            raise not_writable(exc, self.common_dir) from None
        basename = getattr(pack, "_basename", None)
        if self.shared_mode and isinstance(basename, str):
            # dulwich makes packs 0444 whatever the umask, and knows nothing of
            # core.sharedRepository: give the files of *this* pack the mode git
            # would (never anyone else's files in objects/pack).
            mode = shared_file_mode(self.shared_mode, 0o444 & ~current_umask())
            for suffix in (".pack", ".idx", ".rev", ".bitmap"):
                with contextlib.suppress(FileNotFoundError):  # absent, or repacked away
                    os.chmod(basename + suffix, mode)
        return oids

    @staticmethod
    def _freshen_loose(path: str) -> bool:
        """Whether the loose object at ``path`` is present, its mtime made now.

        A writer about to reference an object that exists must refresh it, as
        git does (``freshen_loose_object``): ``git gc --prune`` deletes old
        unreachable objects, and an old one found present but left alone can be
        pruned just before the new ref points at it.
        """
        try:
            os.utime(path)
        except OSError:
            # absent, or not ours to touch (a shared repository): as git does,
            # write it again (a rename over it gives a fresh file of our own)
            return False
        return True

    def _freshen_packed(self, oid: bytes) -> bool:
        """Whether ``oid`` is in a pack; if so that pack's mtime is made now
        (git's ``freshen_packed_object``). An object only found elsewhere (an
        alternate) counts as present."""
        store: Any = self._repo.object_store
        for pack in getattr(store, "packs", ()):
            if oid in pack:
                basename = getattr(pack, "_basename", None)
                if isinstance(basename, str):
                    with contextlib.suppress(OSError):
                        os.utime(basename + ".pack")
                return True
        return self.has_object(oid)

    def _loose_path(self, oid: bytes) -> str:
        name = oid.decode("ascii")
        return os.path.join(self.common_dir, "objects", name[:2], name[2:])

    def write_tree(self, entries: Mapping[bytes, tuple[int, bytes]]) -> bytes:
        """Store a tree of ``{name: (mode, oid)}`` and return its id."""
        # git orders entries by name, a subtree's name as if it ended in "/"
        ordered = sorted(
            entries.items(), key=lambda item: item[0] + (b"/" if item[1][0] == MODE_TREE else b"")
        )
        raw = b"".join(
            b"%o %s\0%s" % (mode, name, bytes.fromhex(oid.decode("ascii")))
            for name, (mode, oid) in ordered
        )
        return self.write_object(b"tree", raw)

    def update_tree(self, root: bytes | None, changes: Mapping[bytes, bytes | None]) -> bytes:
        """Apply path changes to a tree, rewriting only the subtrees they touch.

        Args:
            root: The tree to change, or ``None`` for an empty tree.
            changes: ``{b"dir/sub/name": blob_oid}`` to add or replace a blob,
                ``{path: None}`` to remove it. Emptied subtrees are dropped.
        """
        return self._update_tree(root, changes)[0]

    def _update_tree(
        self, root: bytes | None, changes: Mapping[bytes, bytes | None]
    ) -> tuple[bytes, bool]:
        """:meth:`update_tree`, plus whether the result is empty (no read-back)."""
        entries = dict(self.read_tree(root)) if root is not None else {}
        here: dict[bytes, bytes | None] = {}
        below: dict[bytes, dict[bytes, bytes | None]] = {}
        for path, oid in changes.items():
            head, sep, rest = path.partition(b"/")
            if sep:
                below.setdefault(head, {})[rest] = oid
            else:
                here[head] = oid
        for name, oid in here.items():
            if oid is None:
                entries.pop(name, None)
            else:
                entries[name] = (MODE_BLOB, oid)
        for name, sub in below.items():
            current = entries.get(name)
            sub_root = current[1] if current is not None and current[0] == MODE_TREE else None
            new_sub, empty = self._update_tree(sub_root, sub)
            if not empty:
                entries[name] = (MODE_TREE, new_sub)
            else:
                entries.pop(name, None)
        return self.write_tree(entries), not entries

    def write_commit(
        self,
        tree: bytes,
        parents: Iterable[bytes],
        message: str,
        *,
        when: float | None = None,
    ) -> bytes:
        """Store a commit by the user's git identity and return its id.

        Dates as ``git commit`` writes them: ``when`` (the library's explicit
        clock) for both when given; else ``GIT_AUTHOR_DATE`` and
        ``GIT_COMMITTER_DATE`` when set, else now.
        """
        committer = self.identity()
        author = self.author()
        now = int(time.time())

        def signature(ident: Identity) -> bytes:
            if when is not None:
                moment = int(when)
            else:
                moment = ident.when if ident.when is not None else now
            return b"%s %d %s" % (ident.name_email, moment, format_tz(ident.tz_offset))

        raw = b"tree %s\n" % tree
        for parent in parents:
            raw += b"parent %s\n" % parent
        raw += b"author %s\ncommitter %s\n\n" % (signature(author), signature(committer))
        raw += message.encode("utf-8")
        return self.write_object(b"commit", raw)

    # -- refs ------------------------------------------------------------
