"""The stored data model: msgspec Structs written into each task's tree.

Field order is part of the storage format: never reorder fields of these
Structs, add new ones at the end with defaults. ``Meta`` constraints are
checked when bytes are decoded (data from a remote or a damaged repository);
values from users are validated before anything is written (``validate``).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Annotated, Final

import msgspec

__all__ = [
    "FORMAT_VERSION",
    "INITIAL_STATION",
    "KINDS",
    "LINKS_FANNED_FORMAT",
    "STATIONS",
    "TRANSITIONS",
    "TREE_ORIGIN",
    "ArchiveIndex",
    "ArchivedTask",
    "Checkpoint",
    "Link",
    "LinkList",
    "PathNote",
    "RemovalRecord",
    "RemovedTask",
    "Selection",
    "SkippedFile",
    "Task",
    "bad_link_id",
    "packing_key",
    "packing_sorted",
]

#: The storage format this version reads and writes. A task whose stored
#: format is higher is refused, never misread.
FORMAT_VERSION: Final = 1
#: ``links.json`` of this format holds no links: they are fanned out in
#: ``links/<aa>.json`` (a task of many links; see ``ledger.FAN_OUT_LINKS``).
LINKS_FANNED_FORMAT: Final = 2

KINDS: Final = ("code", "fix", "closure", "planning", "product")
#: The ``origin`` of add-tree's links: their ``path`` is a file of the repository.
TREE_ORIGIN: Final = "tree"

#: Lifecycle stations, in the order a task normally travels them.
STATIONS: Final = ("open", "in_progress", "blocked", "review", "done", "cancelled")
INITIAL_STATION: Final = "open"
#: Allowed moves between stations (a station may always be set to itself).
TRANSITIONS: Final[dict[str, tuple[str, ...]]] = {
    "open": ("in_progress", "blocked", "cancelled"),
    "in_progress": ("blocked", "review", "done", "open", "cancelled"),
    "blocked": ("open", "in_progress", "cancelled"),
    "review": ("in_progress", "done", "cancelled"),
    "done": ("open",),
    "cancelled": ("open",),
}

ObjectIdHex = Annotated[str, msgspec.Meta(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")]
# Link ids are decoded by length only and checked as hex in one pass over the
# whole list (``bad_link_id``): a pattern per field costs a regex call per link,
# which dominated reading a task of thousands of links.
_LinkSha256 = Annotated[str, msgspec.Meta(min_length=64, max_length=64)]
_LinkObjectId = Annotated[str, msgspec.Meta(min_length=40, max_length=64)]
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Priority = Annotated[int, msgspec.Meta(ge=1, le=3)]
ContextPriority = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
#: An expiry git-hydrate can show as a date: 1970 to the end of year 9999 (UTC).
Expiry = Annotated[int, msgspec.Meta(ge=0, le=253402300799)]
Kind = Annotated[str, msgspec.Meta(pattern=r"^(?:code|fix|closure|planning|product)\Z")]
Station = Annotated[
    str, msgspec.Meta(pattern=r"^(?:open|in_progress|blocked|review|done|cancelled)\Z")
]
# \Z, not $: "$" also matches before a final newline, which would let "abc\n" in.
TaskId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")]
#: A task id, or ``""`` for none (a task without a parent).
OptionalTaskId = Annotated[str, msgspec.Meta(pattern=r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127})?\Z")]


class PathNote(msgspec.Struct, frozen=True):
    """A file in play or a test to write: a path plus an optional note."""

    path: str
    note: str = ""


class Checkpoint(msgspec.Struct, frozen=True):
    """A worker's progress report. ``tokens`` is cumulative for the task."""

    summary: str
    evidence: str
    next_step: str
    tokens: NonNegative
    at: str
    author: str = ""


#: A reason add-tree gives for a file it left out (``too_large``, ``not_utf8``...).
SkipReason = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,31}\Z")]
#: A blob id, or ``""`` for none.
OptionalObjectId = Annotated[str, msgspec.Meta(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})?\Z")]


