"""Setting a remote up for plain ``git fetch``, and removing tasks (here and there)."""

from __future__ import annotations

from typing import Any, Final

from ..errors import Busy, Conflict, GitFailed, NotFound, ValidationError
from ..store import PushResult, RefRace
from ..taskrefs import TaskRefs, attempts, ref_name
from .fetch import fetch_mirror
from .pulling import Covered, check_ids, drop_removed
from .pushing import classify_refusal, update_mirror
from .remotes import Remote, overwriting_refspecs, resolve_remote
from .removal import REMOVED_REF, read_local_removed, record_removal
from .union import pull_union_ref

__all__ = ["remove_task", "setup"]


def setup(refs: TaskRefs, remote: str | None = None) -> dict[str, Any]:
    """Add the wildcard fetch refspec of the mirror to ``remote.<name>.fetch``.

    A plain ``git fetch`` then keeps the mirror current. Nothing else in the
    remote's configuration is touched; ``remote.<name>.push`` never. Fetch
    refspecs that write into ``refs/hydrate/`` are reported under
    ``problems`` (with the fix), not changed.
    """
    where = resolve_remote(refs, remote, takes_ids=False, command="setup")
    if where.is_url:
        raise ValidationError(
            "setup needs a configured remote name, not a URL; add one with: "
            "git remote add NAME URL, then: git hydrate setup NAME"
        )
    refspec = f"+refs/hydrate/*:{where.mirror_prefix.decode()}*"
    key = f"remote.{where.target}.fetch"
    added = refspec not in refs.repo.settings.all(key)
    if added:
        refs.repo.config_add(key, refspec)
    problems = [entry["problem"] for entry in overwriting_refspecs(refs)]
    return {
        "remote": where.display,
        "key": key,
        "refspec": refspec,
        "added": added,
        "problems": problems,
    }


# -- removal ----------------------------------------------------------------------


def remove_task(refs: TaskRefs, task_id: str, remote: str | None = None) -> dict[str, Any]:
    """Remove a task here (and on ``remote`` when given), keeping its history reachable.

    The tip is recorded in ``refs/hydrate/removed`` first, then the task's ref
    is deleted with a compare-and-swap. With ``remote``, the remote's copy
    must not hold changes this clone lacks (else :class:`Conflict`, nothing
    removed); it is then deleted with ``--force-with-lease`` and the removal
    record is pushed with it, in one atomic push: both land, or neither. The
    remote's record is merged into this clone's first, and the other tasks it
    lists are dropped here as a pull would (``dropped``: their outcomes).
    """
    check_ids([task_id])
    tip = refs.repo.read_ref(ref_name(task_id))
    here = tip is not None
    if tip is None and remote is None:
        raise NotFound(
            f"no task {task_id!r} here; to remove it from a remote: "
            f"git hydrate task-rm {task_id} --remote REMOTE"
        )
    where: Remote | None = None
    remote_tip: bytes | None = None
    mirror: dict[bytes, bytes] = {}
    if remote is not None:
        where = resolve_remote(refs, remote, takes_ids=False)
        remote_tip, mirror = _remote_tip_to_remove(refs, task_id, where, tip)
    if tip is None:
        # Only on the remote: the record keeps the tip we delete there.
        assert remote_tip is not None
        tip = remote_tip
        record_removal(refs, task_id, tip)
    else:
        tip = _remove_here(refs, task_id, tip)
    result: dict[str, Any] = {
        "task_id": task_id,
        "removed_tip": tip.decode(),
        "local": here,
        "remote": None,
        "dropped": [],
    }
    if where is not None:
        result["dropped"] = _drop_recorded(refs, task_id, mirror, where.display)
        result["remote"] = _remove_on_remote(refs, task_id, where, remote_tip, mirror)
    return result


def _remote_tip_to_remove(
    refs: TaskRefs, task_id: str, where: Remote, tip: bytes | None
) -> tuple[bytes | None, dict[bytes, bytes]]:
    """The task's tip on ``where`` (None when it has none there) and the mirror
    as the fetch left it, after checking the removal may go ahead: the task
    exists somewhere, and the remote holds no change this clone lacks."""
    mirror = fetch_mirror(refs.repo, where)
    remote_tip = mirror.get(b"tasks/" + task_id.encode())
    if tip is None and remote_tip is None:
        raise NotFound(f"no task {task_id!r} here or on {where.display}")
    if tip is not None and remote_tip is not None and not refs.repo.is_ancestor(remote_tip, tip):
        raise Conflict(
            f"task {task_id} has changes on {where.display} that you have not pulled; "
            f"run git hydrate pull {where.word} {task_id} first"
        )
    # The remote's record first (others' removals since the last pull), so this
    # one's push is a fast-forward of it: else the push, all or nothing, is refused.
    record = mirror.get(REMOVED_REF[len(b"refs/hydrate/") :])
    if record is not None:
        pull_union_ref(refs, REMOVED_REF, record, where.display)
    return remote_tip, mirror


