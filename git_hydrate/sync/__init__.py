"""Sharing tasks through the team's git remotes: pull, push, sync, setup, removal.

The network goes through the ``git`` binary only (the user's credentials, ssh
configuration, proxies, protocol v2). The rules, each one a way not to lose
somebody's work:

* Fetch into a mirror namespace, ``refs/hydrate-remotes/<remote>/``, never
  straight into ``refs/hydrate/`` and never into ``refs/remotes/``; then merge
  task by task (:mod:`.pull`), telling behind from ahead for all tasks at once
  (:mod:`.ancestry`). Every write is a compare-and-swap.
* Fetch with ``--no-filter`` so partial clones get the bodies.
* Push without force and read the per-ref results (:mod:`.push`); send
  nothing a pull would refuse (:mod:`.outgoing`, pull's own checks); name a
  remote copy no pull takes with the push that replaces it (:mod:`.damaged`).
* Config gets at most one wildcard fetch refspec (``setup``); never
  ``remote.<name>.push``.
* ``refs/hydrate/archive`` and ``refs/hydrate/removed`` travel with push and
  pull and merge as unions (:mod:`.union`, :mod:`.removal`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec

from ..archive import ARCHIVE_REF
from ..ids import TASK_REF_PREFIX
from ..store import Repository
from ..taskrefs import TaskRefs
from .fetch import NOT_FETCHED
from .manage import remove_task, setup
from .pulling import check_ids, pull, pull_into
from .pushing import push, push_into, settled
from .remotes import MIRROR_PREFIX, Remote, resolve_remote
from .removal import REMOVED_REF
from .report import FAILED_ACTIONS, Outcome, Report

__all__ = [
    "ARCHIVE_REF",
    "FAILED_ACTIONS",
    "MAX_SYNC_ROUNDS",
    "MIRROR_PREFIX",
    "REMOVED_REF",
    "Outcome",
    "Remote",
    "Report",
    "pull",
    "push",
    "remove_task",
    "resolve_remote",
    "setup",
    "share",
    "sync",
]

#: How many pull-and-push rounds ``sync`` makes before reporting what is still rejected.
MAX_SYNC_ROUNDS: Final = 3


def sync(refs: TaskRefs, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Pull, then push; when a push is rejected (someone pushed meanwhile), pull and retry.

    A task the push found ``behind`` (the remote moved since the pull) is pulled
    again too. Only races (``fetch first``, ``stale info``, ``non-fast-forward``) make
    another round, at most :data:`MAX_SYNC_ROUNDS` in all; a refusal a pull
    cannot settle (a declining hook, a hidden namespace) is reported after the
    first. Each task's outcome is counted once, whatever the rounds.
    """
    wanted = check_ids(ids)
    where = resolve_remote(refs, remote, command="sync")
    report = Report("sync", where.display)
    mirror = pull_into(refs, where, wanted, report)
    rounds = 1
    unchanged = settled(refs, where, wanted or None, mirror)
    if unchanged is not None:
        # nothing to push: a no-op sync is one fetch
        report.outcomes = _once_each([o for o in report.outcomes if o.action != "ahead"])
        tasks = [f"refs/hydrate/{n.decode()}" for n in unchanged if n.startswith(b"tasks/")]
        report.up_to_date = len(tasks) - _counted(report, tasks)
        return report
    while True:
        pushed = Report("push", where.display)
        push_into(refs, where, wanted or None, not wanted, pushed, mirror)
        # rejected, or behind (the remote moved since the pull, this clone did not):
        # another pull settles either
        moved = pushed.failed("rejected") + pushed.failed("behind")
        # A task whose remote data was skipped stays rejected: no point pulling again.
        if not set(moved) - set(report.failed("skipped")) or rounds >= MAX_SYNC_ROUNDS:
            break
        # (a deletion that waited for a refused record may go in the next round)
        retried = ("rejected", "behind", "not-deleted", "not-replaced")
        report.outcomes += [o for o in pushed.outcomes if o.action not in retried]
        rounds += 1
        mirror = pull_into(refs, where, wanted, report)
    # (a sync would skip its copy there again: the advice to sync goes in circles)
    damaged = set(report.failed("skipped"))
    # (the push refusing the very copy the pull skipped says it twice: once will do)
    skipped_at = {o.name: o.new for o in report.outcomes if o.action == "skipped"}
    locked = {o.name for o in report.outcomes if o.detail.startswith(NOT_FETCHED)}
    report.outcomes += [
        msgspec.structs.replace(o, detail=_not_settled(where, o.name in locked))
        if o.action in ("rejected", "behind") and o.name in damaged
        else o
        for o in pushed.outcomes
        if not (o.action == "refused" and o.old is not None and skipped_at.get(o.name) == o.old)
    ]
    if any(o.action in ("pushed", "pushed-new") for o in report.outcomes):
        report.notes = []  # "lists no tasks" was only true before this push
    report.notes = list(dict.fromkeys(report.notes + pushed.notes))
    # "ahead" only says a push is due, and the push came right after.
    report.outcomes = _once_each([o for o in report.outcomes if o.action != "ahead"])
    report.up_to_date = pushed.up_to_date - _counted(report, pushed.up_to_date_refs)
    report.rounds = rounds
    return report


def _counted(report: Report, up_to_date: list[str]) -> int:
    """How many of the ``up_to_date`` refs are tasks ``report`` already counts (the
    pull brought them, or an earlier round pushed them): counted once, not twice."""
    named = {o.name for o in report.outcomes if o.is_task}
    prefix = TASK_REF_PREFIX.decode()
    return sum(ref.startswith(prefix) and ref[len(prefix) :] in named for ref in up_to_date)


def share(
    command: str, directory: str | None, remote: str | None, ids: Iterable[str] = ()
) -> Report:
    """``pull``, ``push`` or ``sync`` (``command``) in the repository at ``directory``
    (``None``: the current one), as :class:`~git_hydrate.Ledger` runs them, for a
    caller that needs nothing else of it (the command line's fast path)."""
    with Repository(directory) as repo:
        refs = TaskRefs(repo)
        if command == "pull":
            return pull(refs, remote, ids)
        if command == "push":
            return push(refs, remote, ids)
        return sync(refs, remote, ids)


def _once_each(outcomes: list[Outcome]) -> list[Outcome]:
    """The outcomes with a task's repeated action (one per round) kept once, the last."""
    last: dict[tuple[str, str, bool], int] = {}
    for index, outcome in enumerate(outcomes):
        last[(outcome.name, outcome.action, outcome.is_task)] = index
    return [o for index, o in enumerate(outcomes) if last[(o.name, o.action, o.is_task)] == index]


def _not_settled(where: Remote, locked: bool) -> str:
    """Why a sync leaves a task the push found rejected or behind: the pull skipped it."""
    if locked:
        return "its mirror ref is locked here, a pull does not fetch it: see SKIPPED above"
    return f"{where.display}'s copy is damaged: see SKIPPED above"
