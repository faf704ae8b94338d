"""Listing tasks: summaries by tip through a disposable cache, filters, the archive.

A list summary is a pure function of a task's tip commit, and commits never
change: :class:`SummaryCache` keeps summaries keyed by tip in one msgpack file
inside the git directory, so ``list`` over thousands of tasks reads the refs
and one small file. Deleting the cache is always safe.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from types import GenericAlias
from typing import Any, TypedDict, cast

import msgspec

from . import validate
from .archive import read_archive
from .errors import CorruptData
from .results import ArchivedItem, ListItem
from .store import Repository, open_regular
from .taskrefs import TaskRefs, TaskState

__all__ = [
    "ListEntry",
    "SummaryCache",
    "archived_tasks",
    "children",
    "decode_entries",
    "list_tasks",
    "station_filter",
    "task_filter",
    "task_summary",
    "tree_order",
]


class ListEntry(TypedDict):
    """A list summary as :class:`SummaryCache` keeps it (:func:`task_summary`)."""

    task_id: str
    title: str
    status: str
    kind: str
    priority: int
    tags: list[str]
    attachments: int
    assignee: str
    parent: str


def decode_entries(data: bytes, entry: type[Any]) -> dict[str, dict[str, Any]]:
    """The entries of a disposable cache file (msgpack: a map of key to entry) that
    decode as ``entry`` (a TypedDict); an entry that lacks a field, or holds one of
    another type (an earlier version's, a hand-made one), is left out: a miss.

    Raises:
        msgspec.DecodeError: ``data`` is no such map at all.
    """
    try:
        return cast(dict[str, dict[str, Any]], msgspec.msgpack.decode(data, type=_map_of(entry)))
    except msgspec.ValidationError:
        pass  # (one entry or more does not fit: the others are kept, one by one)
    kept: dict[str, dict[str, Any]] = {}
    for key, raw in msgspec.msgpack.decode(data, type=dict[str, msgspec.Raw]).items():
        with contextlib.suppress(msgspec.ValidationError):
            kept[key] = msgspec.msgpack.decode(raw, type=entry)
    return kept


def _map_of(entry: type[Any]) -> Any:
    """``dict[str, entry]`` (a type made at run time, which mypy does not take)."""
    return GenericAlias(dict, (str, entry))


def task_summary(state: TaskState) -> dict[str, Any]:
    """The fields ``list`` shows (and ``status`` starts from) for one task."""
    task = state.task
    return {
        "task_id": task.id,
        "title": task.title,
        "status": task.status,
        "kind": task.kind,
        "priority": task.priority,
        "tags": list(task.tags),
        "attachments": len(state.links),
        "assignee": task.assignee,
        "parent": task.parent,
    }


class SummaryCache:
    """A derived, disposable map from a task's tip commit to a summary of it.

    Stored as one msgpack file at ``<common dir>/hydrate/<name>``; a missing or
    unreadable file is rebuilt, and entries that do not decode as ``entry`` (a
    TypedDict of every field the summary has) are read again.
    """

    def __init__(self, repo: Repository, name: str, entry: type[Any] = ListEntry) -> None:
        self.repo = repo
        self.path = os.path.join(repo.common_dir, "hydrate", name)
        self.entry = entry
        self._entries: dict[str, dict[str, Any]] = {}

    def load(self) -> dict[str, dict[str, Any]]:
        """The entries that decode as this cache's ``entry``."""
        try:
            with open_regular(self.path) as fh:
                self._entries = decode_entries(fh.read(), self.entry)
        except (OSError, msgspec.DecodeError):
            self._entries = {}
        return self._entries

    def save(self, new: dict[str, dict[str, Any]], keep: set[str]) -> None:
        """Add ``new`` entries and drop those whose tip is no longer live."""
        stale = set(self._entries) - keep
        if not new and not stale:
            return
        entries = {tip: item for tip, item in self._entries.items() if tip in keep}
        entries.update(new)
        try:
            data = msgspec.msgpack.encode(entries)
        except OverflowError:  # a count past 64 bits (stored before they were refused)
            data = msgspec.msgpack.encode({t: i for t, i in entries.items() if _packs(i)})
        # The cache only saves time: failing to write it is not an error.
        with contextlib.suppress(OSError):
            self.repo.replace_file(self.path, [data])

    def summaries(
        self,
        refs: TaskRefs,
        summarise: Callable[[TaskState], dict[str, Any]],
        tips: Mapping[str, bytes] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """``{task_id: summary}`` of every live task, damaged ones as ``{task_id, error}``.

        Summaries of tips the cache knows are taken from it; the others are read
        in one pipelined pass, summarised, and added to the cache. The refs are
        read once: ``tips`` (``{task_id: tip}`` of every live task, just read by
        the caller) or, without it, :meth:`TaskRefs.task_tips` now.
        """
        tips = refs.task_tips() if tips is None else tips
        known = self.load()
        missing = [t for t, tip in tips.items() if known.get(tip.decode(), {}).get("task_id") != t]
        fresh: dict[str, dict[str, Any]] = {}
        cached: dict[str, dict[str, Any]] = {}
        for task_id, state in refs.load_many(missing, tips).items():
            if isinstance(state, CorruptData):
                # listed, so that one damaged task neither hides nor breaks the rest
                fresh[task_id] = {"task_id": task_id, "error": str(state)}
                continue
            fresh[task_id] = summarise(state)
            if state.tip is not None:
                # keyed by the tip actually read, which may be newer than the listing's
                cached[state.tip.decode()] = fresh[task_id]
        result: dict[str, dict[str, Any]] = {}
        for task_id in sorted(tips):
            item = fresh.get(task_id) or known.get(tips[task_id].decode())
            if item is None or item.get("task_id") != task_id:
                continue  # removed while we were reading
            result[task_id] = item
        self.save(cached, keep={tip.decode() for tip in tips.values()} | set(cached))
        return result


def _packs(item: dict[str, Any]) -> bool:
    """Whether msgpack can hold ``item`` (such an entry is left out of a cache)."""
    try:
        msgspec.msgpack.encode(item)
    except OverflowError:
        return False
    return True


def list_tasks(
    refs: TaskRefs,
    *,
    status: str | Iterable[str] | None = None,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
) -> list[ListItem]:
    """A summary of every live task, sorted by id, filtered (damaged tasks always shown)."""
    match = task_filter(status=status, kind=kind, tag=tag)
    items = SummaryCache(refs.repo, "list-cache").summaries(refs, task_summary)
    return [cast(ListItem, item) for item in items.values() if "error" in item or match(item)]


def children(refs: TaskRefs, task_id: str) -> list[ListItem]:
    """The live tasks whose parent is ``task_id``, sorted by id."""
    items = SummaryCache(refs.repo, "list-cache").summaries(refs, task_summary)
    return [cast(ListItem, i) for i in items.values() if i.get("parent") == task_id]


def tree_order(items: Iterable[ListItem]) -> list[tuple[int, ListItem]]:
    """``items`` with each child under its parent: ``(depth, item)`` pairs.

    A task whose parent is not among ``items`` (filtered out, archived, not
    here) starts a tree of its own; a parent cycle merged in from two clones
    is broken where it is entered, so every item is listed once.
    """
    rows = list(items)
    present = {item["task_id"] for item in rows}
    under: dict[str, list[ListItem]] = {}
    roots: list[ListItem] = []
    for item in rows:
        parent = item.get("parent", "")
        if parent and parent in present and parent != item["task_id"]:
            under.setdefault(parent, []).append(item)
        else:
            roots.append(item)
    result: list[tuple[int, ListItem]] = []
    seen: set[str] = set()
    for start in [*roots, *rows]:  # rows: on a parent cycle, none of them is a root
        stack = [(0, start)] if start["task_id"] not in seen else []
        while stack:  # depth first, children in id order, without recursion
            depth, item = stack.pop()
            if item["task_id"] in seen:
                continue
            seen.add(item["task_id"])
            result.append((depth, item))
            stack += [(depth + 1, c) for c in reversed(under.get(item["task_id"], ()))]
    return result


def archived_tasks(
    refs: TaskRefs,
    *,
    status: str | Iterable[str] | None = None,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
) -> list[ArchivedItem]:
    """A summary of every archived task, sorted by id, filtered like :func:`list_tasks`.

    The archive's index holds what ``list`` showed when each task was archived
    but its holder and parent: those are read from the task's archived commit
    (once: a cache keyed by that commit keeps them, as ``list``'s does)."""
    match = task_filter(status=status, kind=kind, tag=tag)
    index = read_archive(refs.repo).index
    tips = {task_id: entry.tip.encode("ascii") for task_id, entry in index.tasks.items()}
    read = SummaryCache(refs.repo, "archive-list-cache").summaries(refs, task_summary, tips)
    result: list[ArchivedItem] = []
    for task_id in sorted(index.tasks):
        entry, summary = index.tasks[task_id], read.get(task_id, {})
        item: ArchivedItem = {
            "task_id": task_id,
            "title": entry.title,
            "status": entry.status,
            "kind": entry.kind,
            "priority": entry.priority,
            "tags": list(entry.tags),
            "attachments": entry.attachments,
            "assignee": summary.get("assignee", ""),
            "parent": summary.get("parent", ""),
            "archived_at": entry.archived_at,
            "archived_by": entry.archived_by,
        }
        if match(dict(item)):
            result.append(item)
    return result


def station_filter(stations: str | Iterable[str] | None) -> set[str] | None:
    """The stations asked for, validated; ``None`` for any."""
    if stations is None:
        return None
    if isinstance(stations, str):
        stations = [stations]
    chosen = {validate.station(s) for s in stations}
    return chosen or None


def task_filter(
    *,
    status: str | Iterable[str] | None = None,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
) -> Callable[[dict[str, Any]], bool]:
    """A predicate over list items: any of ``status``, any of ``kind``, all of ``tag``.

    Raises:
        ValidationError: an unknown station or kind (validated before anything is read).
    """
    stations = station_filter(status)
    kinds = None if kind is None else {validate.kind(k) for k in _as_list(kind)} or None
    tags = validate.text_list(_as_list(tag), "tag") if tag is not None else []

    def match(item: dict[str, Any]) -> bool:
        if stations is not None and item["status"] not in stations:
            return False
        if kinds is not None and item["kind"] not in kinds:
            return False
        return all(t in item["tags"] for t in tags)

    return match


def _as_list(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)
