"""A task's history, read back from its commit chain and the ``Hydrate-*`` trailers.

Every change git-hydrate writes is one commit whose message ends with
``Hydrate-Action:``, ``Hydrate-Task:`` and more trailers
(:func:`git_hydrate.taskrefs.commit_message`), so the audit trail needs no
storage of its own.
"""

from __future__ import annotations

import heapq
import re
from typing import Final

from .errors import ValidationError
from .results import LogEntry
from .store import CommitInfo
from .taskrefs import TaskRefs, iso_utc

__all__ = ["PACKET_TRAILER", "TASK_TRAILER", "commits", "log", "parse_trailers"]

#: The trailers that link a work commit to the task and the packet behind it.
TASK_TRAILER: Final = "Hydrate-Task"
PACKET_TRAILER: Final = "Hydrate-Packet"

_TRAILER_RE: Final = re.compile(r"^Hydrate-([A-Za-z0-9][A-Za-z0-9-]*):[ \t]?(.*)$")


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The ``Hydrate-*`` trailers of a commit message's last paragraph.

    Keys are lowercased with ``-`` turned into ``_`` (``Hydrate-Next-Step`` ->
    ``next_step``); a trailer given several times keeps every value.
    """
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    trailers: dict[str, list[str]] = {}
    if not paragraphs:
        return trailers
    for line in paragraphs[-1].splitlines():
        match = _TRAILER_RE.match(line)
        if match:
            key = match.group(1).lower().replace("-", "_")
            trailers.setdefault(key, []).append(match.group(2).strip())
    return trailers


def _log_entry(info: CommitInfo) -> LogEntry:
    subject = info.message.split("\n", 1)[0].strip()
    subject = subject.removeprefix("hydrate: ")
    trailers = parse_trailers(info.message)
    actions = trailers.pop("action", [])
    trailers.pop("task", None)
    fallback = "merge" if len(info.parents) > 1 else "commit"
    return {
        "commit": info.oid.decode("ascii"),
        "when": iso_utc(info.author_time),
        "who": info.author,
        "action": actions[0] if actions else fallback,
        "summary": subject,
        "details": {key: ", ".join(values) for key, values in trailers.items()},
    }


def log(refs: TaskRefs, task_id: str, limit: int | None = None) -> list[LogEntry]:
    """The task's history from its commit chain, newest first (archived tasks too).

    Each entry is ``{commit, when, who, action, summary, details}``: ``when``
    is the author time in UTC, ``who`` the author (``Name <email>``),
    ``action`` the ``Hydrate-Action`` trailer, and ``details`` the other
    ``Hydrate-*`` trailers as strings. Merges are walked through all parents,
    newest first.
    """
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValidationError(f"log limit must be a positive integer, not {limit!r}")
    state, _archived = refs.load_any(task_id)
    assert state.tip is not None
    repo = refs.repo
    entries: list[LogEntry] = []
    seen: set[bytes] = {state.tip}
    order = 0
    heap: list[tuple[int, int, bytes]] = []
    first = repo.read_commit_info(state.tip)
    cache = {state.tip: first}
    heapq.heappush(heap, (-first.commit_time, order, state.tip))
    while heap and (limit is None or len(entries) < limit):
        _time, _order, oid = heapq.heappop(heap)
        info = cache.pop(oid)
        entries.append(_log_entry(info))
        for parent in info.parents:
            if parent in seen:
                continue
            seen.add(parent)
            parent_info = repo.read_commit_info(parent)
            cache[parent] = parent_info
            order += 1
            heapq.heappush(heap, (-parent_info.commit_time, order, parent))
    return entries


def commits(refs: TaskRefs, task_id: str) -> list[dict[str, str | None]]:
    """The work commits whose ``Hydrate-Task`` trailer names ``task_id``, newest first.

    Searched in ``HEAD``, the branches, tags and remote-tracking branches (the
    task's own commits under ``refs/hydrate/`` are its history, see :func:`log`).
    Each: ``{commit, when, who, subject, packet}``; ``packet`` is the commit's
    ``Hydrate-Packet`` value, or ``None``.
    """
    found: list[dict[str, str | None]] = []
    data = refs.repo.trailer_log([TASK_TRAILER, PACKET_TRAILER])
    for record in data.decode("utf-8", "replace").split("\x1e"):
        fields = record.strip("\n").split("\x00")
        if len(fields) != 6:
            continue
        commit, when, who, subject, tasks, packets = fields
        if task_id not in [t.strip() for t in tasks.split(",")]:
            continue
        packet = packets.split(",")[0].strip() or None
        # (in UTC and with the address, as the task's own history gives them)
        when = iso_utc(int(when)) if when.isdigit() else when
        found.append(
            {"commit": commit, "when": when, "who": who, "subject": subject, "packet": packet}
        )
    return found
