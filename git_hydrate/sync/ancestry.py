"""Whether one task tip holds the other, for many tasks at once, without a process each.

A pull asks, of every task whose local and remote tips differ, for their merge
bases: the remote tip among them means the local task is ahead; the local tip
among them, a fast-forward; neither, a merge. One ``git merge-base --all`` per
task costs a process each (seconds for a thousand tasks moved). Most pairs are
one tip a few commits behind the other, which a walk of both histories finds
in a few pipelined ``cat-file`` passes for all tasks together (a commit read
once however many walks cross it). When one tip reaches the other, their merge
base is that tip alone — exactly what ``git merge-base --all`` answers; any
pair the walk cannot settle (diverged, unrelated, deeper than it looks, a
commit it cannot read) is left to git.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ..errors import CorruptData
from ..store import Repository, parse_commit_tree

__all__ = ["WALK_DEPTH", "quick_bases"]

#: Generations walked back from each tip before a pair is left to git.
WALK_DEPTH: Final = 32
#: Commits a walk may hold at one generation (merges widen it) before it gives up.
_WIDEST: Final = 64


class _Walk:
    """Both histories of one pair, walked back a generation per step."""

    def __init__(self, local: bytes, remote: bytes) -> None:
        self.local, self.remote = local, remote
        self.from_local, self.from_remote = {local}, {remote}
        self.edge_local, self.edge_remote = [local], [remote]

    def edges(self) -> list[bytes]:
        return self.edge_local + self.edge_remote

    def step(self, parents: dict[bytes, list[bytes] | None]) -> list[bytes] | None:
        """Walk a generation further; the merge bases once one tip reaches the
        other, ``[]`` when this walk cannot settle the pair, else ``None``."""
        sides = ((self.edge_local, self.from_local), (self.edge_remote, self.from_remote))
        edges: list[list[bytes]] = []
        for edge, seen in sides:
            below: list[bytes] = []
            for commit in edge:
                found = parents.get(commit)
                if found is None:
                    return []  # unreadable here: git decides
                below += [p for p in found if p not in seen]
            seen.update(below)
            edges.append(below)
        self.edge_local, self.edge_remote = edges
        if self.local in self.from_remote:
            return [self.local]
        if self.remote in self.from_local:
            return [self.remote]
        if not any(edges) or any(len(edge) > _WIDEST for edge in edges):
            return []  # both histories ended (diverged or unrelated), or too wide
        return None


def quick_bases(
    repo: Repository, pairs: Iterable[tuple[bytes, bytes]], depth: int = WALK_DEPTH
) -> dict[tuple[bytes, bytes], list[bytes]]:
    """``{(local, remote): merge bases}`` of the pairs of different tips where
    one is reached from the other within ``depth`` generations; the other pairs
    are left out (ask ``git merge-base``). Read through ``repo``'s ``cat-file``,
    one pipelined pass per generation for every pair."""
    walks = [_Walk(local, remote) for local, remote in dict.fromkeys(pairs) if local != remote]
    parents: dict[bytes, list[bytes] | None] = {}
    settled: dict[tuple[bytes, bytes], list[bytes]] = {}
    for _generation in range(depth):
        if not walks:
            break
        wanted = list(dict.fromkeys(c for walk in walks for c in walk.edges() if c not in parents))
        for oid, found in zip(wanted, repo.read_many(wanted), strict=True):
            parents[oid] = _parents(oid, found)
        going: list[_Walk] = []
        for walk in walks:
            bases = walk.step(parents)
            if bases is None:
                going.append(walk)
            elif bases:
                settled[(walk.local, walk.remote)] = bases
        walks = going
    return settled


def _parents(oid: bytes, found: tuple[bytes, bytes] | None) -> list[bytes] | None:
    if found is None or found[0] != b"commit":
        return None
    try:
        return parse_commit_tree(oid, found[1])[1]
    except CorruptData:
        return None
