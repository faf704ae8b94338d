"""Checks applied to user input before anything is written.

msgspec checks ``Meta`` constraints only when decoding, so every value that
reaches storage passes through here first. Each function returns the
normalised value or raises :class:`ValidationError` with a one-line message.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from .chars import ALLOWED_INVISIBLE, on_one_line
from .errors import ValidationError
from .ids import TASK_ID_RULES, is_task_id
from .model import KINDS, STATIONS, PathNote

__all__ = [
    "ALLOWED_INVISIBLE",
    "MAX_HOLDER_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_TOKEN_COUNT",
    "body_bytes",
    "context_priority",
    "dependencies",
    "duration",
    "entries_from",
    "folded",
    "from_absolute",
    "holder",
    "kind",
    "on_one_line",
    "parent",
    "path_notes",
    "printable",
    "priority",
    "shown_value",
    "source_label",
    "split_entry",
    "station",
    "task_id",
    "text",
    "text_list",
    "timestamp",
    "token_count",
    "top_spellings",
    "ttl",
    "where",
]

MAX_LABEL_CHARS: Final = 1024
#: The most characters of a value an error quotes back (:func:`shown_value`).
MAX_SHOWN_CHARS: Final = 80
#: Default ceiling on one context body (``hydrate.maxBodyBytes``).
DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024


def shown_value(value: Any) -> str:
    """``repr(value)`` of at most :data:`MAX_SHOWN_CHARS` characters: an error never
    echoes its input whole (a query of 20 KB is not a line of 20 KB)."""
    text = repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


def task_id(value: Any) -> str:
    """A task id that is safe as a ref name and a file name on every system."""
    if not isinstance(value, str):
        raise ValidationError(f"task id must be text, not {type(value).__name__}")
    if not is_task_id(value):
        # (quoted once, its control characters escaped; "..." only when cut)
        shown = repr(value[:60]) + ("..." if len(value) > 60 else "")
        raise ValidationError(f"invalid task id {shown}: use {TASK_ID_RULES}")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValidationError(f"{what} must be an integer, not {shown_value(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise ValidationError(f"{what} must be an integer, not {shown_value(value)}")


def priority(value: Any) -> int:
    """A task priority: 1 (highest) to 3."""
    number = _int(value, "priority")
    if not 1 <= number <= 3:
        raise ValidationError(f"priority must be 1, 2 or 3, not {number}")
    return number


def context_priority(value: Any) -> int:
    """A context attachment's priority: any 32-bit integer; higher packs first."""
    number = _int(value, "context priority")
    if not -(2**31) <= number < 2**31:
        raise ValidationError(f"context priority must fit in 32 bits, not {number}")
    return number


#: The largest token count stored: the largest integer every JSON reader (a
#: JavaScript page, an MCP client) holds exactly, 2**53 - 1.
MAX_TOKEN_COUNT: Final = 2**53 - 1


def token_count(value: Any, what: str = "token budget") -> int:
    """A token count from zero to :data:`MAX_TOKEN_COUNT`."""
    number = _int(value, what)
    if number < 0:
        raise ValidationError(f"{what} must be zero or more, not {number}")
    if number > MAX_TOKEN_COUNT:
        raise ValidationError(f"{what} must be at most {MAX_TOKEN_COUNT}, not {number}")
    return number


def kind(value: Any) -> str:
    """A task kind."""
    if value not in KINDS:
        raise ValidationError(f"invalid kind {shown_value(value)}: use one of {', '.join(KINDS)}")
    return str(value)


def station(value: Any) -> str:
    """A lifecycle station."""
    if value not in STATIONS:
        raise ValidationError(
            f"invalid station {shown_value(value)}: use one of {', '.join(STATIONS)}"
        )
    return str(value)


#: The longest time to live, in seconds.
MAX_TTL: Final = 100 * 365 * 86400


