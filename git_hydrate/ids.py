"""Task ids and the refs that hold them: the rules alone, importing nothing heavy.

Ref names are file names on some systems, so an id is kept to a safe set
(:data:`TASK_ID_RULES`). Code that only needs to check an id or name its ref
(the command line before it knows what it needs) gets the rules here, below
the model, without msgspec or the store.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Final

__all__ = [
    "TASK_ID_RE",
    "TASK_ID_RULES",
    "TASK_REF_PREFIX",
    "is_task_id",
    "names_a_task",
    "ref_name",
]

#: Where each task's ref lives: ``refs/hydrate/tasks/<id>``.
TASK_REF_PREFIX: Final = b"refs/hydrate/tasks/"
# \Z, not $: "$" also matches before a final newline, which would let "abc\n" in.
TASK_ID_RE: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
TASK_ID_RULES: Final = (
    "1-128 characters from ASCII letters, digits, '.', '_' and '-', starting with a letter or "
    "digit, without '..' and not ending in '.' or '.lock'"
)


#: :data:`TASK_ID_RULES` as one pattern (a pull asks it of every task id several times):
#: no "..", no final "." and no final ".lock" in any case.
_VALID_ID: Final = r"(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,127}(?<!\.)(?<!\.(?i:lock))\Z"
_VALID: Final = re.compile(_VALID_ID)
_VALID_BYTES: Final = re.compile(_VALID_ID.encode("ascii"))


def is_task_id(value: str) -> bool:
    """Whether ``value`` is a valid task id (:data:`TASK_ID_RULES`)."""
    return _VALID.match(value) is not None


def ref_name(task_id: str) -> bytes:
    """The ref of a task."""
    return TASK_REF_PREFIX + task_id.encode("ascii")


def names_a_task(name: bytes) -> bool:
    """Whether a ref name below ``refs/hydrate/tasks/`` is a valid task id."""
    return _VALID_BYTES.match(name) is not None
