"""Opening a repository: discovery, configuration, identity and file modes.

:class:`RepositoryBase` is what every part of the store stands on: where the
repository is and its settings (found and read in-process where that is
certainly what git would find and read, :mod:`.discover`; else by ``git
rev-parse`` and one ``git config`` read, so ``GIT_DIR`` and friends are
honoured), how to run git on it, the committer identity, and the modes
``core.sharedRepository`` asks of new files.
"""

from __future__ import annotations

import contextlib
import os
import time

from ..errors import NoIdentity, NotARepository, UnsupportedRepository
from ..settings import Settings, parse_records
from .discover import discover
from .keyed import sealed, unsealed
from .perms import open_regular, open_regular_fd, shared_file_mode, shared_repository_mode
from .process import GitRun, first_line, outside_env, parse_tz, run_git
from .tempfiles import temporary_name

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any, Final, Self

    from dulwich.repo import Repo

    from .catfile import CatFile
    from .confined import ConfinedTree

__all__ = ["Identity", "RepositoryBase"]

#: The first line of the staged ``.gitattributes`` kept (:meth:`RepositoryBase.staged_attributes`).
_STAGED_HEADER: Final = b"# git-hydrate staged-attributes 1\n"
#: The variables that change how git reads a pathspec (``GIT_<name>_PATHSPECS``).
_PATHSPECS: Final = ("LITERAL", "GLOB", "NOGLOB", "ICASE")


def _git_binary() -> str | None:
    """The git binary ``PATH`` finds, as ``path size mtime`` (``None``: none found)."""
    found = _which_git()
    if found is None:
        return None
    try:
        stat = os.stat(found)
    except OSError:
        return None
    return f"{os.path.realpath(found)} {stat.st_size} {stat.st_mtime_ns}"


def _which_git() -> str | None:
    """``shutil.which("git")``, without importing shutil where ``PATH`` is searched
    plainly: its import loads bz2 and lzma, 4 ms of every add-tree run whose git lacks
    a feature (``check-attr --source`` before git 2.40)."""
    if os.name == "nt":  # (PATHEXT, and the current directory first)
        import shutil

        return shutil.which("git")
    for folder in os.get_exec_path():
        found = os.path.join(folder, "git")
        if os.access(found, os.X_OK) and not os.path.isdir(found):
            return found
    return None


class Identity(tuple[bytes, int, int | None]):
    """A git identity line (``Name <email>``) with its timezone offset in seconds.

    ``when`` is the POSIX time git would write for it when the environment
    fixes one (``GIT_COMMITTER_DATE``/``GIT_AUTHOR_DATE``), else ``None``
    (the moment of writing). (A tuple with named fields, not a
    typing.NamedTuple: see git_hydrate.pack.budget.Budget.)
    """

    __slots__ = ()

    def __new__(cls, name_email: bytes, tz_offset: int, when: int | None = None) -> Identity:
        return super().__new__(cls, (name_email, tz_offset, when))

    def __getnewargs__(self) -> tuple[bytes, int, int | None]:
        return (self[0], self[1], self[2])  # copy and pickle, as a NamedTuple's

    @property
    def name_email(self) -> bytes:
        return self[0]

    @property
    def tz_offset(self) -> int:
        return self[1]

    @property
    def when(self) -> int | None:
        return self[2]

    def __repr__(self) -> str:
        return f"Identity({self[0]!r}, {self[1]!r}, {self[2]!r})"


def _parse_ident(line: bytes) -> tuple[bytes, int, int] | None:
    """``Name <email> 1700000000 +0200`` as ``(b"Name <email>", time, tz)``."""
    head, sep, rest = line.strip().rpartition(b">")
    fields = rest.split()
    if not sep or b"<" not in head or len(fields) != 2 or not fields[0].isdigit():
        return None
    return head + b">", int(fields[0]), parse_tz(fields[1])


#: Characters git strips from both ends of an identity's name and email (``crud``
#: in git's ident.c), and the ones it drops inside them.
_CRUD: Final = frozenset(".,:;<>\"\\'")
_DROPPED: Final = frozenset("<>\n")


