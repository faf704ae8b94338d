"""add-tree: attach a file set to a task as context, in one commit, without copying blobs.

A file taken from a commit is linked by the blob git already has (the task
tree points at the same object; nothing is re-stored). Each distinct blob is
read once, ever: its sha256 and content class go to the sha256 cache, so
re-hydrating an unchanged tree reads no blob at all.

A task holds one link per file path (``origin="tree"``, ``path`` the
repository-relative path, ``source`` = prefix + path). Re-hydration replaces
each path's link, removes the links of files that are gone or now skipped —
only within the pathspec and prefix given — and leaves every other link
alone. A task also holds one link per body: a file whose content is already
attached (by an earlier path of the same run, or by another link) is
reported as ``duplicate`` with ``same_as`` naming that link's source.

The stages, each a function: choose the source; apply the path and attribute
rules; read and classify what is left (:mod:`.reading`); rank (:mod:`.placement`);
pick within the total budget; commit. What a task records of each run, and
recognising a run again, is :mod:`.selections`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass
from itertools import accumulate, compress
from operator import itemgetter, neg, not_
from typing import Final, TypedDict, Unpack

import msgspec

from .. import textpolicy, validate
from ..errors import ValidationError
from ..model import TREE_ORIGIN, Link, Selection, SkippedFile, Task
from ..pack.memo import BodyMemo
from ..pack.refresh_memo import own_runs
from ..results import HydrateResult
from ..settings import Settings
from ..taskrefs import TaskRefs, TaskState
from .attributes import tree_attribute_rules
from .building import Building
from .history import Begun, begin_history
from .indexer import Indexer
from .indexer import start as start_indexer
from .kept import has_index
from .links import TREE_TOP, Pick, Selector, commit_links, limits
from .listings import tree_entries
from .pathmarks import skipped_paths
from .pathspec import Pathspec
from .placement import Place, place, prepare
from .ranked import Places
from .reading import Content, Progress, read_content
from .rules import FileEntry, Skipped, attribute_rules, path_rule
from .selections import (
    MAX_SELECTIONS,
    SELECTION_VERSION,
    Scope,
    adopt,
    identity,
    inputs,
    local,
    named_skips,
    ranked_high,
    recognised,
    record,
    recorded,
    unattached,
)
from .sources import Source, from_directory, from_rev, from_worktree, resolve_rev, sized_by_git

__all__ = [
    "MAX_SELECTIONS",
    "ORIGIN",
    "SELECTION_VERSION",
    "Progress",
    "TreeOptions",
    "add_tree",
    "apply_rules",
]

ORIGIN: Final = TREE_ORIGIN


def _prefix(value: str) -> str:
    """``--prefix`` as the start of a source label: ``P/`` (or ``P:`` as given). It
    labels files as if in a folder of their own, so it may not read as a path out of
    the repository (``..``, ``/etc``) or a step nowhere (``.``)."""
    if not value:
        return ""
    if not isinstance(value, str) or not value.isprintable():
        raise ValidationError("prefix must be one line of printable text")
    if value.startswith("/") or {".", ".."} & set(value.replace(":", "/").split("/")):
        raise ValidationError(
            f"--prefix {value[:80]!r} would label files as paths outside the repository's: "
            "give a name such as svc or old/v1 (no leading /, no . or .. parts)"
        )
    return value if value.endswith(("/", ":")) else value + "/"


def _source(
    refs: TaskRefs,
    selection: Selection,
    directory: str | os.PathLike[str] | None,
    resolved: tuple[str | None, str] | None,
) -> Source:
    if directory is not None:
        return from_directory(os.fspath(directory))
    if selection.mode == "worktree":
        return from_worktree(refs.repo)
    return from_rev(refs.repo, selection.rev, resolved, tree_entries)


def apply_rules(
    refs: TaskRefs,
    source: Source,
    spec: Pathspec,
    anchors: set[str],
    max_file: int,
    max_total: int,
) -> tuple[list[FileEntry], list[Skipped]]:
    """The entries the path and attribute rules let through, and the others with reasons.

    ``source.entries`` is narrowed (in place) to the pathspec, plus the task's
    files in play and tests (``anchors``), which are taken wherever they are.
    """
    every = source.entries
    if spec:
        listed = [e.path for e in every] + [s.path.rstrip("/") for s in source.skipped]
        unmatched = spec.unmatched(listed)
        if unmatched:
            raise ValidationError(f"pathspec '{unmatched[0]}' did not match any files")
        entries = [e for e in every if spec.matches(e.path) or e.path in anchors]
    else:
        entries = list(every)  # (no pathspec: every file)
    if source.unsized:  # (sized by git: only the blobs of the files taken)
        tree = source.tree if source.mode == "rev" else None
        if source.mode == "worktree" and (spec or source.held):
            # (files outside the sparse checkout it takes: their blobs are HEAD's)
            tree = refs.repo.rev_parse("HEAD", "tree")
        entries = sized_by_git(refs.repo, entries, named=bool(spec), held=source.held, tree=tree)
    source.entries = entries
    by_attribute: dict[str, str] = {}
    if source.mode == "rev" and source.tree is not None:
        by_attribute = tree_attribute_rules(refs.repo, source.tree, every, entries)
    elif source.mode != "dir":
        by_attribute = attribute_rules(refs.repo, entries, tree=None)
    skipped = [
        s
        for s in source.skipped
        if spec.matches(s.path.rstrip("/"))
        or any(x.startswith(s.path) for x in spec.specs if not x.startswith(":"))
    ]
    marks = None
    if source.mode == "rev" and source.tree is not None:
        marks = skipped_paths(refs.repo, source.tree, every, entries)
    candidates, judged = _judged(entries, (max_file, max_total), by_attribute, marks, anchors)
    return candidates, skipped + judged


def _judged(
    entries: list[FileEntry],
    limits: tuple[int, int],
    by_attribute: Mapping[str, str],
    marks: set[str] | None,
    anchors: Set[str] = frozenset(),
) -> tuple[list[FileEntry], list[Skipped]]:
    """The entries the path and attribute rules let through (``limits``: the bytes
    a file and all may take), and the others with reasons, each in order.

    ``marks``: the paths the path rules skip as a regular file of any size (the
    tree's kept answer, :mod:`.pathmarks`); a regular file whose path is not one,
    nor marked by an attribute, and whose size the limits take, is let through
    without its path judged again (30,000 paths: 28 ms). ``None``: every path is.
    ``anchors``: the files the task names (taken though generated, vendored or in a
    skipped folder)."""
    max_file, max_total = limits
    if marks is None:
        through = [False] * len(entries)
    else:
        least, others = min(max_file, max_total), marks.union(by_attribute)
        through = [e.kind == "file" and 0 < e.size <= least and e.path not in others
                   for e in entries]  # fmt: skip
    skipped: list[Skipped] = []
    for at in compress(range(len(entries)), map(not_, through)):
        entry = entries[at]
        named = entry.path in anchors  # (taken though generated, vendored or in dist/)
        reason = path_rule(entry, max_file, named)
        marked = by_attribute.get(entry.path)
        if named and marked in ("generated", "vendored"):
            marked = None
        if marked is not None and reason in (None, "too_large", "empty"):
            reason = marked
        if reason is None and entry.size > max_total:
            reason = "total_budget"
        if reason is None:
            through[at] = True
        else:
            skipped.append(Skipped(entry.path, reason, entry.size))
    return list(compress(entries, through)), skipped


def _pick(
    found: Content,
    prefix: str,
    places: Mapping[str, Place],
    selector: Selector,
    anchors: Set[str] = frozenset(),
) -> None:
    """Offer every file read (each has a place) to ``selector``, in packing order
    (ranked first); a file the task names (``anchors``) that says it is generated
    is offered as text: a ticket about that file gets it.

    Once what is left of the budget is below the size of every file still to come,
    none of them can be picked: they are refused at once, each for the reason
    :meth:`.Selector.offer` would give.
    """
    info = found.info  # (the paths placed are those read: ``places`` has them all)
    order, in_order = _packing_order(places)
    rows = list(map(info.__getitem__, order))  # (oid, digest, class, size)
    named = [path for path in anchors if info.get(path, ("", "", ""))[2] == "generated"]
    if named:  # (after the secret scan: what says it is generated holds no secret)
        rows = [
            (row[0], row[1], "text", row[3]) if path in named else row
            for path, row in zip(order, rows, strict=True)
        ]
    sizes = list(map(itemgetter(3), rows))
    smallest_after = list(accumulate(reversed(sizes), min))[::-1]
    offer = selector.offer  # (30,000 files at a time: no lookups in the loop)
    for at, path in enumerate(order):
        if selector.remaining < smallest_after[at]:
            rest, left = order[at:], rows[at:]
            selector.refuse(
                rest,
                [prefix + path for path in rest] if prefix else rest,
                list(map(itemgetter(1), left)),
                sizes[at:],
                list(map(itemgetter(2), left)),
            )
            break
        oid, digest, cls, size = rows[at]
        offer(path, prefix + path, digest, size, cls, oid, "", next(in_order))


def _packing_order(places: Mapping[str, Place]) -> tuple[list[str], Iterator[Place]]:
    """The paths by priority (higher first), then path; their places, in that order
    (each made as it is asked for)."""
    if isinstance(places, Places):  # (ranked: from its columns, without a dict per file)
        rows = places.packing_order()
        return list(map(places.paths.__getitem__, rows)), places.places_at(rows)
    # sorted by path, then stably by priority
    lower = dict(zip(places, map(neg, map(itemgetter(0), places.values())), strict=True))
    order = sorted(places)
    order.sort(key=lower.__getitem__)
    return order, map(places.__getitem__, order)


def _place(
    refs: TaskRefs,
    task: Task,
    source: Source,
    found: Content,
    priority: int | None,
    ranked: bool,
    index: Building | None,
    history: tuple[str | None, Begun | None],
) -> Mapping[str, Place]:
    """Each read candidate's place (:func:`.placement.place`; ``history``: the
    commit whose history ranks, and its ``git log`` begun early)."""
    if index is not None:
        index.while_kept(found.save)  # (saved while another process keeps it, if one does)
    return place(
        refs.repo,
        task,
        {path: info[3] for path, info in found.info.items()},
        commit=history[0],
        begun=history[1],
        top=TREE_TOP,
        priority=priority,
        ranked=ranked,
        oids={path: info[0] for path, info in found.info.items()},
        known=found.facts,
        tree=source.tree,  # (a word index is kept by tree id)
        index=index,
    )


def _blobs(candidates: list[FileEntry]) -> dict[str, str]:
    """Each candidate's blob id (those of a tree all have one)."""
    return {entry.path: entry.oid for entry in candidates if entry.oid is not None}