def ttl(value: Any) -> float | None:
    """A time-to-live in seconds (positive, finite), or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError(f"ttl must be a number of seconds, not {shown_value(value)}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        shown = shown_value(value)
        raise ValidationError(f"ttl must be a number of seconds, not {shown}") from None
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_TTL:
        raise ValidationError(
            f"ttl must be a positive number of seconds (≤ 100 years), not {value}"
        )
    return seconds


def source_label(value: Any) -> str:
    """A context source label: one line of printable text, 1-1024 characters."""
    if not isinstance(value, str):
        raise ValidationError(f"source label must be text, not {type(value).__name__}")
    if not value.strip():
        raise ValidationError("source label must not be empty")
    if len(value) > MAX_LABEL_CHARS:
        raise ValidationError(f"source label is longer than {MAX_LABEL_CHARS} characters")
    if not printable(value):
        raise ValidationError(
            "source label must be one line without control characters: "
            f"{value[:60].encode('unicode_escape').decode()!s}"
        )
    return value


def text(value: Any, what: str, *, required: bool = False) -> str:
    """Free text (may span lines) without NUL bytes or invalid surrogates."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ValidationError(f"{what} must be text, not {type(value).__name__}")
    if required and not value.strip():
        raise ValidationError(f"{what} must not be empty")
    if "\0" in value:
        raise ValidationError(f"{what} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(f"{what} is not valid Unicode text") from None
    return value


#: A line break (what ``str.splitlines`` breaks at) or a tab: one line's text has
#: none. Other white space (a no-break space, an ideographic space) is text.
_BREAK: Final = re.compile("[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]+")


def folded(value: str) -> str:
    """``value`` on one line: each line break (and tab) with the white space around
    it becomes one space; runs of spaces, plain or not, stay as they were written,
    so a title exported and imported again is the same title. (Split, then each
    piece stripped: linear, where a pattern reaching back over the spaces before a
    break is not.)"""
    pieces = _BREAK.split(value)
    if len(pieces) == 1:
        return value.strip()
    return " ".join(piece for piece in map(str.strip, pieces) if piece)


def printable(value: str) -> bool:
    """Whether ``value`` is one line of visible text (:func:`on_one_line` each character)."""
    return value.isprintable() or all(map(on_one_line, value))


def one_line_text(value: Any, what: str) -> str:
    """Text that must stay on one line (titles, tags, scope keys, paths)."""
    result = text(value, what)
    if not printable(result):
        raise ValidationError(f"{what} must be one line without control characters")
    return result


def text_list(values: Iterable[Any] | None, what: str) -> list[str]:
    """A list of non-empty one-line items, in the given order, without duplicates."""
    if values is None:
        return []
    if isinstance(values, str):
        raise ValidationError(f"{what} must be a list of text items, not one string")
    result: dict[str, None] = {}  # (ordered, and each item looked up at once)
    for item in values:
        item = one_line_text(item, what).strip()
        if not item:
            raise ValidationError(f"{what} items must not be empty")
        result[item] = None
    return list(result)


def path_notes(values: Iterable[Any] | None, what: str) -> list[PathNote]:
    """Files/tests entries from ``PATH``, ``PATH:NOTE``, ``(path, note)`` or ``{path, note}``.

    A path that holds ``:`` is written with one more ``:`` after it and no note
    (``c:olon/x.py:``), since ``PATH:NOTE`` splits at the first one."""
    if values is None:
        return []
    if isinstance(values, str):
        raise ValidationError(f"{what} must be a list of entries, not one string")
    result: list[PathNote] = []
    for item in values:
        if isinstance(item, PathNote):
            path, note = item.path, item.note
        elif isinstance(item, str):
            path, note = split_entry(item)
        elif isinstance(item, dict):
            path, note = item.get("path", ""), item.get("note", "")
        else:
            try:
                path, note = item
            except (TypeError, ValueError):
                raise ValidationError(
                    f"{what} entry {item!r} is not a path or (path, note)"
                ) from None
        path = _in_repository(one_line_text(path, what + " path").strip(), what)
        note = one_line_text(note or "", what + " note").strip()
        result.append(PathNote(path=path, note=note))
    return result


def split_entry(item: str) -> tuple[str, str]:
    """``PATH:NOTE`` (or ``PATH``; ``c:olon/x.py:`` for a path holding ``:``) as
    ``(path, note)``."""
    if item.count(":") > 1 and item.endswith(":"):
        return item[:-1], ""  # (a path holding ':', with no note)
    path, _, note = item.partition(":")
    return path, note


def entries_from(
    values: Iterable[str], base: str, what: str, tops: Iterable[str] = ()
) -> list[PathNote]:
    """``PATH[:NOTE]`` entries typed in the directory ``base`` of the work tree
    (``a/b``, relative to its top; ``""``: the top) as paths relative to the top,
    as git reads paths given in a subdirectory. With ``tops`` (the work tree's
    top, absolute, as each spelling of it reads), an absolute path inside the
    work tree names the file it is; one outside it is refused."""
    tops = tuple(tops)
    result = []
    for item in values:
        path, note = split_entry(item)
        typed = one_line_text(path, what + " path").strip()
        result.append(PathNote(path=_from_here(typed, base, what, tops), note=note))
    return result


def where(top: str, cwd: str) -> tuple[tuple[str, ...], str]:
    """``(tops, here)`` for paths typed in ``cwd`` of the work tree at ``top``: the
    top's spellings (:func:`top_spellings`) and ``cwd`` relative to it, ``/``-separated
    (``""`` at the top or outside the work tree, where a path is read as given)."""
    rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(top))
    outside = rel == "." or rel == ".." or rel.startswith(".." + os.sep)
    return top_spellings(top, cwd), "" if outside else rel.replace(os.sep, "/")


