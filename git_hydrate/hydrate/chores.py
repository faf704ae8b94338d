"""Chores: commits that maintain the tooling rather than change what the code does. Pure.

A lint, type-checker or dependency update touches source files and the tools'
configuration at once (pallets/flask's ``update ruff hook and noqa``:
``.pre-commit-config.yaml``, ``app.py``, ``sessions.py``). Through such commits
every source file "changes together" with the CI and tool files, and a source
file that changes seldom may have nearly as many of them as real changes: a
task about sessions would pull in ``.pre-commit-config.yaml``. Ranking weighs
a chore down in co-change, unless the task is a chore itself.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate
from typing import Final

__all__ = ["chore_scale", "is_chore"]

#: A subject (or a task's text) that speaks of maintaining the tooling: its tools,
#: its dependencies, a conventional ``chore:``, ``ci:`` or ``build(deps):``.
_CHORE: Final = re.compile(
    r"\b(?:bump(?:s|ed)?|dependabot|pre-commit|precommit|ruff|flake8|isort|black|"
    r"mypy|pyright|pyupgrade|eslint|prettier|golangci(?:-lint)?|lint(?:er|ing|s)?|"
    r"dependenc(?:y|ies)|deps|requirements|typos?)\b"
    r"|\b(?:chore|ci)(?:\([^)\n]*\))?:|\bbuild\(deps\)",
    re.IGNORECASE,
)


def is_chore(text: str) -> bool:
    """Whether ``text`` (a commit's subject, a task's words) speaks of a chore."""
    return _CHORE.search(text) is not None


#: What every chore subject holds, lower-cased (a cheap search of all of them first).
_CHORE_PARTS: Final = (
    "bump", "dependabot", "commit", "ruff", "flake8", "isort", "black", "mypy", "pyright",
    "pyupgrade", "eslint", "prettier", "golangci", "lint", "dependenc", "deps",
    "requirements", "typo", "chore", "ci:", "ci(",
)  # fmt: skip


def chore_scale(subjects: Sequence[str], count: int, weight: float) -> list[float] | None:
    """The weight in co-change of each of ``count`` commits (``subjects``: theirs, in
    the same order): ``weight`` for a chore, 1 for the rest (and for a commit
    without a subject); ``None`` when every one weighs 1."""
    if weight == 1.0 or not subjects:
        return None
    chores = [i for i in _may_be_chores(subjects[:count]) if is_chore(subjects[i])]
    if not chores:
        return None
    scale = [1.0] * count
    for i in chores:
        scale[i] = weight
    return scale


def _may_be_chores(subjects: Sequence[str]) -> list[int]:
    """The indexes of the ``subjects`` that may be chores, in order: those holding one
    of :data:`_CHORE_PARTS`, found by ``str.find`` in all of them, one a line (a
    subject holding a line break: all of them)."""
    lines = "\n".join(subjects).lower()
    if lines.count("\n") != len(subjects) - 1:
        return list(range(len(subjects)))
    found: set[int] = set()
    for part in _CHORE_PARTS:
        at = lines.find(part)
        while at >= 0:
            found.add(at)
            at = lines.find(part, at + 1)
    starts = [0, *accumulate(len(subject) + 1 for subject in subjects)]
    return sorted({bisect_right(starts, at) - 1 for at in found})