def _history_commit(refs: TaskRefs, source: Source) -> str | None:
    """The commit whose history ranks this run: the one read, or HEAD for the work tree."""
    if source.mode == "rev":
        return source.commit
    if source.mode == "worktree":
        return refs.repo.rev_parse("HEAD")
    return None


class TreeOptions(TypedDict, total=False):
    """What :func:`add_tree` (and :meth:`git_hydrate.Ledger.add_tree`) take by
    keyword besides ``progress`` and ``memo``: the file set's source, its ranking
    and limits (``None``: from the ``hydrate.*`` settings)."""

    rev: str | None
    worktree: bool
    directory: str | os.PathLike[str] | None
    prefix: str
    priority: int | None
    ranked: bool
    max_file_bytes: int | None
    max_total_bytes: int | None
    allow_secrets: bool | None


@dataclass(frozen=True)
class _Run:
    """One add-tree run's options, checked and resolved against the settings: the
    selection it records, its pathspec, the directory as given, and the limits."""

    selection: Selection
    spec: Pathspec
    directory: str | os.PathLike[str] | None
    max_file: int
    max_total: int
    allowed: bool

    @classmethod
    def of(
        cls, settings: Settings, task_id: str, pathspecs: Iterable[str], options: TreeOptions
    ) -> _Run:
        """Check ``options`` (before the task is read: a bad one fails first)."""
        validate.task_id(task_id)
        priority = options.get("priority")
        if priority is not None:
            priority = validate.context_priority(priority)
        rev, directory = options.get("rev"), options.get("directory")
        worktree = bool(options.get("worktree", False))
        if sum((rev is not None, worktree, directory is not None)) > 1:
            raise ValidationError("give at most one of rev, worktree and directory")
        prefix = _prefix(options.get("prefix", ""))
        spec = Pathspec(pathspecs)
        max_file_bytes = options.get("max_file_bytes")
        max_total_bytes = options.get("max_total_bytes")
        max_file, max_total = limits(settings, max_file_bytes, max_total_bytes)
        allow_secrets = options.get("allow_secrets")
        allowed = (
            settings.boolean("hydrate.allowSecrets") if allow_secrets is None else allow_secrets
        )
        selection = Selection(
            mode="dir" if directory is not None else "worktree" if worktree else "rev",
            rev="" if directory is not None or worktree else ("HEAD" if rev is None else rev),
            dir=os.path.abspath(os.fspath(directory)) if directory is not None else "",
            pathspecs=list(spec.specs),
            prefix=prefix,
            priority=priority,
            ranked=options.get("ranked", True),
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
        )
        return cls(selection, spec, directory, max_file, max_total, allowed)

    def check_text(self, settings: Settings) -> None:
        """Refuse a prefix, directory, revision or pathspec the text policy refuses."""
        selection = self.selection
        textpolicy.check_all(
            settings,
            [
                textpolicy.Field("--prefix", selection.prefix, textpolicy.PATH),
                textpolicy.Field("--dir", selection.dir, textpolicy.PATH),
                textpolicy.Field("revision", selection.rev, textpolicy.LINE),
                *(textpolicy.Field("pathspec", s, textpolicy.PATH) for s in selection.pathspecs),
            ],
            self.allowed,
        )

    def fixed(self, pinned: str) -> list[object]:
        """What a revision run pinned to ``pinned`` depends on besides the task,
        its links and the code."""
        return [pinned, self.max_file, self.max_total, self.allowed]


