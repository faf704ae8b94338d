"""The Ledger: the library's one object — tasks and their context in a git repository.

A thin facade: each method validates nothing of its own and makes one call
into the module that owns the operation (:mod:`.tasks`, :mod:`.attachments`,
:mod:`.pack`, :mod:`.lifecycle`, :mod:`.audit`, :mod:`.listing`,
:mod:`.hydrate`, :mod:`.sync`, :mod:`.doctor`), all of which stand on the
task-ref core (:class:`~git_hydrate.taskrefs.TaskRefs`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from . import attachments, audit, dependencies, lifecycle, listing, tasks, validate
from .errors import NotFound
from .ledger_packing import Packing
from .results import (
    AddManyResult,
    ArchivedItem,
    ArchiveResult,
    CheckpointResult,
    ClaimResult,
    ContextEntry,
    ContextResult,
    HydrateResult,
    ListItem,
    LogEntry,
    MoveResult,
    ReadyItem,
    ReleaseResult,
    RemoveResult,
    StatusDict,
    TaskDict,
)
from .settings import Settings
from .store import Repository
from .taskrefs import TaskRefs

if TYPE_CHECKING:
    from .hydrate import RankResult, Suggestion
    from .hydrate.tree import Progress, TreeOptions
    from .interop import ImportReport
    from .pack.memo import BodyMemo
    from .search import SearchHit
    from .sync import Report

__all__ = ["Ledger"]


class Ledger(Packing):
    """Tasks and context in a git repository.

    Args:
        path: A directory inside a repository, a ``.git`` directory or a bare
            repository. ``None`` (the default) means the current directory and
            honours ``GIT_DIR`` like git does.
        clock: Returns the current POSIX time; tests pass a fixed one. By
            default git's: ``GIT_COMMITTER_DATE``/``GIT_AUTHOR_DATE`` when
            set, else the wall clock.

    Use it as a context manager so the repository is closed::

        with Ledger("/path/to/repo") as ledger:
            ledger.add_task("M-1002", objective="...", acceptance="...")
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.repo = Repository(path)
        #: The task-ref core every operation stands on.
        self.refs = TaskRefs(self.repo, clock)

    def close(self) -> None:
        """Close the repository."""
        self.repo.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def settings(self) -> Settings:
        """The repository's configuration (``hydrate.*`` and what git-hydrate reads)."""
        return self.repo.settings

    @property
    def retries(self) -> int:
        """How many writes of this Ledger lost a race and were re-applied."""
        return self.refs.retries

    # -- tasks ------------------------------------------------------------------

    def task_ids(self) -> list[str]:
        """Every live task id, sorted."""
        return self.refs.task_ids()

    def exists(self, task_id: str) -> bool:
        """Whether a live task ``task_id`` exists."""
        return self.refs.exists(task_id)

    def stray_task_refs(self) -> list[str]:
        """Refs under ``refs/hydrate/tasks/`` that are not task ids, printable, sorted."""
        return [n.decode("utf-8", "backslashreplace") for n in self.refs.stray_ref_names()]

    def add_task(self, task_id: str, objective: str, acceptance: str, **fields: Any) -> TaskDict:
        """Create a task (see :func:`git_hydrate.tasks.add_task` for the fields).
        Creating one that exists is a :class:`~git_hydrate.errors.Conflict`."""
        return tasks.add_task(self.refs, task_id, objective, acceptance, **fields)

    def edit_task(
        self, task_id: str, *, allow_secrets: bool | None = None, **fields: Any
    ) -> TaskDict:
        """Change some of a task's fields (see :data:`git_hydrate.tasks.EDITABLE_FIELDS`);
        text that looks like a credential is refused unless ``allow_secrets``."""
        return tasks.edit_task(self.refs, task_id, allow_secrets=allow_secrets, **fields)

    def not_here(self, task_ids: Iterable[str]) -> list[tuple[str, str]]:
        """The ids among ``task_ids`` (dependencies, say) that are no task here, live
        or archived, each with a live id it may be a slip for, or ``""``."""
        return dependencies.not_here(self.refs, task_ids)

    def get_task(self, task_id: str) -> TaskDict:
        """The task's fields (plus ``attachments``, ``tip``, ``archived``), live or archived."""
        return tasks.get_task(self.refs, task_id)

    def import_tasks(self, text: str, fmt: str | None = None, **options: Any) -> ImportReport:
        """Create or update tasks from another tool's export (``origin``, ``prefix``,
        ``dry_run``, ``allow_secrets``: see :func:`git_hydrate.interop.import_text`)."""
        from .interop import import_text

        return import_text(self.refs, text, fmt, **options)

    def export_tasks(self, task_ids: Iterable[str], fmt: str = "markdown") -> str:
        """Tasks as Markdown for an issue, or as beads or task-master JSON."""
        from .interop import export_text

        return export_text(self.refs, list(task_ids), fmt)

    def search(self, query: str, **options: Any) -> list[SearchHit]:
        """Tasks matching ``query``, best first (``archived``, ``attachments``,
        ``limit``: see :func:`git_hydrate.search.search_tasks`)."""
        from .search import search_tasks  # (only for this command)

        return search_tasks(self.refs, query, **options)

    def children(self, task_id: str) -> list[ListItem]:
        """The live tasks whose parent is ``task_id``, sorted by id."""
        return listing.children(self.refs, task_id)

    def list_tasks(
        self,
        *,
        status: str | Iterable[str] | None = None,
        kind: str | Iterable[str] | None = None,
        tag: str | Iterable[str] | None = None,
        archived: bool = False,
    ) -> list[ListItem] | list[ArchivedItem]:
        """A summary of every live task (or, with ``archived``, every archived one),
        sorted by id: any of ``status``, any of ``kind``, all of ``tag``."""
        if archived:
            return listing.archived_tasks(self.refs, status=status, kind=kind, tag=tag)
        return listing.list_tasks(self.refs, status=status, kind=kind, tag=tag)

    # -- context ------------------------------------------------------------------

    def add_context(
        self,
        task_id: str,
        body: str | bytes,
        source: str,
        priority: int = 0,
        ttl: float | None = None,
        *,
        allow_secrets: bool | None = None,
    ) -> ContextResult:
        """Attach ``body`` to a task; attaching it again updates source, priority, expiry.

        A body that looks like it carries a credential is refused unless
        ``allow_secrets`` (``None``: ``git config hydrate.allowSecrets``).
        """
        return attachments.add_context(
            self.refs, task_id, body, source, priority, ttl, allow_secrets=allow_secrets
        )

    def add_contexts(
        self,
        task_id: str,
        items: Iterable[tuple[str | bytes, str, int, float | None]],
        *,
        allow_secrets: bool | None = None,
    ) -> AddManyResult:
        """Attach many bodies in one commit: ``(body, source, priority, ttl)`` each."""
        return attachments.add_contexts(self.refs, task_id, items, allow_secrets=allow_secrets)

    def remove_context(self, task_id: str, digest: str) -> ContextResult:
        """Detach the body ``digest`` (a full sha256, or a unique prefix of 4+ digits)."""
        return attachments.remove_context(self.refs, task_id, digest)

    def remove_contexts(
        self,
        task_id: str,
        digests: Iterable[str] = (),
        *,
        source: str | None = None,
        everything: bool = False,
    ) -> RemoveResult:
        """Detach several bodies in one commit: hashes (or prefixes), the ones whose
        source matches the glob ``source``, or ``everything``."""
        return attachments.remove_contexts(
            self.refs, task_id, digests, source=source, everything=everything
        )

    def context_entries(self, task_id: str) -> list[ContextEntry]:
        """The task's attachments in packing order: priority descending, then hash."""
        return attachments.context_entries(self.refs, task_id)

    def task_with_context(self, task_id: str) -> tuple[TaskDict, list[ContextEntry]]:
        """:meth:`get_task` and :meth:`context_entries` from one reading of the task:
        both describe the same commit (``tip``), whatever another writer does meanwhile."""
        state, archived = self.refs.load_any(task_id)
        return tasks.task_dict(state, archived), [attachments.entry(link) for link in state.links]

    def read_body(self, task_id: str, digest: str) -> str:
        """The text of one attached body, checked against its sha256."""
        return attachments.read_body(self.refs, task_id, digest)

    def attachment(self, task_id: str, prefix: str) -> tuple[ContextEntry, str]:
        """The attachment whose hash starts with ``prefix`` (or whose source it is),
        and its body (see
        :func:`git_hydrate.attachments.find_attachment` for the errors); also the
        text of the task's parent that its prompt carries as its first attachment
        (``parent task ID``), which a prompt's notice may name by its hash."""
        try:
            found = attachments.find_attachment(self.refs, task_id, prefix)
        except NotFound:
            from .pack.stored import parent_attachment  # (only for this case)

            parent = parent_attachment(self.refs, self.refs.load(task_id).task.parent)
            wanted = prefix.lower()
            if parent is None or not (
                (len(wanted) >= 4 and parent.hash.startswith(wanted)) or parent.source == prefix
            ):
                raise
            entry: ContextEntry = {
                "hash": parent.hash,
                "source": parent.source,
                "priority": parent.priority,
                "expires": None,
                "size": parent.size or 0,
                "oid": "",
                "score": None,
                "reason": "the task's parent",
            }
            return entry, str(parent.body)
        return found, attachments.read_body(self.refs, task_id, found["hash"])

    # -- coordination -------------------------------------------------------------

    def ready(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        tag: str | Iterable[str] | None = None,
        include_stale: float | None = None,
        now: datetime | float | None = None,
        damaged: list[str] | None = None,
    ) -> list[ReadyItem]:
        """The open, unclaimed tasks whose dependencies are all done, in the order
        to take them (see :func:`git_hydrate.claims.ready`)."""
        from .claims import ready

        return ready(
            self.refs, kind=kind, tag=tag, include_stale=include_stale, now=now, damaged=damaged
        )

    def held(
        self,
        holder: str | None = None,
        *,
        kind: str | Iterable[str] | None = None,
        tag: str | Iterable[str] | None = None,
        damaged: list[str] | None = None,
    ) -> list[ReadyItem]:
        """The tasks ``holder`` (default: the git identity) holds and has not finished,
        oldest claim first (see :func:`git_hydrate.readyqueue.held`)."""
        from .claims import default_holder, held

        who = validate.holder(holder) if holder is not None else default_holder(self.refs)
        return held(self.refs, who, kind=kind, tag=tag, damaged=damaged)

    def pull_queue(self, remote: str | None = None, *, local: bool = False) -> Report | None:
        """Pull every task from ``remote`` (else ``hydrate.claimRemote``, unless
        ``local``) before reading the queue; ``None`` when nothing was pulled."""
        from .claims import pull_queue

        return pull_queue(self.refs, remote, local=local)

    def claim(self, task_id: str | None = None, **options: Any) -> ClaimResult:
        """Claim a task (``None``: the first ready one), locally or through a remote
        (see :func:`git_hydrate.claims.claim` for the options)."""
        from .claims import claim

        return claim(self.refs, task_id, **options)

    def release(self, task_id: str, **options: Any) -> ReleaseResult:
        """Give a claimed task back (see :func:`git_hydrate.claims.release`)."""
        from .claims import release

        return release(self.refs, task_id, **options)

    # -- lifecycle ----------------------------------------------------------------

    def set_status(self, task_id: str, station: str) -> MoveResult:
        """Move the task to ``station`` (see :data:`git_hydrate.model.TRANSITIONS`)."""
        return lifecycle.set_status(self.refs, task_id, station)

    def add_checkpoint(
        self,
        task_id: str,
        summary: str,
        evidence: str = "",
        next_step: str = "",
        tokens: int | None = 0,
        *,
        allow_secrets: bool | None = None,
    ) -> CheckpointResult:
        """Record a checkpoint; ``tokens`` is cumulative and may not decrease. Text
        that looks like a credential is refused unless ``allow_secrets``."""
        return lifecycle.add_checkpoint(
            self.refs, task_id, summary, evidence, next_step, tokens, allow_secrets=allow_secrets
        )

    def status(self, task_id: str, now: datetime | float | None = None) -> StatusDict:
        """The task's station, counts, latest checkpoint, budget and metrics.

        Keys: ``task_id, title, status, kind, priority, tags, archived,
        attachments, live, expired, checkpoints, checkpoint, token_budget,
        metrics {reported_tokens, measured_cash_cost, measured_token_savings},
        budget_remaining, over_budget, depends`` (each dependency's ``task_id``,
        ``station``, ``None`` when this clone does not have it, and ``waiting``).
        Cost and savings are ``None``: nothing here meters providers.
        """
        return lifecycle.status(self.refs, task_id, now)

    def statuses(
        self, station: str | Iterable[str] | None = None, now: datetime | float | None = None
    ) -> list[StatusDict]:
        """:meth:`status` of every live task, optionally only at ``station``."""
        return lifecycle.statuses(self.refs, station, now)

    def log(self, task_id: str, limit: int | None = None) -> list[LogEntry]:
        """The task's history, newest first, from its commit chain."""
        return audit.log(self.refs, task_id, limit)

    def commits(self, task_id: str) -> list[dict[str, str | None]]:
        """The work commits carrying ``Hydrate-Task: task_id``, newest first
        (see :func:`git_hydrate.audit.commits`)."""
        return audit.commits(self.refs, task_id)

    def archive(self, task_ids: Iterable[str] = (), *, done: bool = False) -> ArchiveResult:
        """Fold done/cancelled tasks into ``refs/hydrate/archive``; delete their refs
        (one id may be given as a string)."""
        ids = [task_ids] if isinstance(task_ids, str) else task_ids
        return lifecycle.archive(self.refs, ids, done=done)

    def unarchive(self, task_id: str) -> TaskDict:
        """Restore an archived task's ref."""
        return lifecycle.unarchive(self.refs, task_id)

    # -- the work tree's current task ----------------------------------------------

    def start(self, task_id: str) -> dict[str, Any]:
        """Make ``task_id`` this work tree's current task and move it to ``in_progress``
        (see :func:`git_hydrate.current.start`)."""
        from .current import start

        return start(self.refs, task_id)

    def current(self) -> dict[str, Any] | None:
        """This work tree's current task ``{task_id, source, branch}``, or ``None``:
        the one started here, else one named by the branch (``hydrate.taskPattern``)."""
        from .current import current

        return current(self.refs)

    def clear_current(self) -> str | None:
        """Forget the task started in this work tree; return its id."""
        from .current import clear

        return clear(self.refs)

    def resolve_id(self, task_id: str, *, new: bool = False) -> str:
        """``task_id``, or for ``@`` the current task's id (:class:`NotFound` if none);
        with ``new``, the id the branch names, for a task to create."""
        from .current import new_id, resolve

        return new_id(self.refs, task_id) if new else resolve(self.refs, task_id)

    # -- hydration ------------------------------------------------------------------

    def refresh(self, task_id: str) -> list[HydrateResult | dict[str, str]]:
        """Take every add-tree run the task recorded again (``prompt --refresh``);
        an unchanged revision run is recognised without listing a file (see
        :func:`git_hydrate.hydrate.refreshing.refresh`)."""
        from .hydrate import refresh

        return refresh(self.refs, task_id)

    def add_tree(
        self,
        task_id: str,
        pathspecs: Iterable[str] = (),
        *,
        progress: Progress | None = None,
        memo: BodyMemo | None = None,
        **options: Unpack[TreeOptions],
    ) -> HydrateResult:
        """Attach a file set to a task in one commit: one link per file path.

        The file set is the committed tree of ``rev`` (default ``HEAD``; files
        are linked by their existing blobs, nothing is copied), or with
        ``worktree`` the work tree as ``git ls-files --cached --others
        --exclude-standard`` sees it, or a ``directory``. ``pathspecs``
        narrow it. Re-hydrating replaces changed files' bodies and removes
        the links of files gone (within the pathspecs and ``prefix``); an
        unchanged file set writes nothing. Rules, limits and skip reasons:
        :mod:`git_hydrate.hydrate.rules`.

        Files are ranked for the task (its files in play and tests first, then
        by co-change history, naming, words and directory; see
        :mod:`git_hydrate.hydrate.placement` for the priority scale) unless
        ``priority`` is given (every file gets it) or ``ranked`` is false
        (every file at 0). The task's files in play and tests are attached
        even outside ``pathspecs``, or reported ``missing``.

        ``memo``: a :class:`~git_hydrate.pack.BodyMemo` that keeps (up to its
        limit) the bodies this run reads, for a prompt built next with the same
        memo (:meth:`write_prompt`), which then takes them from memory instead
        of reading and hashing them again (``add-tree --prompt``).

        Returns:
            ``{added, updated, unchanged, removed, removed_paths, skipped:
            [{path, reason, bytes[, same_as]}], total_bytes, files, changed,
            tip, task_id, mode, from, commit}``.
        """
        from .hydrate import add_tree

        return add_tree(self.refs, task_id, pathspecs, progress=progress, memo=memo, **options)

    def add_diff(
        self,
        task_id: str,
        rev_range: str | None = None,
        pathspecs: Iterable[str] = (),
        **options: Any,
    ) -> HydrateResult:
        """Attach what changed, one body per file's diff (source ``diff:<range>:<path>``).

        ``rev_range`` is ``A..B``, ``A...B`` or ``REV`` (``REV...HEAD``); by
        default the current branch against its upstream, else the default
        branch. Options: ``staged``, ``worktree``, ``log``, ``priority``,
        ``max_file_bytes``, ``max_total_bytes``, ``allow_secrets`` (see
        :func:`git_hydrate.hydrate.add_diff`).
        """
        from .hydrate import add_diff

        return add_diff(self.refs, task_id, rev_range, pathspecs, **options)

    def rank(self, task_id: str, *, rev: str | None = None) -> RankResult:
        """Rank the task's hydrated files again (after its files in play changed, or
        with the history of ``rev``): priorities only, one commit, no body read."""
        from .hydrate import rerank

        return rerank(self.refs, task_id, rev=rev)

    def suggest(self, task_id: str, *, rev: str | None = None) -> Suggestion:
        """The files the task's text describes among ``rev``'s files (default HEAD),
        with reasons, to accept into its files in play; writes nothing."""
        from .hydrate import suggest

        return suggest(self.refs, task_id, rev=rev)

    # -- sharing and health ---------------------------------------------------------

    def pull(self, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
        """Fetch the remote's tasks and merge them task by task (see :func:`sync.pull`)."""
        from .sync import pull

        return pull(self.refs, remote, ids)

    def push(self, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
        """Push task refs without force (see :func:`sync.push`)."""
        from .sync import push

        return push(self.refs, remote, ids)

    def sync(self, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
        """Pull, then push, retrying rejected pushes (see :func:`sync.sync`)."""
        from .sync import sync

        return sync(self.refs, remote, ids)

    def repair(self) -> list[dict[str, Any]]:
        """Mend the tasks a pull would refuse, where a write can (see :func:`repair.repair`)."""
        from .repair import repair

        return repair(self.refs)

    def doctor(self) -> dict[str, Any]:
        """Check every task, the shared refs and lock files (see :func:`doctor.check`)."""
        from .doctor import check

        return check(self.refs)
