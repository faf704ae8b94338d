"""The git primitives git-hydrate is built on; the only module that imports dulwich.

A :class:`Repository` is opened from any path git itself would accept (a work
tree or one of its subdirectories, a linked worktree, a ``.git`` directory, a
bare repository) and honours ``GIT_DIR`` and friends, because discovery is
delegated to ``git rev-parse``. Everything else — objects, trees, commits,
compare-and-swap on refs — goes through dulwich on the *common* git directory,
which is where linked worktrees share ``refs/hydrate/*``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import subprocess
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from .errors import (
    Conflict,
    CorruptData,
    NoIdentity,
    NotARepository,
    NotWritable,
    UnsupportedRepository,
)

if TYPE_CHECKING:
    from dulwich.objects import ShaFile
    from dulwich.repo import Repo

__all__ = [
    "MODE_BLOB",
    "MODE_TREE",
    "Identity",
    "RefRace",
    "Repository",
    "current_umask",
    "run_git",
    "shared_repository_mode",
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


class Identity(NamedTuple):
    """A git identity line (``Name <email>``) with its timezone offset in seconds."""

    name_email: bytes
    tz_offset: int


def _config_bool(value: str) -> bool | None:
    """git's reading of a boolean config value (``None``: not a boolean)."""
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("false", "no", "off", ""):
        return False
    # an integer as strtoimax(value, &end, 0) reads it whole: hex, octal, decimal
    match = re.fullmatch(r"[-+]?(0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)[kmg]?", word)
    return None if match is None else match.group(1).strip("0x") != ""


def shared_repository_mode(value: str | None, *, present: bool = True) -> int:
    """What ``core.sharedRepository`` asks of new files, read as git reads it.

    ``value`` is ``None`` for a key given without ``=`` (``group`` to git);
    ``present=False`` means the key is not set at all. Returns ``0``: the umask
    decides (unset, ``umask``, false, ``0``); a positive mode to add to every
    new file (``group``, true or ``1``: 0660; ``all``, ``world``, ``everybody``
    or ``2``: 0664); or a negative exact mode (``-0o640`` for ``0640``).

    Raises:
        UnsupportedRepository: a value git itself refuses.
    """
    if not present:
        return 0
    if value is None or value == "group":
        return 0o660
    if value == "umask":
        return 0
    if value in ("all", "world", "everybody"):
        return 0o664
    # An octal number, as strtol(value, &end, 8) reads it, must be all there is.
    octal = re.fullmatch(r"\s*([-+]?)([0-7]+)", value)
    if octal is None:
        flag = _config_bool(value)
        if flag is None:
            raise UnsupportedRepository(
                f"core.sharedRepository={value!r} is not a value git knows"
            )
        return 0o660 if flag else 0
    number = int(octal.group(2), 8) * (-1 if octal.group(1) == "-" else 1)
    if number in (0, 1, 2):  # the old numeric spellings of umask, group, everybody
        return (0, 0o660, 0o664)[number]
    if number & 0o600 != 0o600:
        raise UnsupportedRepository(
            f"core.sharedRepository={value} must let the owner read and write"
        )
    return -(number & 0o666)


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def shared_file_mode(setting: int, mode: int) -> int:
    """The permission bits git gives a new file or directory of ``mode`` in a
    repository whose ``core.sharedRepository`` reads as ``setting``."""
    if not setting:
        return mode & 0o7777
    tweak = -setting if setting < 0 else setting
    if not mode & stat.S_IWUSR:
        tweak &= ~0o222  # a read-only file (an object) stays read-only
    if mode & stat.S_IXUSR:
        tweak |= (tweak & 0o444) >> 2  # whoever may read may also search
    new = (mode & ~0o777) | tweak if setting < 0 else mode | tweak
    if stat.S_ISDIR(mode):
        new |= (new & 0o444) >> 2
        new |= stat.S_ISGID  # new entries inherit the directory's group
    return new & 0o7777


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


