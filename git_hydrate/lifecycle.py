"""The task lifecycle: stations, checkpoints, status, history and the archive.

Everything here is derived from what the ledger already stores — the task
document and its commit chain — plus one more ref, ``refs/hydrate/archive``,
that folds finished tasks into a single commit so the ref list stays the size
of the live work:

    refs/hydrate/archive           -> commit; parents: the previous archive commit
                                      and the tip of every task archived by it
      index.json                   {format, tasks: {id: {tip, title, status, ...}}}
      tasks/<id>                   the archived task's tree (task.json, links.json, bodies)

Archiving a task first adds an ``archive`` commit to its chain (so its own
history says when and by whom), then moves the archive ref and deletes the
task ref in one all-or-nothing ref transaction. Unarchiving does the reverse.

Commit messages carry ``Hydrate-*`` trailers (see ``ledger._message``);
:func:`log` reads the history back from them, so the audit trail needs no
storage of its own.
"""

from __future__ import annotations

import heapq
import random
import re
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import msgspec

from . import codec, validate
from .errors import Busy, Conflict, CorruptData, NotFound, ValidationError
from .model import (
    FORMAT_VERSION,
    TRANSITIONS,
    Checkpoint,
    Kind,
    ObjectIdHex,
    Priority,
    Station,
    TaskId,
)
from .store import CommitInfo, RefRace, read_commit_info, update_refs_atomically

if TYPE_CHECKING:
    from .ledger import Ledger, TaskState

__all__ = [
    "ARCHIVE_REF",
    "FINISHED_STATIONS",
    "ArchiveIndex",
    "ArchivedTask",
    "add_checkpoint",
    "archive",
    "archive_entry",
    "archived_tasks",
    "log",
    "read_any",
    "refuse_archived_id",
    "set_status",
    "status",
    "statuses",
    "unarchive",
]

#: The one ref that holds every archived task.
ARCHIVE_REF: Final = b"refs/hydrate/archive"
#: Stations a task must be at to be archived.
FINISHED_STATIONS: Final = ("done", "cancelled")
#: How often a multi-ref write retries after losing a race before giving up.
MAX_ATTEMPTS: Final = 32

_INDEX_FILE: Final = b"index.json"
_TASKS_DIR: Final = b"tasks"
_TRAILER_RE: Final = re.compile(r"^Hydrate-([A-Za-z0-9][A-Za-z0-9-]*):[ \t]?(.*)$")


class ArchivedTask(msgspec.Struct, kw_only=True):
    """One task in the archive index: where its history ends, and what ``list`` shows."""

    tip: ObjectIdHex
    title: str
    status: Station
    kind: Kind
    priority: Priority
    tags: list[str] = []
    attachments: int = 0
    archived_at: str = ""
    archived_by: str = ""


class ArchiveIndex(msgspec.Struct, kw_only=True):
    """``index.json`` of the archive ref. Field order is storage format."""

    format: int = FORMAT_VERSION
    tasks: dict[TaskId, ArchivedTask] = {}


_index_decoder = msgspec.json.Decoder(ArchiveIndex)


# -- stations and checkpoints ------------------------------------------------


def allowed_moves(station: str) -> tuple[str, ...]:
    """The stations a task at ``station`` may move to."""
    return TRANSITIONS.get(station, ())


def set_status(ledger: Ledger, task_id: str, station: str) -> dict[str, Any]:
    """Move a task to ``station``; setting the station it is at writes nothing.

    Returns:
        ``{task_id, from, to, changed}``.

    Raises:
        ValidationError: ``station`` is not a station.
        Conflict: the move is not allowed from the task's station (the message
            names the allowed ones).
        NotFound: no live task ``task_id`` (archived tasks are read-only).
    """
    from .ledger import Change, Unchanged, _message

    validate.task_id(task_id)
    target = validate.station(station)

    def apply(state: TaskState | None) -> Change:
        if state is None:
            ledger._load(task_id)  # raises NotFound with a hint
            raise AssertionError("unreachable")
        current = state.task.status
        if current == target:
            raise Unchanged({"task_id": task_id, "from": current, "to": target, "changed": False})
        allowed = allowed_moves(current)
        if target not in allowed:
            raise Conflict(
                f"task {task_id} cannot move from {current} to {target}; "
                f"allowed from {current}: {', '.join(allowed) or 'none'}"
            )
        return Change(
            task=msgspec.structs.replace(state.task, status=target),
            links=state.links,
            message=_message(
                f"status {task_id} {current} -> {target}",
                "status",
                task_id,
                **{"from": current, "to": target},
            ),
            result={"task_id": task_id, "from": current, "to": target, "changed": True},
        )

    result: dict[str, Any] = ledger._write(task_id, apply)
    return result


