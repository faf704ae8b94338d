"""Push: task refs without force, the shared refs, and per-ref results.

A rejected task (the remote has changes this clone lacks) is reported by id;
every other ref still goes through. A task the remote refuses only because it
moved past what this clone last saw of it (the local tip is the mirror's, or
an ancestor of it: nothing of this clone's own is in it) is no failure: it is
reported as ``behind``, with the pull that brings it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Sequence
from shlex import quote
from typing import Final

from ..archive import read_archive
from ..errors import Busy, Conflict, CorruptData, GitFailed
from ..store import PushResult, RefRace, RefUpdate
from ..store.process import bounded_lines
from ..taskrefs import TASK_REF_PREFIX, TaskRefs, names_a_task, ref_name
from .ancestry import quick_bases
from .damaged import damaged_there
from .outgoing import refused_shared_ref, refused_tasks
from .pulling import Covered, check_ids
from .remotes import Remote, resolve_remote
from .removal import read_local_removed
from .report import Outcome, Report
from .union import UNION_REFS

__all__ = [
    "LOST_LOCK_REASONS",
    "RACE_REASONS",
    "classify_refusal",
    "push",
    "push_into",
    "settled",
    "update_mirror",
]

_PUSH_ACTIONS: Final = {
    "*": "pushed-new",
    " ": "pushed",
    "+": "forced",
    "-": "deleted-remote",
    "=": "up-to-date",
    "!": "rejected",
}


#: The reasons git gives for a refusal that means "the remote moved since you
#: last fetched": the only ones a pull (``sync``) can settle.
RACE_REASONS: Final = ("fetch first", "non-fast-forward", "stale info")
#: What the remote says when a concurrent push held the ref's lock: the same race
#: (the other push won; pull and push again), not a refusal.
LOST_LOCK_REASONS: Final = ("failed to update ref", "failed to lock", "cannot lock ref")


def classify_refusal(summary: str, where: str, hook_lines: Sequence[str] = ()) -> tuple[str, str]:
    """``(action, detail)`` of a ref git reports as refused (flag ``!``).

    ``rejected`` is a race: the remote has changes this clone lacks, and
    ``sync`` settles it. Everything else is ``refused``, named once with what
    to do, because pulling cannot change the remote's mind.
    """
    word = quote(where)  # (where as the commands below name it)
    if any(race in summary for race in RACE_REASONS):
        return (
            "rejected",
            f"{summary}; {where} has changes you do not have: run git hydrate sync {word}",
        )
    if any(lost in summary for lost in LOST_LOCK_REASONS):
        return (
            "rejected",
            f"{summary}; another push to {where} held the ref meanwhile: "
            f"run git hydrate sync {word}",
        )
    if "atomic transaction failed" in summary:  # (the remote's refs moved under it)
        return (
            "rejected",
            f"{summary}; another push to {where} landed while this one was on its way: "
            f"run git hydrate sync {word}",
        )
    if "hidden ref" in summary:
        return "refused", (
            f"{summary}; {where} hides refs/hydrate/ (transfer.hideRefs or receive.hideRefs): "
            "ask its owner to stop hiding it, or share through another remote"
        )
    if "hook declined" in summary:
        said = f" saying: {' / '.join(bounded_lines(hook_lines, 3))}" if hook_lines else ""
        return "refused", (
            f"{summary}; a hook on {where} declined it{said}; a pull cannot change that: "
            "ask the remote's owner"
        )
    return "refused", f"{summary}; {where} refused it, and a pull cannot change that"


def _task_refspecs(
    refs: TaskRefs, ids: list[str] | None, report: Report, mirror: dict[bytes, bytes]
) -> list[str]:
    """The refspecs that push ``ids`` (all tasks when ``None``): never a ref that
    is not a task id, nor a task a pull would refuse (reported)."""
    repo = refs.repo
    if ids is not None:
        present = []
        for task_id in ids:
            if repo.read_ref(ref_name(task_id)) is None:
                report.outcomes.append(Outcome(task_id, "absent", "no such task here"))
            else:
                present.append(ref_name(task_id).decode())
        held = _held_back(refs, present, report, mirror) if present else []
        return [f"{ref}:{ref}" for ref in present if ref not in held]
    if not repo.has_refs_under(TASK_REF_PREFIX):
        return []
    refspecs = ["refs/hydrate/tasks/*:refs/hydrate/tasks/*"]
    # Never publish a ref that is not a task id: a negative refspec (git
    # 2.29+) for each one git would push. for-each-ref lists only the
    # names git accepts (a broken name, it skips, and refuses in a refspec).
    strays = set(refs.stray_ref_names())
    listed = repo.listed_ref_names(TASK_REF_PREFIX) if strays else []
    refspecs += ["^" + os.fsdecode(name) for name in listed if name in strays]
    unlisted = len(strays) - (len(refspecs) - 1)  # (names git refuses: never pushed)
    held = _held_back(refs, [TASK_REF_PREFIX.decode()], report, mirror)
    refspecs += ["^" + name for name in held]
    excluded = len(refspecs) - 1
    # (every ref file counts: one git ignores as broken is left out by name too)
    if excluded and excluded >= len(repo.ref_names_under(TASK_REF_PREFIX)) - unlisted:
        return []  # (every one left out: a push of nothing is git's "hung up")
    return refspecs


def _held_back(
    refs: TaskRefs, patterns: list[str], report: Report, mirror: dict[bytes, bytes]
) -> list[str]:
    """The task refs among ``patterns`` that a pull would refuse, each reported as
    skipped: pushed, the damage would reach every clone, and stay (see
    :mod:`.outgoing`). Only tasks whose tip the remote lacks are checked."""
    names = []
    tips: dict[str, bytes] = {}
    for name, (oid, kind) in refs.repo.typed_refs(patterns).items():
        short = name[len(TASK_REF_PREFIX) :]
        if not name.startswith(TASK_REF_PREFIX) or not names_a_task(short):
            continue
        task_id = short.decode()
        if kind != "commit":
            report.outcomes.append(Outcome(task_id, "skipped", _damaged_ref(kind, oid)))
            names.append(os.fsdecode(name))
        elif mirror.get(b"tasks/" + short) != oid:
            tips[task_id] = oid
    for task_id, why in refused_tasks(refs, tips).items():
        report.outcomes.append(Outcome(task_id, "skipped", _refused(why)))
        names.append(ref_name(task_id).decode())
    return names


def _damaged_ref(kind: str, value: bytes) -> str:
    """What push says of a task ref that names no commit (``kind``: its object's type,
    ``missing`` or ``broken``)."""
    if kind == "missing":
        what = f"points at {value.decode('ascii')}, an object this repository lacks"
    elif kind == "broken":
        what = "holds no object id"
    else:
        what = f"points at a {kind}, not a commit"
    return f"damaged: its ref {what}; see: git hydrate doctor"


def _remote_tasks(
    refs: TaskRefs, remote: Remote, mirror: dict[bytes, bytes], gone: set[bytes]
) -> dict[bytes, bytes]:
    """The remote's task refs as far as this clone knows: its mirror; or, in a
    clone that never fetched from it but has archived or removed tasks to
    delete there, one ``git ls-remote`` (else the first push after an archive
    deletes nothing). Only refs named by a valid task id: a pull ignores the
    others (``refs/hydrate/tasks/backup/G-1``), so a push never deletes one,
    whatever it points at."""
    repo = refs.repo
    if not mirror and gone:
        listed = repo.ls_remote(
            remote.target, [TASK_REF_PREFIX.decode() + "*"], what=f"git ls-remote {remote.display}"
        )
        tasks = {name: oid for name, oid in listed.items() if name.startswith(TASK_REF_PREFIX)}
    else:
        tasks = {
            TASK_REF_PREFIX + name[len(b"tasks/") :]: oid
            for name, oid in mirror.items()
            if name.startswith(b"tasks/")
        }
    return {name: oid for name, oid in tasks.items() if names_a_task(name[len(TASK_REF_PREFIX) :])}


def _recorded_ids(refs: TaskRefs) -> set[str]:
    """The ids the local removal record and archive hold (either unreadable: none
    of its ids, as it is not pushed either)."""
    ids: set[str] = set()
    with contextlib.suppress(CorruptData):
        ids.update(read_local_removed(refs.repo)[1])
    with contextlib.suppress(CorruptData):
        ids.update(read_archive(refs.repo).index.tasks)
    return ids


def update_mirror(
    refs: TaskRefs,
    remote: Remote,
    mirror: dict[bytes, bytes],
    pushed: list[PushResult],
    after: dict[str, bytes | None],
) -> None:
    """Make the mirror say what the remote now holds for every ref the push moved.

    git updates no mirror of ours; without this, a ref deleted on the remote
    stays in the mirror and the next push sends the deletion again under a
    lease that is now stale, and is refused for nothing. The value recorded
    is the local ref's (read after the push: a ref changed in between leaves
    the mirror behind the remote, which the next fetch corrects and no lease
    of a live task depends on); ``after`` holds those values, read once.
    """
    updates: list[RefUpdate] = []
    for flag, dest, _summary in pushed:
        if flag not in "* +=-" or not dest.startswith("refs/hydrate/"):
            continue
        name = dest.encode()[len(b"refs/hydrate/") :]
        known = mirror.get(name)
        now = None if flag == "-" else after[dest]
        if now != known and (now is not None or known is not None):
            updates.append((remote.mirror_prefix + name, known, now))
    if updates:
        # a fetch that moved the mirror meanwhile has the newer view: keep it; a lock
        # left behind on one (Busy) keeps it behind, for the next fetch to correct
        with contextlib.suppress(RefRace, Conflict, Busy):
            refs.repo.update_refs(updates, f"hydrate: push to {remote.display}", reflog=False)


def settled(
    refs: TaskRefs, remote: Remote, ids: list[str] | None, mirror: dict[bytes, bytes] | None = None
) -> list[bytes] | None:
    """The refs (names under ``refs/hydrate/``) up to date when a push would change
    nothing, else ``None``.

    Right after a fetch the mirror is what the remote holds: when every
    local ``refs/hydrate/`` ref (or each of ``ids``) equals its mirror and
    the mirror holds nothing this clone lacks (no deletion due), the push
    would only report "up to date", so ``sync`` skips it — a no-op sync is one
    fetch. Any doubt (a stray ref, a difference) means ``None``: push.
    ``mirror`` is the mirror as the fetch just left it (else it is read).
    """
    repo = refs.repo
    if mirror is None:
        mirror = repo.refs_under(remote.mirror_prefix)
    if ids is None:
        local = repo.refs_under(b"refs/hydrate/")
        if local != mirror:
            return None
        return list(local)
    names = [ref_name(task_id)[len(b"refs/hydrate/") :] for task_id in ids]
    for name in names:
        tip = repo.read_ref(b"refs/hydrate/" + name)
        if tip is None or mirror.get(name) != tip:
            return None
    return names


def _refused(why: str) -> str:
    """What push says of a ref it holds back because a pull would refuse it."""
    return f"damaged, a pull would refuse it: {why}; see: git hydrate doctor"


def _shared_refspecs(
    refs: TaskRefs, mirror: dict[bytes, bytes], report: Report
) -> tuple[list[str], list[bytes]]:
    """The refspecs of the archive and the removal record, and those of them to
    trust: not one a pull would refuse (reported as skipped instead)."""
    repo = refs.repo
    refspecs: list[str] = []
    trusted: list[bytes] = []
    for ref in UNION_REFS:
        tip = repo.read_ref(ref)
        if tip is None:
            continue
        # a value the remote holds already sends nothing: only a new one is checked
        known = mirror.get(ref[len(b"refs/hydrate/") :]) == tip
        why = None if known else refused_shared_ref(repo, ref, tip)
        if why is not None:
            report.outcomes.append(Outcome(ref.decode(), "skipped", _refused(why), is_task=False))
            continue
        refspecs.append(f"{ref.decode()}:{ref.decode()}")
        trusted.append(ref)
    return refspecs, trusted


#: A deletion due on the remote, or a replacement of a removed task's copy there
#: by a new task of the same id, that waits for the shared refs recording the
#: removal: ``(lease, the shared refs whose landing lets it go, the refspec)``.
Waiting = dict[str, tuple[str, list[str], str]]


def _union_refspecs(
    refs: TaskRefs, remote: Remote, mirror: dict[bytes, bytes], report: Report
) -> tuple[list[str], list[str], Waiting]:
    """The shared refs' refspecs and the deletions due, with their leases; and
    the deletions that wait until a shared ref recording them lands there."""
    repo = refs.repo
    refspecs, trusted = _shared_refspecs(refs, mirror, report)
    leases: list[str] = []
    waiting: Waiting = {}
    # Tasks archived or removed (here, or elsewhere and pulled) that the
    # remote still has as live refs: delete them there, but only while the
    # remote's tip is still one the archive or the removal record holds
    # (the lease), so nobody's newer work is lost. A record held back or
    # refused deletes nothing: other clones, not having it, would push them
    # back. So a deletion goes with this push only when a ref recording it is
    # on the remote already; else after the push, once such a ref landed.
    covered = Covered(refs)
    gone: set[bytes] = set().union(*(covered.of(ref) for ref in trusted))
    there = {
        ref for ref in trusted if mirror.get(ref[len(b"refs/hydrate/") :]) == repo.read_ref(ref)
    }
    recorded = _recorded_ids(refs) if gone else set()
    for task_ref, tip in sorted(_remote_tasks(refs, remote, mirror, gone).items()):
        if tip not in gone or task_ref[len(TASK_REF_PREFIX) :].decode() not in recorded:
            continue  # (a copy under another id, even of a recorded tip, is not this one)
        local_tip = repo.read_ref(task_ref)
        name = task_ref.decode()
        lease = f"--force-with-lease={name}:{tip.decode()}"
        by = [ref for ref in trusted if tip in covered.of(ref)]
        if local_tip is None:
            refspec = f":{name}"
        elif local_tip != tip and not repo.is_ancestor(tip, local_tip):
            # A new task with the id of one removed here: replace the remote's
            # old copy, but only if it is still exactly that copy, and (as a
            # deletion) once the record is there: without it, a clone holding
            # the old task would merge the two.
            refspec = f"{name}:{name}"
        else:
            continue
        if there.intersection(by):
            refspecs.append(refspec)
            leases.append(lease)
        else:
            waiting[name] = (lease, [ref.decode() for ref in by], refspec)
            refspecs.append(f"^{name}")  # (not in this push: after the record)
    return refspecs, leases, waiting


def _push_waiting(
    refs: TaskRefs, remote: Remote, pushed: list[PushResult], waiting: Waiting, report: Report
) -> tuple[list[PushResult], list[str], list[str]]:
    """Delete on the remote the tasks that waited for a shared ref recording
    their removal, now that one landed (``pushed``); report the others as not
    deleted. Return the push's results, what the remote said, and the leases."""
    landed = {dest for flag, dest, _summary in pushed if flag in "* +="}
    ready = {name: wait for name, wait in waiting.items() if landed.intersection(wait[1])}
    for name, (_lease, by, refspec) in waiting.items():
        if name not in ready:
            record = " and ".join(by)
            task_id = name[len(TASK_REF_PREFIX) :]
            action, why = (
                ("not-deleted", "deleted without it, the task would come back from other clones")
                if refspec.startswith(":")
                else (
                    "not-replaced",
                    "replaced without it, a clone holding the removed task would merge the two",
                )
            )
            detail = f"{remote.display} did not take {record}; {why}"
            report.outcomes.append(Outcome(task_id, action, detail))
    if not ready:
        return [], [], []
    leases = [lease for lease, _by, _refspec in ready.values()]
    more, said = refs.repo.push_with_messages(
        remote.target,
        [refspec for _lease, _by, refspec in ready.values()],
        leases,
        what=f"git push {remote.display}",
    )
    return more, said, leases


