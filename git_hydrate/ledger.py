"""The Ledger: tasks and their context, stored in a git repository.

Storage (format 1)::

    refs/hydrate/tasks/<task-id>   -> commit; the commit chain is the task's history
      tree: task.json              the task document
            links.json             context links, in packing order
            bodies/<aa>/<sha256>   the body blobs, fanned out by hash prefix

A task of more than :data:`FAN_OUT_LINKS` links fans its links out too
(``links.json`` format 2)::

            links.json             {"format":2,"links":[]}: look in links/
            links/<a>.json         the links whose sha256 starts with <a>

Every change is one commit, moved onto the task's ref by a compare-and-swap.
When another writer wins the race, the change is re-applied to the state it
wrote — so concurrent writers never lose each other's work.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import msgspec

from . import codec, context_expander, validate
from .errors import Busy, Conflict, CorruptData, NotFound, SecretDetected, ValidationError
from .model import (
    INITIAL_STATION,
    LINKS_FANNED_FORMAT,
    Link,
    LinkList,
    Task,
    packing_sorted,
)
from .store import MODE_BLOB, RefRace, Repository

__all__ = [
    "DEFAULT_MAX_BYTES",
    "TASK_REF_PREFIX",
    "Ledger",
    "TaskState",
    "iso_utc",
]

TASK_REF_PREFIX: Final = b"refs/hydrate/tasks/"
#: The packing budget when neither ``--max-bytes`` nor ``hydrate.maxBytes`` says.
DEFAULT_MAX_BYTES: Final = 131072
#: How often a write re-applies its change after losing a race before giving up.
MAX_ATTEMPTS: Final = 64

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
_FANNED_STUB: Final = codec.encode(LinkList(format=LINKS_FANNED_FORMAT))

#: Fields ``edit_task`` may change (the station moves through ``set_status``).
EDITABLE_FIELDS: Final = (
    "title",
    "objective",
    "acceptance",
    "acceptance_criteria",
    "scope",
    "kind",
    "priority",
    "token_budget",
    "tags",
    "files",
    "tests",
)


def iso_utc(timestamp: float) -> str:
    """``2026-11-30T07:14:27Z`` for a POSIX timestamp."""
    return datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def body_path(sha256: str) -> bytes:
    """Where a body lives in the task tree: ``bodies/<aa>/<sha256>``."""
    return b"%s/%s/%s" % (_BODIES_DIR, sha256[:2].encode(), sha256.encode())


def link_shard(sha256: str) -> str:
    """The prefix naming the links file that holds the link of ``sha256``."""
    return sha256[:_SHARD_DIGITS]


def link_shard_path(prefix: str) -> bytes:
    """Where a fanned-out task keeps the links whose sha256 starts with ``prefix``."""
    return b"%s/%s.json" % (_LINKS_DIR, prefix.encode())


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


def _names_a_task(name: bytes) -> bool:
    """Whether a ref name below ``refs/hydrate/tasks/`` is a valid task id."""
    return name.isascii() and validate.is_task_id(name.decode("ascii"))


def ref_name(task_id: str) -> bytes:
    """The ref of a task."""
    return TASK_REF_PREFIX + task_id.encode("ascii")


def default_title(objective: str) -> str:
    """A title from the objective's first line, when none was given."""
    first = objective.strip().splitlines()[0] if objective.strip() else ""
    return first if len(first) <= 80 else first[:77].rstrip() + "..."


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
    #: the whole list): see ``Ledger._write``'s ``only``.
    partial: bool = False


class Change(msgspec.Struct):
    """What one write does: the new state, the tree paths it touches, its message."""

    task: Task
    links: list[Link]
    message: str
    bodies: dict[bytes, bytes | None] = {}
    result: Any = None


class Unchanged(Exception):
    """Raised by a change function when the state already is what was asked."""

    def __init__(self, result: Any = None) -> None:
        super().__init__()
        self.result = result


#: The fields of a task's list summary (and of a valid list-cache entry).
LIST_FIELDS: Final = ("task_id", "title", "status", "kind", "priority", "tags", "attachments")


def task_summary(state: TaskState) -> dict[str, Any]:
    """The fields ``list`` shows (and ``status`` starts from) for one task."""
    task = state.task
    return {
        "task_id": task.id,
        "title": task.title,
        "status": task.status,
        "kind": task.kind,
        "priority": task.priority,
        "tags": list(task.tags),
        "attachments": len(state.links),
    }


