"""The task lifecycle: stations, checkpoints, status, and archiving.

Everything here is derived from what a task already stores — its document and
its commit chain — plus the archive ref (:mod:`git_hydrate.archive`).
Archiving a task first adds an ``archive`` commit to its chain (so its own
history says when and by whom), then moves the archive ref and deletes the
task ref in one all-or-nothing ref transaction. Unarchiving does the reverse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, cast

import msgspec

from . import validate
from .archive import ARCHIVE_REF, index_tree, read_archive
from .attachments import check_text_secrets
from .dependencies import dependency_stations, queue_summaries, station_of
from .errors import Busy, Conflict, CorruptData, NotFound, ValidationError
from .listing import ListEntry, SummaryCache, station_filter, task_summary
from .model import INITIAL_STATION, TRANSITIONS, ArchivedTask, ArchiveIndex, Checkpoint
from .results import (
    ArchiveResult,
    CheckpointDict,
    CheckpointResult,
    MoveResult,
    StatusDict,
    TaskDict,
)
from .store import RefRace, RefUpdate
from .taskrefs import (
    Change,
    TaskRefs,
    TaskState,
    Unchanged,
    attempts,
    commit_message,
    iso_utc,
    ref_name,
    task_message,
)
from .tasks import get_task

__all__ = [
    "FINISHED_STATIONS",
    "add_checkpoint",
    "allowed_moves",
    "archive",
    "set_status",
    "status",
    "statuses",
    "unarchive",
]

#: Stations a task must be at to be archived.
FINISHED_STATIONS: Final = ("done", "cancelled")


class _StatusEntry(ListEntry):
    """What :func:`_status_parts` makes, as the status cache keeps it."""

    claimed_at: str
    taken_from: str
    checkpoints: int
    checkpoint: CheckpointDict | None
    token_budget: int
    reported: int
    expiries: list[int]
    depends_on: list[str]


# -- stations and checkpoints ------------------------------------------------


def allowed_moves(station: str) -> tuple[str, ...]:
    """The stations a task at ``station`` may move to."""
    return TRANSITIONS.get(station, ())


def set_status(refs: TaskRefs, task_id: str, station: str) -> MoveResult:
    """Move a task to ``station``; setting the station it is at writes nothing.

    Raises:
        ValidationError: ``station`` is not a station.
        Conflict: the move is not allowed from the task's station (the message
            names the allowed ones).
        NotFound: no live task ``task_id`` (archived tasks are read-only).
    """
    validate.task_id(task_id)
    target = validate.station(station)

    def apply(state: TaskState) -> Change[MoveResult]:
        current = state.task.status
        if current == target:
            raise Unchanged({"task_id": task_id, "from": current, "to": target, "changed": False})
        allowed = allowed_moves(current)
        if target not in allowed:
            via = [step for step in allowed if target in allowed_moves(step)][:1]
            then = "".join(
                f"; go through {step} first: git hydrate status {task_id} --set {step}"
                for step in via
            )
            raise Conflict(
                f"task {task_id} cannot move from {current} to {target}; "
                f"allowed from {current}: {', '.join(allowed) or 'none'}{then}"
            )
        task = msgspec.structs.replace(state.task, status=target)
        released = {}
        if target == INITIAL_STATION and task.assignee:
            # Back in the queue means nobody's: the claim goes with the move.
            released = {"released": task.assignee}
            task = msgspec.structs.replace(
                task, assignee="", claimed_at="", taken_from="", claimed_via=""
            )
        return Change(
            task=task,
            links=state.links,
            message=task_message(
                f"status {task_id} {current} -> {target}",
                "status",
                task_id,
                **{"from": current, "to": target},
                **released,
            ),
            result={"task_id": task_id, "from": current, "to": target, "changed": True},
        )

    return refs.write(task_id, apply)


def _checked_checkpoint(
    refs: TaskRefs,
    summary: str,
    evidence: str,
    next_step: str,
    tokens: int,
    allow_secrets: bool | None,
) -> Checkpoint:
    """The checkpoint :func:`add_checkpoint` records, its text and count checked,
    stamped with the clock and the git identity."""
    summary = validate.text(summary, "checkpoint summary", required=True)
    evidence = validate.text(evidence, "checkpoint evidence")
    next_step = validate.text(next_step, "checkpoint next step")
    tokens = validate.token_count(tokens, "cumulative tokens")
    check_text_secrets(
        refs.repo.settings,
        [
            ("checkpoint summary", summary),
            ("checkpoint evidence", evidence),
            ("checkpoint next step", next_step),
        ],
        allow_secrets,
    )
    return Checkpoint(
        summary=summary,
        evidence=evidence,
        next_step=next_step,
        tokens=tokens,
        at=iso_utc(refs.clock()),
        author=refs.repo.identity().name_email.decode("utf-8", "replace"),
    )


def add_checkpoint(
    refs: TaskRefs,
    task_id: str,
    summary: str,
    evidence: str = "",
    next_step: str = "",
    tokens: int | None = 0,
    *,
    allow_secrets: bool | None = None,
) -> CheckpointResult:
    """Record a worker's checkpoint as one commit on the task.

    ``tokens`` is the task's *cumulative* reported token count, so it may not
    be lower than the highest one reported (``None``: that highest, or 0: a
    worker that does not count its tokens). The author is the git identity.

    Raises:
        SecretDetected: the text looks like it holds a credential, unless
            ``allow_secrets`` (``None``: ``git config hydrate.allowSecrets``).
        ValidationError: empty summary, negative tokens, bad text.
        Conflict: ``tokens`` is lower than one already reported.
        NotFound: no live task ``task_id``.
    """
    validate.task_id(task_id)
    given = _checked_checkpoint(refs, summary, evidence, next_step, tokens or 0, allow_secrets)

    def apply(state: TaskState) -> Change[CheckpointResult]:
        previous = state.task.checkpoints
        # After a merge of concurrent checkpoints the newest one need not carry
        # the highest total, so compare against the maximum ever reported.
        highest = max((c.tokens for c in previous), default=0)
        # (tokens not counted: the total so far, as it is)
        checkpoint = msgspec.structs.replace(given, tokens=highest) if tokens is None else given
        total = checkpoint.tokens
        if previous and total < highest:
            raise Conflict(
                f"cumulative tokens {total} are lower than the {highest} already reported; "
                f"report the running total for task {task_id}"
            )
        number = len(previous) + 1
        text = checkpoint.summary.strip()
        first_line = text.splitlines()[0] if text else ""
        return Change(
            task=msgspec.structs.replace(state.task, checkpoints=[*previous, checkpoint]),
            links=state.links,
            message=task_message(
                f"checkpoint {task_id} #{number} ({total} tokens)",
                "checkpoint",
                task_id,
                number=str(number),
                tokens=str(total),
                checkpoint_summary=first_line[:200],
            ),
            result=cast(
                CheckpointResult,
                {"task_id": task_id, "number": number, **msgspec.to_builtins(checkpoint)},
            ),
        )

    return refs.write(task_id, apply)


# -- status --------------------------------------------------------------------


def _status_parts(state: TaskState) -> dict[str, Any]:
    """What ``status`` says of a task that does not depend on the clock.

    A pure function of the task's tip, so :func:`statuses` can keep it in the
    disposable cache keyed by tip; ``expiries`` lets the counts be judged later.
    """
    task = state.task
    latest = task.checkpoints[-1] if task.checkpoints else None
    return {
        **task_summary(state),
        "claimed_at": task.claimed_at,  # ("held by … since …")
        "taken_from": task.taken_from,
        "checkpoints": len(task.checkpoints),
        "checkpoint": msgspec.to_builtins(latest) if latest is not None else None,
        "token_budget": task.token_budget,
        # The maximum, not the latest: merged concurrent checkpoints may interleave.
        "reported": max((c.tokens for c in task.checkpoints), default=0),
        "expiries": [lk.expires for lk in state.links if lk.expires is not None],
        "depends_on": list(task.depends_on),
    }


def _status_from_parts(
    parts: dict[str, Any], archived: bool, now: float, stations: Mapping[str, str]
) -> StatusDict:
    result = dict(parts)
    depends = dependency_stations(result.pop("depends_on"), stations)
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
            "depends": depends,
        }
    )
    return cast(StatusDict, result)


def status(refs: TaskRefs, task_id: str, now: datetime | float | None = None) -> StatusDict:
    """The task's lifecycle summary (live or archived), with where each task it
    depends on stands; see ``Ledger.status``."""
    state, archived = refs.load_any(task_id)
    stations = _stations(refs, [state.task.depends_on])
    return _status_from_parts(_status_parts(state), archived, refs.now(now), stations)


def _stations(refs: TaskRefs, depends: Iterable[Sequence[str]]) -> Mapping[str, str]:
    """Every task's station when one of ``depends`` names any (else nothing is read)."""
    return station_of(refs, queue_summaries(refs)) if any(depends) else {}


