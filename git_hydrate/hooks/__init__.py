"""Git hooks: the pre-push artefact producer (:mod:`.prepush`) and its shim (:mod:`.install`)."""

from __future__ import annotations

from .install import HOOK_MARKER, hooks_directory, install, shim_text, status, uninstall
from .prepush import (
    ARTEFACT_FORMAT,
    DEFAULT_TASK_PATTERN,
    MAX_COMMITS_SCANNED,
    RefUpdate,
    artefact_directory,
    concerned_tasks,
    parse_pre_push,
    pre_push,
    strict_setting,
    task_pattern,
    updates_from_pre_commit,
)

__all__ = [
    "ARTEFACT_FORMAT",
    "DEFAULT_TASK_PATTERN",
    "HOOK_MARKER",
    "MAX_COMMITS_SCANNED",
    "RefUpdate",
    "artefact_directory",
    "concerned_tasks",
    "hooks_directory",
    "install",
    "parse_pre_push",
    "pre_push",
    "shim_text",
    "status",
    "strict_setting",
    "task_pattern",
    "uninstall",
    "updates_from_pre_commit",
]