def add_checkpoint(
    ledger: Ledger,
    task_id: str,
    summary: str,
    evidence: str = "",
    next_step: str = "",
    tokens: int = 0,
) -> dict[str, Any]:
    """Record a worker's checkpoint as one commit on the task.

    ``tokens`` is the task's *cumulative* reported token count, so it may not
    be lower than the previous checkpoint's. The author is the repository's
    git identity.

    Returns:
        The checkpoint ``{summary, evidence, next_step, tokens, at, author}``
        plus ``task_id`` and ``number`` (1 for the first checkpoint).

    Raises:
        ValidationError: empty summary, negative tokens, bad text.
        Conflict: ``tokens`` is lower than the latest checkpoint's.
        NotFound: no live task ``task_id``.
    """
    from .ledger import Change, _message, iso_utc

    validate.task_id(task_id)
    summary = validate.text(summary, "checkpoint summary", required=True)
    evidence = validate.text(evidence, "checkpoint evidence")
    next_step = validate.text(next_step, "checkpoint next step")
    tokens = validate.token_count(tokens, "cumulative tokens")
    checkpoint = Checkpoint(
        summary=summary,
        evidence=evidence,
        next_step=next_step,
        tokens=tokens,
        at=iso_utc(ledger._clock()),
        author=ledger.repo.identity().name_email.decode("utf-8", "replace"),
    )

    def apply(state: TaskState | None) -> Change:
        if state is None:
            ledger._load(task_id)
            raise AssertionError("unreachable")
        previous = state.task.checkpoints
        # After a merge of concurrent checkpoints the newest one need not carry
        # the highest total, so compare against the maximum ever reported.
        highest = max((c.tokens for c in previous), default=0)
        if previous and tokens < highest:
            raise Conflict(
                f"cumulative tokens {tokens} are lower than the {highest} already reported; "
                f"report the running total for task {task_id}"
            )
        number = len(previous) + 1
        first_line = summary.strip().splitlines()[0] if summary.strip() else ""
        return Change(
            task=msgspec.structs.replace(state.task, checkpoints=[*previous, checkpoint]),
            links=state.links,
            message=_message(
                f"checkpoint {task_id} #{number} ({tokens} tokens)",
                "checkpoint",
                task_id,
                number=str(number),
                tokens=str(tokens),
                checkpoint_summary=first_line[:200],
            ),
            result={
                "task_id": task_id,
                "number": number,
                **msgspec.to_builtins(checkpoint),
            },
        )

    result: dict[str, Any] = ledger._write(task_id, apply)
    return result


# -- status --------------------------------------------------------------------


def read_any(ledger: Ledger, task_id: str) -> tuple[TaskState, bool]:
    """A task's state from its live ref, else from the archive.

    Returns:
        ``(state, archived)``.

    Raises:
        NotFound: neither live nor archived.
    """
    validate.task_id(task_id)
    tip = ledger._tip(task_id)
    if tip is not None:
        return ledger.read_state(task_id, tip), False
    entry = archive_entry(ledger, task_id)
    if entry is None:
        ledger._load(task_id)  # raises NotFound with the usual hint
        raise AssertionError("unreachable")
    return ledger.read_state(task_id, entry.tip.encode("ascii")), True


def _status_parts(state: TaskState) -> dict[str, Any]:
    """What ``status`` says of a task that does not depend on the clock.

    A pure function of the task's tip, so ``statuses`` can keep it in the
    disposable cache keyed by tip; ``expiries`` lets the counts be judged later.
    """
    from .ledger import task_summary

    task = state.task
    latest = task.checkpoints[-1] if task.checkpoints else None
    return {
        **task_summary(state),
        "checkpoints": len(task.checkpoints),
        "checkpoint": msgspec.to_builtins(latest) if latest is not None else None,
        "token_budget": task.token_budget,
        # The maximum, not the latest: merged concurrent checkpoints may interleave.
        "reported": max((c.tokens for c in task.checkpoints), default=0),
        "expiries": [lk.expires for lk in state.links if lk.expires is not None],
    }


