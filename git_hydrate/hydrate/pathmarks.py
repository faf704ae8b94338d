"""The paths of a tree the path rules skip, kept by tree id: a known tree's paths are
not judged again.

:func:`.rules.path_rule` judges each file by its path before its size (a skipped
folder or extension, a generated or own-output name, a path that cannot be one
line): 30,000 paths cost a new task 28 ms of CPU, for a tree whose answer cannot
have changed. It is kept at ``<common dir>/hydrate/tree-paths/<tree id>``: the
paths of the tree that a regular file of any size the limits take would be
skipped for (most trees: none or a few), with the digest of what else decides
them, the rules' code (git-hydrate's version, and the size and time of the
modules that hold the rules: a development install's edit is a miss too).

A path not kept is one the path rules take as a regular file; whether it is one,
and its size, are still judged by the caller (:func:`.tree.apply_rules`).

Derived and disposable like :mod:`.listings`: a missing, foreign, damaged (checked
by its CRC-32) or unreadable file is a miss, never an error; deleting the folder is
always safe; trusted only when private to this user (a planted answer could let a
file in that the rules skip); bounded (the :data:`MAX_TREES` used last are kept; a
use touches the file).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Sequence
from typing import Final

import msgspec

from .. import __version__
from ..pack.fingerprint import code_fingerprint
from ..store import Repository
from ..store.keyed import sealed, unsealed
from .listings import keep_by_tree
from .rules import FileEntry, decode_path, path_rule

__all__ = ["HEADER", "MAX_TREES", "skipped_paths"]

#: The first line of a kept answer; another (an older layout) is a miss. The second
#: is the CRC-32 and length of the rest (:func:`~git_hydrate.store.keyed.sealed`).
HEADER: Final = b"# git-hydrate tree-paths 2\n"
#: Answers kept at most (a line each for most trees).
MAX_TREES: Final = 8
#: The modules whose code decides :func:`.rules.path_rule`'s verdicts (under the package).
RULE_MODULES: Final = ("hydrate/rules.py", "validate.py")


class _Kept(msgspec.Struct, array_like=True):
    """A kept answer: the digest of the rules' code, and each path the rules skip
    (raw bytes)."""

    rules: str
    skipped: list[bytes]


_decoder: Final = msgspec.msgpack.Decoder(_Kept)
_encoder: Final = msgspec.msgpack.Encoder()


def _folder(repo: Repository) -> str:
    return os.path.join(repo.common_dir, "hydrate", "tree-paths")


def _rules() -> str:
    """The digest of what decides the path rules' verdicts besides the paths."""
    state = msgspec.json.encode([__version__, code_fingerprint(RULE_MODULES)])
    return hashlib.sha256(state).hexdigest()


def _judged(path: str) -> bool:
    """Whether the path rules skip a regular file at ``path`` whatever its size."""
    return path_rule(FileEntry(path, 1), sys.maxsize) is not None


def _load(path: str, rules: str) -> set[str] | None:
    body = unsealed(path, HEADER)  # (None: the tree's paths are judged again)
    if body is None:
        return None
    try:
        kept = _decoder.decode(body)
    except (msgspec.DecodeError, ValueError):
        return None
    if kept.rules != rules:
        return None
    return set(map(decode_path, kept.skipped))


def _keep(repo: Repository, tree: str, rules: str, skipped: set[str]) -> None:
    raws = sorted(path.encode("utf-8", "surrogateescape") for path in skipped)
    keep_by_tree(
        repo, _folder(repo), tree, sealed(HEADER, _encoder.encode(_Kept(rules, raws))), MAX_TREES
    )


def skipped_paths(
    repo: Repository, tree: str, listed: Sequence[FileEntry], entries: Sequence[FileEntry]
) -> set[str] | None:
    """The paths of ``tree`` (``listed``: every entry of it) that the path rules skip
    as a regular file of any size: from the kept answer of the tree, else judged
    (and kept) when ``entries``, the files asked, are the whole tree. ``None``: not
    kept, and only some of the tree is asked (judging it all would cost more than
    judging those)."""
    rules = _rules()
    path = os.path.join(_folder(repo), tree)
    skipped = _load(path, rules)
    if skipped is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # used last: kept longest
        return skipped
    if len(entries) != len(listed):
        return None
    skipped = {entry.path for entry in listed if _judged(entry.path)}
    _keep(repo, tree, rules, skipped)
    return skipped
