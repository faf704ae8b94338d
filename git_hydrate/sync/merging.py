"""Merging a remote's version of a task with the local one.

The remote's tip is validated first (format, ids, every body against its
sha256 and size); then a three-way merge of the two states over their merge
base (:func:`git_hydrate.merge.merge_states`) becomes a merge commit with both
parents whose tree depends on the merged state alone.
"""

from __future__ import annotations

import contextlib
from typing import Any, Final

from .. import codec, merge, textpolicy, validate
from ..errors import CorruptData, ValidationError
from ..model import LINKS_FANNED_FORMAT, LinkList
from ..store import MODE_BLOB, MODE_TREE, Repository, parse_commit_tree
from ..taskrefs import (
    TaskRefs,
    TaskState,
    body_path,
    commit_message,
    link_tree_changes,
    unknown_link_fields,
    unknown_task_fields,
)
from ..taskrefs.layout import LINKS_DIR, LINKS_FILE, TASK_FILE
from ..treeshape import refuse_foreign, task_tree_problems
from .union import commit_rank

__all__ = [
    "MAX_BASE_DEPTH",
    "MAX_MERGE_BASES",
    "check_task_json",
    "merge_task",
    "neutralise_tip",
    "prefetch_remote",
    "task_json_problem",
    "untouched_remote",
    "validate_remote",
]

#: Bodies up to this size are read ahead by :func:`prefetch_remote` (larger
#: ones are streamed by the check itself, never whole in memory).
_PREFETCH_BODY_BYTES: Final = 64 << 10
#: Virtual merge bases are built at most this deep (criss-cross histories).
MAX_BASE_DEPTH: Final = 3
#: A merge of two tips with more merge bases than this is refused, named.
MAX_MERGE_BASES: Final = 64
#: The work of building one virtual base: each ``git merge-base`` run and each
#: state read counts one. Past it, the bases still to fold are merged without a
#: base of their own (as histories with nothing in common), so a criss-cross
#: history with many bases many levels deep costs this much, not bases**depth.
_BASE_WORK: Final = 96


class _Budget:
    """What is left of :data:`_BASE_WORK` for one task merge."""

    def __init__(self) -> None:
        self.left = _BASE_WORK

    def take(self, units: int) -> bool:
        if units > self.left:
            self.left = 0
            return False
        self.left -= units
        return True


def prefetch_remote(refs: TaskRefs, tips: dict[str, bytes]) -> dict[str, TaskState | CorruptData]:
    """Decode the state at each of ``tips`` (``{task_id: tip}``) and read what
    :func:`validate_remote` of them reads, a level of the trees at a time, for
    a :meth:`~git_hydrate.store.Repository.remembering` block.

    A pass per level (commits and task files, the root trees, their subtrees,
    the fan-out trees, the bodies) instead of a round trip per tree and per
    body: a pull of thousands of new tasks checks them all in a few pipelined
    reads, and decodes each task once. Returns the states for
    :func:`validate_remote` (a task that cannot be decoded maps to the error
    naming it); whatever cannot be read further is left to the checks.
    """
    if not tips:
        return {}
    repo = refs.repo
    # The commits, their root trees, then the task files by id beside the
    # subtrees (bodies/, links/): what the decoding reads by path
    # (``tip:task.json``) is answered from what was kept.
    roots: dict[bytes, bytes] = {}
    for tip, found in zip(tips.values(), repo.read_many(list(tips.values())), strict=True):
        if found is not None and found[0] == b"commit":
            with contextlib.suppress(CorruptData):
                roots[tip] = parse_commit_tree(tip, found[1])[0]
    aliases: list[tuple[bytes, bytes]] = []
    subtrees: list[bytes] = []
    trees = repo.read_trees(list(roots.values()))
    for (tip, root), entries in zip(roots.items(), trees, strict=True):
        for name, (mode, oid) in (entries or {}).items():
            if name in (TASK_FILE, LINKS_FILE) and mode == MODE_BLOB:
                aliases.append((tip + b":" + name, oid))
            elif name in (b"bodies", LINKS_DIR) and mode == MODE_TREE:
                subtrees.append(oid)
                if name == LINKS_DIR:
                    aliases.append((root + b":" + name, oid))
    repo.read_many([oid for _spec, oid in aliases] + subtrees)
    repo.remember_as(aliases)
    fans: list[bytes] = []
    for entries in repo.read_trees(subtrees):
        fans += [oid for _name, (mode, oid) in (entries or {}).items() if mode == MODE_TREE]
    repo.read_trees(fans)
    states = refs.load_many(list(tips), tips, codec.MAX_TASK_JSON_BYTES)
    bodies: list[bytes] = []
    for state in states.values():
        if isinstance(state, TaskState):
            bodies += [
                link.oid.encode() for link in state.links if link.size <= _PREFETCH_BODY_BYTES
            ]
    repo.read_many(list(dict.fromkeys(bodies)))  # (a body many tasks link: read once)
    return states


