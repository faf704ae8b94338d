"""Packet and prompt assembly: the mandatory structure, the walk, the result.

:func:`pack_packet` is ``Ledger.pack``'s measure (the packet's JSON alone:
:mod:`.packet`, re-exported here), :func:`build_packet` is ``expand``'s
(JSON plus prompt), :func:`build_prompt` is ``prompt``'s (the prompt alone).
Each builds the mandatory structure, refuses when it alone does not fit,
walks the attachments (:mod:`.walk`) and reports the exact sizes and every
omission. Pure: no I/O, no git.

Everything measured here is measured in bytes of UTF-8:

* the *packet bytes* are the length of the packet's compact JSON encoding —
  UTF-8, keys sorted, no insignificant whitespace (what
  :func:`packet_json` returns);
* the *prompt bytes* are the length of :func:`render_prompt`'s text in UTF-8.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from ..errors import TooSmall
from .budget import DEFAULT_ENCODING, Budget
from .entries import Attachment, AttachmentLoader, AttachmentOutliner, SeedEdge, dedupe
from .formats import SEED, Layout
from .needed import advise
from .omissions import Notice, Unattached, flagged
from .packet import check_budgets, finished, mandatory, pack_attachments, pack_packet
from .render import (
    OUTPUT_CONTRACT,
    UNTRUSTED_BANNER,
    UNTRUSTED_FOOTER,
    assemble,
    guard_form,
    head_sections,
    is_guarded,
    neutralise,
    packet_json,
    path_note,
    prompt_pieces,
    render_prompt,
)
from .seed import (
    CHARS_PER_TOKEN,
    EXPAND_NOTE,
    EXPAND_REFUSAL,
    EXPAND_TOKEN_REFUSAL,
    PACK_NOTE,
    PACK_REFUSAL,
    PACK_TOKEN_REFUSAL,
    TOKENS_NOTE,
    TRUST_LINE,
    BodyLoader,
    Entry,
    Outliner,
    TokenMeter,
    dedupe_context,
    estimate_packet_tokens,
    estimate_tokens,
    refusal,
    split_budget,
    summarize_packet,
)
from .settle import back_off
from .walk import Plan, Walked, as_timestamp, walk

__all__ = [
    "CHARS_PER_TOKEN",
    "EXPAND_NOTE",
    "EXPAND_REFUSAL",
    "EXPAND_TOKEN_REFUSAL",
    "OUTPUT_CONTRACT",
    "PACK_NOTE",
    "PACK_REFUSAL",
    "PACK_TOKEN_REFUSAL",
    "TOKENS_NOTE",
    "TRUST_LINE",
    "UNTRUSTED_BANNER",
    "UNTRUSTED_FOOTER",
    "Outliner",
    "TokenMeter",
    "build_packet",
    "build_prompt",
    "dedupe_context",
    "estimate_packet_tokens",
    "estimate_tokens",
    "guard_form",
    "is_guarded",
    "neutralise",
    "pack_attachments",
    "pack_packet",
    "packet_json",
    "render_attachments",
    "render_prompt",
    "split_budget",
    "summarize_packet",
]


def _expanded_packet(
    task: Mapping[str, Any],
    files: Iterable[Any],
    tests: Iterable[Any],
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    packet = mandatory(task)
    packet["files"] = [dict(zip(("path", "note"), path_note(f), strict=True)) for f in files]
    packet["tests"] = [dict(zip(("path", "note"), path_note(t), strict=True)) for t in tests]
    for key, value in (extra or {}).items():
        packet.setdefault(str(key), value)
    return packet


def _block_tokens(meter: TokenMeter, head: list[str], base_prompt: int, layout: Layout) -> int:
    """Tokens the untrusted block adds around its attachments (banner, footer)."""
    opening = "\n\n".join(head) + layout.opening
    closing = layout.closing + "\n\n" + OUTPUT_CONTRACT + "\n"
    return meter.count(opening) + meter.count(closing) - base_prompt


def build_packet(
    task: Mapping[str, Any],
    entries: Iterable[Entry],
    max_bytes: int | None,
    *,
    max_tokens: int | None = None,
    tokens: TokenMeter | None = None,
    outline: Outliner | None = None,
    files: Iterable[Any] = (),
    tests: Iterable[Any] = (),
    extra: Mapping[str, Any] | None = None,
    now: datetime | float | None = None,
    load_body: BodyLoader | None = None,
    layout: Layout = SEED,
) -> dict[str, Any]:
    """The ``expand`` walk: the packet's JSON *plus* its rendered prompt are measured.

    Args:
        task: The task's fields (``id`` or ``task_id``, ``title``, ``objective``...).
        entries: Attachments ``{hash, source, priority, expires?, body | size}``.
        max_bytes: The budget for ``packet_bytes + prompt_bytes`` (``None``: none).
        max_tokens: The budget for ``packet_tokens + prompt_tokens`` (needs ``tokens``).
        tokens: Counts tokens exactly (see :mod:`git_hydrate.pack.tokens`).
        outline: Gives the outline of an attachment that does not fit in full.
        files: Files in play: paths, ``(path, note)`` pairs or ``{path, note}``.
        tests: Tests to write or update, same shapes.
        extra: Keys merged in with ``setdefault``: they never replace mandatory ones.
        now: The moment expiry is judged at (default: the current time).
        load_body: Reads the body of an entry that carries only its ``size``.
        layout: The prompt's format (see :mod:`git_hydrate.pack.formats`).

    Raises:
        ValidationError: the mandatory structure alone exceeds the budget.
    """
    edge = SeedEdge(entries)
    return render_attachments(
        task,
        edge,
        max_bytes,
        max_tokens=max_tokens,
        tokens=tokens,
        outline=edge.outliner(outline),
        files=files,
        tests=tests,
        extra=extra,
        now=now,
        load_body=edge.loader(load_body),
        with_json=True,
        layout=layout,
    )


def build_prompt(
    task: Mapping[str, Any],
    entries: Iterable[Entry],
    max_bytes: int | None,
    *,
    max_tokens: int | None = None,
    tokens: TokenMeter | None = None,
    outline: Outliner | None = None,
    files: Iterable[Any] = (),
    tests: Iterable[Any] = (),
    extra: Mapping[str, Any] | None = None,
    now: datetime | float | None = None,
    load_body: BodyLoader | None = None,
    pieces: bool = False,
    layout: Layout = SEED,
) -> dict[str, Any]:
    """The ``prompt`` walk: only the prompt's own UTF-8 bytes (and tokens) are measured.

    Same arguments as :func:`build_packet`; the packet is returned too (the
    prompt is rendered from it) but its size does not count. With ``pieces``,
    the result holds ``prompt_pieces`` instead of ``prompt`` and ``packet``:
    the UTF-8 bytes that join into the prompt, for writing a prompt of
    megabytes out. Without a token meter, each kept section is encoded as it
    is kept and its text dropped, so the prompt is held once, as UTF-8.

    Raises:
        ValidationError: the prompt without attachments exceeds the budget.
    """
    edge = SeedEdge(entries)
    return render_attachments(
        task,
        edge,
        max_bytes,
        max_tokens=max_tokens,
        tokens=tokens,
        outline=edge.outliner(outline),
        files=files,
        tests=tests,
        extra=extra,
        now=now,
        load_body=edge.loader(load_body),
        with_json=False,
        pieces=pieces,
        layout=layout,
    )


class _Frame(NamedTuple):
    """What a prompt walk measures around its attachments: the packet without
    them, its sections before the block, their sizes and tokens."""

    packet: dict[str, Any]
    head: list[str]
    base_json: int
    base_prompt: int
    counted: dict[str, int]


def render_attachments(
    task: Mapping[str, Any],
    attachments: Iterable[Attachment],
    max_bytes: int | None,
    *,
    max_tokens: int | None = None,
    tokens: TokenMeter | None = None,
    outline: AttachmentOutliner | None = None,
    files: Iterable[Any] = (),
    tests: Iterable[Any] = (),
    extra: Mapping[str, Any] | None = None,
    now: datetime | float | None = None,
    load_body: AttachmentLoader | None = None,
    with_json: bool,
    pieces: bool = False,
    layout: Layout = SEED,
    unattached: Sequence[Unattached] = (),
    rebuild: str | None = None,
) -> dict[str, Any]:
    """:func:`build_packet` (``with_json``) or :func:`build_prompt` of typed
    attachments (the stored-task packer's); ``unattached``: the files the task
    names that have no attachment (the notice names them, within the budget);
    ``rebuild``: the options its notice's command spells (:meth:`.Budget.options`)."""
    check_budgets(max_bytes, max_tokens, tokens)
    frame, plan = _prompt_plan(
        _expanded_packet(task, files, tests, extra), max_bytes, max_tokens, tokens, with_json
    )
    plan.outliner, plan.layout = outline, layout
    plan.lean = pieces and tokens is None
    if rebuild is None:
        rebuild = _options(max_bytes, max_tokens, tokens, outline, layout)
    plan.notice = _notice(frame.packet["task_id"], plan, unattached, with_json, rebuild)
    if plan.meter is not None:
        plan.block_tokens = _block_tokens(plan.meter, frame.head, frame.counted["base"], layout)
    ordered = dedupe(attachments)
    moment = as_timestamp(now)
    walked = walk(ordered, plan, now=moment, load_body=load_body)

    def total_tokens(state: Walked) -> int:
        assert tokens is not None
        return _count_tokens(tokens, frame, state, with_json)

    back_off(walked, max_tokens, total_tokens, plan.notice)
    if tokens is not None and "prompt" not in frame.counted:
        total_tokens(walked)
    frame.packet["context"] = [k.item.as_dict() for k in walked.kept]
    result = _rendered(frame, walked, pieces, max_bytes)
    if tokens is not None:
        result["token_count"] = frame.counted["prompt"]
        if with_json:
            result["packet_tokens"] = frame.counted["packet"]
            result["total_tokens"] = frame.counted["prompt"] + frame.counted["packet"]
    result["note"] = EXPAND_NOTE if tokens is None else TOKENS_NOTE
    advice: dict[str, int] = {}
    if not with_json:
        base = (frame.base_prompt, frame.counted.get("base", 0))
        advice = advise(walked, (ordered, moment), plan, (base, load_body))
    _account(result, walked, (ordered, unattached), advice)
    return finished(result, walked, tokens, max_tokens, outline)


def _account(
    result: dict[str, Any],
    walked: Walked,
    given: tuple[Sequence[Attachment], Sequence[Unattached]],
    advice: dict[str, int],
) -> None:
    """What the result says of the attachments (``given``: in packing order, and
    the files the task names that have none): omitted, and for ``prompt`` how
    many were kept, what all would need (``advice``: :func:`.needed.advise`'s),
    the named ones not held whole and how value per byte decided."""
    ordered, unattached = given
    result["omitted"] = walked.omitted_parts()
    if not walked.plan.json:
        result["kept"] = len(walked.kept)
        result["attachments"] = len(ordered)
        result.update(advice)
    # (from what was left out and shrunk, whether or not the notice fit)
    named = flagged(walked.missing(ordered), ordered, unattached)
    if named:
        result["flagged"] = named
    if walked.decisions:
        result["decisions"] = walked.decisions


def _prompt_plan(
    packet: dict[str, Any],
    max_bytes: int | None,
    max_tokens: int | None,
    tokens: TokenMeter | None,
    with_json: bool,
) -> tuple[_Frame, Plan]:
    """The mandatory part's sizes, and the walk's plan for the room left.

    Raises:
        TooSmall: the mandatory part alone does not fit.
    """
    base_json = len(packet_json(packet))
    head = head_sections(packet)
    base_prompt = len(assemble(head, []).encode("utf-8"))
    base_bytes = base_prompt + (base_json if with_json else 0)
    if max_bytes is not None and base_bytes > max_bytes:
        raise TooSmall(refusal(EXPAND_REFUSAL, base_bytes, "--max-bytes"))
    meter = tokens if max_tokens is not None else None
    counted: dict[str, int] = {}
    base_tokens = 0
    if meter is not None:
        counted["base"] = base_tokens = meter.count(assemble(head, []))
        if with_json:
            base_tokens += meter.count(packet_json(packet).decode("utf-8"))
        if max_tokens is not None and base_tokens > max_tokens:
            raise TooSmall(refusal(EXPAND_TOKEN_REFUSAL, base_tokens, "--max-tokens"))
    plan = Plan(
        json=with_json,
        prompt=True,
        room_bytes=None if max_bytes is None else max_bytes - base_bytes,
        room_tokens=None if max_tokens is None else max_tokens - base_tokens,
        meter=meter,
        value_per_byte=not with_json,
    )
    return _Frame(packet, head, base_json, base_prompt, counted), plan


def _count_tokens(tokens: TokenMeter, frame: _Frame, state: Walked, with_json: bool) -> int:
    """The exact tokens of the prompt (and the packet) ``state`` holds."""
    frame.packet["context"] = [k.item for k in state.kept]  # (an Item encodes as its dict)
    sections = [cast(tuple[str, ...], k.section) for k in state.kept] + _notice_part(state)
    frame.counted["prompt"] = tokens.count(assemble(frame.head, sections, state.plan.layout.frame))
    packet = tokens.count(packet_json(frame.packet).decode("utf-8")) if with_json else 0
    frame.counted["packet"] = packet
    return frame.counted["prompt"] + packet


def _rendered(
    frame: _Frame, walked: Walked, pieces: bool, max_bytes: int | None
) -> dict[str, Any]:
    """The prompt (or its pieces) and its sizes; the packet with it."""
    plan = walked.plan
    notice = _notice_part(walked)
    packet_bytes = frame.base_json + sum(k.cost_json for k in walked.kept)
    prompt_bytes = frame.base_prompt + sum(k.cost_prompt for k in walked.kept)
    prompt_bytes += walked.notice_bytes() if notice else 0
    result: dict[str, Any] = {}
    frame_texts = plan.layout.frame
    if pieces:
        mixed: list[str | bytes]
        if plan.lean:
            lean: list[tuple[bytes, ...]] = [(cast(bytes, k.section),) for k in walked.kept]
            lean += [tuple(p.encode("utf-8") for p in part) for part in notice]
            mixed = list(prompt_pieces(frame.head, lean, frame_texts))
        else:
            texts = [cast(tuple[str, ...], k.section) for k in walked.kept] + notice
            mixed = list(prompt_pieces(frame.head, texts, frame_texts))
        encoded = [p.encode("utf-8") if isinstance(p, str) else p for p in mixed]
        result["prompt_pieces"] = encoded
        characters = sum(len(p) if p.isascii() else len(p.decode("utf-8")) for p in encoded)
    else:
        result["packet"] = frame.packet
        texts = [cast(tuple[str, ...], k.section) for k in walked.kept] + notice
        result["prompt"] = assemble(frame.head, texts, frame_texts)
        characters = len(result["prompt"])
    result["packet_bytes"] = packet_bytes
    result["prompt_bytes"] = prompt_bytes
    if plan.json:
        result["total_bytes"] = packet_bytes + prompt_bytes
    result["max_bytes"] = max_bytes
    result["token_estimate"] = max(1, math.ceil(characters / CHARS_PER_TOKEN)) if characters else 0
    return result


def _options(
    max_bytes: int | None,
    max_tokens: int | None,
    tokens: TokenMeter | None,
    outline: AttachmentOutliner | None,
    layout: Layout,
) -> str:
    """The options that build this prompt again (see :meth:`.Budget.options`)."""
    encoding = tokens.encoding if tokens is not None else DEFAULT_ENCODING
    return Budget(max_bytes, max_tokens, encoding, outline is not None, layout.name).options()


def _notice(
    task_id: str, plan: Plan, unattached: Sequence[Unattached], with_json: bool, rebuild: str
) -> Notice:
    """The notice of a walk under ``plan`` (its named lines within a share of the room)."""
    return Notice(
        task_id,
        plan.layout,
        max_listed_bytes=_listing_room(plan.room_bytes, plan.room_tokens),
        unattached=tuple(unattached),
        command="expand" if with_json else "prompt",
        rebuild=rebuild,
    )


def _listing_room(room_bytes: int | None, room_tokens: int | None) -> int | None:
    """The most bytes the notice's named lines may take: a quarter of the room, of
    each budget there is (a quarter of the token room as bytes at two a token, the
    notice's own estimate: :func:`.measure.notice_tokens`)."""
    limits = [max(0, room) // 4 * per for room, per in ((room_bytes, 1), (room_tokens, 2))
              if room is not None]  # fmt: skip
    return min(limits) if limits else None


def _notice_part(walked: Walked) -> list[tuple[str, ...]]:
    """The ``### Not included`` section as the block's last part (none when
    nothing is missing, or when the budget cannot hold it)."""
    if walked.notice is None or not walked.notice or not walked.notice_fits:
        return []
    return [(walked.notice.section(),)]
