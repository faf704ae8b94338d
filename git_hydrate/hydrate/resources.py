"""The seed's resource hydration: a task hydrated from one or several directories."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..taskrefs import TaskRefs
from .tree import add_tree

__all__ = ["hydrate_from_path", "hydrate_paths"]


def hydrate_from_path(
    refs: TaskRefs,
    task_id: str,
    path: str | os.PathLike[str],
    *,
    prefix: str = "",
    priority: int = 0,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
) -> int:
    """Hydrate a task from one resource directory; the number of files it now links.

    The seed's ``hydrate_tiers_from_project``: the ledger's own work tree is
    taken as ``--worktree`` (git's file set, unmodified files linked by their
    blobs); another git checkout by its ``git ls-files``; any other directory
    by a walk.
    """
    here = os.path.realpath(os.fspath(path))
    top = refs.repo.work_tree
    own = top is not None and os.path.realpath(top) == here
    result = add_tree(
        refs,
        task_id,
        worktree=own,
        directory=None if own else here,
        prefix=prefix,
        priority=priority,
        max_file_bytes=max_file_bytes,
        max_total_bytes=max_total_bytes,
    )
    return int(result["added"] + result["updated"] + result["unchanged"])


def hydrate_paths(
    refs: TaskRefs,
    task_id: str,
    paths: Iterable[str | os.PathLike[str] | tuple[str | os.PathLike[str], str]],
    *,
    priority: int = 0,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
) -> int:
    """Hydrate a task from several resources; the total number of files linked.

    The seed's ``hydrate_tiers_for_plan``. Each item is a directory or a
    ``(directory, prefix)`` pair; without a prefix, a resource other than the
    ledger's own work tree is labelled by its directory name, so resources
    never replace each other's files.
    """
    total = 0
    for item in paths:
        if isinstance(item, tuple):
            path, prefix = item
        else:
            path, prefix = item, ""
            top = refs.repo.work_tree
            real = os.path.realpath(os.fspath(path))
            if top is None or os.path.realpath(top) != real:
                prefix = os.path.basename(real) + "/"
        total += hydrate_from_path(
            refs,
            task_id,
            path,
            prefix=prefix,
            priority=priority,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
        )
    return total
