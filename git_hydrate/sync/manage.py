"""Setting a remote up for plain ``git fetch``, and removing tasks (here and there)."""

from __future__ import annotations

from typing import Any

from ..errors import Busy, Conflict, NotFound, ValidationError
from ..store import RefRace
from ..taskrefs import TaskRefs, attempts, ref_name
from .fetch import fetch_mirror
from .pulling import check_ids
from .pushing import classify_refusal
from .remotes import Remote, overwriting_refspecs, resolve_remote
from .removal import REMOVED_REF, record_removal

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
    record is pushed.
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
    if remote is not None:
        where = resolve_remote(refs, remote, takes_ids=False)
        remote_tip = _remote_tip_to_remove(refs, task_id, where, tip)
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
    }
    if where is not None:
        result["remote"] = _remove_on_remote(refs, task_id, where, remote_tip)
    return result


def _remote_tip_to_remove(
    refs: TaskRefs, task_id: str, where: Remote, tip: bytes | None
) -> bytes | None:
    """The task's tip on ``where`` (None when it has none there), after checking
    the removal may go ahead: the task exists somewhere, and the remote holds
    no change this clone lacks."""
    mirror = fetch_mirror(refs.repo, where)
    remote_tip = mirror.get(b"tasks/" + task_id.encode())
    if tip is None and remote_tip is None:
        raise NotFound(f"no task {task_id!r} here or on {where.display}")
    if tip is not None and remote_tip is not None and not refs.repo.is_ancestor(remote_tip, tip):
        raise Conflict(
            f"task {task_id} has changes on {where.display} that you have not pulled; "
            f"run git hydrate pull {where.display} {task_id} first"
        )
    return remote_tip


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


def _remove_on_remote(
    refs: TaskRefs, task_id: str, where: Remote, remote_tip: bytes | None
) -> dict[str, Any]:
    """Push the removal record to ``where`` and, when the task is there, delete
    it with a lease on ``remote_tip``; return what happened there."""
    ref = ref_name(task_id)
    refspecs = [f"{REMOVED_REF.decode()}:{REMOVED_REF.decode()}"]
    extra: list[str] = []
    if remote_tip is not None:
        refspecs.insert(0, f":{ref.decode()}")
        extra = [f"--force-with-lease={ref.decode()}:{remote_tip.decode()}"]
    shown = where.display
    remote_result: dict[str, Any] = {"remote": shown, "deleted": False, "detail": ""}
    details = []
    pushed = refs.repo.push(where.target, refspecs, extra, what=f"git push {where.display}")
    for flag, dest, summary in pushed:
        if dest == ref.decode():
            remote_result["deleted"] = flag == "-"
            if flag == "!":
                details.append(f"not deleted there ({classify_refusal(summary, shown)[1]})")
        elif flag == "!":
            details.append(f"removal record not pushed ({classify_refusal(summary, shown)[1]})")
    if remote_tip is None:
        details.append(f"not on {where.display}")
    remote_result["detail"] = "; ".join(details)
    return remote_result
