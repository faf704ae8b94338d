"""The seed's name for the pure packer: ``git_hydrate.context_expander``.

The packing concern lives in :mod:`git_hydrate.pack`; this module re-exports,
under the names the "Context and packets" page uses, its pure functions and
exact strings (``dedupe_context``, ``build_packet``, ``render_prompt``,
``split_budget``, ``UNTRUSTED_BANNER``...).
"""

from __future__ import annotations

from .pack.assemble import (
    CHARS_PER_TOKEN,
    EXPAND_NOTE,
    EXPAND_REFUSAL,
    EXPAND_TOKEN_REFUSAL,
    OUTPUT_CONTRACT,
    PACK_NOTE,
    PACK_REFUSAL,
    PACK_TOKEN_REFUSAL,
    TOKENS_NOTE,
    TRUST_LINE,
    UNTRUSTED_BANNER,
    UNTRUSTED_FOOTER,
    Outliner,
    TokenMeter,
    build_packet,
    build_prompt,
    dedupe_context,
    estimate_packet_tokens,
    estimate_tokens,
    guard_form,
    is_guarded,
    neutralise,
    pack_packet,
    packet_json,
    render_prompt,
    split_budget,
    summarize_packet,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "EXPAND_NOTE",
    "EXPAND_REFUSAL",
    "EXPAND_TOKEN_REFUSAL",
    "OUTPUT_CONTRACT",
    "PACK_NOTE",
    "PACK_REFUSAL",
    "PACK_TOKEN_REFUSAL",
    "TOKENS_NOTE",
    "TRUST_LINE",
    "UNTRUSTED_BANNER",
    "UNTRUSTED_FOOTER",
    "Outliner",
    "TokenMeter",
    "build_packet",
    "build_prompt",
    "dedupe_context",
    "estimate_packet_tokens",
    "estimate_tokens",
    "guard_form",
    "is_guarded",
    "neutralise",
    "pack_packet",
    "packet_json",
    "render_prompt",
    "split_budget",
    "summarize_packet",
]