def format_tz(offset: int) -> bytes:
    """A UTC offset in seconds as git writes it (``+0100``, ``-0530``)."""
    sign = b"-" if offset < 0 else b"+"
    minutes = abs(offset) // 60
    return b"%s%02d%02d" % (sign, minutes // 60, minutes % 60)


def parse_commit_tree(oid: bytes, data: bytes) -> tuple[bytes, list[bytes]]:
    """The tree id and parent ids from a raw commit."""
    tree = b""
    parents = []
    for line in data.split(b"\n"):
        if not line:
            break
        key, _, value = line.partition(b" ")
        if key == b"tree":
            tree = value
        elif key == b"parent":
            parents.append(value)
    if not tree:
        raise CorruptData(f"commit {oid.decode()} has no tree")
    return tree, parents


def not_writable(exc: OSError, where: str) -> NotWritable:
    """The one-line error for a write the file system refused."""
    path = exc.filename or where
    return NotWritable(f"cannot write to the repository ({path}): {exc.strerror or exc}")


def _first_line(data: bytes) -> str:
    """git's error as one line: its first message plus indented continuation lines."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    message = lines[0].strip()
    for line in lines[1:]:
        if not line[:1].isspace():
            break
        message += " " + line.strip()
    return message


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
                # git -C says the same for a directory that is not there
                raise NotARepository(f"cannot change to '{cwd}': not a directory")
            # An explicit path wins over the GIT_DIR of an enclosing git call.
            env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
        proc = run_git(
            [
                "rev-parse",
                "--path-format=absolute",
                "--git-dir",
                "--git-common-dir",
                "--is-bare-repository",
                "--show-object-format",
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
        if len(lines) < 5:
            message = _first_line(proc.stderr) or "not a git repository"
            if message.startswith("fatal: "):
                message = message[len("fatal: ") :]
            raise NotARepository(message)
        self.git_dir = lines[0]
        self.common_dir = lines[1]
        self.is_bare = lines[2] == "true"
        # git's answer, never a guess from the config text: ids are SHA-1 or SHA-256.
        self._sha256 = lines[3].strip() == "sha256"
        inside = lines[4] == "true" and len(lines) > 5
        self.work_tree: str | None = lines[5] if inside else None
        self._env = env
        self._cwd = cwd
        self._check_extensions()
        self._dulwich: Repo | None = None
        self._cat_file: _CatFile | None = None
        self._packed_refs: dict[bytes, bytes] | None = None
        self._packed_key: tuple[int, int, int] | None = None
        self._identity: Identity | None = None
        self._shared: int | None = None
        self._settings_cache: list[tuple[str, str | None]] | None = None

    @property
    def _repo(self) -> Repo:
        """The dulwich repository, opened on first use (writes and history walks).

        Reads go through ``git cat-file --batch`` and the ref files, so
        commands that only read never pay for importing dulwich.
        """
        if self._dulwich is None:
            from dulwich.repo import Repo

            try:
                self._dulwich = Repo(self.common_dir)
            except Exception as exc:  # dulwich raises several kinds for unusable repos
                raise UnsupportedRepository(
                    f"cannot open the repository at {self.common_dir}: {exc}"
                ) from None
        return self._dulwich

    @property
    def hash_name(self) -> str:
        """``"sha1"`` or ``"sha256"``: the object format, read without dulwich."""
        return "sha256" if self._sha256 else "sha1"

    @property
    def object_format(self) -> Any:
        """dulwich's object format (SHA-1 or SHA-256) of this repository."""
        return self._repo.object_format

    # -- lifecycle -------------------------------------------------------

    def close(self) -> None:
        """Release the repository's file handles and helper process."""
        if self._cat_file is not None:
            self._cat_file.close()
            self._cat_file = None
        if self._dulwich is not None:
            self._dulwich.close()
            self._dulwich = None

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

    def git_invocation(self) -> tuple[list[str], str | None, dict[str, str] | None]:
        """``(argv prefix, cwd, env)`` to start a long-running ``git`` process here."""
        argv = ["git", "--git-dir", self.git_dir]
        if self.work_tree is not None:
            argv += ["--work-tree", self.work_tree]
        return argv, self._cwd, self._env

    def _check_extensions(self) -> None:
        """Refuse a reftable repository (its refs cannot be moved by our lock files).

        Reads the ``[extensions]`` section of the common config itself: git
        versions without reftable support refuse such a repository earlier, in
        ``git rev-parse``, with their own message.
        """
        config = os.path.join(self.common_dir, "config")
        try:
            with open(config, "rb") as fh:
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return
        section = ""
        for raw in text.splitlines():
            line = raw.strip()
            if line.startswith("["):
                section = line[1 : line.find("]")].strip().lower() if "]" in line else ""
                line = line[line.find("]") + 1 :].strip() if "]" in line else ""
            if section != "extensions" or "=" not in line:
                continue
            key, _, value = line.partition("=")
            value = value.split("#")[0].split(";")[0].strip().strip('"').lower()
            if key.strip().lower() == "refstorage" and value == "reftable":
                raise UnsupportedRepository(
                    "this repository stores refs in reftable format, which git-hydrate "
                    "cannot update atomically yet; use a repository with the files ref backend"
                )

    def _config_records(self, pattern: str) -> list[tuple[str, str | None]]:
        """``(key, value)`` of every git config entry whose (lower-cased) key
        matches ``pattern``, in git's order; ``None`` for a key given without "="
        (``-z`` tells it from an empty value: no newline after the name).

        Reads through ``git config`` so includes, ``git -c`` and the
        ``GIT_CONFIG_*`` variables are honoured exactly as git honours them.
        """
        proc = self.git(["config", "-z", "--get-regexp", pattern], check=False)
        records: list[tuple[str, str | None]] = []
        for record in proc.stdout.split(b"\0"):
            if record:
                key, newline, value = record.partition(b"\n")
                text = value.decode("utf-8", "replace") if newline else None
                records.append((key.decode("utf-8", "replace").lower(), text))
        return records

    def config_values(self, prefix: str) -> dict[str, str]:
        """Every git config value whose key starts with ``prefix`` (lowercased keys)."""
        pattern = "^" + prefix.replace(".", r"\.")
        return {key: value or "" for key, value in self._config_records(pattern)}

    def _settings(self) -> list[tuple[str, str | None]]:
        """The settings git-hydrate itself reads (``hydrate.*`` and
        ``core.sharedRepository``), in one ``git config`` call per repository."""
        if self._settings_cache is None:
            self._settings_cache = self._config_records(r"^(hydrate\.|core\.sharedrepository$)")
        return self._settings_cache

    def hydrate_config(self) -> dict[str, str]:
        """Every ``hydrate.*`` config value (lowercased keys; the last one wins)."""
        return {key: value or "" for key, value in self._settings() if key.startswith("hydrate.")}

    @property
    def shared_mode(self) -> int:
        """``core.sharedRepository`` as :func:`shared_repository_mode` reads it
        (the last of several values wins, as in git)."""
        if self._shared is None:
            values = [v for key, v in self._settings() if key == "core.sharedrepository"]
            self._shared = shared_repository_mode(values[-1]) if values else 0
        return self._shared

    def share(self, path: str) -> None:
        """Give a file or directory this repository created the permissions git
        would (``core.sharedRepository``: group-writable refs, setgid
        directories...); nothing when the umask decides."""
        if not self.shared_mode:
            return
        mode = os.stat(path).st_mode
        wanted = shared_file_mode(self.shared_mode, mode)
        if wanted != mode & 0o7777:
            os.chmod(path, wanted)

    def make_dirs(self, path: str) -> None:
        """``os.makedirs(path, exist_ok=True)``, sharing each directory it creates."""
        missing = []
        while not os.path.isdir(path):
            missing.append(path)
            path = os.path.dirname(path)
        for directory in reversed(missing):
            try:
                os.mkdir(directory)
            except FileExistsError:
                continue  # made meanwhile by another writer, who shared it
            self.share(directory)

    def identity(self) -> Identity:
        """The committer identity git would use here (``git var GIT_COMMITTER_IDENT``).

        Raises:
            NoIdentity: git itself has no usable identity; like ``git commit``,
                writing is refused rather than signed by a made-up author.
        """
        if self._identity is None:
            proc = self.git(["var", "GIT_COMMITTER_IDENT"], check=False)
            line = proc.stdout.strip()
            head, sep, rest = line.rpartition(b">")
            if proc.returncode != 0 or not sep or b"<" not in head:
                reason = _first_line(proc.stderr).removeprefix("fatal: ") or "no identity"
                raise NoIdentity(
                    f"git has no identity to write commits with ({reason}); set one with: "
                    'git config --global user.name "Your Name" && '
                    "git config --global user.email you@example.com"
                )
            tz = _parse_tz(rest.split()[-1]) if rest.split() else 0
            self._identity = Identity(head + b">", tz)
        return self._identity

    # -- objects ---------------------------------------------------------

    def _batch(self) -> _CatFile:
        """The cat-file process, ready for a new read: earlier prefetches are
        settled first (one that failed keeps its error), and a process that
        stopped is replaced, so a read never inherits another read's failure."""
        if self._cat_file is not None:
            self._cat_file.settle()
            if self._cat_file.broken:
                self._cat_file.close()
                self._cat_file = None
        if self._cat_file is None:
            self._cat_file = _CatFile(self.git_dir, self._cwd, self._env)
        return self._cat_file

    def read_raw(self, spec: bytes) -> tuple[bytes, bytes]:
        """``(type, content)`` of the object ``spec`` names (an id or ``rev:path``).

        Raises:
            CorruptData: the object is missing.
        """
        found = self._batch().get(spec)
        if found is None:
            raise CorruptData(f"object {spec.decode('utf-8', 'replace')} is missing")
        return found

    def read_many(self, specs: list[bytes]) -> list[tuple[bytes, bytes] | None]:
        """``(type, content)`` or ``None`` (missing) for each spec, in one pipelined pass."""
        return self._batch().get_many(specs)

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

    def read_tree(self, oid: bytes) -> dict[bytes, tuple[int, bytes]]:
        """The entries of the tree ``oid`` as ``{name: (mode, oid)}``."""
        return self.parse_tree(oid, self._read_typed(oid, b"tree"))

    def parse_tree(self, oid: bytes, data: bytes) -> dict[bytes, tuple[int, bytes]]:
        """The entries of tree ``oid`` whose content is ``data`` (read elsewhere)."""
        size = 32 if self._sha256 else 20
        entries: dict[bytes, tuple[int, bytes]] = {}
        pos = 0
        try:
            while pos < len(data):
                space = data.index(b" ", pos)
                nul = data.index(b"\0", space)
                raw = data[nul + 1 : nul + 1 + size]
                if len(raw) != size:
                    raise ValueError("truncated entry")
                entries[data[space + 1 : nul]] = (int(data[pos:space], 8), raw.hex().encode())
                pos = nul + 1 + size
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

    def read_commit(self, oid: bytes) -> ShaFile:
        """The commit object ``oid`` (for history walks)."""
        return self.read(oid)

    def has_object(self, oid: bytes) -> bool:
        """Whether ``oid`` is present (loose, packed or in an alternate)."""
        store: Any = self._repo.object_store
        return oid in store

    def hash_object(self, kind: bytes, data: bytes) -> bytes:
        """The id git gives ``data`` as an object of ``kind`` (SHA-1 or SHA-256)."""
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
        oid = self.hash_object(kind, data)
        name = oid.decode("ascii")
        directory = os.path.join(self.common_dir, "objects", name[:2])
        path = os.path.join(directory, name[2:])
        if os.path.exists(path):
            return oid
        # Big objects (a links.json of thousands of links, large bodies) use the
        # fastest level: 2.5x quicker to write, a few per cent larger, read alike.
        level = 1 if len(data) > 256 * 1024 else zlib.Z_DEFAULT_COMPRESSION
        compressed = zlib.compress(b"%s %d\0" % (kind, len(data)) + data, level)
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
        oids = [self.blob_id(data) for data in datas]
        seen: set[bytes] = set()
        missing: list[tuple[bytes, bytes]] = []
        for data, oid in zip(datas, oids, strict=True):
            if oid in seen:
                continue
            seen.add(oid)
            if not os.path.exists(self._loose_path(oid)):
                missing.append((oid, data))
        if len(missing) <= pack_threshold:
            for _oid, data in missing:
                self.write_object(b"blob", data)
            return oids
        from dulwich.objects import Blob

        blobs = [Blob.from_string(data) for oid, data in missing if not self.has_object(oid)]
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
        """Store a commit by the user's git identity and return its id."""
        ident = self.identity()
        timestamp = int(time.time() if when is None else when)
        signature = b"%s %d %s" % (ident.name_email, timestamp, format_tz(ident.tz_offset))
        raw = b"tree %s\n" % tree
        for parent in parents:
            raw += b"parent %s\n" % parent
        raw += b"author %s\ncommitter %s\n\n" % (signature, signature)
        raw += message.encode("utf-8")
        return self.write_object(b"commit", raw)

    # -- refs ------------------------------------------------------------

    def _packed(self) -> dict[bytes, bytes]:
        """``packed-refs`` as ``{name: oid}``, parsed again only when the file changed."""
        path = os.path.join(self.common_dir, "packed-refs")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._packed_refs, self._packed_key = {}, None
            return self._packed_refs
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._packed_refs is not None and key == self._packed_key:
            return self._packed_refs
        refs: dict[bytes, bytes] = {}
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            data = b""
        for line in data.splitlines():
            if not line or line[:1] in (b"#", b"^"):
                continue
            oid, _, name = line.partition(b" ")
            refs[name] = oid
        self._packed_refs, self._packed_key = refs, key
        return refs

    def read_ref(self, name: bytes) -> bytes | None:
        """The commit a ref points at, or ``None`` if it does not exist."""
        path = os.path.join(self.common_dir, os.fsdecode(name))
        try:
            with open(path, "rb") as fh:
                value = fh.read().strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return self._packed().get(name)
        except OSError as exc:
            raise CorruptData(f"cannot read {name.decode()}: {exc.strerror}") from None
        if value.startswith(b"ref: ") or not value:
            return None
        return value

    def _loose_ref_files(self, prefix: bytes) -> Iterator[tuple[bytes, str]]:
        """``(suffix, path)`` of each loose ref file below ``prefix`` (no lock files)."""
        base = os.path.join(self.common_dir, os.fsdecode(prefix))
        cut = len(os.path.join(base, ""))
        for dirpath, _dirs, files in os.walk(base):
            for filename in files:
                if not filename.endswith(".lock"):
                    full = os.path.join(dirpath, filename)
                    yield os.fsencode(full[cut:]).replace(b"\\", b"/"), full

    def ref_names_under(self, prefix: bytes) -> set[bytes]:
        """The suffixes of the refs below ``prefix``, without reading their values."""
        names = {name for name, _path in self._loose_ref_files(prefix)}
        names.update(name[len(prefix) :] for name in self._packed() if name.startswith(prefix))
        return names

    def refs_under(self, prefix: bytes) -> dict[bytes, bytes]:
        """``{suffix: oid}`` for every ref below ``prefix`` (which ends with ``/``).

        Loose refs are read first and ``packed-refs`` after, as git's files
        backend does: a concurrent ``git pack-refs --prune`` moves a ref from
        loose to packed, never back, so this order cannot miss one.
        """
        loose: dict[bytes, bytes] = {}
        for name, full in self._loose_ref_files(prefix):
            try:
                with open(full, "rb") as fh:
                    value = fh.read().strip()
            except OSError:
                continue  # removed meanwhile (pack-refs): it is in packed-refs now
            if value and not value.startswith(b"ref: "):
                loose[name] = value
        found = {
            name[len(prefix) :]: oid
            for name, oid in self._packed().items()
            if name.startswith(prefix)
        }
        found.update(loose)
        return found

    def compare_and_swap(self, name: bytes, old: bytes | None, new: bytes, message: str) -> None:
        """Move ``name`` from ``old`` (``None``: absent) to ``new``, atomically.

        git's own lock-file protocol for the files ref backend: create
        ``<ref>.lock`` exclusively, check the ref still holds ``old`` (loose or
        packed) while holding the lock, write the new value into the lock and
        rename it over the ref. git, ``git pack-refs`` and other writers take
        the same lock, so none of them can interleave. Writes a reflog entry.

        Raises:
            RefRace: another writer holds the lock or moved the ref first; the
                caller re-reads and re-applies its change.
        """
        path = os.path.join(self.common_dir, os.fsdecode(name))
        lock = path + ".lock"
        if old is None:
            self._check_name_free(name, path)
        try:
            self.make_dirs(os.path.dirname(path))
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            raise RefRace(f"{lock} exists") from None
        except FileNotFoundError:
            # `git pack-refs --prune` removed the emptied directory meanwhile.
            raise RefRace(f"{os.path.dirname(path)} vanished") from None
        except OSError as exc:
            raise not_writable(exc, lock) from None
        try:
            try:
                current = self._read_loose(path)
            except FileNotFoundError:
                current = self._packed().get(name)
            if current != old:
                raise RefRace(name.decode())
            os.write(fd, new + b"\n")
            os.close(fd)
            fd = -1
            self.share(lock)
            os.replace(lock, path)
        except BaseException as exc:
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)
            if isinstance(exc, FileNotFoundError):
                # our lock or its directory was taken away under us: try again
                raise RefRace(f"{lock} vanished") from None
            if isinstance(exc, OSError):
                raise not_writable(exc, lock) from None
            raise
        self._log_ref(name, old, new, message)

    def _check_name_free(self, name: bytes, path: str) -> None:
        """Refuse to create ``name`` where a ref ``name/...`` or a ref that is a
        leading part of ``name`` exists (loose or packed), as git refuses: the
        two could not both be files."""
        packed = self._packed()
        below = name + b"/"
        clash: bytes | None = None
        if os.path.isdir(path):
            # Empty directories left behind are in the way only until removed, as
            # git removes them; anything still there (a ref, a lock, a link) clashes.
            for directory, _subdirs, _files in os.walk(path, topdown=False):
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
            if os.path.isdir(path):
                left = sorted(
                    os.path.relpath(os.path.join(d, f), path)
                    for d, subdirs, files in os.walk(path)
                    for f in [*files, *subdirs]
                )
                if left and all(entry.endswith(".lock") for entry in left):
                    raise Conflict(
                        f"cannot create {name.decode(errors='replace')}: the lock file "
                        f"{os.path.join(path, left[0])} is in the way (if no git process "
                        "holds it: git hydrate doctor --clear-stale-locks)"
                    )
                clash = below + (os.fsencode(left[0]) if left else b"...")
        if clash is None:
            clash = next((other for other in packed if other.startswith(below)), None)
        parts = name.split(b"/")
        for depth in range(2, len(parts)):
            above = b"/".join(parts[:depth])
            if above in packed or os.path.isfile(
                os.path.join(self.common_dir, os.fsdecode(above))
            ):
                clash = above
        if clash is not None:
            raise Conflict(
                f"cannot create {name.decode(errors='replace')}: it clashes with "
                f"{clash.decode(errors='replace')}, which is in the way "
                "(see: git hydrate doctor)"
            )

    def _read_loose(self, path: str) -> bytes | None:
        with open(path, "rb") as fh:
            value = fh.read().strip()
        return None if not value or value.startswith(b"ref: ") else value

    def _log_ref(self, name: bytes, old: bytes | None, new: bytes, message: str) -> None:
        """Append the reflog entry git itself writes for no custom ref."""
        try:
            ident = self.identity()
        except NoIdentity:
            # A fast-forward needs no author, and the ref has already moved: the
            # reflog line is signed the way git signs when it knows no better.
            ident = Identity(b"unknown <unknown>", 0)
        zero = b"0" * (64 if self._sha256 else 40)
        line = b"%s %s %s %d %s\t%s\n" % (
            old or zero,
            new,
            ident.name_email,
            int(time.time()),
            format_tz(ident.tz_offset),
            message.splitlines()[0].encode("utf-8") if message else b"",
        )
        path = os.path.join(self.common_dir, "logs", os.fsdecode(name))
        # The ref has moved: a reflog that cannot be written must not turn a
        # completed change into a reported failure.
        with contextlib.suppress(OSError):
            self.make_dirs(os.path.dirname(path))
            created = not os.path.exists(path)
            with open(path, "ab") as fh:
                fh.write(line)
            if created:
                self.share(path)

    def delete_ref(self, name: bytes, old: bytes, message: str) -> None:
        """Delete ``name`` if it still points at ``old``; :class:`RefRace` otherwise.

        Goes through ``git update-ref -d``, which also removes the ref from
        ``packed-refs`` under git's locks.
        """
        proc = self.git(
            ["update-ref", "-m", message, "-d", name.decode(), old.decode()], check=False
        )
        if proc.returncode != 0:
            error = _first_line(proc.stderr)
            if "read-only" in error.lower() or "permission denied" in error.lower():
                raise NotWritable(error.removeprefix("fatal: ").removeprefix("error: "))
            raise RefRace(error or name.decode())