def add_tree(
    refs: TaskRefs,
    task_id: str,
    pathspecs: Iterable[str] = (),
    *,
    progress: Progress | None = None,
    recognise: bool = False,
    memo: BodyMemo | None = None,
    placed_later: Callable[[Link], bool] | None = None,
    **options: Unpack[TreeOptions],
) -> HydrateResult:
    """Attach the files of a commit, the work tree or a directory to a task.

    See :meth:`git_hydrate.Ledger.add_tree` for the arguments and result.
    ``recognise``: when this run is one the task recorded, with the same
    commit, options, rules, task and links, answer ``recognised`` without
    listing a file (``prompt --refresh``); the answer then lists no skips.
    ``placed_later``: the links a later run of the same refresh places (see
    :func:`.links.commit_links`).
    """
    settings = refs.repo.settings
    run = _Run.of(settings, task_id, pathspecs, options)
    state = refs.load(task_id)  # a missing task fails before any file is read
    run.check_text(settings)
    anchors = {note.path for note in (*state.task.files, *state.task.tests)}
    selection = run.selection
    mine = Scope(selection.prefix, run.spec, anchors)
    # (the commit or tree a revision run reads: a work tree or directory has no id)
    resolved = resolve_rev(refs.repo, selection.rev) if selection.mode == "rev" else None
    pinned = (resolved[0] or resolved[1]) if resolved is not None else None
    if recognise and pinned is not None and _unchanged(refs, task_id, state, run, pinned):
        return recognised(task_id, state, mine, selection, pinned)
    # (a first reading of a big tree has its index built by a process forked now,
    # before the listing: it starts with little more than the imports)
    indexer = _indexer(refs, selection, resolved)
    source: Source | None = None
    try:
        source = _source(refs, selection, run.directory, resolved)
        source.held = frozenset(link.path for link in state.links if mine(link))
        found = _select(refs, state.task, run, source, anchors, progress, memo, indexer)
        picks, skipped, withheld = found
        skipped = _held_not_missing(skipped, state.links)
    finally:
        if indexer is not None:
            indexer.close()
        if source is not None and source.files is not None:
            source.files.close()  # (its folders' descriptors: a later read opens them again)
    fixed = run.fixed(pinned) if pinned is not None else None
    named = named_skips(state.task, skipped, source.entries, withheld)
    outcome = _commit(
        refs, task_id, run, source, picks, (skipped, named), (mine, placed_later), fixed
    )
    if named and (listed := unattached(state.task, named)):
        outcome["unattached"] = listed
    # Read again after the run: its first check-attr may just have found that this
    # git lacks --source, which changes what the digest covers.
    here = local(refs) if pinned is not None else "-"
    adopt(refs, task_id, selection, here)
    return outcome