def push_into(
    refs: TaskRefs,
    remote: Remote,
    ids: list[str] | None,
    union: bool,
    report: Report,
    mirror: dict[bytes, bytes] | None = None,
) -> None:
    """Push ``ids`` (all tasks when ``None``; the shared refs too with ``union``),
    adding each ref's outcome to ``report``. ``mirror``: the mirror as a fetch
    just left it (else it is read, and a task refused though changed here is
    fetched to tell a damaged copy there); a lease taken from it that
    went stale fails and is reported as a race, which ``sync`` settles."""
    probe = mirror is None
    repo = refs.repo
    # What the remote held, as far as the last fetch knows: the "old" side of
    # each pushed ref in the report, the refs to delete there, and the values
    # it need not be sent (nor checked).
    if mirror is None:
        mirror = repo.refs_under(remote.mirror_prefix)
    refspecs = _task_refspecs(refs, ids, report, mirror)
    leases: list[str] = []
    waiting: Waiting = {}
    if union:
        shared, leases, waiting = _union_refspecs(refs, remote, mirror, report)
        refspecs += shared
    if not refspecs:
        return
    pushed, hook_lines = repo.push_with_messages(
        remote.target, refspecs, leases, what=f"git push {remote.display}"
    )
    if waiting:
        more, said, more_leases = _push_waiting(refs, remote, pushed, waiting, report)
        pushed, hook_lines, leases = pushed + more, hook_lines + said, leases + more_leases
    after = _local_values(refs, [dest for flag, dest, _ in pushed if flag in "* +=!"])
    pushed = _landed_by_another(refs, remote, pushed, after)
    update_mirror(refs, remote, mirror, pushed, after)
    behind = _behind(refs, pushed, after, mirror, leases)
    damaged = damaged_there(refs, remote, [p for p in pushed if p[1] not in behind], probe)
    for result in pushed:
        if result[0] == "=":
            if result[1].startswith(TASK_REF_PREFIX.decode()):
                report.up_to_date += 1  # (a shared ref the remote has: no task, not counted)
                report.up_to_date_refs.append(result[1])
            continue
        told = _said(remote, result, hook_lines, result[1] in behind, mirror)
        report.outcomes.append(_outcome(result, told, mirror, after, damaged.get(result[1])))


