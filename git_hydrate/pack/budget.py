"""The budget a packing uses: the arguments given, else the ``hydrate.*`` settings.

One :class:`Budget` value is built once, where the options are given (the
command line, ``Ledger.budget``), and carried through the packer to the walk:
a new budget option is a field here and the code that reads it.

Light on purpose: the prompt cache's fast path resolves a budget before the
packer is imported.
"""

from __future__ import annotations

from ..settings import Settings

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import TypedDict

    class BudgetOptions(TypedDict, total=False):
        """The options of a budget besides ``max_bytes``, as the ``Ledger``'s
        packing methods take them by keyword (``None``: from the settings)."""

        max_tokens: int | None
        encoding: str | None
        outline: bool | None


__all__ = ["Budget", "resolve_budget"]


# A tuple with named fields, not a typing.NamedTuple: typing costs the fast path
# a few ms to import (see git_hydrate.quick).
class Budget(tuple[int | None, int | None, str, bool]):
    """What a packing may use: bytes and tokens (``None``: no such limit), the
    token encoding, and whether outlines stand in for what does not fit. A
    tuple of the four, in that order (as the prompt cache's key lists them)."""

    __slots__ = ()

    def __new__(
        cls, max_bytes: int | None, max_tokens: int | None, encoding: str, outline: bool
    ) -> Budget:
        return super().__new__(cls, (max_bytes, max_tokens, encoding, outline))

    def __getnewargs__(self) -> tuple[int | None, int | None, str, bool]:
        return (self[0], self[1], self[2], self[3])  # copy and pickle, as a NamedTuple's

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

    def __repr__(self) -> str:
        return (
            f"Budget(max_bytes={self[0]!r}, max_tokens={self[1]!r}, "
            f"encoding={self[2]!r}, outline={self[3]!r})"
        )


def resolve_budget(
    settings: Settings,
    max_bytes: int | None = None,
    max_tokens: int | None = None,
    encoding: str | None = None,
    outline: bool | None = None,
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
    name = encoding or settings.text("hydrate.encoding") or "o200k_base"
    shrink = settings.boolean("hydrate.outline") if outline is None else outline
    return Budget(max_bytes, max_tokens, name, shrink)