def _drop_recorded(
    refs: TaskRefs, task_id: str, mirror: dict[bytes, bytes], where: str
) -> list[dict[str, Any]]:
    """Drop here, as a pull would, the other tasks the removal record (now with
    the remote's merged in) holds and this clone did not change since: kept,
    the next push would bring them back there. Return their outcomes."""
    remote_tasks = {
        name[len(b"tasks/") :].decode("utf-8", "backslashreplace"): oid
        for name, oid in mirror.items()
        if name.startswith(b"tasks/")
    }
    local = {k: v for k, v in refs.task_tips().items() if k != task_id}
    removed_index = read_local_removed(refs.repo)[1]
    dropped = drop_removed(refs, local, remote_tasks, Covered(refs), removed_index, where)
    return [outcome.as_dict() for outcome in dropped]


def _remove_here(refs: TaskRefs, task_id: str, tip: bytes) -> bytes:
    """Record the task's tip as removed, then delete its ref with a
    compare-and-swap, retrying when a writer moves it; return the tip removed."""
    repo = refs.repo
    ref = ref_name(task_id)
    for _attempt in attempts():
        record_removal(refs, task_id, tip)
        try:
            repo.delete_ref(ref, tip, f"hydrate: task-rm {task_id}")
            break
        except RefRace:
            new_tip = repo.read_ref(ref)
            if new_tip is None:
                break
            tip = new_tip
    else:
        raise Busy(f"task {task_id} kept changing under this removal; try again")
    return tip


#: What git says of a ref it did not update only because another ref of the same
#: ``--atomic`` push was refused (the client's wording, then the remote's).
_ATOMIC_COLLATERAL: Final = ("atomic push failed", "atomic push failure")


def _remove_on_remote(
    refs: TaskRefs,
    task_id: str,
    where: Remote,
    remote_tip: bytes | None,
    mirror: dict[bytes, bytes],
) -> dict[str, Any]:
    """Push the removal record to ``where`` and, when the task is there, delete
    it with a lease on ``remote_tip``, both or neither; return what happened there.

    Never the deletion without the record: a clone that still has the task would
    push it back, and the remote would lose it for good without a trace. The
    mirror (``mirror``: as the fetch left it) then says what the remote holds.
    """
    ref = ref_name(task_id).decode()
    pushed, said = _push_removal(refs, where, ref, remote_tip)
    after = {dest: refs.repo.read_ref(dest.encode()) for _flag, dest, _summary in pushed}
    update_mirror(refs, where, mirror, pushed, after)
    results = {dest: (flag, summary) for flag, dest, summary in pushed}
    details = (
        [_refusals(results, ref, where.display, said)]
        if any(flag == "!" for flag, _summary in results.values())
        else []
    )
    if remote_tip is None:
        details.append(f"not on {where.display}")
    deleted = results.get(ref, ("", ""))[0] == "-"
    return {"remote": where.display, "deleted": deleted, "detail": "; ".join(details)}


def _refusals(results: dict[str, tuple[str, str]], ref: str, where: str, said: list[str]) -> str:
    """What a removal's push left undone, and why: each reason once, with the refs
    it refused (not those git left only because the push was all or nothing)."""
    record_went = results.get(REMOVED_REF.decode(), ("!", ""))[0] != "!"
    refused: dict[str, list[str]] = {}
    for dest, (flag, summary) in results.items():
        if flag == "!" and not any(word in summary for word in _ATOMIC_COLLATERAL):
            what = "the deletion" if dest == ref else "the removal record"
            refused.setdefault(summary, []).append(what)
    done = (
        "the removal record went, the task stays there" if record_went else "nothing changed there"
    )
    reasons = [
        f"{' and '.join(whats)} {'were' if len(whats) > 1 else 'was'} refused "
        f"({classify_refusal(summary, where, said)[1]})"
        for summary, whats in refused.items()
    ]
    return f"{done}: {'; '.join(reasons) or 'git push refused it'}"


def _push_removal(
    refs: TaskRefs, where: Remote, ref: str, remote_tip: bytes | None
) -> tuple[list[PushResult], list[str]]:
    """Push the removal record and the deletion of ``ref`` (when ``remote_tip``:
    under a lease on it) in one ``git push --atomic``; to a server that takes
    no atomic push, the record first, then the deletion once the record is there."""
    record = REMOVED_REF.decode()
    deletion: list[str] = []
    lease: list[str] = []
    if remote_tip is not None:
        deletion = [f":{ref}"]
        lease = [f"--force-with-lease={ref}:{remote_tip.decode()}"]
    what = f"git push {where.display}"
    repo = refs.repo
    try:
        return repo.push_with_messages(
            where.target, [*deletion, f"{record}:{record}"], ["--atomic", *lease], what=what
        )
    except GitFailed as exc:
        if "--atomic" not in str(exc):
            raise
    pushed, said = repo.push_with_messages(where.target, [f"{record}:{record}"], what=what)
    if deletion and all(flag != "!" for flag, _dest, _summary in pushed):
        more, said = repo.push_with_messages(where.target, deletion, lease, what=what)
        pushed += more
    return pushed, said
