"""Packing a stored task: its packet and prompt under an exact budget.

The budget walk itself is pure (:mod:`git_hydrate.context_expander`); this
module feeds it a task's fields and its attachments in packing order, with a
body loader that reads ahead through git while the walk measures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple, cast

from . import context_expander
from .errors import CorruptData
from .model import Link
from .results import ExpandResult, PackResult
from .store import Prefetch
from .taskrefs import TaskRefs
from .tasks import task_dict

__all__ = ["body_loader", "expand", "pack", "packing_input"]


def packing_input(refs: TaskRefs, task_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The task's fields and its attachments (with size and oid, no bodies), in
    packing order."""
    state = refs.load(task_id)
    task = dict(task_dict(state))
    entries = [
        {
            "hash": link.sha256,
            "source": link.source,
            "priority": link.priority,
            "expires": link.expires,
            "size": link.size,
            "oid": link.oid,
        }
        for link in state.links
    ]
    return task, entries


class _Job(NamedTuple):
    """Everything one packing needs: the task's fields, its entries, the budget,
    the moment expiry is judged at, and the body loader."""

    task: dict[str, Any]
    entries: list[dict[str, Any]]
    budget: int
    moment: float
    load_body: Callable[[Mapping[str, Any]], str]


def _job(
    refs: TaskRefs, task_id: str, max_bytes: int | None, now: datetime | float | None
) -> _Job:
    task, entries = packing_input(refs, task_id)
    budget = refs.repo.settings.size("hydrate.maxBytes") if max_bytes is None else max_bytes
    moment = refs.now(now)
    return _Job(task, entries, budget, moment, body_loader(refs, task_id, entries, budget, moment))


def pack(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    now: datetime | float | None = None,
) -> PackResult:
    """The task as a packet whose compact JSON fits ``max_bytes`` (see ``Ledger.pack``)."""
    job = _job(refs, task_id, max_bytes, now)
    result = context_expander.pack_packet(
        job.task, job.entries, job.budget, now=job.moment, load_body=job.load_body
    )
    return cast(PackResult, result)


def expand(
    refs: TaskRefs,
    task_id: str,
    max_bytes: int | None = None,
    now: datetime | float | None = None,
    *,
    extra: dict[str, Any] | None = None,
) -> ExpandResult:
    """The packet and its prompt, measured together (see ``Ledger.expand``)."""
    job = _job(refs, task_id, max_bytes, now)
    result = context_expander.build_packet(
        job.task,
        job.entries,
        job.budget,
        files=job.task.get("files") or (),
        tests=job.task.get("tests") or (),
        extra=extra,
        now=job.moment,
        load_body=job.load_body,
    )
    return cast(ExpandResult, result)


def body_loader(
    refs: TaskRefs, task_id: str, entries: list[dict[str, Any]], max_bytes: int, now: float
) -> Callable[[Mapping[str, Any]], str]:
    """A body loader for the packer that reads ahead in packing order.

    The packer asks for bodies one by one, in the order of ``entries``. Each
    miss reads that body and the following ones in one pipelined
    ``cat-file`` round (up to 1 MiB, or the budget when smaller), and at once
    asks git for the round after, which git reads while the packer hashes
    and measures this one. A round leaves out what the packer will skip
    unread (expired, or larger than a round): such a body is read only if
    asked for. Bodies the packer has passed are dropped.
    """
    position = {entry["oid"]: index for index, entry in enumerate(entries)}
    ready: dict[str, bytes] = {}
    # (an invalid budget is the packer's to refuse, before any body is read)
    usable = max_bytes if isinstance(max_bytes, int) and max_bytes > 0 else 1 << 20
    window = max(64 * 1024, min(1 << 20, usable))
    inflight: list[tuple[list[str], Prefetch]] = []
    cursor = [0]  # the next entry a round may take
    suspect: set[str] = set()  # in a round git stopped on: read alone, if asked

    def unread_by_packer(entry: Mapping[str, Any]) -> bool:
        expires = entry.get("expires")
        return (
            int(entry["size"]) > window
            or (expires is not None and expires <= now)
            or str(entry["oid"]) in suspect
        )

    def round_from(start: int, size: int = 0) -> list[str]:
        names: list[str] = []
        index = start
        while index < len(entries) and len(names) < 256:
            later = entries[index]
            if not unread_by_packer(later):
                if size + int(later["size"]) > window:
                    break
                names.append(str(later["oid"]))
                size += int(later["size"])
            index += 1
        cursor[0] = max(cursor[0], index)
        return names

    def absorb(names: list[str], answers: list[tuple[bytes, bytes] | None]) -> None:
        for name, answer in zip(names, answers, strict=True):
            if answer is not None and answer[0] == b"blob":
                ready[name] = answer[1]

    def load(entry: Mapping[str, Any]) -> str:
        oid = str(entry["oid"])
        here = position.get(oid)
        if oid not in ready:
            for names, pending in inflight:
                # A round that fails (a damaged object in it) is read again
                # body by body, so the error names the body that is damaged.
                try:
                    absorb(names, pending.collect())
                except CorruptData:
                    suspect.update(names)
            inflight.clear()
            if here is not None:
                for name in [n for n in ready if position.get(n, here) < here]:
                    del ready[name]  # passed by the packer
        if oid not in ready:
            names = [oid]
            if here is not None:
                cursor[0] = max(cursor[0], here + 1)
                if not unread_by_packer(entry):
                    names += round_from(here + 1, int(entry["size"]))
            try:
                absorb(names, refs.repo.read_many([n.encode("ascii") for n in names]))
            except CorruptData:
                # read alone below, so that the error names the body
                suspect.update(names)
        if not inflight and cursor[0] < len(entries):
            names = round_from(cursor[0])
            if names:
                pending = refs.repo.prefetch([n.encode("ascii") for n in names])
                inflight.append((names, pending))
        data = ready.pop(oid, None)
        link = Link(sha256=entry["hash"], oid=oid, size=entry["size"], source=entry["source"])
        if data is None:
            return refs.read_body(task_id, link)  # names what is wrong
        return refs.check_body(task_id, link, data)

    return load
