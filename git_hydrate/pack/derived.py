"""Derived caches of the packer: token counts and outlines, keyed by blob.

Disposable (deleting one is always safe) and, since a prompt takes what they
say unchecked, written for this user only (see :mod:`git_hydrate.store.derived`).
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ..store import Repository, read_private, write_derived

__all__ = ["DerivedCache"]


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
            write_derived(self.repo, self.path, self.header, lines, whole=self._rewrite)
        except OSError:
            return
        self._stored.update(keys)
        self._rewrite = False
