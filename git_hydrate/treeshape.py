"""What a task, archive or removal tree may hold, and naming whatever else it holds.

A format-1 task tree holds exactly::

    task.json                 a file (mode 100644)
    links.json                a file
    links/<a>.json            files, one hex digit each (links fanned out)
    bodies/<aa>/<sha256>      files under a directory named by their first two digits

Anything else — a gitlink, a symlink, an executable, ``..``, ``.git``, an
unknown name — is *foreign*: nothing this version writes, so it came from
someone else's tool or a crafted remote. Carried on, it can make a host with
``receive.fsckObjects`` reject a whole push. Pulls refuse a tree with foreign
entries, merges refuse to carry them, and ``doctor`` reports them.
"""

from __future__ import annotations

import re
from typing import Final

from .errors import CorruptData
from .ids import names_a_task
from .store import MODE_BLOB, MODE_TREE, Repository

__all__ = [
    "archive_tree_problems",
    "describe_mode",
    "refuse_foreign",
    "removal_tree_problems",
    "task_tree_problems",
]

_HEX2: Final = re.compile(rb"[0-9a-f]{2}")
_SHA256: Final = re.compile(rb"[0-9a-f]{64}")
_SHARD: Final = re.compile(rb"[0-9a-f]\.json")

_KINDS: Final = {
    MODE_BLOB: "a file",
    MODE_TREE: "a directory",
    0o100755: "an executable file",
    0o120000: "a symlink",
    0o160000: "a gitlink (submodule)",
}


def describe_mode(mode: int) -> str:
    """What a tree entry of ``mode`` is, in words."""
    return _KINDS.get(mode, f"an entry of mode {mode:o}")


def _shown(path: bytes) -> str:
    return path.decode("utf-8", "backslashreplace")


def _foreign(path: bytes, mode: int) -> str:
    return f"foreign entry {_shown(path)} ({describe_mode(mode)})"


def task_tree_problems(repo: Repository, tree: bytes, prefix: bytes = b"") -> list[str]:
    """Every foreign entry of the task tree ``tree`` (an empty list when it is clean).

    Raises:
        CorruptData: a tree in it cannot be read.
    """
    problems: list[str] = []
    for name, (mode, oid) in sorted(repo.read_tree(tree).items()):
        path = prefix + name
        if name in (b"task.json", b"links.json") and mode == MODE_BLOB:
            continue
        if name == b"links" and mode == MODE_TREE:
            for shard, (smode, _soid) in sorted(repo.read_tree(oid).items()):
                if smode != MODE_BLOB or not _SHARD.fullmatch(shard):
                    problems.append(_foreign(path + b"/" + shard, smode))
            continue
        if name == b"bodies" and mode == MODE_TREE:
            problems += _body_problems(repo, oid, path)
            continue
        problems.append(_foreign(path, mode))
    return problems


def _body_problems(repo: Repository, tree: bytes, path: bytes) -> list[str]:
    problems: list[str] = []
    for fan, (mode, oid) in sorted(repo.read_tree(tree).items()):
        where = path + b"/" + fan
        if mode != MODE_TREE or not _HEX2.fullmatch(fan):
            problems.append(_foreign(where, mode))
            continue
        for name, (bmode, _boid) in sorted(repo.read_tree(oid).items()):
            if bmode != MODE_BLOB or not _SHA256.fullmatch(name) or name[:2] != fan:
                problems.append(_foreign(where + b"/" + name, bmode))
    return problems


def archive_tree_problems(repo: Repository, tree: bytes) -> list[str]:
    """Every foreign entry of an archive tree (``index.json``, ``tasks/<id>/…``).

    Raises:
        CorruptData: a tree in it cannot be read.
    """
    problems: list[str] = []
    for name, (mode, oid) in sorted(repo.read_tree(tree).items()):
        if name == b"index.json" and mode == MODE_BLOB:
            continue
        if name == b"tasks" and mode == MODE_TREE:
            for task, (tmode, toid) in sorted(repo.read_tree(oid).items()):
                path = b"tasks/" + task
                named = names_a_task(task)
                if tmode != MODE_TREE or not named:
                    problems.append(_foreign(path, tmode))
                else:
                    problems += task_tree_problems(repo, toid, path + b"/")
            continue
        problems.append(_foreign(name, mode))
    return problems


def removal_tree_problems(repo: Repository, tree: bytes) -> list[str]:
    """Every foreign entry of a removal-record tree (only ``removed.json``)."""
    return [
        _foreign(name, mode)
        for name, (mode, _oid) in sorted(repo.read_tree(tree).items())
        if not (name == b"removed.json" and mode == MODE_BLOB)
    ]


def refuse_foreign(problems: list[str], where: str) -> None:
    """Raise :class:`CorruptData` naming the first foreign entries, if any."""
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise CorruptData(f"{where}: {'; '.join(problems[:3])}{more}")
