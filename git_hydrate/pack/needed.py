"""The budget that would hold every attachment whole: ``prompt``'s advice.

The summary line's "everything would fit in about N bytes" (``needed_bytes``;
``needed_tokens`` under a token budget) is what the walk (:mod:`.walk`) itself
would measure with every live attachment kept whole, in packing order: each
section as :func:`.measure.candidate` measures it at its place (its body
escaped as the format escapes it), and the notice that prompt still carries —
the files the task names that have no attachment, the expired attachments —
at its cost. So building at the advised budget keeps every attachment whole.
The bodies the walk did not keep whole are read here when they come to at most
:data:`READ_AT_MOST` bytes in all (a body it kept is not read again: a lean
walk's kept section, held as bytes, is measured at its new place); else
none is, and each one's recorded size stands in for its body (escapes and
marks only add: the figure may then be a little low, an "about" of megabytes).
Tokens are the walk's sum of parts, the notice's estimated as the walk
estimates it (a body not read: the walk's count of it when it made one, else its
size over four; no count of it is remembered): the exact count of the whole is
rarely a token per attachment off, almost always under. Pure: no I/O but the loader's, no git.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from .entries import Attachment, AttachmentLoader, Item
from .measure import (
    Kept,
    Plan,
    Walked,
    body_of,
    candidate,
    min_body_bytes,
    notice_tokens,
    section_bytes,
)
from .omissions import Missing, Notice
from .seed import CHARS_PER_TOKEN, TokenMeter

__all__ = ["READ_AT_MOST", "advise", "needed"]

#: The most bytes of the bodies the walk did not read that the advice reads (all of them,
#: or none): beyond, each body's recorded size stands in for its cost (a 64 KiB prompt of a
#: 30,000-file task leaves out 10 MB, which read for one figure doubled the command's time).
READ_AT_MOST: Final = 1 << 20


def advise(
    walked: Walked,
    given: tuple[Sequence[Attachment], float],
    plan: Plan,
    read: tuple[tuple[int, int], AttachmentLoader | None],
) -> dict[str, int]:
    """``prompt``'s advice: ``needed_bytes``, and ``needed_tokens`` under a token
    budget (``given``: the attachments in packing order and the moment; ``read``:
    the bytes and tokens of the prompt without its block, and the loader)."""
    (ordered, moment), ((base_bytes, base_tokens), load_body) = given, read
    block_bytes, block_tokens = needed(walked, ordered, moment, plan, load_body)
    advice = {"needed_bytes": base_bytes + block_bytes}
    if plan.meter is not None:
        advice["needed_tokens"] = base_tokens + block_tokens
    return advice


def needed(
    walked: Walked,
    entries: Sequence[Attachment],
    now: float,
    plan: Plan,
    load_body: AttachmentLoader | None,
) -> tuple[int, int]:
    """Bytes and tokens (``0`` without a meter) the block of ``plan``'s prompt
    would add with every live attachment of ``entries`` whole (``walked``: the
    walk made, whose kept bodies are not read again; ``plan``: the walk's, its
    notice the one it began with)."""
    whole = {k.index: k for k in walked.kept if k.shrunk is None}
    notice = _notice(plan.notice)
    live = [e for i, e in enumerate(entries) if i not in whole and not _expired(e, now)]
    # (every body left out read, or none: some read would not make the figure exact)
    reading = sum(map(min_body_bytes, live)) <= READ_AT_MOST
    total_bytes = total_tokens = place = 0
    for index, entry in enumerate(entries):
        if _expired(entry, now):
            if notice is not None:
                notice.add(
                    Missing(
                        index, entry.hash, entry.source, min_body_bytes(entry), "expired", False
                    )
                )
            continue
        place += 1
        kept = whole.get(index)
        if kept is not None and plan.lean:  # (its body not held: its section is)
            cost_json, cost_prompt = _moved(plan, kept, place)
            total_bytes += (cost_json if plan.json else 0) + (cost_prompt if plan.prompt else 0)
            continue
        body = kept.item.body if kept is not None else None
        size = 0  # (a body read, or at hand: measured whole)
        if body is None and reading:
            body = body_of(entry, load_body)
        elif body is None:
            size = min_body_bytes(entry)
        item = Item(body or "", entry.hash, entry.source)
        sized = plan if not size or plan.meter is None else _sized(plan, size)
        _, cost_json, cost_prompt, tokens = candidate(sized, entry, item, "full", place)
        total_bytes += (cost_json if plan.json else 0) + (cost_prompt if plan.prompt else 0)
        total_bytes += size * (int(plan.json) + int(plan.prompt))
        total_tokens += tokens
    if notice is not None and notice:
        total_bytes += notice.cost(after_attachments=place > 0)
        if plan.meter is not None:
            total_tokens += notice_tokens(plan, notice, after_attachments=place > 0)
    return total_bytes, total_tokens


def _sized(plan: Plan, size: int) -> Plan:
    """``plan`` measuring a body not read, of ``size`` bytes, by :class:`_SizedBody`."""
    assert plan.meter is not None
    return replace(plan, meter=_SizedBody(plan.meter, size))


class _SizedBody:
    """A meter for a body that was not read: its count under its cache key when the
    walk made one, else its size over four beside the count of the text without it.
    It remembers nothing: the count of a section without its body, kept under the
    body's key, would be every later walk's count of that file (a few tokens for a
    file of thousands), and a count the walk made is the body's whole count, not a
    part to add an estimate to."""

    def __init__(self, meter: TokenMeter, size: int) -> None:
        self.meter = meter
        self.size = size

    @property
    def encoding(self) -> str:
        return self.meter.encoding

    def count(self, text: str) -> int:
        return self.meter.count(text)

    def count_body(self, key: str, text: str) -> int:
        known = self.meter.known(key)
        if known is not None:
            return known
        return self.meter.count(text) + math.ceil(self.size / CHARS_PER_TOKEN)

    def known(self, key: str) -> int | None:
        return self.meter.known(key)


def _moved(plan: Plan, kept: Kept, place: int) -> tuple[int, int]:
    """The JSON and prompt bytes of ``kept`` (a lean walk's: its section's bytes, no
    body) as the ``place``-th section, from what it cost at its own place. (A lean
    walk counts no tokens.)"""
    first = place == 1
    cost_json = kept.cost_json - (0 if kept.place == 1 else 1) + (0 if first else 1)
    if not plan.prompt:
        return cost_json, 0
    layout = plan.layout
    size = section_bytes(layout.renumbered(kept.section, place))
    return cost_json, size + (layout.block_overhead if first else len(layout.separator))


def _expired(entry: Attachment, now: float) -> bool:
    return entry.expires is not None and entry.expires <= now


def _notice(begun: Notice | None) -> Notice | None:
    """A notice like the one the walk began with, empty, naming as many as it may."""
    if begun is None:
        return None
    return Notice(
        begun.task_id,
        begun.layout,
        unattached=begun.unattached,
        command=begun.command,
        rebuild=begun.rebuild,
    )
