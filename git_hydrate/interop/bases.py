"""An import's *bases*: what the upstream said at the last import, per task id.

``refs/hydrate/imports`` holds one commit whose tree has a ``task.json`` blob per
imported task id; the next import merges three ways against it (see
:mod:`.importer`). Local to each clone: never pushed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .. import codec
from ..model import Task
from ..store import RefRace
from ..taskrefs import TaskRefs, attempts

__all__ = ["IMPORTS_REF", "Bases"]

#: The ref whose tree holds what the upstream said at the last import, per task.
IMPORTS_REF: Final = b"refs/hydrate/imports"


class Bases:
    """What the upstream said at the last import, per task id (``IMPORTS_REF``)."""

    def __init__(self, refs: TaskRefs) -> None:
        self.refs = refs
        tip = refs.repo.read_ref(IMPORTS_REF)
        #: The bases as this run found them (its own are written, not read back).
        self.entries: dict[bytes, tuple[int, bytes]] = {}
        if tip is not None:
            self.entries = refs.repo.read_tree(refs.repo.read_commit_tree(tip)[0])
        self.new: dict[str, Task] = {}

    def get(self, task_id: str) -> Task | None:
        entry = self.entries.get(task_id.encode())
        if entry is None:
            return None
        data = self.refs.repo.read_blob(entry[1])
        return codec.decode_task(data, f"{IMPORTS_REF.decode()}:{task_id}")

    def save(self, summary: str) -> None:
        """One commit holding every base written in this run (retried if another
        import moved the ref meanwhile)."""
        if self.new:
            self.written(summary)()

    def written(self, summary: str) -> Callable[[], None]:
        """The objects of :meth:`save`'s commit written now, and what moves the ref
        to it (retried if another import moved it meanwhile); :attr:`new` is
        empty again once it has moved."""
        repo = self.refs.repo
        blobs = repo.write_blobs([codec.encode(task) for task in self.new.values()])
        changes = {tid.encode(): oid for tid, oid in zip(self.new, blobs, strict=True)}
        tip = repo.read_ref(IMPORTS_REF)

        def commit_on(tip: bytes | None) -> bytes:
            root = repo.read_commit_tree(tip)[0] if tip is not None else None
            tree = repo.update_tree(root, changes)
            return repo.write_commit(tree, [tip] if tip else [], f"hydrate: {summary}\n")

        made = (tip, commit_on(tip))

        def move() -> None:
            tip, commit = made
            for _attempt in attempts():
                try:
                    repo.compare_and_swap(IMPORTS_REF, tip, commit, summary)
                except RefRace:
                    tip = repo.read_ref(IMPORTS_REF)
                    commit = commit_on(tip)
                    continue
                self.new = {}
                return
            raise self.refs.busy("imports")

        return move
