"""Reading the JSON another tool wrote: every value as it reads, or a refusal. Pure.

Python's reader takes input it should not: it recurses once a level (1,000
levels exhaust it), gives up on a number of more than 4,300 digits with a bare
``ValueError``, and keeps the last of a key met twice in one object, so that
``{"number": 1, "number": 2}`` would come in as 2 while whoever read the file
saw 1 first (a pull refuses a ``task.json`` so written for the same reason).
:func:`loads` refuses each of them with its own exception.
"""

from __future__ import annotations

import json
from typing import Any, Final

from ..codec import MAX_JSON_DEPTH, check_depth
from ..errors import CorruptData

__all__ = ["TOO_DEEP", "KeyTwice", "TooDeep", "loads", "said"]

#: What a document nested deeper than any of these formats is refused as (Python's
#: reader recurses once a level: 1,000 levels exhaust it).
TOO_DEEP: Final = f"unreadable JSON: nested deeper than {MAX_JSON_DEPTH} levels"


class TooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` levels."""


class KeyTwice(ValueError):
    """JSON that holds a key twice in one object (the message names the first)."""


def loads(text: str) -> Any:
    """``text`` read as JSON, refusing one nested too deeply before reading it.

    Raises:
        TooDeep: nested deeper than :data:`MAX_JSON_DEPTH` levels.
        json.JSONDecodeError: not JSON.
        KeyTwice: JSON, with a key twice in one object.
    """
    try:
        check_depth(text.encode("utf-8", "surrogatepass"), "input")
    except CorruptData:
        raise TooDeep(TOO_DEEP) from None
    twice: list[str] = []

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(pairs)
        if len(value) < len(pairs) and not twice:
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    twice.append(key)
                    break
                seen.add(key)
        return value

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError:
        raise
    except ValueError:  # (Python reads no integer of more than 4,300 digits)
        raise json.JSONDecodeError("a number of more digits than can be read", text, 0) from None
    if twice:  # (after reading: input that is no JSON at all is said to be that)
        raise KeyTwice(f"key {twice[0]!r} appears twice in one object")
    return data


def said(exc: json.JSONDecodeError) -> str:
    """What the reader found wrong, without a position: some of its messages end in
    "at", leaving the position to the caller ("Invalid control character at")."""
    return exc.msg.removesuffix(" at")
