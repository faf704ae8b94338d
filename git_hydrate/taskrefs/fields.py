"""Fields a newer git-hydrate wrote that this one does not know: found, kept or refused."""

from __future__ import annotations

from typing import Any

import msgspec

from .. import codec
from ..errors import Conflict
from ..model import LINKS_FANNED_FORMAT, LinkList
from .layout import TaskState

__all__ = ["fields_to_keep", "unknown_link_fields", "unknown_task_fields"]


def unknown_task_fields(task_id: str, state: TaskState) -> tuple[dict[str, Any], list[str]]:
    """The fields of ``task.json`` a newer version of the same format wrote.

    Returns the top-level ones (name to value, to write back as they were)
    and the paths of nested ones (inside a checkpoint, say), which cannot be
    kept.
    """
    extras: dict[str, Any] = {}
    nested: list[str] = []
    if state.raw_task and codec.encode(state.task) != state.raw_task:
        raw = codec.decode_json(state.raw_task, f"task {task_id}: task.json")
        for path in codec.lost_fields(raw, msgspec.to_builtins(state.task)):
            key = path[2:]
            if "." in key or "[" in key:
                nested.append(f"task.json {path}")
            else:
                extras[key] = raw[key]
    return extras, nested


def unknown_link_fields(task_id: str, state: TaskState) -> list[str]:
    """The paths of link fields a newer version wrote (in ``links.json``, or in the
    ``links/<a>.json`` files read), which this one would drop."""
    if state.shards is not None:
        lost = []
        for prefix, stored in sorted(state.raw_shards.items()):
            group = state.shards.get(prefix, [])
            kept = codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group))
            if kept != stored:
                where = f"links/{prefix}.json"
                raw = codec.decode_json(stored, f"task {task_id}: {where}")
                lost += [f"{where} {p}" for p in codec.lost_fields(raw, msgspec.json.decode(kept))]
        return lost
    if not state.raw_links:
        return []
    kept = codec.encode(LinkList(links=state.links))
    if kept == state.raw_links:
        return []
    raw = codec.decode_json(state.raw_links, f"task {task_id}: links.json")
    built = msgspec.json.decode(kept)
    return [f"links.json {p}" for p in codec.lost_fields(raw, built)]


def fields_to_keep(task_id: str, state: TaskState) -> dict[str, Any]:
    """Fields of ``task.json`` a newer version of the same format wrote, to keep.

    A write must not drop them: top-level ones are returned to be written
    back as they were; one inside a nested value (a checkpoint, a link) cannot
    be kept, so the write is refused, naming it.

    Raises:
        Conflict: a field this version does not know would be lost.
    """
    extras, nested = unknown_task_fields(task_id, state)
    nested += unknown_link_fields(task_id, state)
    if nested:
        shown = ", ".join(nested[:5]) + (f" and {len(nested) - 5} more" if len(nested) > 5 else "")
        raise Conflict(
            f"task {task_id} holds fields this git-hydrate does not know ({shown}); "
            "a write would drop them: upgrade git-hydrate to change this task"
        )
    return extras