def top_spellings(top: str, cwd: str) -> tuple[str, ...]:
    """The work tree's top ``top`` as an absolute path typed in ``cwd`` may spell it:
    resolved, as given, and through the symbolic links of the shell's ``$PWD`` (the
    spelling ``"$PWD/f.txt"`` gives where a folder above is a link), ``/``-separated."""
    real_top = os.path.realpath(top)
    found = [real_top, os.path.abspath(top)]
    logical = os.environ.get("PWD", "")
    real_cwd = os.path.realpath(cwd)
    if os.path.isabs(logical) and os.path.realpath(logical) == real_cwd:
        rel = os.path.relpath(real_cwd, real_top)
        if rel == ".":
            found.append(os.path.normpath(logical))
        elif not (rel == ".." or rel.startswith(".." + os.sep)):
            up = os.path.normpath(os.path.join(logical, *[".."] * len(rel.split(os.sep))))
            if os.path.realpath(up) == real_top:
                found.append(up)
    return tuple(dict.fromkeys(t.replace(os.sep, "/") for t in found))


def from_absolute(typed: str, tops: Iterable[str], what: str, why: str) -> str:
    """The absolute path ``typed`` relative to the work tree's top (``.`` for the top
    itself); ``tops`` are the top, absolute, as each spelling of it reads. One
    outside the work tree is refused, saying ``what`` it is and ``why`` it must not."""
    tops = tuple(tops)
    absolute = posixpath.normpath(typed)
    for top in tops:
        top = top.rstrip("/") or "/"
        if absolute == top or absolute.startswith(top.rstrip("/") + "/"):
            return posixpath.relpath(absolute, top)
    raise ValidationError(
        f"{what} {typed[:80]!r} is outside the work tree ({tops[0] if tops else 'none'}): {why}"
    )


def _from_here(typed: str, base: str, what: str, tops: tuple[str, ...]) -> str:
    if typed.startswith("/") and tops:
        inside = from_absolute(typed, tops, f"{what} path", "a task's files are the repository's")
        return _in_repository(inside, what, typed)
    if not base or not typed or typed.startswith("/"):
        return _in_repository(typed, what)
    return _in_repository(posixpath.normpath(f"{base}/{typed}"), what, typed, base)


def _in_repository(path: str, what: str, typed: str = "", base: str = "") -> str:
    """``path`` as git names a file of the repository: relative to its top, without
    ``./`` or ``a/../`` steps. A path that leaves the repository, names a
    directory (``.``, ``..``, ``a/``) or steps into a ``.git`` (in any case, as git
    refuses it) is refused, quoted as ``typed`` (what the user typed, ``path`` when
    the same), read from the directory ``base`` when given."""
    typed = typed or path
    if not path:
        raise ValidationError(f"{what} entry has an empty path")
    if typed == path and "/" not in path and path not in (".", "..") and not _git_dir(path):
        return path  # (most: a name, or a path git lists as it is)
    clean = posixpath.normpath(path)
    if path.startswith("/"):
        why = "is absolute"
    elif clean == ".." or clean.startswith("../"):
        why = "leaves the repository"
    elif any(_git_dir(part) for part in clean.split("/")):
        why = "names a file in .git (in any case), which git never tracks"
    elif clean == "." or typed.endswith("/") or typed.rpartition("/")[2] in (".", ".."):
        why = "names a directory, not a file"
    else:
        return clean
    where = (
        f"from the current directory ({base[:80]}/), as git reads it"
        if base
        else "relative to the repository's top, as git ls-files prints it"
    )
    raise ValidationError(f"{what} path {typed[:80]!r} {why}: give a file's path {where}")


