"""Finding a repository without a process, where that is certainly what git finds.

:func:`discover` answers what ``git rev-parse --path-format=absolute --git-dir
--git-common-dir --is-bare-repository --show-object-format
--is-inside-work-tree --show-toplevel`` and ``git config -z --list`` would,
from the directory up as git looks (a ``.git`` directory, a ``.git`` file's
``gitdir:`` and a git directory's ``commondir``, a bare repository, stopping
under ``GIT_CEILING_DIRECTORIES``), or ``None`` whenever git might answer
otherwise, and git is asked as before:

* the environment points git somewhere (``GIT_DIR``, ``GIT_WORK_TREE``,
  ``GIT_COMMON_DIR``, ``GIT_OBJECT_DIRECTORY``...), lets it cross file systems,
  or is one of git's test switches;
* anything on the way is not of the plain shapes git makes (a ``.git`` that is
  a symbolic link, or neither a repository nor absent; a ``HEAD`` that is a
  link; a directory that looks half like a repository), or the walk reaches
  another file system, the root or a ceiling without finding one (git's
  error is git's to word);
* a path is owned by another user (``safe.directory`` decides then), or the
  process runs under ``sudo``;
* the configuration is not read in-process (:mod:`.configfile`), sets
  ``core.worktree``, ``safe.bareRepository``, or a ``core.bare`` that git would
  read otherwise, or a repository format or extension not known here.

Paths are the real ones, as ``--path-format=absolute`` prints them.
``tests/test_discover_oracle.py`` compares every answer with git's.
"""

from __future__ import annotations

import os
import stat

from ..settings import parse_bool
from .configfile import git_program, read_config

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

    from .configfile import Config, Record

__all__ = ["Found", "discover"]

#: Variables under which git looks elsewhere, or otherwise, than this module.
_ELSEWHERE: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_IMPLICIT_WORK_TREE",
)
#: Extensions that change nothing git's answers here depend on (any other: ask git).
_HARMLESS_EXTENSIONS: Final = frozenset({b"noop", b"preciousobjects", b"partialclone"})
#: Settings under which git finds the work tree, or allows a bare repository, itself.
_GIT_DECIDES: Final = frozenset({b"core.worktree", b"safe.barerepository"})
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")


class Found:
    """What git would say of a repository (see :func:`discover`)."""

    __slots__ = ("common_dir", "config", "git_dir", "is_bare", "sha256", "work_tree")

    def __init__(
        self,
        git_dir: str,
        common_dir: str,
        work_tree: str | None,
        is_bare: bool,
        sha256: bool,
        config: bytes,
    ) -> None:
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.work_tree = work_tree
        self.is_bare = is_bare
        self.sha256 = sha256
        self.config = config  # as `git config -z --list` prints it


