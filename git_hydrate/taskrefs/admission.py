"""Admitting a new task id: no clash by case with a live or archived task.

Two writers bringing in ids that differ only by case take turns on a lock
named by the case-folded id (an ``O_EXCL`` file beside git's own locks), so
the second sees the first and is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .. import validate
from ..archive import ARCHIVE_REF, read_archive
from ..errors import Busy, Conflict
from ..ids import TASK_REF_PREFIX, names_a_task
from ..store import Repository
from .locks import held

__all__ = ["IdAdmission"]


class IdAdmission:
    """The checks a new task id passes in one repository (the archive's ids by
    case are read once per archive commit)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self._archived_folded: tuple[bytes | None, dict[str, list[str]]] | None = None

    def check_case_collision(self, task_id: str) -> None:
        """Refuse an id that differs from a live task's only by case.

        Looks up the ways the id can be spelt instead of listing every task
        (see :meth:`Repository.names_differing_by_case`) and never reads a
        ref's value, so creating tasks in bulk costs the same per task at 10
        or 10,000 tasks.

        Raises:
            Conflict: naming the other task.
        """
        validate.task_id(task_id)
        for other in self.repo.names_differing_by_case(TASK_REF_PREFIX, task_id):
            if other != task_id and names_a_task(other.encode("ascii")):
                raise Conflict(
                    f"task id {task_id!r} differs from existing task {other!r} only by case; "
                    "ids must stay distinct on case-insensitive file systems"
                )

    @contextlib.contextmanager
    def name_lock(self, task_id: str) -> Iterator[None]:
        """Hold the lock of ``task_id``'s case-folded form while a new id is checked
        and its ref created: two writers bringing in ids that differ only by case
        take turns, so the second sees the first and is refused.

        A lock older than :data:`STALE_LOCK_SECONDS` (its writer died) is taken over.

        Raises:
            Busy: another writer held it for longer than that.
        """
        import hashlib  # (OpenSSL's start-up: only where a digest is made)

        folded = task_id.casefold().encode("utf-8", "surrogatepass")
        name = f"hydrate-id-{hashlib.sha256(folded).hexdigest()[:32]}.lock"
        busy = Busy(f"task id {task_id!r} is being created by another writer")
        with held(self.repo, name, lambda: busy):
            yield

    def check_new_id(self, task_id: str) -> None:
        """Refuse a new id that is archived, or differs from a live or archived
        one only by case.

        Raises:
            Conflict: naming the other task and what to do.
        """
        self.check_case_collision(task_id)
        by_case = self._archived_by_case()
        if task_id in by_case.get(task_id.casefold(), ()):
            raise Conflict(
                f"task {task_id} is archived; bring it back with: git hydrate unarchive {task_id}"
            )
        for other in by_case.get(task_id.casefold(), ()):
            raise Conflict(
                f"task id {task_id!r} differs from archived task {other!r} only by case; "
                "ids must stay distinct on case-insensitive file systems"
            )

    def _archived_by_case(self) -> dict[str, list[str]]:
        """The archived task ids by their case-folded form, read once per archive
        commit (an archive commit never changes, so this is never stale)."""
        tip = self.repo.read_ref(ARCHIVE_REF)
        if self._archived_folded is None or self._archived_folded[0] != tip:
            folded: dict[str, list[str]] = {}
            archived = read_archive(self.repo, tip).index.tasks if tip is not None else {}
            for other in archived:
                folded.setdefault(other.casefold(), []).append(other)
            self._archived_folded = (tip, folded)
        return self._archived_folded[1]
