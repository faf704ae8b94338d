"""The removal record: ``refs/hydrate/removed``, which keeps removed tasks removed.

One ref whose commits keep every removed tip reachable (as a parent) and
whose ``removed.json`` says which task was removed at which tip, when and by
whom. A task whose tip is reachable from it is not brought back by a pull,
and a clone that holds such a task without newer changes drops it.
"""

from __future__ import annotations

from typing import Final

from .. import codec
from ..errors import Busy, CorruptData
from ..model import RemovalRecord, RemovedTask
from ..store import MODE_BLOB, RefRace, Repository
from ..taskrefs import TaskRefs, attempts, commit_message, iso_utc

__all__ = ["REMOVED_REF", "read_local_removed", "read_removed", "record_removal"]

REMOVED_REF: Final = b"refs/hydrate/removed"
_REMOVED_FILE: Final = b"removed.json"


def read_removed(repo: Repository, tip: bytes | None) -> dict[str, RemovedTask]:
    """The removal record at commit ``tip`` (``{}`` when there is none).

    Raises:
        CorruptData: the record cannot be read.
    """
    if tip is None:
        return {}
    tree, _ = repo.read_commit_tree(tip)
    entry = repo.read_tree(tree).get(_REMOVED_FILE)
    if entry is None:
        return {}
    where = f"{REMOVED_REF.decode()}: removed.json"
    return codec.decode_removal_record(repo.read_blob(entry[1]), where).removed


def read_local_removed(repo: Repository) -> tuple[bytes | None, dict[str, RemovedTask]]:
    """This clone's removal record: its tip and what it holds (:func:`read_removed`).

    Raises:
        CorruptData: the record cannot be read; the message names the ref and
            the way out, since every pull, sync and removal stops on it.
    """
    tip = repo.read_ref(REMOVED_REF)
    try:
        return tip, read_removed(repo, tip)
    except CorruptData as exc:
        assert tip is not None
        name = REMOVED_REF.decode()
        why = str(exc).removeprefix(f"{name}: ")
        if repo.is_commit(tip):
            repair = f"git reflog {name} lists earlier records to reset it to"
        else:
            # (a ref at no commit holds no record: nothing is lost by dropping it)
            repair = f"it records nothing: git update-ref -d {name} drops it"
        raise CorruptData(
            f"{name} is damaged ({why}); see: git hydrate doctor; {repair}"
        ) from None


def record_removal(refs: TaskRefs, task_id: str, tip: bytes) -> None:
    """Add ``task_id`` removed at ``tip`` to the record (one commit, retried on races)."""
    repo = refs.repo
    ident = repo.identity().name_email.decode("utf-8", "replace")
    for _attempt in attempts():
        current, removed = read_local_removed(repo)
        removed = dict(removed)
        removed[task_id] = RemovedTask(tip=tip.decode(), at=iso_utc(refs.clock()), by=ident)
        blob = repo.write_blob(codec.encode(RemovalRecord(removed=removed)))
        tree = repo.write_tree({_REMOVED_FILE: (MODE_BLOB, blob)})
        message = commit_message(
            f"task-rm {task_id}",
            [("Action", "task-rm"), ("Task", task_id), ("Tip", tip.decode())],
        )
        # A tip at a blob or a tree (a damaged task) cannot be a parent: such a
        # commit breaks fsck, fetch and push. It is named in removed.json only.
        kept = [tip] if repo.is_commit(tip) else []
        parents = [current, *kept] if current is not None else kept
        commit = repo.write_commit(tree, parents, message, when=refs.commit_when())
        try:
            repo.compare_and_swap(REMOVED_REF, current, commit, message)
            return
        except RefRace:
            continue
    raise Busy(f"{REMOVED_REF.decode()} kept changing under this write; try again")
