"""Answers that fit: every text ``git hydrate mcp`` sends is measured against one budget.

The budget is ``hydrate.mcpMaxTokens`` (default 20,000), counted exactly in
``hydrate.encoding`` when the ``tokens`` extra is installed. Without it the
same number is turned into bytes at :data:`BYTES_PER_TOKEN` (5/2): 50,000
bytes at the default, which is also Claude Code's 50,000-character line past
which it moves a tool result to a file (a byte count is never below the
character count). Measured on this repository's own sources, tests and docs,
o200k_base averages 3.5-4.0 bytes per token, so the byte budget holds under the
token cap for code and prose; text of 2.5 bytes per token or fewer (base64,
dense CJK) needs the extra for an exact bound.

An answer that does not fit whole keeps what fits, in order, and ends with
a summary of what it left out. Nothing here prints or knows about MCP: the
server (:mod:`.server`) only sends these texts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final, NamedTuple

from ..errors import ValidationError
from ..ledger import Ledger

__all__ = [
    "BYTES_PER_TOKEN",
    "SURFACE_FORMAT",
    "AnswerBudget",
    "answer_budget",
    "fit_items",
    "fit_prompt",
    "json_text",
    "surface_format",
]

#: Bytes allowed per token of ``hydrate.mcpMaxTokens`` when tokens cannot be counted.
BYTES_PER_TOKEN: Final = Fraction(5, 2)
#: The prompt format of every surface an agent reads (the MCP server, the agent
#: bridges) unless ``hydrate.promptFormat`` is set: markdown, whose fences no body
#: can close, and which keeps each body byte for byte (xml's escaping of every
#: ``<``, ``>`` and ``&`` costs code a few per cent of the budget and changes
#: what the agent reads). See docs/packing.md.
SURFACE_FORMAT: Final = "markdown"
#: How many times the prompt is packed again when its summary pushed it over.
_REPACKS: Final = 4


class AnswerBudget(NamedTuple):
    """The limit of one answer: ``limit`` tokens (``meter`` counts them) or bytes."""

    limit: int
    unit: str  # "tokens" or "bytes"
    encoding: str
    meter: Any  # a tokens.Meter, or None for a byte budget

    def size(self, text: str) -> int:
        """The text's size in the budget's unit."""
        if self.meter is None:
            return len(text.encode("utf-8"))
        return int(self.meter.count(text))

    def fits(self, text: str) -> bool:
        """Whether ``text`` is within the budget."""
        if self.meter is not None and len(text.encode("utf-8")) <= self.limit:
            return True  # a token is at least one byte
        return self.size(text) <= self.limit

    def describe(self) -> str:
        """``20,000 tokens (o200k_base)`` or ``50,000 bytes``."""
        if self.unit == "tokens":
            return f"{self.limit:,} tokens ({self.encoding})"
        return f"{self.limit:,} bytes"


def answer_budget(
    ledger: Ledger, max_tokens: int | None = None, *, count_tokens: bool | None = None
) -> AnswerBudget:
    """The budget of one answer: ``max_tokens`` or ``hydrate.mcpMaxTokens``.

    Tokens are counted when the ``tokens`` extra is installed (``count_tokens``
    forces either way; forcing it on without the extra is refused); otherwise
    the budget is :data:`BYTES_PER_TOKEN` bytes per token.
    """
    from ..pack.tokens import Meter

    tokens = max_tokens if max_tokens is not None else ledger.settings.size("hydrate.mcpMaxTokens")
    encoding = ledger.settings.text("hydrate.encoding") or "o200k_base"
    meter = None
    if count_tokens is not False:
        try:
            meter = Meter(encoding)
        except ValidationError:
            if count_tokens:
                raise
    if meter is None:
        return AnswerBudget(int(tokens * BYTES_PER_TOKEN), "bytes", encoding, None)
    return AnswerBudget(tokens, "tokens", encoding, meter)


def json_text(data: Any) -> str:
    """Compact JSON in the order given (so a summary put last stays last)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


# -- the prompt ---------------------------------------------------------------------------