class Prefetch:
    """Reads sent to ``git cat-file`` whose answers are collected later
    (:meth:`Repository.prefetch`), so that git works while the caller does."""

    def __init__(self, owner: _CatFile, count: int) -> None:
        self._owner = owner
        self.count = count
        self.answers: list[tuple[bytes, bytes] | None] | None = None
        #: Why the answers could not be read (the process died on one of them).
        self.error: CorruptData | None = None

    def collect(self) -> list[tuple[bytes, bytes] | None]:
        """The answers, in the order of the specs sent (waiting for git if need be).

        Raises:
            CorruptData: git stopped while answering this prefetch or an earlier one.
        """
        if self.answers is None and self.error is None:
            self._owner.settle()
        if self.answers is None:
            raise self.error or self._owner.failure()
        return self.answers


class _CatFile:
    """One long-lived ``git cat-file --batch`` process for reading objects.

    Its standard error goes to a temporary file, not to the user's terminal:
    when git stops (a damaged object), the error raised carries git's reason
    in one line, instead of git's own lines printed beside it.
    """

    #: How far git may run ahead of the reader: the capacity asked for its
    #: output pipe (Linux; elsewhere the system's default, often 64 KiB).
    PIPE_BYTES: Final = 1 << 20

    def __init__(self, git_dir: str, cwd: str | None, env: Mapping[str, str] | None) -> None:
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        try:
            self._proc = subprocess.Popen(
                ["git", "--git-dir", git_dir, "cat-file", "--batch"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                cwd=cwd,
                env=None if env is None else dict(env),
            )
        except FileNotFoundError:
            self._errors.close()
            raise NotARepository("the git binary was not found on PATH") from None
        self.broken = False
        self._pending: list[Prefetch] = []
        set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
        if set_pipe_size is not None and self._proc.stdout is not None:
            with contextlib.suppress(OSError):  # over the system's limit: keep the default
                fcntl.fcntl(self._proc.stdout.fileno(), set_pipe_size, self.PIPE_BYTES)

    def failure(self) -> CorruptData:
        """The error to raise once git has stopped: its last line on stderr, if any."""
        reason = ""
        with contextlib.suppress(OSError, ValueError):
            self._errors.seek(0)
            lines = self._errors.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
            reason = lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else ""
        return CorruptData(
            f"git cat-file stopped: {reason}" if reason else "git cat-file stopped unexpectedly"
        )

    def _stop(self) -> None:
        self.broken = True
        self._proc.kill()

    def send(self, specs: list[bytes]) -> Prefetch:
        """Ask for ``specs`` now; read the answers with :meth:`Prefetch.collect`.

        The requests of one prefetch must fit the input pipe (a few hundred
        object ids), since git stops reading them while its output is full;
        a second prefetch first collects the answers of the one before.
        """
        assert self._proc.stdin is not None
        # One prefetch outstanding at most: requests of several could fill the
        # input pipe while git waits for its full output pipe to be read.
        self.settle()
        if self.broken:
            raise self.failure()
        request = b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in specs)
        try:
            self._proc.stdin.write(request)
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._stop()
            raise self.failure() from None
        except BaseException:
            self._stop()
            raise
        pending = Prefetch(self, len(specs))
        self._pending.append(pending)
        return pending

    def settle(self) -> None:
        """Read the answers of every prefetch sent, in order, into each one.

        When git stops on one of them, the error is kept in that prefetch and
        the ones after it (:meth:`Prefetch.collect` raises it), not raised
        here: the read that happens to come next is not what failed.
        """
        try:
            while self._pending:
                pending = self._pending[0]
                pending.answers = [self._answer() for _ in range(pending.count)]
                self._pending.pop(0)
        except CorruptData as exc:
            self._stop()
            for pending in self._pending:
                pending.error = exc
            self._pending.clear()
        except BaseException:
            self._stop()
            self._pending.clear()
            raise

    def get(self, spec: bytes) -> tuple[bytes, bytes] | None:
        return self.get_many([spec])[0]

    def get_many(self, specs: list[bytes], chunk: int = 64) -> list[tuple[bytes, bytes] | None]:
        """Like :meth:`get` for many objects, pipelined in chunks.

        A chunk's requests (at most ~5 KB, under any pipe buffer) are all
        written before its answers are read, so neither side can block the
        other. Anything going wrong mid-chunk (even an interrupt) leaves
        answers unread, so the process is then stopped for good rather than
        answer later requests with earlier objects. (The caller settles
        earlier prefetches first, see :meth:`Repository.read_many`.)
        """
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if self.broken:
            raise self.failure()
        self.settle()  # earlier prefetches' answers come first on the pipe
        if self.broken:
            raise self.failure()
        results: list[tuple[bytes, bytes] | None] = []
        try:
            for start in range(0, len(specs), chunk):
                batch = specs[start : start + chunk]
                request = b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in batch)
                try:
                    self._proc.stdin.write(request)
                    self._proc.stdin.flush()
                except BrokenPipeError:
                    raise self.failure() from None
                for _spec in batch:
                    results.append(self._answer())
        except BaseException:
            self._stop()
            raise
        return results

    def _answer(self) -> tuple[bytes, bytes] | None:
        assert self._proc.stdout is not None
        header = self._proc.stdout.readline()
        if not header:
            self._proc.wait()  # so that its last words are in the errors file
            raise self.failure()
        parts = header.split()
        if len(parts) != 3 or parts[1] in (b"missing", b"ambiguous"):
            return None
        size = int(parts[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        if len(data) != size:
            self._proc.wait()
            raise self.failure()
        return parts[1], data

    def close(self) -> None:
        self.broken = True  # a prefetch collected after this says so, clearly
        self._pending.clear()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a killed process: nothing to flush to
                    stream.close()
        self._proc.wait()
        self._errors.close()


class CommitInfo(NamedTuple):
    """What a history walk needs from one commit."""

    oid: bytes
    tree: bytes
    parents: list[bytes]
    author: str
    author_time: int
    committer: str
    commit_time: int
    message: str


def read_commit_info(repo: Repository, oid: bytes) -> CommitInfo:
    """The fields of the commit ``oid`` as plain Python values.

    Raises:
        CorruptData: ``oid`` is missing or is not a commit.
    """
    from dulwich.objects import Commit

    obj = repo.read(oid)
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


def update_refs_atomically(
    repo: Repository,
    updates: Iterable[tuple[bytes, bytes | None, bytes | None]],
    message: str,
) -> None:
    """Apply several compare-and-swaps as one all-or-nothing transaction.

    Each update is ``(ref, old, new)``: ``old`` ``None`` means the ref must not
    exist, ``new`` ``None`` deletes it. ``git update-ref --stdin`` locks every
    ref, checks every old value, and only then changes them all
    (https://git-scm.com/docs/git-update-ref), which dulwich cannot do for
    several refs at once.

    Raises:
        RefRace: a ref was locked or no longer had its expected value; nothing
            changed, re-read and retry.
        CorruptData: git refused for another reason.
    """
    lines = []
    for name, old, new in updates:
        ref = name.decode("ascii")
        if new is None:
            if old is None:
                raise ValueError(f"update of {ref} neither creates nor deletes")
            lines.append(f"delete {ref} {old.decode()}")
        elif old is None:
            lines.append(f"create {ref} {new.decode()}")
        else:
            lines.append(f"update {ref} {new.decode()} {old.decode()}")
    proc = repo.git(
        ["update-ref", "--create-reflog", "-m", message, "--stdin"],
        input=("\n".join(lines) + "\n").encode("ascii"),
        check=False,
    )
    if proc.returncode == 0:
        return
    error = _first_line(proc.stderr)
    if "lock" in error or "exists" in error or "expected" in error:
        raise RefRace(error)
    raise CorruptData(error or "git update-ref failed")