def _clean_ident(value: str) -> bool:
    """Whether git writes ``value`` (a configured name or email) as it is: no
    character it strips from the ends or drops inside, nothing undecodable."""
    if "\ufffd" in value or any(c in _DROPPED for c in value):
        return False
    return all(not (c <= " " or c in _CRUD) for c in (value[0], value[-1]))


#: The ``TZ`` the C library's time zone was last set from (see :func:`_local_offset`).
_TZ_SET: list[str | None] = [os.environ.get("TZ")]


def _local_offset(environ: Mapping[str, str]) -> int | None:
    """The local time zone's offset now, in seconds east of UTC, as a git started
    with ``environ`` takes it; ``None`` when ``environ`` is not this process's
    as to ``TZ``. (``TZ`` is read again when it changed since last read.)"""
    zone = environ.get("TZ")
    if zone != os.environ.get("TZ"):
        return None
    if zone != _TZ_SET[0]:
        time.tzset()
        _TZ_SET[0] = zone
    return time.localtime().tm_gmtoff


class RepositoryBase:
    """A git repository as git-hydrate uses it (see :class:`~git_hydrate.store.Repository`).

    Args:
        path: Any directory git accepts as (inside) a repository. ``None``
            means the current directory, honouring ``GIT_DIR`` like git does.

    Raises:
        NotARepository: ``path`` is not inside a git repository.
        UnsupportedRepository: the repository uses a format this version
            cannot write safely (reftable refs, an unknown extension).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        env = None
        cwd = None
        if path is not None:
            cwd = os.fspath(path)
            if not os.path.isdir(cwd):  # (git -C's words)
                why = "Not a directory" if os.path.exists(cwd) else "No such file or directory"
                raise NotARepository(f"cannot change to '{cwd}': {why}")
            # An explicit path wins over the GIT_DIR of an enclosing git call.
            env = outside_env()
        self._env = env
        self._cwd = cwd
        self._dulwich: Repo | None = None
        self._cat_file: CatFile | None = None
        self._identity: Identity | None = None
        self._author: Identity | None = None
        self._shared: int | None = None
        self._settings: Settings | None = None
        self._staged: tuple[tuple[int, int, int, int, int, bytes], bytes] | None = None
        self._work_tree_files: ConfinedTree | None = None
        found = discover(cwd, self._environ())
        #: Whether git's answers were read in-process (no variable redirects git).
        self.found_in_process = found is not None
        if found is not None:
            self.git_dir, self.common_dir = found.git_dir, found.common_dir
            self.is_bare, self._sha256 = found.is_bare, found.sha256
            self.work_tree: str | None = found.work_tree
            self._settings = Settings(parse_records(found.config))
        else:
            self._ask_git()
        self._check_extensions()

    def _ask_git(self) -> None:
        """Where the repository is, as ``git rev-parse`` finds it (what :func:`discover`
        leaves to git)."""
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
            cwd=self._cwd,
            env=self._env,
            check=False,
        )
        lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) < 5:
            message = first_line(proc.stderr).removeprefix("fatal: ") or "not a git repository"
            if message.startswith("not a git repository"):
                # what to do next (issue 34): git's own words first
                message += "; run it inside a repository (git init makes one) or name one with -C"
            elif message.startswith("detected dubious ownership"):
                # (git says the way out on its fourth line: the one line keeps it)
                message += _trust_it(proc.stderr)
            raise NotARepository(message)
        self.git_dir = lines[0]
        self.common_dir = lines[1]
        self.is_bare = lines[2] == "true"
        # git's answer, never a guess from the config text: ids are SHA-1 or SHA-256.
        self._sha256 = lines[3].strip() == "sha256"
        # (a top level printed: there is a work tree, even when the current directory
        # is outside it, as with GIT_DIR and GIT_WORK_TREE set; none is printed for a
        # bare repository or from inside the git directory)
        self.work_tree = lines[5] if len(lines) > 5 and lines[5] else None

    @property
    def _repo(self) -> Repo:
        """The dulwich repository, opened on first use (writes of packs, history walks).

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def work_tree_files(self) -> ConfinedTree | None:
        """The work tree's files, each read without following a symbolic link on
        its way from the top (as git reads them); ``None``: no work tree."""
        if self._work_tree_files is None and self.work_tree is not None:
            from .confined import ConfinedTree

            self._work_tree_files = ConfinedTree(self.work_tree)
        return self._work_tree_files

    def close(self) -> None:
        """Release the repository's file handles and helper process."""
        if self._work_tree_files is not None:
            self._work_tree_files.close()
        if self._cat_file is not None:
            self._cat_file.close()
            self._cat_file = None
        if self._dulwich is not None:
            self._dulwich.close()
            self._dulwich = None

    # -- running git -----------------------------------------------------------

    def git(
        self,
        args: list[str],
        *,
        input: bytes | None = None,
        check: bool = True,
        what: str = "",
        whole: bool = False,
    ) -> GitRun:
        """Run ``git`` against this repository (``--git-dir``), honouring ``git -c``
        (``whole``: a git no signal to this process may kill half-way, a ref
        transaction; see :func:`~.process.run_git`).

        Raises:
            GitFailed: ``check`` and git exited non-zero.
        """
        return run_git(
            self._prefix() + args,
            cwd=self._cwd,
            env=self._env,
            input=input,
            check=check,
            what=what,
            whole=whole,
        )

    def _prefix(self) -> list[str]:
        full = ["--git-dir", self.git_dir]
        if self.work_tree is not None:
            full += ["--work-tree", self.work_tree]
        return full

    def git_invocation(self) -> tuple[list[str], str | None, dict[str, str] | None]:
        """``(argv prefix, cwd, env)`` to start a long-running ``git`` process here."""
        return ["git", *self._prefix()], self._cwd, self._env

    def _check_extensions(self) -> None:
        """Refuse a reftable repository: git-hydrate reads the files ref backend directly.

        git versions without reftable support refuse such a repository earlier,
        in ``git rev-parse``, with their own message.
        """
        if (self.settings.raw("extensions.refstorage") or "").lower() == "reftable":
            raise UnsupportedRepository(
                "this repository stores refs in reftable format, which git-hydrate "
                "cannot read yet; use a repository with the files ref backend"
            )

    # -- configuration, identity, permissions -------------------------------------

    @property
    def settings(self) -> Settings:
        """The repository's configuration, read once (``git config -z --list``)."""
        if self._settings is None:
            proc = self.git(["config", "-z", "--list"], check=False)
            self._settings = Settings(parse_records(proc.stdout))
        return self._settings

    @property
    def shared_mode(self) -> int:
        """``core.sharedRepository`` as :func:`shared_repository_mode` reads it."""
        if self._shared is None:
            settings = self.settings
            present = settings.has("core.sharedRepository")
            self._shared = shared_repository_mode(
                settings.raw("core.sharedRepository"), present=present
            )
        return self._shared

    def share(self, path: str) -> None:
        """Give a file or directory this repository created the permissions git
        would (``core.sharedRepository``: group-writable files, setgid
        directories...); nothing when the umask decides."""
        if not self.shared_mode:
            return
        mode = os.stat(path).st_mode
        wanted = shared_file_mode(self.shared_mode, mode)
        if wanted != mode & 0o7777:
            os.chmod(path, wanted)

    def replace_file(self, path: str, chunks: Iterable[bytes], *, private: bool = False) -> None:
        """Write ``path`` whole or not at all: a temporary file beside it (directories
        made and shared as needed), shared as ``core.sharedRepository`` asks, then
        renamed over ``path``. ``private``: readable and writable by this user
        only, whatever the sharing (a file that is trusted when read back only if
        nobody else could have written it; see :func:`private_file`).

        Raises:
            OSError: nothing was replaced, and the temporary file is gone.
        """
        self.make_dirs(os.path.dirname(path))
        temporary = temporary_name(path)  # a killed writer's is found and pruned by name
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            with open(os.open(temporary, flags, 0o600 if private else 0o666), "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
            if not private:
                self.share(temporary)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

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

    def _environ(self) -> Mapping[str, str]:
        return self._env if self._env is not None else os.environ

    def _ident(self, variable: str) -> tuple[bytes, int, int]:
        """``git var`` of ``GIT_COMMITTER_IDENT``/``GIT_AUTHOR_IDENT``, parsed.

        git parses the date variables itself (``@<epoch> <tz>``, ``<epoch>
        <tz>``, RFC 2822, ISO 8601, ...), so they mean here what they mean to
        ``git commit``.
        """
        proc = self.git(["var", variable], check=False)
        parsed = _parse_ident(proc.stdout) if proc.returncode == 0 else None
        if parsed is None:
            why = first_line(proc.stderr).removeprefix("fatal: ") or "no identity"
            if why.startswith("invalid date format"):
                raise NoIdentity(f"git cannot read the date in the environment ({why})")
            raise NoIdentity(
                f"git has no identity to write commits with ({why}); set one with: "
                'git config --global user.name "Your Name" && '
                "git config --global user.email you@example.com"
            )
        return parsed

    def identity(self) -> Identity:
        """The committer identity git would use here (``git var GIT_COMMITTER_IDENT``).

        ``when`` is set when ``GIT_COMMITTER_DATE`` is.

        Raises:
            NoIdentity: git itself has no usable identity; like ``git commit``,
                writing is refused rather than signed by a made-up author.
        """
        if self._identity is None:
            configured = self._configured_committer()
            if configured is not None:
                self._identity = configured
            else:
                name_email, when, tz = self._ident("GIT_COMMITTER_IDENT")
                fixed = when if self._environ().get("GIT_COMMITTER_DATE") else None
                self._identity = Identity(name_email, tz, fixed)
        return self._identity

    def _configured_committer(self) -> Identity | None:
        """The committer identity read from the settings already read, where that
        is certainly what ``git var GIT_COMMITTER_IDENT`` would say (saving the
        process a write paid for): a name and an email configured
        (``committer.*`` over ``user.*``) that git would write unchanged, no
        ``GIT_COMMITTER_*`` in the environment, and the local time zone's offset.
        ``None``: ask git."""
        environ = self._environ()
        if any(f"GIT_COMMITTER_{key}" in environ for key in ("NAME", "EMAIL", "DATE")):
            return None
        settings = self.settings
        name = settings.raw("committer.name") or settings.raw("user.name")
        email = settings.raw("committer.email") or settings.raw("user.email")
        if not name or not email or not (_clean_ident(name) and _clean_ident(email)):
            return None
        offset = _local_offset(environ)
        if offset is None:
            return None
        return Identity(f"{name} <{email}>".encode(), offset, None)

    def staged_attributes(self) -> bytes:
        """The index entries of every ``.gitattributes`` (mode, blob id, path): what a
        git without ``check-attr --source`` reads attributes from for a commit. Asked
        once while the index file stays the same (its checksum, inode, size and
        times): the answer is kept (``<common dir>/hydrate/staged-attributes``, this
        user's, under that state) for this process and the next."""
        state = self._index_state()
        if state is not None and self._staged is not None and self._staged[0] == state:
            return self._staged[1]
        # (kept by the index file's state and what changes how git reads the pathspecs:
        # a new task of a known tree runs no ls-files, 10 ms of git's CPU at 30,000 files)
        pathspecs = [self._environ().get(f"GIT_{name}_PATHSPECS") for name in _PATHSPECS]
        key = repr((*state, pathspecs)).encode("utf-8", "backslashreplace") if state else b""
        path = os.path.join(self.common_dir, "hydrate", "staged-attributes")
        header = b"%s%s\n" % (_STAGED_HEADER, key)  # (the answer holds for that key only)
        if state is not None and (view := unsealed(path, header)) is not None:
            self._staged = (state, bytes(view))
            return self._staged[1]
        proc = self.git(
            ["ls-files", "-s", "-z", "--", ":(glob)**/.gitattributes", ".gitattributes"],
            check=False,
        )
        found = proc.stdout if proc.returncode == 0 else b""
        if state is not None and proc.returncode == 0 and self._index_state() == state:
            self._staged = (state, found)
            with contextlib.suppress(OSError):  # (failing only costs the next run the question)
                self.replace_file(path, sealed(header, found), private=True)
        return found

    def _index_state(self) -> tuple[int, int, int, int, int, bytes] | None:
        """The index file's device, inode, size and times, and its checksum (the
        last bytes git writes: a hash of all before them). ``None``: no index file,
        one ``GIT_INDEX_FILE`` names, or one without a checksum (``index.skipHash``):
        not remembered. The times alone are not enough: a file system can give a
        replaced index its inode back, and ticks in whole seconds."""
        if "GIT_INDEX_FILE" in self._environ():
            return None
        try:
            fd = open_regular_fd(os.path.join(self.git_dir, "index"))
        except OSError:
            return None
        try:
            status = os.fstat(fd)
            tail = os.pread(fd, 32, max(status.st_size - 32, 0))
        except OSError:
            return None
        finally:
            os.close(fd)
        if len(tail) < 32 or not tail[-20:].strip(b"\0"):
            return None
        return (
            status.st_dev,
            status.st_ino,
            status.st_size,
            status.st_mtime_ns,
            status.st_ctime_ns,
            tail,
        )

    def _features_path(self) -> str:
        return os.path.join(self.common_dir, "hydrate", "git-features")

    def lacks(self, feature: str) -> bool:
        """Whether the installed git was found to lack ``feature`` (remembered per
        git binary, so an upgraded git is asked again)."""
        try:
            with open_regular(self._features_path()) as fh:
                known = fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        if f"\t{feature}\n" not in known:
            return False  # (without looking for the binary: most gits lack nothing)
        binary = _git_binary()
        return binary is not None and f"{binary}\t{feature}\n" in known

    def _remember_lacking(self, feature: str) -> None:
        binary = _git_binary()
        if binary is None:
            return
        path = self._features_path()
        try:
            with open_regular(path) as fh:
                known = fh.read().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            known = ""
        # Derived and disposable: failing to write it only costs the retry again.
        with contextlib.suppress(OSError):
            self.replace_file(path, [(known + f"{binary}\t{feature}\n").encode("utf-8")])

    def git_now(self) -> float:
        """POSIX seconds of git's idea of now: the date of ``GIT_COMMITTER_DATE``
        when it is set (and git can read it), else the wall clock."""
        if os.environ.get("GIT_COMMITTER_DATE"):
            try:
                fixed = self.identity().when
            except NoIdentity:
                fixed = None  # a read goes on; a write is refused where it signs
            if fixed is not None:
                return float(fixed)
        return time.time()

    def author(self) -> Identity:
        """The author identity git would use here: the committer's, unless the
        environment sets ``GIT_AUTHOR_NAME``/``_EMAIL``/``_DATE`` (then ``git var
        GIT_AUTHOR_IDENT``; ``when`` is set when ``GIT_AUTHOR_DATE`` is).

        Raises:
            NoIdentity: as :meth:`identity`.
        """
        if self._author is None:
            committer = self.identity()
            environ = self._environ()
            if not any(environ.get(f"GIT_AUTHOR_{key}") for key in ("NAME", "EMAIL", "DATE")):
                self._author = Identity(committer.name_email, committer.tz_offset, None)
            else:
                name_email, when, tz = self._ident("GIT_AUTHOR_IDENT")
                fixed = when if environ.get("GIT_AUTHOR_DATE") else None
                self._author = Identity(name_email, tz, fixed)
        return self._author


def _trust_it(stderr: bytes) -> str:
    """git's command that trusts a repository another user owns (``safe.directory``),
    from its own refusal: ``; if you trust it: git config --global --add …``."""
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.strip().startswith("git config --global --add safe.directory "):
            return f"; if you trust it: {line.strip()}"
    return ""
