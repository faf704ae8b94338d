"""The packet: its mandatory structure, and ``Ledger.pack``'s walk.

:func:`pack_packet` measures the packet's compact JSON alone (UTF-8, keys
sorted, no insignificant whitespace: :func:`.render.packet_json`); the prompt's
walks (:mod:`.assemble`) start from the same :func:`mandatory` structure and
end with the same :func:`finished` keys. Pure: no I/O, no git.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..errors import Conflict, ValidationError
from .entries import Attachment, AttachmentLoader, AttachmentOutliner, SeedEdge, dedupe
from .omissions import Unattached, flagged
from .render import packet_json
from .seed import (
    PACK_NOTE,
    PACK_REFUSAL,
    PACK_TOKEN_REFUSAL,
    TOKENS_NOTE,
    TRUST_LINE,
    BodyLoader,
    Entry,
    Outliner,
    TokenMeter,
    refusal,
)
from .settle import back_off
from .walk import Plan, Walked, as_timestamp, walk

__all__ = ["check_budgets", "finished", "mandatory", "pack_attachments", "pack_packet"]


def _check_budget(max_bytes: int | None, name: str = "max_bytes") -> None:
    if max_bytes is None:
        return
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValidationError(f"{name} must be a positive integer, not {max_bytes!r}")


def check_budgets(max_bytes: int | None, max_tokens: int | None, meter: Any) -> None:
    _check_budget(max_bytes)
    _check_budget(max_tokens, "max_tokens")
    if max_bytes is None and max_tokens is None:
        raise ValidationError("a budget is needed: max_bytes, max_tokens or both")
    if max_tokens is not None and meter is None:
        raise ValidationError("max_tokens needs a token meter")


def mandatory(task: Mapping[str, Any]) -> dict[str, Any]:
    task_id = task.get("task_id", task.get("id"))
    checkpoint = task.get("checkpoint")
    if checkpoint is not None:
        checkpoint = {
            "summary": str(checkpoint["summary"]),
            "evidence": str(checkpoint["evidence"]),
            "next_step": str(checkpoint["next_step"]),
        }
    return {
        "task_id": str(task_id),
        "title": str(task.get("title") or task_id),
        "objective": str(task.get("objective") or ""),
        "acceptance": str(task.get("acceptance") or ""),
        "acceptance_criteria": [str(c) for c in task.get("acceptance_criteria") or ()],
        "scope": [str(s) for s in task.get("scope") or ()],
        "status": str(task.get("status") or "open"),
        "kind": str(task.get("kind") or "code"),
        "priority": int(task.get("priority") or 2),
        "token_budget": int(task.get("token_budget") or 0),
        "tags": [str(t) for t in task.get("tags") or ()],
        "checkpoint": checkpoint,
        "trust": TRUST_LINE,
        "context": [],
    }


def _meter_fields(meter: TokenMeter | None, max_tokens: int | None) -> dict[str, Any]:
    if meter is None:
        return {}
    return {"max_tokens": max_tokens, "token_encoding": meter.encoding}


def pack_packet(
    task: Mapping[str, Any],
    entries: Iterable[Entry],
    max_bytes: int | None,
    *,
    max_tokens: int | None = None,
    tokens: TokenMeter | None = None,
    outline: Outliner | None = None,
    now: datetime | float | None = None,
    load_body: BodyLoader | None = None,
) -> dict[str, Any]:
    """The ``Ledger.pack`` walk: the packet's JSON alone is measured.

    With ``max_tokens`` (and a ``tokens`` meter), its tokens are measured too;
    with ``outline``, an attachment that does not fit in full may be kept as
    its outline (listed in ``shrunk``).

    Raises:
        Conflict: the mandatory structure alone exceeds ``max_bytes`` (or ``max_tokens``).
    """
    edge = SeedEdge(entries)
    return pack_attachments(
        task,
        edge,
        max_bytes,
        max_tokens=max_tokens,
        tokens=tokens,
        outline=edge.outliner(outline),
        now=now,
        load_body=edge.loader(load_body),
    )


def pack_attachments(
    task: Mapping[str, Any],
    attachments: Iterable[Attachment],
    max_bytes: int | None,
    *,
    max_tokens: int | None = None,
    tokens: TokenMeter | None = None,
    outline: AttachmentOutliner | None = None,
    now: datetime | float | None = None,
    load_body: AttachmentLoader | None = None,
    unattached: Sequence[Unattached] = (),
) -> dict[str, Any]:
    """:func:`pack_packet` of typed attachments (the stored-task packer's);
    ``unattached``: the files the task names that have no attachment."""
    check_budgets(max_bytes, max_tokens, tokens)
    packet = mandatory(task)
    base = len(packet_json(packet))
    if max_bytes is not None and base > max_bytes:
        raise Conflict(refusal(PACK_REFUSAL, base, "--max-bytes"))
    base_tokens = 0
    if tokens is not None:
        base_tokens = tokens.count(packet_json(packet).decode("utf-8"))
        if max_tokens is not None and base_tokens > max_tokens:
            raise Conflict(refusal(PACK_TOKEN_REFUSAL, base_tokens, "--max-tokens"))
    plan = Plan(
        json=True,
        prompt=False,
        room_bytes=None if max_bytes is None else max_bytes - base,
        room_tokens=None if max_tokens is None else max_tokens - base_tokens,
        meter=tokens if max_tokens is not None else None,
        outliner=outline,
    )
    ordered = dedupe(attachments)
    walked = walk(ordered, plan, now=as_timestamp(now), load_body=load_body)

    def total_tokens(state: Walked) -> int:
        assert tokens is not None
        packet["context"] = [k.item for k in state.kept]  # (an Item encodes as its dict)
        return tokens.count(packet_json(packet).decode("utf-8"))

    token_count = back_off(walked, max_tokens, total_tokens)
    if token_count is None and tokens is not None:
        token_count = total_tokens(walked)
    packet["context"] = [k.item.as_dict() for k in walked.kept]
    packet_bytes = base + sum(k.cost_json for k in walked.kept)
    result = {
        "packet": packet,
        "packet_bytes": packet_bytes,
        "max_bytes": max_bytes,
        "token_estimate": packet_bytes // 4,
        "token_count": token_count,
        "note": PACK_NOTE if tokens is None else TOKENS_NOTE,
        "omitted": walked.omitted_parts(),
    }
    named = flagged(walked.missing(ordered), ordered, unattached)
    if named:
        result["flagged"] = named
    return finished(result, walked, tokens, max_tokens, outline)


def finished(
    result: dict[str, Any],
    walked: Walked,
    tokens: TokenMeter | None,
    max_tokens: int | None,
    outline: AttachmentOutliner | None,
) -> dict[str, Any]:
    result.update(_meter_fields(tokens, max_tokens))
    shrunk = [k.shrunk.part() for k in walked.kept if k.shrunk is not None]
    if outline is not None and shrunk:
        # (only when something was: outlines are on by default, and a result with
        # nothing shrunk is byte for byte the seed's)
        result["shrunk"] = shrunk
    return result
