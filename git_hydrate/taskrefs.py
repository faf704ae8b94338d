"""The task-ref core: reading, decoding and writing tasks, one ref each.

Storage (format 1)::

    refs/hydrate/tasks/<task-id>   -> commit; the commit chain is the task's history
      tree: task.json              the task document
            links.json             context links, in packing order
            bodies/<aa>/<sha256>   the body blobs, fanned out by hash prefix

A task of more than :data:`FAN_OUT_LINKS` links fans its links out too
(``links.json`` format 2)::

            links.json             {"format":2,"links":[]}: look in links/
            links/<a>.json         the links whose sha256 starts with <a>

Every change is one commit, moved onto the task's ref by a compare-and-swap
(:meth:`TaskRefs.write`, the one write loop). When another writer wins the
race, the change is re-applied to the state it wrote, so concurrent writers
never lose each other's work. Every writer of git-hydrate, of one ref or of
several, retries on the one policy of :func:`attempts`.

Everything above this module — the lifecycle, hydration, packing, sync and
doctor — reads and writes tasks through :class:`TaskRefs` alone.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Generic, TypeVar

import msgspec

from . import codec, validate
from .archive import ARCHIVE_REF, read_archive
from .errors import Busy, Conflict, CorruptData, NotFound, NotWritable
from .ids import TASK_REF_PREFIX, names_a_task, ref_name
from .model import LINKS_FANNED_FORMAT, Link, LinkList, Task, packing_sorted
from .store import MODE_BLOB, MODE_TREE, RefRace, Repository, parse_commit_tree

__all__ = [
    "FAN_OUT_LINKS",
    "MAX_ATTEMPTS",
    "STALE_LOCK_SECONDS",
    "TASK_REF_PREFIX",
    "Change",
    "TaskRefs",
    "TaskState",
    "Unchanged",
    "attempts",
    "body_path",
    "commit_message",
    "default_title",
    "iso_utc",
    "link_shard",
    "link_tree_changes",
    "names_a_task",
    "ref_name",
    "task_message",
    "unknown_link_fields",
    "unknown_task_fields",
]

R = TypeVar("R")

#: How often a write re-applies its change after losing a race before giving up.
MAX_ATTEMPTS: Final = 64
#: A ref lock older than this was left behind by a writer that died: git holds
#: one for milliseconds. A write that finds one gives up at once and names it.
STALE_LOCK_SECONDS: Final = 10.0

_TASK_FILE: Final = b"task.json"
_LINKS_FILE: Final = b"links.json"
_BODIES_DIR: Final = b"bodies"
_LINKS_DIR: Final = b"links"
#: A task with more links than this keeps them fanned out in ``links/<a>.json``
#: by the first hex digit of their sha256, so that one change rewrites one
#: sixteenth of the list instead of all of it (2 MB at 10,000 links). The
#: layout depends on the number of links only, so merged states converge.
FAN_OUT_LINKS: Final = 1000
#: Hex digits of the sha256 that name a links file: 16 files keep a full read
#: to 16 objects while a write at 10,000 links rewrites about 130 KB.
_SHARD_DIGITS: Final = 1
#: What a task tree holds at its top, with each entry's mode.
_TOP_LEVEL: Final = {
    _TASK_FILE: MODE_BLOB,
    _LINKS_FILE: MODE_BLOB,
    _LINKS_DIR: MODE_TREE,
    _BODIES_DIR: MODE_TREE,
}
_FANNED_STUB: Final = codec.encode(LinkList(format=LINKS_FANNED_FORMAT))


# -- the one retry policy ----------------------------------------------------------


def attempts(limit: int = MAX_ATTEMPTS) -> Iterator[int]:
    """Attempt numbers for a write that may lose races: jittered, growing back-off.

    The first attempt starts at once; each later one after a random pause of
    a few milliseconds that grows with the attempt (bounded), so that writers
    that collided spread out. A loop that exhausts them raises :class:`Busy`.
    """
    for attempt in range(limit):
        if attempt:
            time.sleep(random.uniform(0.001, 0.004) * min(attempt, 10))
        yield attempt


# -- names and paths ------------------------------------------------------------------


def iso_utc(timestamp: float) -> str:
    """``2026-11-30T07:14:27Z`` for a POSIX timestamp."""
    return datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_title(objective: str) -> str:
    """A title from the objective's first line, when none was given."""
    first = objective.strip().splitlines()[0] if objective.strip() else ""
    return first if len(first) <= 80 else first[:77].rstrip() + "..."


