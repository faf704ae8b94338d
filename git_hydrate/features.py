"""Which optional parts this installation has, as ``doctor`` reports them.

None of them changes an answer: each makes a part faster or exact
(``[fast]``, ``[tokens]``), or adds one (``[outline]``, ``[mcp]``). The
compiled tokeniser (``git_hydrate._speedups``) is no extra: the install builds
it when a C compiler and Python's headers are there, else the tokeniser runs
in Python, the same words at about half the speed.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Final

from .hydrate.terms import compiled_tokeniser
from .pack.grammars import GRAMMAR_MODULES, built_in_outlines
from .pack.tokens import BACKEND_MODULES
from .secrets.prefilter import shared_prefilter

__all__ = ["NO_COMPILED_TOKENISER", "features"]

#: doctor's note when the install could not build the compiled tokeniser.
NO_COMPILED_TOKENISER: Final = (
    "the tokeniser runs in Python: git_hydrate._speedups was not built (no C compiler or "
    "Python headers at install), so a first task takes 1.2-1.5x the CPU; install "
    "them (Debian: gcc, python3-dev), then reinstall git-hydrate (pip: --no-cache-dir, "
    "or it reuses the wheel built without)"
)


def _found(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def features() -> dict[str, Any]:
    """What this installation has: ``compiled_tokeniser`` (bool),
    ``secret_prefilter`` (Hyperscan's, ``[fast]``: bool), ``token_counters``
    (``[tokens]``: the backends found, in the order used), ``outline_languages``
    (the languages outlined here: those that need nothing, then ``[outline]``'s
    grammars found, with ``tree_sitter`` itself, which a grammar package does not
    require) and ``mcp`` (``[mcp]``: bool). A module found but broken counts as
    found, but for the tokeniser and the prefilter, which are loaded."""
    grammars = (
        sorted(lang for lang, module in GRAMMAR_MODULES.items() if _found(module))
        if _found("tree_sitter")
        else []
    )
    return {
        "compiled_tokeniser": compiled_tokeniser(),
        "secret_prefilter": shared_prefilter() is not None,
        "token_counters": [name for name in BACKEND_MODULES if _found(name)],
        "outline_languages": [*built_in_outlines(), *grammars],
        "mcp": _found("mcp"),
    }