class _SummaryCache:
    """A derived, disposable map from a task's tip commit to its list summary.

    Commits never change, so an entry keyed by the tip cannot go stale; a
    changed task simply has a new tip. Stored as one msgpack file at
    ``<common dir>/hydrate/list-cache``; a missing or unreadable file is
    rebuilt, and deleting it is always safe. It turns ``list`` over thousands of
    tasks into reading the refs and one small file.
    """

    def __init__(self, repo: Repository, name: str, required: Iterable[str] = LIST_FIELDS) -> None:
        self.repo = repo
        self.path = os.path.join(repo.common_dir, "hydrate", name)
        self.required = frozenset(required)
        self._entries: dict[str, dict[str, Any]] = {}

    def load(self) -> dict[str, dict[str, Any]]:
        """The entries, keeping only those that have every field this version needs."""
        try:
            with open(self.path, "rb") as fh:
                data = msgspec.msgpack.decode(fh.read(), type=dict[str, dict[str, Any]])
        except (OSError, msgspec.DecodeError):
            data = {}
        self._entries = {tip: item for tip, item in data.items() if self.required <= set(item)}
        return self._entries

    def save(self, new: dict[str, dict[str, Any]], keep: set[str]) -> None:
        """Add ``new`` entries and drop those whose tip is no longer live."""
        stale = set(self._entries) - keep
        if not new and not stale:
            return
        entries = {tip: item for tip, item in self._entries.items() if tip in keep}
        entries.update(new)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        # The cache only saves time: failing to write it is not an error.
        try:
            self.repo.make_dirs(os.path.dirname(self.path))
            with open(temporary, "wb") as fh:
                fh.write(msgspec.msgpack.encode(entries))
            self.repo.share(temporary)
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _message(summary: str, action: str, task_id: str, **trailers: str) -> str:
    lines = [f"hydrate: {summary}", "", f"Hydrate-Action: {action}", f"Hydrate-Task: {task_id}"]
    for key, value in trailers.items():
        # A trailer is one line: fold any line break a value may carry.
        value = value if value.isprintable() else " ".join(value.split())
        lines.append(f"Hydrate-{key.replace('_', '-').title()}: {value}")
    return "\n".join(lines) + "\n"