def body_path(sha256: str) -> bytes:
    """Where a body lives in the task tree: ``bodies/<aa>/<sha256>``."""
    return b"%s/%s/%s" % (_BODIES_DIR, sha256[:2].encode(), sha256.encode())


def link_shard(sha256: str) -> str:
    """The prefix naming the links file that holds the link of ``sha256``."""
    return sha256[:_SHARD_DIGITS]


def link_shard_path(prefix: str) -> bytes:
    """Where a fanned-out task keeps the links whose sha256 starts with ``prefix``."""
    return b"%s/%s.json" % (_LINKS_DIR, prefix.encode())


# -- commit messages ----------------------------------------------------------------


def commit_message(summary: str, trailers: Sequence[tuple[str, str]], body: str = "") -> str:
    """The one shape of every commit git-hydrate writes.

    ``hydrate: <summary>``, an optional body paragraph, then ``Hydrate-<Key>:
    <value>`` trailers, which :mod:`git_hydrate.history` reads back. A value
    is folded onto one line.
    """
    lines = [f"hydrate: {summary}", ""]
    if body:
        lines += [body, ""]
    for key, value in trailers:
        value = value if value.isprintable() else " ".join(value.split())
        lines.append(f"Hydrate-{key}: {value}")
    return "\n".join(lines) + "\n"


def task_message(summary: str, action: str, task_id: str, **named: str) -> str:
    """A task change's message: ``Action`` and ``Task`` trailers, then ``named``
    ones (``checkpoint_summary`` becomes ``Hydrate-Checkpoint-Summary``)."""
    trailers = [("Action", action), ("Task", task_id)]
    trailers += [(key.replace("_", "-").title(), value) for key, value in named.items()]
    return commit_message(summary, trailers)


# -- states and changes -----------------------------------------------------------------


class TaskState(msgspec.Struct):
    """A task as read from its tip commit."""

    task: Task
    links: list[Link]
    tip: bytes | None = None
    tree: bytes | None = None
    #: The links by ``links/<a>.json`` file, when the task's links are fanned
    #: out; ``None`` when they are all in ``links.json``.
    shards: dict[str, list[Link]] | None = None
    #: Only the links of one ``links/<a>.json`` were read (``links`` is not
    #: the whole list): see :meth:`TaskRefs.write`'s ``only``.
    partial: bool = False
    #: ``task.json`` and ``links.json`` as stored, to find fields a newer
    #: version wrote that this one does not know (see :meth:`TaskRefs.write`).
    raw_task: bytes = b""
    raw_links: bytes = b""
    #: Each ``links/<a>.json`` read, as stored (fanned-out tasks).
    raw_shards: dict[str, bytes] = {}


class Change(msgspec.Struct, Generic[R]):
    """What one write does: the new state, the tree paths it touches, its message,
    and what the write returns."""

    task: Task
    links: list[Link]
    message: str
    result: R
    bodies: dict[bytes, bytes | None] = {}


class Unchanged(Exception, Generic[R]):
    """Raised by a change function when the state already is what was asked."""

    def __init__(self, result: R) -> None:
        super().__init__()
        self.result = result