def _status_from_parts(parts: dict[str, Any], archived: bool, now: float) -> dict[str, Any]:
    result = dict(parts)
    expiries = result.pop("expiries")
    reported = result.pop("reported")
    expired = sum(1 for moment in expiries if moment <= now)
    budget = result["token_budget"]
    remaining = budget - reported if budget > 0 else None
    result.update(
        {
            "archived": archived,
            "live": result["attachments"] - expired,
            "expired": expired,
            "metrics": {
                "reported_tokens": reported,
                "measured_cash_cost": None,
                "measured_token_savings": None,
            },
            "budget_remaining": remaining,
            "over_budget": remaining is not None and remaining < 0,
        }
    )
    return result


def _status_dict(state: TaskState, archived: bool, now: float) -> dict[str, Any]:
    return _status_from_parts(_status_parts(state), archived, now)


def status(ledger: Ledger, task_id: str, now: datetime | float | None = None) -> dict[str, Any]:
    """The task's lifecycle summary (live or archived).

    Keys: ``task_id, title, status, kind, priority, tags, archived,
    attachments, live, expired, checkpoints, checkpoint, token_budget,
    metrics {reported_tokens, measured_cash_cost, measured_token_savings},
    budget_remaining, over_budget``. ``live``/``expired`` count attachments
    at ``now``. ``budget_remaining`` is ``token_budget - reported_tokens``
    when a budget is set (negative: over budget, and ``over_budget`` is
    true), else ``None``. Cost and savings are ``None``: nothing here meters
    providers.
    """
    state, archived = read_any(ledger, task_id)
    return _status_dict(state, archived, ledger._now(now))


def statuses(
    ledger: Ledger,
    stations: str | Iterable[str] | None = None,
    now: datetime | float | None = None,
) -> list[dict[str, Any]]:
    """:func:`status` of every live task, sorted by id, optionally only at ``stations``."""
    from .ledger import LIST_FIELDS, _SummaryCache

    wanted = _station_filter(stations)
    moment = ledger._now(now)
    tips = {task_id: oid.decode() for task_id, oid in ledger.task_tips().items()}
    cache = _SummaryCache(
        ledger.repo,
        "status-cache",
        required=(
            *LIST_FIELDS,
            "checkpoints",
            "checkpoint",
            "token_budget",
            "reported",
            "expiries",
        ),
    )
    known = cache.load()
    missing = [t for t, tip in tips.items() if known.get(tip, {}).get("task_id") != t]
    fresh: dict[str, dict[str, Any]] = {}
    result = []
    cached: dict[str, dict[str, Any]] = {}
    for task_id, state in ledger.load_many(missing).items():
        if isinstance(state, CorruptData):
            fresh[task_id] = {"task_id": task_id, "error": str(state)}
        else:
            fresh[task_id] = _status_parts(state)
            if state.tip is not None:  # keyed by the tip actually read
                cached[state.tip.decode()] = fresh[task_id]
    for task_id in sorted(tips):
        parts = fresh.get(task_id) or known.get(tips[task_id])
        if parts is None or parts.get("task_id") != task_id:
            continue  # removed while we were reading
        if "error" in parts:
            result.append(parts)
        elif wanted is None or parts["status"] in wanted:
            result.append(_status_from_parts(parts, False, moment))
    cache.save(cached, keep=set(tips.values()) | set(cached))
    return result


def _station_filter(stations: str | Iterable[str] | None) -> set[str] | None:
    if stations is None:
        return None
    if isinstance(stations, str):
        stations = [stations]
    chosen = {validate.station(s) for s in stations}
    return chosen or None


# -- history -------------------------------------------------------------------


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


def _log_entry(info: CommitInfo) -> dict[str, Any]:
    from .ledger import iso_utc

    subject = info.message.split("\n", 1)[0].strip()
    if subject.startswith("hydrate: "):
        subject = subject[len("hydrate: ") :]
    trailers = parse_trailers(info.message)
    actions = trailers.pop("action", [])
    trailers.pop("task", None)
    fallback = "merge" if len(info.parents) > 1 else "commit"
    action = actions[0] if actions else fallback
    return {
        "commit": info.oid.decode("ascii"),
        "when": iso_utc(info.author_time),
        "who": info.author,
        "action": action,
        "summary": subject,
        "details": {key: ", ".join(values) for key, values in trailers.items()},
    }


