"""A kept answer, framed: its layout's header, a check line, then its body.

What git-hydrate keeps under ``<common dir>/hydrate/`` so as not to ask again (a
tree's listing, its attributes and path verdicts, the staged ``.gitattributes`` of
an index file) is one file per answer: a header naming its layout (and, for an
answer good for one key only, that key), the CRC-32 and length of the body
(:func:`check_line`), then the body. A file of another header, or one whose body
fails its check (damaged, cut short), is a miss: asked again, never an error.
Written and trusted only as this user's (:func:`~git_hydrate.store.read_private`):
what it says is acted on unchecked.
"""

from __future__ import annotations

import zlib

from .perms import read_private

__all__ = ["check_line", "sealed", "unsealed"]


def check_line(body: bytes | bytearray | memoryview) -> bytes:
    """The line that says what ``body`` must be, its CRC-32 (hex) and length: a
    kept answer's second line, the head of a block of the sha256 cache."""
    return b"%08x %d\n" % (zlib.crc32(body), len(body))


def sealed(header: bytes, body: bytes) -> list[bytes]:
    """``body`` framed as :func:`unsealed` reads it: ``header`` (its layout, and any
    key it holds for), its :func:`check_line`, then ``body``."""
    return [header, check_line(body), body]


def unsealed(path: str, header: bytes) -> memoryview | None:
    """The body of the file at ``path`` :func:`sealed` framed with ``header``;
    ``None`` when it is missing, not private to this user (an answer nobody else
    could have planted, or none), of another header, or fails its check."""
    data = read_private(path)
    if data is None or not data.startswith(header):
        return None
    end = data.find(b"\n", len(header)) + 1
    if not end:
        return None
    body = memoryview(data)[end:]
    if data[len(header) : end] != check_line(body):
        return None
    return body
