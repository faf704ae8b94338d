"""Long texts in parts: each part of a prompt or an attachment fits one answer.

A text is cut into parts greedily from its start: each part is the longest
run that fits the answer's budget once wrapped (:func:`cut_points`), ending at
a preferred place where one does (between attachments, for a prompt), else at
the end of a line, else between two characters. Parts are numbered from 1 and
the cuts depend only on the text and the budget, so asking for part N again
gives the same part as long as the text has not changed. The parts of a prompt
joined, each without its trailer (:func:`prompt_page`), are the prompt. Each
prompt part's call for the next carries a ``version``, a digest of the prompt
and of the budget it was cut for: a part asked with a version the prompt as it
is now does not have is refused (the task changed between two calls: its parts
would not join), rather than cut from another prompt.

A small memory keeps the last cuts made, so that the calls for parts 2, 3, ...
of one text do not measure it again.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Final

from ..errors import ValidationError
from .answers import AnswerBudget, json_text

__all__ = ["PART_TRAILER", "VERSION_DIGITS", "cut_points", "prompt_page", "wrapped_page"]

#: How a part that is not the whole text ends: ``\n\n[part N of M ...]\n``.
PART_TRAILER: Final = "\n\n[part "
#: The hex digits of a cutting's version (the ``version`` a part's next call carries).
VERSION_DIGITS: Final = 16
#: Where a prompt is preferably cut: before an attachment (any format) or a section.
_PROMPT_BREAKS: Final = re.compile(
    r"\n(?=### |## |<document |</documents>|--- (?:BEGIN|END) UNTRUSTED CONTEXT)"
)
_LINE_ENDS: Final = re.compile(r"\n")
#: Cuts remembered: (text digest, budget, wrapping) -> the end of each part.
_MEMORY: OrderedDict[tuple[str, ...], list[int]] = OrderedDict()
_MEMORY_SIZE: Final = 16
_MEMORY_LOCK: Final = threading.Lock()


def _largest(candidates: Sequence[int], start: int, fits: Callable[[int], bool]) -> int | None:
    """The largest candidate end past ``start`` whose part fits (a binary search over
    ``candidates``, sorted; a longer part is assumed to measure no less)."""
    low = _bisect_right(candidates, start)
    if low == len(candidates) or not fits(candidates[low]):
        return None
    high = len(candidates) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if fits(candidates[middle]):
            low = middle
        else:
            high = middle - 1
    return candidates[low]


def _bisect_right(values: Sequence[int], value: int) -> int:
    low, high = 0, len(values)
    while low < high:
        middle = (low + high) // 2
        if values[middle] <= value:
            low = middle + 1
        else:
            high = middle
    return low


def cut_points(
    text: str,
    fits: Callable[[str], bool],
    preferred: Sequence[int] = (),
    most: int | None = None,
) -> list[int]:
    """The end of each part of ``text``: each ``text[start:end]`` satisfies ``fits``.

    ``preferred`` ends (sorted offsets) are taken when the part they end is at
    least half as long as the longest one ending a line. ``most``: no part is
    longer than that many characters (a byte cap: a character is at least a
    byte), so that a long text is never measured whole again and again.

    Raises:
        ValidationError: not even one character fits.
    """
    lines = [m.end() for m in _LINE_ENDS.finditer(text)] + [len(text)]
    wanted = [*preferred, len(text)]
    ends: list[int] = []
    start = 0
    while start < len(text):
        reach = len(text) if most is None else min(len(text), start + most)
        if reach == len(text) and fits(text[start:]):
            ends.append(len(text))
            break

        def part_fits(end: int, start: int = start, reach: int = reach) -> bool:
            return end <= reach and fits(text[start:end])

        by_line = _largest(lines, start, part_fits)
        by_break = _largest(wanted, start, part_fits)
        if by_break is not None and (by_line is None or by_break - start >= (by_line - start) / 2):
            end = by_break
        elif by_line is not None:
            end = by_line
        else:
            end = _largest(range(start + 1, reach + 1), start, part_fits) or 0
            if end <= start:
                raise ValidationError("not one character fits this answer's budget")
        ends.append(end)
        start = end
    return ends or [0]


def _remembered(key: tuple[str, ...], make: Callable[[], list[int]]) -> list[int]:
    with _MEMORY_LOCK:  # (the server's calls run in threads: .workers)
        found = _MEMORY.get(key)
        if found is not None:
            _MEMORY.move_to_end(key)
            return found
    found = make()  # (not under the lock: two calls cut two texts at once)
    with _MEMORY_LOCK:
        _MEMORY[key] = found
        while len(_MEMORY) > _MEMORY_SIZE:
            _MEMORY.popitem(last=False)
    return found


def _check_part(part: int, total: int, what: str) -> None:
    if part < 1 or part > total:
        raise ValidationError(f"{what} has {total} part{'s' if total != 1 else ''}, not {part}")


def _trailer(part: int, total: int, tool: str, task_id: str, version: str) -> str:
    if part == total:
        return f"{PART_TRAILER}{part} of {total}: the last]\n"
    call = json_text({"id": task_id, "part": part + 1, "version": version})
    return f"{PART_TRAILER}{part} of {total}; the next: {tool} {call}]\n"


def _version(key: tuple[str, ...]) -> str:
    """What names one cutting of one text: its digest and the budget's measures."""
    return hashlib.sha256("\0".join(key).encode()).hexdigest()[:VERSION_DIGITS]


