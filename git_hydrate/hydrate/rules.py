"""The skip rules of hydration: which files and bodies may become context, and why not.

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
    Also by content, after the secret scan: a file whose leading comments say a
    tool wrote it and it is not to be edited (:mod:`.generated`), unless the task
    names it (add-tree reads it to know: the sha256 cache keeps the verdict).
``generated`` / ``binary`` / ``vendored`` (attributes)
    ``.gitattributes`` marks the path ``linguist-generated`` (the convention
    GitHub uses to collapse generated files), ``binary`` (or ``-diff``, which git
    diffs as binary: teams mark lockfiles and data so), or ``linguist-vendored``
    (third-party code a team keeps in its tree; taken anyway when the task names
    the file: a ticket may be about that copy). ``linguist-documentation`` is not
    a reason: it keeps a language's statistics apart, and a worker needs the
    documentation a change must update.
``symlink`` / ``submodule`` / ``special``
    not file content (``special``: a FIFO, socket or device node, never opened).
``beyond_symlink``
    a work-tree (or directory) path one of whose folders is a symbolic link
    (``conf/passwd`` with ``conf -> /etc``): what is there is not the
    repository's file (git reports it deleted); never read through the link.
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
``own_output``
    a file git-hydrate wrote: a prompt (``prompt -o``, a hook artefact, an
    agent bridge's prompt file), a packet or an artefact manifest, recognised
    by its content (:func:`is_own_output`: the prompt's title line and exact
    Output contract, the packet's trust line, the manifest's generator) whatever
    its name, and by name in the pre-push artefacts' layout
    (``<ID>/<ID>.prompt.md``, ``<ID>/<ID>.packet.json``, ``<ID>/manifest.json``).
    A prompt that fed itself back into its own task would grow with every run.
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
``missing``
    a file in play or a test the task names is not in the file set read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Final

import msgspec

from ..pack.render import OUTPUT_CONTRACT
from ..pack.seed import TRUST_LINE
from ..results import SkippedDict
from ..store import Repository
from ..validate import printable
from .generated import says_generated

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "GENERATED_NAMES",
    "GENERATED_SUFFIXES",
    "REASONS",
    "SKIPPED_DIRS",
    "SKIPPED_EXTENSIONS",
    "FileEntry",
    "Skipped",
    "attribute_answer",
    "attribute_rules",
    "classify",
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
        "bun.lock",
        "deno.lock",
        "pylock.toml",
        "pixi.lock",
        "conda-lock.yml",
        "renv.lock",
        "Package.resolved",
        "Cartfile.resolved",
        "Gopkg.lock",
        "MODULE.bazel.lock",
        ".terraform.lock.hcl",
        "stack.yaml.lock",
        "cabal.project.freeze",
        "shard.lock",
        "paket.lock",
        "gems.locked",
        ".pnp.cjs",
        ".pnp.loader.mjs",
    }
)

#: Name endings of minified bundles and source maps, and of code a tool writes and
#: marks so by name (lower case): protoc's and gRPC's, Dart's build_runner's
#: (json_serializable, freezed, mockito), Visual Studio's and Entity Framework's
#: designer files, OpenAPI and GraphQL clients. The ticket's fix is in their source
#: (the ``.proto``, the annotated class), which the tool is run on again.
GENERATED_SUFFIXES: Final = (
    ".min.js",
    ".min.mjs",
    ".min.cjs",
    ".min.css",
    ".js.map",
    ".mjs.map",
    ".cjs.map",
    ".css.map",
    ".pb.go",
    "_pb2.py",
    "_pb2.pyi",
    "_pb2_grpc.py",
    ".pb.cc",
    ".pb.h",
    ".pb.swift",
    "_grpc_web_pb.js",
    ".g.dart",
    ".freezed.dart",
    ".mocks.dart",
    ".designer.cs",
    ".gen.ts",
    ".generated.ts",
)

#: Every reason a file can be left out, in the order the rules are applied.
REASONS: Final = (
    "skipped_dir",
    "skipped_ext",
    "generated",
    "vendored",
    "symlink",
    "submodule",
    "special",
    "beyond_symlink",
    "sparse",
    "bad_path",
    "too_large",
    "empty",
    "binary",
    "not_utf8",
    "lfs_pointer",
    "own_output",
    "secret",
    "unreadable",
    "total_budget",
    "duplicate",
    "missing",
)

#: The first line of a Git LFS pointer file: the current spec's, and the one of the
#: pointers git-lfs wrote before 1.0 (still in old histories), which it reads too.
_LFS_POINTER: Final = (
    b"version https://git-lfs.github.com/spec/v1\n",
    b"version https://hawser.github.com/spec/v1\n",
)
#: What every prompt git-hydrate renders ends with, whatever its budget or format.
_OWN_CONTRACT: Final = OUTPUT_CONTRACT.encode("utf-8")
#: The packet's in-band reminder, as its JSON (compact or indented) holds it.
_OWN_TRUST: Final = TRUST_LINE.encode("utf-8")
#: The pre-push artefacts' manifest.
_OWN_GENERATOR: Final = b'"generator": "git-hydrate '
_MODE_SYMLINK: Final = 0o120000
_MODE_GITLINK: Final = 0o160000


class FileEntry(msgspec.Struct, frozen=True, gc=False):
    """One path of a file set.

    ``oid`` is the blob id when the file set comes from git objects (a
    committed tree, or an unmodified tracked file of the work tree); ``None``
    means the content must be read from ``location`` on disk.
    """

    path: str
    size: int
    # "file", "symlink", "submodule", "special", "beyond_symlink" or "sparse"
    kind: str = "file"
    oid: str | None = None
    location: str | None = None

    @property
    def raw_path(self) -> bytes:
        """The path as git or the file system gave it: :func:`decode_path` undone
        (exactly: its undecodable bytes are kept as surrogates), made when asked
        rather than held beside the path (30,000 files: ~2 MiB, issue 33)."""
        return self.path.encode("utf-8", "surrogateescape")


class Skipped(msgspec.Struct, frozen=True, gc=False):
    """A path that was not attached, and why."""

    path: str
    reason: str
    bytes: int
    same_as: str = ""

    def as_dict(self) -> SkippedDict:
        """The JSON shape ``{path, reason, bytes}`` (plus ``same_as`` for duplicates)."""
        # A path that is not UTF-8 is shown with \xNN escapes (JSON cannot carry raw bytes).
        path = self.path
        if not path.isascii():
            path = path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        data: SkippedDict = {"path": path, "reason": self.reason, "bytes": self.bytes}
        if self.same_as:
            data["same_as"] = self.same_as
        return data


def path_rule(entry: FileEntry, max_file_bytes: int, named: bool = False) -> str | None:
    """The reason to skip ``entry`` judged from its path, kind and size alone;
    ``named``: the task names the file, so neither its folder (``skipped_dir``) nor
    a generated file's name leaves it out (a ticket about that file gets it)."""
    path = entry.path
    folder, _, name = path.rpartition("/")
    if folder and not named and _skipped_folder(folder):
        return "skipped_dir"
    lower = name.lower()
    if _extension(lower) in SKIPPED_EXTENSIONS:
        return "skipped_ext"
    if not named and (name in GENERATED_NAMES or lower.endswith(GENERATED_SUFFIXES)):
        return "generated"
    if entry.kind != "file":
        return entry.kind
    if name.endswith(_OWN_OUTPUT_SUFFIXES) and own_output_name(path):
        return "own_output"
    if not printable(path):  # also catches undecodable bytes (surrogates)
        return "bad_path"
    if entry.size > max_file_bytes:
        return "too_large"
    if entry.size == 0:
        return "empty"
    return None


