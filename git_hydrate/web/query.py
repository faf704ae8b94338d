"""A request's query string, read and checked: pages, filters and budgets.

Every value arrives as untrusted text; a bad one is a
:class:`~git_hydrate.errors.ValidationError` (the server answers 400 with its
line), never a guess.
"""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import parse_qs

from ..errors import ValidationError
from ..pack.budget import parse_size

__all__ = ["MAX_PAGE", "Query"]

#: The most items one JSON page holds.
MAX_PAGE: Final = 500
#: The most characters a query string may have.
_MAX_QUERY: Final = 8192
_TRUE: Final = {"1", "true", "yes", "on"}
_FALSE: Final = {"", "0", "false", "no", "off"}


class Query:
    """The parameters of one request's query string."""

    def __init__(self, raw: str) -> None:
        if len(raw) > _MAX_QUERY:
            raise ValidationError(f"query string longer than {_MAX_QUERY} characters")
        try:
            self.params = parse_qs(raw, keep_blank_values=True, strict_parsing=False)
        except ValueError as exc:  # pragma: no cover - parse_qs is lenient
            raise ValidationError(f"bad query string: {exc}") from exc

    def text(self, name: str, default: str = "") -> str:
        """The value of ``name``, else ``default``; given twice (``?limit=1&limit=500``)
        it is refused, not read one way here and another in a proxy or a cache."""
        values = self.params.get(name)
        if values and len(values) > 1:
            raise ValidationError(f"{name} given {len(values)} times: give it once")
        return values[0] if values else default

    def texts(self, name: str) -> list[str]:
        """Every non-empty value of ``name``, in order."""
        return [v for v in self.params.get(name, []) if v]

    def every(self, name: str) -> list[str]:
        """Every value of ``name``, in order, empty ones too (``?holder=``: nobody)."""
        return list(self.params.get(name, []))

    def integer(
        self, name: str, default: int | None, *, low: int = 0, high: int | None = None
    ) -> int | None:
        """``name`` as a whole number in ``[low, high]``, else ``default`` when absent or empty."""
        value = self.text(name)
        if value == "":
            return default
        if not value.isascii() or not value.isdigit() or len(value) > 18:
            raise ValidationError(f"{name} must be a whole number, not {value[:40]!r}")
        number = int(value)
        if number < low or (high is not None and number > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ValidationError(f"{name} must be {bound}, not {number}")
        return number

    def flag(self, name: str) -> bool:
        """``name`` as a yes/no switch (absent: no)."""
        value = self.text(name).lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise ValidationError(f"{name} must be 1 or 0, not {value[:40]!r}")

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
        try:
            return parse_size(value[:40], unit)
        except ValueError as exc:
            raise ValidationError(f"{name}: {exc}") from None

    def budget(self) -> dict[str, Any]:
        """The budget asked for, as :meth:`git_hydrate.Ledger.budget` takes it
        (``None``: from the settings, as on the command line)."""
        outline = self.text("outline")
        return {
            "max_bytes": self.size("max_bytes", "bytes"),
            "max_tokens": self.size("max_tokens", "tokens"),
            "encoding": self.text("encoding") or None,
            "outline": None if outline == "" else self.flag("outline"),
        }
