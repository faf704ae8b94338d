"""One task, never two: a task archived on one side and changed on the other.

Archiving is an edit like any other, and it can meet a concurrent change:
clone A changes a task and archives it; clone B changes the same task and
pushes (or archives its own changed copy). After a pull, the task has
several versions that descend from none of the others — the live one, the
archived one, the other clone's archived one. The rule, stated in the
README: **concurrent versions of an archived task merge into one live
task** — its state is the symmetric three-way merge of them all (every
side's changes included, the usual field rules), and the task leaves the
archive index in the same ref transaction (an ``unarchive`` by merge; the
archive's history keeps each archived version). Every clone that sees the
same versions takes the same decision and the merge is symmetric, so clones
converge; archive the task again once it is finished.

When one version descends from all the others there is nothing to merge:
a live task the archive already holds is dropped (as before); a live task
that descends from the archived tip (an ``unarchive`` elsewhere) just
leaves the index; an archived tip that descends from the other archived one
becomes the index entry.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ..archive import ARCHIVE_REF, index_tree, read_archive
from ..errors import Busy, CorruptData
from ..model import ArchivedTask, ArchiveIndex
from ..store import RefRace, RefUpdate, Repository
from ..taskrefs import TaskRefs, attempts, commit_message, ref_name
from .merging import merge_task
from .report import Outcome

__all__ = ["archived_sides", "reconcile_archived"]


def archived_sides(
    repo: Repository, remote_archive: bytes | None
) -> dict[str, list[ArchivedTask]]:
    """Both archives' entries of each id whose tips differ between the local
    and the remote archive (read before the archives merge, which keeps only
    one of them in its index)."""
    if remote_archive is None:
        return {}
    try:
        local = read_archive(repo).index.tasks
        remote = read_archive(repo, remote_archive).index.tasks
    except CorruptData:
        return {}  # the union step reports a damaged archive
    return {
        task_id: [local[task_id], entry]
        for task_id, entry in remote.items()
        if task_id in local and local[task_id].tip != entry.tip
    }


def _heads(repo: Repository, tips: list[bytes]) -> list[bytes]:
    """The tips that descend from none of the others (sorted, without repeats)."""
    unique = sorted(set(tips))
    return [
        tip
        for tip in unique
        if not any(other != tip and repo.is_ancestor(tip, other) for other in unique)
    ]


def _readable(refs: TaskRefs, task_id: str, tip: bytes) -> bool:
    """Whether ``tip`` is a readable state of ``task_id`` here."""
    try:
        refs.read_state(task_id, tip)
    except CorruptData:
        return False
    return True


class _Changes(msgspec.Struct):
    """What reconciling the archive changes: its new index, the tree of each id
    touched (None: the task leaves the archive), the task refs to write, and
    the outcomes to report."""

    index: dict[str, ArchivedTask]
    trees: dict[bytes, bytes | None] = msgspec.field(default_factory=dict)
    updates: list[RefUpdate] = msgspec.field(default_factory=list)
    outcomes: list[Outcome] = msgspec.field(default_factory=list)


def reconcile_archived(
    refs: TaskRefs,
    ids: list[str] | None,
    where: str,
    other_archived: Mapping[str, list[ArchivedTask]],
) -> list[Outcome]:
    """Make every archived task with concurrent versions one task (see module doc)."""
    repo = refs.repo
    for _attempt in attempts():
        try:
            current = read_archive(repo)
        except CorruptData:
            return []  # a damaged local archive changes nothing; doctor reports it
        if current.tip is None or current.tree is None:
            return []
        # only the archived ids' refs, not every live task's
        live = {
            task_id: tip
            for task_id in current.index.tasks
            if (tip := repo.read_ref(ref_name(task_id))) is not None
        }
        changes = _Changes(index=dict(current.index.tasks))
        for task_id, entry in sorted(current.index.tasks.items()):
            if ids is not None and task_id not in ids:
                continue
            sides = other_archived.get(task_id, [])
            _reconcile_task(refs, changes, task_id, entry, sides, live.get(task_id), where)
        if not changes.trees:
            return changes.outcomes
        if _commit_changes(refs, current.tip, current.tree, changes, where):
            return changes.outcomes
    raise Busy("the archive kept changing under this pull; try again")


def _reconcile_task(
    refs: TaskRefs,
    changes: _Changes,
    task_id: str,
    entry: ArchivedTask,
    other_sides: list[ArchivedTask],
    local: bytes | None,
    where: str,
) -> None:
    """Add to ``changes`` what one archived task needs: nothing, its newer
    archived version, leaving the archive (live again elsewhere), or merging
    its concurrent versions into one live task."""
    repo = refs.repo
    entries = {entry.tip: entry}
    entries.update((side.tip, side) for side in other_sides)
    archived_tips = [tip.encode("ascii") for tip in entries]
    if local is None and len(set(archived_tips)) == 1:
        return
    if not all(_readable(refs, task_id, tip) for tip in archived_tips):
        return  # a claim naming nothing readable: the pull keeps the task, and says so
    heads = _heads(repo, archived_tips + ([local] if local is not None else []))
    if len(heads) == 1:
        head = heads[0]
        if head == local:
            changes.index.pop(task_id)
            changes.trees[task_id.encode("ascii")] = None
            changes.outcomes.append(
                Outcome(task_id, "unarchived", "live again elsewhere; left the archive")
            )
        elif head != entry.tip.encode("ascii"):
            changes.index[task_id] = entries[head.decode("ascii")]  # the newer archived version
            changes.trees[task_id.encode("ascii")] = repo.read_commit_tree(head)[0]
        return  # (a live copy the archive holds is dropped by the pull)
    try:
        merged = _merge_heads(refs, task_id, heads)
    except CorruptData as exc:
        changes.outcomes.append(
            Outcome(task_id, "skipped", f"cannot merge archived versions: {exc}")
        )
        return
    changes.index.pop(task_id)
    changes.trees[task_id.encode("ascii")] = None
    changes.updates.append((ref_name(task_id), local, merged))
    changes.outcomes.append(
        Outcome(
            task_id,
            "unarchived",
            f"archived on one side, changed on the other ({where}): "
            "merged into one live task; archive it again when finished",
            old=local.decode() if local is not None else None,
            new=merged.decode(),
        )
    )


def _commit_changes(
    refs: TaskRefs, archive_tip: bytes, archive_tree: bytes, changes: _Changes, where: str
) -> bool:
    """Write ``changes`` as one archive commit on ``archive_tip``, moving the
    archive and the task refs in one transaction; False when a ref moved meanwhile."""
    repo = refs.repo
    trees = changes.trees
    leaving = sorted(t.decode() for t, tree in trees.items() if tree is None)
    message = commit_message(
        f"reconcile the archive with {where} ({', '.join(sorted(t.decode() for t in trees))})",
        [("Action", "unarchive"), *(("Task", t) for t in leaving)],
    )
    tree = index_tree(repo, archive_tree, ArchiveIndex(tasks=changes.index), trees)
    new_tip = repo.write_commit(tree, [archive_tip], message, when=refs.commit_when())
    try:
        repo.update_refs([(ARCHIVE_REF, archive_tip, new_tip), *changes.updates], message)
    except RefRace:
        return False
    return True


def _merge_heads(refs: TaskRefs, task_id: str, heads: list[bytes]) -> bytes:
    """One commit merging every head, pairwise in id order (symmetric merges)."""
    merged = heads[0]
    for other in heads[1:]:
        state = refs.read_state(task_id, other)
        merged, _result = merge_task(refs, task_id, merged, other, state, ARCHIVE_REF.decode())
    return merged