def _outcome(
    result: PushResult,
    said: tuple[str, str],
    mirror: dict[bytes, bytes],
    after: dict[str, bytes | None],
    damaged: tuple[str, bytes] | None,
) -> Outcome:
    """The report's outcome of one pushed ref (``said``: its action and detail;
    ``damaged``: what the push says of a remote copy that is no commit, and its id)."""
    dest = result[1]
    is_task = dest.startswith(TASK_REF_PREFIX.decode())
    before = mirror.get(dest.encode()[len(b"refs/hydrate/") :])
    action, detail = said
    if damaged is not None:
        action, (detail, before) = "refused", damaged
    local = after.get(dest) if action in ("pushed", "pushed-new") else None
    return Outcome(
        dest[len(TASK_REF_PREFIX) :] if is_task else dest,
        action,
        detail,
        old=before.decode() if before and action != "pushed-new" else None,
        new=local.decode() if local else None,
        is_task=is_task,
    )


#: At most this many refs another push held are asked after by name (more: the
#: remote's task refs are listed whole).
_ASKED_BY_NAME: Final = 200


def _landed_by_another(
    refs: TaskRefs, remote: Remote, pushed: list[PushResult], after: dict[str, bytes | None]
) -> list[PushResult]:
    """``pushed`` with each ref another push held (its lock: a second push of this
    very clone, say) that the remote now holds at this clone's value counted as up
    to date, not refused: nothing was lost, and there is nothing to settle. One
    ``git ls-remote``, only when such a ref is among the results."""
    held = [
        dest
        for flag, dest, summary in pushed
        if flag == "!"
        and after.get(dest) is not None
        and any(lost in summary for lost in LOST_LOCK_REASONS)
    ]
    if not held:
        return pushed
    asked = held if len(held) <= _ASKED_BY_NAME else [TASK_REF_PREFIX.decode() + "*"]
    try:
        there = refs.repo.ls_remote(remote.target, asked, what=f"git ls-remote {remote.display}")
    except GitFailed:
        return pushed  # (as git said: refused, for a sync to settle)
    landed = {dest for dest in held if there.get(dest.encode()) == after[dest]}
    return [
        ("=", dest, "[up to date]") if dest in landed else (flag, dest, summary)
        for flag, dest, summary in pushed
    ]


