"""A source revision's history, as the ranking reads it: changed paths and the
subject line of each commit.

Only the revision and its ancestors are read (``git log REV``), so nothing
after the state a task is hydrated from can leak into its ranking. The
history of a commit never changes: it is cached by commit id in a derived,
disposable file under ``<common dir>/hydrate/history/`` (deleting it is
always safe), so hydrating from the same commit again reads no log.
"""

from __future__ import annotations

import os
from typing import Final

import msgspec

from ..store import Repository, open_regular

__all__ = ["MAX_COMMITS", "SWEEP", "History", "read_history"]

#: How far back the history reaches (non-merge commits).
MAX_COMMITS: Final = 5000
#: Commits touching more files than this say nothing about coupling (sweeps).
SWEEP: Final = 30
#: The cache file's layout; another number is rebuilt.
_VERSION: Final = 2
#: History files kept (the newest by use); older ones are removed.
_KEEP: Final = 16


class History(msgspec.Struct):
    """The commits read (newest first), the paths each one changed and its subject."""

    commits: list[str]
    paths: list[list[str]]
    subjects: list[str] = []


class _Stored(msgspec.Struct, array_like=True):
    """The cache file: paths as bytes, since a path need not be UTF-8."""

    version: int
    commits: list[str]
    paths: list[list[bytes]]
    subjects: list[str] = []


def _parse(raw: bytes) -> History:
    commits: list[str] = []
    paths: list[list[str]] = []
    subjects: list[str] = []
    for chunk in raw.decode("utf-8", "surrogateescape").split("\0")[1:]:
        lines = chunk.split("\n")
        changed = [line for line in lines[1:] if line]
        if len(changed) > SWEEP:
            continue
        commit, _, subject = lines[0].partition(" ")
        commits.append(commit.strip())
        paths.append(changed)
        subjects.append(subject.strip())
    return History(commits, paths, subjects)


def read_history(repo: Repository, commit: str) -> History:
    """The history of ``commit`` (a full id) and its ancestors, from the cache when
    it has been read before."""
    directory = os.path.join(repo.common_dir, "hydrate", "history")
    path = os.path.join(directory, commit)
    try:
        with open_regular(path) as fh:
            cached = msgspec.msgpack.decode(fh.read(), type=_Stored)
        if cached.version == _VERSION:
            os.utime(path)  # most recently used
            return History(
                cached.commits,
                [[p.decode("utf-8", "surrogateescape") for p in ps] for ps in cached.paths],
                cached.subjects,
            )
    except (OSError, msgspec.DecodeError):
        pass
    history = _parse(repo.changed_paths(commit, MAX_COMMITS))
    _save(repo, directory, path, history)
    return history


def _save(repo: Repository, directory: str, path: str, history: History) -> None:
    """Write the cache file; failing to is not an error (it only saves time)."""
    stored = _Stored(
        _VERSION,
        history.commits,
        [[p.encode("utf-8", "surrogateescape") for p in ps] for ps in history.paths],
        history.subjects,
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