def statuses(
    refs: TaskRefs,
    stations: str | Iterable[str] | None = None,
    now: datetime | float | None = None,
) -> list[StatusDict]:
    """:func:`status` of every live task, sorted by id, optionally only at ``stations``."""
    wanted = station_filter(stations)
    moment = refs.now(now)
    cache = SummaryCache(refs.repo, "status-cache", _StatusEntry)
    rows = [
        parts
        for parts in cache.summaries(refs, _status_parts).values()
        if "error" in parts or wanted is None or parts["status"] in wanted
    ]
    stations = _stations(refs, [parts.get("depends_on", ()) for parts in rows])
    return [
        cast(StatusDict, parts)
        if "error" in parts
        else _status_from_parts(parts, False, moment, stations)
        for parts in rows
    ]


# -- archive -------------------------------------------------------------------


def _ids_message(action: str, task_ids: list[str]) -> str:
    shown = ", ".join(task_ids[:5]) + (
        f", and {len(task_ids) - 5} more" if len(task_ids) > 5 else ""
    )
    noun = "task" if len(task_ids) == 1 else "tasks"
    trailers = [("Action", action), *(("Task", task_id) for task_id in task_ids)]
    return commit_message(f"{action} {len(task_ids)} {noun} ({shown})", trailers)


def _choose(
    refs: TaskRefs, named: list[str], done: bool, index: ArchiveIndex
) -> tuple[dict[str, TaskState], list[str], list[dict[str, str]]]:
    """The tasks to archive, the named ones already archived, and damaged skipped ones."""
    chosen: dict[str, TaskState] = {}
    already: list[str] = []
    for task_id in named:
        tip = refs.tip(task_id)
        if tip is None:
            if task_id in index.tasks:
                already.append(task_id)
                continue
            raise refs.missing(task_id)
        state = refs.read_state(task_id, tip)
        if state.task.status not in FINISHED_STATIONS:
            raise Conflict(
                f"task {task_id} is {state.task.status}; only done or cancelled tasks "
                f"can be archived (move it with: git hydrate status {task_id} --set STATION)"
            )
        why = _refused(task_id, state)
        if why:
            raise Conflict(
                f"task {task_id} is damaged, a pull would refuse it ({why}): mend it "
                "first: git hydrate doctor --repair"
            )
        chosen[task_id] = state
    damaged: list[dict[str, str]] = []
    if done:
        states = refs.load_many(t for t in refs.task_ids() if t not in chosen)
        for task_id, loaded in sorted(states.items()):
            if isinstance(loaded, CorruptData):
                # one damaged task must not keep every finished one live
                damaged.append({"task_id": task_id, "error": str(loaded)})
            elif loaded.task.status in FINISHED_STATIONS:
                why = _refused(task_id, loaded)  # (the archive travels: no damage in it)
                if why:
                    damaged.append({"task_id": task_id, "error": why})
                else:
                    chosen[task_id] = loaded
    return chosen, already, damaged


