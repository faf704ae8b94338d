"""The budget a packing uses: the arguments given, else the ``hydrate.*`` settings.

Light on purpose: the prompt cache's fast path resolves a budget before the
packer is imported.
"""

from __future__ import annotations

from typing import NamedTuple

from .settings import Settings

__all__ = ["Budget", "resolve_budget"]


class Budget(NamedTuple):
    """What a packing may use: bytes and tokens (``None``: no such limit), the
    token encoding, and whether outlines stand in for what does not fit."""

    max_bytes: int | None
    max_tokens: int | None
    encoding: str
    outline: bool


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
