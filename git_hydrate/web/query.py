"""A request's query string, read and checked: pages, filters and budgets.

Every value arrives as untrusted text; a bad one is a
:class:`~git_hydrate.errors.ValidationError` (the server answers 400 with its
line), never a guess.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final
from urllib.parse import parse_qs

from ..errors import ValidationError
from ..pack.budget import parse_size
from ..settings import ENCODINGS

__all__ = ["MAX_PAGE", "Query"]

#: The most items one JSON page holds.
MAX_PAGE: Final = 500
#: The most characters a query string may have.
_MAX_QUERY: Final = 8192


class Query:
    """The parameters of one request's query string."""

    def __init__(self, raw: str) -> None:
        if len(raw) > _MAX_QUERY:
            raise ValidationError(f"query string longer than {_MAX_QUERY} characters")
        try:
            self.params = parse_qs(raw, keep_blank_values=True, strict_parsing=False)
        except ValueError as exc:  # pragma: no cover - parse_qs is lenient
            raise ValidationError(f"bad query string: {exc}") from exc

    def given(self, name: str) -> str | None:
        """The value of ``name`` (``?name`` alone: ``""``), or ``None`` when absent;
        given twice (``?limit=1&limit=500``) it is refused, not read one way here and
        another in a proxy or a cache."""
        values = self.params.get(name)
        if values and len(values) > 1:
            raise ValidationError(f"{name} given {len(values)} times: give it once")
        return values[0] if values else None

    def text(self, name: str, default: str = "") -> str:
        """The value of ``name``, else ``default``; given twice, refused."""
        value = self.given(name)
        return default if value is None else value

    def texts(self, name: str) -> list[str]:
        """Every value of ``name``, in order; an empty one is refused (leave it out)."""
        values = self.params.get(name, [])
        if "" in values:
            raise ValidationError(f"{name} must not be empty: leave it out for any {name}")
        return list(values)

    def every(self, name: str) -> list[str]:
        """Every value of ``name``, in order, empty ones too (``?holder=``: nobody)."""
        return list(self.params.get(name, []))

    def choices(self, name: str, known: Collection[str]) -> list[str]:
        """Every value of ``name``, each one of ``known``."""
        values = self.params.get(name, [])
        for value in values:
            if value not in known:
                raise ValidationError(
                    f"unknown {name} {value[:40]!r}: use one of {', '.join(known)}"
                )
        return list(values)

    def choice(self, name: str, known: Collection[str]) -> str | None:
        """The value of ``name``, one of ``known``, or ``None`` when absent."""
        value = self.given(name)
        return None if value is None else self.choices(name, known)[0]

    def integer(
        self, name: str, default: int | None, *, low: int = 0, high: int | None = None
    ) -> int | None:
        """``name`` as a whole number in ``[low, high]``, else ``default`` when absent or empty."""
        value = self.text(name)
        if value == "":
            return default
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        digits = value[1:] if value.startswith("-") else value
        if not digits.isascii() or not digits.isdigit():
            raise ValidationError(f"{name} must be a whole number, not {value[:40]!r}")
        if value.startswith("-") or len(value) > 18:  # (below 0, or past any page)
            if high is None and not value.startswith("-"):
                bound = f"between {low} and {10**18 - 1}"
            raise ValidationError(f"{name} must be {bound}, not {value[:40]}")
        number = int(value)
        if number < low or (high is not None and number > high):
            raise ValidationError(f"{name} must be {bound}, not {number}")
        return number

    def flag(self, name: str, default: bool = False) -> bool:
        """``name`` as a switch: exactly ``1`` (yes) or ``0`` (no), else ``default``
        when absent. ``?archived`` alone, ``archived=yes`` or ``archived=true`` are
        refused: one spelling, so no reader takes it another way."""
        value = self.given(name)
        if value is None:
            return default
        if value in ("0", "1"):
            return value == "1"
        raise ValidationError(f"{name} must be 1 or 0 (or left out), not {value[:40]!r}")

    def page(self, default_limit: int = 50) -> tuple[int, int]:
        """``(offset, limit)``: where a page starts and how many items it holds."""
        offset = self.integer("offset", 0)
        limit = self.integer("limit", default_limit, low=1, high=MAX_PAGE)
        assert offset is not None and limit is not None
        return offset, limit

    def size(self, name: str, unit: str) -> int | None:
        """``name`` as a budget spells it on the command line (``64k``, ``64KiB``,
        ``16k`` tokens), or ``None`` when absent or empty."""
        value = self.text(name)
        if not value:
            return None
        if len(value) > 40:  # (cut, "0"*38 + "64k" was read as 64: refused whole)
            raise ValidationError(f"{name}: {value[:40]!r}... is no size (too long)")
        try:
            return parse_size(value, unit)
        except ValueError as exc:
            raise ValidationError(f"{name}: {exc}") from None

    def _encoding(self) -> str | None:
        """``encoding``, one the tokenizers know (``None``: absent or empty)."""
        value = self.text("encoding")
        if value and value not in ENCODINGS:
            raise ValidationError(
                f"unknown token encoding {value[:40]!r}: use one of {', '.join(ENCODINGS)}"
            )
        return value or None

    def budget(self) -> dict[str, Any]:
        """The budget asked for, as :meth:`git_hydrate.Ledger.budget` takes it
        (``None``: from the settings, as on the command line)."""
        return {
            "max_bytes": self.size("max_bytes", "bytes"),
            "max_tokens": self.size("max_tokens", "tokens"),
            "encoding": self._encoding(),
            "outline": None if self.given("outline") is None else self.flag("outline"),
        }
