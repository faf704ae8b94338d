"""A source revision's history, as the ranking reads it: changed paths and the
subject line of each commit.

Only the revision and its ancestors are read (``git log REV``), so nothing
after the state a task is hydrated from can leak into its ranking. The
history of a commit never changes: it is cached by commit id in a derived,
disposable file under ``<common dir>/hydrate/history/`` (deleting it is
always safe), so hydrating from the same commit again reads no log. A
shallow clone's history is cut short: its file is also named by the cut, and
the commits at the cut (those its ``shallow`` file lists) are left out: git
shows each as a root commit adding every file it holds, changes that never
happened together (every file would "co-change" with every other).

The lines many commit messages repeat in their bodies are kept too: a pull request
template's headings (``### Goals :soccer:``) say nothing of any one change, and a
task written from the template holds them (:func:`without_templates`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import msgspec

from ..store import Repository, open_regular

if TYPE_CHECKING:
    from ..store.process import Background

__all__ = [
    "MAX_COMMITS",
    "SWEEP",
    "Begun",
    "History",
    "begin_history",
    "read_history",
    "without_templates",
]

#: How far back the history reaches (non-merge commits). 2,000 rank as 5,000 did
#: (co-change halves every 100 commits, past commits like the task every 500: the
#: replay of 92 repositories, RESULTS.md) for 0.45 of ``git log``'s CPU time.
MAX_COMMITS: Final = 2000
#: Commits touching more files than this say nothing about coupling (sweeps).
SWEEP: Final = 30
#: A line of the commits' bodies that at least this many of them repeat, and at
#: least this share of those read, is a template's (a pull request template's
#: headings, a bot's boilerplate): Alamofire's ``### Goals :soccer:``, 93 of 1,519.
TEMPLATE_COMMITS: Final = 10
TEMPLATE_SHARE: Final = 0.01
#: Lines that say who (``Co-authored-by: A <a@b>``, an address): ranking drops
#: them already, a template or not.
_WHO: Final = re.compile(r"[A-Za-z][A-Za-z-]*-by:|.*\S@\S")
#: The cache file's layout; another number is rebuilt (3: the commits at a
#: shallow clone's cut are left out; 4: the template lines; 5: 2,000 commits, not
#: 5,000: a file of 5,000 would rank a commit otherwise than a fresh read).
_VERSION: Final = 5
#: History files kept (the newest by use); older ones are removed.
_KEEP: Final = 16


class History(msgspec.Struct):
    """The commits read (newest first), the paths each one changed and its subject;
    the lines their bodies repeat (:data:`TEMPLATE_COMMITS`), sorted."""

    commits: list[str]
    paths: list[list[str]]
    subjects: list[str] = []
    templates: list[str] = []


class _Stored(msgspec.Struct, array_like=True):
    """The cache file: paths as bytes, since a path need not be UTF-8."""

    version: int
    commits: list[str]
    paths: list[list[bytes]]
    subjects: list[str] = []
    templates: list[str] = []


def _parse(raw: bytes, cut: frozenset[str] = frozenset()) -> History:
    """``git log``'s output as a history, without sweeps and without the commits of
    ``cut`` (a shallow clone's boundary: their parents are not here); the lines
    of every commit's body counted, the template's kept.

    Read a commit at a time from the bytes (each of its three parts ends at a NUL,
    which no message holds: git cuts a message at one), never the whole output
    decoded and split at once: on python/mypy's 5,000 commits that held three
    copies of its 2.8 MB."""
    commits: list[str] = []
    paths: list[list[str]] = []
    subjects: list[str] = []
    repeated: Counter[bytes] = Counter()
    read = 0
    find = raw.find
    at = find(b"\0")
    while at != -1:
        head_end = find(b"\0", at + 1)
        body_end = find(b"\0", head_end + 1) if head_end != -1 else -1
        if body_end == -1:
            break  # (a record cut short: git's output ends with whole ones)
        head, at = raw[at + 1 : head_end], find(b"\0", body_end + 1)
        read += 1
        repeated.update({line.strip() for line in raw[head_end + 1 : body_end].split(b"\n")})
        names = raw[body_end + 1 : len(raw) if at == -1 else at]
        changed = [line for line in names.decode("utf-8", "surrogateescape").split("\n") if line]
        if len(changed) > SWEEP:
            continue
        commit, _, subject = head.decode("utf-8", "surrogateescape").partition(" ")
        commit = commit.strip()
        if commit in cut:
            continue
        commits.append(commit)
        paths.append(changed)
        subjects.append(subject.strip())
    return History(commits, paths, subjects, _templates(repeated, read))


def _templates(repeated: Counter[bytes], read: int) -> list[str]:
    """The lines at least :data:`TEMPLATE_COMMITS` and :data:`TEMPLATE_SHARE` of the
    ``read`` commits' bodies repeat (who-lines aside), sorted."""
    least = max(TEMPLATE_COMMITS, TEMPLATE_SHARE * read)
    found = (
        line.decode("utf-8", "surrogateescape")
        for line, n in repeated.items()
        if n >= least and line
    )
    return sorted(line for line in found if not _WHO.match(line))


def without_templates(text: str, templates: Sequence[str]) -> str:
    """``text`` without the lines that are a template's (:attr:`History.templates`);
    all of it if nothing else is left (a ticket whose one line a template holds)."""
    if not templates:
        return text
    known = set(templates)
    kept = [line for line in text.split("\n") if line.strip() not in known]
    return "\n".join(kept) if any(line.strip() for line in kept) else text


class Begun:
    """``git log`` of a commit begun before it is needed (:func:`begin_history`):
    git runs while add-tree reads the blobs."""

    def __init__(self, commit: str, running: Background) -> None:
        self.commit, self._running = commit, running

    def output(self) -> bytes | None:
        """What git wrote, once it has exited; ``None`` if it failed (asked again
        then, as if nothing had begun)."""
        return self._running.output()

    def close(self) -> None:
        """Stop git if it still runs, and drop its output."""
        self._running.close()


def begin_history(repo: Repository, commit: str | None) -> Begun | None:
    """``git log`` of ``commit`` begun now, unless its history is cached (or git
    cannot be started: it is read when needed, as before)."""
    if commit is None or os.path.exists(_cached(repo, commit)):
        return None
    running = repo.begin_changed_paths(commit, MAX_COMMITS)
    return None if running is None else Begun(commit, running)


def _cached(repo: Repository, commit: str) -> str:
    """The cache file of ``commit``'s history; in a shallow clone (or one with
    grafts), named by where its history is cut too: deepened, the same commit has
    more history, read anew (a clone at another depth ranked differently)."""
    cut = _cut(repo)
    name = commit if cut is None else f"{commit}-{cut}"
    return os.path.join(repo.common_dir, "hydrate", "history", name)


#: The files that cut or rewrite a history ``git log`` reads.
_CUTS: Final = ("shallow", os.path.join("info", "grafts"))


def _cut(repo: Repository) -> str | None:
    """A digest of the files that cut this clone's history (``None``: none)."""
    found = b""
    for name in _CUTS:
        try:
            with open(os.path.join(repo.common_dir, name), "rb") as fh:
                found += name.encode() + b"\0" + fh.read() + b"\0"
        except OSError:
            continue
    return hashlib.sha256(found).hexdigest()[:16] if found else None


def read_history(repo: Repository, commit: str, begun: Begun | None = None) -> History:
    """The history of ``commit`` (a full id) and its ancestors, from the cache when
    it has been read before (``begun``: its ``git log`` started earlier)."""
    try:
        return _read_history(repo, commit, begun)
    finally:
        if begun is not None:
            begun.close()  # (not needed: the cache had it, or another commit)


def _read_history(repo: Repository, commit: str, begun: Begun | None) -> History:
    path = _cached(repo, commit)
    directory = os.path.dirname(path)
    try:
        with open_regular(path) as fh:
            cached = msgspec.msgpack.decode(fh.read(), type=_Stored)
        if cached.version == _VERSION:
            os.utime(path)  # most recently used
            return History(
                cached.commits,
                [[p.decode("utf-8", "surrogateescape") for p in ps] for ps in cached.paths],
                cached.subjects,
                cached.templates,
            )
    except (OSError, msgspec.DecodeError):
        pass
    raw = begun.output() if begun is not None and begun.commit == commit else None
    raw = raw if raw is not None else repo.changed_paths(commit, MAX_COMMITS)
    history = _parse(raw, repo.shallow_commits())
    _save(repo, directory, path, history)
    return history


def _save(repo: Repository, directory: str, path: str, history: History) -> None:
    """Write the cache file; failing to is not an error (it only saves time)."""
    stored = _Stored(
        _VERSION,
        history.commits,
        [[p.encode("utf-8", "surrogateescape") for p in ps] for ps in history.paths],
        history.subjects,
        history.templates,
    )
    try:
        repo.replace_file(path, [msgspec.msgpack.encode(stored)])
        entries = sorted(
            (os.path.join(directory, name) for name in os.listdir(directory)),
            key=os.path.getmtime,
        )
        for old in entries[:-_KEEP]:
            os.unlink(old)
    except OSError:
        return
