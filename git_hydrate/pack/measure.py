"""What a budget walk holds and how it measures an attachment.

Everything is measured in UTF-8 bytes (and, with a meter, exact tokens) of the
texts the budget counts: the packet's compact JSON, the rendered prompt, or
both. The walk never re-encodes the whole packet or prompt per attachment:
each kept attachment adds exactly its own encoded length plus one separator,
which is what makes the walk linear and the figure exact. :class:`Walked` is
the walk's state: what it kept, what it left out, and the ``### Not included``
notice (:mod:`.omissions`) whose cost it carries. Pure: no I/O, no git.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import msgspec

from ..codec import encode_output
from .entries import Attachment, AttachmentLoader, AttachmentOutliner, Item, as_timestamp
from .formats import SEED, Layout
from .omissions import Missing, Notice
from .render import utf8_len
from .seed import TokenMeter

__all__ = [
    "Candidate",
    "Kept",
    "Omitted",
    "Plan",
    "Shrunk",
    "Walked",
    "as_timestamp",
    "body_of",
    "candidate",
    "fits",
    "fits_beside",
    "floor",
    "measured",
    "min_body_bytes",
    "notice_tokens",
    "section_bytes",
    "section_variant",
    "whole_tokens",
]


def body_of(entry: Attachment, load_body: AttachmentLoader | None) -> str:
    if entry.body is not None:
        return entry.body
    if load_body is None:
        raise ValueError(f"context entry {entry.hash} has no body and no loader was given")
    return load_body(entry)


def min_body_bytes(entry: Attachment) -> int:
    if entry.size is not None:
        return entry.size
    if entry.body is not None:
        return len(entry.body.encode("utf-8"))
    return 0


class Omitted(msgspec.Struct, frozen=True, gc=False):
    """An attachment the walk left out: its place in packing order, and why."""

    index: int
    hash: str
    source: str
    reason: str

    def part(self) -> dict[str, str]:
        """As a result's ``omitted`` lists it."""
        return {"hash": self.hash, "source": self.source, "reason": self.reason}


class Shrunk(msgspec.Struct, frozen=True, gc=False):
    """An attachment kept as its outline: what it was, the outline's hash, and
    the bytes that saved."""

    hash: str
    source: str
    outline_hash: str
    bytes_saved: int

    def part(self) -> dict[str, str | int]:
        """As a result's ``shrunk`` lists it."""
        return {
            "hash": self.hash,
            "source": self.source,
            "outline_hash": self.outline_hash,
            "bytes_saved": self.bytes_saved,
        }


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
    outliner: AttachmentOutliner | None = None
    #: Tokens the untrusted block costs around the first attachment.
    block_tokens: int = 0
    #: The prompt's format: how a section holds its body.
    layout: Layout = SEED
    #: Keep each kept section as its UTF-8 bytes, and no body in its item:
    #: the prompt is then held once, in UTF-8 (a text with one wide character
    #: costs up to 4 bytes per character as a ``str``).
    lean: bool = False
    #: The prompt's ``### Not included`` section, kept as the walk decides.
    notice: Notice | None = None
    #: Weigh a large attachment against what it would displace (``prompt``'s walk;
    #: ``pack`` and ``expand`` keep the seed's strict priority order).
    value_per_byte: bool = False
    #: Count the notice's tokens with the meter instead of estimating them at
    #: half its bytes (a walk made again when the estimate left it no room).
    exact_notice: bool = False

    def kept(
        self,
        at: tuple[int, Attachment],
        item: Item,
        section: tuple[str, ...],
        costs: tuple[int, int],
        shrunk: Shrunk | None = None,
    ) -> Kept:
        """What the walk keeps of an attachment that fits (``at``: its place and
        entry; ``costs``: its JSON and prompt bytes)."""
        index, entry = at
        cost_json, cost_prompt = costs
        if not self.lean:
            return Kept(index, entry, item, section, cost_json, cost_prompt, shrunk)
        lean = Item("", item.hash, item.source)
        encoded = b"".join([piece.encode("utf-8") for piece in section])
        return Kept(index, entry, lean, encoded, cost_json, cost_prompt, shrunk)


