"""The board's data: one card per task, in columns by station, filtered and paged.

Cards come from the queue summaries (:func:`git_hydrate.dependencies.queue_summaries`,
cached by task tip on disk), so a board of ten thousand tasks reads the refs and
one small file; the cards built from them, and the filter values on offer, are
kept in memory until a ref under ``refs/hydrate/`` moves
(:class:`~git_hydrate.web.watch.RefsWatch`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final

from ..dependencies import children_of, queue_summaries, station_of
from ..listing import archived_tasks
from ..model import STATIONS
from ..taskrefs import TaskRefs
from .watch import RefsWatch

__all__ = ["CARD_LIST_LIMIT", "FACET_LIMIT", "SETTLED", "Board", "Filters", "card", "claim_age"]

#: Stations at which a dependency or a part no longer holds a task back.
SETTLED: Final = ("done", "cancelled")
#: The most values a filter list offers (the most used first).
FACET_LIMIT: Final = 200
#: The dependencies, and the parts, a card lists (the rest: counted).
CARD_LIST_LIMIT: Final = 20


def claim_age(claimed_at: str, now: float) -> int | None:
    """Seconds since ``claimed_at`` (ISO 8601), or ``None`` when unknown."""
    if not claimed_at:
        return None
    try:
        moment = datetime.fromisoformat(claimed_at).timestamp()
    except ValueError:
        return None
    return max(0, int(now - moment))


def card(
    summary: Mapping[str, Any], stations: Mapping[str, str], children: Iterable[str] = ()
) -> dict[str, Any]:
    """The card of one live task (its queue summary and its children's ids), or of
    a damaged one."""
    if "error" in summary:
        return {
            "task_id": summary["task_id"],
            "title": "",
            "status": "open",
            "kind": "",
            "priority": 3,
            "tags": [],
            "holder": "",
            "claimed_at": "",
            "depends": [],
            "waiting": False,
            "parent": "",
            "children": [],
            "attachments": 0,
            "archived": False,
            "error": summary["error"],
        }
    depends = [
        {
            "task_id": dep,
            "station": stations.get(dep),  # (None: no task here, as status --json says)
            "waiting": stations.get(dep) != "done",
        }
        for dep in summary.get("depends_on", [])
    ]
    parts = [
        {"task_id": child, "station": stations[child], "waiting": stations[child] not in SETTLED}
        for child in children
    ]
    return {
        "task_id": summary["task_id"],
        "title": summary["title"],
        "status": summary["status"],
        "kind": summary["kind"],
        "priority": summary["priority"],
        "tags": list(summary["tags"]),
        "holder": summary.get("assignee", ""),
        "claimed_at": summary.get("claimed_at", ""),
        "depends": depends,
        "waiting": any(d["waiting"] for d in [*depends, *parts]),
        "parent": summary.get("parent", "") or "",
        "children": parts,
        "attachments": summary["attachments"],
        "archived": False,
    }


def _archived_cards(refs: TaskRefs) -> list[dict[str, Any]]:
    cards = []
    for item in archived_tasks(refs):
        cards.append(
            {
                "task_id": item["task_id"],
                "title": item["title"],
                "status": item["status"],
                "kind": item["kind"],
                "priority": item["priority"],
                "tags": list(item["tags"]),
                "holder": item["assignee"],
                "claimed_at": "",
                "depends": [],
                "waiting": False,
                "parent": item["parent"],
                "children": [],
                "attachments": item["attachments"],
                "archived": True,
                "archived_at": item["archived_at"],
            }
        )
    return cards


class Filters:
    """Which cards a board shows: all of ``tags``, any of ``kinds``, any of
    ``holders`` (``""`` for no holder: a claim's holder name is never empty, so no
    one's name reads as nobody), archived tasks or not."""

    def __init__(
        self,
        tags: Iterable[str] = (),
        kinds: Iterable[str] = (),
        holders: Iterable[str] = (),
        archived: bool = False,
    ) -> None:
        self.tags = list(tags)
        self.kinds = set(kinds)
        self.holders = set(holders)
        self.archived = archived

    def match(self, item: Mapping[str, Any]) -> bool:
        if self.kinds and item["kind"] not in self.kinds:
            return False
        if self.holders and item["holder"] not in self.holders:
            return False
        return all(tag in item["tags"] for tag in self.tags)


def _order(item: Mapping[str, Any]) -> tuple[int, str]:
    return (item["priority"], item["task_id"])


class Board:
    """The cards of every task, rebuilt only when the refs move."""

    def __init__(self, watch: RefsWatch | None = None) -> None:
        self.watch = watch
        self._version = ""
        self._live: list[dict[str, Any]] = []
        self._archived: list[dict[str, Any]] | None = None
        self._facets: dict[bool, dict[str, list[dict[str, Any]]]] = {}

    def cards(self, refs: TaskRefs, version: str, archived: bool) -> list[dict[str, Any]]:
        """Every card (sorted by priority, then id), archived ones too if asked.

        When ``version`` is the one the board's :class:`RefsWatch` read last,
        the task tips that read found are used: the refs are read once.
        """
        if version != self._version:
            tips = self.watch.tips_of(version) if self.watch is not None else None
            live = queue_summaries(refs, tips)
            stations = station_of(refs, live)
            parts = children_of(live)
            cards = (card(s, stations, parts.get(t, ())) for t, s in live.items())
            self._live = sorted(cards, key=_order)
            self._archived = None
            self._facets = {}
            self._version = version
        if not archived:
            return self._live
        if self._archived is None:
            self._archived = sorted(_archived_cards(refs), key=_order)
        return sorted([*self._live, *self._archived], key=_order)

    def columns(
        self,
        refs: TaskRefs,
        version: str,
        filters: Filters,
        limit: int,
        now: float,
    ) -> dict[str, Any]:
        """The board: each station's first ``limit`` cards and its total, the
        filter values on offer, and the version the board was read at."""
        cards = self.cards(refs, version, filters.archived)
        shown = [c for c in cards if filters.match(c)]
        by_station: dict[str, list[dict[str, Any]]] = {s: [] for s in STATIONS}
        for item in shown:
            by_station.setdefault(item["status"], []).append(item)
        return {
            "version": version,
            "total": len(cards),
            "shown": len(shown),
            "columns": [
                {
                    "station": station,
                    "total": len(items),
                    "items": _aged(items[:limit], now),
                }
                for station, items in by_station.items()
            ],
            "facets": self._facets.setdefault(filters.archived, _facets(cards)),
        }

    def page(
        self,
        refs: TaskRefs,
        version: str,
        filters: Filters,
        station: str | None,
        offset: int,
        limit: int,
        now: float,
    ) -> dict[str, Any]:
        """One page of the filtered cards (of one station, or of all)."""
        cards = self.cards(refs, version, filters.archived)
        shown = [
            c for c in cards if (station is None or c["status"] == station) and filters.match(c)
        ]
        return {
            "version": version,
            "station": station,
            "total": len(shown),
            "offset": offset,
            "items": _aged(shown[offset : offset + limit], now),
        }


def _aged(items: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
    return [
        {**item, **_listed(item), "claim_age": claim_age(item["claimed_at"], now)}
        for item in items
    ]


def _listed(item: Mapping[str, Any]) -> dict[str, Any]:
    """What a card sends of its dependencies and parts: the first
    :data:`CARD_LIST_LIMIT` of each and how many more, and how many parts are open
    (a task of 100,000 dependencies made every board answer 5 MB; the graph keeps
    them all, the task's page the first :data:`~git_hydrate.results.SHOWN_ITEMS`)."""
    depends, children = item["depends"], item["children"]
    return {
        "depends": depends[:CARD_LIST_LIMIT],
        "depends_more": max(0, len(depends) - CARD_LIST_LIMIT),
        "children": children[:CARD_LIST_LIMIT],
        "children_more": max(0, len(children) - CARD_LIST_LIMIT),
        "parts_open": sum(1 for child in children if child["waiting"]),
    }


def _facets(cards: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    tags: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    holders: Counter[str] = Counter()
    for item in cards:
        tags.update(item["tags"])
        if item["kind"]:
            kinds[item["kind"]] += 1
        holders[item["holder"]] += 1  # ("": nobody, as on the cards)

    def listed(counter: Counter[str]) -> list[dict[str, Any]]:
        top = sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:FACET_LIMIT]
        return [{"value": value, "count": count} for value, count in top]

    return {"tags": listed(tags), "kinds": listed(kinds), "holders": listed(holders)}
