"""Shared refs that merge as unions: the archive and the removal record.

They travel with push and pull like tasks, but two clones' versions merge
path by path, and their JSON index files key by key (:func:`merge.merge_json`).
"""

from __future__ import annotations

from typing import Final

import msgspec

from .. import codec, merge
from ..archive import ARCHIVE_REF, read_archive
from ..errors import Busy, CorruptData
from ..store import MODE_BLOB, MODE_TREE, RefRace, Repository
from ..taskrefs import TaskRefs, attempts, commit_message
from ..treeshape import (
    archive_tree_problems,
    describe_mode,
    refuse_foreign,
    removal_tree_problems,
)
from .remotes import replace_command
from .removal import REMOVED_REF, read_removed
from .report import Outcome

__all__ = ["UNION_REFS", "check_shared_ref", "commit_rank", "pull_union_ref"]

#: Refs that are not tasks but travel with them and merge as unions.
UNION_REFS: Final = (REMOVED_REF, ARCHIVE_REF)


def commit_rank(repo: Repository, oid: bytes) -> tuple[int, str]:
    """How a merge ranks a side: its commit time, then its id."""
    return (repo.read_commit_info(oid).commit_time, oid.decode())


Entry = tuple[int, bytes]


def _flatten(repo: Repository, tree: bytes | None, prefix: bytes = b"") -> dict[bytes, Entry]:
    """Every non-tree entry below ``tree`` by path, with its mode.

    Raises:
        CorruptData: an entry is neither a file nor a directory (a gitlink,
            a symlink...): a union merge never carries such an entry.
    """
    if tree is None:
        return {}
    out: dict[bytes, Entry] = {}
    for name, (mode, oid) in repo.read_tree(tree).items():
        if mode == MODE_TREE:
            out.update(_flatten(repo, oid, prefix + name + b"/"))
        elif mode == MODE_BLOB:
            out[prefix + name] = (mode, oid)
        else:
            path = (prefix + name).decode("utf-8", "backslashreplace")
            raise CorruptData(f"foreign entry {path} ({describe_mode(mode)})")
    return out


def _build(repo: Repository, entries: dict[bytes, Entry]) -> bytes:
    """The tree holding ``{path: (mode, oid)}``, each entry with its own mode."""
    here: dict[bytes, Entry] = {}
    below: dict[bytes, dict[bytes, Entry]] = {}
    for path, entry in entries.items():
        head, sep, rest = path.partition(b"/")
        if sep:
            below.setdefault(head, {})[rest] = entry
        else:
            here[head] = entry
    for name, sub in below.items():
        here[name] = (MODE_TREE, _build(repo, sub))
    return repo.write_tree(here)


def _merge_trees(repo: Repository, base: bytes | None, a: bytes, b: bytes, a_wins: bool) -> bytes:
    fb, fa, fbb = _flatten(repo, base), _flatten(repo, a), _flatten(repo, b)
    merged: dict[bytes, Entry] = {}
    for path in sorted(set(fa) | set(fbb)):
        va, vb, vo = fa.get(path), fbb.get(path), fb.get(path)
        chosen: Entry | None
        if va == vb:
            chosen = va
        elif va == vo:
            chosen = vb
        elif vb == vo:
            chosen = va
        elif va is None or vb is None:
            chosen = va if va is not None else vb  # a change wins over a removal
        elif path.endswith(b".json"):
            decoded = [
                codec.decode_json(repo.read_blob(v[1]), path.decode("utf-8", "replace"))
                if v is not None
                else merge.MISSING
                for v in (vo, va, vb)
            ]
            value = merge.merge_json(decoded[0], decoded[1], decoded[2], a_wins)
            chosen = (MODE_BLOB, repo.write_blob(codec.encode(value)))
        else:
            chosen = va if a_wins else vb
        if chosen is not None:
            merged[path] = chosen
    return _build(repo, merged)


def check_shared_ref(repo: Repository, ref: bytes, tip: bytes) -> None:
    """Refuse a damaged archive or removal record: a pull before merging the
    remote's, a push before sending its own (so a push sends none a pull refuses).

    Raises:
        CorruptData: why ``tip`` is no readable ``ref``.
    """
    tree, _parents = repo.read_commit_tree(tip)
    if ref == REMOVED_REF:
        read_removed(repo, tip)
        refuse_foreign(removal_tree_problems(repo, tree), ref.decode())
    elif ref == ARCHIVE_REF:
        read_archive(repo, tip)
        refuse_foreign(archive_tree_problems(repo, tree), ref.decode())


def _merged(
    repo: Repository,
    refs: TaskRefs,
    ref: bytes,
    local: bytes,
    remote: bytes,
    where: str,
    bases: list[bytes],
) -> bytes:
    a_wins = commit_rank(repo, local) > commit_rank(repo, remote)
    base_tree = repo.read_commit_tree(bases[0])[0] if bases else None
    tree = _merge_trees(
        repo, base_tree, repo.read_commit_tree(local)[0], repo.read_commit_tree(remote)[0], a_wins
    )
    name = ref.decode()
    message = commit_message(
        f"merge {name} from {where}", [("Action", "merge"), ("Ref", name), ("Remote", where)]
    )
    return repo.write_commit(tree, [local, remote], message, when=refs.commit_when())


def pull_union_ref(refs: TaskRefs, ref: bytes, remote_tip: bytes, where: str) -> Outcome | None:
    """Bring a remote's archive or removal record in: create, fast-forward or merge."""
    repo = refs.repo
    name = ref.decode()
    for _attempt in attempts():
        local = repo.read_ref(ref)
        if local == remote_tip:
            return None
        try:
            check_shared_ref(repo, ref, remote_tip)
        except CorruptData as exc:
            way = "" if local is None else f"; to replace {where}'s copy with yours: "
            way += replace_command(name, remote_tip, where) if way else ""
            detail = f"remote data invalid: {exc}{way}"
            return Outcome(name, "skipped", detail, new=remote_tip.decode(), is_task=False)
        if local is None:
            new, action = remote_tip, "created"
        else:
            bases = repo.merge_bases(local, remote_tip)
            if remote_tip in bases:
                return None  # ahead
            if local in bases:
                new, action = remote_tip, "fast-forward"
            else:
                try:
                    new = _merged(repo, refs, ref, local, remote_tip, where, bases)
                except (CorruptData, msgspec.DecodeError) as exc:
                    return Outcome(name, "skipped", f"cannot merge: {exc}", is_task=False)
                action = "merged"
        try:
            repo.compare_and_swap(ref, local, new, f"hydrate: pull {name} from {where}")
        except RefRace:
            continue
        return Outcome(
            name, action, old=local.decode() if local else None, new=new.decode(), is_task=False
        )
    raise Busy(f"{name} kept changing under this pull; try again")
