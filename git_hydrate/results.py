"""The shapes of what the library returns: typed dicts, so results stay plain JSON.

Every public function of git-hydrate returns one of these (or a list of
them). They are ``TypedDict``s rather than Structs on purpose: the seed's API
is dict-shaped (``Ledger.pack()["packet"]``, ``context_entries()``), the CLI
prints them as JSON unchanged, and a type checker still knows every key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, NotRequired, TypedDict, TypeVar

__all__ = [
    "SHOWN_ITEMS",
    "AddManyResult",
    "ArchiveResult",
    "ArchivedItem",
    "CheckpointDict",
    "CheckpointResult",
    "ClaimResult",
    "ContextEntry",
    "ContextResult",
    "DependencyDict",
    "ExpandResult",
    "Flagged",
    "HydrateResult",
    "ListItem",
    "LogEntry",
    "Metrics",
    "MoveResult",
    "Omission",
    "PackResult",
    "PathNoteDict",
    "PromptFields",
    "PromptResult",
    "ReadyItem",
    "ReleaseResult",
    "RemoveResult",
    "Shrunk",
    "SkippedDict",
    "StatusDict",
    "TaskDict",
    "UnattachedDict",
    "shown_items",
]


_Item = TypeVar("_Item")

#: How many of a task's dependencies, dependents, parts or tags a view for reading
#: lists: ``show``, the board's task page (``/api/task/ID``) and the MCP tool
#: ``show_task``; each says how many more there are, and ``show --json`` lists them
#: all (a task of 100,000 dependencies made ``show`` print 889 KB).
SHOWN_ITEMS: Final = 100


def shown_items(items: Sequence[_Item]) -> tuple[list[_Item], int]:
    """The first :data:`SHOWN_ITEMS` of ``items``, and how many more there are."""
    return list(items[:SHOWN_ITEMS]), max(0, len(items) - SHOWN_ITEMS)


class PathNoteDict(TypedDict):
    """A file in play or a test: ``{path, note}``."""

    path: str
    note: str


class CheckpointDict(TypedDict):
    """A stored checkpoint."""

    summary: str
    evidence: str
    next_step: str
    tokens: int
    at: str
    author: str


class LatestCheckpoint(TypedDict):
    """The latest checkpoint as the packet carries it."""

    summary: str
    evidence: str
    next_step: str


class TaskDict(TypedDict):
    """A task as :meth:`Ledger.get_task` returns it."""

    task_id: str
    title: str
    objective: str
    acceptance: str
    acceptance_criteria: list[str]
    scope: list[str]
    kind: str
    priority: int
    token_budget: int
    tags: list[str]
    files: list[PathNoteDict]
    tests: list[PathNoteDict]
    status: str
    checkpoints: list[CheckpointDict]
    created_at: str
    depends_on: list[str]
    assignee: str
    claimed_at: str
    taken_from: str
    claimed_via: str
    parent: str
    source: str
    checkpoint: LatestCheckpoint | None
    attachments: int
    tip: str | None
    archived: bool


class ContextEntry(TypedDict):
    """One attachment in packing order (:meth:`Ledger.context_entries`)."""

    hash: str
    source: str
    priority: int
    expires: str | None
    size: int
    oid: str
    score: float | None
    reason: str


class ContextResult(ContextEntry, total=False):
    """What attaching or detaching one body did."""

    task_id: str
    created: bool
    changed: bool
    removed: bool


class RemoveResult(TypedDict):
    """What detaching several bodies in one commit did."""

    task_id: str
    removed: list[ContextEntry]
    count: int


class AddManyResult(TypedDict):
    """What attaching many bodies in one commit did."""

    task_id: str
    added: int
    updated: int
    unchanged: int


class Omission(TypedDict):
    """An attachment left out of a packet: the seed's three keys."""

    hash: str
    source: str
    reason: Literal["expired", "byte_budget"]