def validate_remote(
    refs: TaskRefs, task_id: str, tip: bytes, decoded: TaskState | CorruptData | None = None
) -> TaskState:
    """Decode a fetched task tip (or take ``decoded``, its state as
    :func:`prefetch_remote` decoded it) and check every body against its link.

    Raises:
        CorruptData: unknown format, bad JSON, wrong id, a key twice in
            ``task.json`` or a date there that is none, a foreign entry in
            the tree (see :mod:`git_hydrate.treeshape`), a body missing, over
            ``hydrate.maxBodyBytes``, or that does not match its sha256 or size.
    """
    if isinstance(decoded, CorruptData):
        raise decoded
    state = decoded if decoded is not None and decoded.tip == tip else None
    if state is None:
        state = refs.read_state(task_id, tip, limit=codec.MAX_TASK_JSON_BYTES)
    assert state.tree is not None
    check_task_json(task_id, state)
    repo = refs.repo
    limit = repo.settings.size("hydrate.maxBodyBytes")
    refuse_foreign(task_tree_problems(repo, state.tree), f"task {task_id}")
    seen: set[str] = set()
    for link in state.links:
        if link.sha256 in seen:
            raise CorruptData(f"task {task_id}: link {link.sha256[:12]} appears twice")
        seen.add(link.sha256)
        path = body_path(link.sha256)
        entry = _tree_lookup(repo, state.tree, path)
        if entry is None or entry != link.oid.encode():
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} is not in its tree")
        # streamed: a remote's body is never whole in memory, nor over the limit
        refs.check_stored_body(task_id, link, limit)
    return state


def _once_each(where: str, raw: bytes) -> None:
    key = codec.duplicate_key(raw)
    if key is not None:
        raise CorruptData(f"{where}: key {key!r} appears twice in one object")


def _links_once_each(task_id: str, state: TaskState) -> None:
    """The same test of the links (``links.json``, or each shard of them): a key
    twice would show the worker another source than the one taken."""
    if state.shards is not None:
        for prefix, stored in state.raw_shards.items():
            group = state.shards.get(prefix, [])
            if codec.encode(LinkList(format=LINKS_FANNED_FORMAT, links=group)) != stored:
                _once_each(f"task {task_id}: links/{prefix}.json", stored)
    elif state.raw_links and codec.encode(LinkList(links=state.links)) != state.raw_links:
        _once_each(f"task {task_id}: links.json", state.raw_links)


def check_task_json(task_id: str, state: TaskState) -> None:
    """Refuse what decoding ``task.json`` lets through: a key twice in an object
    (msgspec keeps the last one silently), a date that is none (the calendar's,
    as :func:`validate.timestamp` takes them), and a task that depends on itself
    or is its own parent (which no local write makes: it was never ready, and was
    listed as its own child). Bytes exactly as this version
    writes the decoded task hold no key twice: only others are scanned.

    Raises:
        CorruptData: naming the task, the file and what is wrong.
    """
    where = f"task {task_id}: task.json"
    raw = state.raw_task
    if len(raw) > codec.MAX_TASK_JSON_BYTES:  # (one an earlier version wrote here)
        raise CorruptData(f"{where}: {codec.oversized(len(raw))}")
    if raw and codec.encode(state.task) != raw:
        _once_each(where, raw)
    _links_once_each(task_id, state)
    task = state.task
    try:
        validate.timestamp(task.created_at, "created_at")
        validate.timestamp(task.claimed_at, "claimed_at")
        for index, checkpoint in enumerate(task.checkpoints):
            validate.timestamp(checkpoint.at, f"checkpoints[{index}].at")
    except ValidationError as exc:
        raise CorruptData(f"{where}: {exc}") from None
    if task_id in task.depends_on:
        raise CorruptData(f"{where}: the task depends on itself")
    if task.parent == task_id:
        raise CorruptData(f"{where}: the task is its own parent")


