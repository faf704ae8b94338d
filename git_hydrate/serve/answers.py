"""Answers that fit: every text ``git hydrate mcp`` sends is measured against one budget.

The budget is ``hydrate.mcpMaxTokens`` (default 8,000), counted exactly in
``hydrate.encoding`` when the ``tokens`` extra is installed, and never more than
:data:`BYTES_PER_TOKEN_CAP` (5) bytes a token. Without the extra the same number
is turned into bytes at :data:`BYTES_PER_TOKEN` (5/2). The default is chosen
from Claude Code's documented limits on an MCP tool result: it warns past
10,000 tokens, refuses past 25,000 (``MAX_MCP_OUTPUT_TOKENS``) and moves a
result over 50,000 characters to a file. 8,000 tokens is a fifth under the
warning, and its byte cap (40,000 bytes; a byte count is never below the
character count) a fifth under the file limit. Measured on this repository's
own sources, tests and docs, o200k_base averages 3.5-4.0 bytes per token, so
the byte budget holds under the token cap for code and prose; text of 2.5
bytes per token or fewer (base64, dense CJK) needs the extra for an exact bound.

An answer that does not fit whole keeps what fits, in order, and says what it
left out: a list ends with an ``omitted`` summary; a prompt names what it left
out inside its own untrusted block (``### Not included``), never after its
Output contract; a long text is sent in parts instead
(:mod:`.pages`). Errors are bounded too (:func:`error_text`). Nothing here
prints or knows about MCP: the server (:mod:`.server`) only sends these texts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Final, NamedTuple

from ..errors import TooSmall, ValidationError
from ..ledger import Ledger
from ..settings import PROMPT_FORMATS
from ..validate import folded, on_one_line, shown_value

__all__ = [
    "BYTES_PER_TOKEN",
    "BYTES_PER_TOKEN_CAP",
    "ERROR_CHARS",
    "MIN_TOKENS",
    "SURFACE_FORMAT",
    "AnswerBudget",
    "answer_budget",
    "error_text",
    "fit_items",
    "fit_prompt",
    "json_text",
    "shown_value",
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
#: Bytes allowed per token when they are counted: above what code and prose take
#: (3.5-4.0), so it binds only on unusual text, and at the default 8,000 tokens it
#: keeps an answer within 40,000 bytes, under Claude Code's 50,000 characters.
BYTES_PER_TOKEN_CAP: Final = 5
#: The smallest budget an answer may be given: every tool shrinks to fit it.
MIN_TOKENS: Final = 400
#: The most characters of an error answer (one line).
ERROR_CHARS: Final = 500


class AnswerBudget(NamedTuple):
    """The limit of one answer: ``limit`` tokens (``meter`` counts them) or bytes,
    and never more than ``max_bytes`` bytes."""

    limit: int
    unit: str  # "tokens" or "bytes"
    encoding: str
    meter: Any  # a tokens.Meter, or None for a byte budget
    max_bytes: int = 0  # 0: ``limit`` (a byte budget), or limit x BYTES_PER_TOKEN_CAP

    @property
    def byte_cap(self) -> int:
        """The most bytes an answer may take."""
        if self.max_bytes:
            return self.max_bytes
        return self.limit * (BYTES_PER_TOKEN_CAP if self.meter is not None else 1)

    def size(self, text: str) -> int:
        """The text's size in the budget's unit."""
        if self.meter is None:
            return len(text.encode("utf-8"))
        return int(self.meter.count(text))

    def fits(self, text: str) -> bool:
        """Whether ``text`` is within the budget (and its byte cap)."""
        size = len(text.encode("utf-8"))
        if size > self.byte_cap:
            return False
        if self.meter is None or size <= self.limit:
            return size <= self.limit  # (a token is at least one byte)
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
    if tokens < MIN_TOKENS:
        where = "--max-tokens" if max_tokens is not None else "git config hydrate.mcpMaxTokens"
        raise ValidationError(
            f"{where} is {tokens:,}; an answer needs at least {MIN_TOKENS} tokens"
        )
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


def error_text(message: str, budget: AnswerBudget | None = None) -> str:
    """``message`` as one line of at most :data:`ERROR_CHARS` characters within ``budget``."""
    line = folded(message)  # (line breaks: one space; a no-break space stays)
    line = "".join(ch if on_one_line(ch) else "?" for ch in line)
    limit = ERROR_CHARS
    while True:
        text = line if len(line) <= limit else line[: limit - 1] + "…"
        if budget is None or budget.fits(text) or limit <= 1:
            return text
        limit //= 2


# -- the prompt ---------------------------------------------------------------------------


def surface_format(ledger: Ledger) -> str:
    """The prompt format an agent surface uses: ``hydrate.promptFormat`` when it is
    set, else :data:`SURFACE_FORMAT`.

    Raises:
        ValidationError: ``hydrate.promptFormat`` names no format (as a prompt refuses it).
    """
    settings = ledger.settings
    shape = SURFACE_FORMAT
    if settings.has("hydrate.promptFormat"):
        shape = settings.text("hydrate.promptFormat") or SURFACE_FORMAT
    if shape not in PROMPT_FORMATS:  # (refused here too: get_attachment packs no prompt)
        raise ValidationError(
            f"hydrate.promptFormat must be one of {', '.join(PROMPT_FORMATS)}, not {shape!r}"
        )
    return shape


def fit_prompt(ledger: Ledger, task_id: str, budget: AnswerBudget) -> str:
    """The task's prompt packed within ``budget``, in the surfaces' format
    (:func:`surface_format`).

    What did not fit is named by the prompt itself, in the ``### Not included``
    section that ends its untrusted block: nothing is appended after the Output
    contract, and no source label stands outside the block (issue 27 item 4).
    The packer holds the prompt within both of the budget's measures exactly.

    Raises:
        TooSmall: the task's fields alone do not fit the budget.
        ValidationError: the prompt cannot be made (a missing extra, a bad setting).
    """
    shape = surface_format(ledger)
    try:
        if budget.unit == "tokens":
            result = ledger.prompt(
                task_id,
                max_bytes=budget.byte_cap,
                max_tokens=budget.limit,
                encoding=budget.encoding,
                format=shape,
            )
        else:
            result = ledger.prompt(
                task_id, max_bytes=min(budget.limit, budget.byte_cap), format=shape
            )
    except TooSmall:
        raise TooSmall(
            f"the prompt of {task_id} does not fit this answer's budget of {budget.describe()}"
        ) from None
    return str(result["prompt"])


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

    When ``head`` alone does not fit, its long texts are cut to fit and
    ``omitted`` says to what length.

    Raises:
        ValidationError: not even the cut ``head`` fits.
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
    if not budget.fits(text_with(0)):
        return _shrunk(budget, head, key, len(items), summary)
    # Bytes bound the search first: they cost nothing to count, and no answer
    # may take more than the budget's byte cap.
    low, high = 0, len(items) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if len(text_with(middle).encode("utf-8")) <= budget.byte_cap:
            low = middle
        else:
            high = middle - 1
    high, low = low, 0
    while low < high:
        middle = (low + high + 1) // 2
        if budget.fits(text_with(middle)):
            low = middle
        else:
            high = middle - 1
    return text_with(low)


def _cut(value: Any, chars: int | None, items: int | None = None) -> Any:
    """``value`` with every string longer than ``chars`` cut to ``chars`` (and "…"),
    and every list to its first ``items`` (``None``: no cut)."""
    if isinstance(value, str):
        return value if chars is None or len(value) <= chars else value[: chars - 1] + "…"
    if isinstance(value, list):
        return [_cut(item, chars, items) for item in value[:items]]
    if isinstance(value, dict):
        return {key: _cut(item, chars, items) for key, item in value.items()}
    return value


def _largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest number in ``[low, high]`` for which ``fits`` holds (it holds for
    ``low``, and for every number below one it holds for)."""
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _shrunk(
    budget: AnswerBudget,
    head: Mapping[str, Any],
    key: str,
    count: int,
    summary: Callable[[int], Mapping[str, Any]],
) -> str:
    """``head`` alone, its long strings cut to the most characters that fit; when
    even strings of 8 characters do not (3,000 dependencies), its lists cut first
    to the most items that fit, with its texts whole if they then fit.

    Raises:
        ValidationError: not even empty lists and strings of 8 characters fit (a
            budget far below :data:`MIN_TOKENS`).
    """

    def text_with(chars: int | None, items: int | None = None) -> str:
        data = {name: _cut(value, chars, items) for name, value in head.items()}
        data[key] = []
        left = dict(summary(count)) if count else {}
        if items is None:
            left["cut"] = f"texts cut to {chars} characters"
        else:
            cut_texts = chars is not None and any(_cut(v, chars) != v for v in head.values())
            left["cut"] = f"lists cut to {items} items" + (
                f", texts to {chars} characters" if cut_texts else ""
            )
        data["omitted"] = left
        return json_text(data)

    longest = max(8, max(len(json_text(value)) for value in head.values()))
    items: int | None = None
    if not budget.fits(text_with(8)):
        chars = None if budget.fits(text_with(None, 0)) else 8
        if not budget.fits(text_with(chars, 0)):
            raise ValidationError(f"this answer does not fit its budget of {budget.describe()}")
        most = max((len(value) for value in head.values() if isinstance(value, list)), default=0)
        items = _largest(lambda n: budget.fits(text_with(chars, n)), 0, most)
        if chars is None:
            return text_with(None, items)
    return text_with(_largest(lambda n: budget.fits(text_with(n, items)), 8, longest), items)
