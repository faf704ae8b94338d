"""The budget a packing uses: the arguments given, else the ``hydrate.*`` settings.

One :class:`Budget` value is built once, where the options are given (the
command line, ``Ledger.budget``), and carried through the packer to the walk:
a new budget option is a field here and the code that reads it.

Light on purpose: the prompt cache's fast path resolves a budget before the
packer is imported.
"""

from __future__ import annotations

from ..errors import ValidationError
from ..settings import DEFAULT_MAX_BYTES, PROMPT_FORMATS, Settings, is_int, parse_int

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Final, TypedDict

    class BudgetOptions(TypedDict, total=False):
        """The options of a budget besides ``max_bytes``, as the ``Ledger``'s
        packing methods take them by keyword (``None``: from the settings)."""

        max_tokens: int | None
        encoding: str | None
        outline: bool | None
        format: str | None


__all__ = ["Budget", "human_size", "parse_size", "resolve_budget"]

#: What a budget option's suffix multiplies by: git's ``k``/``m``/``g`` (1024-based),
#: and for bytes the same followed by ``b`` or ``ib`` in any case (``64KB``,
#: ``64KiB``, ``64kb``: all 65,536, as git counts).
_BYTE_SUFFIX_TAILS = ("ib", "b")
#: The token encoding when neither ``--encoding`` nor ``hydrate.encoding`` says.
DEFAULT_ENCODING = "o200k_base"
_EXAMPLES = {"bytes": "20000, 64k, 64KiB, 1m", "tokens": "16000, 16k, 1m"}


def human_size(size: int) -> str:
    """``812 bytes``, ``9.5 KiB``, ``69 KiB``, ``1.2 MiB``: 1024-based, as budgets are."""
    if size < 1024:
        return f"{size:,} bytes"
    value = size / 1024
    unit = "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}" if value < 10 else f"{value:,.0f} {unit}"


def parse_size(value: str, unit: str = "bytes", least: int = 1, most: int = 2**63 - 1) -> int:
    """A budget option's value: a number of ``unit`` (``bytes`` or ``tokens``) from
    ``least`` (``0`` for a count that may be none, such as a token budget) to ``most``.

    The one reading of every size and token count the command line takes
    (``--max-bytes``, ``--max-tokens``, add-tree's byte limits, ``--tokens``,
    ``--token-budget``, and the prompt cache's fast path): an integer as
    ``git config --type=int`` reads it, with git's suffixes ``k``, ``m``, ``g``
    (1024, 1024^2, 1024^3); a byte size may add ``b`` or ``ib`` to its suffix
    (``64KB`` = ``64KiB`` = ``64kb`` = ``64k`` = 65,536 bytes: 1024-based, as in git),
    and a plain count of bytes may end in ``B`` (``64000B``; not ``b``, which might
    mean billions).
    Unlike git, a zero-padded or ``0x`` number is refused: git would read it as octal
    or hexadecimal, which an option's user rarely means (:func:`_not_decimal`).

    Raises:
        ValueError: not such a number; the message says so, naming ``value``.
    """
    text = value.strip()
    if unit == "bytes":
        lowered = text.lower()
        for tail in _BYTE_SUFFIX_TAILS:
            if lowered.endswith(tail) and lowered[: -len(tail)][-1:] in ("k", "m", "g"):
                text = text[: -len(tail)]
                break
        else:  # (a plain count of bytes may say so: 64000B; "7b" might mean billions)
            if text.endswith("B") and text[:-1][-1:].isdigit():
                text = text[:-1]
    padded = _not_decimal(value, text, unit)
    if padded:
        raise ValueError(padded)
    number = parse_int(text)
    if number is None or number > most:
        shown = (
            repr(value) if len(value) <= 40 else f"{value[:20]!r}... ({len(value):,} characters)"
        )
        if number is not None or is_int(text):  # (past 64 bits)
            raise ValueError(f"{shown} is too large: at most {most:,} {unit}")
        raise ValueError(f"{shown} is not a number of {unit} (such as {_EXAMPLES[unit]})")
    if number < least:
        raise ValueError(f"{value!r} must be at least {least}")
    return number


def _not_decimal(value: str, text: str, unit: str) -> str | None:
    """Why ``text`` (a zero-padded or ``0x`` number) is refused, or ``None`` when it is not one.

    git reads a leading ``0`` as octal and ``0x`` as hexadecimal (``010000`` is 4,096),
    and ``git config`` keeps that reading; an option refuses such a value instead of
    quietly taking a budget an eighth of the one meant.
    """
    digits = text.lstrip("+-")
    if len(digits) < 2 or digits[0] != "0" or not (digits[1] in "xX" or digits[1].isdigit()):
        return None
    base = "hexadecimal" if digits[1] in "xX" else "octal"
    number = parse_int(text)
    read = f" ({number:,} {unit})" if number is not None else ""
    return f"{value!r} would be read as {base}{read}: write it in decimal, without a leading 0"