def _held_not_missing(skipped: list[Skipped], links: list[Link]) -> list[Skipped]:
    """``skipped`` but the files in play "missing" from this run's source that a link
    holds (another run attached them: a directory's run under a prefix never had them)."""
    held = {link.source for link in links}
    return [skip for skip in skipped if skip.reason != "missing" or skip.path not in held]


def _unchanged(refs: TaskRefs, task_id: str, state: TaskState, run: _Run, pinned: str) -> bool:
    """Whether this revision run is the one the task recorded: the same commit,
    options, rules, task and links (in the task), and the same code and
    attributes files here (in this clone's record): its result is then known
    without listing a file."""
    known = recorded(state.task, run.selection)
    return (
        known is not None
        and known.inputs == inputs(run.fixed(pinned), run.selection, state.task, state.links)
        and own_runs(refs.repo).get(identity(task_id, run.selection)) == local(refs)
    )


def _indexer(
    refs: TaskRefs, selection: Selection, resolved: tuple[str | None, str] | None
) -> Indexer | None:
    """A process to build the word index in, for a ranked revision run on a tree
    no index is kept of (:func:`.indexer.start`)."""
    if resolved is None or not selection.ranked or selection.priority is not None:
        return None
    tree = resolved[1]
    return None if has_index(refs.repo, tree) else start_indexer(refs.repo, tree)