def task_json_problem(task_id: str, state: TaskState) -> str:
    """Why :func:`check_task_json` refuses the task, without the task's name (``""``:
    it does not)."""
    try:
        check_task_json(task_id, state)
    except CorruptData as exc:
        return str(exc).removeprefix(f"task {task_id}: ")
    return ""


def _tree_lookup(repo: Repository, tree: bytes, path: bytes) -> bytes | None:
    parts = path.split(b"/")
    current = tree
    for index, part in enumerate(parts):
        entry = repo.read_tree(current).get(part)
        if entry is None:
            return None
        mode, oid = entry
        if index < len(parts) - 1:
            if mode != MODE_TREE:
                return None
            current = oid
        else:
            return oid
    return None


def _side(refs: TaskRefs, task_id: str, oid: bytes, state: TaskState | None = None) -> merge.Side:
    state = state if state is not None else refs.read_state(task_id, oid)
    time_, commit = commit_rank(refs.repo, oid)
    return merge.Side(task=state.task, links=state.links, time=time_, commit=commit)


def _virtual_base(
    refs: TaskRefs, task_id: str, bases: list[bytes], budget: _Budget, depth: int = 0
) -> merge.Side | None:
    """The merge base as a state; several bases (criss-cross) are merged first.

    Deterministic for a given set of bases (they come sorted), whichever side
    merges: the inner merge bases are looked up while the budget lasts, in
    order; a pair past it (or past :data:`MAX_BASE_DEPTH`) merges as if it
    shared no history.
    """
    if not bases:
        return None
    try:
        result = _side(refs, task_id, bases[0])
        for other in bases[1:]:
            inner = None
            if depth < MAX_BASE_DEPTH and budget.take(1):
                inner_bases = refs.repo.merge_bases(bases[0], other)
                if budget.take(len(inner_bases)):
                    inner = _virtual_base(refs, task_id, inner_bases, budget, depth + 1)
            other_side = _side(refs, task_id, other)
            merged = merge.merge_states(inner, result, other_side)
            result = merge.Side(
                task=merged.task,
                links=merged.links,
                time=max(result.time, other_side.time),
                commit=max(result.commit, other_side.commit),
            )
    except CorruptData:
        return None
    return result


def _merged_extras(
    task_id: str, ours: tuple[merge.Side, TaskState], theirs: tuple[merge.Side, TaskState]
) -> dict[str, Any]:
    """Top-level ``task.json`` fields a newer version wrote, from both sides.

    A field on one side is kept; on both with different values, the newer
    side's value wins (as for the fields this version knows, without a
    three-way view: a newer version's deletion is not seen). Nested unknown
    fields cannot be kept, as on any write of this version.
    """
    older, newer = sorted((ours, theirs), key=lambda side: (side[0].time, side[0].commit))
    return {
        **unknown_task_fields(task_id, older[1])[0],
        **unknown_task_fields(task_id, newer[1])[0],
    }


def _write_merged_task(refs: TaskRefs, result: merge.MergeResult, extras: dict[str, Any]) -> bytes:
    repo = refs.repo
    entries = link_tree_changes(repo, list(result.links), None)
    data = codec.encode_with_extras(result.task, extras)
    if len(data) > codec.MAX_TASK_JSON_BYTES:  # (each side within it, the two together not)
        raise CorruptData(
            f"task {result.task.id}: merged, its task.json would hold "
            f"{codec.oversized(len(data))}; trim one side (fewer or shorter checkpoints) "
            "and sync again"
        )
    entries[b"task.json"] = repo.write_blob(data)
    for link in result.links:
        entries[body_path(link.sha256)] = link.oid.encode()
    # Built from nothing, so the tree depends on the merged state only.
    return repo.update_tree(None, entries)


