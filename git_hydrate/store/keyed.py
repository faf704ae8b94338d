"""A keyed answer: one file holding the answer to one question, good for one key.

What git answers slowly and the same while its inputs stay the same (the staged
``.gitattributes`` of an index file) is kept under ``<common dir>/hydrate/`` with the
key it holds for: another key, another layout, or a file that fails its CRC-32 or
length is a miss (asked again), never an error. Written and trusted only as this
user's (:func:`~git_hydrate.store.read_private`): what it says is acted on unchecked.
"""

from __future__ import annotations

import contextlib
import zlib

from .perms import read_private

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Protocol

    class _Replaces(Protocol):
        def replace_file(
            self, path: str, chunks: Iterable[bytes], *, private: bool = False
        ) -> None: ...


__all__ = ["read_keyed", "write_keyed"]


def read_keyed(path: str, header: bytes, key: bytes) -> bytes | None:
    """The answer :func:`write_keyed` kept at ``path`` under ``header`` and ``key``;
    ``None`` when there is none, it is another layout's or another key's, fails its
    CRC-32 or length (damaged, cut short), or is not this user's."""
    data = read_private(path)
    head = b"%s%s\n" % (header, key)
    if data is None or not data.startswith(head):
        return None
    check, newline, body = data[len(head) :].partition(b"\n")
    if not newline or check != b"%08x %d" % (zlib.crc32(body), len(body)):
        return None
    return body


def write_keyed(repo: _Replaces, path: str, header: bytes, key: bytes, body: bytes) -> None:
    """Keep ``body`` at ``path`` as the answer under ``key`` (one line, no line break):
    ``header``, the key's line, the CRC-32 (hex) and length of ``body``, then ``body``;
    written whole, for this user only. Failing only costs the next run the question."""
    check = b"%08x %d\n" % (zlib.crc32(body), len(body))
    with contextlib.suppress(OSError):
        repo.replace_file(path, [header, key, b"\n", check, body], private=True)
