"""The only place stored JSON is encoded or decoded.

Encoding is deterministic (struct fields in declaration order, dict keys
sorted), so equal state gives equal bytes and therefore equal git objects.
Decoding checks the stored format version before anything else, and turns
msgspec's errors (which carry a JSON path) into :class:`CorruptData` that says
where the bytes came from.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import msgspec

from .errors import CorruptData
from .model import (
    FORMAT_VERSION,
    LINKS_FANNED_FORMAT,
    ArchiveIndex,
    LinkList,
    RemovalRecord,
    Task,
    bad_link_id,
)

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_READ_TASK_JSON_BYTES",
    "MAX_TASK_JSON_BYTES",
    "OPTIONAL_TASK_FIELDS",
    "check_depth",
    "decode_archive_index",
    "decode_json",
    "decode_links",
    "decode_removal_record",
    "decode_task",
    "duplicate_key",
    "encode",
    "encode_output",
    "encode_with_extras",
    "format_output",
    "lost_fields",
    "oversized",
]

_encoder = msgspec.json.Encoder(order="deterministic")
_output_encoder = msgspec.json.Encoder(order="sorted")

T = TypeVar("T")


class _FormatProbe(msgspec.Struct):
    format: int = FORMAT_VERSION


_probe_decoder = msgspec.json.Decoder(_FormatProbe)
_task_decoder = msgspec.json.Decoder(Task)
_links_decoder = msgspec.json.Decoder(LinkList)
_archive_decoder = msgspec.json.Decoder(ArchiveIndex)
_removal_decoder = msgspec.json.Decoder(RemovalRecord)


#: Task fields written only when they differ from their default, as
#: ``,"name":<default>`` would be: a task that never used them keeps the bytes
#: (and so the commit ids) earlier versions wrote, and those versions read it.
#: They are the last fields of :class:`Task`, in declaration order.
OPTIONAL_TASK_FIELDS: Final = (
    "depends_on",
    "assignee",
    "claimed_at",
    "taken_from",
    "selections",
    "claimed_via",
    "parent",
    "source",
)
_DEFAULT_TAILS: Final = tuple(
    (name, b',"%s":%s' % (name.encode(), b"[]" if name in ("depends_on", "selections") else b'""'))
    for name in OPTIONAL_TASK_FIELDS
)


def _encode_task(task: Task) -> bytes:
    data = _encoder.encode(task)
    for name, tail in _DEFAULT_TAILS:
        if not getattr(task, name):
            # Outside strings a quote is never escaped, so `,"name":` occurs
            # only as a key, and the last occurrence is the top-level one.
            at = data.rfind(tail)
            data = data[:at] + data[at + len(tail) :]
    return data


def encode(obj: Any) -> bytes:
    """Encode stored data: compact, deterministic JSON plus a final newline."""
    if isinstance(obj, Task):
        return _encode_task(obj) + b"\n"
    return _encoder.encode(obj) + b"\n"


def encode_with_extras(obj: Any, extras: dict[str, Any]) -> bytes:
    """:func:`encode` a Struct plus top-level ``extras`` (fields this version
    does not know, kept from what was read), after its own fields, sorted."""
    data = encode(obj)
    if not extras:
        return data
    tail = b"".join(
        b"," + _encoder.encode(key) + b":" + _encoder.encode(extras[key]) for key in sorted(extras)
    )
    return data[:-2] + tail + b"}\n"  # before the closing brace and the final newline


def lost_fields(raw: Any, kept: Any, path: str = "$") -> list[str]:
    """The JSON paths of ``raw`` (a document as stored) that ``kept`` (the same
    document as this version decoded and would write it) no longer holds.

    Lists of objects that carry a ``sha256`` are matched by it (links are
    re-sorted on reading), other lists by position.
    """
    if isinstance(raw, dict) and isinstance(kept, dict):
        lost = []
        for key, value in raw.items():
            where = f"{path}.{key}"
            if key not in kept:
                lost.append(where)
            else:
                lost += lost_fields(value, kept[key], where)
        return lost
    if isinstance(raw, list) and isinstance(kept, list):
        keyed = all(isinstance(v, dict) and "sha256" in v for v in [*raw, *kept])
        if keyed:
            by_hash = {v["sha256"]: v for v in kept}
            return [
                p
                for v in raw
                for p in lost_fields(v, by_hash.get(v["sha256"], v), f"{path}[{v['sha256'][:12]}]")
            ]
        return [
            p
            for i, (a, b) in enumerate(zip(raw, kept, strict=False))
            for p in lost_fields(a, b, f"{path}[{i}]")
        ]
    return []


def encode_output(obj: Any) -> bytes:
    """Compact JSON for output and byte measuring: sorted keys, no whitespace, UTF-8."""
    return _output_encoder.encode(obj)


#: The C1 controls (an 8-bit CSI, U+009B, drives a terminal as ESC [ does), the
#: line and paragraph separators and the bidi embeddings, overrides and isolates,
#: which JSON allows raw in a string.
_RAW_IN_JSON: Final = re.compile("[\u0080-\u009f\u2028-\u202e\u2066-\u2069]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def format_output(obj: Any, *, compact: bool = False, terminal: bool = False) -> str:
    """JSON text for a command's output (indented unless ``compact``). For a
    ``terminal``, a character that could drive it or reorder what it shows is
    written as a ``\\uXXXX`` escape: the same JSON value (0.15 s more for 20 MB
    holding other non-ASCII text, so only where a terminal reads it)."""
    data = _output_encoder.encode(obj)
    if not compact:
        data = msgspec.json.format(data, indent=2)
    text = data.decode("utf-8")
    return _RAW_IN_JSON.sub(_escaped, text) if terminal and not text.isascii() else text


#: Stored documents are a few levels deep; deeper ones are refused before
#: decoding (a decoder recursing 5,000 levels can exhaust the stack).
MAX_JSON_DEPTH: Final = 64

_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
#: An opening bracket as 1, a closing one as -1 (a signed byte).
_STEPS: Final = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")


def check_depth(data: bytes, where: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse JSON nested deeper than ``limit`` levels, without decoding it.

    Linear: strings are cut out and only the brackets kept, each then a step of
    +1 or -1 whose running sum is the depth (all in C). Exact for any nesting
    (arrays and objects in turn counted too: a peeling of matched pairs took two
    levels a pass there, and let 128 through a limit of 64).

    Raises:
        CorruptData: nested too deep, naming ``where``.
    """
    if data.count(b"[") + data.count(b"{") <= limit:
        return
    from array import array  # (only for documents with many brackets)
    from itertools import accumulate

    # Escapes live inside strings only: without them, every other '"'-separated
    # piece is a string.
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(data.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    steps = array("b", brackets.translate(_STEPS))
    if steps and max(accumulate(steps)) > limit:
        raise CorruptData(f"{where}: JSON nested deeper than {limit} levels")


def _check_format(version: int, where: str, newest: int = FORMAT_VERSION) -> None:
    if version > newest:
        raise CorruptData(
            f"{where}: stored format {version} is newer than this git-hydrate "
            f"understands ({newest}); upgrade git-hydrate to read it"
        )
    if version < 1:
        raise CorruptData(f"{where}: invalid stored format {version}")


def _decode(
    decoder: msgspec.json.Decoder[T], data: bytes, where: str, newest: int = FORMAT_VERSION
) -> T:
    """Decode ``data``, refusing a format this version does not know.

    The full decode comes first (one pass over the bytes); only when it fails
    is the format probed, so that data of a newer format is reported as such
    rather than as whatever field it happens to trip on. Data of a newer
    format that does decode is refused all the same.
    """
    check_depth(data, where)
    try:
        obj = decoder.decode(data)
    except RecursionError:  # check_depth lets no such document through; belt and braces
        raise CorruptData(f"{where}: JSON nested too deeply") from None
    except msgspec.DecodeError as exc:
        try:
            probe = _probe_decoder.decode(data)
        except msgspec.DecodeError:
            raise CorruptData(f"{where}: {exc}") from None
        _check_format(probe.format, where, newest)
        raise CorruptData(f"{where}: {exc}") from None
    _check_format(getattr(obj, "format", FORMAT_VERSION), where, newest)
    return obj


def decode_json(data: bytes, where: str) -> Any:
    """Decode stored JSON of no particular shape (a union merge's index files).

    Raises:
        CorruptData: the bytes are not JSON, naming ``where``.
    """
    check_depth(data, where)
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise CorruptData(f"{where}: {exc}") from None


class _Twice(Exception):
    """A key met twice in one object (raised out of the JSON scan)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> None:
    seen: set[str] = set()
    for key, _value in pairs:
        if key in seen:
            raise _Twice(key)
        seen.add(key)


def duplicate_key(data: bytes) -> str | None:
    """A key that appears twice in one object of the JSON document ``data`` (the
    first found), else ``None``. msgspec keeps the last of them without a word, so
    a document can hold a value no reader of it sees; check with this before
    trusting one this version did not write (one pass of the standard library's
    scanner, in C but for a call per object). ``data`` must be JSON that
    :func:`check_depth` let through."""
    import json  # (only documents this version did not write are scanned)

    try:
        json.loads(data, object_pairs_hook=_unique_pairs)
    except _Twice as twice:
        return str(twice.args[0])
    except ValueError:
        return None  # (not JSON at all: the decoder says so, not this)
    return None


#: The largest ``task.json`` written, or taken from a remote. Its text fields hold
#: at most 1 MiB each; a task of thousands of checkpoints stays far below this.
#: Decoded, a ``task.json`` takes ~5 bytes of memory per byte: a remote's 200 MB one
#: (200,000 tags) cost every later command here 0.8-1 GB and seconds.
MAX_TASK_JSON_BYTES: Final = 16 << 20
#: The largest ``task.json`` of this repository read: an earlier version wrote
#: larger ones than it writes now (checkpoints' evidence was not bounded), and
#: they stay readable, to be trimmed.
MAX_READ_TASK_JSON_BYTES: Final = 256 << 20


def oversized(size: int, limit: int = MAX_TASK_JSON_BYTES) -> str:
    """How a ``task.json`` of ``size`` bytes past ``limit`` is named in an error."""
    return f"{size:,} bytes, more than the {limit:,} a task.json may hold"


def decode_task(data: bytes, where: str, limit: int = MAX_READ_TASK_JSON_BYTES) -> Task:
    """Decode ``task.json`` bytes; ``where`` names their origin in errors.

    Raises:
        CorruptData: not a task, or more than ``limit`` bytes (decoding is not tried).
    """
    if len(data) > limit:
        raise CorruptData(f"{where}: {oversized(len(data), limit)}")
    return _decode(_task_decoder, data, where)


def decode_links(data: bytes, where: str) -> LinkList:
    """Decode ``links.json`` (or ``links/<aa>.json``) bytes; ``where`` names
    their origin in errors. Format 1 is a list of links, format 2 says they are
    fanned out (:data:`~git_hydrate.model.LINKS_FANNED_FORMAT`)."""
    decoded = _decode(_links_decoder, data, where, LINKS_FANNED_FORMAT)
    problem = bad_link_id(decoded.links)
    if problem is not None:
        raise CorruptData(f"{where}: {problem}")
    return decoded


def decode_archive_index(data: bytes, where: str) -> ArchiveIndex:
    """Decode the archive's ``index.json``; ``where`` names its origin in errors."""
    return _decode(_archive_decoder, data, where)


def decode_removal_record(data: bytes, where: str) -> RemovalRecord:
    """Decode the removal record's ``removed.json``; ``where`` names its origin."""
    return _decode(_removal_decoder, data, where)