class Shrunk(TypedDict):
    """An attachment kept as its outline: its own hash and the outline's."""

    hash: str
    source: str
    outline_hash: str
    bytes_saved: int


class PackResult(TypedDict):
    """``Ledger.pack()``: the packet and its exact size.

    ``max_tokens`` and ``token_encoding`` are present when tokens were
    counted (``token_count`` is then exact); ``shrunk`` with outlines on;
    ``flagged`` when a file the task names is not held whole or not attached.
    """

    packet: dict[str, Any]
    packet_bytes: int
    max_bytes: int | None
    token_estimate: int
    token_count: int | None
    note: str
    omitted: list[Omission]
    max_tokens: NotRequired[int | None]
    token_encoding: NotRequired[str]
    shrunk: NotRequired[list[Shrunk]]
    flagged: NotRequired[list[Flagged]]


class ExpandResult(TypedDict):
    """``Ledger.expand()``: the packet, its prompt, and their sizes.

    With tokens counted: ``token_count`` (the prompt's), ``packet_tokens``,
    ``total_tokens``, ``max_tokens``, ``token_encoding``; ``shrunk`` with
    outlines on.
    """

    packet: dict[str, Any]
    prompt: str
    packet_bytes: int
    prompt_bytes: int
    total_bytes: int
    max_bytes: int | None
    token_estimate: int
    note: str
    omitted: list[Omission]
    token_count: NotRequired[int]
    packet_tokens: NotRequired[int]
    total_tokens: NotRequired[int]
    max_tokens: NotRequired[int | None]
    token_encoding: NotRequired[str]
    shrunk: NotRequired[list[Shrunk]]
    flagged: NotRequired[list[Flagged]]


class Flagged(TypedDict):
    """A file the task names (a file in play, a named test) that the prompt does
    not hold whole (``kept``: ``outline``, ``omitted``), or that has no attachment
    at all (``unattached``: ``reason`` is add-tree's skip reason, ``None`` when no
    recorded run left it out, and ``size`` ``None`` when not known); the summary
    line flags it."""

    source: str
    named: str  # "file in play" or "named test"
    size: int | None
    kept: Literal["outline", "omitted", "unattached"]
    reason: NotRequired[str | None]


class PromptFields(TypedDict):
    """``Ledger.write_prompt()``: what a prompt's walk says of it (see
    :class:`PromptResult`), without the prompt (it was written out) and its packet.

    ``prompt_bytes`` is what ``max_bytes`` bounds; ``kept`` of ``attachments``
    made it in, and ``needed_bytes`` is the budget that would hold them all
    whole. With a token budget: ``token_count`` (exact), ``max_tokens``,
    ``token_encoding``, ``needed_tokens`` (the token budget that would hold
    them all); ``shrunk`` with outlines on.
    """

    packet_bytes: int
    prompt_bytes: int
    max_bytes: int | None
    token_estimate: int
    note: str
    omitted: list[Omission]
    kept: int
    attachments: int
    needed_bytes: int
    needed_tokens: NotRequired[int]
    token_count: NotRequired[int]
    max_tokens: NotRequired[int | None]
    token_encoding: NotRequired[str]
    shrunk: NotRequired[list[Shrunk]]
    flagged: NotRequired[list[Flagged]]
    decisions: NotRequired[list[str]]


class PromptResult(PromptFields):
    """``Ledger.prompt()``: the prompt measured alone (:class:`PromptFields`), with
    the prompt and its packet (the prompt is rendered from it; its size does not
    count)."""

    packet: dict[str, Any]
    prompt: str


class ListItem(TypedDict, total=False):
    """One task of ``list`` (``error`` instead of the fields for a damaged task)."""

    task_id: str
    title: str
    status: str
    kind: str
    priority: int
    tags: list[str]
    attachments: int
    assignee: str
    #: The task this one is a part of (``""``: none).
    parent: str
    error: str