def _refused(task_id: str, state: TaskState) -> str:
    """Why a pull would refuse the task (``""``: it would not)."""
    from .sync.merging import task_json_problem

    return task_json_problem(task_id, state)


def _archive_commits(
    refs: TaskRefs, chosen: dict[str, TaskState], index: ArchiveIndex, moment: float
) -> tuple[list[bytes], dict[bytes, bytes | None], ArchiveIndex, list[RefUpdate]]:
    """For each chosen task: its ``archive`` commit, its tree, its index entry and
    the deletion of its ref."""
    who = refs.repo.identity().name_email.decode("utf-8", "replace")
    new_index = ArchiveIndex(tasks=dict(index.tasks))
    commits: list[bytes] = []
    trees: dict[bytes, bytes | None] = {}
    updates: list[RefUpdate] = []
    for task_id in sorted(chosen):
        state = chosen[task_id]
        assert state.tip is not None and state.tree is not None
        commit = refs.repo.write_commit(
            state.tree,
            [state.tip],
            task_message(f"archive {task_id}", "archive", task_id),
            when=refs.commit_when(moment),
        )
        commits.append(commit)
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
    return commits, trees, new_index, updates


def archive(refs: TaskRefs, task_ids: Iterable[str] = (), *, done: bool = False) -> ArchiveResult:
    """Fold finished tasks into ``refs/hydrate/archive`` and delete their refs.

    Args:
        task_ids: Tasks to archive; each must be live and ``done`` or
            ``cancelled`` (an id already archived is reported, not an error).
        done: Also archive every live task that is ``done`` or ``cancelled``.

    Raises:
        ValidationError: neither ids nor ``done`` given; a bad id.
        NotFound: an id that is neither live nor archived.
        Conflict: a task that is not done or cancelled.
        Busy: the refs kept changing under the write.

    Nothing is written unless every named task can be archived; the archive
    ref and the task refs change in one ref transaction.
    """
    named = list(dict.fromkeys(validate.task_id(t) for t in task_ids))
    if not named and not done:
        raise ValidationError("name the tasks to archive, or use --done for every finished task")
    repo = refs.repo
    for _attempt in attempts():
        current = read_archive(repo)
        chosen, already, damaged = _choose(refs, named, done, current.index)
        if not chosen:
            return {"archived": [], "already_archived": already, "damaged": damaged}
        moment = refs.clock()
        commits, trees, new_index, updates = _archive_commits(refs, chosen, current.index, moment)
        archive_tip, archive_tree = current.tip, current.tree
        if archive_tip is None:
            # A root commit first, so `git log --first-parent` of the archive
            # ref lists archive operations only.
            archive_tree = index_tree(repo, None, ArchiveIndex(), {})
            archive_tip = repo.write_commit(
                archive_tree,
                [],
                commit_message("start the archive", [("Action", "archive-start")]),
                when=refs.commit_when(moment),
            )
        tree = index_tree(repo, archive_tree, new_index, trees)
        message = _ids_message("archive", sorted(chosen))
        new_tip = repo.write_commit(
            tree, [archive_tip, *commits], message, when=refs.commit_when(moment)
        )
        updates.insert(0, (ARCHIVE_REF, current.tip, new_tip))
        try:
            repo.update_refs(updates, message)
        except RefRace:
            continue
        return {"archived": sorted(chosen), "already_archived": already, "damaged": damaged}
    raise Busy("the archive kept changing under this write; try again")


