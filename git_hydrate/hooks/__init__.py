"""Git hooks: the pre-push artefact producer (:mod:`.prepush`), the commit trailers
(:mod:`.trailer`) and their shims (:mod:`.install`)."""

from __future__ import annotations

from .install import (
    HOOK_MARKER,
    MSG_HOOK_MARKER,
    REFRESH_HOOK_MARKER,
    TRAILER_HOOK_MARKER,
    hooks_directory,
    install,
    msg_hook_installed,
    msg_shim_text,
    refresh_shim_text,
    shim_text,
    status,
    trailer_shim_text,
    uninstall,
)
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
from .trailer import commit_msg, packet_sha256, prepare_commit_msg

__all__ = [
    "ARTEFACT_FORMAT",
    "DEFAULT_TASK_PATTERN",
    "HOOK_MARKER",
    "MAX_COMMITS_SCANNED",
    "MSG_HOOK_MARKER",
    "REFRESH_HOOK_MARKER",
    "TRAILER_HOOK_MARKER",
    "RefUpdate",
    "artefact_directory",
    "commit_msg",
    "concerned_tasks",
    "hooks_directory",
    "install",
    "msg_hook_installed",
    "msg_shim_text",
    "packet_sha256",
    "parse_pre_push",
    "pre_push",
    "prepare_commit_msg",
    "refresh_shim_text",
    "shim_text",
    "status",
    "strict_setting",
    "task_pattern",
    "trailer_shim_text",
    "uninstall",
    "updates_from_pre_commit",
]