def link_tree_changes(
    repo: Repository, links: list[Link], before: TaskState | None
) -> dict[bytes, bytes | None]:
    """The tree changes (``{path: blob oid or None}``) that store ``links``.

    Up to :data:`FAN_OUT_LINKS` links go into ``links.json``; more are fanned
    out, and only the ``links/<a>.json`` files whose links changed since
    ``before`` (the state read, or ``None`` to write everything) are written.
    """
    old = before.shards if before is not None else None
    partial = before is not None and before.partial
    if len(links) <= FAN_OUT_LINKS and not partial:
        ordered = packing_sorted(links)
        # All links in links.json: no links/ at all (not even one a hostile tree
        # carried along, which a format-1 read never looks at).
        return {
            _LINKS_FILE: repo.write_blob(codec.encode(LinkList(links=ordered))),
            _LINKS_DIR: None,
        }
    groups: dict[str, list[Link]] = {}
    for link in links:
        groups.setdefault(link_shard(link.sha256), []).append(link)
    if partial and len(groups) > 1:
        raise AssertionError("a write given one prefix's links changed another's")
    changes: dict[bytes, bytes | None] = {}
    if old is None:
        # Fanning out now: whatever a links/ held before (from a hostile tree)
        # goes; only the files written here make up the new one.
        changes = {_LINKS_FILE: repo.write_blob(_FANNED_STUB), _LINKS_DIR: None}
    old = old or {}
    paths: list[bytes] = []
    datas: list[bytes] = []
    for prefix, group in groups.items():
        if group == old.get(prefix):  # a change keeps the order of what it leaves alone
            continue
        group = packing_sorted(group)
        if group != old.get(prefix):
            paths.append(link_shard_path(prefix))
            datas.append(codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group)))
    changes.update(zip(paths, repo.write_blobs(datas), strict=True))
    changes.update({link_shard_path(prefix): None for prefix in old.keys() - groups.keys()})
    return changes


def unknown_task_fields(task_id: str, state: TaskState) -> tuple[dict[str, Any], list[str]]:
    """The fields of ``task.json`` a newer version of the same format wrote.

    Returns the top-level ones (name to value, to write back as they were)
    and the paths of nested ones (inside a checkpoint, say), which cannot be
    kept.
    """
    extras: dict[str, Any] = {}
    nested: list[str] = []
    if state.raw_task and codec.encode(state.task) != state.raw_task:
        raw = codec.decode_json(state.raw_task, f"task {task_id}: task.json")
        for path in codec.lost_fields(raw, msgspec.to_builtins(state.task)):
            key = path[2:]
            if "." in key or "[" in key:
                nested.append(f"task.json {path}")
            else:
                extras[key] = raw[key]
    return extras, nested


def unknown_link_fields(task_id: str, state: TaskState) -> list[str]:
    """The paths of link fields a newer version wrote (in ``links.json``, or in the
    ``links/<a>.json`` files read), which this one would drop."""
    if state.shards is not None:
        lost = []
        for prefix, stored in sorted(state.raw_shards.items()):
            group = state.shards.get(prefix, [])
            kept = codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group))
            if kept != stored:
                where = f"links/{prefix}.json"
                raw = codec.decode_json(stored, f"task {task_id}: {where}")
                lost += [f"{where} {p}" for p in codec.lost_fields(raw, msgspec.json.decode(kept))]
        return lost
    if not state.raw_links:
        return []
    kept = codec.encode(LinkList(links=state.links))
    if kept == state.raw_links:
        return []
    raw = codec.decode_json(state.raw_links, f"task {task_id}: links.json")
    built = msgspec.json.decode(kept)
    return [f"links.json {p}" for p in codec.lost_fields(raw, built)]