def unarchive(refs: TaskRefs, task_id: str) -> TaskDict:
    """Bring an archived task back as a live ref (at the station it was archived at).

    One ``unarchive`` commit is added to the task's chain; the task leaves the
    archive index in a new archive commit (whose history still holds it).

    Raises:
        NotFound: ``task_id`` is not archived.
        Conflict: a live task ``task_id`` exists.
    """
    validate.task_id(task_id)
    repo = refs.repo
    with refs.name_lock(task_id):  # an id differing only by case, created meanwhile
        for _attempt in attempts():
            current = read_archive(repo)
            entry = current.index.tasks.get(task_id)
            live = refs.tip(task_id)
            if entry is None:
                if live is not None:
                    raise Conflict(f"task {task_id} is not archived; it is live")
                raise NotFound(
                    f"task {task_id!r} is not in the archive (git hydrate list --archived "
                    "lists it)"
                )
            if live is not None:
                raise Conflict(
                    f"a live task {task_id} exists beside the archived one; "
                    "rename or archive it first"
                )
            refs.check_case_collision(task_id)
            assert current.tip is not None
            tip = entry.tip.encode("ascii")
            state = refs.read_state(task_id, tip)
            assert state.tree is not None
            moment = refs.clock()
            commit = repo.write_commit(
                state.tree,
                [tip],
                task_message(f"unarchive {task_id}", "unarchive", task_id),
                when=refs.commit_when(moment),
            )
            new_index = ArchiveIndex(
                tasks={k: v for k, v in current.index.tasks.items() if k != task_id}
            )
            tree = index_tree(repo, current.tree, new_index, {task_id.encode("ascii"): None})
            message = _ids_message("unarchive", [task_id])
            new_tip = repo.write_commit(
                tree, [current.tip], message, when=refs.commit_when(moment)
            )
            try:
                repo.update_refs(
                    [(ARCHIVE_REF, current.tip, new_tip), (ref_name(task_id), None, commit)],
                    message,
                )
            except RefRace:
                continue
            return get_task(refs, task_id)
    raise Busy("the archive kept changing under this write; try again")