class ArchivedItem(TypedDict):
    """One task of ``list --archived``."""

    task_id: str
    title: str
    status: str
    kind: str
    priority: int
    tags: list[str]
    attachments: int
    #: Who held it when it was archived (``""``: nobody).
    assignee: str
    #: The task it was a part of (``""``: none).
    parent: str
    archived_at: str
    archived_by: str


class Metrics(TypedDict):
    """What ``status`` reports of costs: only what workers declared."""

    reported_tokens: int
    measured_cash_cost: None
    measured_token_savings: None


class DependencyDict(TypedDict):
    """A dependency of a task and where it stands: ``station`` is ``None`` for a task
    this clone does not have (a pull may bring it); ``waiting``: not done yet."""

    task_id: str
    station: str | None
    waiting: bool


class StatusDict(TypedDict, total=False):
    """A task's lifecycle summary (``error`` alone for a damaged task in a listing)."""

    task_id: str
    title: str
    status: str
    kind: str
    priority: int
    tags: list[str]
    attachments: int
    assignee: str
    #: Since when ``assignee`` holds it, and whom it was taken from.
    claimed_at: str
    taken_from: str
    checkpoints: int
    checkpoint: CheckpointDict | None
    token_budget: int
    archived: bool
    live: int
    expired: int
    metrics: Metrics
    budget_remaining: int | None
    over_budget: bool
    #: With one task asked for: each task it depends on, and where that stands.
    depends: list[DependencyDict]
    error: str


#: A station change: ``{task_id, from, to, changed}``.
MoveResult = TypedDict("MoveResult", {"task_id": str, "from": str, "to": str, "changed": bool})


class CheckpointResult(CheckpointDict):
    """A recorded checkpoint, numbered from 1."""

    task_id: str
    number: int


class LogEntry(TypedDict):
    """One change in a task's history."""

    commit: str
    when: str
    who: str
    action: str
    summary: str
    details: dict[str, str]


class ArchiveResult(TypedDict):
    """What ``archive`` did."""

    archived: list[str]
    already_archived: list[str]
    damaged: list[dict[str, str]]


class SkippedDict(TypedDict, total=False):
    """A file hydration left out, and why."""

    path: str
    reason: str
    bytes: int
    same_as: str


#: What ``add-tree`` or ``add-diff`` did (``mode``/``from``/``commit`` for add-tree,
#: ``range`` for add-diff, with ``untracked`` under ``--worktree``; ``listing`` for a
#: directory).
class UnattachedDict(TypedDict):
    """A file the task names that add-tree left out: the prompt says it lacks it."""

    path: str
    named: str  # "file in play" or "named test"
    reason: str
    bytes: int


HydrateResult = TypedDict(
    "HydrateResult",
    {
        "task_id": str,
        "added": int,
        "updated": int,
        "unchanged": int,
        "reranked": int,
        "removed": int,
        "removed_paths": list[str],
        "skipped": list[SkippedDict],
        "total_bytes": int,
        "files": int,
        "changed": bool,
        "tip": str | None,
        "mode": str,
        "from": str,
        "commit": str | None,
        "range": str,
        "listing": str,
        "recognised": bool,
        "unattached": list[UnattachedDict],
        "untracked": list[str],
    },
    total=False,
)


class ReadyItem(TypedDict):
    """One task of ``ready``: open, unclaimed, every dependency done (or a stale claim)."""

    task_id: str
    title: str
    status: str
    kind: str
    priority: int
    tags: list[str]
    attachments: int
    created_at: str
    depends_on: list[str]
    assignee: str
    claimed_at: str
    stale: bool


class ClaimResult(TypedDict):
    """A claim: who holds the task now, since when, and from whom it was taken."""

    task_id: str
    assignee: str
    claimed_at: str
    taken_from: str
    status: str
    changed: bool
    remote: str | None
    attempts: int


class ReleaseResult(TypedDict):
    """A release: whose claim ended and the task's station after it."""

    task_id: str
    released: str
    status: str
    changed: bool
    remote: str | None
