"""The budget walk: keep attachments in packing order while they fit.

Everything is measured in UTF-8 bytes (and, with a meter, exact tokens) of the
texts the budget counts: the packet's compact JSON, the rendered prompt, or
both. The walk never re-encodes the whole packet or prompt per attachment:
each kept attachment adds exactly its own encoded length plus one separator,
which is what makes the walk linear and the figure exact. A body that cannot
fit by its recorded size is never read. Pure: no I/O, no git; the clock is a
parameter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from ..codec import encode_output
from .formats import SEED, Layout
from .render import utf8_len
from .seed import BodyLoader, Entry, Outliner, TokenMeter

__all__ = ["Kept", "Plan", "Walked", "as_timestamp", "back_off", "needed", "walk"]


def as_timestamp(now: datetime | float | None) -> float:
    """POSIX seconds for a moment (a naive datetime is UTC; ``None`` is now)."""
    if now is None:
        return datetime.now(UTC).timestamp()
    if isinstance(now, datetime):
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        return now.timestamp()
    return float(now)


def _expires_at(entry: Entry) -> float | None:
    value = entry.get("expires")
    if value is None:
        return None
    if isinstance(value, datetime):
        return as_timestamp(value)
    if isinstance(value, str):
        return as_timestamp(datetime.fromisoformat(value))
    return float(value)


def _body_of(entry: Entry, load_body: BodyLoader | None) -> str:
    if "body" in entry:
        return str(entry["body"])
    if load_body is None:
        raise ValueError(f"context entry {entry['hash']} has no body and no loader was given")
    return load_body(entry)


def _min_body_bytes(entry: Entry) -> int:
    size = entry.get("size")
    if size is not None:
        return int(size)
    if "body" in entry:
        return len(str(entry["body"]).encode("utf-8"))
    return 0


@dataclass
class Plan:
    """What a walk measures and how much room it has after the mandatory part.

    ``json`` and ``prompt`` say which texts count against the budget; the
    rooms are what is left of each budget (``None``: no such budget).
    """

    json: bool
    prompt: bool
    room_bytes: int | None
    room_tokens: int | None
    meter: TokenMeter | None = None
    outliner: Outliner | None = None
    #: Tokens the untrusted block costs around the first attachment.
    block_tokens: int = 0
    #: The prompt's format: how a section holds its body.
    layout: Layout = SEED
    #: Keep each kept section as its UTF-8 bytes, and no body in its item:
    #: the prompt is then held once, in UTF-8 (a text with one wide character
    #: costs up to 4 bytes per character as a ``str``).
    lean: bool = False

    def kept(
        self,
        index: int,
        item: dict[str, Any],
        section: tuple[str, ...],
        cost_json: int,
        cost_prompt: int,
        shrunk: dict[str, Any] | None = None,
    ) -> Kept:
        """What the walk keeps of an attachment that fits."""
        if not self.lean:
            return Kept(index, item, section, cost_json, cost_prompt, shrunk)
        lean = {"hash": item["hash"], "source": item["source"]}
        encoded = b"".join([piece.encode("utf-8") for piece in section])
        return Kept(index, lean, encoded, cost_json, cost_prompt, shrunk)


@dataclass
class Kept:
    """One attachment the walk kept: in full, or as its outline."""

    index: int
    item: dict[str, Any]
    #: The section's pieces in the prompt (see :func:`rendering.section_pieces`),
    #: or, in a lean walk, the section's UTF-8 bytes.
    section: tuple[str, ...] | bytes
    cost_json: int
    cost_prompt: int
    shrunk: dict[str, Any] | None = None


@dataclass
class Walked:
    kept: list[Kept] = field(default_factory=list)
    omitted: list[tuple[int, dict[str, str]]] = field(default_factory=list)
    used_bytes: int = 0
    used_tokens: int = 0

    def omit(self, index: int, entry: Entry, reason: str) -> None:
        self.omitted.append(
            (index, {"hash": str(entry["hash"]), "source": str(entry["source"]), "reason": reason})
        )


def _cache_key(entry: Entry, variant: str) -> str:
    return f"{entry.get('oid') or entry['hash']} {variant}"


_JSON_HEAD: Final = '{"body":'


def _json_tokens(meter: TokenMeter, encoded: bytes, item: Mapping[str, Any], key: str) -> int:
    """Tokens of an item's compact JSON, its body's part counted (and cached) alone."""
    tail = b',"hash":"%s","source":%s}' % (
        str(item["hash"]).encode("ascii"),
        encode_output(str(item["source"])),
    )
    body = encoded[len(_JSON_HEAD) : len(encoded) - len(tail)].decode("utf-8")
    return (
        meter.count(_JSON_HEAD) + meter.count_body(key, body) + meter.count(tail.decode("utf-8"))
    )


def _candidate(
    plan: Plan, entry: Entry, item: dict[str, Any], variant: str, index: int
) -> tuple[tuple[str, ...], int, int, int]:
    """``(section's pieces, json bytes, prompt bytes, tokens)`` one attachment would add
    as the ``index``-th kept (from 1; an outline when ``variant`` says so)."""
    # (the packet's size is reported by the prompt walk too, though not measured)
    first = index == 1
    encoded = encode_output(item)
    cost_json = len(encoded) + (0 if first else 1)
    section: tuple[str, ...] = ()
    cost_prompt = 0
    tokens = 0
    meter = plan.meter
    if plan.json and meter is not None:
        tokens += _json_tokens(meter, encoded, item, _cache_key(entry, variant + ".json"))
        tokens += 0 if first else 1  # the comma
    if plan.prompt:
        layout = plan.layout
        outline = variant == "outline"
        source = str(entry["source"])
        section = layout.section(index, source, str(item["body"]), outline=outline)
        between = len(layout.separator)
        cost_prompt = sum(map(utf8_len, section)) + (layout.block_overhead if first else between)
        if meter is not None:
            key = _cache_key(entry, _section_variant(variant, layout))
            tokens += meter.count(section[0]) + meter.count_body(key, "".join(section[1:]))
            tokens += plan.block_tokens if first else min(between, 1)  # the block, or the line
    return section, cost_json, cost_prompt, tokens


def _section_variant(variant: str, layout: Layout) -> str:
    """The token cache's name for a body's part of a section (the seed's names kept)."""
    name = "section" if variant == "full" else variant + ".section"
    return name if layout is SEED else f"{name}.{layout.name}"


def _fits(plan: Plan, walked: Walked, size: int, tokens: int) -> bool:
    if plan.room_bytes is not None and walked.used_bytes + size > plan.room_bytes:
        return False
    return plan.room_tokens is None or walked.used_tokens + tokens <= plan.room_tokens


def _measured(plan: Plan, cost_json: int, cost_prompt: int) -> int:
    return (cost_json if plan.json else 0) + (cost_prompt if plan.prompt else 0)


#: What a context item costs in the packet's JSON besides its body and source:
#: ``{"body":"","hash":"<64 hex>","source":""}``.
_ITEM_JSON_BYTES: Final = len(encode_output({"body": "", "hash": "0" * 64, "source": ""}))
#: What a section costs in the prompt besides its body and source: the heading's
#: words and its line break.
_SECTION_BYTES: Final = len("### Context from \n")


def _floor(entry: Entry, source: str, plan: Plan, *, first: bool) -> int:
    """The fewest bytes an attachment can cost in what the plan measures: its body,
    its source and the fixed text around them (escaping and marks only add)."""
    body = _min_body_bytes(entry)
    label = utf8_len(source)
    separator = 0 if first else 1
    floor = 0
    if plan.json:
        floor += body + label + _ITEM_JSON_BYTES + separator
    if plan.prompt:
        layout = plan.layout
        floor += body + label + _SECTION_BYTES
        floor += layout.block_overhead if first else len(layout.separator)
    return floor


def walk(
    entries: Sequence[Entry], plan: Plan, *, now: float, load_body: BodyLoader | None
) -> Walked:
    """Keep attachments in order while they fit the plan's rooms.

    Each attachment is measured once, as the sum of its own parts; the caller
    verifies the token total of the result (see :func:`_back_off`).
    """
    walked = Walked()
    per_body = int(plan.json) + int(plan.prompt)
    for index, entry in enumerate(entries):
        expires = _expires_at(entry)
        if expires is not None and expires <= now:
            walked.omit(index, entry, "expired")
            continue
        digest, source = str(entry["hash"]), str(entry["source"])
        body: str | None = None
        # A body costs at least its own bytes in each measured text; when that
        # alone cannot fit, it is not read (unless its outline is wanted).
        floor = _floor(entry, source, plan, first=not walked.kept) if per_body else 0
        too_big = plan.room_bytes is not None and walked.used_bytes + floor > plan.room_bytes
        if not too_big and plan.meter is not None and plan.room_tokens is not None:
            variant = _section_variant("full", plan.layout) if plan.prompt else "full.json"
            known = plan.meter.known(_cache_key(entry, variant))
            too_big = known is not None and walked.used_tokens + known > plan.room_tokens
        if not too_big:
            body = _body_of(entry, load_body)
            item = {"hash": digest, "source": source, "body": body}
            section, cost_json, cost_prompt, tokens = _candidate(
                plan, entry, item, "full", len(walked.kept) + 1
            )
            size = _measured(plan, cost_json, cost_prompt)
            if _fits(plan, walked, size, tokens):
                walked.kept.append(plan.kept(index, item, section, cost_json, cost_prompt))
                walked.used_bytes += size
                walked.used_tokens += tokens
                continue
        if plan.outliner is not None and _keep_outline(
            plan, walked, index, entry, body, load_body
        ):
            continue
        walked.omit(index, entry, "byte_budget")
    return walked


def _keep_outline(
    plan: Plan,
    walked: Walked,
    index: int,
    entry: Entry,
    body: str | None,
    load_body: BodyLoader | None,
) -> bool:
    """Keep the outline of an attachment that did not fit in full, if it fits."""
    assert plan.outliner is not None

    def read() -> str:
        return body if body is not None else _body_of(entry, load_body)

    outline = plan.outliner(entry, read)
    if not outline:
        return False
    source = str(entry["source"])
    digest = hashlib.sha256(outline.encode("utf-8", "surrogatepass")).hexdigest()
    item = {"hash": digest, "source": f"{source} (outline)", "body": outline}
    section, cost_json, cost_prompt, tokens = _candidate(
        plan, entry, item, "outline", len(walked.kept) + 1
    )
    size = _measured(plan, cost_json, cost_prompt)
    if not _fits(plan, walked, size, tokens):
        return False
    full = _min_body_bytes(entry) if body is None else utf8_len(body)
    shrunk = {
        "hash": str(entry["hash"]),
        "source": source,
        "outline_hash": digest,
        "bytes_saved": full - utf8_len(outline),
    }
    walked.kept.append(plan.kept(index, item, section, cost_json, cost_prompt, shrunk))
    walked.used_bytes += size
    walked.used_tokens += tokens
    return True


def back_off(
    walked: Walked, max_tokens: int | None, total_tokens: Callable[[Walked], int]
) -> int | None:
    """The exact token total, after dropping the last kept attachments until it fits.

    The walk's sum of parts is at most a token or so per attachment off the
    whole (almost always over), so this rarely drops anything; each step
    recounts the whole once, and there are at most as many steps as kept
    attachments.
    """
    if max_tokens is None:
        return None
    total = total_tokens(walked)
    while total > max_tokens and walked.kept:
        last = walked.kept.pop()
        entry = (
            {"hash": last.shrunk["hash"], "source": last.shrunk["source"]}
            if last.shrunk
            else last.item
        )
        walked.omit(last.index, entry, "byte_budget")
        total = total_tokens(walked)
    return total


def needed(walked: Walked, entries: Sequence[Entry], now: float, plan: Plan) -> int:
    """Bytes of the measured texts that would hold every live attachment in full.

    Exact for attachments the walk read; for one it skipped unread, its size
    stands in for its (at least as large) encoded cost.
    """
    total = 0
    count = 0
    for entry in entries:
        expires = _expires_at(entry)
        if expires is not None and expires <= now:
            continue
        source = str(entry["source"])
        size = _min_body_bytes(entry)
        if plan.json:
            total += size + len(encode_output(source)) + len(str(entry["hash"])) + 30
        if plan.prompt:
            total += utf8_len("".join(plan.layout.section(count + 1, source, ""))) + size
        count += 1
    if count:
        total += (count - 1) * (int(plan.json) + len(plan.layout.separator) * int(plan.prompt))
        total += plan.layout.block_overhead if plan.prompt else 0
    return total
