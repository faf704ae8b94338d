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
    ledger's own work tree is labelled by its directory name (two of one name,
    ``a/lib`` and ``b/lib``, by as many of their last folders as tell them
    apart: ``a/lib/``, ``b/lib/``), so resources never replace each other's files.
    """
    items = [item if isinstance(item, tuple) else (item, None) for item in paths]
    top = refs.repo.work_tree
    own = os.path.realpath(top) if top is not None else None
    others = [os.path.realpath(os.fspath(p)) for p, prefix in items if prefix is None]
    labels = _labels([real for real in others if real != own])
    total = 0
    for path, given in items:
        if given is not None:
            prefix = given
        else:
            real = os.path.realpath(os.fspath(path))
            prefix = "" if real == own else labels[real] + "/"
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


def _labels(reals: list[str]) -> dict[str, str]:
    """Each distinct path of ``reals`` (absolute, resolved) labelled by its fewest
    last components that no other path ends with."""
    distinct = sorted(set(reals))
    parts = {real: real.strip(os.sep).split(os.sep) for real in distinct}
    labels: dict[str, str] = {}
    for real in distinct:
        for depth in range(1, len(parts[real]) + 1):
            tail = parts[real][-depth:]
            if not any(other != real and parts[other][-depth:] == tail for other in distinct):
                break
        labels[real] = "/".join(tail)
    return labels
