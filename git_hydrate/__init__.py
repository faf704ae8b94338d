"""git-hydrate: tasks and their context, kept in git, packed under an exact byte budget.

The public API::

    from git_hydrate import Ledger

    with Ledger(".") as ledger:
        ledger.add_task("M-1002", objective="Add GET /healthz", acceptance="200")
        ledger.add_context("M-1002", "The edge proxy sets X-Request-Id.", "notes", priority=10)
        print(ledger.pack("M-1002")["packet"])

Names are resolved lazily so that ``import git_hydrate`` stays cheap for the
command line, which imports only what each command uses.

The layers, lowest first. A module imports only from its own layer or below,
and the import graph has no cycle (``tests/test_architecture.py`` reads this
table and holds the code to it; ``docs/development.md`` says what each is)::

    0  errors ids chars stemming
    1  settings model
    2  codec validate secrets textpolicy merge results context_expander
       pack.budget pack.fingerprint pack.memo pack.tokens pack.grammars pack.outline
       pack.outline_lines pack.outline_specs pack.outline_ts pack.outline_markup
       pack.outline_erlang pack.outline_proto
       pack.confusables pack.boundaries pack.render pack.formats pack.seed pack.entries
       pack.omissions pack.measure pack.value pack.settle pack.walk pack.needed pack.packet
       pack.assemble
    3  store
    4  archive treeshape sightings pack.derived pack.refresh_memo pack.prompt_cache
    5  taskrefs
    6  tasks attachments listing audit dependencies search hydrate pack pack.loader pack.stored
    7  lifecycle sync doctor features repair readyqueue claims current interop
    8  ledger ledger_packing
    9  hooks serve agents web
    10 cli console quick quicksync __main__
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)

__version__ = "0.1.0"

__all__ = [
    "Busy",
    "Conflict",
    "CorruptData",
    "GitFailed",
    "HydrateError",
    "Ledger",
    "NoIdentity",
    "NotARepository",
    "NotFound",
    "NotWritable",
    "SecretDetected",
    "TooSmall",
    "UnsupportedRepository",
    "ValidationError",
    "__version__",
]

if TYPE_CHECKING:
    from typing import Any

    from .errors import (
        Busy,
        Conflict,
        CorruptData,
        GitFailed,
        HydrateError,
        NoIdentity,
        NotARepository,
        NotFound,
        NotWritable,
        SecretDetected,
        TooSmall,
        UnsupportedRepository,
        ValidationError,
    )
    from .ledger import Ledger

_ERRORS = {
    "Busy",
    "Conflict",
    "CorruptData",
    "GitFailed",
    "HydrateError",
    "NoIdentity",
    "NotARepository",
    "NotFound",
    "NotWritable",
    "SecretDetected",
    "TooSmall",
    "UnsupportedRepository",
    "ValidationError",
}


def __getattr__(name: str) -> Any:
    if name == "Ledger":
        from .ledger import Ledger

        return Ledger
    if name in _ERRORS:
        from . import errors

        return getattr(errors, name)
    raise AttributeError(f"module 'git_hydrate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
