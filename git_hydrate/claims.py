"""Coordinating workers: claims that are atomic through a git remote.

The ready queue, what a holder holds and when a claim is stale are
:mod:`git_hydrate.readyqueue`'s. A *claim* records the holder (``assignee``),
the moment (``claimed_at``) and moves the task to ``in_progress`` in one
commit. Locally that commit lands by compare-and-swap on the task's ref.
Through a remote it is made on top of what a pull just brought, and pushed
*without force* before the local ref moves: the remote accepts it only if
nobody moved the task meanwhile, so of two workers claiming at once exactly
one push succeeds. The other is refused by the remote itself, pulls, and
reports who holds the task (``claim --next`` goes on to the next ready task).
A refused claim leaves nothing behind but an unreferenced commit.

A claim is *stale* when neither the claim nor a checkpoint is more recent
than a given age (on two clocks: see :func:`git_hydrate.readyqueue.is_stale`);
``claim --steal`` takes such a task and records whom it
took it from (``taken_from``). Two claims that meet in a merge anyway (one
made offline) are settled by the merge rules: a claim wins over a release,
the earlier of two claims wins (see :mod:`git_hydrate.merge`).

``claim --next`` is idempotent per holder: a retried one (a worker killed
after its push, before it heard the answer) finds the task that holder
already holds, after the pull when through a remote, before taking another
(unless ``another``).
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Final, cast

import msgspec

from . import textpolicy, validate
from .dependencies import (
    blocking_graph,
    find_cycle,
    named_waits,
    open_children,
    queue_summaries,
    shown_cycle,
    station_of,
    waiting_for,
    why_none_ready,
)
from .errors import Conflict, GitFailed, NotFound, ValidationError
from .listing import task_filter
from .model import INITIAL_STATION, Task
from .readyqueue import CLAIMED_STATION, STEALABLE, held, is_stale, ready
from .results import ClaimResult, ReleaseResult
from .sightings import Sightings
from .sync.pulling import pull_into
from .sync.pushing import classify_refusal
from .sync.remotes import Remote, resolve_remote
from .sync.report import Report
from .taskrefs import (
    Change,
    TaskRefs,
    TaskState,
    Unchanged,
    attempts,
    iso_utc,
    ref_name,
    task_message,
)
from .textpolicy import message_text

__all__ = [
    "CLAIMED_STATION",
    "CLAIM_ATTEMPTS",
    "DEFAULT_STALE_AFTER",
    "claim",
    "default_holder",
    "default_remote",
    "held",
    "pull_queue",
    "ready",
    "release",
]

#: How old a claim (and its last checkpoint) must be before ``claim --steal`` takes it.
DEFAULT_STALE_AFTER: Final = 4 * 3600.0
#: After a refused push, ``claim --next`` picks at random among this many next tasks.
_SPREAD: Final = 8
#: Pushes a remote claim tries before giving up (each refused one means that
#: someone else moved a task meanwhile).
CLAIM_ATTEMPTS: Final = 32


def default_remote(refs: TaskRefs, remote: str | None, local: bool) -> str | None:
    """The remote a claim goes through: ``remote``, else ``hydrate.claimRemote``;
    ``None`` (this repository only) with ``local``."""
    if local:
        return None
    return remote if remote is not None else refs.repo.settings.text("hydrate.claimRemote")


def default_holder(refs: TaskRefs) -> str:
    """The git identity (``Name <email>``) a claim records when no ``--as`` is given."""
    return refs.repo.identity().name_email.decode("utf-8", "replace")


def _held_by(task: Any) -> str:
    """``NAME since WHEN`` for a message, whatever the stored values hold."""
    return f"{message_text(task.assignee)} since {message_text(task.claimed_at) or '?'}"


# -- claim and release -------------------------------------------------------------------


def _claim_change(
    refs: TaskRefs,
    task_id: str,
    holder: str,
    steal_after: float | None,
    moment: float,
    via: str = "",
) -> Callable[[TaskState], Change[ClaimResult]]:
    """The claim of ``task_id`` by ``holder`` as a change, refusing what may not be taken.

    ``via`` names the remote the claim is pushed to (``""``: this clone only); a
    merge prefers a claim a remote accepted over one it did not.
    """
    summaries = queue_summaries(refs)
    stations = station_of(refs, summaries)
    graph = blocking_graph(summaries)  # dependencies, then children
    children = open_children(summaries).get(task_id, [])
    sightings = Sightings(refs.repo)

    def apply(state: TaskState) -> Change[ClaimResult]:
        task = state.task
        taken_from = ""
        if (
            task.assignee == holder
            and task.status == CLAIMED_STATION
            and (task.claimed_via or not via)
        ):
            raise Unchanged(_claim_result(task_id, task, False))
        if task.assignee and task.assignee != holder:
            taken_from = _steal_or_refuse(task_id, task, sightings, steal_after, moment)
        elif not task.assignee:
            _refuse_unless_ready(task_id, task, [*task.depends_on, *children], stations, graph)
        if task.assignee == holder and not taken_from:
            taken_from = task.taken_from  # publishing one's own offline claim keeps it
        claimed = msgspec.structs.replace(
            task,
            status=CLAIMED_STATION,
            assignee=holder,
            claimed_at=task.claimed_at if task.assignee == holder else iso_utc(moment),
            taken_from=taken_from,
            claimed_via=via,
        )
        extra = {"taken_from": taken_from} if taken_from else {}
        return Change(
            task=claimed,
            links=state.links,
            message=task_message(
                f"claim {task_id} for {holder}", "claim", task_id, holder=holder, **extra
            ),
            result=_claim_result(task_id, claimed, True),
        )

    return apply


def _claim_result(task_id: str, task: Task, changed: bool) -> ClaimResult:
    """What a claim of ``task_id`` answers, ``task`` being the task after it."""
    return {
        "task_id": task_id,
        "assignee": task.assignee,
        "claimed_at": task.claimed_at,
        "taken_from": task.taken_from,
        "status": task.status,
        "changed": changed,
        "remote": None,
        "attempts": 1,
    }


def _steal_or_refuse(
    task_id: str,
    task: Task,
    sightings: Sightings,
    steal_after: float | None,
    moment: float,
) -> str:
    """The holder a task held by someone else is taken from, when stealing is
    asked and the claim is stale; else :class:`Conflict`."""
    last = max((c.at for c in task.checkpoints), default="")
    held = _held_by(task)
    if steal_after is None:
        raise Conflict(
            f"task {task_id} is held by {held}; take a ready one with: git hydrate claim --next"
        )
    if task.status not in STEALABLE or not is_stale(
        sightings, task_id, task.assignee, task.claimed_at, last, moment, steal_after
    ):
        raise Conflict(
            f"task {task_id} is held by {held} "
            f"(last checkpoint {message_text(last) or 'none'}): not stale, so not taken"
        )
    return task.assignee


def _refuse_unless_ready(
    task_id: str,
    task: Task,
    waits_on: list[str],
    stations: dict[str, str],
    graph: dict[str, list[str]],
) -> None:
    """:class:`Conflict` unless the unheld task is open, everything it waits on
    (``waits_on``: its dependencies, then its open children) is done, and it is
    on no dependency cycle."""
    if task.status != INITIAL_STATION:
        raise Conflict(f"task {task_id} is {task.status}, not open: only open tasks are claimed")
    # (the cycle first: it is what must change, the tasks on it wait for ever)
    loop = find_cycle({**graph, task_id: waits_on}, task_id)
    if loop is not None:
        raise Conflict(
            f"task {task_id} is not ready: it is on a dependency cycle "
            f"({shown_cycle(loop)}); break it with git hydrate task-edit"
        )
    waits = list(dict.fromkeys(waiting_for(waits_on, stations)))  # (a child it depends on: once)
    if waits:
        raise Conflict(f"task {task_id} is not ready: it waits for {named_waits(task_id, waits)}")


def _release_change(
    task_id: str, holder: str, force: bool
) -> Callable[[TaskState], Change[ReleaseResult]]:
    def apply(state: TaskState) -> Change[ReleaseResult]:
        task = state.task
        if not task.assignee:
            raise Unchanged(
                {
                    "task_id": task_id,
                    "released": "",
                    "status": task.status,
                    "changed": False,
                    "remote": None,
                }
            )
        if task.assignee != holder and not force:
            shown = message_text(task.assignee)
            raise Conflict(
                f"task {task_id} is held by {shown}, not {holder}: only its holder releases "
                f"it; to release it anyway: git hydrate release {task_id} --force "
                f"(or, as its holder: --as {shlex.quote(shown)})"
            )
        status = INITIAL_STATION if task.status == CLAIMED_STATION else task.status
        released = msgspec.structs.replace(
            task, assignee="", claimed_at="", taken_from="", claimed_via="", status=status
        )
        return Change(
            task=released,
            links=state.links,
            message=task_message(
                f"release {task_id} by {task.assignee}", "release", task_id, holder=task.assignee
            ),
            result={
                "task_id": task_id,
                "released": task.assignee,
                "status": status,
                "changed": True,
                "remote": None,
            },
        )

    return apply


def pull_queue(refs: TaskRefs, remote: str | None = None, *, local: bool = False) -> Report | None:
    """Pull every task from ``remote`` (:func:`default_remote`) before reading the
    queue (``ready``); ``None`` when the queue is this repository's only."""
    remote = default_remote(refs, remote, local)
    if remote is None:
        return None
    where = resolve_remote(refs, remote, takes_ids=False)
    report = Report("pull", where.display)
    pull_into(refs, where, [], report)
    return report


