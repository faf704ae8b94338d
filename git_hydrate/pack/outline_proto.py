"""Outlines of Protocol Buffers by their lines: no grammar of it is kept as a wheel.

A ``.proto`` file declares services, their rpcs, messages, enums and oneofs, one
declaration a line in every formatted file. The outline keeps the file's
``syntax``, ``edition``, ``package`` and ``import`` statements, the first line of each
``service``, ``rpc``, ``message``, ``enum``, ``oneof`` and ``extend`` declaration at
any depth, and the lines that close their blocks; fields and options are elided, a
marker standing for each run of them (one step in when the line before opened a
block), and so are comments, with no marker. Braces are counted outside strings
and comments. A file that declares no service, message or enum has no outline
(``None``). Pure; no extra needed.
"""

from __future__ import annotations

import re
from typing import Final

from .outline_lines import ELLIPSIS, LINE_SPLIT, cap, indent_of, marker

__all__ = ["proto_outline"]

#: A statement of the file itself, kept at the top level only.
_FILE: Final = re.compile(r"(?:syntax|edition|package|import)\b")
#: A declaration, kept at any depth; the first three make an outline worth having.
_DECLARATION: Final = re.compile(r"[ \t]*(?:service|rpc|message|enum|oneof|extend)[ \t]")
_TYPES: Final = re.compile(r"[ \t]*(?:service|message|enum)[ \t]")
#: A line that only closes a block.
_CLOSE: Final = re.compile(r"[ \t]*\}[ \t]*;?[ \t]*")
#: What a brace count skips: a string, a line comment, a block comment (or its start).
_SKIPPED: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|//.*|/\*.*?(?:\*/|$)')


def proto_outline(body: str) -> list[str] | None:
    """The outline of a Protocol Buffers file (see the module doc)."""
    lines = LINE_SPLIT.split(body)
    out: list[str] = []
    kept_blocks: list[bool] = []  # per open brace: whether a kept line opened it
    pending = False  # a kept declaration whose line did not end it: its block is kept
    elided = False  # non-blank lines left out since the last kept one
    opened = False  # the last kept line opened a block (or continues on the next)
    in_comment = False
    declares = False
    for line in lines:
        code, in_comment = _code(line, in_comment)
        depth_before = len(kept_blocks)
        # (read in the code: a declaration commented out is none, "}  // Foo" closes)
        keep = bool(_DECLARATION.match(code)) or (depth_before == 0 and bool(_FILE.match(code)))
        closes = bool(_CLOSE.fullmatch(code)) and depth_before > 0 and kept_blocks[-1]
        if keep or closes:
            if elided:
                indent = indent_of(out[-1]) if out else ""
                out.append(marker(indent) if opened else indent + ELLIPSIS)
            out.append(cap(line))
            elided = False
            declares = declares or bool(_TYPES.match(code))
        elif code.strip():  # (a comment alone is no elided declaration)
            elided = True
        pending = (pending and not keep) or (keep and bool(_DECLARATION.match(code)))
        for char in code:
            if char == "{":
                kept_blocks.append(keep or pending)
                pending = False
            elif char == "}" and kept_blocks:
                kept_blocks.pop()
            elif char == ";":
                pending = False
        if keep or closes:
            opened = pending or len(kept_blocks) > depth_before
    if elided and out:
        indent = indent_of(out[-1])
        out.append(marker(indent) if opened else indent + ELLIPSIS)
    return out if declares else None


def _code(line: str, in_comment: bool) -> tuple[str, bool]:
    """The part of ``line`` a brace count reads (strings and comments taken out),
    and whether a block comment is still open at its end."""
    if in_comment:
        end = line.find("*/")
        if end < 0:
            return "", True
        line = line[end + 2 :]
    if not any(c in line for c in "\"'/"):
        return line, False
    parts: list[str] = []
    at = 0
    for found in _SKIPPED.finditer(line):
        parts.append(line[at : found.start()])
        at = found.end()
        if found.group().startswith("/*") and not found.group().endswith("*/"):
            return "".join(parts), True
    parts.append(line[at:])
    return "".join(parts), False
