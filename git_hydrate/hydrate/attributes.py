"""The attribute rules' answer for a tree, kept by tree id: a known tree runs no check-attr.

A tree's ``linguist-generated``, ``binary`` and ``linguist-vendored`` marks
(:func:`.rules.attribute_rules`) cost a ``git check-attr`` over every path: 30,000 paths
written to it and its answer read back, for a tree whose answer cannot have changed.
What decides that answer is the tree (its ``.gitattributes``, read with ``check-attr
--source``) and what git reads besides it: the repository's ``info/attributes``,
``core.attributesFile`` (or git's default one), the system file, the environment that
names another, and — for a git without ``--source`` — the staged ``.gitattributes``
(:func:`_sources`). The answer is kept with the digest of those, at ``<common
dir>/hydrate/tree-attributes/<tree id>``; any change to them is a miss (the tree is
checked again and the answer replaced).

Derived and disposable like :mod:`.listings`: a missing, foreign, damaged
(checked by its CRC-32) or unreadable file is a miss, never an error; deleting
the folder is always safe; trusted only when private to this user (a planted
answer could hide a file or mark one); bounded (the :data:`MAX_TREES` used last
are kept; a use touches the file). Only the marked paths are kept: most trees
mark none, and their answer is a line.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Sequence
from typing import Final

import msgspec

from ..pack.refresh_memo import attribute_sources, file_state
from ..store import Repository
from ..store.keyed import sealed, unsealed
from .listings import keep_by_tree
from .rules import FileEntry, attribute_answer, decode_path

__all__ = ["MAX_TREES", "tree_attribute_rules"]

#: The first line of a kept answer; another (an older layout) is a miss. The second
#: is the CRC-32 and length of the rest (:func:`~git_hydrate.store.keyed.sealed`).
HEADER: Final = b"# git-hydrate tree-attributes 4\n"
#: Answers kept at most (a line each for most trees).
MAX_TREES: Final = 8
#: git's attributes file of the whole system, and the environment that moves it.
_SYSTEM: Final = "/etc/gitattributes"
_ENVIRONMENT: Final = ("GIT_ATTR_NOSYSTEM", "GIT_ATTR_SOURCE")
_REASONS: Final = ("generated", "binary", "vendored")


class _Kept(msgspec.Struct, array_like=True):
    """A kept answer: the digest of what decided it, and each marked path (raw
    bytes) with its reason (an index of :data:`_REASONS`)."""

    sources: str
    marked: list[tuple[bytes, int]]


_decoder: Final = msgspec.msgpack.Decoder(_Kept)
_encoder: Final = msgspec.msgpack.Encoder()


def _folder(repo: Repository) -> str:
    return os.path.join(repo.common_dir, "hydrate", "tree-attributes")


def _sources(repo: Repository) -> str:
    """The digest of what decides a tree's attributes besides the tree."""
    system = file_state(_SYSTEM)
    lacking = repo.lacks("check-attr --source")
    environment = [os.environ.get(name) for name in _ENVIRONMENT]
    found = [lacking, attribute_sources(repo), system, environment]
    return hashlib.sha256(msgspec.json.encode(found)).hexdigest()


def _load(path: str, sources: str) -> dict[str, str] | None:
    body = unsealed(path, HEADER)  # (None: the tree is checked again)
    if body is None:
        return None
    try:
        kept = _decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    if kept.sources != sources or any(not 0 <= why < len(_REASONS) for _raw, why in kept.marked):
        return None
    return {decode_path(raw): _REASONS[why] for raw, why in kept.marked}


def _keep(repo: Repository, tree: str, sources: str, marked: dict[str, str]) -> None:
    folder = _folder(repo)
    rows = [
        (path.encode("utf-8", "surrogateescape"), _REASONS.index(why))
        for path, why in marked.items()
    ]
    keep_by_tree(
        repo, folder, tree, sealed(HEADER, _encoder.encode(_Kept(sources, rows))), MAX_TREES
    )


def tree_attribute_rules(
    repo: Repository, tree: str, listed: Sequence[FileEntry], entries: Sequence[FileEntry]
) -> dict[str, str]:
    """:func:`.rules.attribute_rules` of ``entries``, as of ``tree`` (``listed``: every
    entry of the tree, of which ``entries`` are some): from the kept answer of the
    tree, else from git (kept when ``entries`` are the whole tree)."""
    sources = _sources(repo)
    path = os.path.join(_folder(repo), tree)
    marked = _load(path, sources)
    if marked is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # used last: kept longest
        if len(entries) == len(listed) or not marked:
            return marked
        asked = {entry.path for entry in entries if entry.kind == "file"}
        return {p: why for p, why in marked.items() if p in asked}
    lacking = repo.lacks("check-attr --source")
    answer = attribute_answer(repo, entries, tree=tree)
    if answer is None:
        return {}  # (as attribute_rules: git could not answer; nothing kept)
    # (an answer is kept for the whole tree, and only under the sources it was read
    # with: a git just found to lack --source read it from the index instead)
    if len(entries) == len(listed) and repo.lacks("check-attr --source") == lacking:
        _keep(repo, tree, sources, answer)
    return answer