def _said(
    remote: Remote,
    result: PushResult,
    hook_lines: list[str],
    behind: bool,
    mirror: dict[bytes, bytes],
) -> tuple[str, str]:
    """The action and detail push reports of one ref (``result``: git's flag, the ref
    and its summary; ``behind``: refused because only the remote moved; ``mirror``:
    what the remote held as the last fetch saw it)."""
    flag, dest, summary = result
    action = _PUSH_ACTIONS.get(flag, "unknown")
    before = mirror.get(dest.encode()[len(b"refs/hydrate/") :])
    if not dest.startswith(TASK_REF_PREFIX.decode()):
        before = None
    if action == "rejected":
        action, detail = classify_refusal(summary, remote.display, hook_lines)
        if action == "rejected" and behind:
            return (
                "behind",
                f"{remote.display} has a newer version: git hydrate pull {remote.word}",
            )
        return action, detail
    if action == "pushed-new" and before is not None:
        # (the remote had it at the last fetch: deleted there since, by a removal?)
        return action, (
            f"{remote.display} no longer had it, though it did at your last pull: if it "
            f"was removed there, git hydrate sync {remote.word} removes it again"
        )
    return action, ""


def _behind(
    refs: TaskRefs,
    pushed: list[PushResult],
    after: dict[str, bytes | None],
    mirror: dict[bytes, bytes],
    leases: list[str],
) -> set[str]:
    """The task refs the remote refused for a race (it moved) whose local tip
    is what this clone last saw there (the mirror's tip) or an ancestor of it:
    this clone changed nothing in them, so the push loses nothing of its own.
    A ref pushed under a lease (a new task replacing a removed copy) is not one.
    Ancestry is settled for all at once (:func:`quick_bases`), then by git."""
    leased = {lease.partition("=")[2].partition(":")[0] for lease in leases}
    pairs: dict[str, tuple[bytes, bytes]] = {}
    for flag, dest, summary in pushed:
        if flag != "!" or not dest.startswith(TASK_REF_PREFIX.decode()) or dest in leased:
            continue
        if not any(race in summary for race in RACE_REASONS + LOST_LOCK_REASONS):
            continue
        local, seen = after.get(dest), mirror.get(dest.encode()[len(b"refs/hydrate/") :])
        if local is not None and seen is not None:
            pairs[dest] = (local, seen)
    bases = quick_bases(refs.repo, pairs.values())
    found: set[str] = set()
    for dest, pair in pairs.items():
        local, seen = pair
        if pair in bases:
            holds = bases[pair] == [local]  # (else the mirror's tip is the base: ahead)
        else:
            holds = local == seen or refs.repo.is_ancestor(local, seen)
        if holds:
            found.add(dest)
    return found


#: Pushed refs past which their local values are read in one listing of
#: ``refs/hydrate/`` (packed-refs once) rather than a file each.
_LISTED_AFTER: Final = 64


def _local_values(refs: TaskRefs, names: list[str]) -> dict[str, bytes | None]:
    """Each pushed ref's local value, read once for the mirror and the report."""
    repo = refs.repo
    if len(names) <= _LISTED_AFTER or not all(n.startswith("refs/hydrate/") for n in names):
        return {name: repo.read_ref(name.encode()) for name in names}
    listed = repo.refs_under(b"refs/hydrate/")
    return {name: listed.get(name.encode()[len(b"refs/hydrate/") :]) for name in names}


def push(refs: TaskRefs, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Push task refs (all, or ``ids``) without force, reading the per-ref results.

    Without ``ids`` the removal record and the archive travel too. A rejected
    task (the remote has changes this clone lacks) is reported by id with
    ``action == "rejected"``; every other ref still goes through.
    """
    wanted = check_ids(ids)
    where = resolve_remote(refs, remote, command="push")
    report = Report("push", where.display)
    push_into(refs, where, wanted or None, not wanted, report)
    return report
