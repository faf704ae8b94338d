"""What a pull lets go: the commits the removal record and the archive reach
(:class:`Covered`), and the local tasks another clone removed or archived that
are unchanged here since (:func:`drop_removed`, :func:`drop_archived`).
"""

from __future__ import annotations

from ..archive import ARCHIVE_REF, read_archive
from ..errors import CorruptData
from ..model import RemovedTask, Task
from ..sightings import Sightings, activity
from ..store import RefRace
from ..taskrefs import TaskRefs, ref_name
from .removal import REMOVED_REF, read_local_removed
from .report import Outcome
from .union import UNION_REFS

__all__ = ["Covered", "drop_archived", "drop_removed"]


class Covered:
    """Commits reachable from the removal record and the archive, computed once;
    and the claims this pull saw (:mod:`git_hydrate.sightings`)."""

    def __init__(self, refs: TaskRefs) -> None:
        self._refs = refs
        self._sets: dict[bytes, set[bytes]] = {}
        self.sightings = Sightings(refs.repo)
        self._moment = refs.clock()
        self._removed: dict[str, RemovedTask] | None = None

    def saw(self, task_id: str, task: Task) -> None:
        """Note that this clone saw ``task``'s claim as it is now (first time counts)."""
        if task.assignee:
            last = max((c.at for c in task.checkpoints), default="")
            state = activity(task.assignee, task.claimed_at, last)
            self.sightings.note(task_id, state, self._moment)

    def of(self, ref: bytes) -> set[bytes]:
        if ref not in self._sets:
            tip = self._refs.repo.read_ref(ref)
            self._sets[ref] = self._refs.repo.reachable([tip]) if tip is not None else set()
        return self._sets[ref]

    def any(self, oid: bytes) -> bool:
        return any(oid in self.of(ref) for ref in UNION_REFS)

    def changed_since_removal(self, task_id: str, tip: bytes) -> bool:
        """Whether ``tip`` descends from the copy of ``task_id`` removed here."""
        if self._removed is None:
            self._removed = read_local_removed(self._refs.repo)[1]
        entry = self._removed.get(task_id)
        return entry is not None and self._refs.repo.is_ancestor(entry.tip.encode(), tip)


def drop_removed(
    refs: TaskRefs,
    local_tasks: dict[str, bytes],
    remote_tasks: dict[str, bytes],
    covered: Covered,
    removed_index: dict[str, RemovedTask],
    where: str,
) -> list[Outcome]:
    """Drop local tasks the shared removal record covers (no newer local change)."""
    outcomes: list[Outcome] = []
    if not removed_index:
        return outcomes
    removed_set = covered.of(REMOVED_REF)
    for task_id, tip in sorted(local_tasks.items()):
        if task_id not in removed_index:
            continue
        if tip in removed_set:
            try:
                refs.repo.delete_ref(ref_name(task_id), tip, f"hydrate: pull removal of {task_id}")
            except RefRace:
                continue  # changed meanwhile: it stays
            by = removed_index[task_id].by
            outcomes.append(
                Outcome(task_id, "removed", f"removed by {by}".strip(), old=tip.decode())
            )
        elif task_id not in remote_tasks:
            outcomes.append(
                Outcome(
                    task_id,
                    "kept",
                    f"removed on {where}, but changed here since; push to bring it back there",
                    old=tip.decode(),
                )
            )
    return outcomes


def drop_archived(
    refs: TaskRefs, local_tasks: dict[str, bytes], covered: Covered
) -> list[Outcome]:
    """Drop live tasks that were archived elsewhere and not changed here since.

    Archiving folds a finished task into ``refs/hydrate/archive`` so that it
    stops costing every clone a ref; once the archive has travelled, a clone
    whose copy of the task is an ancestor of the archived one lets it go too
    (``show``/``log``/``unarchive`` still reach it through the archive).
    """
    try:
        index = read_archive(refs.repo).index
    except CorruptData:
        return []  # a damaged local archive frees nothing; doctor reports it
    if not index.tasks:
        return []
    archived = covered.of(ARCHIVE_REF)
    outcomes: list[Outcome] = []
    for task_id, tip in sorted(local_tasks.items()):
        if task_id not in index.tasks or tip not in archived:
            continue
        problem = _archived_copy_problem(refs, task_id, tip, index.tasks[task_id].tip.encode())
        if problem is not None:
            detail = f"the archive names it {problem}; kept live (see: git hydrate doctor)"
            outcomes.append(Outcome(task_id, "kept", detail, old=tip.decode(), warning=True))
            continue
        try:
            refs.repo.delete_ref(ref_name(task_id), tip, f"hydrate: pull archive of {task_id}")
        except RefRace:
            continue  # changed meanwhile: it stays live
        outcomes.append(Outcome(task_id, "archived", "archived elsewhere", old=tip.decode()))
    return outcomes


def _archived_copy_problem(
    refs: TaskRefs, task_id: str, local: bytes, archived: bytes
) -> str | None:
    """Why the archive's copy of a live task cannot stand in for it (``None``: it can).

    The archive's claim is checked against what exists here: its tip must be
    a readable state of this very task, and the local tip part of its history
    (else dropping the ref would lose the task, or local work).
    """
    short = archived.decode()[:12]
    try:
        refs.read_state(task_id, archived)
    except CorruptData:
        return f"at {short}, which is missing or not a readable state of it"
    if not refs.repo.is_ancestor(local, archived):
        return f"at {short}, which does not hold the local history"
    return None
