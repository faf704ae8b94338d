"""The lines an outline is made of: text taken from the body, and elision markers."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["ELLIPSIS", "LINE_SPLIT", "MAX_LINE", "cap", "indent_of", "is_marker", "marker"]

ELLIPSIS: Final = "..."
MAX_LINE: Final = 240  # longer lines are cut to a prefix of this many characters
LINE_SPLIT: Final = re.compile(r"\r\n|\r|\n")


def is_marker(line: str) -> bool:
    """True for an elision marker line (the only lines not taken from the body)."""
    return line.strip() == ELLIPSIS


def marker(indent: str) -> str:
    """The elision marker one step inside ``indent``."""
    step = "\t" if "\t" in indent else "    "
    return indent + step + ELLIPSIS


def indent_of(line: str) -> str:
    """The leading blanks of ``line``."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def cap(line: str) -> str:
    """``line`` cut to :data:`MAX_LINE` characters."""
    return line[:MAX_LINE].rstrip()
