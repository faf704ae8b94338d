"""The sha256 cache: each blob's sha256 and content class, read once ever.

Derived and disposable: deleting it is always safe (the next add-tree reads
the blobs again). A class is a verdict of the rules of the day (the secret
scan above all): the file names the version of the code that decides it
(:func:`rules_version`), and a file of another version is dropped whole, so a
blob is scanned again after the rules change. Bounded: past
:data:`MAX_ENTRIES` blobs, those the saving run did not use go first, oldest
first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from functools import lru_cache
from itertools import compress
from typing import Final, cast

from ..store import Repository, read_private, write_derived

__all__ = ["MAX_ENTRIES", "Sha256Cache", "keep_compiled_prefilter", "rules_version"]

#: Blobs kept at most (about 110 bytes each: 44 MB).
MAX_ENTRIES: Final = 400_000
#: The code that decides a blob's class (package-relative): the secret rules (every
#: module of ``secrets/``), the skip rules, and the marks of git-hydrate's own output.
_DECIDING: Final = ("secrets/", "hydrate/rules.py", "pack/render.py", "pack/seed.py")
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _deciding_files() -> list[str]:
    files: list[str] = []
    for name in _DECIDING:
        path = os.path.join(_PACKAGE, name)
        if not name.endswith("/"):
            files.append(path)
            continue
        with contextlib.suppress(OSError):
            files += [os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith(".py")]
    return files


@lru_cache(maxsize=1)
def rules_version() -> str:
    """The digest of the code that classifies a blob (:data:`_DECIDING`): any change
    to it, even one that looks harmless, makes every cached verdict unknown."""
    digest = hashlib.sha256()
    for path in _deciding_files():
        digest.update(os.path.relpath(path, _PACKAGE).encode() + b"\0")
        try:
            with open(path, "rb") as fh:
                digest.update(fh.read())
        except OSError:
            digest.update(b"-")  # (an install without the source: a version of its own)
        digest.update(b"\0")
    return digest.hexdigest()[:32]


#: The first line of the file holding the secret scan's compiled prefilter.
_PREFILTER_HEADER: Final = b"# git-hydrate secret-prefilter %s\n"


def keep_compiled_prefilter(repo: Repository, *, scanning: int | None = None) -> None:
    """Keep the secret scan's compiled prefilter (optional ``hyperscan``) in
    ``<common dir>/hydrate/secret-prefilter``, so that a process loads it instead
    of compiling it (40 ms). Derived and disposable: the file names the key of
    what it holds (expressions, library version, machine); any other is rebuilt.
    ``scanning``: how many bytes are about to be scanned; below what makes the
    prefilter worth building (:data:`git_hydrate.secrets.PREFILTER_AFTER`), the
    scan goes on without it and nothing is kept.
    """
    from ..secrets import PREFILTER_AFTER, keep_compiled

    if scanning is not None and scanning < PREFILTER_AFTER:
        return

    path = os.path.join(repo.common_dir, "hydrate", "secret-prefilter")

    def load(key: str) -> bytes | None:
        header = _PREFILTER_HEADER % key.encode("ascii")
        data = read_private(path)  # a scanner nobody else could have planted, or none
        return data[len(header) :] if data is not None and data.startswith(header) else None

    def save(key: str, data: bytes) -> None:
        with contextlib.suppress(OSError):  # only saves time
            header = _PREFILTER_HEADER % key.encode("ascii")
            repo.replace_file(path, [header, data], private=True)

    keep_compiled(load, save)


#: One cache line; anything else in the file is ignored.
_CACHE_LINE: Final = re.compile(
    rb"^([0-9a-f]{40}|[0-9a-f]{64}) ([0-9a-f]{64}) "
    rb"(text|empty|binary|not_utf8|lfs_pointer|own_output|secret)$",
    re.MULTILINE,
)


class Sha256Cache:
    """A derived, disposable map from blob id to ``(sha256, classification)``.

    Stored as ``<common dir>/hydrate/sha256-cache``: a header line, a line naming
    the rules' version (:func:`rules_version`), then one ``<oid> <sha256>
    <class>`` line per blob, appended as blobs are first read. A blob's content
    never changes, so an entry never goes stale (under one version); a
    missing, foreign or damaged file is simply rebuilt, and lines that do not
    parse are ignored. Deleting the file is always safe. Its verdicts are acted
    on unchecked (a blob it calls text is not scanned for secrets again), so it
    is written readable and writable by this user only and trusted only then
    (:func:`~git_hydrate.store.read_private`): in a shared repository another
    member could plant a line.
    """

    #: The version follows the classification rules (secrets, own_output): older files
    #: are rebuilt.
    HEADER: Final = b"# git-hydrate sha256-cache 9\n"

    def __init__(self, path: str, repo: Repository | None = None) -> None:
        self.path = path
        self.repo = repo  # shares what it creates as core.sharedRepository asks
        self._entries: dict[str, tuple[str, str]] | None = None
        self._new: dict[str, tuple[str, str]] = {}
        self._used: set[str] = set()
        self._rewrite = False

    @property
    def header(self) -> bytes:
        """The file's first two lines: the layout, then the rules' version."""
        return self.HEADER + b"# rules %s\n" % rules_version().encode("ascii")

    @classmethod
    def of(cls, repo: Repository) -> Sha256Cache:
        """The cache of ``repo``, at ``<common dir>/hydrate/sha256-cache``."""
        return cls(os.path.join(repo.common_dir, "hydrate", "sha256-cache"), repo)

    def _load(self) -> dict[str, tuple[str, str]]:
        if self._entries is not None:
            return self._entries
        entries: dict[str, tuple[str, str]] = {}
        data = read_private(self.path) or b""
        header = self.header
        if not data.startswith(header):
            self._rewrite = True  # none, another layout, or verdicts of other rules
        else:
            for oid, digest, cls in _CACHE_LINE.findall(data, len(header)):
                entries[oid.decode("ascii")] = (digest.decode("ascii"), cls.decode("ascii"))
        self._entries = entries
        return entries

    def get(self, oid: str) -> tuple[str, str] | None:
        """``(sha256, class)`` of the blob ``oid`` if it was seen before (under the
        rules of this version)."""
        found = self._load().get(oid)
        if found is not None:
            self._used.add(oid)
        return found

    def known(self, oids: list[str]) -> list[tuple[str, str] | None]:
        """What :meth:`get` answers for each of ``oids`` (``None``: unknown), at once."""
        found = list(map(self._load().get, oids))
        self._used.update(compress(oids, found))
        return found

    def put(self, oid: str, digest: str, cls: str) -> None:
        """Remember a blob (written by :meth:`save`)."""
        entries = self._load()
        if oid in entries:
            self._used.add(oid)
        else:  # (new: used by this run as such, not named in ``_used`` too)
            entries[oid] = self._new[oid] = (digest, cls)

    def save(self) -> None:
        """Append the new entries (or rewrite a damaged file). Failures are ignored:
        the cache only saves time."""
        if not self._new and not self._rewrite:
            return
        entries = self._load()
        if len(entries) > MAX_ENTRIES:
            # keep what this run used, then the newest of the rest (insertion order)
            used, new = self._used, self._new
            others = [oid for oid in entries if oid not in used and oid not in new]
            for oid in others[: len(entries) - MAX_ENTRIES]:
                del entries[oid]
            self._rewrite = True
        # (one buffer grown line by line: not a list of every line, then their join)
        lines = bytearray()
        for oid, (d, c) in (entries if self._rewrite else self._new).items():
            lines += b"%s %s %s\n" % (oid.encode(), d.encode(), c.encode())
        try:
            # (the buffer as it is: no copy of 30,000 lines)
            write_derived(
                self.repo, self.path, self.header, cast(bytes, lines), whole=self._rewrite
            )
        except OSError:
            return
        self._used.update(self._new)  # (still used by this run, if it saves again)
        self._new.clear()
        self._rewrite = False
