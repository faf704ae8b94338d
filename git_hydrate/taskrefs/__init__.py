"""The task-ref core: reading, decoding and writing tasks, one ref each.

One concern per module:

- :mod:`.layout` — the tree of a task (``task.json``, ``links.json`` or
  ``links/<a>.json``, ``bodies/<aa>/<sha256>``) and the values a write works with;
- :mod:`.messages` — commit messages, dates, default titles;
- :mod:`.decode` — tasks decoded from their tip commits, many at once;
- :mod:`.fields` — fields a newer version wrote: kept, or the write refused;
- :mod:`.retry` — the one retry policy of every writer and what a write that gave up says;
- :mod:`.locks` — the lock files of this tool's own, beside git's ref locks;
- :mod:`.admission` — a new id's checks and its case-folded lock;
- :mod:`.refs` — :class:`TaskRefs`, through which everything above reads and writes tasks.

Everything above this package — the lifecycle, hydration, packing, sync and
doctor — reads and writes tasks through :class:`TaskRefs` alone.
"""

from __future__ import annotations

from ..ids import TASK_REF_PREFIX, names_a_task, ref_name
from .fields import unknown_link_fields, unknown_task_fields
from .layout import (
    FAN_OUT_LINKS,
    Change,
    TaskState,
    Unchanged,
    body_path,
    link_shard,
    link_tree_changes,
)
from .messages import commit_message, default_title, iso_utc, task_message
from .refs import TaskRefs
from .retry import MAX_ATTEMPTS, STALE_LOCK_SECONDS, attempts

__all__ = [
    "FAN_OUT_LINKS",
    "MAX_ATTEMPTS",
    "STALE_LOCK_SECONDS",
    "TASK_REF_PREFIX",
    "Change",
    "TaskRefs",
    "TaskState",
    "Unchanged",
    "attempts",
    "body_path",
    "commit_message",
    "default_title",
    "iso_utc",
    "link_shard",
    "link_tree_changes",
    "names_a_task",
    "ref_name",
    "task_message",
    "unknown_link_fields",
    "unknown_task_fields",
]