class SkippedFile(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A file the task names (a file in play, a test) that an add-tree run did not
    attach, and why: the prompt names it in what it lacks."""

    path: str
    reason: SkipReason
    bytes: NonNegative = 0
    #: Its blob, when the run read it from git (``git show <oid>`` prints it).
    oid: OptionalObjectId = ""


class Selection(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What one add-tree run took, to take it again (``prompt --refresh``).

    ``rev`` is the revision as given (``HEAD``, a branch), ``dir`` an absolute
    path; ``inputs`` is a digest of everything that decided the run's links
    (the commit or tree, these options, the limits, the rules, the task's
    ranking inputs and the links it left), so an unchanged run is recognised
    without listing a file. ``skipped`` holds what the run left out of the
    files the task names, and why (not an input: what the run found).
    """

    mode: Annotated[str, msgspec.Meta(pattern=r"^(?:rev|worktree|dir)\Z")]
    rev: str = ""
    dir: str = ""
    pathspecs: list[str] = []
    prefix: str = ""
    priority: ContextPriority | None = None
    ranked: bool = True
    max_file_bytes: NonNegative | None = None
    max_total_bytes: NonNegative | None = None
    inputs: str = ""
    skipped: list[SkippedFile] = []


class Task(msgspec.Struct, kw_only=True):
    """The task document, stored as ``task.json`` in the tip tree."""

    format: int = FORMAT_VERSION
    id: TaskId
    title: str
    objective: str
    acceptance: str
    acceptance_criteria: list[str] = []
    scope: list[str] = []
    kind: Kind = "code"
    priority: Priority = 2
    token_budget: NonNegative = 0
    tags: list[str] = []
    files: list[PathNote] = []
    tests: list[PathNote] = []
    status: Station = INITIAL_STATION
    checkpoints: list[Checkpoint] = []
    created_at: str = ""
    # Coordination (written only when set: see ``codec.OPTIONAL_TASK_FIELDS``).
    depends_on: list[TaskId] = []
    assignee: str = ""
    claimed_at: str = ""
    taken_from: str = ""
    selections: list[Selection] = []
    claimed_via: str = ""
    #: The task this one is a part of (``""``: none); the parent waits for its children.
    parent: OptionalTaskId = ""
    #: Where an imported task came from: the issue's URL, or ``FORMAT:ID``.
    source: str = ""


class Link(msgspec.Struct, kw_only=True):
    """One context attachment: which body, from where, how important, until when.

    ``size`` is the body's length in bytes so the packer can skip a body that
    cannot fit without reading it. ``expires`` is seconds since the epoch (UTC).
    ``origin`` says which command manages the link (``""`` for context-add,
    ``"tree"`` for add-tree, ``"diff"`` for add-diff) and ``path`` is the file
    it was taken from, so re-hydration can replace and remove exactly its own.
    ``score`` and ``reason`` say how ranking placed a hydrated file.
    """

    sha256: _LinkSha256
    oid: _LinkObjectId
    size: NonNegative
    source: str
    priority: ContextPriority = 0
    expires: Expiry | None = None
    origin: str = ""
    path: str = ""
    #: The relevance score (0-1) ranking gave a hydrated file, or ``None``
    #: when its priority was not ranked (a note, ``--priority``, ``--no-rank``).
    score: float | None = None
    #: Why ranking put it where it is (``file in play``, ``co-change with x``).
    reason: str = ""


class LinkList(msgspec.Struct, kw_only=True):
    """``links.json`` (or one ``links/<aa>.json``): links sorted in packing order."""

    format: int = FORMAT_VERSION
    links: list[Link] = []


_HEX_DIGITS: Final = b"0123456789abcdef"


def _lower_hex(text: str) -> bool:
    # Deleting every hex digit leaves nothing; anything non-ASCII becomes "?".
    return not text.encode("ascii", "replace").translate(None, _HEX_DIGITS)


def bad_link_id(links: list[Link]) -> str | None:
    """What is wrong with the first link whose ids are not lower-case hex of
    the right lengths (a sha256; a SHA-1 or SHA-256 object id), else ``None``.

    One pass over all ids joined, so that checking ten thousand links costs
    about a millisecond (a pattern per field cost a regex call per link).
    """
    joined = "".join([link.sha256 + link.oid for link in links])
    if _lower_hex(joined) and {len(link.oid) for link in links} <= {40, 64}:
        return None
    for index, link in enumerate(links):
        if not _lower_hex(link.sha256):
            return f"links[{index}].sha256 is not a lower-case hex sha256"
        if len(link.oid) not in (40, 64) or not _lower_hex(link.oid):
            return f"links[{index}].oid is not a lower-case hex object id"
    return None  # pragma: no cover - the joined check found something above


def packing_key(link: Link) -> tuple[int, str]:
    """Sort key of the packing order: priority descending, then hash."""
    return (-link.priority, link.sha256)


_BY_SHA256: Final = operator.attrgetter("sha256")
_BY_PRIORITY: Final = operator.attrgetter("priority")


def packing_sorted(links: Iterable[Link]) -> list[Link]:
    """``links`` in packing order (as ``sorted(links, key=packing_key)``).

    Two stable sorts with C-level keys, hash then priority descending: half
    the time of one sort with a Python key function on thousands of links.
    """
    ordered = sorted(links, key=_BY_SHA256)
    ordered.sort(key=_BY_PRIORITY, reverse=True)  # reverse=True keeps ties stable
    return ordered


class ArchivedTask(msgspec.Struct, kw_only=True):
    """One task in the archive index: where its history ends, and what ``list`` shows."""

    tip: ObjectIdHex
    title: str
    status: Station
    kind: Kind
    priority: Priority
    tags: list[str] = []
    attachments: int = 0
    archived_at: str = ""
    archived_by: str = ""


class ArchiveIndex(msgspec.Struct, kw_only=True):
    """``index.json`` of ``refs/hydrate/archive``. Field order is storage format."""

    format: int = FORMAT_VERSION
    tasks: dict[TaskId, ArchivedTask] = {}


class RemovedTask(msgspec.Struct, kw_only=True):
    """One entry of the removal record: the tip removed, when and by whom.

    Fields are in sorted order: that is the order every version wrote them in.
    """

    at: str = ""
    by: str = ""
    tip: ObjectIdHex


class RemovalRecord(msgspec.Struct, kw_only=True):
    """``removed.json`` of ``refs/hydrate/removed``. Field order is storage format."""

    format: int = FORMAT_VERSION
    removed: dict[TaskId, RemovedTask] = {}