def log(ledger: Ledger, task_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    """The task's history from its commit chain, newest first.

    Works for archived tasks too. Each entry is ``{commit, when, who, action,
    summary, details}``: ``when`` is the author time in UTC, ``who`` the
    author (``Name <email>``), ``action`` the ``Hydrate-Action`` trailer
    (``task-add``, ``task-edit``, ``context-add``, ``context-update``,
    ``context-rm``, ``status``, ``checkpoint``, ``archive``, ``unarchive``),
    and ``details`` the other ``Hydrate-*`` trailers as strings (for example
    ``fields`` of an edit, ``context``/``source`` of an attachment,
    ``from``/``to`` of a station change, ``number``/``tokens``/``checkpoint_summary`` of
    a checkpoint). Merges are walked through all parents, newest first.
    """
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValidationError(f"log limit must be a positive integer, not {limit!r}")
    state, _archived = read_any(ledger, task_id)
    assert state.tip is not None
    entries: list[dict[str, Any]] = []
    seen: set[bytes] = {state.tip}
    order = 0
    heap: list[tuple[int, int, bytes]] = []
    first = read_commit_info(ledger.repo, state.tip)
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
            parent_info = read_commit_info(ledger.repo, parent)
            cache[parent] = parent_info
            order += 1
            heapq.heappush(heap, (-parent_info.commit_time, order, parent))
    return entries


# -- archive -------------------------------------------------------------------


def _read_archive(
    ledger: Ledger, tip: bytes | None = None
) -> tuple[bytes | None, bytes | None, ArchiveIndex]:
    """``(tip, tree, index)`` of the archive ref (or of the archive commit ``tip``).

    ``(None, None, empty)`` when there is no archive.

    Raises:
        CorruptData: the archive commit, its tree or its ``index.json`` is damaged.
    """
    if tip is None:
        tip = ledger.repo.read_ref(ARCHIVE_REF)
    if tip is None:
        return None, None, ArchiveIndex()
    tree, _parents = ledger.repo.read_commit_tree(tip)
    entry = ledger.repo.read_tree(tree).get(_INDEX_FILE)
    if entry is None:
        raise CorruptData(f"{ARCHIVE_REF.decode()}: commit {tip.decode()} has no index.json")
    data = ledger.repo.read_blob(entry[1])
    where = f"{ARCHIVE_REF.decode()}: index.json"
    try:
        probe = msgspec.json.decode(data, type=dict[str, Any])
        if int(probe.get("format", 0)) > FORMAT_VERSION:
            raise CorruptData(
                f"{where}: stored format {probe['format']} is newer than this git-hydrate "
                f"understands ({FORMAT_VERSION}); upgrade git-hydrate to read it"
            )
        return tip, tree, _index_decoder.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise CorruptData(f"{where}: {exc}") from None


def archive_entry(ledger: Ledger, task_id: str) -> ArchivedTask | None:
    """The archive index entry of ``task_id``, or ``None`` if it is not archived."""
    _tip, _tree, index = _read_archive(ledger)
    return index.tasks.get(task_id)


def refuse_archived_id(ledger: Ledger, task_id: str) -> None:
    """Refuse a new task whose id is archived, or differs from an archived one only by case.

    Raises:
        Conflict: naming the archived task and how to bring it back.
    """
    _tip, _tree, index = _read_archive(ledger)
    if task_id in index.tasks:
        raise Conflict(
            f"task {task_id} is archived; bring it back with: git hydrate unarchive {task_id}"
        )
    folded = task_id.casefold()
    for other in index.tasks:
        if other.casefold() == folded:
            raise Conflict(
                f"task id {task_id!r} differs from archived task {other!r} only by case; "
                "ids must stay distinct on case-insensitive file systems"
            )


def _entry_dict(task_id: str, entry: ArchivedTask) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "title": entry.title,
        "status": entry.status,
        "kind": entry.kind,
        "priority": entry.priority,
        "tags": list(entry.tags),
        "attachments": entry.attachments,
        "archived_at": entry.archived_at,
        "archived_by": entry.archived_by,
    }


