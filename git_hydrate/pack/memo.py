"""Bodies read by add-tree, handed to the prompt built next in the same process.

``add-tree --prompt`` reads and hashes every file it attaches; the prompt that
follows would read the same bodies again. A :class:`BodyMemo` made by the
caller goes to :func:`git_hydrate.hydrate.add_tree`, which offers it what it
reads, and then to the packer, which takes each body once. Nothing else holds
it: once the prompt is built it is dropped.
"""

from __future__ import annotations

from .boundaries import marks as marks_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .budget import Budget

__all__ = ["BodyMemo"]


class BodyMemo:
    """Bodies this process has just read and hashed, up to ``limit`` bytes.

    Each body is given out once, and only to a link whose sha256 is the one
    computed here. The first body that does not fit ends the memo: what it
    holds is dropped and nothing more is kept. Bodies come in reading order
    (paths), not packing order, so a memo that cannot hold them all holds an
    arbitrary part of the tree: on 30,000 files at 8 MiB, 220 of the 3,687
    bodies the prompt reads, for 8 MiB held through ranking (the others come
    from the work tree or git, as every body of a task that read none does).
    """

    def __init__(self, limit: int = 0, *, prompt_bytes: int = 0) -> None:
        self.limit = max(0, limit)
        self.size = 0
        self._bodies: dict[str, tuple[str, bytes, list[int] | None]] = {}
        #: The byte budget of the prompt that follows (0: none, tokens, or a format
        #: that does not neutralise: see :meth:`for_prompt`).
        self.prompt_bytes = prompt_bytes
        #: Whether each text kept comes with its marks (:func:`.boundaries.marks`),
        #: found as it is read: add-tree sets it when its reading is shared by two
        #: processes and every body fits the memo and the prompt (the prompt then
        #: neutralises them all, and this way each process marks its share).
        self.marking = False

    @classmethod
    def for_prompt(cls, limit: int, budget: Budget) -> BodyMemo:
        """A memo for the prompt ``budget`` builds: its bodies' marks are worth
        finding while reading (:attr:`marking`) only for the seed format, the one
        whose rendering neutralises them; other formats would hold every text's
        marks until the prompt ends and use none."""
        shaped = budget.format == "seed"
        return cls(limit, prompt_bytes=(budget.max_bytes or 0) if shaped else 0)

    def offer(self, oid: str, sha256: str, data: bytes, marks: list[int] | None = None) -> None:
        """Keep ``data`` (the blob ``oid``, whose sha256 is ``sha256``; a UTF-8 text
        whose :func:`.boundaries.marks` are ``marks`` if given) if it fits; if it
        does not, keep nothing (see the class). While :attr:`marking`, a text's
        marks not given are found here."""
        if oid in self._bodies:
            return
        if self.size + len(data) <= self.limit:
            if marks is None and self.marking:
                marks = marks_of(data.decode("utf-8"))
            self._bodies[oid] = (sha256, data, marks)
            self.size += len(data)
        elif self.limit:
            self.drop()

    def drop(self) -> None:
        """Keep nothing, now or later (as when a body does not fit)."""
        self._bodies.clear()
        self.size = self.limit = 0

    def __contains__(self, oid: object) -> bool:
        return oid in self._bodies

    def take(self, oid: str, sha256: str) -> tuple[bytes, list[int] | None] | None:
        """The body of blob ``oid`` and its marks (if found) if kept and its sha256 is
        ``sha256`` (given once)."""
        kept = self._bodies.pop(oid, None)
        if kept is None:
            return None
        self.size -= len(kept[1])
        return (kept[1], kept[2]) if kept[0] == sha256 else None
