"""The words of a task change: its commit message, dates and default title."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from ..validate import folded, printable

__all__ = ["commit_message", "default_title", "iso_utc", "task_message"]


def iso_utc(timestamp: float) -> str:
    """``2026-11-30T07:14:27Z`` for a POSIX timestamp."""
    return datetime.fromtimestamp(int(timestamp), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_title(objective: str) -> str:
    """A title from the objective's first line, when none was given."""
    first = objective.strip().splitlines()[0] if objective.strip() else ""
    return first if len(first) <= 80 else first[:77].rstrip() + "..."


def commit_message(summary: str, trailers: Sequence[tuple[str, str]], body: str = "") -> str:
    """The one shape of every commit git-hydrate writes.

    ``hydrate: <summary>``, an optional body paragraph, then ``Hydrate-<Key>:
    <value>`` trailers, which :mod:`git_hydrate.audit` reads back. A value
    is folded onto one line.
    """
    lines = [f"hydrate: {summary}", ""]
    if body:
        lines += [body, ""]
    for key, value in trailers:
        value = value if printable(value) else folded(value)
        lines.append(f"Hydrate-{key}: {value}")
    return "\n".join(lines) + "\n"


def task_message(summary: str, action: str, task_id: str, **named: str) -> str:
    """A task change's message: ``Action`` and ``Task`` trailers, then ``named``
    ones (``checkpoint_summary`` becomes ``Hydrate-Checkpoint-Summary``)."""
    trailers = [("Action", action), ("Task", task_id)]
    trailers += [(key.replace("_", "-").title(), value) for key, value in named.items()]
    return commit_message(summary, trailers)
