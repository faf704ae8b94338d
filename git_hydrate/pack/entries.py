"""Typed entries: what the walk takes (:class:`Attachment`), a packet holds (:class:`Item`).

Inside the packer every attachment is an :class:`Attachment`: the stored-task
packer builds them from a task's links, and the seed-named functions
(:mod:`git_hydrate.context_expander`, which take and return plain dicts)
convert once at their edge (:class:`SeedEdge`): dict entries in, each to an
:class:`Attachment`, and the packet's context items out, each
:class:`Item` to the dict ``{hash, source, body}``. The caller's body loader
and outliner are handed the caller's own entries, as before. No I/O, no git.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

import msgspec

from .seed import BodyLoader, Entry, Outliner, dedupe_context

__all__ = [
    "Attachment",
    "AttachmentLoader",
    "AttachmentOutliner",
    "Item",
    "SeedEdge",
    "as_timestamp",
    "dedupe",
]


class Attachment(msgspec.Struct, frozen=True, gc=False):
    """One attachment as the walk takes it, in packing order."""

    #: The sha256 of its body (the seed's hash) and its source label.
    hash: str
    source: str
    priority: int = 0
    #: When it expires, in POSIX seconds (``None``: never).
    expires: float | None = None
    #: The bytes of its body as recorded (``None``: known only from ``body``).
    size: int | None = None
    #: Its git blob id: the key of what the caches know of its body.
    oid: str | None = None
    #: Where the work tree may hold the same blob (a file's link).
    path: str | None = None
    #: How the task names it (``file in play``, ``named test``), if it does.
    named: str | None = None
    #: Its body when it is at hand (else the body loader reads it).
    body: str | None = None

    @classmethod
    def of(cls, entry: Entry) -> Attachment:
        """The attachment of a seed entry ``{hash, source, priority?, expires?,
        size?, oid?, path?, named?, body?}`` (``expires``: a datetime, an ISO 8601
        text or POSIX seconds)."""
        get = entry.get
        size, oid, path, named = get("size"), get("oid"), get("path"), get("named")
        return cls(
            str(entry["hash"]),
            str(entry["source"]),
            int(get("priority", 0)),
            _expiry(get("expires")),
            None if size is None else int(size),
            str(oid) if oid else None,
            str(path) if path else None,
            str(named) if named else None,
            str(entry["body"]) if "body" in entry else None,
        )

    def as_entry(self) -> dict[str, str | float | None]:
        """The seed entry this attachment stands for (the keys it has set)."""
        entry: dict[str, str | float | None] = {
            "hash": self.hash,
            "source": self.source,
            "priority": self.priority,
            "expires": self.expires,
        }
        for key in ("size", "oid", "path", "named", "body"):
            value = getattr(self, key)
            if value is not None:
                entry[key] = value
        return entry

    def cache_key(self, variant: str) -> str:
        """What the caches know this body's ``variant`` by: its blob id (else its hash)."""
        return f"{self.oid or self.hash} {variant}"


class Item(msgspec.Struct, frozen=True, gc=False):
    """One context item of a packet. Its fields are in the order the packet's
    compact JSON sorts its keys: an item encodes as the dict would."""

    body: str
    hash: str
    source: str

    def as_dict(self) -> dict[str, str]:
        """The item as a packet's ``context`` lists it."""
        return {"hash": self.hash, "source": self.source, "body": self.body}


#: Reads the body of an attachment that carries only its size.
AttachmentLoader = Callable[[Attachment], str]
#: Gives the outline of an attachment (and a reader of its body), or ``None``.
AttachmentOutliner = Callable[[Attachment, Callable[[], str]], "str | None"]


def as_timestamp(now: datetime | float | None) -> float:
    """POSIX seconds for a moment (a naive datetime is UTC; ``None`` is now)."""
    if now is None:
        return datetime.now(UTC).timestamp()
    if isinstance(now, datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        return now.timestamp()
    return float(now)


def _expiry(value: datetime | str | float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return as_timestamp(value)
    if isinstance(value, str):
        return as_timestamp(datetime.fromisoformat(value))
    return float(value)


def dedupe(attachments: Iterable[Attachment]) -> list[Attachment]:
    """:func:`~.seed.dedupe_context` of attachments: the highest priority per
    hash (the first seen among equals), sorted by (-priority, hash)."""
    best: dict[str, Attachment] = {}
    for attachment in attachments:
        kept = best.get(attachment.hash)
        if kept is None or attachment.priority > kept.priority:
            best[attachment.hash] = attachment
    return sorted(best.values(), key=_packing_order)


def _packing_order(attachment: Attachment) -> tuple[int, str]:
    return -attachment.priority, attachment.hash


class SeedEdge:
    """The edge of a seed-named function: its dict entries as attachments,
    deduplicated and in packing order (converted when the walk asks for them,
    after the budget is checked), and its callbacks, given the caller's entries."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._given = entries
        #: Each attachment and the caller's entry it was made of, by its identity.
        self._entries: dict[int, tuple[Attachment, Entry]] = {}

    def __iter__(self) -> Iterator[Attachment]:
        for entry in dedupe_context(self._given):
            attachment = Attachment.of(entry)
            self._entries[id(attachment)] = (attachment, entry)
            yield attachment

    def loader(self, load_body: BodyLoader | None) -> AttachmentLoader | None:
        """``load_body``, given the caller's entry of the attachment."""
        if load_body is None:
            return None
        entries = self._entries
        return lambda attachment: load_body(entries[id(attachment)][1])

    def outliner(self, outline: Outliner | None) -> AttachmentOutliner | None:
        """``outline``, given the caller's entry of the attachment."""
        if outline is None:
            return None
        entries = self._entries
        return lambda attachment, read: outline(entries[id(attachment)][1], read)