def merge_task(
    refs: TaskRefs, task_id: str, local: bytes, remote_tip: bytes, theirs: TaskState, where: str
) -> tuple[bytes, merge.MergeResult]:
    mine = refs.read_state(task_id, local)
    for side, state in (("the local", mine), ("the remote", theirs)):
        nested = unknown_task_fields(task_id, state)[1] + unknown_link_fields(task_id, state)
        if nested:
            shown = ", ".join(nested[:3]) + (
                f" and {len(nested) - 3} more" if len(nested) > 3 else ""
            )
            raise CorruptData(
                f"{side} task holds fields this git-hydrate does not know ({shown}); a merge "
                "would drop them, so neither side was changed: upgrade git-hydrate to merge it"
            )
    ours = _side(refs, task_id, local, mine)
    other = _side(refs, task_id, remote_tip, theirs)
    bases = refs.repo.merge_bases(local, remote_tip)
    if len(bases) > MAX_MERGE_BASES:
        raise CorruptData(
            f"{len(bases)} merge bases between the local and the remote history "
            f"(a criss-cross history; at most {MAX_MERGE_BASES} are merged)"
        )
    base = _virtual_base(refs, task_id, bases, _Budget())
    result = merge.merge_states(base, ours, other)
    extras = _merged_extras(task_id, (ours, mine), (other, theirs))
    tree = _write_merged_task(refs, result, extras)
    names = [c.field for c in result.conflicts]
    body = ""
    if names:
        body = "Changed on both sides; kept the newer side's value:\n" + "\n".join(
            f"- {name}" for name in names
        )
    trailers = [("Action", "merge"), ("Task", task_id), ("Remote", where)]
    trailers += [("Conflict", name) for name in names]
    subject = f"merge {task_id} from {where}"
    if names:
        subject += f" ({len(names)} conflict{'s' if len(names) != 1 else ''})"
    message = commit_message(subject, trailers, body)
    commit = refs.repo.write_commit(tree, [local, remote_tip], message, when=refs.commit_when())
    return commit, result


def untouched_remote(refs: TaskRefs, decoded: dict[str, TaskState | CorruptData]) -> set[str]:
    """The tasks among ``decoded`` (remote states, as :func:`prefetch_remote`
    decoded them) that :func:`neutralise_tip` would leave as they are: the text
    policy's checks of all of them at once (:func:`textpolicy.untouched_tasks`)."""
    states = [(task_id, s) for task_id, s in decoded.items() if isinstance(s, TaskState)]
    allowed = textpolicy.secrets_allowed(refs.repo.settings, None)
    verdicts = textpolicy.untouched_tasks(
        [(state.task, state.links) for _id, state in states], secrets=not allowed
    )
    return {task_id for (task_id, _s), ok in zip(states, verdicts, strict=True) if ok}


def neutralise_tip(
    refs: TaskRefs, task_id: str, tip: bytes, state: TaskState, where: str
) -> tuple[bytes, dict[str, str]]:
    """``tip``, or a commit on it whose task breaks no rule of the text policy.

    What a remote sent is held to the rules a local write is
    (:mod:`git_hydrate.textpolicy`): a holder, tag, label... with control
    characters, over its length, or that looks like a credential (unless
    ``hydrate.allowSecrets``) is neutralised in a commit of its own on top of
    the remote's, which the next push publishes. Returns the commit to take
    and ``{field: why}`` of what changed (empty: ``tip`` itself).
    """
    allowed = textpolicy.secrets_allowed(refs.repo.settings, None)
    task, links, changed = textpolicy.neutralised_task(
        state.task, state.links, secrets=not allowed
    )
    if not changed:
        return tip, {}
    repo = refs.repo
    entries = link_tree_changes(repo, links, state)
    extras = unknown_task_fields(task_id, state)[0]
    entries[b"task.json"] = repo.write_blob(codec.encode_with_extras(task, extras))
    tree = repo.update_tree(state.tree, entries)
    body = "Values that break the text policy, as the remote sent them:\n" + "\n".join(
        f"- {what}: {why}" for what, why in changed.items()
    )
    trailers = [("Action", "neutralise"), ("Task", task_id), ("Remote", where)]
    trailers += [("Field", what) for what in changed]
    message = commit_message(f"neutralise {task_id} from {where}", trailers, body)
    return repo.write_commit(tree, [tip], message, when=refs.commit_when()), changed
