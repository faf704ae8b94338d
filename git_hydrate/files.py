"""Enumerating files for hydration: a committed tree, the work tree, or a plain directory.

This module decides *which* files may become context and *why* the others may
not. It never writes to the repository; :mod:`git_hydrate.hydrate_tree` turns
its answer into one commit.

The three file sets:

* a committed tree (``git ls-tree -r -z -l``): path, mode, blob id and size
  come from git's tree objects, so path rules and size limits are applied
  without reading a single blob;
* the work tree as ``git ls-files --cached --others --exclude-standard`` sees
  it (tracked files plus untracked files that are not ignored) — git's own
  ignore rules, never a re-implementation of them;
* a plain directory (``os.walk``, hidden directories skipped).

Rules, applied in this order; the first that applies is the reason reported:

``skipped_dir``
    a path component is one of :data:`SKIPPED_DIRS` (or, in a plain
    directory, starts with ``.``).
``skipped_ext``
    the extension is one of :data:`SKIPPED_EXTENSIONS` (binary formats).
``generated``
    a lockfile or other generated file (:data:`GENERATED_NAMES`,
    :data:`GENERATED_SUFFIXES`): they cost the most tokens per byte of insight.
``generated`` / ``binary`` (attributes)
    ``.gitattributes`` marks the path ``linguist-generated`` (the convention
    GitHub uses to collapse generated files) or ``binary``.
``symlink`` / ``submodule``
    not file content.
``bad_path``
    the path is not UTF-8 or contains control characters (it could not be a
    one-line source label).
``too_large``
    larger than the per-file limit.
``empty``
    zero bytes: nothing to say.
``binary``
    a NUL byte in the first 8 KiB.
``not_utf8``
    not valid UTF-8 text.
``lfs_pointer``
    a Git LFS pointer, not the file it stands for.
``secret``
    the text looks like it contains a credential (see ``git_hydrate.secrets``);
    taken anyway with ``--allow-secrets`` / ``hydrate.allowSecrets``.
``unreadable``
    the file could not be read from disk (permissions, vanished meanwhile).
``total_budget``
    attaching it would exceed the total limit (files are taken in path order;
    a later, smaller file may still fit).
``duplicate``
    the same content is already attached under another path (a task holds one
    link per body); ``same_as`` names it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import stat
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from .errors import CorruptData, ValidationError

if TYPE_CHECKING:
    from .store import Repository

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "GENERATED_NAMES",
    "GENERATED_SUFFIXES",
    "REASONS",
    "SKIPPED_DIRS",
    "SKIPPED_EXTENSIONS",
    "FileEntry",
    "Pathspec",
    "Sha256Cache",
    "Skipped",
    "attribute_rules",
    "classify",
    "list_directory",
    "list_tree",
    "list_worktree",
    "path_rule",
]

DEFAULT_MAX_FILE_BYTES: Final = 262144
DEFAULT_MAX_TOTAL_BYTES: Final = 10485760
#: How much of a file the NUL-byte sniff looks at (what git's own binary check uses).
SNIFF_BYTES: Final = 8192

#: Directory names never descended into (the seed's list).
SKIPPED_DIRS: Final = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".nox",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "dist",
        "build",
        ".eggs",
        ".cleveragents",
    }
)

#: Extensions of binary formats, skipped without reading (the seed's list).
SKIPPED_EXTENSIONS: Final = frozenset(
    {
        ".pyc",
        ".pyo",
        ".so",
        ".o",
        ".a",
        ".dll",
        ".exe",
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".pdf",
        ".zip",
        ".tar",
        ".gz",
        ".bz2",
        ".xz",
        ".whl",
        ".egg",
        ".db",
        ".sqlite",
        ".sqlite3",
    }
)

#: File names of lockfiles and similar machine-written files.
GENERATED_NAMES: Final = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lockb",
        "poetry.lock",
        "Pipfile.lock",
        "pdm.lock",
        "uv.lock",
        "Cargo.lock",
        "Gemfile.lock",
        "composer.lock",
        "go.sum",
        "flake.lock",
        "mix.lock",
        "pubspec.lock",
        "Podfile.lock",
        "packages.lock.json",
        "gradle.lockfile",
    }
)

#: Name endings of minified bundles and source maps.
GENERATED_SUFFIXES: Final = (".min.js", ".min.css", ".js.map", ".css.map")

#: Every reason a file can be left out, in the order the rules are applied.
REASONS: Final = (
    "skipped_dir",
    "skipped_ext",
    "generated",
    "symlink",
    "submodule",
    "bad_path",
    "too_large",
    "empty",
    "binary",
    "not_utf8",
    "lfs_pointer",
    "secret",
    "unreadable",
    "total_budget",
    "duplicate",
)

_LFS_POINTER: Final = b"version https://git-lfs.github.com/spec/v1\n"
_MODE_SYMLINK: Final = 0o120000
_MODE_GITLINK: Final = 0o160000


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One path of a file set.

    ``oid`` is the blob id when the file set comes from git objects (a
    committed tree, or an unmodified tracked file of the work tree); ``None``
    means the content must be read from ``location`` on disk.
    """

    path: str
    size: int
    kind: str = "file"  # "file", "symlink" or "submodule"
    oid: str | None = None
    location: str | None = None
    raw_path: bytes = b""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path that was not attached, and why."""

    path: str
    reason: str
    bytes: int
    same_as: str = ""

    def as_dict(self) -> dict[str, object]:
        """The JSON shape ``{path, reason, bytes}`` (plus ``same_as`` for duplicates)."""
        # A path that is not UTF-8 is shown with \xNN escapes (JSON cannot carry raw bytes).
        path = self.path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        data: dict[str, object] = {"path": path, "reason": self.reason, "bytes": self.bytes}
        if self.same_as:
            data["same_as"] = self.same_as
        return data


# -- pathspecs ------------------------------------------------------------------


class Pathspec:
    """A subset of git's pathspec syntax, matched against repository-relative paths.

    * ``dir`` or ``dir/`` — everything below ``dir``; ``file`` — that file;
      ``.`` or ``:/`` — everything;
    * a pattern with ``*``, ``?`` or ``[`` — a glob on the whole path where
      ``*`` also crosses ``/`` (git's default), e.g. ``*.py``, ``src/*/test_*``;
    * ``:!spec``, ``:^spec`` or ``:(exclude)spec`` — leave these out.

    No pathspec, or only exclusions, means every file. The same matcher decides
    both which files are taken and which earlier links a re-hydration may
    remove, so the two always agree.
    """

    def __init__(self, specs: Iterable[str] = ()) -> None:
        self.specs = tuple(specs)
        self._include: list[tuple[str, bool]] = []
        self._exclude: list[tuple[str, bool]] = []
        for raw in self.specs:
            if not isinstance(raw, str):
                raise ValidationError(f"pathspec must be text, not {type(raw).__name__}")
            spec, exclude = self._parse(raw)
            target = self._exclude if exclude else self._include
            target.append((spec, any(ch in spec for ch in "*?[")))

    @staticmethod
    def _parse(raw: str) -> tuple[str, bool]:
        spec, exclude = raw, False
        if spec.startswith((":!", ":^")):
            spec, exclude = spec[2:], True
        elif spec.startswith(":(exclude)"):
            spec, exclude = spec[len(":(exclude)") :], True
        elif spec.startswith(":/"):
            spec = spec[2:]
        elif spec.startswith(":("):
            raise ValidationError(
                f"unsupported pathspec magic in {raw!r}: use a path, a glob, or :!exclude"
            )
        if spec.startswith(":/"):
            spec = spec[2:]
        parts: list[str] = []
        for part in spec.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ValidationError(f"pathspec {raw!r} leaves the repository")
                parts.pop()
            else:
                parts.append(part)
        return "/".join(parts), exclude

    @staticmethod
    def _hit(path: str, spec: str, glob: bool) -> bool:
        if not spec:
            return True
        if path == spec or path.startswith(spec + "/"):
            return True
        return glob and (fnmatch.fnmatchcase(path, spec) or fnmatch.fnmatchcase(path, spec + "/*"))

    def matches(self, path: str) -> bool:
        """Whether ``path`` (repository-relative, ``/``-separated) is selected."""
        if self._include and not any(self._hit(path, s, g) for s, g in self._include):
            return False
        return not any(self._hit(path, s, g) for s, g in self._exclude)

    def __bool__(self) -> bool:
        return bool(self.specs)


# -- enumerating ----------------------------------------------------------------


def _decode_path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def list_tree(git: Callable[[list[str]], bytes], tree: str) -> list[FileEntry]:
    """Every blob and submodule below ``tree`` with its id and size, in git's path order.

    Args:
        git: Runs ``git`` with the given arguments and returns its stdout.
        tree: A tree id (or anything ``git ls-tree`` accepts).
    """
    out = git(["ls-tree", "-r", "-z", "-l", "--full-tree", tree])
    entries: list[FileEntry] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) != 4:
            raise CorruptData(f"unexpected git ls-tree output: {record[:80]!r}")
        mode = int(fields[0], 8)
        size = int(fields[3]) if fields[3] != b"-" else 0
        kind = (
            "submodule"
            if mode == _MODE_GITLINK
            else "symlink"
            if mode == _MODE_SYMLINK
            else "file"
        )
        entries.append(
            FileEntry(
                path=_decode_path(raw_path),
                size=size,
                kind=kind,
                oid=fields[2].decode("ascii"),
                raw_path=raw_path,
            )
        )
    return entries


def list_worktree(listing: bytes, top: str, *, modified: Iterable[bytes] = ()) -> list[FileEntry]:
    """The work tree as ``git ls-files --cached --others --exclude-standard`` sees it.

    Tracked files that git reports unmodified carry their index blob id (so
    their content is known without reading them); untracked and modified
    files are read from disk. Tracked files missing from the disk are left
    out (they are gone from the work tree).

    Args:
        listing: The output of ``git ls-files -z [-s] --cached --others
            --exclude-standard`` (with ``-s``, tracked entries carry their
            index blob id).
        top: The directory the listed paths are relative to.
        modified: Paths ``git diff-files`` reports as changed.
    """
    out = listing
    changed = set(modified)
    index_oid: dict[bytes, str] = {}
    order: list[bytes] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, tab, raw_path = record.partition(b"\t")
        if tab:  # tracked: "<mode> <oid> <stage>\t<path>"
            fields = meta.split()
            if raw_path not in index_oid:
                order.append(raw_path)
            # A conflicted path has several stages; the work tree holds the truth.
            index_oid[raw_path] = (
                fields[1].decode("ascii")
                if fields[2] == b"0" and raw_path not in changed and fields[0] != b"160000"
                else ""
            )
        else:  # untracked: just the path
            if record not in index_oid:
                order.append(record)
                index_oid[record] = ""
    entries: list[FileEntry] = []
    for raw_path in sorted(order):
        location = os.path.join(os.fsencode(top), raw_path)
        try:
            info = os.lstat(location)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if stat.S_ISLNK(info.st_mode):
            kind = "symlink"
        elif stat.S_ISDIR(info.st_mode):
            kind = "submodule"
        elif stat.S_ISREG(info.st_mode):
            kind = "file"
        else:
            continue
        entries.append(
            FileEntry(
                path=_decode_path(raw_path),
                size=info.st_size if kind == "file" else 0,
                kind=kind,
                oid=index_oid[raw_path] or None,
                location=os.fsdecode(location),
                raw_path=raw_path,
            )
        )
    return entries


def list_directory(root: str) -> tuple[list[FileEntry], list[Skipped]]:
    """The files below ``root`` by a directory walk, plus the directories not entered.

    Hidden directories (``.name``) and :data:`SKIPPED_DIRS` are not descended
    into; each is reported once, as ``dir/`` with reason ``skipped_dir``.
    Symbolic links are reported, never followed.
    """
    if not os.path.isdir(root):
        raise ValidationError(f"{root} is not a directory")
    entries: list[FileEntry] = []
    skipped: list[Skipped] = []
    base = os.fsencode(os.path.abspath(root))

    def walk(directory: bytes, rel: bytes) -> None:
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            if not rel:
                raise ValidationError(
                    f"cannot read {os.fsdecode(directory)}: {exc.strerror}"
                ) from None
            skipped.append(Skipped(_decode_path(rel) + "/", "unreadable", 0))
            return
        for child in children:
            child_rel = rel + child.name if not rel else rel + b"/" + child.name
            name = os.fsdecode(child.name)
            if child.is_symlink():
                entries.append(
                    FileEntry(_decode_path(child_rel), 0, "symlink", None, None, child_rel)
                )
            elif child.is_dir():
                if name.startswith(".") or name in SKIPPED_DIRS:
                    skipped.append(Skipped(_decode_path(child_rel) + "/", "skipped_dir", 0))
                else:
                    walk(child.path, child_rel)
            elif child.is_file():
                size = child.stat().st_size
                entries.append(
                    FileEntry(
                        _decode_path(child_rel),
                        size,
                        "file",
                        None,
                        os.fsdecode(child.path),
                        child_rel,
                    )
                )

    walk(base, b"")
    entries.sort(key=lambda e: e.raw_path)
    return entries, skipped


# -- rules ------------------------------------------------------------------------


def path_rule(entry: FileEntry, max_file_bytes: int) -> str | None:
    """The reason to skip ``entry`` judged from its path, kind and size alone."""
    path = entry.path
    parts = path.split("/")
    if any(part in SKIPPED_DIRS for part in parts[:-1]):
        return "skipped_dir"
    name = parts[-1]
    lower = name.lower()
    if os.path.splitext(lower)[1] in SKIPPED_EXTENSIONS:
        return "skipped_ext"
    if name in GENERATED_NAMES or lower.endswith(GENERATED_SUFFIXES):
        return "generated"
    if entry.kind != "file":
        return entry.kind
    if not path.isprintable():  # also catches undecodable bytes (surrogates)
        return "bad_path"
    if entry.size > max_file_bytes:
        return "too_large"
    if entry.size == 0:
        return "empty"
    return None


def attribute_rules(
    git: Callable[[list[str], bytes], bytes | None],
    entries: Iterable[FileEntry],
    *,
    tree: str | None = None,
) -> dict[str, str]:
    """Skip reasons from ``.gitattributes``: ``{path: "generated" | "binary"}``.

    Attributes are read as of ``tree`` when git can (``check-attr --source``,
    git >= 2.40), else from the index for a commit, or from the work tree.

    Args:
        git: Runs ``git args`` with ``input`` on stdin; stdout, or None on failure.
    """
    paths = [e for e in entries if e.kind == "file"]
    if not paths:
        return {}
    stdin = b"".join(e.raw_path + b"\0" for e in paths)
    base = ["check-attr", "-z", "--stdin"]
    names = ["linguist-generated", "binary"]
    out = None
    if tree is not None:
        out = git([*base, f"--source={tree}", *names], stdin)
        if out is None:
            out = git([*base, "--cached", *names], stdin)
    else:
        out = git([*base, *names], stdin)
    if not out:
        return {}
    fields = out.split(b"\0")
    result: dict[str, str] = {}
    for i in range(0, len(fields) - 2, 3):
        raw, attr, value = fields[i], fields[i + 1], fields[i + 2]
        path = _decode_path(raw)
        if attr == b"linguist-generated" and value in (b"set", b"true"):
            result[path] = "generated"
        elif attr == b"binary" and value == b"set" and path not in result:
            result[path] = "binary"
    return result


def classify(data: bytes) -> str:
    """``"text"``, or the reason the content cannot be context."""
    if not data:
        return "empty"
    if b"\0" in data[:SNIFF_BYTES]:
        return "binary"
    if data.startswith(_LFS_POINTER):
        return "lfs_pointer"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8"
    if b"\0" in data:
        # Valid UTF-8 with a late NUL: still not text a prompt can carry.
        return "binary"
    from .secrets import scan

    if scan(data.decode("utf-8"), limit=1):
        return "secret"
    return "text"


# -- reading blobs ------------------------------------------------------------------


def read_blobs(
    argv: list[str], cwd: str | None, env: dict[str, str] | None, oids: list[str]
) -> Iterator[tuple[str, bytes]]:
    """Stream the contents of ``oids`` through one ``git cat-file --batch`` process.

    One process for all blobs is several times faster than reading them one
    by one through dulwich (see benchmarks/bench_add_tree.py).

    Args:
        argv: The ``git`` command prefix (``["git", "--git-dir", ...]``).
    """
    if not oids:
        return
    proc = subprocess.Popen(
        [*argv, "cat-file", "--batch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        try:
            stdin.write(b"".join(oid.encode("ascii") + b"\n" for oid in oids))
            stdin.close()
        except OSError:  # the reader stopped early
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = proc.stdout
    try:
        for oid in oids:
            header = out.readline()
            fields = header.split()
            if len(fields) != 3 or fields[1] != b"blob":
                raise CorruptData(f"blob {oid} is missing or not a blob ({header.strip()!r})")
            size = int(fields[2])
            data = out.read(size)
            out.read(1)  # the newline after each object
            if len(data) != size:
                raise CorruptData(f"blob {oid} was cut short by git cat-file")
            yield oid, data
    finally:
        out.close()
        writer.join()
        proc.wait()


def blob_oid(data: bytes, object_format: str) -> str:
    """The git blob id of ``data`` (``object_format`` is ``sha1`` or ``sha256``)."""
    h = hashlib.new(object_format)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


# -- the sha256 cache -------------------------------------------------------------


#: One cache line; anything else in the file is ignored.
_CACHE_LINE: Final = re.compile(
    rb"^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{64}) "
    rb"(text|empty|binary|not_utf8|lfs_pointer|secret)$",
    re.MULTILINE,
)


class Sha256Cache:
    """A derived, disposable map from blob id to ``(sha256, classification)``.

    Stored as ``<common dir>/hydrate/sha256-cache``: a header line, then one
    ``<oid> <sha256> <class>`` line per blob, appended as blobs are first
    read. A blob's content never changes, so an entry never goes stale; a
    missing, foreign or damaged file is simply rebuilt, and lines that do not
    parse are ignored. Deleting the file is always safe.
    """

    #: The version follows the classification rules (secrets): older files are rebuilt.
    HEADER: Final = b"# git-hydrate sha256-cache 6\n"

    def __init__(self, path: str, repo: Repository | None = None) -> None:
        self.path = path
        self.repo = repo  # shares what it creates as core.sharedRepository asks
        self._entries: dict[str, tuple[str, str]] | None = None
        self._new: dict[str, tuple[str, str]] = {}
        self._rewrite = False

    def _load(self) -> dict[str, tuple[str, str]]:
        if self._entries is not None:
            return self._entries
        entries: dict[str, tuple[str, str]] = {}
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        if not data.startswith(self.HEADER):
            self._rewrite = True
        else:
            for oid, digest, cls in _CACHE_LINE.findall(data, len(self.HEADER)):
                entries[oid.decode("ascii")] = (digest.decode("ascii"), cls.decode("ascii"))
        self._entries = entries
        return entries

    def get(self, oid: str) -> tuple[str, str] | None:
        """``(sha256, class)`` of the blob ``oid`` if it was seen before."""
        return self._load().get(oid)

    def put(self, oid: str, digest: str, cls: str) -> None:
        """Remember a blob (written by :meth:`save`)."""
        entries = self._load()
        if oid not in entries:
            entries[oid] = (digest, cls)
            self._new[oid] = (digest, cls)

    def save(self) -> None:
        """Append the new entries (or rewrite a damaged file). Failures are ignored:
        the cache only saves time."""
        if not self._new and not self._rewrite:
            return
        lines = b"".join(
            b"%s %s %s\n" % (oid.encode(), d.encode(), c.encode())
            for oid, (d, c) in (self._entries if self._rewrite else self._new).items()  # type: ignore[union-attr]
        )
        try:
            if self.repo is not None:
                self.repo.make_dirs(os.path.dirname(self.path))
            else:
                os.makedirs(os.path.dirname(self.path), exist_ok=True)
            if self._rewrite:
                tmp = f"{self.path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as fh:
                    fh.write(self.HEADER + lines)
                if self.repo is not None:
                    self.repo.share(tmp)
                os.replace(tmp, self.path)
            else:
                # One O_APPEND write per run: concurrent runs interleave whole runs.
                created = not os.path.exists(self.path)
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, lines)
                finally:
                    os.close(fd)
                if created and self.repo is not None:
                    self.repo.share(self.path)
        except OSError:
            return
        self._new.clear()
        self._rewrite = False