def _select(
    refs: TaskRefs,
    task: Task,
    run: _Run,
    source: Source,
    anchors: set[str],
    progress: Progress | None,
    memo: BodyMemo | None,
    indexer: Indexer | None = None,
) -> tuple[list[Pick], list[Skipped], list[str]]:
    """Apply the rules, read what is left, rank it and pick within the total
    budget: the picks (their new blobs written), every skip with its reason, and
    the files withheld as secrets that rank high (:func:`.selections.ranked_high`)."""
    selection, prefix = run.selection, run.selection.prefix
    candidates, skipped = apply_rules(refs, source, run.spec, anchors, run.max_file, run.max_total)
    ranking = selection.ranked and selection.priority is None
    # (a tree no kept index serves is indexed as its blobs are read)
    index = prepare(refs.repo, source.tree, _blobs(candidates), indexer) if ranking else None
    commit = _history_commit(refs, source)
    begun = begin_history(refs.repo, commit) if ranking else None  # (git runs meanwhile)
    try:
        found = read_content(
            refs,
            candidates,
            run.max_file,
            progress,
            worktree_copies=source.mode != "dir",
            memo=memo,
            learning=ranking,
            building=index,
            tree=source.tree if source.mode == "rev" else None,
            later=index is not None,  # (saved once the index is kept, in what it freed)
            files=source.files,
        )
        try:
            places = _place(
                refs,
                task,
                source,
                found,
                selection.priority,
                selection.ranked,
                index,
                (commit, begun),
            )
        finally:
            found.save()
    finally:
        if begun is not None:
            begun.close()
    selector = Selector(run.max_total, run.allowed, [prefix + entry.path for entry in candidates])
    _pick(found, prefix, places, selector, anchors)
    listed = {entry.path for entry in source.entries}
    skipped += [Skipped(path, "missing", 0) for path in sorted(anchors - listed)]
    _write_picked(refs, found, selector.picks)
    if progress is not None:
        progress(len(candidates), len(candidates), found.bytes_done)
    withheld = ranked_high(selector.withheld) if ranking else []  # (not by path order)
    return selector.picks, [*skipped, *found.skipped, *selector.skipped], withheld


def _write_picked(refs: TaskRefs, found: Content, picks: list[Pick]) -> None:
    """Write the blobs of the picks read from disk (those not in the object store)."""
    for pick in picks:
        content = found.to_write.get(pick.oid)
        if content is not None:
            refs.repo.write_blob(content)


def _commit(
    refs: TaskRefs,
    task_id: str,
    run: _Run,
    source: Source,
    picks: list[Pick],
    skips: tuple[list[Skipped], list[SkippedFile]],
    scopes: tuple[Scope, Callable[[Link], bool] | None],
    fixed: list[object] | None,
) -> HydrateResult:
    """Commit the picks and the removal of the links gone, recording the run in the
    task (``skips``: every skip, and those of the files the task names)."""
    selection = run.selection
    skipped, named = skips
    mine, placed_later = scopes

    def recorded_in(current: Task, links: list[Link]) -> Task:
        digest = inputs(fixed, selection, current, links) if fixed is not None else ""
        return record(current, msgspec.structs.replace(selection, inputs=digest, skipped=named))

    trailers = {"source": source.label}
    if run.spec:
        trailers["pathspec"] = " ".join(run.spec.specs)
    if selection.prefix:
        trailers["prefix"] = selection.prefix
    outcome = commit_links(
        refs,
        task_id,
        picks,
        skipped,
        origin=ORIGIN,
        in_scope=mine,
        action="add-tree",
        summary=f"from {source.label}",
        trailers=trailers,
        result={
            "mode": source.mode,
            "from": source.label,
            "commit": source.commit,
            "files": len(source.entries),
        },
        task_update=recorded_in,
        placed_later=placed_later,
    )
    if source.mode == "dir":
        outcome["listing"] = source.listing
    return outcome
