"""The sha256 cache: each blob's sha256 and content class, read once ever.

Derived and disposable: deleting it is always safe (the next add-tree reads
the blobs again).
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Final

import msgspec

from ..store import Repository, read_private

__all__ = ["DerivedCache", "Sha256Cache", "keep_compiled_prefilter"]

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
    rb"(text|empty|binary|not_utf8|lfs_pointer|secret)$",
    re.MULTILINE,
)


class Sha256Cache:
    """A derived, disposable map from blob id to ``(sha256, classification)``.

    Stored as ``<common dir>/hydrate/sha256-cache``: a header line, then one
    ``<oid> <sha256> <class>`` line per blob, appended as blobs are first
    read. A blob's content never changes, so an entry never goes stale; a
    missing, foreign or damaged file is simply rebuilt, and lines that do not
    parse are ignored. Deleting the file is always safe. Its verdicts are acted
    on unchecked (a blob it calls text is not scanned for secrets again), so it
    is written readable and writable by this user only and trusted only then
    (:func:`~git_hydrate.store.read_private`): in a shared repository another
    member could plant a line.
    """

    #: The version follows the classification rules (secrets): older files are rebuilt.
    HEADER: Final = b"# git-hydrate sha256-cache 7\n"

    def __init__(self, path: str, repo: Repository | None = None) -> None:
        self.path = path
        self.repo = repo  # shares what it creates as core.sharedRepository asks
        self._entries: dict[str, tuple[str, str]] | None = None
        self._new: dict[str, tuple[str, str]] = {}
        self._rewrite = False

    @classmethod
    def of(cls, repo: Repository) -> Sha256Cache:
        """The cache of ``repo``, at ``<common dir>/hydrate/sha256-cache``."""
        return cls(os.path.join(repo.common_dir, "hydrate", "sha256-cache"), repo)

    def _load(self) -> dict[str, tuple[str, str]]:
        if self._entries is not None:
            return self._entries
        entries: dict[str, tuple[str, str]] = {}
        data = read_private(self.path) or b""
        if not data.startswith(self.HEADER):
            self._rewrite = True
        else:
            for oid, digest, cls in _CACHE_LINE.findall(data, len(self.HEADER)):
                entries[oid.decode("ascii")] = (digest.decode("ascii"), cls.decode("ascii"))
        self._entries = entries
        return entries

    def get(self, oid: str) -> tuple[str, str] | None:
        """``(sha256, class)`` of the blob ``oid`` if it was seen before."""
        return self._load().get(oid)

    def put(self, oid: str, digest: str, cls: str) -> None:
        """Remember a blob (written by :meth:`save`)."""
        entries = self._load()
        if oid not in entries:
            entries[oid] = (digest, cls)
            self._new[oid] = (digest, cls)

    def save(self) -> None:
        """Append the new entries (or rewrite a damaged file). Failures are ignored:
        the cache only saves time."""
        if not self._new and not self._rewrite:
            return
        lines = b"".join(
            b"%s %s %s\n" % (oid.encode(), d.encode(), c.encode())
            for oid, (d, c) in (self._entries if self._rewrite else self._new).items()  # type: ignore[union-attr]
        )
        try:
            _store(self.repo, self.path, self.HEADER, lines, whole=self._rewrite)
        except OSError:
            return
        self._new.clear()
        self._rewrite = False


def _store(
    repo: Repository | None, path: str, header: bytes, lines: bytes, *, whole: bool
) -> None:
    """Write a derived file for this user only: ``header`` and ``lines`` whole when
    ``whole`` or when it is missing (a temporary file renamed over it), else
    ``lines`` appended (one ``O_APPEND`` write: concurrent runs interleave whole
    runs).

    Raises:
        OSError: nothing was written.
    """
    if whole or not os.path.exists(path):
        if repo is not None:
            repo.replace_file(path, [header, lines], private=True)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        try:
            with open(os.open(tmp, flags, 0o600), "wb") as fh:
                fh.write(header + lines)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.write(fd, lines)
    finally:
        os.close(fd)


class DerivedCache:
    """A derived, disposable map from a key (a blob id and a variant) to a JSON value.

    Stored as ``<common dir>/hydrate/<name>``: a header line naming the format,
    then one ``<key> TAB <compact JSON value>`` line per entry, appended once
    per run. A blob never changes, so an entry never goes stale while the
    header (which names what derives the values) stays the same; a line that
    does not parse is ignored, a foreign header starts the file afresh, and
    deleting the file is always safe. Used for token counts and outlines, which
    a prompt takes unchecked: so, like :class:`Sha256Cache`, written for this user
    only and trusted only then.
    """

    def __init__(self, path: str, header: bytes, repo: Repository | None = None) -> None:
        self.path = path
        self.header = header
        self.repo = repo
        self.values: dict[str, Any] = {}
        self._stored: set[str] = set()
        self._rewrite = False
        self._load()

    @classmethod
    def of(cls, repo: Repository, name: str, header: bytes) -> DerivedCache:
        """The cache ``name`` of ``repo``, at ``<common dir>/hydrate/<name>``."""
        return cls(os.path.join(repo.common_dir, "hydrate", name), header, repo)

    def _load(self) -> None:
        data = read_private(self.path)
        if data is None or not data.startswith(self.header):
            # missing, foreign or of another header: started afresh
            self._rewrite = data is not None or os.path.lexists(self.path)
            return
        decoder = msgspec.json.Decoder()
        for line in data[len(self.header) :].split(b"\n"):
            key, tab, value = line.partition(b"\t")
            if not tab:
                continue
            try:
                self.values[key.decode("utf-8")] = decoder.decode(value)
            except (msgspec.DecodeError, UnicodeDecodeError):
                continue
        self._stored = set(self.values)

    def save(self) -> None:
        """Append what is new (or rewrite a foreign file). Failures are ignored:
        the cache only saves time."""
        fresh = [key for key in self.values if key not in self._stored]
        if not fresh and not self._rewrite:
            return
        encoder = msgspec.json.Encoder()
        keys = list(self.values) if self._rewrite else fresh
        lines = b"".join(
            key.encode("utf-8") + b"\t" + encoder.encode(self.values[key]) + b"\n"
            for key in keys
            if "\t" not in key and "\n" not in key
        )
        try:
            _store(self.repo, self.path, self.header, lines, whole=self._rewrite)
        except OSError:
            return
        self._stored.update(keys)
        self._rewrite = False