class Kept(msgspec.Struct, gc=False):
    """One attachment the walk kept: in full, or as its outline."""

    index: int
    entry: Attachment
    #: Its packet item (in a lean walk without its body: the section holds it).
    item: Item
    #: The section's pieces in the prompt (see :meth:`.formats.Layout.section`),
    #: or, in a lean walk, the section's UTF-8 bytes.
    section: tuple[str, ...] | bytes
    cost_json: int
    cost_prompt: int
    shrunk: Shrunk | None = None
    #: What it adds to the measured texts (bytes, tokens), and whether the task
    #: names it (or it ranks high): it is then the last to be left out again.
    size: int = 0
    tokens: int = 0
    named: bool = False
    #: Whether it ranks high (the first tenth) and was kept whole: left out again for
    #: the notice only once the notice names no more and only counts.
    high: bool = False
    #: Whether it opens the untrusted block (it was kept first).
    opens: bool = False
    #: Its place in the block when it was measured (from 1).
    place: int = 0


@dataclass
class Walked:
    """A walk's state: the attachments kept and left out, and what they cost."""

    plan: Plan
    kept: list[Kept] = field(default_factory=list)
    omitted: list[Omitted] = field(default_factory=list)
    used_bytes: int = 0
    used_tokens: int = 0
    #: The prompt's ``### Not included`` section (``None``: the packet alone is measured).
    notice: Notice | None = None
    #: Whether the notice fits the budget (when not, it is left out of the prompt).
    notice_fits: bool = True
    #: How value per byte decided, one line each (``prompt -v``).
    decisions: list[str] = field(default_factory=list)
    #: Each attachment's whole size, by place in packing order, for the notice.
    sizes: dict[int, int] = field(default_factory=dict)
    #: How many kept attachments were left out again to make room for the notice.
    evicted: int = 0
    #: The bytes of each outline measured and found too large, by place (an
    #: attachment with none: ``sys.maxsize``), so that trying it again in less
    #: room neither reads nor measures it (the walk's refill tries them again).
    outline_missed: dict[int, int] = field(default_factory=dict)
    #: The tokens of attachments counted whole for value per byte, by hash and
    #: source (:func:`whole_tokens`).
    counted: dict[tuple[str, str], int] = field(default_factory=dict)

    def copy(self) -> Walked:
        """A copy of this state that changes on its own (to try a change on)."""
        return replace(
            self,
            kept=[msgspec.structs.replace(kept) for kept in self.kept],
            omitted=list(self.omitted),
            notice=None if self.notice is None else self.notice.copy(),
            decisions=list(self.decisions),
            sizes=dict(self.sizes),
            outline_missed=dict(self.outline_missed),
            counted=dict(self.counted),
        )

    def omit(self, index: int, entry: Attachment, reason: str) -> None:
        self.omitted.append(Omitted(index, entry.hash, entry.source, reason))
        self.note(index, entry, reason, outlined=False)

    def omitted_parts(self) -> list[dict[str, str]]:
        """What was left out, in packing order, as a result's ``omitted`` lists it."""
        return [o.part() for o in sorted(self.omitted, key=_place)]

    def note(self, index: int, entry: Attachment, reason: str, *, outlined: bool) -> None:
        """Name the attachment in the notice: omitted, or kept as its outline."""
        if self.notice is None:
            return
        size = self.sizes.get(index, min_body_bytes(entry))
        self.sizes[index] = size
        self.notice.add(Missing(index, entry.hash, entry.source, size, reason, outlined))

    def unnote(self, index: int) -> None:
        if self.notice is not None:
            self.notice.remove(index)

    def keep(self, kept: Kept, size: int, tokens: int, *, named: bool = False) -> None:
        kept.size, kept.tokens, kept.named = size, tokens, named
        kept.opens = not self.kept
        kept.place = len(self.kept) + 1
        self.kept.append(kept)
        self.used_bytes += size
        self.used_tokens += tokens

    def swap(self, at: int, kept: Kept) -> Kept:
        """Put ``kept`` (measured, with its size) in the place of the kept attachment
        at ``at``, which it returns: a file whole instead of its outline, or back."""
        gone = self.kept[at]
        self.kept[at] = kept
        self.used_bytes += kept.size - gone.size
        self.used_tokens += kept.tokens - gone.tokens
        if gone.opens and not kept.opens:
            self._opens(kept)
        return gone

    def drop(self, at: int) -> Kept:
        """Leave out the kept attachment at ``at`` again (the notice names it)."""
        self.evicted += 1
        gone = self.kept.pop(at)
        self.used_bytes -= gone.size
        self.used_tokens -= gone.tokens
        if gone.opens and self.kept:
            self._opens(self.kept[0])
        self.omit(gone.index, gone.entry, "byte_budget")  # (the whole, for an outline too)
        return gone

    def _opens(self, kept: Kept) -> None:
        """``kept`` is now the first attachment: it opens the block (its opening
        and closing instead of a separator) and has no comma before it in the JSON."""
        plan = self.plan
        layout = plan.layout
        json_change = -1 if plan.json else 0
        between = len(layout.separator)
        prompt_change = layout.block_overhead - between if plan.prompt else 0
        kept.opens = True
        kept.cost_json -= 1
        kept.cost_prompt += prompt_change
        kept.size += json_change + prompt_change
        self.used_bytes += json_change + prompt_change
        if plan.meter is not None:
            block = plan.block_tokens - min(between, 1) if plan.prompt else 0
            change = (-1 if plan.json else 0) + block
            kept.tokens += change
            self.used_tokens += change

    def missing(
        self, entries: Sequence[Attachment] = (), *, every_kept: bool = False
    ) -> list[Missing]:
        """Every attachment left out or kept as its outline, in packing order,
        whether or not the notice fit the budget; with ``every_kept``, every kept
        one too, as if left out. A size not measured is ``entries``'s least (0
        without them)."""

        def size(index: int) -> int:
            known = self.sizes.get(index)
            if known is not None:
                return known
            return min_body_bytes(entries[index]) if entries else 0

        out = [
            Missing(o.index, o.hash, o.source, size(o.index), o.reason, False)
            for o in self.omitted
        ]
        out += [
            Missing(
                k.index,
                k.entry.hash,
                k.entry.source,
                self.sizes.get(k.index, 0),
                "byte_budget",
                k.shrunk is not None and not every_kept,
            )
            for k in self.kept
            if every_kept or k.shrunk is not None
        ]
        return sorted(out, key=lambda item: item.index)

    def notice_bytes(self) -> int:
        if self.notice is None or not self.notice:
            return 0
        return self.notice.cost(after_attachments=bool(self.kept))

    def with_one_more(self) -> int:
        """Bytes used, the notice's as it costs once an attachment is kept."""
        notice = self.notice.cost(after_attachments=True) if self.notice else 0
        return self.used_bytes + notice

    def total_bytes(self) -> int:
        """Bytes used: the kept attachments and the notice."""
        return self.used_bytes + self.notice_bytes()

    def total_tokens(self) -> int:
        """Tokens used, the notice's by :func:`notice_tokens` (the exact total is
        checked once the walk is done)."""
        return self.used_tokens + notice_tokens(
            self.plan, self.notice, after_attachments=bool(self.kept)
        )

    def in_order(self) -> None:
        """Sort the kept attachments into packing order and number their sections
        by their places (a format that numbers them measured each at the place it
        was kept, never a shorter number than its final one: see
        :meth:`.formats.Layout.renumbered`)."""
        self.kept.sort(key=lambda kept: kept.index)
        layout = self.plan.layout
        for place, kept in enumerate(self.kept, start=1):
            if kept.place == place or not self.plan.prompt:
                continue
            before = section_bytes(kept.section)
            kept.section = layout.renumbered(kept.section, place)
            change = section_bytes(kept.section) - before
            kept.place = place
            kept.cost_prompt += change
            kept.size += change
            self.used_bytes += change


