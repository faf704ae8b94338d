"""Outlines of Erlang by its lines: no grammar of Erlang is kept as a wheel.

Erlang puts every form at column 0 and indents everything inside one, so the
forms are found by their first character: an attribute (``-module``,
``-export``, ``-spec``, ``-record``, ...) starts with ``-``, a function clause
with its name, a lower-case atom (or a quoted one) followed by ``(``. The
outline keeps each attribute (a ``-spec`` or another attribute of up to
:data:`_SHORT` lines whole, a longer one by its first line and a marker) and
the first line of each function's first clause, a marker for its body and the
clauses after it (a function on one line: that line). A line inside a string or
a comment that starts at column 0 is taken as a form: rare in formatted code,
and the outline is only made of the body's own lines. A file with no form has
no outline (``None``). Pure; no extra needed.
"""

from __future__ import annotations

import re
from typing import Final

from .outline_lines import LINE_SPLIT, cap, marker

__all__ = ["erlang_outline"]

_CLAUSE: Final = re.compile(r"([a-z][A-Za-z0-9_@]*|'(?:[^'\\]|\\.)+')\(")
#: An attribute of at most this many lines is kept whole (a -spec: always).
_SHORT: Final = 6
#: A form ends with a full stop at the end of its line.
_END: Final = re.compile(r"\.\s*\Z")


def _code(line: str) -> str:
    """The line without its comment (only when no string or character literal
    could hold a ``%``)."""
    if any(c in line for c in "\"'$"):
        return line
    return line.split("%", 1)[0]


def _form_end(lines: list[str], start: int) -> int:
    """The last line of the attribute starting at ``start``: the one ending with
    a full stop, or the line before the next form."""
    for i in range(start, len(lines)):
        if _END.search(_code(lines[i])):
            return i
        if i > start and lines[i][:1] not in ("", " ", "\t", "%"):
            return i - 1
    return len(lines) - 1


def erlang_outline(body: str) -> list[str] | None:
    """The outline of an Erlang module (see the module's doc)."""
    lines = LINE_SPLIT.split(body)
    out: list[str] = []
    last_name: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("-"):
            end = _form_end(lines, i)
            if end - i < _SHORT or line.startswith("-spec"):
                out += [cap(text) for text in lines[i : end + 1] if text.strip()]
            else:
                out += [cap(line), marker("")]
            last_name = None
            i = end + 1
            continue
        found = _CLAUSE.match(line)
        if found is not None:
            if found.group(1) != last_name:
                out.append(cap(line))
                if not _END.search(_code(line)):  # (a one-line function is whole)
                    out.append(marker(""))
            last_name = found.group(1)
        i += 1
    if not out:
        return None
    if sum(len(text) + 1 for text in out) < len(body):
        return out
    # never larger than the file: a short one's own lines (its markers would not pay)
    return [cap(text) for text in lines if text.strip()]