def _unknown_task_fields(task_id: str, state: TaskState) -> dict[str, Any]:
    """Fields of ``task.json`` a newer version of the same format wrote, to keep.

    A write must not drop them: top-level ones are returned to be written
    back as they were; one inside a nested value (a checkpoint, a link) cannot
    be kept, so the write is refused, naming it.

    Raises:
        Conflict: a field this version does not know would be lost.
    """
    extras, nested = unknown_task_fields(task_id, state)
    nested += unknown_link_fields(task_id, state)
    if nested:
        shown = ", ".join(nested[:5]) + (f" and {len(nested) - 5} more" if len(nested) > 5 else "")
        raise Conflict(
            f"task {task_id} holds fields this git-hydrate does not know ({shown}); "
            "a write would drop them: upgrade git-hydrate to change this task"
        )
    return extras


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
        self._archived_folded: tuple[bytes | None, dict[str, list[str]]] | None = None

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
        """The tip commit of a live task, or ``None``."""
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

    def read_state(self, task_id: str, tip: bytes, *, only: str | None = None) -> TaskState:
        """Decode the state stored in the commit ``tip`` of ``task_id``.

        ``only`` (a :func:`link_shard` prefix) reads, of a task whose links are fanned out,
        just the links whose sha256 starts with it: a *partial* state, which
        only a write that touches those links alone may use (see ``_write``).

        Raises:
            CorruptData: the tree is not a valid task, naming the task.
        """
        state = self._states_at({task_id: tip}, only)[task_id]
        if isinstance(state, CorruptData):
            raise state
        return state

    def load_many(self, task_ids: Iterable[str]) -> dict[str, TaskState | CorruptData]:
        """The states of many live tasks in one pipelined read (absent ids are left out).

        A task whose data cannot be read maps to the :class:`CorruptData` naming
        it, so one damaged task never hides the others.
        """
        refs = self.repo.refs_under(TASK_REF_PREFIX)
        tips: dict[str, bytes] = {}
        for task_id in task_ids:
            tip = refs.get(task_id.encode("utf-8", "surrogateescape"))
            if tip is not None:
                tips[task_id] = tip
        return self._states_at(tips)

    def _states_at(
        self, tips: Mapping[str, bytes], only: str | None = None
    ) -> dict[str, TaskState | CorruptData]:
        """Decode each task's state at its tip: the commit, ``task.json`` and
        ``links.json`` of every task in one pipelined ``cat-file`` pass (and, for
        tasks whose links are fanned out, their ``links/`` in two more)."""
        specs = []
        for tip in tips.values():
            specs += [tip, tip + b":" + _TASK_FILE, tip + b":" + _LINKS_FILE]
        answers = self.repo.read_many(specs)
        result: dict[str, TaskState | CorruptData] = {}
        fanned: dict[str, TaskState] = {}
        for index, (task_id, tip) in enumerate(tips.items()):
            commit, task_blob, links_blob = answers[3 * index : 3 * index + 3]
            where = f"task {task_id}"
            try:
                if (
                    commit is None
                    or commit[0] != b"commit"
                    or task_blob is None
                    or links_blob is None
                    or task_blob[0] != b"blob"
                    or links_blob[0] != b"blob"
                ):
                    raise self._damage(task_id, tip)
                tree, _parents = parse_commit_tree(tip, commit[1])
                task = codec.decode_task(task_blob[1], f"{where}: task.json")
                links = codec.decode_links(links_blob[1], f"{where}: links.json")
                if task.id != task_id:
                    raise CorruptData(f"{where}: task.json names task {task.id!r}")
                # in packing order whoever wrote the file (this version always does)
                state = TaskState(
                    task=task,
                    links=packing_sorted(links.links),
                    tip=tip,
                    tree=tree,
                    raw_task=task_blob[1],
                    raw_links=links_blob[1],
                )
                if links.format == LINKS_FANNED_FORMAT:
                    if links.links:
                        raise CorruptData(f"{where}: links.json of format 2 holds links")
                    fanned[task_id] = state
                result[task_id] = state
            except CorruptData as exc:
                result[task_id] = self._named(task_id, exc)
        if fanned:
            result.update(self._read_fanned(fanned, only))
        return result

    @staticmethod
    def _named(task_id: str, exc: CorruptData) -> CorruptData:
        where = f"task {task_id}"
        return exc if str(exc).startswith(where) else CorruptData(f"{where}: {exc}")

    def _read_fanned(
        self, states: dict[str, TaskState], only: str | None
    ) -> dict[str, TaskState | CorruptData]:
        """Fill in the links of tasks that keep them in ``links/<a>.json``: every
        ``links/`` tree in one pipelined pass, then every file (or, with
        ``only``, the one file of that prefix) in another."""
        trees = self.repo.read_many(
            [(state.tree or b"") + b":" + _LINKS_DIR for state in states.values()]
        )
        result: dict[str, TaskState | CorruptData] = {}
        wanted: dict[str, list[tuple[str, bytes]]] = {}
        for task_id, answer in zip(states, trees, strict=True):
            try:
                if answer is None or answer[0] != b"tree":
                    raise CorruptData("links.json says the links are in links/, which is missing")
                shards = []
                for name, (mode, oid) in self.repo.parse_tree(b"links", answer[1]).items():
                    prefix = name.removesuffix(b".json").decode("ascii", "replace")
                    shown = name.decode("utf-8", "replace")
                    if (
                        mode != MODE_BLOB
                        or len(name) != _SHARD_DIGITS + 5
                        or not name.endswith(b".json")
                        or prefix.strip("0123456789abcdef")
                    ):
                        raise CorruptData(f"unexpected entry links/{shown}")
                    if only is None or prefix == only:
                        shards.append((prefix, oid))
                wanted[task_id] = shards
            except CorruptData as exc:
                result[task_id] = self._named(task_id, exc)
        answers = self.repo.read_many([oid for shards in wanted.values() for _p, oid in shards])
        start = 0
        for task_id, shards in wanted.items():
            state = states[task_id]
            state.shards = {}
            state.partial = only is not None
            try:
                for (prefix, _oid), answer in zip(
                    shards, answers[start : start + len(shards)], strict=True
                ):
                    where = f"links/{prefix}.json"
                    if answer is None or answer[0] != b"blob":
                        raise CorruptData(f"{where} cannot be read")
                    group = codec.decode_links(answer[1], where).links
                    firsts = "".join([link.sha256[:_SHARD_DIGITS] for link in group])
                    if firsts != prefix * len(group):
                        raise CorruptData(f"{where} holds a link of another prefix")
                    state.shards[prefix] = group
                    state.raw_shards[prefix] = answer[1]
                state.links = packing_sorted(
                    link for group in state.shards.values() for link in group
                )
                result[task_id] = state
            except CorruptData as exc:
                result[task_id] = self._named(task_id, exc)
            start += len(shards)
        return result

    def _damage(self, task_id: str, tip: bytes) -> CorruptData:
        """Say exactly what is wrong with a tip whose task files cannot be read."""
        try:
            tree, _parents = self.repo.read_commit_tree(tip)
            entries = self.repo.read_tree(tree)
            missing = [name.decode() for name in (_TASK_FILE, _LINKS_FILE) if name not in entries]
            if missing:
                return CorruptData(f"commit {tip.decode()} has no {' or '.join(missing)}")
            for name in (_TASK_FILE, _LINKS_FILE):
                self.repo.read_blob(entries[name][1])
        except CorruptData as exc:
            return exc
        return CorruptData(f"commit {tip.decode()} cannot be read")

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
        known = self.task_names()
        same = [other for other in known if other.casefold() == task_id.casefold()]
        close = same or difflib.get_close_matches(task_id, known, n=1, cutoff=0.75)
        if close:
            return NotFound(f"no task {task_id!r}; did you mean {close[0]}?")
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
        if (sha256 or hashlib.sha256(data).hexdigest()) != link.sha256:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} does not match its sha256")
        if check_size and len(data) != link.size:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} does not match its size")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} is not UTF-8") from None

    def check_stored_body(self, task_id: str, link: Link, limit: int) -> None:
        """Check the stored body ``link`` names without holding it in memory:
        present, at most ``limit`` bytes, its sha256, its recorded size, UTF-8.

        Raises:
            CorruptData: naming the task and the body.
        """
        short = link.sha256[:12]
        if link.size > limit:
            raise CorruptData(
                f"task {task_id}: body {short} is {link.size} bytes, over "
                f"hydrate.maxBodyBytes ({limit})"
            )
        try:
            size, sha256, utf8 = self.repo.blob_digest(link.oid.encode(), limit)
        except CorruptData:
            raise CorruptData(f"task {task_id}: body {short} is missing (blob absent)") from None
        if sha256 is None:
            raise CorruptData(
                f"task {task_id}: body {short} is {size} bytes, over hydrate.maxBodyBytes "
                f"({limit}), though its link says {link.size}"
            )
        if sha256 != link.sha256:
            raise CorruptData(f"task {task_id}: body {short} does not match its sha256")
        if size != link.size:
            raise CorruptData(f"task {task_id}: body {short} does not match its size")
        if not utf8:
            raise CorruptData(f"task {task_id}: body {short} is not UTF-8")

    def read_body(self, task_id: str, link: Link) -> str:
        """The checked text of the body ``link`` names."""
        try:
            data = self.repo.read_blob(link.oid.encode())
        except CorruptData as exc:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]}: {exc}") from None
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
        self.repo.identity()  # no identity, no commit (refused like git commit)
        extras = _unknown_task_fields(task_id, state) if state is not None else {}
        tree_changes = link_tree_changes(self.repo, change.links, state)
        tree_changes[_TASK_FILE] = self.repo.write_blob(
            codec.encode_with_extras(change.task, extras)
        )
        tree_changes.update(change.bodies)
        if state is not None and state.tree is not None:
            tree_changes.update(self._foreign_top_level(state.tree))
        tree = self.repo.update_tree(state.tree if state else None, tree_changes)
        if state is not None and tree == state.tree:
            return None
        return self.repo.write_commit(
            tree, [tip] if tip is not None else [], change.message, when=self.commit_when()
        )

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
            commit = self._commit(task_id, tip, state, change)
            if commit is None:
                return change.result
            try:
                self.repo.compare_and_swap(ref, tip, commit, change.message)
            except RefRace:
                self.retries += 1
                if self._lock_left_behind(ref):
                    break  # no writer holds a lock this long: say so now, not in a minute
                continue
            return change.result
        raise self.busy(task_id)

    def _foreign_top_level(self, tree: bytes) -> dict[bytes, bytes | None]:
        """Removals of the top-level entries of a task tree this version never
        writes (a gitlink, a symlink, an unknown name): a write does not carry
        them on, or a host with ``receive.fsckObjects`` may refuse the push.
        ``doctor`` names them, deeper ones too."""
        drop: dict[bytes, bytes | None] = {}
        for name, (mode, _oid) in self.repo.read_tree(tree).items():
            expected = _TOP_LEVEL.get(name)
            if expected is None or mode != expected:
                drop[name] = None
        return drop

    def _lock_left_behind(self, ref: bytes) -> bool:
        """Whether a lock file stopping the ref (its own, or ``packed-refs.lock``)
        is older than any live writer keeps one."""
        for lock in self.repo.ref_locks(ref):
            try:
                if time.time() - os.stat(lock).st_mtime > STALE_LOCK_SECONDS:
                    return True
            except OSError:
                continue
        return False

    def busy(self, task_id: str) -> Busy:
        """Why a write of ``task_id`` gave up: a lock left behind, or constant change."""
        for lock in self.repo.ref_locks(ref_name(task_id)):
            try:
                age = time.time() - os.stat(lock).st_mtime
            except OSError:
                continue
            return Busy(
                f"task {task_id} is locked by {lock} ({age:.0f} s old); if no git or "
                "git-hydrate process is writing it, clear it with: "
                "git hydrate doctor --clear-stale-locks"
            )
        return Busy(
            f"task {task_id} kept changing under this write ({MAX_ATTEMPTS} attempts); try again"
        )

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
        folded = task_id.casefold().encode("utf-8", "surrogatepass")
        # beside git's own locks, so that nothing is left behind once released
        name = f"hydrate-id-{hashlib.sha256(folded).hexdigest()[:32]}.lock"
        path = os.path.join(self.repo.common_dir, name)
        deadline = time.monotonic() + 2 * STALE_LOCK_SECONDS
        while True:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                break
            except FileExistsError:
                pass
            except OSError as exc:  # a read-only repository, say: as any other write
                why = exc.strerror or exc
                raise NotWritable(
                    f"cannot write to the repository ({self.repo.common_dir}): {why}"
                ) from None
            try:
                age = time.time() - os.stat(path).st_mtime
            except FileNotFoundError:
                continue  # released meanwhile
            if age > STALE_LOCK_SECONDS:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            if time.monotonic() > deadline:
                raise Busy(f"task id {task_id!r} is being created by another writer")
            time.sleep(0.005 + random.random() * 0.01)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

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
