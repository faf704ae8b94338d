"""What ``prompt --refresh`` found the last time every run of a task was recognised.

``prompt --refresh`` takes again each add-tree run a task recorded; a revision
run whose commit, options, rules, task and links are those it recorded is
recognised without listing a file (:func:`git_hydrate.hydrate.refreshing.refresh`).
When every run of the task at one tip was recognised (or was one this clone
does not take), the same answer holds for as long as nothing it depends on
changes: the tip itself (the task, its links and its recorded runs), what each
run's revision resolves to, the settings that decide a run, this clone's record
of its own runs, and what else decides a run here (:func:`local_inputs`: the
code and the attributes files outside the tree). This memo keeps that answer,
with those inputs as they were, so that the command line's fast path
(``git_hydrate.quick``) can tell an unchanged refresh from the refs, a few
``stat`` calls and one ``git rev-parse``, and print the cached prompt.

Derived and disposable: one JSON file, ``<common dir>/hydrate/refresh-memo``,
written atomically and readable by this user only, holding the newest
:data:`MAX_TIPS` tips. A damaged or foreign file, or any input that differs,
is a miss: the full command line then refreshes as it always does. Reading it
needs only the standard library.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zlib

from .. import __version__
from ..store import open_regular, read_private
from .fingerprint import PACKAGE_DIR, code_fingerprint

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any, Final

    from ..store.base import RepositoryBase

__all__ = [
    "DECIDING_MODULES",
    "DECIDING_PACKAGES",
    "DECIDING_SETTINGS",
    "MAX_TIPS",
    "deciding_modules",
    "file_state",
    "local_inputs",
    "own_runs",
    "own_selections_path",
    "recall",
    "remember",
]

#: Bumped when what a record holds changes.
_FORMAT: Final = 1
#: A line of this clone's record of its own runs: a run's identity, and the digest
#: of what decided it (``-``: nothing to compare).
_RUN: Final = re.compile(r"([0-9a-f]{64}) ([0-9a-f]{64}|-)")
#: The packages every module of which decides what an add-tree run attaches and how
#: it is ranked (all of them, found, not listed: a module left off a hand-kept list
#: was edited without a run being taken again), and the modules beside them that do.
DECIDING_PACKAGES: Final = ("secrets", "hydrate")
DECIDING_MODULES: Final = ("chars.py", "stemming.py", "textpolicy.py", "validate.py")
#: Where the package is, whose code decides a run (a test points it elsewhere).
_CODE: str = PACKAGE_DIR
#: The settings a recorded run reads when its own options leave them open.
DECIDING_SETTINGS: Final = (
    "hydrate.maxFileBytes",
    "hydrate.maxTotalBytes",
    "hydrate.allowSecrets",
)
#: How many task tips the memo holds (the oldest is forgotten).
MAX_TIPS: Final = 256
#: git's default attributes file, under ``$XDG_CONFIG_HOME`` (``~/.config``).
_XDG_ATTRIBUTES: Final = "git" + os.sep + "attributes"
#: An attributes file up to this size is known by its contents (one read).
_HASHED: Final = 1 << 20


def own_selections_path(repo: RepositoryBase) -> str:
    """This clone's record of the add-tree runs it made itself."""
    return os.path.join(repo.common_dir, "hydrate", "own-selections")


def _memo_path(repo: RepositoryBase) -> str:
    return os.path.join(repo.common_dir, "hydrate", "refresh-memo")


def attribute_sources(repo: RepositoryBase) -> list[object]:
    """What else decides a revision's attributes than its tree: the repository's
    ``info/attributes`` and ``core.attributesFile`` (or git's default one), by their
    contents, ``core.ignoreCase`` (git then matches attribute patterns ignoring
    case), and — for a git that reads attributes from the index — the staged
    ``.gitattributes`` files."""
    configured = repo.settings.raw("core.attributesFile")
    home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    paths = [
        os.path.join(repo.common_dir, "info", "attributes"),
        os.path.expanduser(configured) if configured else os.path.join(home, _XDG_ATTRIBUTES),
    ]
    found: list[object] = []
    if repo.lacks("check-attr --source"):
        found.append(repo.staged_attributes().decode("latin-1"))
    found.extend(file_state(path) for path in paths)
    found.append([repo.settings.has("core.ignoreCase"), repo.settings.raw("core.ignoreCase")])
    return found


def file_state(path: str) -> list[object]:
    """A small file as its path, size and the CRC-32 of its contents (an edit that
    keeps its size and time is seen; zlib, not hashlib, keeps the fast path light);
    a missing one as its path alone; one over :data:`_HASHED` bytes by its size,
    times and inode."""
    try:
        with open_regular(path) as handle:
            status = os.fstat(handle.fileno())
            if status.st_size <= _HASHED:
                data = handle.read(_HASHED + 1)
                return [path, len(data), zlib.crc32(data)]
    except OSError:
        return [path]
    return [path, status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino]