def _pull(refs: TaskRefs, remote: Remote, task_id: str | None) -> set[str]:
    """Pull everything from ``remote``; a failure to bring ``task_id`` is the claim's.

    Returns the tasks the pull skipped: their local state is not the remote's, so a
    claim of one would only be refused (``claim --next`` passes them by).
    """
    report = Report("pull", remote.display)
    pull_into(refs, remote, [], report)
    skipped = {o.name for o in report.outcomes if o.is_task and o.action == "skipped"}
    for outcome in report.outcomes:
        if outcome.name == task_id and outcome.action == "skipped":
            raise Conflict(f"task {task_id}: pull from {remote.display} failed: {outcome.detail}")
    return skipped


def _publish(refs: TaskRefs, remote: Remote, task_id: str, commit: bytes) -> bool:
    """Push ``commit`` as the task's ref without force: ``True`` if the remote took it,
    ``False`` if it moved meanwhile; anything else it refuses is an error."""
    ref = ref_name(task_id).decode()
    pushed, hooks = refs.repo.push_with_messages(
        remote.target, [f"{commit.decode()}:{ref}"], what=f"git push {remote.display}"
    )
    for flag, dest, summary in pushed:
        if dest != ref:
            continue
        if flag in (" ", "*", "="):
            return True
        action, detail = classify_refusal(summary, remote.display, hooks)
        if action == "rejected":  # moved, or its lock held, by another push: a race
            return False
        raise Conflict(f"task {task_id}: {detail}")
    raise GitFailed(f"git push {remote.display} reported nothing for {ref}")


