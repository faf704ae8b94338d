"""The ready queue, the tasks a holder holds, and when a claim is stale.

A task is *ready* when it is ``open``, nobody holds it, and every task it
depends on is ``done`` (live or archived). ``ready`` orders them by task
priority (1 first), then age, then id.

A claim is *stale* when neither the claim nor a checkpoint is more recent
than a given age, counted on two clocks: from the later of the claim's own
date (the holder's clock) and the moment this clone first saw that claim
(:mod:`git_hydrate.sightings`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final, cast

from .dependencies import (
    blocking_graph,
    cycles,
    queue_order,
    queue_summaries,
    station_of,
    waiting_for,
)
from .listing import task_filter
from .model import INITIAL_STATION
from .results import ReadyItem
from .sightings import Sightings, activity, claim_start
from .taskrefs import TaskRefs

__all__ = ["CLAIMED_STATION", "STEALABLE", "held", "is_stale", "ready"]

#: The station a claim moves a task to.
CLAIMED_STATION: Final = "in_progress"
#: Stations a held task may be at and still count as stale (taken over by ``--steal``).
STEALABLE: Final = (INITIAL_STATION, CLAIMED_STATION, "blocked")
#: Stations a held task may be at and still be its holder's work (``ready --mine``).
_HELD: Final = (INITIAL_STATION, CLAIMED_STATION, "blocked", "review")
_ITEM_FIELDS: Final = (
    "task_id",
    "title",
    "status",
    "kind",
    "priority",
    "tags",
    "attachments",
    "created_at",
    "depends_on",
    "assignee",
    "claimed_at",
)


def is_stale(
    sightings: Sightings,
    task_id: str,
    assignee: str,
    claimed_at: str,
    last_checkpoint_at: str,
    now: float,
    age: float,
) -> bool:
    """Held, and neither the claim nor any checkpoint is younger than ``age`` on
    both clocks (see :func:`git_hydrate.sightings.claim_start`)."""
    if not assignee:
        return False
    seen = sightings.seen(task_id, activity(assignee, claimed_at, last_checkpoint_at))
    start = claim_start(max(claimed_at, last_checkpoint_at), seen)
    return start is None or now - start >= age


def _item(item: Mapping[str, Any], stale: bool) -> ReadyItem:
    return cast(ReadyItem, {key: item[key] for key in _ITEM_FIELDS} | {"stale": stale})


def _note_damaged(summaries: Mapping[str, Mapping[str, Any]], into: list[str] | None) -> None:
    """Add to ``into`` (when given) the ids of the damaged tasks among ``summaries``."""
    if into is not None:
        into += [task_id for task_id, item in summaries.items() if "error" in item]


def ready(
    refs: TaskRefs,
    *,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
    include_stale: float | None = None,
    now: datetime | float | None = None,
    damaged: list[str] | None = None,
) -> list[ReadyItem]:
    """The ready tasks, in the order workers should take them.

    Args:
        kind: Only these kinds (any of them).
        tag: Only tasks with all these tags.
        include_stale: Also list held tasks whose claim is stale at this age
            (seconds); they carry ``stale: True``.
        now: The moment staleness is judged at (default: now).
        damaged: Given, the ids of the damaged tasks left out are added to it.
    """
    match = task_filter(kind=kind, tag=tag)
    moment = refs.now(now)
    summaries = queue_summaries(refs)
    stations = station_of(refs, summaries)
    blocking = blocking_graph(summaries)  # dependencies, then children
    looped = cycles(blocking)
    sightings = Sightings(refs.repo)
    found: list[ReadyItem] = []
    _note_damaged(summaries, damaged)
    for task_id, item in summaries.items():
        if "error" in item or not match(item):
            continue
        if item["assignee"]:
            stale = (
                include_stale is not None
                and item["status"] in STEALABLE
                and is_stale(
                    sightings,
                    task_id,
                    item["assignee"],
                    item["claimed_at"],
                    item["last_checkpoint_at"],
                    moment,
                    include_stale,
                )
            )
            if not stale:
                continue
        elif (
            item["status"] != INITIAL_STATION
            or task_id in looped
            or waiting_for(blocking[task_id], stations)
        ):
            continue
        found.append(_item(item, bool(item["assignee"])))
    found.sort(key=queue_order)
    return found


def held(
    refs: TaskRefs,
    holder: str,
    *,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
    stations: Iterable[str] = _HELD,
    damaged: list[str] | None = None,
) -> list[ReadyItem]:
    """The tasks ``holder`` holds (not done or cancelled), oldest claim first;
    ``damaged``, given, gets the ids of the damaged tasks left out."""
    match = task_filter(kind=kind, tag=tag)
    wanted = set(stations)
    summaries = queue_summaries(refs)
    _note_damaged(summaries, damaged)
    found = [
        _item(item, False)
        for item in summaries.values()
        if "error" not in item
        and item["assignee"] == holder
        and item["status"] in wanted
        and match(item)
    ]
    found.sort(key=lambda item: (item["claimed_at"] or "~", item["task_id"]))
    return found