def local_inputs(repo: RepositoryBase) -> list[object]:
    """What decides an add-tree run here beside what the task records: the code of
    the modules that decide it and the attributes files outside the tree
    (machine-local, so never in the shared task). JSON-able, compared whole."""
    return [code_fingerprint(deciding_modules(_CODE), _CODE), attribute_sources(repo)]


def deciding_modules(root: str = PACKAGE_DIR) -> list[str]:
    """Every module of :data:`DECIDING_PACKAGES`, then :data:`DECIDING_MODULES`."""
    names: list[str] = []
    for package in DECIDING_PACKAGES:
        try:
            found = sorted(n for n in os.listdir(os.path.join(root, package)) if n.endswith(".py"))
        except OSError:
            found = []
        names += (f"{package}/{name}" for name in found)
    return [*names, *DECIDING_MODULES]


def own_runs(repo: RepositoryBase) -> dict[str, str]:
    """This clone's own add-tree runs: each run's identity (its task and options) to
    the digest of :func:`local_inputs` at its last run."""
    data = read_private(own_selections_path(repo))  # (another user's could adopt anything)
    if data is None:
        return {}
    # (a damaged line is no run: only an identity and a digest, or -, are a record)
    lines = data.decode("ascii", "replace").splitlines()
    return {found[1]: found[2] for found in map(_RUN.fullmatch, lines) if found}


def _own_entries(repo: RepositoryBase, identities: Sequence[str]) -> list[str | None]:
    """What this clone's record says of each of ``identities`` (``None``: not its own)."""
    own = own_runs(repo)
    return [own.get(identity) for identity in identities]


def _settings(repo: RepositoryBase) -> list[list[str | None]]:
    return [repo.settings.all(key) for key in DECIDING_SETTINGS]


def _resolved(repo: RepositoryBase, rev: str) -> str | None:
    """The commit (or tree) ``rev`` names now, as a revision run pins it."""
    for kind in ("commit", "tree"):
        proc = repo.git(["rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}"], check=False)
        oid = proc.stdout.decode("ascii", "replace").strip()
        if proc.returncode == 0 and oid:
            return oid
    return None


def _read(repo: RepositoryBase) -> dict[str, Any]:
    """The memo's records by tip (empty when missing, damaged, foreign or of another
    version)."""
    raw = read_private(_memo_path(repo))  # acted on unchecked: only what this user wrote
    if raw is None:
        return {}
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # (RecursionError: nested too deep to read)
        return {}
    if (
        not isinstance(data, dict)
        or data.get("format") != _FORMAT
        or data.get("version") != __version__
        or not isinstance(data.get("tips"), dict)
    ):
        return {}
    tips: dict[str, Any] = data["tips"]
    return tips


def remember(
    repo: RepositoryBase,
    task_id: str,
    tip: str,
    pinned: Sequence[tuple[str, str]],
    identities: Sequence[str],
    outcomes: Sequence[Mapping[str, Any]],
) -> None:
    """Keep that a refresh of ``task_id`` at ``tip`` recognised every run: ``pinned``
    holds each recognised run's revision and the commit (or tree) it resolved to,
    ``identities`` each recorded run's identity in this clone's record of its own
    runs, ``outcomes`` what the refresh answered, in order (JSON-able)."""
    record = {
        "task": task_id,
        "pinned": [list(pair) for pair in pinned],
        "identities": list(identities),
        "own": _own_entries(repo, identities),
        "settings": _settings(repo),
        "local": local_inputs(repo),
        "outcomes": list(outcomes),
    }
    tips = _read(repo)
    tips.pop(tip, None)
    tips[tip] = record  # newest last
    kept = dict(list(tips.items())[-MAX_TIPS:])
    text = json.dumps({"format": _FORMAT, "version": __version__, "tips": kept})
    # Derived and disposable: failing to write it only costs the next refresh.
    with contextlib.suppress(OSError):
        repo.replace_file(_memo_path(repo), [text.encode("utf-8")], private=True)


def recall(repo: RepositoryBase, task_id: str, tip: bytes) -> list[dict[str, Any]] | None:
    """What a refresh of ``task_id`` at ``tip`` answers, when it would recognise every
    run again: the outcomes kept by :func:`remember`, if every input it depended on
    is as it was; else ``None``."""
    record = _read(repo).get(tip.decode("ascii", "replace"))
    if not isinstance(record, dict) or record.get("task") != task_id:
        return None
    try:
        if (
            record["own"] != _own_entries(repo, record["identities"])
            or record["settings"] != _settings(repo)
            or record["local"] != local_inputs(repo)
        ):
            return None
        for rev, pinned in record["pinned"]:
            if _resolved(repo, rev) != pinned:
                return None
        outcomes = record["outcomes"]
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(outcomes, list) or not all(isinstance(o, dict) for o in outcomes):
        return None
    return outcomes