def _check_version(asked: str | None, version: str, what: str, task_id: str) -> None:
    if asked is not None and asked != version:
        again = json_text({"id": task_id})
        raise ValidationError(
            f"{what} changed since that part was cut (version {asked[:VERSION_DIGITS]}, "
            f"now {version}): its parts would not join; start again from part 1: "
            f"get_prompt {again}"
        )


def _key(text: str, budget: AnswerBudget, what: str) -> tuple[str, ...]:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return (digest, str(budget.limit), budget.unit, budget.encoding, str(budget.byte_cap), what)


def prompt_page(
    text: str, budget: AnswerBudget, part: int, task_id: str, version: str | None = None
) -> str:
    """Part ``part`` of the prompt ``text``: the whole prompt when it fits, else
    its ``part``-th slice ending with ``[part N of M: ...]``, whose call for the
    next part carries the version of the cutting (:func:`_version`).

    Raises:
        ValidationError: no such part, not one character fits, or ``version``
            (given) is not this text's cutting: the prompt changed between parts.
    """
    key = _key(text, budget, "prompt")
    _check_version(version, _version(key), f"the prompt of {task_id}", task_id)
    if budget.fits(text):
        _check_part(part, 1, f"the prompt of {task_id}")
        return text
    worst = _trailer(99998, 99999, "get_prompt", task_id, _version(key))

    def make() -> list[int]:
        breaks = [m.start() + 1 for m in _PROMPT_BREAKS.finditer(text)]
        return cut_points(text, lambda piece: budget.fits(piece + worst), breaks, budget.byte_cap)

    ends = _remembered(key, make)
    _check_part(part, len(ends), f"the prompt of {task_id}")
    start = ends[part - 2] if part > 1 else 0
    trailer = _trailer(part, len(ends), "get_prompt", task_id, _version(key))
    return text[start : ends[part - 1]] + trailer


def wrapped_page(
    text: str,
    budget: AnswerBudget,
    part: int,
    wrap: Callable[[str, int, int], str],
    what: str,
    variant: str = "",
) -> str:
    """Part ``part`` of ``text``, each part given to ``wrap(piece, part, total)``.

    ``wrap`` must not grow by more than the wrapping of part 99998 of 99999 does.
    ``variant`` names the wrapping (a format) where ``what`` does not: cuts made for
    another are not remembered for this one.

    Raises:
        ValidationError: no such part, or not one character fits.
    """
    if budget.fits(wrap(text, 1, 1)):
        _check_part(part, 1, what)
        return wrap(text, 1, 1)

    def make() -> list[int]:
        def measure(piece: str) -> bool:
            return budget.fits(wrap(piece, 99998, 99999))

        return cut_points(text, measure, (), budget.byte_cap)

    ends = _remembered(_key(text, budget, f"{what}\0{variant}"), make)
    _check_part(part, len(ends), what)
    start = ends[part - 2] if part > 1 else 0
    return wrap(text[start : ends[part - 1]], part, len(ends))