def _head_valid(path: str) -> bool | None:
    """Whether ``HEAD`` at ``path`` is one git accepts (``validate_headref``): a
    ``ref: refs/...`` or an object id; ``None`` for a symbolic link (ask git)."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            head = fh.read(255)
    except OSError:
        return False
    if head.startswith(b"ref:") and head[4:].lstrip(b" \t\n\r").startswith(b"refs/"):
        return True
    return len(head) >= 40 and all(c in _HEX for c in head[:40])


def _common_dir(git_dir: str) -> str | None:
    """Where ``git_dir``'s shared parts are (its ``commondir`` file, else itself);
    ``None`` for a ``commondir`` git might read otherwise."""
    try:
        with open(os.path.join(git_dir, "commondir"), "rb") as fh:
            named = fh.read()
    except FileNotFoundError:
        return git_dir
    except OSError:
        return None
    named = named.rstrip(b"\r\n")
    if not named or b"\0" in named:
        return None
    return os.path.join(git_dir, os.fsdecode(named))


def _git_directory(path: str) -> bool | None:
    """Whether git takes ``path`` for a git directory (``is_git_directory``):
    ``None`` when it looks partly like one (ask git)."""
    head = _head_valid(os.path.join(path, "HEAD"))
    common = _common_dir(path)
    if common is None or head is None:
        return None
    parts = [os.access(os.path.join(common, name), os.X_OK) for name in ("objects", "refs")]
    if head and all(parts):
        return True
    if head or any(parts) or common != path:
        return None
    return False


def _gitfile(path: str) -> str | None:
    """The git directory a ``.git`` file names (relative to the file's directory),
    or ``None`` when it is not the plain ``gitdir: PATH`` git writes."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(65537)
    except OSError:
        return None
    if len(data) > 65536 or not data.startswith(b"gitdir: "):
        # (git refuses a .git file over 1 MiB in its own words: larger ones are git's)
        return None
    named = data[8:].rstrip(b"\r\n")
    if not named or b"\0" in named or b"\n" in named:
        return None
    return os.path.join(os.path.dirname(path), os.fsdecode(named))


def _ceiling(environ: Mapping[str, str], start: str) -> int:
    """How much of ``start`` git never leaves upwards (``GIT_CEILING_DIRECTORIES``,
    as ``longest_ancestor_length`` measures it): -1 for none."""
    longest = -1
    literal = False
    for entry in environ.get("GIT_CEILING_DIRECTORIES", "").split(":"):
        if not entry:
            literal = True  # entries after an empty one are taken as written
            continue
        if not entry.startswith("/"):
            continue
        if not literal:
            try:
                entry = os.path.realpath(entry, strict=True)
            except OSError:
                continue  # git drops what it cannot resolve
        size = len(entry) - entry.endswith("/")  # a root's slash is not counted
        if start.startswith(entry[:size]) and start[size : size + 1] == "/" and start[size + 1 :]:
            longest = max(longest, size)
    return longest


def _owned(paths: list[str]) -> bool:
    """Whether this user owns each of ``paths`` (and what they resolve to)."""
    uid = os.geteuid()
    try:
        return all(os.lstat(path).st_uid == uid and os.stat(path).st_uid == uid for path in paths)
    except OSError:
        return False


def _walk(start: str, environ: Mapping[str, str]) -> tuple[str, str | None, list[str]] | None:
    """``(git directory, work tree or None, paths whose owner git checks)`` of the
    repository git finds from ``start`` (a real path), or ``None``."""
    ceiling = _ceiling(environ, start)
    device = os.stat(start).st_dev
    directory = start
    while True:
        dotgit = os.path.join(directory, ".git")
        try:
            mode = os.lstat(dotgit).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None:
            if stat.S_ISREG(mode):
                named = _gitfile(dotgit)
                if named is None or _git_directory(named) is not True:
                    return None
                return named, directory, [dotgit, directory, named]
            if not stat.S_ISDIR(mode) or _git_directory(dotgit) is not True:
                return None  # a link, or a .git git may skip or refuse
            return dotgit, directory, [directory, dotgit]
        bare = _git_directory(directory)
        if bare is not False:
            return None if bare is None else (directory, None, [directory])
        # up to the last "/" past the ceiling (git's loop in setup.c); at the root,
        # or the ceiling, git says "not a git repository" in its own words
        last = directory.rfind("/")
        if directory == "/" or last <= ceiling:
            return None
        parent = directory[:last] or "/"
        if os.stat(parent).st_dev != device:
            return None
        directory = parent


def _format(own: list[Record]) -> bool | None:
    """Whether the repository's own configuration names SHA-256 objects; ``None``
    for a format or extension git might read otherwise."""
    version = b"0"
    extensions = {}
    for key, value in own:
        if key == b"core.repositoryformatversion":
            version = value if value is not None else b"?"
        elif key.startswith(b"extensions."):
            extensions[key[11:]] = value
    if version == b"0" and b"objectformat" in extensions:
        return None  # git refuses a v1-only extension in version 0, even "sha1"
    objects = extensions.pop(b"objectformat", b"sha1")
    if version not in (b"0", b"1") or objects not in (b"sha1", b"sha256"):
        return None
    if not set(extensions) <= _HARMLESS_EXTENSIONS:
        return None
    if b"partialclone" in extensions and extensions[b"partialclone"] is None:
        return None  # a key without a value: git fails (2.39 even crashes)
    if b"preciousobjects" in extensions and _flag(extensions[b"preciousobjects"]) is None:
        return None  # not a boolean: git stops with "bad boolean config value"
    return objects == b"sha256"


def _flag(value: bytes | None) -> bool | None:
    return True if value is None else parse_bool(value.decode("utf-8", "replace"))


def _bare(config: Config, linked: bool, work_tree: str | None) -> bool | None:
    """``--is-bare-repository`` from every ``core.bare`` given (``None``: ask git)."""
    every = [_flag(value) for key, value in config.records if key == b"core.bare"]
    if None in every:
        return None
    own = [_flag(value) for key, value in config.own if key == b"core.bare"]
    if work_tree is not None and not linked and own and own[-1]:
        return None  # a work tree git would not use
    return work_tree is None and (not every or bool(every[-1]))


def discover(path: str | None, environ: Mapping[str, str]) -> Found | None:
    """What git finds from ``path`` (``None``: the current directory) under
    ``environ``, or ``None`` when git must be asked (see the module's docstring)."""
    if any(name in environ for name in _ELSEWHERE) or any(
        name.startswith("GIT_TEST_") for name in environ
    ):
        return None
    if (os.geteuid() == 0 and "SUDO_UID" in environ) or git_program(environ) is None:
        return None
    try:
        start = os.path.realpath(path if path is not None else os.getcwd(), strict=True)
        walked = _walk(start, environ)
    except OSError:
        return None
    if walked is None or not _owned(walked[2]):
        return None
    git_dir, work_tree, _checked = walked
    common = _common_dir(git_dir)
    if common is None:
        return None
    git_dir, common = os.path.realpath(git_dir), os.path.realpath(common)
    config = read_config(environ, common)
    if config is None or any(key in _GIT_DECIDES for key, _ in config.records):
        return None
    sha256 = _format(config.own)
    is_bare = _bare(config, common != git_dir, work_tree)
    if sha256 is None or is_bare is None:
        return None
    if work_tree is not None:
        work_tree = os.path.realpath(work_tree)
    if any("\n" in found for found in (git_dir, common, work_tree or "")):
        return None  # git's answer, one line a path, is not read as paths here
    return Found(git_dir, common, work_tree, is_bare, sha256, config.printed)
