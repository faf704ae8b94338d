"""The git primitives git-hydrate is built on; the only module that imports dulwich.

A :class:`Repository` is opened from any path git itself would accept (a work
tree or one of its subdirectories, a linked worktree, a ``.git`` directory, a
bare repository) and honours ``GIT_DIR`` and friends, because discovery is
delegated to ``git rev-parse``. Everything else — objects, trees, commits,
compare-and-swap on refs — goes through dulwich on the *common* git directory,
which is where linked worktrees share ``refs/hydrate/*``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import Busy, CorruptData, NotARepository, UnsupportedRepository

if TYPE_CHECKING:
    from dulwich.objects import ShaFile
    from dulwich.repo import Repo

__all__ = [
    "MODE_BLOB",
    "MODE_TREE",
    "Identity",
    "RefRace",
    "Repository",
    "run_git",
]

MODE_BLOB = 0o100644
MODE_TREE = 0o040000

#: Environment variables git sets for a subcommand that point at *its*
#: repository; they must not leak into a ``git -C other`` call.
_REPO_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
)


class RefRace(Exception):
    """A compare-and-swap lost to a concurrent writer; re-read and retry."""


@dataclass(frozen=True)
class Identity:
    """A git identity line (``Name <email>``) with its timezone offset in seconds."""

    name_email: bytes
    tz_offset: int


def run_git(
    args: list[str],
    *,
    cwd: str | None = None,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``git`` binary and capture its output.

    Raises:
        NotARepository: ``git`` is not installed.
    """
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            check=False,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        raise NotARepository("the git binary was not found on PATH") from None
    if check and proc.returncode != 0:
        message = _first_line(proc.stderr) or f"git {args[0]} failed"
        raise CorruptData(message)
    return proc


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _parse_tz(text: bytes) -> int:
    sign = -1 if text.startswith(b"-") else 1
    digits = text.lstrip(b"+-")
    if len(digits) != 4 or not digits.isdigit():
        return 0
    return sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)


