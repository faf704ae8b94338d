"""The archive's storage: ``refs/hydrate/archive``, read and rebuilt.

One ref folds every finished task into a single commit, so the ref list stays
the size of the live work::

    refs/hydrate/archive           -> commit; parents: the previous archive commit
                                      and the tip of every task archived by it
      index.json                   {format, tasks: {id: {tip, title, status, ...}}}
      tasks/<id>                   the archived task's tree (task.json, links.json, bodies)

This module only reads and writes that structure; archiving and unarchiving
tasks (:mod:`git_hydrate.lifecycle`) and merging archives from remotes
(:mod:`git_hydrate.sync`) are built on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec

from . import codec
from .errors import CorruptData
from .model import ArchivedTask, ArchiveIndex
from .store import MODE_BLOB, MODE_TREE, Repository

__all__ = ["ARCHIVE_REF", "Archive", "archive_entry", "index_tree", "read_archive"]

#: The one ref that holds every archived task.
ARCHIVE_REF: Final = b"refs/hydrate/archive"

_INDEX_FILE: Final = b"index.json"
_TASKS_DIR: Final = b"tasks"


class Archive(msgspec.Struct, frozen=True):
    """The archive as read: its tip commit and tree (``None`` when there is no
    archive yet) and its index."""

    tip: bytes | None
    tree: bytes | None
    index: ArchiveIndex


def read_archive(repo: Repository, tip: bytes | None = None) -> Archive:
    """The archive ref (or the archive commit ``tip``): tip, tree and index.

    Raises:
        CorruptData: the archive commit, its tree or its ``index.json`` is damaged.
    """
    if tip is None:
        tip = repo.read_ref(ARCHIVE_REF)
    if tip is None:
        return Archive(None, None, ArchiveIndex())
    tree, _parents = repo.read_commit_tree(tip)
    entry = repo.read_tree(tree).get(_INDEX_FILE)
    if entry is None:
        raise CorruptData(f"{ARCHIVE_REF.decode()}: commit {tip.decode()} has no index.json")
    index = codec.decode_archive_index(
        repo.read_blob(entry[1]), f"{ARCHIVE_REF.decode()}: index.json"
    )
    return Archive(tip, tree, index)


def archive_entry(repo: Repository, task_id: str) -> ArchivedTask | None:
    """The archive index entry of ``task_id``, or ``None`` if it is not archived."""
    return read_archive(repo).index.tasks.get(task_id)


def index_tree(
    repo: Repository,
    tree: bytes | None,
    index: ArchiveIndex,
    trees: Mapping[bytes, bytes | None],
) -> bytes:
    """The archive tree after writing ``index`` and changing ``tasks/<id>`` entries
    (``{id: task tree}`` adds or replaces one, ``{id: None}`` removes it)."""
    entries = dict(repo.read_tree(tree)) if tree is not None else {}
    entries[_INDEX_FILE] = (MODE_BLOB, repo.write_blob(codec.encode(index)))
    tasks_entry = entries.get(_TASKS_DIR)
    tasks = dict(repo.read_tree(tasks_entry[1])) if tasks_entry is not None else {}
    for name, oid in trees.items():
        if oid is None:
            tasks.pop(name, None)
        else:
            tasks[name] = (MODE_TREE, oid)
    if tasks:
        entries[_TASKS_DIR] = (MODE_TREE, repo.write_tree(tasks))
    else:
        entries.pop(_TASKS_DIR, None)
    return repo.write_tree(entries)
