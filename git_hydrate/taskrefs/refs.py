"""The tasks of one repository as refs: list, read, check bodies, write.

Every change is one commit, moved onto the task's ref by a compare-and-swap
(:meth:`TaskRefs.write`, the one write loop). When another writer wins the
race, the change is re-applied to the state it wrote, so concurrent writers
never lose each other's work.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Final

from .. import codec, validate
from ..archive import read_archive
from ..errors import Busy, CorruptData, NotFound, ValidationError
from ..ids import TASK_REF_PREFIX, is_task_id, names_a_task, ref_name
from ..model import Link, Task
from ..store import RefRace, Repository
from ..store import refs as store_refs
from .admission import IdAdmission
from .decode import read_states
from .fields import fields_to_keep
from .layout import TASK_FILE, TOP_LEVEL, Change, R, TaskState, Unchanged, link_tree_changes
from .locks import held
from .retry import attempts, busy, lock_left_behind

__all__ = ["TaskRefs", "alike"]

#: The lock file a write that adds parent or dependency edges holds (see
#: :meth:`TaskRefs.graph_lock`).
GRAPH_LOCK = "hydrate-graph.lock"


#: What a mistyped task id may differ by: ``_`` or ``.`` for ``-``, and a letter
#: that looks like a digit (``l``/``I`` for ``1``, ``O`` for ``0``), in any case.
_LOOK_ALIKE: Final = str.maketrans({"_": "-", ".": "-", "l": "1", "i": "1", "o": "0"})


def _look_alike(task_id: str) -> str:
    """``task_id`` with the differences a typo makes unread (``T_l`` and ``t-1``: ``t-1``)."""
    return task_id.casefold().translate(_LOOK_ALIKE)


def alike(task_id: str, known: Iterable[str]) -> str:
    """The id among ``known`` that ``task_id`` is most likely a slip for, or ``""``:
    one the same but for case, then but for a separator or a look-alike (a short
    id has too few characters for difflib's ratio: ``T-l`` is 0.67 to ``T-1``),
    then difflib's closest at 0.75."""
    known = [name for name in known if name != task_id]
    same = [other for other in known if other.casefold() == task_id.casefold()]
    looks = [other for other in known if _look_alike(other) == _look_alike(task_id)]
    import difflib  # (only for a task id not found)

    close = same or looks or difflib.get_close_matches(task_id, known, n=1, cutoff=0.75)
    return close[0] if close else ""


class TaskRefs:
    """The tasks of one repository, as refs: read, decode, write.

    Args:
        repo: The repository.
        clock: Returns the current POSIX time (commit and checkpoint times).
            ``None`` means git's idea of now: ``GIT_COMMITTER_DATE`` when set,
            else the wall clock; commits then carry git's author and
            committer dates. An explicit clock wins over both.
    """

    def __init__(self, repo: Repository, clock: Callable[[], float] | None = None) -> None:
        self.repo = repo
        self._explicit_clock = clock is not None
        self.clock: Callable[[], float] = clock if clock is not None else repo.git_now
        #: How many writes lost a race and were re-applied.
        self.retries = 0
        #: The checks a new task id passes (see :class:`IdAdmission`).
        self.admission = IdAdmission(repo)
        self._graph_mutex = threading.RLock()
        self._graph_depth = 0
        #: This object's last write through the write loop: the task's id, its new tip,
        #: and the task and links a read of that tip gives (links not in packing order),
        #: for what reads the task next in this process (the prompt after add-tree).
        self.last_write: tuple[str, bytes, Task, list[Link]] | None = None

    def commit_when(self, moment: float | None = None) -> float | None:
        """The date a commit gets: the explicit clock's (``moment``, when it was
        read already); ``None`` without one, so the store writes git's dates."""
        if not self._explicit_clock:
            return None
        return moment if moment is not None else self.clock()

    def now(self, moment: datetime | float | None = None) -> float:
        """POSIX seconds of ``moment`` (a naive datetime is UTC); the clock's when ``None``."""
        if moment is None:
            return self.clock()
        if isinstance(moment, datetime):
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
        return float(moment)

    # -- listing -------------------------------------------------------------------

    def tip(self, task_id: str) -> bytes | None:
        """The tip commit of a live task, or ``None`` (also for what is no task id:
        ``../../etc/passwd``, a NUL, from a web page's URL, is never a path read)."""
        if not is_task_id(task_id):
            return None
        return self.repo.read_ref(ref_name(task_id))

    def task_tips(self) -> dict[str, bytes]:
        """Every live task id and its tip commit.

        A ref under ``refs/hydrate/tasks/`` whose name is not a valid task id
        (made by hand or by another tool) is left out; :meth:`stray_ref_names`
        names it, so that ``list`` can warn and ``doctor`` report it.
        """
        refs = self.repo.refs_under(TASK_REF_PREFIX)
        return {name.decode("ascii"): oid for name, oid in refs.items() if names_a_task(name)}

    def task_ids(self) -> list[str]:
        """Every live task id, sorted."""
        return sorted(self.task_tips())

    def task_names(self) -> list[str]:
        """Every live task id, without reading a ref's value (one directory walk and
        the packed refs): what a new id is checked against, cheaply at any size."""
        names = self.repo.ref_names_under(TASK_REF_PREFIX)
        return sorted(n.decode("ascii") for n in names if names_a_task(n))

    def stray_ref_names(self) -> list[bytes]:
        """The full names of the refs under ``refs/hydrate/tasks/`` that are not
        valid task ids, as bytes, sorted."""
        names = self.repo.ref_names_under(TASK_REF_PREFIX)
        return sorted(TASK_REF_PREFIX + name for name in names if not names_a_task(name))

    # -- reading -------------------------------------------------------------------

    def read_state(
        self,
        task_id: str,
        tip: bytes,
        *,
        only: str | None = None,
        limit: int = codec.MAX_READ_TASK_JSON_BYTES,
    ) -> TaskState:
        """Decode the state stored in the commit ``tip`` of ``task_id``.

        ``only`` (a :func:`link_shard` prefix) reads, of a task whose links are fanned out,
        just the links whose sha256 starts with it: a *partial* state, which
        only a write that touches those links alone may use (see ``_write``).

        Raises:
            CorruptData: the tree is not a valid task, naming the task.
        """
        state = read_states(self.repo, {task_id: tip}, only, limit)[task_id]
        if isinstance(state, CorruptData):
            raise state
        return state

    def load_many(
        self,
        task_ids: Iterable[str],
        tips: Mapping[str, bytes] | None = None,
        limit: int = codec.MAX_READ_TASK_JSON_BYTES,
    ) -> dict[str, TaskState | CorruptData]:
        """The states of many live tasks in one pipelined read (absent ids are left out).

        ``tips`` (``{task_id: tip}``, as :meth:`task_tips` returned them a moment
        ago) spares reading the refs again; without it they are read now.
        A task whose data cannot be read maps to the :class:`CorruptData` naming
        it, so one damaged task never hides the others.
        """
        wanted = list(task_ids)
        if not wanted:
            return {}  # (a warm listing: its summaries all came from a cache)
        if tips is not None:
            return read_states(self.repo, {t: tips[t] for t in wanted if t in tips}, None, limit)
        refs = self.repo.refs_under(TASK_REF_PREFIX)
        found: dict[str, bytes] = {}
        for task_id in wanted:
            tip = refs.get(task_id.encode("utf-8", "surrogateescape"))
            if tip is not None:
                found[task_id] = tip
        return read_states(self.repo, found, None, limit)

    def missing(self, task_id: str) -> NotFound:
        """The error for a task that is not live: archived (with the way back) or unknown."""
        try:
            archived = task_id in read_archive(self.repo).index.tasks
        except CorruptData:
            archived = False  # a damaged archive does not change what is missing here
        if archived:
            return NotFound(
                f"task {task_id} is archived; bring it back with: git hydrate unarchive {task_id}"
            )
        if is_task_id(task_id) and (target := self.repo.symbolic_target(ref_name(task_id))):
            return NotFound(
                f"no task {task_id!r}: its ref is a symbolic ref to "
                f"{target.decode('utf-8', 'replace')} (git hydrate doctor says how to drop it)"
            )
        slip = alike(task_id, self.task_names())
        if slip:
            return NotFound(f"no task {task_id!r}; did you mean {slip}?")
        return NotFound(
            f"no task {task_id!r}; create it with: git hydrate task-add {task_id} "
            "--objective TEXT --acceptance TEXT"
        )

    def load(self, task_id: str) -> TaskState:
        """The current state of a live task.

        Raises:
            ValidationError: not a task id.
            NotFound: no live task ``task_id`` (the message says if it is archived).
            CorruptData: the task cannot be read.
        """
        validate.task_id(task_id)
        tip = self.tip(task_id)
        if tip is None:
            raise self.missing(task_id)
        return self.read_state(task_id, tip)

    def load_any(self, task_id: str) -> tuple[TaskState, bool]:
        """A task's state from its live ref, else from the archive: ``(state, archived)``.

        Raises:
            NotFound: neither live nor archived.
        """
        validate.task_id(task_id)
        tip = self.tip(task_id)
        if tip is not None:
            return self.read_state(task_id, tip), False
        entry = read_archive(self.repo).index.tasks.get(task_id)
        if entry is None:
            raise self.missing(task_id)
        return self.read_state(task_id, entry.tip.encode("ascii")), True

    def exists(self, task_id: str) -> bool:
        """Whether a live task ``task_id`` exists."""
        validate.task_id(task_id)
        return self.tip(task_id) is not None

    def check_body(
        self,
        task_id: str,
        link: Link,
        data: bytes,
        *,
        check_size: bool = False,
        sha256: str | None = None,
    ) -> str:
        """``data`` as text, after checking it is the body ``link`` names.

        ``check_size`` also holds the link's recorded size to the body (data from
        a remote, whose sizes the packer will trust); ``sha256`` is the digest of
        ``data`` when the caller has just computed it.

        Raises:
            CorruptData: the body does not match, or is not UTF-8.
        """
        import hashlib  # (OpenSSL's start-up: only where a digest is made)

        if (sha256 or hashlib.sha256(data).hexdigest()) != link.sha256:
            raise _damaged(task_id, f"body {link.sha256[:12]} does not match its sha256")
        if check_size and len(data) != link.size:
            raise _damaged(task_id, f"body {link.sha256[:12]} does not match its size")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise _damaged(task_id, f"body {link.sha256[:12]} is not UTF-8") from None

    def check_stored_body(self, task_id: str, link: Link, limit: int) -> None:
        """Check the stored body ``link`` names without holding it in memory:
        present, at most ``limit`` bytes, its sha256, its recorded size, UTF-8.

        Raises:
            CorruptData: naming the task and the body.
        """
        short = link.sha256[:12]
        if link.size > limit:
            raise _damaged(
                task_id, f"body {short} is {link.size} bytes, over hydrate.maxBodyBytes ({limit})"
            )
        try:
            size, sha256, utf8 = self.repo.blob_digest(link.oid.encode(), limit)
        except CorruptData:
            raise _damaged(task_id, f"body {short} is missing (blob absent)") from None
        if sha256 is None:
            raise _damaged(
                task_id,
                f"body {short} is {size} bytes, over hydrate.maxBodyBytes ({limit}), "
                f"though its link says {link.size}",
            )
        if sha256 != link.sha256:
            raise _damaged(task_id, f"body {short} does not match its sha256")
        if size != link.size:
            raise _damaged(task_id, f"body {short} does not match its size")
        if not utf8:
            raise _damaged(task_id, f"body {short} is not UTF-8")

    def read_body(self, task_id: str, link: Link) -> str:
        """The checked text of the body ``link`` names."""
        try:
            data = self.repo.read_blob(link.oid.encode())
        except CorruptData as exc:
            raise _damaged(task_id, f"body {link.sha256[:12]}: {exc}") from None
        return self.check_body(task_id, link, data)

    # -- writing -------------------------------------------------------------------

    def write(
        self,
        task_id: str,
        apply: Callable[[TaskState], Change[R]],
        *,
        only: str | None = None,
    ) -> R:
        """Apply ``apply`` to the live task's current state and commit it, retrying races.

        ``apply`` receives the state read and returns the :class:`Change`, or
        raises :class:`Unchanged`. It may run several times: it must derive
        everything from its argument. A task that does not exist raises
        :class:`NotFound` before ``apply`` runs.

        ``only`` (a :func:`link_shard` prefix) promises that ``apply`` reads
        and changes only links of that prefix and never removes one: a task
        whose links are fanned out then reads and rewrites just that
        ``links/<a>.json``, so the write costs the same at 10 or 10,000 links.
        """

        def on_state(state: TaskState | None) -> Change[R]:
            if state is None:
                raise self.missing(task_id)
            return apply(state)

        return self._write(task_id, on_state, only=only)

    def create(self, task_id: str, change: Change[R], exists: Callable[[], Exception]) -> R:
        """Create the task with ``change``; if it exists (even by a concurrent
        writer), raise what ``exists`` returns."""

        def on_state(state: TaskState | None) -> Change[R]:
            if state is not None:
                raise exists()
            return change

        return self._write(task_id, on_state)

    def create_many(
        self,
        changes: Mapping[str, Change[Any]],
        first: Callable[[], Callable[[], None]] | None = None,
    ) -> bool:
        """Create every task of ``changes`` in one all-or-nothing ref transaction;
        ``False`` (no task created) if any of them exists meanwhile.

        ``first`` is called while the tasks' objects are made (what it writes goes
        with them), and what it returns once they are in place, before any task
        ref: an import's record of what it imported (:mod:`~git_hydrate.interop`),
        which a stop between the two must not leave behind its tasks.

        At :data:`~git_hydrate.store.refs.PACKED_CREATIONS` tasks or more (an
        import), their objects go into one pack and their refs into
        ``packed-refs``, so that the next ``git gc --auto`` finds nothing to do
        (tens of thousands of loose files held the next pull up for seconds).
        No reflog is written: a creation has no earlier value to recover (the
        task's first change logs this one as its old value), as for a pull's.
        """
        many = len(changes) >= store_refs.PACKED_CREATIONS
        try:
            with self.repo.packed_writes() if many else contextlib.nullcontext():
                updates = [
                    (ref_name(task_id), None, self._commit(task_id, None, None, change))
                    for task_id, change in changes.items()
                ]
                then = first() if first is not None else None
            if then is not None:
                then()
            self.repo.update_refs(
                [(ref, old, new) for ref, old, new in updates if new is not None],
                f"hydrate: task-add {len(updates)} task(s)",
                reflog=False,
            )
        except RefRace:
            return False
        finally:  # (the pack's .keep goes once its refs are written, or given up)
            self.repo.release_packs()
        return True

    def update_many(
        self, changes: Mapping[str, tuple[TaskState, Change[Any]]], message: str
    ) -> tuple[set[str], set[str]]:
        """Commit each change on its state's tip and move the refs: ``(moved, raced)``,
        the ids of the tasks moved (a change that leaves a tree as it is moves
        none) and of those left as they were because a task moved since its state
        was read (the caller re-reads and writes them one by one).

        The refs move in two all-or-nothing transactions: those without a reflog
        (all of an import's, in ``packed-refs`` when they are only there), then
        those with one, which git appends to (a task worked on here): one task
        with a reflog no longer sends every other to a loose ref. At
        :data:`~git_hydrate.store.refs.PACKED_CREATIONS` tasks or more the
        objects go into one pack. No reflog is created (the old tip is the new
        commit's parent).
        """
        many = len(changes) >= store_refs.PACKED_CREATIONS
        moved: set[str] = set()
        try:
            with self.repo.packed_writes() if many else contextlib.nullcontext():
                commits = {
                    task_id: self._commit(task_id, state.tip, state, change)
                    for task_id, (state, change) in changes.items()
                }
            logged = {t for t in commits if self.repo.has_reflog(ref_name(t))}
            for group in ([t for t in commits if t not in logged], [*logged]):
                updates = [(t, commits[t]) for t in group if commits[t] is not None]
                try:
                    if updates:
                        self.repo.update_refs(
                            [(ref_name(t), changes[t][0].tip, new) for t, new in updates],
                            message,
                            reflog=False,
                        )
                except RefRace:
                    return moved, {t for t, _new in updates} | (set(logged) - set(group))
                moved.update(t for t, _new in updates)
        finally:
            self.repo.release_packs()
        return moved, set()

    def prepare(
        self, task_id: str, apply: Callable[[TaskState], Change[R]]
    ) -> tuple[bytes, bytes | None, R]:
        """Commit ``apply``'s change on the live task's tip *without* moving its ref.

        Returns ``(tip, commit, result)``; ``commit`` is ``None`` when nothing
        would change. The caller publishes the commit elsewhere first (a push
        the remote accepts or refuses as a whole) and then moves the local ref
        with :meth:`advance`, or drops it.
        """
        tip = self.tip(task_id)
        if tip is None:
            raise self.missing(task_id)
        state = self.read_state(task_id, tip)
        try:
            change = apply(state)
        except Unchanged as done:
            result: R = done.result
            return tip, None, result
        return tip, self._commit(task_id, tip, state, change), change.result

    def advance(self, task_id: str, old: bytes, new: bytes, message: str) -> bool:
        """Move the task's ref from ``old`` to ``new``; ``False`` if it moved meanwhile."""
        try:
            self.repo.compare_and_swap(ref_name(task_id), old, new, message)
        except RefRace:
            return False
        return True

    def _commit(
        self, task_id: str, tip: bytes | None, state: TaskState | None, change: Change[Any]
    ) -> bytes | None:
        """The commit of ``change`` on ``tip`` (``None``: the tree would not change)."""
        return self._made(task_id, tip, state, change)[0]

    def _made(
        self, task_id: str, tip: bytes | None, state: TaskState | None, change: Change[Any]
    ) -> tuple[bytes | None, Task]:
        """:meth:`_commit`, and the task as a read of that commit decodes it."""
        self.repo.identity()  # no identity, no commit (refused like git commit)
        extras = fields_to_keep(task_id, state) if state is not None else {}
        data = codec.encode_with_extras(change.task, extras)
        # (a larger one an earlier version wrote may change, but not grow)
        held = len(state.raw_task) if state is not None else 0
        if len(data) > max(codec.MAX_TASK_JSON_BYTES, held):
            raise ValidationError(
                f"task {task_id}: its task.json would hold {codec.oversized(len(data))}; "
                "nothing written"
            )
        # (never write a task.json its own reader refuses: that task could not be
        # read, mended or pushed again; a one-line error instead, nothing written)
        made = codec.decode_task(data, f"task {task_id}: task.json as it would be written")
        tree_changes = link_tree_changes(self.repo, change.links, state)
        tree_changes[TASK_FILE] = self.repo.write_blob(data)
        tree_changes.update(change.bodies)
        if state is not None and state.tree is not None:
            tree_changes.update(self._foreign_top_level(state.tree))
        tree = self.repo.update_tree(state.tree if state else None, tree_changes)
        if state is not None and tree == state.tree:
            return None, made
        parents = [tip] if tip is not None else []
        return self.repo.write_commit(tree, parents, change.message, when=self.commit_when()), made

    def _write(
        self,
        task_id: str,
        apply: Callable[[TaskState | None], Change[R]],
        *,
        only: str | None = None,
    ) -> R:
        ref = ref_name(task_id)
        for _attempt in attempts():
            tip = self.tip(task_id)
            state = self.read_state(task_id, tip, only=only) if tip is not None else None
            try:
                change = apply(state)
            except Unchanged as done:
                result: R = done.result
                return result
            commit, made = self._made(task_id, tip, state, change)
            if commit is None:
                return change.result
            try:
                self.repo.compare_and_swap(ref, tip, commit, change.message)
            except RefRace:
                self.retries += 1
                if lock_left_behind(self.repo, ref):
                    break  # no writer holds a lock this long: say so now, not in a minute
                continue
            if state is None or not state.partial:
                self.last_write = (task_id, commit, made, change.links)
            return change.result
        raise busy(self.repo, task_id)

    def _foreign_top_level(self, tree: bytes) -> dict[bytes, bytes | None]:
        """Removals of the top-level entries of a task tree this version never
        writes (a gitlink, a symlink, an unknown name): a write does not carry
        them on, or a host with ``receive.fsckObjects`` may refuse the push.
        ``doctor`` names them, deeper ones too."""
        drop: dict[bytes, bytes | None] = {}
        for name, (mode, _oid) in self.repo.read_tree(tree).items():
            expected = TOP_LEVEL.get(name)
            if expected is None or mode != expected:
                drop[name] = None
        return drop

    def busy(self, task_id: str) -> Busy:
        """Why a write of ``task_id`` gave up: a lock left behind, or constant change."""
        return busy(self.repo, task_id)

    # -- new ids -------------------------------------------------------------------

    def check_case_collision(self, task_id: str) -> None:
        """See :meth:`IdAdmission.check_case_collision`."""
        self.admission.check_case_collision(task_id)

    def check_new_id(self, task_id: str) -> None:
        """See :meth:`IdAdmission.check_new_id`."""
        self.admission.check_new_id(task_id)

    def name_lock(self, task_id: str) -> AbstractContextManager[None]:
        """See :meth:`IdAdmission.name_lock`."""
        return self.admission.name_lock(task_id)

    # -- the graph of parents and dependencies -----------------------------------

    @contextlib.contextmanager
    def graph_lock(self) -> Iterator[None]:
        """Hold the repository's lock on the graph of parents and dependencies
        while a write that adds edges checks the graph and moves its ref.

        A cycle check reads every task, and the write moves one ref: two
        writers each adding half of a cycle to different tasks would each
        check a graph without the other's half. Writers that add edges take
        turns here, so the second checks the graph the first wrote. Writes
        that add no edge never take it. Re-entrant within one process.

        Raises:
            Busy: another writer held it for longer than a live writer does.
        """
        with self._graph_mutex:
            if self._graph_depth:
                self._graph_depth += 1
                try:
                    yield
                finally:
                    self._graph_depth -= 1
                return
            with held(self.repo, GRAPH_LOCK, _graph_busy):
                self._graph_depth = 1
                try:
                    yield
                finally:
                    self._graph_depth = 0


def _graph_busy() -> Busy:
    return Busy("another writer kept the graph of parents and dependencies locked; try again")


def _damaged(task_id: str, what: str) -> CorruptData:
    """The error of a stored body of ``task_id`` that cannot be used (``doctor`` names it too)."""
    return CorruptData(f"task {task_id}: {what}", task_id=task_id)