def _extension(name: str) -> str:
    """``os.path.splitext(name)[1]`` of a name without ``/``, without its general
    path handling (30,000 names at a time): from the last dot, unless only dots
    come before it."""
    dot = name.rfind(".")
    if dot <= 0 or (name[0] == "." and not name[:dot].lstrip(".")):
        return ""
    return name[dot:]


#: What every name :func:`own_output_name` accepts ends with (a cheap test first).
_OWN_OUTPUT_SUFFIXES: Final = (".prompt.md", ".packet.json")


@functools.lru_cache(maxsize=4096)
def _skipped_folder(folder: str) -> bool:
    """Whether a folder path has a part in :data:`SKIPPED_DIRS` (a tree has far
    fewer folders than files: each is judged once)."""
    return not SKIPPED_DIRS.isdisjoint(folder.split("/"))


def decode_path(raw: bytes) -> str:
    """A path from git or the file system as text (undecodable bytes kept as surrogates)."""
    return raw.decode("utf-8", "surrogateescape")


def attribute_rules(
    repo: Repository, entries: Iterable[FileEntry], *, tree: str | None = None
) -> dict[str, str]:
    """Skip reasons from ``.gitattributes``: ``{path: "generated" | "binary" |
    "vendored"}`` (one reason a path, in that order; ``-attr`` and ``attr=false``
    unset a mark, as git reads them).

    Attributes are read as of ``tree`` when git can (``check-attr --source``,
    git >= 2.40), else from the index for a commit, or from the work tree.
    """
    return attribute_answer(repo, entries, tree=tree) or {}


