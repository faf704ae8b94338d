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
        index = dict(current.index.tasks)
        trees: dict[bytes, bytes | None] = {}
        updates: list[RefUpdate] = []
        outcomes: list[Outcome] = []
        for task_id, entry in sorted(current.index.tasks.items()):
            if ids is not None and task_id not in ids:
                continue
            entries = {entry.tip: entry}
            entries.update((side.tip, side) for side in other_archived.get(task_id, []))
            archived_tips = [tip.encode("ascii") for tip in entries]
            local = live.get(task_id)
            if local is None and len(set(archived_tips)) == 1:
                continue
            if not all(_readable(refs, task_id, tip) for tip in archived_tips):
                continue  # a claim naming nothing readable: the pull keeps the task, and says so
            heads = _heads(repo, archived_tips + ([local] if local is not None else []))
            if len(heads) == 1:
                head = heads[0]
                if head == local:
                    index.pop(task_id)
                    trees[task_id.encode("ascii")] = None
                    outcomes.append(
                        Outcome(task_id, "unarchived", "live again elsewhere; left the archive")
                    )
                elif head != entry.tip.encode("ascii"):
                    index[task_id] = entries[head.decode("ascii")]  # the newer archived version
                    trees[task_id.encode("ascii")] = repo.read_commit_tree(head)[0]
                continue  # (a live copy the archive holds is dropped by the pull)
            try:
                merged = _merge_heads(refs, task_id, heads)
            except CorruptData as exc:
                outcomes.append(
                    Outcome(task_id, "skipped", f"cannot merge archived versions: {exc}")
                )
                continue
            index.pop(task_id)
            trees[task_id.encode("ascii")] = None
            updates.append((ref_name(task_id), local, merged))
            outcomes.append(
                Outcome(
                    task_id,
                    "unarchived",
                    f"archived on one side, changed on the other ({where}): "
                    "merged into one live task; archive it again when finished",
                    old=local.decode() if local is not None else None,
                    new=merged.decode(),
                )
            )
        if not trees:
            return outcomes
        leaving = sorted(t.decode() for t, tree in trees.items() if tree is None)
        message = commit_message(
            f"reconcile the archive with {where} ({', '.join(sorted(t.decode() for t in trees))})",
            [("Action", "unarchive"), *(("Task", t) for t in leaving)],
        )
        tree = index_tree(repo, current.tree, ArchiveIndex(tasks=index), trees)
        new_tip = repo.write_commit(tree, [current.tip], message, when=refs.commit_when())
        try:
            repo.update_refs([(ARCHIVE_REF, current.tip, new_tip), *updates], message)
        except RefRace:
            continue
        return outcomes
    raise Busy("the archive kept changing under this pull; try again")


def _merge_heads(refs: TaskRefs, task_id: str, heads: list[bytes]) -> bytes:
    """One commit merging every head, pairwise in id order (symmetric merges)."""
    merged = heads[0]
    for other in heads[1:]:
        state = refs.read_state(task_id, other)
        merged, _result = merge_task(refs, task_id, merged, other, state, ARCHIVE_REF.decode())
    return merged
