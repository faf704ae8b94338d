"""Blob digests kept for a run: a body linked by many tasks is hashed once.

A blob's ``(size, sha256, is UTF-8)`` never changes, yet ``doctor`` and a
push's (or pull's) checks ask it once per link: a body that a hundred tasks
link was streamed and hashed a hundred times. While :meth:`Digests.digesting`
(and :meth:`~.objects.Objects.remembering`), each digest is kept by the blob's
id, and :meth:`Digests.digest_blobs` digests many in one ``cat-file`` stream.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Final

from ..errors import CorruptData
from .catfile import digest_of
from .objects import Objects

__all__ = ["Digests"]

#: ``(type, size, sha256 hex or None: over the limit, is UTF-8)``, as CatFile.digest answers.
Digest = tuple[bytes, int, str | None, bool]

#: An object id alone (a spec naming another object later, such as a ref, is never kept).
_OBJECT_ID: Final = re.compile(rb"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")


def _within(found: Digest, limit: int) -> Digest | None:
    """``found`` as a digest under ``limit`` would be, or ``None``: it was made
    under a lower limit than this one and must be made again."""
    kind, size, sha256, _utf8 = found
    if size > limit:
        return kind, size, None, False
    return found if sha256 is not None else None


class Digests(Objects):
    """Blob digests kept while :meth:`digesting` (mixed into the repository)."""

    #: The digests kept, by object id (``None``: not digesting).
    _digests: dict[bytes, Digest] | None = None

    @contextlib.contextmanager
    def digesting(self) -> Iterator[None]:
        """Keep each blob's digest until the block ends (a hundred bytes a blob):
        a body many tasks link is read and hashed once."""
        outer = self._digests
        if outer is None:
            self._digests = {}
        try:
            yield
        finally:
            if outer is None:
                self._digests = None

    @contextlib.contextmanager
    def remembering(self) -> Iterator[None]:
        """:meth:`Objects.remembering`, and :meth:`digesting`."""
        with super().remembering(), self.digesting():
            yield

    def _digest(self, oid: bytes, limit: int) -> Digest | None:
        kept = self._digests
        found = kept.get(oid) if kept is not None else None
        known = _within(found, limit) if found is not None else None
        if known is not None:
            return known
        answer = super()._digest(oid, limit)
        if kept is not None and answer is not None and _OBJECT_ID.match(oid):
            kept[oid] = answer
        return answer

    def digest_blobs(self, oids: list[bytes], limit: int) -> None:
        """While :meth:`digesting`, digest those of ``oids`` not yet known, in one
        ``cat-file`` stream (the ones already read while :meth:`remembering`, from
        memory). Nothing is raised: what this cannot digest (missing, damaged)
        :meth:`blob_digest` asks again, and says why."""
        kept = self._digests
        if kept is None:
            return
        memo = self._memo or {}
        wanted: dict[bytes, None] = {}
        for oid in oids:
            found = kept.get(oid)
            if (found is None or _within(found, limit) is None) and _OBJECT_ID.match(oid):
                if oid in memo:
                    kept[oid] = digest_of(memo[oid], limit)
                else:
                    wanted[oid] = None
        specs = list(wanted)
        answers: dict[bytes, Digest | None] = {}
        with contextlib.suppress(CorruptData):
            while specs:
                self._batch().digest_many(specs, limit, answers)
                specs = [spec for spec in specs if spec not in answers]
        kept.update((oid, found) for oid, found in answers.items() if found is not None)