class Repository:
    """A git repository as git-hydrate uses it.

    Args:
        path: Any directory git accepts as (inside) a repository. ``None``
            means the current directory, honouring ``GIT_DIR`` like git does.

    Raises:
        NotARepository: ``path`` is not inside a git repository.
        UnsupportedRepository: the repository uses a format dulwich cannot
            write safely (reftable refs, an unknown extension).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        env = None
        cwd = None
        if path is not None:
            cwd = os.fspath(path)
            if not os.path.isdir(cwd):
                raise NotARepository(f"not a git repository: {cwd}")
            # An explicit path wins over the GIT_DIR of an enclosing git call.
            env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
        proc = run_git(
            [
                "rev-parse",
                "--path-format=absolute",
                "--git-dir",
                "--git-common-dir",
                "--is-bare-repository",
                "--is-inside-work-tree",
                # Fails (after printing the rest) outside a work tree: bare
                # repositories and a cwd inside the git directory.
                "--show-toplevel",
            ],
            cwd=cwd,
            env=env,
            check=False,
        )
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 4:
            message = _first_line(proc.stderr) or "not a git repository"
            if message.startswith("fatal: "):
                message = message[len("fatal: ") :]
            raise NotARepository(message)
        self.git_dir = lines[0]
        self.common_dir = lines[1]
        self.is_bare = lines[2] == "true"
        inside = lines[3] == "true" and len(lines) > 4
        self.work_tree: str | None = lines[4] if inside else None
        self._env = env
        self._cwd = cwd
        self._check_extensions()
        from dulwich.repo import Repo

        try:
            self._repo: Repo = Repo(self.common_dir)
        except Exception as exc:  # dulwich raises several kinds for unusable repos
            raise UnsupportedRepository(
                f"cannot open the repository at {self.common_dir}: {exc}"
            ) from None
        self.object_format = self._repo.object_format
        self._identity: Identity | None = None

    # -- lifecycle -------------------------------------------------------

    def close(self) -> None:
        """Release the repository's file handles."""
        self._repo.close()

    def __enter__(self) -> Repository:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- configuration and identity ---------------------------------------

    def git(self, args: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        """Run ``git`` against this repository (``--git-dir``), honouring ``git -c``."""
        full = ["--git-dir", self.git_dir]
        if self.work_tree is not None:
            full += ["--work-tree", self.work_tree]
        return run_git(full + args, cwd=self._cwd, env=self._env, **kwargs)  # type: ignore[arg-type]

    def _check_extensions(self) -> None:
        config = os.path.join(self.common_dir, "config")
        try:
            with open(config, "rb") as fh:
                text = fh.read().decode("utf-8", "replace").lower()
        except OSError:
            return
        if "refstorage" in text and "reftable" in text:
            raise UnsupportedRepository(
                "this repository stores refs in reftable format, which git-hydrate cannot "
                "update atomically yet; use a repository with the files ref backend"
            )

    def config_values(self, prefix: str) -> dict[str, str]:
        """Every git config value whose key starts with ``prefix`` (lowercased keys).

        Reads through ``git config`` so includes, ``git -c`` and the
        ``GIT_CONFIG_*`` variables are honoured exactly as git honours them.
        """
        proc = self.git(
            ["config", "-z", "--get-regexp", "^" + prefix.replace(".", r"\.")], check=False
        )
        values: dict[str, str] = {}
        for record in proc.stdout.split(b"\0"):
            if not record:
                continue
            key, _, value = record.partition(b"\n")
            values[key.decode("utf-8", "replace").lower()] = value.decode("utf-8", "replace")
        return values

    def identity(self) -> Identity:
        """The committer identity git would use here, with a well-formed fallback."""
        if self._identity is None:
            proc = self.git(["var", "GIT_COMMITTER_IDENT"], check=False)
            line = proc.stdout.strip()
            head, sep, rest = line.rpartition(b">")
            if proc.returncode == 0 and sep and b"<" in head:
                tz = _parse_tz(rest.split()[-1]) if rest.split() else 0
                self._identity = Identity(head + b">", tz)
            else:
                offset = -time.timezone if not time.localtime().tm_isdst else -time.altzone
                self._identity = Identity(b"git-hydrate <git-hydrate@localhost>", offset)
        return self._identity

    # -- objects ---------------------------------------------------------

    def object_id(self, obj: ShaFile) -> bytes:
        """The object's id in this repository's hash (SHA-1 or SHA-256)."""
        return obj.get_id(self.object_format)

    def read(self, oid: bytes) -> ShaFile:
        """Read one object.

        Raises:
            CorruptData: the object is missing or unreadable.
        """
        try:
            return self._repo.object_store[oid]  # type: ignore[index]
        except KeyError:
            raise CorruptData(f"object {oid.decode()} is missing from the repository") from None
        except Exception as exc:
            raise CorruptData(f"object {oid.decode()} is unreadable: {exc}") from None

    def read_blob(self, oid: bytes) -> bytes:
        """The content of the blob ``oid``."""
        from dulwich.objects import Blob

        obj = self.read(oid)
        if not isinstance(obj, Blob):
            raise CorruptData(f"object {oid.decode()} is a {obj.type_name.decode()}, not a blob")
        return obj.as_raw_string()

    def read_tree(self, oid: bytes) -> dict[bytes, tuple[int, bytes]]:
        """The entries of the tree ``oid`` as ``{name: (mode, oid)}``."""
        from dulwich.objects import Tree

        obj = self.read(oid)
        if not isinstance(obj, Tree):
            raise CorruptData(f"object {oid.decode()} is a {obj.type_name.decode()}, not a tree")
        return {entry.path: (entry.mode, entry.sha) for entry in obj.items()}

    def read_commit_tree(self, oid: bytes) -> tuple[bytes, list[bytes]]:
        """The tree id and parent ids of the commit ``oid``."""
        from dulwich.objects import Commit

        obj = self.read(oid)
        if not isinstance(obj, Commit):
            raise CorruptData(f"object {oid.decode()} is a {obj.type_name.decode()}, not a commit")
        return obj.tree, list(obj.parents)

    def read_commit(self, oid: bytes) -> ShaFile:
        """The commit object ``oid`` (for history walks)."""
        return self.read(oid)

    def has_object(self, oid: bytes) -> bool:
        """Whether ``oid`` is present (loose, packed or in an alternate)."""
        store: Any = self._repo.object_store
        return oid in store

    def blob_id(self, data: bytes) -> bytes:
        """The id ``data`` has (or would have) as a blob, without writing it."""
        from dulwich.objects import Blob

        return self.object_id(Blob.from_string(data))

    def write_blob(self, data: bytes) -> bytes:
        """Store ``data`` as a loose blob (unless present) and return its id."""
        from dulwich.objects import Blob

        blob = Blob.from_string(data)
        oid = self.object_id(blob)
        if not self.has_object(oid):
            self._repo.object_store.add_object(blob)
        return oid

    def write_tree(self, entries: Mapping[bytes, tuple[int, bytes]]) -> bytes:
        """Store a tree of ``{name: (mode, oid)}`` and return its id."""
        from dulwich.objects import Tree

        tree = Tree()
        for name, (mode, oid) in entries.items():
            tree.add(name, mode, oid)  # type: ignore[arg-type]
        oid_ = self.object_id(tree)
        if not self.has_object(oid_):
            self._repo.object_store.add_object(tree)
        return oid_

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
        """Store a commit by the user's git identity and return its id."""
        from dulwich.objects import Commit

        ident = self.identity()
        timestamp = int(time.time() if when is None else when)
        commit = Commit()
        attrs: Any = commit  # dulwich types ids as a NewType of bytes
        attrs.tree = tree
        attrs.parents = list(parents)
        commit.author = commit.committer = ident.name_email
        commit.author_time = commit.commit_time = timestamp
        commit.author_timezone = commit.commit_timezone = ident.tz_offset
        commit.encoding = None
        commit.message = message.encode("utf-8")
        oid = self.object_id(commit)
        self._repo.object_store.add_object(commit)
        return oid

    # -- refs ------------------------------------------------------------

    def read_ref(self, name: bytes) -> bytes | None:
        """The commit a ref points at, or ``None`` if it does not exist."""
        try:
            value = self._repo.refs.read_ref(name)  # type: ignore[arg-type]
        except Exception as exc:
            raise CorruptData(f"cannot read {name.decode()}: {exc}") from None
        if value is None or value.startswith(b"ref: "):
            return None
        return value

    def refs_under(self, prefix: bytes) -> dict[bytes, bytes]:
        """``{suffix: oid}`` for every ref below ``prefix`` (which ends with ``/``)."""
        refs = self._repo.refs.as_dict(prefix.rstrip(b"/"))  # type: ignore[arg-type]
        return {bytes(name): bytes(oid) for name, oid in refs.items()}

    def compare_and_swap(self, name: bytes, old: bytes | None, new: bytes, message: str) -> None:
        """Move ``name`` from ``old`` (``None``: absent) to ``new``, atomically.

        Writes a reflog entry. Raises :class:`RefRace` if another writer got
        there first (the caller re-reads and re-applies its change).
        """
        from dulwich.file import FileLocked
        from dulwich.protocol import ZERO_SHA

        ident = self.identity()
        try:
            ok = self._repo.refs.set_if_equals(
                name,  # type: ignore[arg-type]
                old if old is not None else ZERO_SHA,  # type: ignore[arg-type]
                new,  # type: ignore[arg-type]
                committer=ident.name_email,
                timestamp=int(time.time()),
                timezone=ident.tz_offset,
                message=message.encode("utf-8"),
            )
        except FileLocked as exc:
            raise RefRace(str(exc)) from None
        except FileNotFoundError as exc:
            # A concurrent `git pack-refs` removed the directory holding our lock.
            raise RefRace(str(exc)) from None
        if not ok:
            raise RefRace(name.decode())

    def delete_ref(self, name: bytes, old: bytes, message: str) -> None:
        """Delete ``name`` if it still points at ``old``; :class:`RefRace` otherwise."""
        from dulwich.file import FileLocked

        ident = self.identity()
        try:
            ok = self._repo.refs.remove_if_equals(
                name,  # type: ignore[arg-type]
                old,  # type: ignore[arg-type]
                committer=ident.name_email,
                timestamp=int(time.time()),
                timezone=ident.tz_offset,
                message=message.encode("utf-8"),
            )
        except (FileLocked, FileNotFoundError) as exc:
            raise RefRace(str(exc)) from None
        if not ok:
            raise RefRace(name.decode())

    def git_invocation(self) -> tuple[list[str], str | None, dict[str, str] | None]:
        """``(argv prefix, cwd, env)`` to start a long-running ``git`` process here."""
        argv = ["git", "--git-dir", self.git_dir]
        if self.work_tree is not None:
            argv += ["--work-tree", self.work_tree]
        return argv, self._cwd, self._env


def retry_busy(attempts: int, what: str) -> Busy:
    """The error raised when ``attempts`` compare-and-swaps all lost their race."""
    return Busy(f"{what}: the task kept changing under us ({attempts} attempts); try again")
