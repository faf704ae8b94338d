"""Terminal codes and other control characters in imported text. Pure.

An issue's body often holds pasted terminal output, coloured: ``ESC[31mError:
ESC[0m``. A task's text may hold no control character but line feeds, returns
and tabs, so such an issue was left out whole. The escape sequences are taken
out (what they colour stays), and any other control character with them; the
item says so in a warning.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Final, Protocol, TypeVar

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


class _Item(Protocol):
    """What this module reads of an import's item (:class:`.formats.Item`)."""

    criteria: list[str]
    warnings: list[str]


T = TypeVar("T", bound=_Item)


def without_controls(item: T) -> T:
    """``item`` with the control characters of its text taken out, and a warning
    naming the fields they were taken from; ``item`` itself when it has none."""
    changes: dict[str, Any] = {}
    for name in _FIELDS:
        value = getattr(item, name)
        cleaned = _CONTROLS.sub("", value)
        if cleaned != value:
            changes[name] = cleaned
    criteria = [_CONTROLS.sub("", c) for c in item.criteria]
    if criteria != item.criteria:
        changes["criteria"] = criteria
    if not changes:
        return item
    named = ", ".join(changes)
    warning = f"terminal codes and control characters taken out of its {named}"
    return dataclasses.replace(item, **changes, warnings=[*item.warnings, warning])  # type: ignore[type-var]