class Ledger:
    """Tasks and context in a git repository.

    Args:
        path: A directory inside a repository, a ``.git`` directory or a bare
            repository. ``None`` (the default) means the current directory and
            honours ``GIT_DIR`` like git does.
        clock: Returns the current POSIX time; tests pass a fixed one.

    Use it as a context manager so the repository is closed::

        with Ledger("/path/to/repo") as ledger:
            ledger.add_task("M-1002", objective="...", acceptance="...")
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = Repository(path)
        self._clock = clock
        #: How many writes of this Ledger lost a race and were re-applied.
        self.retries = 0

    def close(self) -> None:
        """Close the repository."""
        self.repo.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- configuration -----------------------------------------------------

    def config(self, key: str) -> str | None:
        """A ``hydrate.*`` git config value (key case-insensitive), or ``None``."""
        return self.repo.hydrate_config().get(key.lower())

    def config_int(self, key: str, default: int) -> int:
        """An integer ``hydrate.*`` setting; git's ``k``/``m``/``g`` suffixes allowed."""
        raw = self.config(key)
        if raw is None:
            return default
        text = raw.strip().lower()
        scale = {"k": 1024, "m": 1024**2, "g": 1024**3}.get(text[-1:], 1)
        if scale != 1:
            text = text[:-1]
        try:
            value = int(text) * scale
        except ValueError:
            raise ValidationError(f"git config {key} must be an integer, not {raw!r}") from None
        if value <= 0:
            raise ValidationError(f"git config {key} must be positive, not {raw!r}")
        return value

    def config_bool(self, key: str, default: bool) -> bool:
        """A boolean ``hydrate.*`` setting, read the way git reads booleans."""
        raw = self.config(key)
        if raw is None:
            return default
        text = raw.strip().lower()
        if text in ("true", "yes", "on", "1", ""):
            return True
        if text in ("false", "no", "off", "0"):
            return False
        raise ValidationError(f"git config {key} must be a boolean, not {raw!r}")

    def check_secrets(self, data: bytes, what: str, allow: bool | None) -> None:
        """Refuse ``data`` if it looks like it holds a credential, unless allowed.

        ``allow=None`` defers to ``git config hydrate.allowSecrets`` (default false).
        """
        if allow is None:
            allow = self.config_bool("hydrate.allowSecrets", False)
        if allow:
            return
        from .secrets import scan

        findings = scan(data.decode("utf-8"), limit=3)
        if findings:
            listed = ", ".join(str(f) for f in findings)
            raise SecretDetected(
                f"{what} looks like it contains a secret ({listed}); not stored. "
                "Remove it, or pass --allow-secrets (hydrate.allowSecrets=true) to store it anyway"
            )

    def default_max_bytes(self) -> int:
        """``hydrate.maxBytes``, else :data:`DEFAULT_MAX_BYTES`."""
        return self.config_int("hydrate.maxBytes", DEFAULT_MAX_BYTES)

    # -- reading ------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Every live task id, sorted."""
        return sorted(self.task_tips())

    def task_tips(self) -> dict[str, bytes]:
        """Every live task id and its tip commit.

        A ref under ``refs/hydrate/tasks/`` whose name is not a valid task id
        (made by hand or by another tool) is left out; :meth:`stray_task_refs`
        names it, so that ``list`` can warn and ``doctor`` report it.
        """
        refs = self.repo.refs_under(TASK_REF_PREFIX)
        return {name.decode("ascii"): oid for name, oid in refs.items() if _names_a_task(name)}

    def stray_task_ref_names(self) -> list[bytes]:
        """The full names of the refs under ``refs/hydrate/tasks/`` that are not
        valid task ids, as bytes, sorted."""
        names = self.repo.ref_names_under(TASK_REF_PREFIX)
        return sorted(TASK_REF_PREFIX + name for name in names if not _names_a_task(name))

    def stray_task_refs(self) -> list[str]:
        """:meth:`stray_task_ref_names`, printable (undecodable bytes as ``\\xNN``)."""
        return [n.decode("utf-8", "backslashreplace") for n in self.stray_task_ref_names()]

    def _tip(self, task_id: str) -> bytes | None:
        return self.repo.read_ref(ref_name(task_id))

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
        from .store import parse_commit_tree

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
                state = TaskState(task=task, links=packing_sorted(links.links), tip=tip, tree=tree)
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

    def _load(self, task_id: str) -> TaskState:
        validate.task_id(task_id)
        tip = self._tip(task_id)
        if tip is None:
            if self._archived(task_id, strict=False):
                raise NotFound(
                    f"task {task_id} is archived; bring it back with: "
                    f"git hydrate unarchive {task_id}"
                )
            raise NotFound(
                f"no task {task_id!r}; create it with: git hydrate task-add {task_id} "
                "--objective TEXT --acceptance TEXT"
            )
        return self.read_state(task_id, tip)

    def exists(self, task_id: str) -> bool:
        """Whether a live task ``task_id`` exists."""
        validate.task_id(task_id)
        return self._tip(task_id) is not None

    def get_task(self, task_id: str) -> dict[str, Any]:
        """The task's fields as a plain dict (plus ``attachments``, ``tip``, ``archived``).

        An archived task is read from the archive (``archived`` is true).
        """
        from .lifecycle import read_any

        state, archived = read_any(self, task_id)
        return {**self._task_dict(state), "archived": archived}

    def _task_dict(self, state: TaskState) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(state.task)
        data.pop("format", None)
        data["task_id"] = data.pop("id")
        checkpoints = data.get("checkpoints") or []
        data["checkpoint"] = (
            {k: checkpoints[-1][k] for k in ("summary", "evidence", "next_step")}
            if checkpoints
            else None
        )
        data["attachments"] = len(state.links)
        data["tip"] = state.tip.decode() if state.tip else None
        return data

    def list_tasks(
        self,
        *,
        status: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        tag: str | Iterable[str] | None = None,
        archived: bool = False,
    ) -> list[dict[str, Any]]:
        """A summary of every live task, sorted by id.

        Args:
            status: Only tasks at this station (or any of these stations).
            kind: Only tasks of this kind (or any of these kinds).
            tag: Only tasks carrying this tag (or all of these tags).
            archived: List the archived tasks instead (with ``archived_at``
                and ``archived_by``).
        """
        from . import lifecycle

        if archived:
            return lifecycle.archived_tasks(self, status=status, kind=kind, tag=tag)
        match = lifecycle.task_filter(status=status, kind=kind, tag=tag)
        tips = self.task_tips()
        cache = _SummaryCache(self.repo, "list-cache")
        known = cache.load()
        missing = [
            task_id
            for task_id, tip in tips.items()
            if known.get(tip.decode(), {}).get("task_id") != task_id
        ]
        fresh: dict[str, dict[str, Any]] = {}
        cached: dict[str, dict[str, Any]] = {}
        for task_id, state in self.load_many(missing).items():
            if isinstance(state, CorruptData):
                # listed, so that one damaged task neither hides nor breaks the rest
                fresh[task_id] = {"task_id": task_id, "error": str(state)}
                continue
            fresh[task_id] = task_summary(state)
            if state.tip is not None:
                # keyed by the tip actually read, which may be newer than the listing's
                cached[state.tip.decode()] = fresh[task_id]
        result: list[dict[str, Any]] = []
        for task_id in sorted(tips):
            tip = tips[task_id].decode()
            item = fresh.get(task_id) or known.get(tip)
            if item is not None and item.get("task_id") != task_id:
                item = None
            if item is None:
                continue  # removed while we were reading
            result.append(item)
        cache.save(cached, keep={tip.decode() for tip in tips.values()} | set(cached))
        return [item for item in result if "error" in item or match(item)]

    def context_entries(self, task_id: str) -> list[dict[str, Any]]:
        """The task's attachments in packing order: priority descending, then hash.

        An archived task's attachments are read from the archive.
        """
        from .lifecycle import read_any

        state, _archived = read_any(self, task_id)
        return [self._entry(link) for link in state.links]

    @staticmethod
    def _entry(link: Link) -> dict[str, Any]:
        return {
            "hash": link.sha256,
            "source": link.source,
            "priority": link.priority,
            "expires": iso_utc(link.expires) if link.expires is not None else None,
            "size": link.size,
            "oid": link.oid,
        }

    def read_body(self, task_id: str, digest: str) -> str:
        """The text of one attached body, checked against its sha256."""
        state = self._load(task_id)
        for link in state.links:
            if link.sha256 == digest:
                return self._read_link_body(task_id, link)
        raise NotFound(f"task {task_id} has no context {digest}")

    def _read_link_body(self, task_id: str, link: Link) -> str:
        try:
            data = self.repo.read_blob(link.oid.encode())
        except CorruptData as exc:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]}: {exc}") from None
        return self._check_body(task_id, link, data)

    def _check_body(
        self, task_id: str, link: Link, data: bytes, *, check_size: bool = False
    ) -> str:
        """``data`` as text, after checking it is the body ``link`` names.

        ``check_size`` also holds the link's recorded size to the body (data from
        a remote, whose sizes the packer will trust).
        """
        if hashlib.sha256(data).hexdigest() != link.sha256:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} does not match its sha256")
        if check_size and len(data) != link.size:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} does not match its size")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} is not UTF-8") from None

    # -- writing -------------------------------------------------------------

    def _write(
        self,
        task_id: str,
        apply: Callable[[TaskState | None], Change],
        *,
        only: str | None = None,
    ) -> Any:
        """Apply ``apply`` to the task's current state and commit it, retrying races.

        ``apply`` receives the state read (``None`` when the task does not
        exist) and returns the :class:`Change`, or raises :class:`Unchanged`.
        It may run several times: it must derive everything from its argument.

        ``only`` (a :func:`link_shard` prefix) promises that ``apply`` reads
        and changes only links of that prefix and never removes one: a task
        whose links are fanned out then reads and rewrites just that
        ``links/<a>.json``, so the write costs the same at 10 or 10,000 links.
        """
        ref = ref_name(task_id)
        for attempt in range(MAX_ATTEMPTS):
            tip = self._tip(task_id)
            state = self.read_state(task_id, tip, only=only) if tip is not None else None
            try:
                change = apply(state)
            except Unchanged as done:
                return done.result
            self.repo.identity()  # no identity, no commit (refused like git commit)
            tree_changes = link_tree_changes(self.repo, change.links, state)
            tree_changes[_TASK_FILE] = self.repo.write_blob(codec.encode(change.task))
            tree_changes.update(change.bodies)
            tree = self.repo.update_tree(state.tree if state else None, tree_changes)
            if state is not None and tree == state.tree:
                return change.result
            commit = self.repo.write_commit(
                tree, [tip] if tip is not None else [], change.message, when=self._clock()
            )
            try:
                self.repo.compare_and_swap(ref, tip, commit, change.message.splitlines()[0])
            except RefRace:
                self.retries += 1
                # Jittered, growing back-off: a few ms at first, bounded.
                time.sleep(random.uniform(0.001, 0.004) * min(attempt + 1, 10))
                continue
            return change.result
        lock = os.path.join(self.repo.common_dir, os.fsdecode(ref) + ".lock")
        if os.path.exists(lock):
            age = time.time() - os.stat(lock).st_mtime
            raise Busy(
                f"task {task_id} is locked by {lock} ({age:.0f} s old); if no git or "
                "git-hydrate process is writing it, clear it with: "
                "git hydrate doctor --clear-stale-locks"
            )
        raise Busy(
            f"task {task_id} kept changing under this write ({MAX_ATTEMPTS} attempts); try again"
        )

    def _check_case_collision(self, task_id: str) -> None:
        folded = task_id.casefold()
        for other in self.task_ids():
            if other.casefold() == folded and other != task_id:
                raise Conflict(
                    f"task id {task_id!r} differs from existing task {other!r} only by case; "
                    "ids must stay distinct on case-insensitive file systems"
                )

    def add_task(
        self,
        task_id: str,
        objective: str,
        acceptance: str,
        *,
        title: str | None = None,
        acceptance_criteria: Iterable[str] = (),
        scope: Iterable[str] = (),
        kind: str = "code",
        priority: int = 2,
        token_budget: int = 0,
        tags: Iterable[str] = (),
        files: Iterable[Any] = (),
        tests: Iterable[Any] = (),
        status: str = INITIAL_STATION,
    ) -> dict[str, Any]:
        """Create a task. Creating one that exists is a :class:`Conflict`."""
        validate.task_id(task_id)
        objective = validate.text(objective, "objective", required=True)
        acceptance = validate.text(acceptance, "acceptance", required=True)
        title = validate.one_line_text(title, "title").strip() if title else ""
        task = Task(
            id=task_id,
            title=title or default_title(objective),
            objective=objective,
            acceptance=acceptance,
            acceptance_criteria=validate.text_list(acceptance_criteria, "acceptance criterion"),
            scope=validate.text_list(scope, "scope key"),
            kind=validate.kind(kind),
            priority=validate.priority(priority),
            token_budget=validate.token_count(token_budget),
            tags=validate.text_list(tags, "tag"),
            files=validate.path_notes(files, "file in play"),
            tests=validate.path_notes(tests, "test"),
            status=validate.station(status),
            created_at=iso_utc(self._clock()),
        )
        self._check_case_collision(task_id)
        from .lifecycle import refuse_archived_id

        refuse_archived_id(self, task_id)

        def apply(state: TaskState | None) -> Change:
            if state is not None:
                raise Conflict(
                    f"task {task_id} already exists; "
                    f"change it with: git hydrate task-edit {task_id}"
                )
            return Change(
                task=task,
                links=[],
                message=_message(
                    f"task-add {task_id}",
                    "task-add",
                    task_id,
                    title=task.title,
                    status=task.status,
                ),
            )

        self._write(task_id, apply)
        return self.get_task(task_id)

    def edit_task(self, task_id: str, **fields: Any) -> dict[str, Any]:
        """Change some of a task's fields (see :data:`EDITABLE_FIELDS`)."""
        unknown = sorted(set(fields) - set(EDITABLE_FIELDS))
        if unknown:
            raise ValidationError(
                f"cannot edit {', '.join(unknown)}; editable: {', '.join(EDITABLE_FIELDS)}"
            )
        clean = {k: v for k, v in fields.items() if v is not None}
        checks: dict[str, Callable[[Any], Any]] = {
            "title": lambda v: validate.one_line_text(v, "title").strip(),
            "objective": lambda v: validate.text(v, "objective", required=True),
            "acceptance": lambda v: validate.text(v, "acceptance", required=True),
            "acceptance_criteria": lambda v: validate.text_list(v, "acceptance criterion"),
            "scope": lambda v: validate.text_list(v, "scope key"),
            "kind": validate.kind,
            "priority": validate.priority,
            "token_budget": validate.token_count,
            "tags": lambda v: validate.text_list(v, "tag"),
            "files": lambda v: validate.path_notes(v, "file in play"),
            "tests": lambda v: validate.path_notes(v, "test"),
        }
        values = {key: checks[key](value) for key, value in clean.items()}
        validate.task_id(task_id)

        def apply(state: TaskState | None) -> Change:
            if state is None:
                self._load(task_id)  # raises NotFound with the hint
                raise AssertionError("unreachable")
            changed = sorted(k for k, v in values.items() if getattr(state.task, k) != v)
            if not changed:
                raise Unchanged()
            task = msgspec.structs.replace(state.task, **{k: values[k] for k in changed})
            return Change(
                task=task,
                links=state.links,
                message=_message(
                    f"task-edit {task_id} ({', '.join(changed)})",
                    "task-edit",
                    task_id,
                    fields=", ".join(changed),
                ),
            )

        self._write(task_id, apply)
        return self.get_task(task_id)

    def add_context(
        self,
        task_id: str,
        body: str | bytes,
        source: str,
        priority: int = 0,
        ttl: float | None = None,
        *,
        allow_secrets: bool | None = None,
    ) -> dict[str, Any]:
        """Attach ``body`` to a task; attaching it again updates source, priority, expiry.

        A body that looks like it carries a credential is refused
        (:class:`SecretDetected`) unless ``allow_secrets`` is true (``None``:
        ``git config hydrate.allowSecrets``). Returns the attachment's entry
        plus ``created`` (a new link) and ``changed`` (anything written).
        """
        validate.task_id(task_id)
        source = validate.source_label(source)
        priority = validate.context_priority(priority)
        seconds = validate.ttl(ttl)
        data = validate.body_bytes(
            body, self.config_int("hydrate.maxBodyBytes", validate.DEFAULT_MAX_BODY_BYTES)
        )
        self.check_secrets(data, "context body", allow_secrets)
        digest = hashlib.sha256(data).hexdigest()
        expires = None if seconds is None else int(self._clock() + seconds + 0.999999)
        oid = self.repo.write_blob(data)
        link = Link(
            sha256=digest,
            oid=oid.decode("ascii"),
            size=len(data),
            source=source,
            priority=priority,
            expires=expires,
        )
        entry = {**self._entry(link), "task_id": task_id}

        def apply(state: TaskState | None) -> Change:
            if state is None:
                self._load(task_id)
                raise AssertionError("unreachable")
            others = [lk for lk in state.links if lk.sha256 != digest]
            existing = next((lk for lk in state.links if lk.sha256 == digest), None)
            if existing == link:
                raise Unchanged({**entry, "created": False, "changed": False})
            verb = "context-add" if existing is None else "context-update"
            return Change(
                task=state.task,
                links=[*others, link],
                bodies={body_path(digest): oid},
                message=_message(
                    f"{verb} {task_id} {digest[:12]} from {source}",
                    verb,
                    task_id,
                    context=digest,
                    source=source,
                    priority=str(priority),
                    **({"expires": iso_utc(expires)} if expires is not None else {}),
                ),
                result={**entry, "created": existing is None, "changed": True},
            )

        result: dict[str, Any] = self._write(task_id, apply, only=link_shard(digest))
        return result

    def remove_context(self, task_id: str, digest: str) -> dict[str, Any]:
        """Detach the body ``digest`` (a full sha256, or a unique prefix of 4+ digits)."""
        validate.task_id(task_id)
        if (
            not isinstance(digest, str)
            or not 4 <= len(digest) <= 64
            or not all(c in "0123456789abcdef" for c in digest)
        ):
            raise ValidationError(
                f"invalid context hash {digest!r}: give 4-64 lowercase hex digits"
            )

        def apply(state: TaskState | None) -> Change:
            if state is None:
                self._load(task_id)
                raise AssertionError("unreachable")
            matches = [lk for lk in state.links if lk.sha256.startswith(digest)]
            if not matches:
                raise NotFound(f"task {task_id} has no context {digest}")
            if len(matches) > 1:
                raise ValidationError(
                    f"context hash prefix {digest} is ambiguous in task {task_id}; "
                    "give more digits"
                )
            gone = matches[0]
            return Change(
                task=state.task,
                links=[lk for lk in state.links if lk is not gone],
                bodies={body_path(gone.sha256): None},
                message=_message(
                    f"context-rm {task_id} {gone.sha256[:12]} from {gone.source}",
                    "context-rm",
                    task_id,
                    context=gone.sha256,
                    source=gone.source,
                ),
                result={**self._entry(gone), "task_id": task_id, "removed": True},
            )

        result: dict[str, Any] = self._write(task_id, apply)
        return result

    def add_contexts(
        self,
        task_id: str,
        items: Iterable[tuple[str | bytes, str, int, float | None]],
        *,
        allow_secrets: bool | None = None,
    ) -> dict[str, Any]:
        """Attach many bodies in one commit: ``(body, source, priority, ttl)`` each.

        The same rules as :meth:`add_context` apply to every item (a body met
        twice keeps its last source, priority and expiry). New blobs are
        written as one pack when there are many. Returns counts:
        ``{"task_id", "added", "updated", "unchanged"}``.
        """
        validate.task_id(task_id)
        limit = self.config_int("hydrate.maxBodyBytes", validate.DEFAULT_MAX_BODY_BYTES)
        now = self._clock()
        prepared: dict[str, tuple[bytes, str, int, int | None]] = {}
        for body, source, priority, ttl in items:
            data = validate.body_bytes(body, limit)
            self.check_secrets(data, f"context body from {source}", allow_secrets)
            seconds = validate.ttl(ttl)
            expires = None if seconds is None else int(now + seconds + 0.999999)
            prepared[hashlib.sha256(data).hexdigest()] = (
                data,
                validate.source_label(source),
                validate.context_priority(priority),
                expires,
            )
        digests = list(prepared)
        oids = self.repo.write_blobs([prepared[d][0] for d in digests])
        new_links = {
            digest: Link(
                sha256=digest,
                oid=oid.decode("ascii"),
                size=len(prepared[digest][0]),
                source=prepared[digest][1],
                priority=prepared[digest][2],
                expires=prepared[digest][3],
            )
            for digest, oid in zip(digests, oids, strict=True)
        }

        def apply(state: TaskState | None) -> Change:
            if state is None:
                self._load(task_id)
                raise AssertionError("unreachable")
            current = {link.sha256: link for link in state.links}
            counts: dict[str, Any] = {"task_id": task_id, "added": 0, "updated": 0, "unchanged": 0}
            bodies: dict[bytes, bytes | None] = {}
            for digest, link in new_links.items():
                old = current.get(digest)
                if old == link:
                    counts["unchanged"] += 1
                    continue
                counts["added" if old is None else "updated"] += 1
                current[digest] = link
                bodies[body_path(digest)] = link.oid.encode("ascii")
            if not bodies:
                raise Unchanged(counts)
            return Change(
                task=state.task,
                links=list(current.values()),
                bodies=bodies,
                message=_message(
                    f"context-add {task_id} ({counts['added']} added, "
                    f"{counts['updated']} updated)",
                    "context-add-many",
                    task_id,
                    added=str(counts["added"]),
                    updated=str(counts["updated"]),
                ),
                result=counts,
            )

        result: dict[str, Any] = self._write(task_id, apply)
        return result

    # -- packing ---------------------------------------------------------------

    def _now(self, now: datetime | float | None) -> float:
        return self._clock() if now is None else context_expander.as_timestamp(now)

    def _packing_input(self, task_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        state = self._load(task_id)
        task = self._task_dict(state)
        entries = [
            {
                "hash": link.sha256,
                "source": link.source,
                "priority": link.priority,
                "expires": link.expires,
                "size": link.size,
                "oid": link.oid,
            }
            for link in state.links
        ]
        return task, entries

    def _loader(
        self, task_id: str, entries: list[dict[str, Any]], max_bytes: int, now: float
    ) -> Callable[[Mapping[str, Any]], str]:
        """A body loader for the packer that reads ahead in packing order.

        The packer asks for bodies one by one, in the order of ``entries``. Each
        miss reads that body and the following ones in one pipelined
        ``cat-file`` round (up to 1 MiB, or the budget when smaller), and at once
        asks git for the round after, which git reads while the packer hashes
        and measures this one. A round leaves out what the packer will skip
        unread (expired, or larger than a round): such a body is read only if
        asked for. Bodies the packer has passed are dropped.
        """
        from .store import Prefetch

        position = {entry["oid"]: index for index, entry in enumerate(entries)}
        ready: dict[str, bytes] = {}
        # (an invalid budget is the packer's to refuse, before any body is read)
        usable = max_bytes if isinstance(max_bytes, int) and max_bytes > 0 else 1 << 20
        window = max(64 * 1024, min(1 << 20, usable))
        inflight: list[tuple[list[str], Prefetch]] = []
        cursor = [0]  # the next entry a round may take
        suspect: set[str] = set()  # in a round git stopped on: read alone, if asked

        def unread_by_packer(entry: Mapping[str, Any]) -> bool:
            expires = entry.get("expires")
            return (
                int(entry["size"]) > window
                or (expires is not None and expires <= now)
                or str(entry["oid"]) in suspect
            )

        def round_from(start: int, size: int = 0) -> list[str]:
            names: list[str] = []
            index = start
            while index < len(entries) and len(names) < 256:
                later = entries[index]
                if not unread_by_packer(later):
                    if size + int(later["size"]) > window:
                        break
                    names.append(str(later["oid"]))
                    size += int(later["size"])
                index += 1
            cursor[0] = max(cursor[0], index)
            return names

        def absorb(names: list[str], answers: list[tuple[bytes, bytes] | None]) -> None:
            for name, answer in zip(names, answers, strict=True):
                if answer is not None and answer[0] == b"blob":
                    ready[name] = answer[1]

        def load(entry: Mapping[str, Any]) -> str:
            oid = str(entry["oid"])
            here = position.get(oid)
            if oid not in ready:
                for names, pending in inflight:
                    # A round that fails (a damaged object in it) is read again
                    # body by body, so the error names the body that is damaged.
                    try:
                        absorb(names, pending.collect())
                    except CorruptData:
                        suspect.update(names)
                inflight.clear()
                if here is not None:
                    for name in [n for n in ready if position.get(n, here) < here]:
                        del ready[name]  # passed by the packer
            if oid not in ready:
                names = [oid]
                if here is not None:
                    cursor[0] = max(cursor[0], here + 1)
                    if not unread_by_packer(entry):
                        names += round_from(here + 1, int(entry["size"]))
                try:
                    absorb(names, self.repo.read_many([n.encode("ascii") for n in names]))
                except CorruptData:
                    # read alone below, so that the error names the body
                    suspect.update(names)
            if not inflight and cursor[0] < len(entries):
                names = round_from(cursor[0])
                if names:
                    pending = self.repo.prefetch([n.encode("ascii") for n in names])
                    inflight.append((names, pending))
            data = ready.pop(oid, None)
            link = Link(sha256=entry["hash"], oid=oid, size=entry["size"], source=entry["source"])
            if data is None:
                return self._read_link_body(task_id, link)  # names what is wrong
            return self._check_body(task_id, link, data)

        return load

    def pack(
        self,
        task_id: str,
        max_bytes: int | None = None,
        now: datetime | float | None = None,
    ) -> dict[str, Any]:
        """The task as a packet whose compact JSON fits ``max_bytes``.

        Returns ``{packet, packet_bytes, max_bytes, token_estimate, token_count,
        note, omitted}``. ``packet_bytes`` is the exact length of the packet's
        compact JSON encoding (UTF-8, sorted keys, no whitespace).

        Raises:
            Conflict: the mandatory structure alone does not fit.
        """
        task, entries = self._packing_input(task_id)
        budget = self.default_max_bytes() if max_bytes is None else max_bytes
        moment = self._now(now)
        return context_expander.pack_packet(
            task,
            entries,
            budget,
            now=moment,
            load_body=self._loader(task_id, entries, budget, moment),
        )

    def expand(
        self,
        task_id: str,
        max_bytes: int | None = None,
        now: datetime | float | None = None,
        *,
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The packet *and* its prompt, measured together against ``max_bytes``.

        Returns ``{packet, prompt, packet_bytes, prompt_bytes, total_bytes,
        max_bytes, token_estimate, note, omitted}``.

        Raises:
            ValidationError: the mandatory structure alone does not fit.
        """
        task, entries = self._packing_input(task_id)
        budget = self.default_max_bytes() if max_bytes is None else max_bytes
        moment = self._now(now)
        return context_expander.build_packet(
            task,
            entries,
            budget,
            files=task.get("files") or (),
            tests=task.get("tests") or (),
            extra=extra,
            now=moment,
            load_body=self._loader(task_id, entries, budget, moment),
        )

    # -- lifecycle (see git_hydrate.lifecycle) -----------------------------------

    def _archived(self, task_id: str, *, strict: bool = True) -> bool:
        """Whether ``task_id`` is in the archive (``strict=False``: a damaged archive says no)."""
        from .lifecycle import archive_entry

        try:
            return archive_entry(self, task_id) is not None
        except CorruptData:
            if strict:
                raise
            return False

    def set_status(self, task_id: str, station: str) -> dict[str, Any]:
        """Move the task to ``station`` (see :data:`git_hydrate.model.TRANSITIONS`)."""
        from . import lifecycle

        return lifecycle.set_status(self, task_id, station)

    def add_checkpoint(
        self,
        task_id: str,
        summary: str,
        evidence: str = "",
        next_step: str = "",
        tokens: int = 0,
    ) -> dict[str, Any]:
        """Record a checkpoint; ``tokens`` is cumulative and may not decrease."""
        from . import lifecycle

        return lifecycle.add_checkpoint(self, task_id, summary, evidence, next_step, tokens)

    def status(self, task_id: str, now: datetime | float | None = None) -> dict[str, Any]:
        """The task's station, counts, latest checkpoint, budget and metrics."""
        from . import lifecycle

        return lifecycle.status(self, task_id, now)

    def statuses(
        self,
        station: str | Iterable[str] | None = None,
        now: datetime | float | None = None,
    ) -> list[dict[str, Any]]:
        """:meth:`status` of every live task, optionally only at ``station``."""
        from . import lifecycle

        return lifecycle.statuses(self, station, now)

    def log(self, task_id: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The task's history, newest first, from its commit chain."""
        from . import lifecycle

        return lifecycle.log(self, task_id, limit)

    def archive(self, task_ids: Iterable[str] = (), *, done: bool = False) -> dict[str, Any]:
        """Fold done/cancelled tasks into ``refs/hydrate/archive``; delete their refs."""
        from . import lifecycle

        return lifecycle.archive(self, task_ids, done=done)

    def unarchive(self, task_id: str) -> dict[str, Any]:
        """Restore an archived task's ref."""
        from . import lifecycle

        return lifecycle.unarchive(self, task_id)

    def add_tree(
        self,
        task_id: str,
        pathspecs: Iterable[str] = (),
        *,
        rev: str | None = None,
        worktree: bool = False,
        directory: str | os.PathLike[str] | None = None,
        prefix: str = "",
        priority: int = 0,
        max_file_bytes: int | None = None,
        max_total_bytes: int | None = None,
        progress: Callable[[int, int, int], None] | None = None,
        allow_secrets: bool | None = None,
    ) -> dict[str, Any]:
        """Attach a file set to a task in one commit: one link per file path.

        The file set is the committed tree of ``rev`` (default ``HEAD``; files
        are linked by their existing blobs, nothing is copied), or with
        ``worktree`` the work tree as ``git ls-files --cached --others
        --exclude-standard`` sees it, or a ``directory``. ``pathspecs``
        narrow it. Re-hydrating replaces changed files' bodies and removes
        the links of files gone (within the pathspecs and ``prefix``); an
        unchanged file set writes nothing. Rules, limits and skip reasons:
        :mod:`git_hydrate.files`.

        Args:
            prefix: Put before each path in the source label (a ``/`` is
                added unless it ends in ``/`` or ``:``).
            priority: The priority of every attached file.
            max_file_bytes: Skip larger files (default: ``hydrate.maxFileBytes``,
                else 262144).
            max_total_bytes: Attach at most this much (default:
                ``hydrate.maxTotalBytes``, else 10485760).
            progress: Called as ``progress(files_done, files_total, bytes_done)``.
            allow_secrets: Attach files that look like they hold credentials
                (default: ``hydrate.allowSecrets``, else skip them as ``secret``).

        Returns:
            ``{added, updated, unchanged, removed, removed_paths, skipped:
            [{path, reason, bytes[, same_as]}], total_bytes, files, changed,
            tip, task_id, mode, from, commit}`` — ``mode`` is ``rev``,
            ``worktree`` or ``dir``; ``from`` says what was read (``HEAD
            <oid>``, ``worktree``, ``dir <path>``); ``commit`` is the commit
            read, if any.
        """
        from .hydrate_tree import add_tree

        return add_tree(
            self,
            task_id,
            pathspecs,
            rev=rev,
            worktree=worktree,
            directory=directory,
            prefix=prefix,
            priority=priority,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
            progress=progress,
            allow_secrets=allow_secrets,
        )

    def add_diff(
        self,
        task_id: str,
        rev_range: str | None = None,
        pathspecs: Iterable[str] = (),
        *,
        staged: bool = False,
        worktree: bool = False,
        log: bool = False,
        priority: int = 0,
        max_file_bytes: int | None = None,
        max_total_bytes: int | None = None,
        allow_secrets: bool | None = None,
    ) -> dict[str, Any]:
        """Attach what changed, one body per file's diff (source ``diff:<range>:<path>``).

        ``rev_range`` is ``A..B`` (``git diff A B``), ``A...B`` (since their
        merge base) or ``REV`` (``REV...HEAD``); by default the current branch
        against its upstream, else the default branch. ``staged`` diffs the
        index against HEAD, ``worktree`` the work tree against the index, both
        together every uncommitted change. ``log`` adds the range's commit
        messages as one body (source ``log:<range>``). Binary diffs are skipped
        and reported; limits as in :meth:`add_tree`. Re-running for the same
        range replaces its links in one commit.

        Returns:
            ``{added, updated, unchanged, removed, removed_paths, skipped,
            total_bytes, range, files, changed, tip, task_id}``.
        """
        from .hydrate_diff import add_diff

        return add_diff(
            self,
            task_id,
            rev_range,
            pathspecs,
            staged=staged,
            worktree=worktree,
            log=log,
            priority=priority,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
            allow_secrets=allow_secrets,
        )
