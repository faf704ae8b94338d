"""Packing: a task and its context into a packet and a prompt, under an exact budget.

One concern, one module each, lowest first (``git_hydrate/__init__.py`` gives
the layers; nothing here below :mod:`.derived` runs git or reads a file):

* :mod:`.budget` — the one :class:`Budget` value (bytes, tokens, encoding,
  outlines), built once from the options and the settings;
* :mod:`.tokens`, :mod:`.outline` — exact token counts and outlines: Python,
  Markdown, reStructuredText and AsciiDoc (:mod:`.outline_markup`), Erlang
  (:mod:`.outline_erlang`) and Protocol Buffers (:mod:`.outline_proto`) always,
  eighteen more languages with the extra (:mod:`.outline_ts`); :mod:`.grammars`
  names the installed grammars without importing them;
* :mod:`.boundaries` — the one rule that keeps untrusted text from reading as
  the prompt's structure (``neutralise``);
* :mod:`.render` — the prompt's fixed layout and its untrusted block;
* :mod:`.formats` — the prompt's formats (seed, markdown, xml): how the block
  holds each attachment;
* :mod:`.seed` — the seed's helpers and exact strings (``dedupe_context``,
  ``split_budget``, the refusals and notes); :mod:`git_hydrate.context_expander`
  re-exports them under the seed's name;
* :mod:`.entries` — the typed entries inside the packer: an attachment
  (:class:`~.entries.Attachment`) and a packet's context item
  (:class:`~.entries.Item`), converted from and to the seed's dicts once, at
  the seed-named functions' edge;
* :mod:`.omissions` — the prompt's ``### Not included`` section;
* :mod:`.measure`, :mod:`.value`, :mod:`.walk` — the budget walk: what it
  holds and how it measures, value per byte, and the two passes that keep
  attachments whole, as outlines, or name them as left out;
* :mod:`.assemble` — the packet and the prompt: mandatory part, walk, result;
* :mod:`.memo`, :mod:`.loader` — bodies for the walk: from what add-tree just
  read, the work tree, or git, read ahead in packing order;
* :mod:`.derived`, :mod:`.prompt_cache`, :mod:`.refresh_memo` — the caches:
  token counts and outlines by blob, whole prompts by task tip and budget,
  what a ``prompt --refresh`` at a tip answers;
* :mod:`.fingerprint` — the code in the caches' keys: every module here;
* :mod:`.stored` — the stored-task packer the ``Ledger`` calls.

Names are resolved lazily (as in :mod:`git_hydrate.store`): the prompt cache's
fast path imports its lookup without the packer.
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Any, Final

    from .budget import Budget, resolve_budget
    from .memo import BodyMemo
    from .stored import check_budget, expand, pack, prompt, write_prompt

__all__ = [
    "BodyMemo",
    "Budget",
    "check_budget",
    "expand",
    "pack",
    "prompt",
    "resolve_budget",
    "write_prompt",
]

#: Where each public name lives.
_HOME: Final = {
    "Budget": "budget",
    "resolve_budget": "budget",
    "BodyMemo": "memo",
    "check_budget": "stored",
    "expand": "stored",
    "pack": "stored",
    "prompt": "stored",
    "write_prompt": "stored",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{home}", fromlist=[name]), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
