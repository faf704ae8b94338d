"""Terminal codes and other control characters in imported text. Pure.

An issue's body often holds pasted terminal output, coloured: ``ESC[31mError:
ESC[0m``. A task's text may hold no control character but line feeds, returns
and tabs, so such an issue was left out whole. The escape sequences are taken
out (what they colour stays), and any other control character with them, and
from a line field (a title, a criterion, a tag) the invisible characters one
line may not hold (a zero-width space pasted from a chat, a bidi override); the
item says so in a warning.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final, Protocol, TypeVar

from ..chars import on_one_line

__all__ = ["without_controls"]

#: A terminal escape sequence: CSI (``ESC [ ... m``), OSC (``ESC ] ... BEL`` or
#: ``ESC ] ... ESC \``), or ESC and one character; then any other control
#: character but a line feed, a return or a tab (C0, DEL, C1).
_CONTROLS: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[ -~]?"
    r"|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]"
)
_FIELDS: Final = ("title", "objective", "acceptance")
#: What a line field keeps of what :func:`.chars.on_one_line` refuses: the line
#: breaks and tabs folded into a space later, and lone surrogates, refused later
#: as no Unicode text (never taken out in silence).
_FOLDED: Final = frozenset("\t\n\r\u2028\u2029")


class _Item(Protocol):
    """What this module reads of an import's item (:class:`.formats.Item`)."""

    criteria: list[str]
    tags: list[str]
    warnings: list[str]


T = TypeVar("T", bound=_Item)


def without_controls(item: T) -> T:
    """``item`` with the control characters of its text taken out, and a warning
    naming the fields they were taken from; ``item`` itself when it has none."""
    changes: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(item, name)
        cleaned = _line(value) if name == "title" else _CONTROLS.sub("", value)
        if cleaned != value:
            changes[name] = cleaned
    for name in ("criteria", "tags"):
        values = getattr(item, name)
        cleaned_list = [_line(value) for value in values]
        if cleaned_list != values:
            changes[name] = cleaned_list
    if not changes:
        return item
    named = ", ".join(changes)
    warning = f"terminal codes and control characters taken out of its {named}"
    return dataclasses.replace(item, **changes, warnings=[*item.warnings, warning])  # type: ignore[type-var]


def _line(value: str) -> str:
    """``value``, a line field, without its control characters and the invisible
    characters one line may not hold (a zero-width space pasted from a chat, a bidi
    override): :func:`.chars.on_one_line`'s rule, which would refuse the item."""
    value = _CONTROLS.sub("", value)
    if value.isprintable():
        return value
    return "".join(
        ch for ch in value if on_one_line(ch) or ch in _FOLDED or "\ud800" <= ch <= "\udfff"
    )