def _prompt_note(task_id: str, result: Mapping[str, Any], budget: AnswerBudget) -> str:
    """The summary that ends a prompt that left something out ("" when nothing was)."""
    omitted: Sequence[Mapping[str, Any]] = result["omitted"]
    shrunk: Sequence[Mapping[str, Any]] = result.get("shrunk") or []
    if not omitted and not shrunk:
        return ""
    reasons = Counter(str(item["reason"]) for item in omitted)
    by_reason = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    parts = [
        f"kept {result['kept']} of {result['attachments']} attachments "
        f"to fit this answer's budget of {budget.describe()}",
        f"omitted {len(omitted)}" + (f" ({by_reason})" if by_reason else ""),
    ]
    if shrunk:
        parts.append(f"{len(shrunk)} kept as outlines")
    listed = [str(item["source"]) for item in omitted[:5]]
    if listed:
        more = f" and {len(omitted) - len(listed)} more" if len(omitted) > len(listed) else ""
        parts.append("first omitted: " + ", ".join(listed) + more)
    parts.append(f"the whole list: git hydrate prompt {task_id} -v")
    return "\n\n[omitted] " + "; ".join(parts) + ".\n"


def surface_format(ledger: Ledger) -> str:
    """The prompt format an agent surface uses: ``hydrate.promptFormat`` when it is
    set, else :data:`SURFACE_FORMAT`."""
    settings = ledger.settings
    if settings.has("hydrate.promptFormat"):
        return settings.text("hydrate.promptFormat") or SURFACE_FORMAT
    return SURFACE_FORMAT


def fit_prompt(ledger: Ledger, task_id: str, budget: AnswerBudget) -> str:
    """The task's prompt packed within ``budget``, ending with the omission summary.

    The prompt is packed by :meth:`Ledger.prompt` in the surfaces' format
    (:func:`surface_format`) with the answer's budget (tokens, or bytes) less
    the summary's own size, packing again with less room when the summary does
    not fit beside it.

    Raises:
        ValidationError: the task's fields alone do not fit the budget.
    """
    room = budget.limit
    shape = surface_format(ledger)
    for _ in range(_REPACKS):
        if budget.unit == "tokens":
            result = ledger.prompt(
                task_id, max_tokens=room, encoding=budget.encoding, format=shape
            )
        else:
            result = ledger.prompt(task_id, max_bytes=room, format=shape)
        note = _prompt_note(task_id, result, budget)
        text = result["prompt"] + note
        if (not note and room == budget.limit) or budget.fits(text):
            # (the packer holds the prompt alone within ``room``)
            return text
        over = budget.size(text) - budget.limit
        room -= max(over, 16)
        if room < 1:
            break
    raise ValidationError(
        f"the prompt of {task_id} does not fit this answer's budget of {budget.describe()}"
    )


# -- lists --------------------------------------------------------------------------------


def fit_items(
    budget: AnswerBudget,
    head: Mapping[str, Any],
    key: str,
    items: Sequence[Any],
    summary: Callable[[int], Mapping[str, Any]],
) -> str:
    """``head`` with as many of ``items`` (in order) under ``key`` as fit, as JSON.

    When some are left out the answer ends with ``"omitted": summary(left_out)``.
    The count kept is the largest that fits (a binary search measuring the
    whole text each time, so the bound is exact in tokens too).

    Raises:
        ValidationError: ``head`` alone (with the summary) does not fit.
    """

    def text_with(kept: int) -> str:
        data = dict(head)
        data[key] = list(items[:kept])
        if kept < len(items):
            data["omitted"] = dict(summary(len(items) - kept))
        return json_text(data)

    whole = text_with(len(items))
    if budget.fits(whole):
        return whole
    # Bytes bound the search first: in a token budget no more than 16 bytes a
    # token are needed to place the upper end, and bytes cost nothing to count.
    bytes_cap = budget.limit * (16 if budget.unit == "tokens" else 1)
    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if len(text_with(middle).encode("utf-8")) <= bytes_cap:
            low = middle
        else:
            high = middle - 1
    high, low = low, 0
    if not budget.fits(text_with(low)):
        raise ValidationError(f"this answer does not fit its budget of {budget.describe()}")
    while low < high:
        middle = (low + high + 1) // 2
        if budget.fits(text_with(middle)):
            low = middle
        else:
            high = middle - 1
    return text_with(low)