def attribute_answer(
    repo: Repository, entries: Iterable[FileEntry], *, tree: str | None = None
) -> dict[str, str] | None:
    """:func:`attribute_rules`, or ``None`` when git could not answer."""
    paths = [e for e in entries if e.kind == "file"]
    if not paths:
        return {}
    # (one encoding of every path at once: each one's raw bytes, as ``raw_path`` gives)
    stdin = "\0".join([e.path for e in paths]).encode("utf-8", "surrogateescape") + b"\0"
    names = ["linguist-generated", "binary", "diff", "linguist-vendored"]
    out = repo.check_attr(names, stdin, tree)
    if out is None:
        return None
    # (every record is path, name, value: without a value "set" or "true" anywhere,
    # as in a tree without attributes, nothing is marked, and nothing is decoded)
    if not out or (b"\0set\0" not in out and b"\0true\0" not in out and b"\0unset\0" not in out):
        return {}
    fields = out.split(b"\0")
    result: dict[str, str] = {}
    # (most records say "unspecified": only a record that marks is decoded)
    for i in range(0, len(fields) - 2, 3):
        raw, attr, value = fields[i], fields[i + 1], fields[i + 2]
        if value not in _MARKING:
            continue
        path = decode_path(raw)
        if attr == b"linguist-generated" and value in (b"set", b"true"):
            result[path] = "generated"
        elif attr == b"binary" and value == b"set" and path not in result:
            result[path] = "binary"
        elif attr == b"diff" and value == b"unset" and path not in result:
            result[path] = "binary"  # (-diff: git shows no text diff of it, as add-diff says)
        elif attr == b"linguist-vendored" and value in (b"set", b"true") and path not in result:
            result[path] = "vendored"
    return result


#: The values of a check-attr record that can mark a path.
_MARKING: Final = frozenset({b"set", b"true", b"unset"})


def is_own_output(data: bytes) -> bool:
    """Whether ``data`` is something git-hydrate wrote (see ``own_output`` above):
    a prompt (a ``# Task`` title line and the exact Output contract), a packet
    (``task_id`` and the trust line in a JSON object) or a pre-push manifest."""
    if _OWN_CONTRACT in data and (data.startswith(b"# Task ") or b"\n# Task " in data):
        return True
    if data.lstrip().startswith(b"{") and b'"task_id"' in data and _OWN_TRUST in data:
        return True
    return data.lstrip().startswith(b"{") and _OWN_GENERATOR in data and b'"task_tip"' in data


def own_output_name(path: str) -> bool:
    """Whether ``path`` is named as a pre-push artefact: ``<ID>/<ID>.prompt.md`` or
    ``<ID>/<ID>.packet.json`` (in the task's own directory; its ``manifest.json``
    is known by its content)."""
    parts = path.split("/")
    if len(parts) < 2:
        return False
    folder, name = parts[-2], parts[-1]
    return name in (f"{folder}.prompt.md", f"{folder}.packet.json")


def classify(data: bytes) -> str:
    """``"text"``, or the reason the content cannot be context."""
    if not data:
        return "empty"
    if b"\0" in data[:SNIFF_BYTES]:
        return "binary"
    if data.startswith(_LFS_POINTER):
        return "lfs_pointer"
    if is_own_output(data):
        return "own_output"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not_utf8"
    if b"\0" in data:
        # Valid UTF-8 with a late NUL: still not text a prompt can carry.
        return "binary"
    from ..secrets import scan

    if scan(text, limit=1):
        return "secret"  # (first: a file the task names is taken even if generated)
    if says_generated(text):
        return "generated"
    return "text"


def body_rule(data: bytes, label: str, max_file_bytes: int) -> str:
    """``"text"`` or the reason a generated body (a file's diff) cannot be context.

    The same rules as for files, in the same order where they apply: a label
    that cannot be one line, the size limit, then the content (:func:`classify`).
    """
    if not printable(label):
        return "bad_path"
    if len(data) > max_file_bytes:
        return "too_large"
    return classify(data)
