"""Pull: fetch the remote's tasks into the mirror and merge them task by task.

Absent here → create; behind → fast-forward; ahead → nothing; diverged → a
merge commit. Tasks removed or archived here (reachable from the removal
record or the archive) are not brought back unless changed since; local
tasks another clone removed or archived, unchanged here since, are dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from shlex import quote
from typing import Any

import msgspec

from ..archive import ARCHIVE_REF
from ..errors import Busy, Conflict, CorruptData, ValidationError
from ..ids import TASK_ID_RE, is_task_id
from ..model import RemovedTask
from ..store import RefRace
from ..taskrefs import TaskRefs, TaskState, attempts, ref_name
from .ancestry import quick_bases
from .dropping import Covered, drop_archived, drop_removed
from .fetch import fetch_mirror
from .merging import (
    merge_task,
    neutralise_tip,
    prefetch_remote,
    untouched_remote,
    validate_remote,
)
from .reconcile import archived_sides, reconcile_archived
from .remotes import Remote, overwriting_refspecs, replace_command, resolve_remote
from .removal import read_local_removed
from .report import WRITE_ACTIONS, Outcome, Report
from .union import UNION_REFS, pull_union_ref

__all__ = ["Covered", "check_ids", "drop_removed", "pull", "pull_into"]


class ReadAhead(msgspec.Struct, frozen=True):
    """What a pull learnt of all tasks at once before planning each one: the
    local tips (``known``), the remote states decoded (:func:`prefetch_remote`),
    the merge bases of tips one of which holds the other (:func:`quick_bases`)
    and the decoded states the text policy leaves as they are (:func:`untouched_remote`)."""

    known: dict[str, bytes]
    decoded: dict[str, TaskState | CorruptData]
    bases: dict[tuple[bytes, bytes], list[bytes]]
    untouched: frozenset[str] = frozenset()


def _read_ahead(
    refs: TaskRefs, remote_tasks: dict[str, bytes], known: dict[str, bytes]
) -> ReadAhead:
    """Read what planning every remote task needs, in a few pipelined passes: the
    histories of tasks moved on either side, then the remote tasks to check
    (not those the local task is ahead of: nothing of theirs is taken)."""
    moved = [
        (known[i], tip)
        for i, tip in remote_tasks.items()
        if i in known and known[i] != tip and is_task_id(i)
    ]
    bases = quick_bases(refs.repo, moved)
    differ = {
        i: tip
        for i, tip in remote_tasks.items()
        if known.get(i) != tip
        and is_task_id(i)
        and (i not in known or bases.get((known[i], tip)) != [tip])
    }
    decoded = prefetch_remote(refs, differ)
    return ReadAhead(known, decoded, bases, frozenset(untouched_remote(refs, decoded)))


def _plan_task(
    refs: TaskRefs,
    task_id: str,
    remote_tip: bytes,
    where: str,
    covered: Covered,
    removed_index: dict[str, RemovedTask],
    folded_ids: dict[str, str],
    ahead: ReadAhead | None = None,
) -> Outcome | None:
    """Decide (and prepare, for a merge) what pulling ``remote_tip`` does; move no ref.

    For :data:`WRITE_ACTIONS`, ``old``/``new`` are the compare-and-swap to apply; ``None``:
    up to date. The local tip is read, the merge bases asked of git and the remote's state
    decoded, or each is taken from ``ahead`` (a local tip moved since fails the CAS)."""
    if ahead is None:
        ahead = ReadAhead({}, {}, {})
        local = refs.repo.read_ref(ref_name(task_id))
    else:
        local = ahead.known.get(task_id)
    if local == remote_tip:
        return None
    note = ""
    bases: list[bytes] = []
    if local is None:
        refused = _refuse_new_task(task_id, remote_tip, where, covered, folded_ids)
        if refused is not None:
            return refused
        if task_id in removed_index:
            note = f"removed here, but changed on {where} since; restored"
    else:
        bases = ahead.bases.get((local, remote_tip)) or refs.repo.merge_bases(local, remote_tip)
        refused = _refuse_over_local(task_id, local, remote_tip, bases, where, covered)
        if refused is not None:
            return refused
    try:
        theirs = validate_remote(refs, task_id, remote_tip, ahead.decoded.get(task_id))
        covered.saw(task_id, theirs.task)
    except CorruptData as exc:
        return Outcome(
            task_id,
            "skipped",
            f"remote data invalid: {exc}{_replace_hint(task_id, local, remote_tip, where)}",
            old=local.decode() if local else None,
            new=remote_tip.decode(),
        )
    # (the text policy's verdict on exactly this state, found with all the others)
    untouched = task_id in ahead.untouched and theirs is ahead.decoded.get(task_id)
    return _take_remote(
        refs, task_id, (local, remote_tip), bases, theirs, where, note, folded_ids, untouched
    )


def _replace_hint(task_id: str, local: bytes | None, remote_tip: bytes, where: str) -> str:
    """How to put this clone's copy of ``task_id`` in place of the remote's damaged
    one (a push is rejected while the remote holds it, and no pull takes it), or
    nothing when this clone has none."""
    if local is None:
        return ""
    return (
        f"; to replace {where}'s copy with yours: "
        f"{replace_command(ref_name(task_id).decode(), remote_tip, where)}"
    )


def _refuse_new_task(
    task_id: str, remote_tip: bytes, where: str, covered: Covered, folded_ids: dict[str, str]
) -> Outcome | None:
    """Why a task this clone lacks is not taken from the remote (None: it is):
    it was removed or archived here, or its id clashes by case with a local one."""
    if covered.any(remote_tip):
        return Outcome(
            task_id,
            "not-restored",
            f"removed or archived here; {where} has no newer change",
            new=remote_tip.decode(),
        )
    other = folded_ids.get(task_id.casefold())
    if other is not None and other != task_id:
        return Outcome(
            task_id,
            "skipped",
            f"differs from local task {other!r} only by case (one clone made each: a "
            "case-insensitive file system cannot hold both; keep one: git hydrate task-rm "
            f"{other} --remote {where} here, after export {other} if its content is wanted, "
            f"or the same of {task_id} on a clone that has it)",
            new=remote_tip.decode(),
        )
    return None


def _refuse_over_local(
    task_id: str,
    local: bytes,
    remote_tip: bytes,
    bases: list[bytes],
    where: str,
    covered: Covered,
) -> Outcome | None:
    """Why the remote's tip does not change the local task (None: it does):
    the local task is ahead, or the remote holds a copy removed here."""
    if remote_tip in bases:
        return Outcome(
            task_id,
            "ahead",
            "local changes not on the remote yet; push them",
            old=local.decode(),
        )
    if covered.any(remote_tip):
        # The remote still has a copy removed (or archived) here, unchanged
        # since; the local task of that id is a new one. Merging would bring
        # the removed content back, so it is left out, and push replaces
        # the remote copy (under a lease on exactly that copy).
        return Outcome(
            task_id,
            "replaces-removed",
            f"{where} still has the copy removed here; push replaces it",
            old=local.decode(),
            new=remote_tip.decode(),
        )
    if not bases and covered.changed_since_removal(task_id, remote_tip):
        # The remote's copy is the task removed here, changed there since, and the
        # local task of that id is a new one: merged, the two tasks would blend.
        return Outcome(
            task_id,
            "skipped",
            f"{where}'s {task_id} is the task removed here, changed there since, and "
            f"{task_id} here is a new task of that id: they are not merged; keep one "
            f"(git hydrate task-rm {task_id} here, then pull to restore {where}'s, or "
            f"git hydrate task-rm {task_id} --remote {quote(where)})",
            old=local.decode(),
            new=remote_tip.decode(),
        )
    return None


def _take_remote(
    refs: TaskRefs,
    task_id: str,
    tips: tuple[bytes | None, bytes],
    bases: list[bytes],
    theirs: TaskState,
    where: str,
    note: str,
    folded_ids: dict[str, str],
    untouched: bool = False,
) -> Outcome:
    """The new tip of a validated remote task: created (or restored), fast-forwarded
    or merged with the local one, then held to the text policy (``untouched``:
    ``theirs`` is known to pass it; a merge's result is checked all the same)."""
    local, remote_tip = tips
    conflicts: list[dict[str, Any]] = []
    if local is None:
        new, action = remote_tip, ("restored" if note else "created")
        folded_ids[task_id.casefold()] = task_id
    elif local in bases:
        new, action = remote_tip, "fast-forward"
    else:
        try:
            new, result = merge_task(refs, task_id, local, remote_tip, theirs, where)
        except CorruptData as exc:
            return Outcome(task_id, "skipped", f"cannot merge: {exc}", old=local.decode())
        action = "merged"
        conflicts = [c.as_dict() for c in result.conflicts]
        if conflicts:
            note = "changed on both sides: " + ", ".join(c["field"] for c in conflicts)
        theirs = refs.read_state(task_id, new)  # what to hold to the text policy
        untouched = False
    new, changed = (new, {}) if untouched else neutralise_tip(refs, task_id, new, theirs, where)
    if changed:
        fixed = "neutralised " + ", ".join(f"{what} ({why})" for what, why in changed.items())
        note = f"{note}; {fixed}" if note else fixed
    return Outcome(
        task_id,
        action,
        note,
        old=local.decode() if local else None,
        new=new.decode(),
        conflicts=conflicts,
    )


def _pull_task(
    refs: TaskRefs,
    task_id: str,
    remote_tip: bytes,
    where: str,
    covered: Covered,
    removed_index: dict[str, RemovedTask],
    folded_ids: dict[str, str],
) -> Outcome | None:
    """Plan and apply one task's pull with its own compare-and-swap, retrying races."""
    for _attempt in attempts():
        outcome = _plan_task(refs, task_id, remote_tip, where, covered, removed_index, folded_ids)
        if outcome is None or outcome.action not in WRITE_ACTIONS:
            return outcome
        assert outcome.new is not None
        old = outcome.old.encode() if outcome.old else None
        try:
            # a reflog entry for a task moved, none for one created (as in a batch)
            refs.repo.update_refs(
                [(ref_name(task_id), old, outcome.new.encode())],
                f"hydrate: pull {task_id} from {where}",
                reflog=old is not None,
            )
        except RefRace:
            continue
        except Conflict as exc:
            # the ref cannot be made here (a stray ref in the way): this task only
            return Outcome(task_id, "skipped", str(exc), new=outcome.new)
        return outcome
    raise Busy(f"task {task_id} kept changing under this pull; try again")


def _apply_batch(refs: TaskRefs, outcomes: list[Outcome], where: str) -> set[str]:
    """Move the planned refs in ``git update-ref --stdin`` transactions; return
    the tasks of a transaction that failed (the caller redoes them one by one).

    Each transaction is all or nothing, each update checked against the old
    value it was planned from. The tasks this pull creates go in one without
    reflogs (no earlier value to recover; the remote and the mirror hold this
    one), which halves what git writes for a first pull of many tasks; the
    tasks it moves (fast-forward, merge) go in another, with reflog entries.
    One transaction instead of a locked write per task makes a first pull of
    many tasks several times faster.
    """
    created = [o for o in outcomes if o.old is None]
    moved = [o for o in outcomes if o.old is not None]
    failed: set[str] = set()
    for group, reflog in ((created, False), (moved, True)):
        if not group:
            continue
        updates = []
        for outcome in group:
            assert outcome.new is not None
            old = outcome.old.encode() if outcome.old is not None else None
            updates.append((ref_name(outcome.name), old, outcome.new.encode()))
        try:
            refs.repo.update_refs(updates, f"hydrate: pull from {where}", reflog=reflog)
        except (RefRace, Conflict):
            failed.update(o.name for o in group)
    return failed


def check_ids(ids: Iterable[str]) -> list[str]:
    """The task ids asked for, checked, sorted, without repeats."""
    wanted = []
    for task_id in ids:
        if not isinstance(task_id, str) or not TASK_ID_RE.match(task_id):
            raise ValidationError(f"invalid task id {task_id!r}")
        wanted.append(task_id)
    return sorted(set(wanted))


def pull_into(
    refs: TaskRefs, remote: Remote, ids: list[str], report: Report
) -> dict[bytes, bytes]:
    """Pull ``remote`` (only ``ids`` when given), adding each outcome to ``report``;
    return the mirror as this pull's fetch left it (what the remote then held)."""
    read_local_removed(refs.repo)  # damaged, it would stop this pull halfway: stop now
    had_mirror = refs.repo.has_refs_under(remote.mirror_prefix)
    stuck: dict[bytes, str] = {}
    fetched = fetch_mirror(refs.repo, remote, stuck)
    where = remote.display
    report.outcomes += _not_fetched(stuck)
    # (a ref the fetch left out holds what an earlier fetch saw: nothing is taken from it)
    mirror = {name: tip for name, tip in fetched.items() if name not in stuck}
    if not mirror and not stuck:  # (a ref left out for its lock: the remote listed it)
        report.notes.append(_nothing_listed(where, had_mirror))
    if not remote.is_url:  # (this pull's fetch is not one of them: a plain one is)
        found = overwriting_refspecs(refs)
        report.notes += [e["problem"] for e in found if e["remote"] == remote.target]
    other_archived = archived_sides(refs.repo, mirror.get(ARCHIVE_REF[len(b"refs/hydrate/") :]))
    for ref in UNION_REFS:
        tip = mirror.get(ref[len(b"refs/hydrate/") :])
        if tip is not None:
            outcome = pull_union_ref(refs, ref, tip, where)
            if outcome is not None:
                report.outcomes.append(outcome)
    remote_tasks: dict[str, bytes] = {}
    for name, oid in mirror.items():
        if name.startswith(b"tasks/"):
            remote_tasks[name[len(b"tasks/") :].decode("utf-8", "backslashreplace")] = oid
    if ids:
        for task_id in ids:
            if task_id not in remote_tasks and b"tasks/" + task_id.encode() not in stuck:
                report.outcomes.append(Outcome(task_id, "absent", f"not on {where}"))
        remote_tasks = {k: v for k, v in remote_tasks.items() if k in ids}
    covered = Covered(refs)
    removed_index = read_local_removed(refs.repo)[1]
    all_local = refs.task_tips()
    local = {k: v for k, v in all_local.items() if k in ids} if ids else all_local
    dropped = drop_removed(refs, local, remote_tasks, covered, removed_index, where)
    report.outcomes += dropped
    gone = {o.name for o in dropped if o.action == "removed"}
    archived = drop_archived(refs, {k: v for k, v in local.items() if k not in gone}, covered)
    report.outcomes += archived
    gone |= {o.name for o in archived}
    folded = {task_id.casefold(): task_id for task_id in all_local if task_id not in gone}
    with refs.repo.remembering():
        deleted = {o.name for o in dropped + archived if o.action in ("removed", "archived")}
        known = {k: v for k, v in all_local.items() if k not in deleted}
        # what the checks will read, read ahead (objects never change)
        ahead = _read_ahead(refs, remote_tasks, known)
        planned = _plan_all(refs, remote_tasks, where, covered, removed_index, folded, ahead)
        report.up_to_date += sum(
            1 for i, tip in remote_tasks.items() if known.get(i) == tip and is_task_id(i)
        )
        _apply_all(refs, planned, remote_tasks, where, covered, removed_index, folded, report)
    report.removed_then_restored()
    covered.sightings.save()
    # Last, so that a task just brought in meets the archive entry it collides with.
    report.outcomes += reconcile_archived(refs, ids or None, where, other_archived)
    return fetched


def _not_fetched(stuck: dict[bytes, str]) -> list[Outcome]:
    """A skipped outcome for each ref the fetch left out, its mirror ref's lock
    left behind (:func:`.fetch.fetch_mirror`): the rest of the pull goes on."""
    outcomes = []
    for name, why in sorted(stuck.items()):
        if name.startswith(b"tasks/"):
            outcomes.append(Outcome(name[len(b"tasks/") :].decode(), "skipped", why))
        else:
            outcomes.append(
                Outcome(f"refs/hydrate/{name.decode()}", "skipped", why, is_task=False)
            )
    return outcomes


def _nothing_listed(where: str, had_mirror: bool) -> str:
    """The note for a fetch that found no ``refs/hydrate/`` ref: a fetch cannot
    tell "nothing there" from "hidden from you", so it says both."""
    hidden = "uploadpack.hideRefs or transfer.hideRefs on the remote"
    lists = (
        "lists no refs/hydrate/ refs any more: removed there"
        if had_mirror
        else "lists no refs/hydrate/ refs: none pushed yet"
    )
    return f"{where} {lists}, or hidden ({hidden})"


def _plan_all(
    refs: TaskRefs,
    remote_tasks: dict[str, bytes],
    where: str,
    covered: Covered,
    removed_index: dict[str, RemovedTask],
    folded: dict[str, str],
    ahead: ReadAhead,
) -> list[Outcome]:
    """The planned outcome of each remote task that differs from its local tip
    (as ``ahead`` knows it)."""
    planned: list[Outcome] = []
    for task_id, tip in sorted(remote_tasks.items()):
        if not is_task_id(task_id):
            # Someone else's stray ref: reported, never taken, and no failure of
            # this pull (nothing here could fix it).
            planned.append(
                Outcome(
                    f"refs/hydrate/tasks/{task_id}",
                    "ignored",
                    "not a valid task id",
                    new=tip.decode(),
                    is_task=False,
                )
            )
            continue
        if ahead.known.get(task_id) == tip:
            continue  # up to date
        outcome = _plan_task(refs, task_id, tip, where, covered, removed_index, folded, ahead)
        assert outcome is not None  # (None only when the tips are equal)
        planned.append(outcome)
    return planned


def _apply_all(
    refs: TaskRefs,
    planned: list[Outcome],
    remote_tasks: dict[str, bytes],
    where: str,
    covered: Covered,
    removed_index: dict[str, RemovedTask],
    folded: dict[str, str],
    report: Report,
) -> None:
    """Move the planned refs in one transaction, or task by task when something
    moved meanwhile; add the outcomes to ``report``."""
    writes = [o for o in planned if o.action in WRITE_ACTIONS]
    failed = _apply_batch(refs, writes, where) if writes else set()
    if failed:
        # Something moved meanwhile: task by task, each with its own retries.
        for index, outcome in enumerate(planned):
            if outcome.action in WRITE_ACTIONS and outcome.name in failed:
                tip = remote_tasks[outcome.name]
                redone = _pull_task(refs, outcome.name, tip, where, covered, removed_index, folded)
                planned[index] = redone or Outcome(outcome.name, "up-to-date")
        report.up_to_date += sum(o.action == "up-to-date" for o in planned)
        planned = [o for o in planned if o.action != "up-to-date"]
    report.outcomes += planned


def pull(refs: TaskRefs, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Fetch the remote's tasks into the mirror and merge them task by task.

    Args:
        refs: The local tasks.
        remote: A remote name or URL; ``None`` picks the current branch's
            remote, else ``origin``.
        ids: Only these tasks (default: all).

    Returns:
        A :class:`Report`; ``report.ok`` is False when a task was skipped
        because the remote's data failed validation.
    """
    wanted = check_ids(ids)
    where = resolve_remote(refs, remote)
    report = Report("pull", where.display)
    pull_into(refs, where, wanted, report)
    return report
