"""One task's page: its fields, timeline, attachments at a budget, prompt and commits.

What a budget keeps, outlines and drops is what :meth:`git_hydrate.Ledger.prompt`
says at that budget: the same packer, the same numbers as ``git hydrate prompt
-v``. A packing is kept in memory for a few seconds, so the attachments' pages
and the prompt of one budget are packed once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from ..dependencies import children_of, queue_summaries, station_of
from ..errors import HydrateError
from ..ledger import Ledger
from ..pack.budget import Budget
from ..results import ContextEntry, PromptResult, shown_items
from .query import Query

__all__ = ["PACKINGS_KEPT", "PACKING_SECONDS", "TaskPages", "statuses", "summary"]

#: How many packings are kept in memory, and for how long (seconds).
PACKINGS_KEPT: Final = 8
PACKING_SECONDS: Final = 10.0
#: How many history entries the page shows.
_LOG_LIMIT: Final = 200


def summary(result: PromptResult, budget: Budget) -> dict[str, Any]:
    """What a packing did, in numbers: the prompt's exact size and the counts."""
    omitted = result["omitted"]
    expired = sum(1 for item in omitted if item["reason"] == "expired")
    shrunk = result.get("shrunk") or []
    return {
        "max_bytes": result["max_bytes"],
        "max_tokens": budget.max_tokens,
        "encoding": budget.encoding,
        "outline": budget.outline,
        "prompt_bytes": result["prompt_bytes"],
        "token_count": result.get("token_count"),
        "token_estimate": result["token_estimate"],
        "attachments": result["attachments"],
        "kept": result["kept"] - len(shrunk),
        "outlined": len(shrunk),
        "dropped": len(omitted),
        "dropped_expired": expired,
        "dropped_budget": len(omitted) - expired,
        "needed_bytes": result["needed_bytes"],
        # (under a token budget: the tokens that would hold everything, as prompt says)
        "needed_tokens": result.get("needed_tokens"),
        "note": result["note"],
    }


def statuses(result: PromptResult) -> dict[str, tuple[str, str]]:
    """``{hash: (status, why)}`` of every attachment left out or outlined; the
    others were kept whole."""
    found: dict[str, tuple[str, str]] = {}
    for shrunk in result.get("shrunk") or []:
        saved = shrunk["bytes_saved"]
        found[shrunk["hash"]] = ("outlined", f"outline kept, {saved} bytes saved")
    for omitted in result["omitted"]:
        found[omitted["hash"]] = ("dropped", omitted["reason"])
    return found


class TaskPages:
    """The JSON answers of the task page, over one :class:`Ledger`."""

    def __init__(self, ledger: Ledger, clock: Callable[[], float] = time.monotonic) -> None:
        self.ledger = ledger
        self.clock = clock
        self._packings: OrderedDict[tuple[Any, ...], tuple[float, PromptResult]] = OrderedDict()
        self._entries: tuple[tuple[str, str | None], list[ContextEntry]] | None = None

    def fields(self, _query: Query, task_id: str) -> dict[str, Any]:
        """The task's fields, its dependencies' stations and its history; of its
        dependencies, dependents, parts and tags the first
        :data:`~git_hydrate.results.SHOWN_ITEMS` and how many more (``depends_more``,
        ``dependents_more``, ``children_more``, ``tags_more``), as ``show`` prints them."""
        stored = self.ledger.get_task(task_id)
        task: dict[str, Any] = dict(stored)
        live = queue_summaries(self.ledger.refs)
        stations = station_of(self.ledger.refs, live)
        task["depends_on"], task["depends_more"] = shown_items(stored["depends_on"])
        task["depends"] = [
            {"task_id": dep, "station": stations.get(dep)}  # (None: no task here)
            for dep in task["depends_on"]
        ]
        task["dependents"], task["dependents_more"] = shown_items(
            sorted(other for other, item in live.items() if task_id in item.get("depends_on", ()))
        )
        children, task["children_more"] = shown_items(children_of(live).get(task_id, []))
        task["children"] = [
            {"task_id": child, "station": stations.get(child)} for child in children
        ]
        task["tags"], task["tags_more"] = shown_items(stored["tags"])
        task["log"] = self.ledger.log(task_id, limit=_LOG_LIMIT)
        return task

    def _entries_of(self, task_id: str) -> list[ContextEntry]:
        tip = self.ledger.refs.tip(task_id)
        key = (task_id, None if tip is None else tip.decode())
        if self._entries is None or self._entries[0] != key:
            self._entries = (key, self.ledger.context_entries(task_id))
        return self._entries[1]

    def packing(self, task_id: str, budget: Budget) -> PromptResult:
        """The prompt at ``budget``, packed at most once every few seconds."""
        tip = self.ledger.refs.tip(task_id)
        key = (task_id, tip, tuple(budget))
        now = self.clock()
        kept = self._packings.get(key)
        if kept is not None and now - kept[0] < PACKING_SECONDS:
            return kept[1]
        # cache=False: the page never fills (or evicts from) the command line's prompt cache
        result = self.ledger.prompt(task_id, budget=budget, cache=False)
        self._packings[key] = (now, result)
        self._packings.move_to_end(key)
        while len(self._packings) > PACKINGS_KEPT:
            self._packings.popitem(last=False)
        return result

    def attachments(self, query: Query, task_id: str) -> dict[str, Any]:
        """A page of the attachments in packing order, each with what the budget
        asked for does to it, and the packing's numbers."""
        offset, limit = query.page(default_limit=100)
        budget = self.ledger.budget(**query.budget())
        entries = self._entries_of(task_id)
        answer: dict[str, Any] = {"task_id": task_id, "total": len(entries), "offset": offset}
        try:
            result = self.packing(task_id, budget)
        except HydrateError as exc:
            answer["packing_error"] = str(exc)
            found: dict[str, tuple[str, str]] = {}
        else:
            answer["packing"] = summary(result, budget)
            found = statuses(result)
        items = []
        for index, entry in enumerate(entries[offset : offset + limit], start=offset):
            status, why = found.get(entry["hash"], ("kept", ""))
            if "packing" not in answer:
                status, why = "unknown", ""
            items.append({**entry, "rank": index + 1, "status": status, "why": why})
        answer["items"] = items
        return answer

    def prompt(self, query: Query, task_id: str) -> dict[str, Any]:
        """The prompt at the budget asked for, and its numbers."""
        budget = self.ledger.budget(**query.budget())
        result = self.packing(task_id, budget)
        return {"task_id": task_id, "prompt": result["prompt"], **summary(result, budget)}

    def commits(self, query: Query, task_id: str) -> dict[str, Any]:
        """A page of the work commits carrying ``Hydrate-Task: task_id``, newest first,
        each with the packet hash it names."""
        offset, limit = query.page(default_limit=50)
        self.ledger.get_task(task_id)  # a task that does not exist is a 404
        found = self.ledger.commits(task_id)
        return {
            "task_id": task_id,
            "total": len(found),
            "offset": offset,
            "items": found[offset : offset + limit],
        }
