"""Bodies read by add-tree, handed to the prompt built next in the same process.

``add-tree --prompt`` reads and hashes every file it attaches; the prompt that
follows would read the same bodies again. A :class:`BodyMemo` made by the
caller goes to :func:`git_hydrate.hydrate.add_tree`, which offers it what it
reads, and then to the packer, which takes each body once. Nothing else holds
it: once the prompt is built it is dropped.
"""

from __future__ import annotations

__all__ = ["BodyMemo"]


class BodyMemo:
    """Bodies this process has just read and hashed, up to ``limit`` bytes.

    Each body is given out once, and only to a link whose sha256 is the one
    computed here.
    """

    def __init__(self, limit: int = 0) -> None:
        self.limit = max(0, limit)
        self.size = 0
        self._bodies: dict[str, tuple[str, bytes]] = {}

    def offer(self, oid: str, sha256: str, data: bytes) -> None:
        """Keep ``data`` (the blob ``oid``, whose sha256 is ``sha256``) if it fits."""
        if self.size + len(data) <= self.limit and oid not in self._bodies:
            self._bodies[oid] = (sha256, data)
            self.size += len(data)

    def __contains__(self, oid: object) -> bool:
        return oid in self._bodies

    def take(self, oid: str, sha256: str) -> bytes | None:
        """The body of blob ``oid`` if kept and its sha256 is ``sha256`` (given once)."""
        kept = self._bodies.pop(oid, None)
        if kept is None:
            return None
        self.size -= len(kept[1])
        return kept[1] if kept[0] == sha256 else None