def _git_dir(name: str) -> bool:
    """Whether a path component is one git refuses as its own directory: ``.git`` in
    any case, and as NTFS reads it (trailing dots and spaces dropped, ``git~1``)."""
    folded = name.casefold()
    return folded.rstrip(". ") == ".git" or folded == "git~1"


def body_bytes(body: Any, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> bytes:
    """A context body as UTF-8 bytes: text only, no NUL, at most ``max_bytes``."""
    if isinstance(body, str):
        try:
            data = body.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError("context body is not valid Unicode text") from None
    elif isinstance(body, bytes | bytearray | memoryview):
        data = bytes(body)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValidationError(
                f"context body is not valid UTF-8 text (bad byte at offset {exc.start}); "
                "binary data cannot be context"
            ) from None
    else:
        raise ValidationError(f"context body must be text, not {type(body).__name__}")
    if not data.strip():
        raise ValidationError("context body is empty: there is nothing to attach")
    if len(data) > max_bytes:
        raise ValidationError(
            f"context body is {len(data)} bytes, over the limit of {max_bytes} "
            "(raise hydrate.maxBodyBytes to allow it)"
        )
    if b"\0" in data:
        offset = data.index(b"\0")
        raise ValidationError(
            f"context body contains a NUL byte at offset {offset}; binary data cannot be context"
        )
    return data


#: The longest holder name (``--as NAME`` or a git identity) a claim records.
MAX_HOLDER_CHARS: Final = 256


def holder(value: Any) -> str:
    """Who holds a task: one printable line of 1-256 characters."""
    result = one_line_text(value, "holder name").strip()
    if not result:
        raise ValidationError("holder name must not be empty")
    if len(result) > MAX_HOLDER_CHARS:
        raise ValidationError(f"holder name is longer than {MAX_HOLDER_CHARS} characters")
    return result


def dependencies(values: Iterable[Any] | None, task: str) -> list[str]:
    """The ids ``task`` depends on, in order, without repeats; never itself."""
    result: dict[str, None] = {}  # (ordered, and each id looked up at once)
    for value in values or ():
        if isinstance(value, str):
            value = value.strip()
        dependency = task_id(value)
        if dependency == task:
            raise ValidationError(f"task {task} cannot depend on itself")
        result[dependency] = None
    return list(result)


def parent(value: Any, task: str) -> str:
    """The id of ``task``'s parent (``""``: none); never itself."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return ""
    found = task_id(value.strip() if isinstance(value, str) else value)
    if found == task:
        raise ValidationError(f"task {task} cannot be its own parent")
    return found


_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
_DURATION_UNITS: Final = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration(value: Any, what: str) -> float:
    """A positive span of time: seconds, or a number with ``s``, ``m``, ``h``, ``d`` or ``w``."""
    text_value = str(value).strip().lower()
    match = _DURATION.fullmatch(text_value)
    seconds = float(match[1]) * _DURATION_UNITS[match[2]] if match else 0.0
    if not match or seconds <= 0 or not math.isfinite(seconds):
        raise ValidationError(
            f"{what} must be a positive duration such as 90s, 30m, 2h, 1d or 1w, "
            f"not {shown_value(value)}"
        )
    return seconds


#: A stored date's shape, as :func:`git_hydrate.taskrefs.iso_utc` writes it.
_STAMP: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def timestamp(value: str, what: str) -> str:
    """A stored date (``created_at``, ``claimed_at``, a checkpoint's ``at``): a
    moment in UTC as git-hydrate writes it, ``2026-11-30T07:14:27Z``, that the
    calendar has (no month 13, no 31 February); or ``""``, for none."""
    if value and (not _STAMP.fullmatch(value) or not _on_the_calendar(value)):
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise ValidationError(
            f"{what} {shown!r} is not a date as git-hydrate writes them (2026-11-30T07:14:27Z)"
        )
    return value


def _on_the_calendar(stamp: str) -> bool:
    try:
        datetime.fromisoformat(stamp[:-1])
    except ValueError:
        return False
    return True
