"""Decoding tasks from their tip commits: many at once, every damage named."""

from __future__ import annotations

from collections.abc import Mapping

from .. import codec
from ..errors import CorruptData
from ..model import LINKS_FANNED_FORMAT, packing_sorted
from ..store import MODE_BLOB, Repository, parse_commit_tree
from .layout import LINKS_DIR, LINKS_FILE, SHARD_DIGITS, TASK_FILE, TaskState

__all__ = ["named", "read_states"]


def read_states(
    repo: Repository,
    tips: Mapping[str, bytes],
    only: str | None = None,
    limit: int = codec.MAX_READ_TASK_JSON_BYTES,
) -> dict[str, TaskState | CorruptData]:
    """Decode each task's state at its tip: the commit, ``task.json`` and
    ``links.json`` of every task in one pipelined ``cat-file`` pass (and, for
    tasks whose links are fanned out, their ``links/`` in two more). A
    ``task.json`` over ``limit`` bytes is not decoded (a remote's: see
    :data:`~git_hydrate.codec.MAX_TASK_JSON_BYTES`)."""
    specs = []
    for tip in tips.values():
        specs += [tip, tip + b":" + TASK_FILE, tip + b":" + LINKS_FILE]
    answers = repo.read_many(specs)
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
                raise _damage(repo, task_id, tip)
            tree, _parents = parse_commit_tree(tip, commit[1])
            task = codec.decode_task(task_blob[1], f"{where}: task.json", limit)
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
            result[task_id] = named(task_id, exc)
    if fanned:
        result.update(_read_fanned(repo, fanned, only))
    return result


def named(task_id: str, exc: CorruptData) -> CorruptData:
    where = f"task {task_id}"
    message = str(exc) if str(exc).startswith(where) else f"{where}: {exc}"
    return CorruptData(message, task_id=task_id)


def _read_fanned(
    repo: Repository, states: dict[str, TaskState], only: str | None
) -> dict[str, TaskState | CorruptData]:
    """Fill in the links of tasks that keep them in ``links/<a>.json``: every
    ``links/`` tree in one pipelined pass, then every file (or, with
    ``only``, the one file of that prefix) in another."""
    trees = repo.read_many([(state.tree or b"") + b":" + LINKS_DIR for state in states.values()])
    result: dict[str, TaskState | CorruptData] = {}
    wanted: dict[str, list[tuple[str, bytes]]] = {}
    for task_id, answer in zip(states, trees, strict=True):
        try:
            if answer is None or answer[0] != b"tree":
                raise CorruptData("links.json says the links are in links/, which is missing")
            shards = []
            for name, (mode, oid) in repo.parse_tree(b"links", answer[1]).items():
                prefix = name.removesuffix(b".json").decode("ascii", "replace")
                shown = name.decode("utf-8", "replace")
                if (
                    mode != MODE_BLOB
                    or len(name) != SHARD_DIGITS + 5
                    or not name.endswith(b".json")
                    or prefix.strip("0123456789abcdef")
                ):
                    raise CorruptData(f"unexpected entry links/{shown}")
                if only is None or prefix == only:
                    shards.append((prefix, oid))
            wanted[task_id] = shards
        except CorruptData as exc:
            result[task_id] = named(task_id, exc)
    answers = repo.read_many([oid for shards in wanted.values() for _p, oid in shards])
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
                firsts = "".join([link.sha256[:SHARD_DIGITS] for link in group])
                if firsts != prefix * len(group):
                    raise CorruptData(f"{where} holds a link of another prefix")
                state.shards[prefix] = group
                state.raw_shards[prefix] = answer[1]
            state.links = packing_sorted(link for group in state.shards.values() for link in group)
            result[task_id] = state
        except CorruptData as exc:
            result[task_id] = named(task_id, exc)
        start += len(shards)
    return result


def _damage(repo: Repository, task_id: str, tip: bytes) -> CorruptData:
    """Say exactly what is wrong with a tip whose task files cannot be read."""
    try:
        tree, _parents = repo.read_commit_tree(tip)
        entries = repo.read_tree(tree)
        missing = [name.decode() for name in (TASK_FILE, LINKS_FILE) if name not in entries]
        if missing:
            return CorruptData(f"commit {tip.decode()} has no {' or '.join(missing)}")
        for name in (TASK_FILE, LINKS_FILE):
            repo.read_blob(entries[name][1])
    except CorruptData as exc:
        return exc
    return CorruptData(f"commit {tip.decode()} cannot be read")
