"""The characters one line of text may hold as written, and no more. Pure.

Lowest in the layers, so that the command line's fast path (``console``) and the
validation of every field (``validate``) decide by the same rule.
"""

from __future__ import annotations

import unicodedata

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Final

__all__ = ["ALLOWED_INVISIBLE", "on_one_line"]

#: Invisible characters that real titles and tags carry: the zero-width joiner of
#: emoji sequences, the soft hyphen, and the left-to-right and right-to-left marks
#: of Hebrew and Arabic text, which set the direction of the characters beside them
#: and reorder nothing beyond. The Arabic letter mark is left out (after it digits
#: read as Arabic numbers: "\u061c10-20" shows as 20-10); bidi embeddings,
#: overrides and isolates, zero-width spaces and the like stay refused.
ALLOWED_INVISIBLE: Final = frozenset("\u200d\u00ad\u200e\u200f")


def on_one_line(ch: str) -> bool:
    """Whether the character ``ch`` may stand in one line of text as written: what
    Python calls printable, :data:`ALLOWED_INVISIBLE`, the space separators
    (Unicode's ``Zs``: the no-break spaces of French punctuation, the ideographic
    space), which show as the blank they are, and a code point this Python's
    Unicode database does not know yet (``Cn``) but for the noncharacters. Line and
    paragraph separators (``Zl``, ``Zp``), controls and other format characters
    are not.

    (Python 3.11 knows Unicode 14, 3.12 Unicode 15: the emoji 🫨, U+1FAE8, was no
    character to 3.11, which refused a title with it and, on a pull, rewrote one a
    newer Python wrote.)
    """
    if ch.isprintable() or ch in ALLOWED_INVISIBLE:
        return True
    category = unicodedata.category(ch)
    if category == "Cn":
        code = ord(ch)
        return not (0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE)
    return category == "Zs"