def _place(omitted: Omitted) -> int:
    return omitted.index


def section_bytes(section: tuple[str, ...] | bytes) -> int:
    return len(section) if isinstance(section, bytes) else sum(map(utf8_len, section))


_JSON_HEAD: Final = '{"body":'


def _json_tokens(meter: TokenMeter, encoded: bytes, item: Item, key: str) -> int:
    """Tokens of an item's compact JSON, its body's part counted (and cached) alone."""
    tail = b',"hash":"%s","source":%s}' % (
        item.hash.encode("ascii"),
        encode_output(item.source),
    )
    body = encoded[len(_JSON_HEAD) : len(encoded) - len(tail)].decode("utf-8")
    return (
        meter.count(_JSON_HEAD) + meter.count_body(key, body) + meter.count(tail.decode("utf-8"))
    )


#: What :func:`candidate` gives: the section's pieces, its JSON and prompt bytes,
#: its tokens.
Candidate = tuple[tuple[str, ...], int, int, int]


def candidate(plan: Plan, entry: Attachment, item: Item, variant: str, index: int) -> Candidate:
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
        tokens += _json_tokens(meter, encoded, item, entry.cache_key(variant + ".json"))
        tokens += 0 if first else 1  # the comma
    if plan.prompt:
        layout = plan.layout
        outline = variant == "outline"
        section = layout.section(index, entry.source, item.body, outline=outline)
        between = len(layout.separator)
        cost_prompt = sum(map(utf8_len, section)) + (layout.block_overhead if first else between)
        if meter is not None:
            key = entry.cache_key(section_variant(variant, layout))
            tokens += meter.count(section[0]) + meter.count_body(key, "".join(section[1:]))
            tokens += plan.block_tokens if first else min(between, 1)  # the block, or the line
    return section, cost_json, cost_prompt, tokens