# A tuple with named fields, not a typing.NamedTuple: typing costs the fast path
# a few ms to import (see git_hydrate.quick).
class Budget(tuple[int | None, int | None, str, bool, str]):
    """What a packing may use: bytes and tokens (``None``: no such limit), the
    token encoding, whether outlines stand in for what does not fit, and the
    prompt's format (its bytes and tokens are what the budget measures). A
    tuple of the five, in that order (as the prompt cache's key lists them)."""

    __slots__ = ()

    def __new__(
        cls,
        max_bytes: int | None,
        max_tokens: int | None,
        encoding: str,
        outline: bool,
        format: str = "seed",
    ) -> Budget:
        return super().__new__(cls, (max_bytes, max_tokens, encoding, outline, format))

    def __getnewargs__(self) -> tuple[int | None, int | None, str, bool, str]:
        return (self[0], self[1], self[2], self[3], self[4])  # copy and pickle

    @property
    def max_bytes(self) -> int | None:
        return self[0]

    @property
    def max_tokens(self) -> int | None:
        return self[1]

    @property
    def encoding(self) -> str:
        return self[2]

    @property
    def outline(self) -> bool:
        return self[3]

    @property
    def format(self) -> str:
        return self[4]

    def options(self, settled: Budget | None = None) -> str:
        """The options that make ``prompt ID`` build its prompt under this budget
        again, each after a space (``""``: none): every part that differs from
        the built-in defaults (128 KiB, no token budget, ``o200k_base``,
        outlines on, ``seed``) or from ``settled`` (the budget the ``hydrate.*``
        settings give when no option is: a setting would otherwise stand in for a
        part left unspelled), and the byte budget beside a token budget (which
        alone would drop it), e.g. ``" --max-bytes 16000 --format markdown"``."""
        max_bytes, max_tokens, encoding, outline, shape = self
        base = settled or _BUILT_IN
        spelled = []
        if max_bytes is not None and (
            max_tokens is not None or max_bytes != DEFAULT_MAX_BYTES or max_bytes != base.max_bytes
        ):
            spelled.append(f"--max-bytes {max_bytes}")
        if max_tokens is not None:
            spelled.append(f"--max-tokens {max_tokens}")
            if encoding != DEFAULT_ENCODING or encoding != base.encoding:
                spelled.append(f"--encoding {encoding}")
        if not outline:
            spelled.append("--no-outline")
        elif not base.outline:
            spelled.append("--outline")
        if shape != PROMPT_FORMATS[0] or shape != base.format:
            spelled.append(f"--format {shape}")
        return "".join(" " + option for option in spelled)

    def __repr__(self) -> str:
        return (
            f"Budget(max_bytes={self[0]!r}, max_tokens={self[1]!r}, "
            f"encoding={self[2]!r}, outline={self[3]!r}, format={self[4]!r})"
        )


#: The budget when neither an option nor a setting says otherwise.
_BUILT_IN: Final = Budget(DEFAULT_MAX_BYTES, None, DEFAULT_ENCODING, True, PROMPT_FORMATS[0])


def resolve_budget(
    settings: Settings,
    max_bytes: int | None = None,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
    format: str | None = None,
) -> Budget:
    """The budget a packing uses: the arguments, else the ``hydrate.*`` settings.

    The default byte budget (``hydrate.maxBytes``, else 128 KiB) applies unless a
    token budget is given and ``hydrate.maxBytes`` is not set: a byte limit
    nobody asked for would otherwise cut a token budget short.
    """
    if max_tokens is None and settings.has("hydrate.maxTokens"):
        max_tokens = settings.size("hydrate.maxTokens")
    if max_bytes is None and (max_tokens is None or settings.has("hydrate.maxBytes")):
        max_bytes = settings.size("hydrate.maxBytes")
    name = encoding or settings.text("hydrate.encoding") or DEFAULT_ENCODING
    shrink = settings.boolean("hydrate.outline") if outline is None else outline
    shape = format or settings.text("hydrate.promptFormat") or PROMPT_FORMATS[0]
    if shape not in PROMPT_FORMATS:
        raise ValidationError(
            f"hydrate.promptFormat must be one of {', '.join(PROMPT_FORMATS)}, not {shape!r}"
        )
    return Budget(max_bytes, max_tokens, name, shrink, shape)
