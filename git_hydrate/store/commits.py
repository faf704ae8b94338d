"""What the store reads from a raw commit: its tree and parents, or a history
walk's summary of it (:class:`CommitInfo`)."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import CorruptData

__all__ = ["CommitInfo", "parse_commit_tree"]


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