def whole_tokens(
    plan: Plan,
    walked: Walked,
    entry: Attachment,
    load_body: AttachmentLoader | None,
    measured: Callable[[], Candidate] | None = None,
) -> int:
    """The exact tokens ``entry`` adds to the prompt kept whole after another
    attachment (its section, the separator before it), counted by the plan's
    meter once a walk; ``measured``: its :func:`candidate` as the next kept,
    which the walk measures to keep it (taken instead of measuring it again).
    The meter remembers the body's count: the walk that then keeps the
    attachment does not count it again, and one remembered (from an earlier
    run) is not read again where the section's first piece does not depend on
    the body. (Measured at the next place: a section's number, in the format
    that numbers them, is one token below 1,000 in either encoding.)"""
    key = (entry.hash, entry.source)
    known = walked.counted.get(key)
    if known is not None:
        return known
    assert plan.meter is not None and plan.prompt and not plan.json
    layout = plan.layout
    between = min(len(layout.separator), 1)
    place = len(walked.kept) + 1
    first = layout.first_piece(place + 1, entry.source)
    body = plan.meter.known(entry.cache_key(section_variant("full", layout)))
    if measured is not None:
        known = measured()[3] + (0 if walked.kept else between - plan.block_tokens)
    elif first is not None and body is not None:
        known = plan.meter.count(first) + body + between
    else:
        item = Item(body_of(entry, load_body), entry.hash, entry.source)
        known = candidate(plan, entry, item, "full", place + 1)[3]
    walked.counted[key] = known
    return known


def section_variant(variant: str, layout: Layout) -> str:
    """The token cache's name for a body's part of a section (the seed's names kept)."""
    name = "section" if variant == "full" else variant + ".section"
    return name if layout is SEED else f"{name}.{layout.name}"


def fits(plan: Plan, walked: Walked, size: int, tokens: int) -> bool:
    """Whether one more attachment of ``size`` bytes and ``tokens`` fits, beside
    the kept ones and the notice as it stands."""
    return fits_beside(plan, walked, walked.notice, size, tokens)


def fits_beside(
    plan: Plan, walked: Walked, notice: Notice | None, size: int = 0, tokens: int = 0
) -> bool:
    """:func:`fits`, beside ``notice`` instead of the walk's (one that would name an
    attachment fewer); its tokens by :func:`notice_tokens`."""
    notice_bytes = notice.cost(after_attachments=True) if notice else 0
    if plan.room_bytes is not None and walked.used_bytes + notice_bytes + size > plan.room_bytes:
        return False
    if plan.room_tokens is None:
        return True
    notice_cost = notice_tokens(plan, notice, after_attachments=True)
    return walked.used_tokens + notice_cost + tokens <= plan.room_tokens


def notice_tokens(plan: Plan, notice: Notice | None, *, after_attachments: bool) -> int:
    """Tokens the notice adds: estimated at half its bytes (a token is rarely
    shorter: an overestimate, without counting as the notice changes), or with
    :attr:`Plan.exact_notice` counted by the meter, with what it adds around
    itself (a separator, or the untrusted block when it opens it)."""
    if notice is None or not notice:
        return 0
    if plan.exact_notice and plan.meter is not None:
        around = min(len(plan.layout.separator), 1) if after_attachments else plan.block_tokens
        return notice.tokens(plan.meter.count) + around
    return (notice.cost(after_attachments=after_attachments) + 1) // 2


def measured(plan: Plan, cost_json: int, cost_prompt: int) -> int:
    return (cost_json if plan.json else 0) + (cost_prompt if plan.prompt else 0)


#: What a context item costs in the packet's JSON besides its body and source:
#: ``{"body":"","hash":"<64 hex>","source":""}``.
_ITEM_JSON_BYTES: Final = len(encode_output({"body": "", "hash": "0" * 64, "source": ""}))
#: What a section costs in the prompt besides its body and source: the heading's
#: words and its line break.
_SECTION_BYTES: Final = len("### Context from \n")


def floor(body: int, source: str, plan: Plan, *, first: bool) -> int:
    """The fewest bytes an attachment of ``body`` bytes can cost in what the plan
    measures: its body, its source and the fixed text around them (escaping and
    marks only add)."""
    label = utf8_len(source)
    separator = 0 if first else 1
    least = 0
    if plan.json:
        least += body + label + _ITEM_JSON_BYTES + separator
    if plan.prompt:
        layout = plan.layout
        least += body + label + _SECTION_BYTES
        least += layout.block_overhead if first else len(layout.separator)
    return least