def _through_remote(
    refs: TaskRefs,
    remote: str,
    only: str | None,
    candidates: Callable[[], list[str]],
    change_for: Callable[[str, str], Callable[[TaskState], Change[Any]]],
    first_error: Callable[[], Exception],
) -> Any:
    """Apply a claim or release through ``remote``: pull, commit, push without force.

    ``candidates`` names the tasks to try, in order, after each pull (one task
    for ``claim ID``, the ready queue for ``claim --next``). A push the remote
    refuses because the task moved tries the next candidate, then pulls again.
    With no task named (``only``), a queue emptied meanwhile is ``first_error()``
    (nothing ready), not the error of a task the caller never named.
    """
    where = resolve_remote(refs, remote, takes_ids=False)
    tried = 0
    last_error: Exception | None = None
    for _attempt in attempts(CLAIM_ATTEMPTS):
        passed_by = _pull(refs, where, only)
        listed = candidates()
        names = [name for name in listed if name not in passed_by]
        if not names and listed:
            shown = ", ".join(sorted(set(listed) & passed_by)[:5])
            raise Conflict(
                f"no task is ready that {where.display} agrees on: its pull skipped {shown} "
                f"(see: git hydrate pull {where.word})"
            )
        if not names:
            raise (last_error if only is not None else None) or first_error()
        refused = False
        queue = list(names)
        while queue:
            # In queue order, until a push is refused: the workers that lost that race
            # would all try the same next task, so each then picks among the next few.
            task_id = queue.pop(random.randrange(min(len(queue), _SPREAD)) if refused else 0)
            try:
                tip, commit, result = refs.prepare(task_id, change_for(task_id, where.display))
            except Conflict as exc:
                last_error = exc  # taken or not ready any more: the next one
                continue
            if commit is None:
                commit = tip  # already so here: make sure the remote has it too
            tried += 1
            if not _publish(refs, where, task_id, commit):
                refused = True
                continue  # someone moved it first: maybe the next one is free
            if commit != tip and not refs.advance(task_id, tip, commit, "hydrate: claim"):
                _pull(refs, where, task_id)  # written here meanwhile: merge it in
            result["remote"] = where.display
            if "attempts" in result:
                result["attempts"] = tried
            return result
        if not refused:  # nothing left to try: not a race
            raise (last_error if only is not None else None) or first_error()
    raise Conflict(
        f"gave up after {tried} refused pushes to {where.display}: "
        "too many workers are moving the same tasks; try again"
    )


