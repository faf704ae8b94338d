"""The layout of a task's tree, and the values a write works with.

Storage (format 1)::

    refs/hydrate/tasks/<task-id>   -> commit; the commit chain is the task's history
      tree: task.json              the task document
            links.json             context links, in packing order
            bodies/<aa>/<sha256>   the body blobs, fanned out by hash prefix

A task of more than :data:`FAN_OUT_LINKS` links fans its links out too
(``links.json`` format 2)::

            links.json             {"format":2,"links":[]}: look in links/
            links/<a>.json         the links whose sha256 starts with <a>
"""

from __future__ import annotations

from typing import Final, Generic, TypeVar

import msgspec

from .. import codec
from ..model import LINKS_FANNED_FORMAT, Link, LinkList, Task, packing_sorted
from ..store import MODE_BLOB, MODE_TREE, Repository

__all__ = [
    "BODIES_DIR",
    "FANNED_STUB",
    "FAN_OUT_LINKS",
    "LINKS_DIR",
    "LINKS_FILE",
    "SHARD_DIGITS",
    "TASK_FILE",
    "TOP_LEVEL",
    "Change",
    "R",
    "TaskState",
    "Unchanged",
    "body_path",
    "link_shard",
    "link_shard_path",
    "link_tree_changes",
]

R = TypeVar("R")

TASK_FILE: Final = b"task.json"
LINKS_FILE: Final = b"links.json"
BODIES_DIR: Final = b"bodies"
LINKS_DIR: Final = b"links"
#: A task with more links than this keeps them fanned out in ``links/<a>.json``
#: by the first hex digit of their sha256, so that one change rewrites one
#: sixteenth of the list instead of all of it (2 MB at 10,000 links). The
#: layout depends on the number of links only, so merged states converge.
FAN_OUT_LINKS: Final = 1000
#: Hex digits of the sha256 that name a links file: 16 files keep a full read
#: to 16 objects while a write at 10,000 links rewrites about 130 KB.
SHARD_DIGITS: Final = 1
#: What a task tree holds at its top, with each entry's mode.
TOP_LEVEL: Final = {
    TASK_FILE: MODE_BLOB,
    LINKS_FILE: MODE_BLOB,
    LINKS_DIR: MODE_TREE,
    BODIES_DIR: MODE_TREE,
}
FANNED_STUB: Final = codec.encode(LinkList(format=LINKS_FANNED_FORMAT))


def body_path(sha256: str) -> bytes:
    """Where a body lives in the task tree: ``bodies/<aa>/<sha256>``."""
    return b"%s/%s/%s" % (BODIES_DIR, sha256[:2].encode(), sha256.encode())


def link_shard(sha256: str) -> str:
    """The prefix naming the links file that holds the link of ``sha256``."""
    return sha256[:SHARD_DIGITS]


def link_shard_path(prefix: str) -> bytes:
    """Where a fanned-out task keeps the links whose sha256 starts with ``prefix``."""
    return b"%s/%s.json" % (LINKS_DIR, prefix.encode())


# -- states and changes -----------------------------------------------------------------


class TaskState(msgspec.Struct):
    """A task as read from its tip commit."""

    task: Task
    links: list[Link]
    tip: bytes | None = None
    tree: bytes | None = None
    #: The links by ``links/<a>.json`` file, when the task's links are fanned
    #: out; ``None`` when they are all in ``links.json``.
    shards: dict[str, list[Link]] | None = None
    #: Only the links of one ``links/<a>.json`` were read (``links`` is not
    #: the whole list): see :meth:`TaskRefs.write`'s ``only``.
    partial: bool = False
    #: ``task.json`` and ``links.json`` as stored, to find fields a newer
    #: version wrote that this one does not know (see :meth:`TaskRefs.write`).
    raw_task: bytes = b""
    raw_links: bytes = b""
    #: Each ``links/<a>.json`` read, as stored (fanned-out tasks).
    raw_shards: dict[str, bytes] = {}


class Change(msgspec.Struct, Generic[R]):
    """What one write does: the new state, the tree paths it touches, its message,
    and what the write returns."""

    task: Task
    links: list[Link]
    message: str
    result: R
    bodies: dict[bytes, bytes | None] = {}


class Unchanged(Exception, Generic[R]):
    """Raised by a change function when the state already is what was asked."""

    def __init__(self, result: R) -> None:
        super().__init__()
        self.result = result


def link_tree_changes(
    repo: Repository, links: list[Link], before: TaskState | None
) -> dict[bytes, bytes | None]:
    """The tree changes (``{path: blob oid or None}``) that store ``links``.

    Up to :data:`FAN_OUT_LINKS` links go into ``links.json``; more are fanned
    out, and only the ``links/<a>.json`` files whose links changed since
    ``before`` (the state read, or ``None`` to write everything) are written.
    """
    old = before.shards if before is not None else None
    partial = before is not None and before.partial
    if len(links) <= FAN_OUT_LINKS and not partial:
        ordered = packing_sorted(links)
        # All links in links.json: no links/ at all (not even one a hostile tree
        # carried along, which a format-1 read never looks at).
        return {
            LINKS_FILE: repo.write_blob(codec.encode(LinkList(links=ordered))),
            LINKS_DIR: None,
        }
    groups: dict[str, list[Link]] = {}
    for link in links:
        groups.setdefault(link_shard(link.sha256), []).append(link)
    if partial and len(groups) > 1:
        raise AssertionError("a write given one prefix's links changed another's")
    changes: dict[bytes, bytes | None] = {}
    if old is None:
        # Fanning out now: whatever a links/ held before (from a hostile tree)
        # goes; only the files written here make up the new one.
        changes = {LINKS_FILE: repo.write_blob(FANNED_STUB), LINKS_DIR: None}
    old = old or {}
    paths: list[bytes] = []
    datas: list[bytes] = []
    for prefix, group in groups.items():
        if group == old.get(prefix):  # a change keeps the order of what it leaves alone
            continue
        group = packing_sorted(group)
        if group != old.get(prefix):
            paths.append(link_shard_path(prefix))
            datas.append(codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group)))
    changes.update(zip(paths, repo.write_blobs(datas), strict=True))
    changes.update({link_shard_path(prefix): None for prefix in old.keys() - groups.keys()})
    return changes