def archived_tasks(
    ledger: Ledger,
    *,
    status: str | Iterable[str] | None = None,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """A summary of every archived task, sorted by id, filtered like ``list_tasks``."""
    match = task_filter(status=status, kind=kind, tag=tag)
    _tip, _tree, index = _read_archive(ledger)
    result = []
    for task_id in sorted(index.tasks):
        item = _entry_dict(task_id, index.tasks[task_id])
        if match(item):
            result.append(item)
    return result


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
    stations = _station_filter(status)
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


def _archive_message(action: str, task_ids: list[str]) -> str:
    shown = ", ".join(task_ids[:5]) + (
        f", and {len(task_ids) - 5} more" if len(task_ids) > 5 else ""
    )
    noun = "task" if len(task_ids) == 1 else "tasks"
    lines = [
        f"hydrate: {action} {len(task_ids)} {noun} ({shown})",
        "",
        f"Hydrate-Action: {action}",
    ]
    lines += [f"Hydrate-Task: {task_id}" for task_id in task_ids]
    return "\n".join(lines) + "\n"


def _index_tree(
    ledger: Ledger, tree: bytes | None, index: ArchiveIndex, trees: dict[bytes, bytes | None]
) -> bytes:
    """The archive tree after writing ``index`` and changing ``tasks/<id>`` entries."""
    from .store import MODE_TREE

    entries = dict(ledger.repo.read_tree(tree)) if tree is not None else {}
    entries[_INDEX_FILE] = (0o100644, ledger.repo.write_blob(codec.encode(index)))
    tasks_entry = entries.get(_TASKS_DIR)
    tasks = dict(ledger.repo.read_tree(tasks_entry[1])) if tasks_entry is not None else {}
    for name, oid in trees.items():
        if oid is None:
            tasks.pop(name, None)
        else:
            tasks[name] = (MODE_TREE, oid)
    if tasks:
        entries[_TASKS_DIR] = (MODE_TREE, ledger.repo.write_tree(tasks))
    else:
        entries.pop(_TASKS_DIR, None)
    return ledger.repo.write_tree(entries)


def _backoff(attempt: int) -> None:
    time.sleep(random.uniform(0.001, 0.004) * min(attempt + 1, 10))


def archive(ledger: Ledger, task_ids: Iterable[str] = (), *, done: bool = False) -> dict[str, Any]:
    """Fold finished tasks into ``refs/hydrate/archive`` and delete their refs.

    Args:
        task_ids: Tasks to archive; each must be live and ``done`` or
            ``cancelled`` (an id already archived is reported, not an error).
        done: Also archive every live task that is ``done`` or ``cancelled``.

    Returns:
        ``{archived: [ids], already_archived: [ids]}``.

    Raises:
        ValidationError: neither ids nor ``done`` given; a bad id.
        NotFound: an id that is neither live nor archived.
        Conflict: a task that is not done or cancelled.
        Busy: the refs kept changing under the write.

    Nothing is written unless every named task can be archived; the archive
    ref and the task refs change in one ref transaction.
    """
    from .ledger import _message, iso_utc, ref_name

    named = list(dict.fromkeys(validate.task_id(t) for t in task_ids))
    if not named and not done:
        raise ValidationError("name the tasks to archive, or use --done for every finished task")
    for attempt in range(MAX_ATTEMPTS):
        archive_tip, archive_tree, index = _read_archive(ledger)
        chosen: dict[str, TaskState] = {}
        already: list[str] = []
        for task_id in named:
            tip = ledger._tip(task_id)
            if tip is None:
                if task_id in index.tasks:
                    already.append(task_id)
                    continue
                ledger._load(task_id)  # NotFound with the hint
            assert tip is not None
            state = ledger.read_state(task_id, tip)
            if state.task.status not in FINISHED_STATIONS:
                raise Conflict(
                    f"task {task_id} is {state.task.status}; only done or cancelled tasks "
                    f"can be archived (move it with: git hydrate status {task_id} --set STATION)"
                )
            chosen[task_id] = state
        damaged: list[dict[str, str]] = []
        if done:
            states = ledger.load_many(t for t in ledger.task_ids() if t not in chosen)
            for task_id, loaded in sorted(states.items()):
                if isinstance(loaded, CorruptData):
                    # one damaged task must not keep every finished one live
                    damaged.append({"task_id": task_id, "error": str(loaded)})
                elif loaded.task.status in FINISHED_STATIONS:
                    chosen[task_id] = loaded
        if not chosen:
            return {"archived": [], "already_archived": already, "damaged": damaged}
        moment = ledger._clock()
        who = ledger.repo.identity().name_email.decode("utf-8", "replace")
        new_index = ArchiveIndex(tasks=dict(index.tasks))
        task_commits: list[bytes] = []
        trees: dict[bytes, bytes | None] = {}
        updates: list[tuple[bytes, bytes | None, bytes | None]] = []
        for task_id in sorted(chosen):
            state = chosen[task_id]
            assert state.tip is not None and state.tree is not None
            commit = ledger.repo.write_commit(
                state.tree,
                [state.tip],
                _message(f"archive {task_id}", "archive", task_id),
                when=moment,
            )
            task_commits.append(commit)
            trees[task_id.encode("ascii")] = state.tree
            new_index.tasks[task_id] = ArchivedTask(
                tip=commit.decode("ascii"),
                title=state.task.title,
                status=state.task.status,
                kind=state.task.kind,
                priority=state.task.priority,
                tags=list(state.task.tags),
                attachments=len(state.links),
                archived_at=iso_utc(moment),
                archived_by=who,
            )
            updates.append((ref_name(task_id), state.tip, None))
        if archive_tip is None:
            # A root commit first, so `git log --first-parent` of the archive
            # ref lists archive operations only.
            archive_tree = _index_tree(ledger, None, ArchiveIndex(), {})
            archive_tip = ledger.repo.write_commit(
                archive_tree,
                [],
                "hydrate: start the archive\n\nHydrate-Action: archive-start\n",
                when=moment,
            )
            create_archive = True
        else:
            create_archive = False
        tree = _index_tree(ledger, archive_tree, new_index, trees)
        message = _archive_message("archive", sorted(chosen))
        new_tip = ledger.repo.write_commit(
            tree, [archive_tip, *task_commits], message, when=moment
        )
        updates.insert(0, (ARCHIVE_REF, None if create_archive else archive_tip, new_tip))
        try:
            update_refs_atomically(ledger.repo, updates, message.splitlines()[0])
        except RefRace:
            _backoff(attempt)
            continue
        return {"archived": sorted(chosen), "already_archived": already, "damaged": damaged}
    raise Busy(f"the archive kept changing under this write ({MAX_ATTEMPTS} attempts); try again")


def unarchive(ledger: Ledger, task_id: str) -> dict[str, Any]:
    """Bring an archived task back as a live ref (at the station it was archived at).

    One ``unarchive`` commit is added to the task's chain; the task leaves the
    archive index in a new archive commit (whose history still holds it).

    Raises:
        NotFound: ``task_id`` is not archived.
        Conflict: a live task ``task_id`` exists.
    """
    from .ledger import _message, ref_name

    validate.task_id(task_id)
    for attempt in range(MAX_ATTEMPTS):
        archive_tip, archive_tree, index = _read_archive(ledger)
        entry = index.tasks.get(task_id)
        live = ledger._tip(task_id)
        if entry is None:
            if live is not None:
                raise Conflict(f"task {task_id} is not archived; it is live")
            raise NotFound(f"task {task_id!r} is not in the archive")
        if live is not None:
            raise Conflict(
                f"a live task {task_id} exists beside the archived one; rename or archive it first"
            )
        ledger._check_case_collision(task_id)
        assert archive_tip is not None
        tip = entry.tip.encode("ascii")
        state = ledger.read_state(task_id, tip)
        assert state.tree is not None
        moment = ledger._clock()
        commit = ledger.repo.write_commit(
            state.tree, [tip], _message(f"unarchive {task_id}", "unarchive", task_id), when=moment
        )
        new_index = ArchiveIndex(tasks={k: v for k, v in index.tasks.items() if k != task_id})
        tree = _index_tree(ledger, archive_tree, new_index, {task_id.encode("ascii"): None})
        message = _archive_message("unarchive", [task_id])
        new_tip = ledger.repo.write_commit(tree, [archive_tip], message, when=moment)
        try:
            update_refs_atomically(
                ledger.repo,
                [(ARCHIVE_REF, archive_tip, new_tip), (ref_name(task_id), None, commit)],
                message.splitlines()[0],
            )
        except RefRace:
            _backoff(attempt)
            continue
        return ledger.get_task(task_id)
    raise Busy(f"the archive kept changing under this write ({MAX_ATTEMPTS} attempts); try again")
