"""Reading loose objects in this process, before any ``git cat-file`` is started.

git-hydrate writes every task commit, tree and small blob as a loose object,
and most commands read a handful of them (a task's commit, ``task.json``,
``links.json``): starting ``git cat-file --batch`` for those costs more than
the reads. :class:`LooseReader` answers an object id, or ``id:path``, from
the loose object files; anything it cannot answer with certainty (an object
not loose: packed, in an alternate, promised; a file that does not inflate;
an unusual path) is left to git, and so is everything when git would see
other objects than the files hold (replace refs, grafts, another object
directory).
"""

from __future__ import annotations

import os
import zlib

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final

__all__ = ["LooseReader", "NotHere"]

_KINDS: Final = frozenset({b"blob", b"tree", b"commit", b"tag"})
_TREE_MODE: Final = b"40000"
#: Parsed trees kept for the next path read in them (a task's tree, read for
#: ``task.json`` and ``links.json``).
_TREES_KEPT: Final = 256


class NotHere(Exception):
    """The loose files cannot answer with certainty: git is to be asked."""


class LooseReader:
    """Objects read from ``objects/xx/yyyy`` files, as ``git cat-file --batch`` would.

    Args:
        common_dir: The repository's (common) git directory.
        hex_length: 40 (SHA-1) or 64 (SHA-256).
    """

    def __init__(self, common_dir: str, hex_length: int) -> None:
        self._objects = os.path.join(common_dir, "objects")
        self._hex_length = hex_length
        self._trees: dict[bytes, dict[bytes, tuple[bytes, bytes]]] = {}

    @classmethod
    def opened(
        cls, common_dir: str, environ: Mapping[str, str], sha256: bool
    ) -> LooseReader | None:
        """A reader of the repository at ``common_dir``, or ``None`` where the loose
        files may not hold what git would read: replace refs or grafts (git reads
        objects through them), an object directory of the environment's."""
        if any(name in environ for name in ("GIT_REPLACE_REF_BASE", "GIT_OBJECT_DIRECTORY")):
            return None
        if os.path.exists(os.path.join(common_dir, "info", "grafts")):
            return None
        for _dirpath, _dirs, files in os.walk(os.path.join(common_dir, "refs", "replace")):
            if files:
                return None
        try:
            with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
                if b" refs/replace/" in fh.read():
                    return None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        return cls(common_dir, 64 if sha256 else 40)

    def read_many(self, specs: list[bytes]) -> list[tuple[bytes, bytes] | None]:
        """What :meth:`read` answers for ``specs``, up to the first it cannot."""
        answers: list[tuple[bytes, bytes] | None] = []
        try:
            for spec in specs:
                answers.append(self.read(spec))
        except NotHere:
            pass
        return answers

    def read(self, spec: bytes) -> tuple[bytes, bytes] | None:
        """``(type, content)`` of the object ``spec`` (a full id, or a full id and a
        path) names, or ``None`` when the path is not in that commit's tree.

        Raises:
            NotHere: git is to answer.
        """
        oid, colon, path = spec.partition(b":")
        self._check_id(oid)
        if not colon:
            return self._object(oid)
        names = path.split(b"/")
        if not path or any(name in (b"", b".", b"..") for name in names):
            raise NotHere(spec)
        kind, commit = self._object(oid)
        tree = commit[5 : 5 + self._hex_length]
        if kind != b"commit" or not commit.startswith(b"tree "):
            raise NotHere(spec)  # (a tree or a tag as the root: git's to resolve)
        self._check_id(tree)
        mode = _TREE_MODE
        for name in names:
            if mode != _TREE_MODE:
                raise NotHere(spec)  # a path through a blob or a submodule
            entry = self._tree(tree).get(name)
            if entry is None:
                return None
            mode, tree = entry
        return self._object(tree)

    def _check_id(self, oid: bytes) -> None:
        if len(oid) != self._hex_length or oid.strip(b"0123456789abcdef"):
            raise NotHere(oid)

    def _object(self, oid: bytes) -> tuple[bytes, bytes]:
        name = oid.decode("ascii")
        try:
            with open(os.path.join(self._objects, name[:2], name[2:]), "rb") as fh:
                raw = zlib.decompress(fh.read())
        except (OSError, zlib.error):
            raise NotHere(oid) from None
        header, nul, content = raw.partition(b"\0")
        kind, _space, size = header.partition(b" ")
        if not nul or kind not in _KINDS or not size.isdigit() or int(size) != len(content):
            raise NotHere(oid)
        return kind, content

    def _tree(self, oid: bytes) -> dict[bytes, tuple[bytes, bytes]]:
        """``{name: (mode, id)}`` of a loose tree (kept for the next path in it)."""
        entries = self._trees.get(oid)
        if entries is not None:
            return entries
        kind, data = self._object(oid)
        if kind != b"tree":
            raise NotHere(oid)
        size = self._hex_length // 2
        entries, pos = {}, 0
        while pos < len(data):
            space = data.find(b" ", pos)
            nul = data.find(b"\0", space + 1)
            if space < 0 or nul < 0 or nul + 1 + size > len(data):
                raise NotHere(oid)
            raw = data[nul + 1 : nul + 1 + size]
            entries[data[space + 1 : nul]] = (data[pos:space], raw.hex().encode())
            pos = nul + 1 + size
        if len(self._trees) >= _TREES_KEPT:
            self._trees.clear()
        self._trees[oid] = entries
        return entries