def claim(
    refs: TaskRefs,
    task_id: str | None = None,
    *,
    holder: str | None = None,
    remote: str | None = None,
    steal: bool = False,
    stale_after: float = DEFAULT_STALE_AFTER,
    kind: str | Iterable[str] | None = None,
    tag: str | Iterable[str] | None = None,
    now: datetime | float | None = None,
    local: bool = False,
    another: bool = False,
) -> ClaimResult:
    """Claim ``task_id`` (``None``: the first ready task) for ``holder``.

    With no ``task_id``, a task ``holder`` already holds (``in_progress``, the
    oldest claim first; on the remote too, once pulled) is the answer, unchanged
    (``changed: False``): a retried claim finds the task the first one took
    before it could say so. ``another`` takes the next ready task anyway.

    Args:
        holder: Who takes it (default: the git identity).
        remote: Claim through this remote (pull, then push without force);
            ``None``: ``hydrate.claimRemote`` if set, else this repository only.
        local: This repository only, whatever ``hydrate.claimRemote`` says.
        steal: Also take a task whose claim is stale at ``stale_after`` seconds.
        kind, tag: With no ``task_id``, only ready tasks of these.

    Raises:
        Conflict: someone else holds the task, or it is not ready (named).
        NotFound: no such task; with no ``task_id``, no task is ready.
    """
    who = _claim_holder(refs, holder)
    remote = default_remote(refs, remote, local)
    if task_id is not None:
        validate.task_id(task_id)
    steal_after = _steal_after(stale_after, steal)

    def change_for(name: str, via: str = "") -> Callable[[TaskState], Change[ClaimResult]]:
        return _claim_change(refs, name, who, steal_after, refs.now(now), via)

    def candidates() -> list[str]:
        if task_id is not None:
            return [task_id]
        mine = [] if another else held(refs, who, kind=kind, tag=tag, stations=[CLAIMED_STATION])
        queue = ready(refs, kind=kind, tag=tag, include_stale=steal_after, now=now)
        return [item["task_id"] for item in (*mine, *queue)]

    def nothing_ready() -> Exception:
        why = why_none_ready(refs, task_filter(kind=kind, tag=tag))
        return NotFound("no task is ready" + (" (nor stale)" if steal else "") + why)

    if remote is not None:
        return cast(
            ClaimResult,
            _through_remote(refs, remote, task_id, candidates, change_for, nothing_ready),
        )
    return _claim_here(refs, candidates(), change_for, nothing_ready, named=task_id is not None)


def _steal_after(stale_after: float, steal: bool) -> float | None:
    """The age (seconds) past which a claim may be taken over; None: ``steal`` is not asked."""
    if stale_after <= 0:
        raise ValidationError("the stale age must be positive")
    return stale_after if steal else None


def _claim_holder(refs: TaskRefs, holder: str | None) -> str:
    """Who claims: ``holder`` (default: the git identity), held to the text policy."""
    who = validate.holder(holder) if holder is not None else default_holder(refs)
    textpolicy.check_all(
        refs.repo.settings, [textpolicy.Field("holder name", who, textpolicy.HOLDER)], None
    )
    return who


def _claim_here(
    refs: TaskRefs,
    names: list[str],
    change_for: Callable[[str], Callable[[TaskState], Change[ClaimResult]]],
    nothing_ready: Callable[[], Exception],
    *,
    named: bool = True,
) -> ClaimResult:
    """Claim, in this repository only, the first of ``names`` still free when written
    (``named``: the task the caller named; else the queue, which another process
    can empty meanwhile: then nothing is ready, whoever took the last one)."""
    if not names:
        raise nothing_ready()
    error: Exception | None = None
    for name in names:
        try:
            return refs.write(name, change_for(name))
        except Conflict as exc:
            error = exc  # taken meanwhile by another process here: the next one
    assert error is not None
    raise error if named else nothing_ready()


def release(
    refs: TaskRefs,
    task_id: str,
    *,
    holder: str | None = None,
    remote: str | None = None,
    force: bool = False,
    local: bool = False,
) -> ReleaseResult:
    """Give ``task_id`` back: nobody holds it, and an ``in_progress`` task is ``open`` again.

    Only the holder releases (``force`` lets anyone). Through ``remote`` as
    :func:`claim` does.
    """
    who = validate.holder(holder) if holder is not None else default_holder(refs)
    remote = default_remote(refs, remote, local)
    validate.task_id(task_id)
    change = _release_change(task_id, who, force)
    if remote is not None:
        return cast(
            ReleaseResult,
            _through_remote(
                refs,
                remote,
                task_id,
                lambda: [task_id],
                lambda _name, _via: change,
                lambda: NotFound(f"no task {task_id}"),
            ),
        )
    return refs.write(task_id, change)
