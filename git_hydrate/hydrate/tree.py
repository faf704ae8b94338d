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
rules; read and classify what is left (:class:`Content`); pick within the
total budget; commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from .. import __version__, textpolicy, validate
from ..errors import ValidationError
from ..model import TREE_ORIGIN, Link, Selection, Task
from ..pack.memo import BodyMemo
from ..pack.refresh_memo import local_inputs, own_runs, own_selections_path, remember
from ..results import HydrateResult
from ..taskrefs import TaskRefs, TaskState
from .cache import Sha256Cache, keep_compiled_prefilter
from .links import TREE_TOP, Selector, commit_links, limit
from .pathspec import Pathspec
from .placement import Place, place
from .rules import FileEntry, Skipped, attribute_rules, classify, path_rule
from .sources import Source, from_directory, from_rev, from_worktree, resolve_rev
from .terms import BlobFacts, blob_facts

__all__ = ["MAX_SELECTIONS", "ORIGIN", "SELECTION_VERSION", "Progress", "add_tree", "refresh"]

ORIGIN: Final = TREE_ORIGIN
#: Called as ``progress(files_done, files_total, bytes_done)`` while content is read.
Progress = Callable[[int, int, int], None]


@dataclass
class Content:
    """What reading the candidates found: per path ``(oid, sha256, class, size)``,
    the bodies of files read from disk (to write if picked), and what failed."""

    info: dict[str, tuple[str, str, str, int]] = field(default_factory=dict)
    to_write: dict[str, bytes] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    files_done: int = 0
    bytes_done: int = 0
    #: Keeps the text bodies read, for the prompt that follows (``add-tree --prompt``).
    memo: BodyMemo = field(default_factory=BodyMemo)
    #: What ranking learns of each blob read (by blob id), so it reads none again;
    #: nothing when the run does not rank.
    facts: dict[str, BlobFacts] = field(default_factory=dict)
    learning: bool = True

    def learn(self, oid: str, cls: str, data: bytes) -> None:
        """Keep the facts of a blob just read (a text's words; of others, none)."""
        if self.learning:
            self.facts[oid] = blob_facts(data) if cls == "text" else BlobFacts(False, len(data))


def _prefix(value: str) -> str:
    if not value:
        return ""
    if not isinstance(value, str) or not value.isprintable():
        raise ValidationError("prefix must be one line of printable text")
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
    return from_rev(refs.repo, selection.rev, resolved)


def _apply_rules(
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
    listed = [e.path for e in source.entries] + [s.path.rstrip("/") for s in source.skipped]
    unmatched = spec.unmatched(listed)
    if unmatched:
        raise ValidationError(f"pathspec '{unmatched[0]}' did not match any files")
    entries = source.entries = [
        e for e in source.entries if spec.matches(e.path) or e.path in anchors
    ]
    by_attribute: dict[str, str] = {}
    if source.mode != "dir":
        tree = source.tree if source.mode == "rev" else None
        by_attribute = attribute_rules(refs.repo, entries, tree=tree)
    skipped = [
        s
        for s in source.skipped
        if spec.matches(s.path.rstrip("/"))
        or any(x.startswith(s.path) for x in spec.specs if not x.startswith(":"))
    ]
    candidates: list[FileEntry] = []
    for entry in entries:
        reason = path_rule(entry, max_file)
        marked = by_attribute.get(entry.path)
        if marked is not None and reason in (None, "too_large", "empty"):
            reason = marked
        if reason is None and entry.size > max_total:
            reason = "total_budget"
        if reason is None:
            candidates.append(entry)
        else:
            skipped.append(Skipped(entry.path, reason, entry.size))
    return candidates, skipped


def _read_from_disk(
    refs: TaskRefs, entry: FileEntry, max_file: int, cache: Sha256Cache, found: Content
) -> None:
    assert entry.location is not None
    try:
        with open(entry.location, "rb") as fh:
            data = fh.read(max_file + 1)
    except OSError:
        found.skipped.append(Skipped(entry.path, "unreadable", entry.size))
        return
    if len(data) > max_file:
        found.skipped.append(Skipped(entry.path, "too_large", len(data)))
        return
    oid = refs.repo.blob_id(data).decode("ascii")
    cls = classify(data)
    digest = hashlib.sha256(data).hexdigest()
    cache.put(oid, digest, cls)  # saves the read once these files are committed
    found.learn(oid, cls, data)
    if cls == "text":
        found.memo.offer(oid, digest, data)
    found.info[entry.path] = (oid, digest, cls, len(data))
    found.to_write[oid] = data
    found.files_done += 1
    found.bytes_done += len(data)


def _read_content(
    refs: TaskRefs,
    candidates: list[FileEntry],
    max_file: int,
    progress: Progress | None,
    *,
    worktree_copies: bool = False,
    memo: BodyMemo | None = None,
    learning: bool = True,
) -> Content:
    """sha256, oid and class of every candidate: from the cache, the disk, or git
    (``worktree_copies``: a blob the work tree holds as it is, from there)."""
    cache = Sha256Cache.of(refs.repo)
    keep_compiled_prefilter(refs.repo)
    found = (
        Content(memo=memo, learning=learning) if memo is not None else Content(learning=learning)
    )
    unread: dict[str, list[FileEntry]] = {}
    total = len(candidates)
    for entry in candidates:
        if entry.oid is None:
            _read_from_disk(refs, entry, max_file, cache, found)
            if progress is not None:
                progress(found.files_done, total, found.bytes_done)
            continue
        hit = cache.get(entry.oid)
        if hit is None:
            unread.setdefault(entry.oid, []).append(entry)
            continue
        found.info[entry.path] = (entry.oid, hit[0], hit[1], entry.size)
        found.files_done += 1

    def take(oid: str, data: bytes) -> None:
        cls = classify(data)
        digest = hashlib.sha256(data).hexdigest()
        cache.put(oid, digest, cls)
        found.learn(oid, cls, data)
        if cls == "text":
            found.memo.offer(oid, digest, data)
        for entry in unread[oid]:
            found.info[entry.path] = (oid, digest, cls, len(data))
            found.files_done += 1
            found.bytes_done += len(data)
        if progress is not None:
            progress(found.files_done, total, found.bytes_done)

    through_git = list(unread)
    if worktree_copies and refs.repo.work_tree is not None:
        through_git = []
        for oid, entries in unread.items():
            first = entries[0]
            data = refs.repo.worktree_blob(first.raw_path, oid, first.size)
            if data is None:
                through_git.append(oid)
            else:
                take(oid, data)
    for oid, data in refs.repo.stream_blobs(through_git) if through_git else ():
        take(oid, data)
    cache.save()
    return found


def _pick(
    candidates: list[FileEntry],
    found: Content,
    prefix: str,
    places: dict[str, Place],
    selector: Selector,
) -> None:
    """Offer every read candidate to ``selector``, in packing order (ranked first)."""
    known = [entry for entry in candidates if entry.path in found.info]
    known.sort(key=lambda entry: (-places[entry.path][0], entry.path))
    for entry in known:
        oid, digest, cls, size = found.info[entry.path]
        selector.offer(
            entry.path, prefix + entry.path, digest, size, cls, oid, place=places[entry.path]
        )


#: Bumped when the rules, reading or ranking change what a run attaches: a run
#: recorded under another version is never taken as unchanged.
SELECTION_VERSION: Final = 1
#: How many add-tree selections a task remembers (the oldest is forgotten).
MAX_SELECTIONS: Final = 16


def _same_selection(a: Selection, b: Selection) -> bool:
    """Whether two runs take the same files (their options may differ)."""
    return (a.mode, a.rev, a.dir, a.pathspecs, a.prefix) == (
        b.mode,
        b.rev,
        b.dir,
        b.pathspecs,
        b.prefix,
    )


def _recorded(task: Task, selection: Selection) -> Selection | None:
    for known in task.selections:
        if _same_selection(known, selection):
            without = msgspec.structs.replace(known, inputs="")
            return known if without == selection else None
    return None


def _record(task: Task, selection: Selection) -> Task:
    """The task with ``selection`` recorded (replacing the same run's, newest last)."""
    others = [s for s in task.selections if not _same_selection(s, selection)]
    kept = [*others, selection][-MAX_SELECTIONS:]
    return task if kept == task.selections else msgspec.structs.replace(task, selections=kept)


def _inputs(
    fixed: list[object],
    selection: Selection,
    task: Task,
    links: list[Link],
) -> str:
    """The digest of everything that decides a revision run's links."""
    ranking = [
        task.title,
        task.objective,
        task.acceptance,
        task.acceptance_criteria,
        task.scope,
        task.tags,
        task.files,
        task.tests,
    ]
    # Every link, not only the run's own: a file whose body another link holds is
    # skipped as a duplicate, so removing that link changes what the run attaches.
    held = sorted(
        (link.sha256, link.source, link.path, link.origin, link.priority) for link in links
    )
    parts = [
        SELECTION_VERSION,
        __version__,
        fixed,
        msgspec.structs.replace(selection, inputs=""),
        ranking,
        held,
    ]
    return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()


def _recognised(
    task_id: str,
    state: TaskState,
    mine: Callable[[Link], bool],
    selection: Selection,
    pinned: str,
) -> HydrateResult:
    """The answer of a recognised run: the state it was recognised at (its ``tip``)."""
    held = [link for link in state.links if mine(link)]
    tip = state.tip
    return {
        "task_id": task_id,
        "mode": "rev",
        "from": f"{selection.rev} {pinned}" if selection.rev != pinned else pinned,
        "commit": pinned,
        "files": len(held),
        "added": 0,
        "updated": 0,
        "unchanged": len(held),
        "reranked": 0,
        "removed": 0,
        "removed_paths": [],
        "skipped": [],
        "total_bytes": sum(link.size for link in held),
        "changed": False,
        "recognised": True,
        "tip": tip.decode("ascii") if tip is not None else None,
    }


def _history_commit(refs: TaskRefs, source: Source) -> str | None:
    """The commit whose history ranks this run: the one read, or HEAD for the work tree."""
    if source.mode == "rev":
        return source.commit
    if source.mode == "worktree":
        return refs.repo.rev_parse("HEAD")
    return None


def add_tree(
    refs: TaskRefs,
    task_id: str,
    pathspecs: Iterable[str] = (),
    *,
    rev: str | None = None,
    worktree: bool = False,
    directory: str | os.PathLike[str] | None = None,
    prefix: str = "",
    priority: int | None = None,
    ranked: bool = True,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
    progress: Progress | None = None,
    allow_secrets: bool | None = None,
    recognise: bool = False,
    memo: BodyMemo | None = None,
) -> HydrateResult:
    """Attach the files of a commit, the work tree or a directory to a task.

    See :meth:`git_hydrate.Ledger.add_tree` for the arguments and result.
    ``recognise``: when this run is one the task recorded, with the same
    commit, options, rules, task and links, answer ``recognised`` without
    listing a file (``prompt --refresh``); the answer then lists no skips.
    """
    settings = refs.repo.settings
    validate.task_id(task_id)
    if priority is not None:
        priority = validate.context_priority(priority)
    if sum((rev is not None, bool(worktree), directory is not None)) > 1:
        raise ValidationError("give at most one of rev, worktree and directory")
    prefix = _prefix(prefix)
    spec = Pathspec(pathspecs)
    max_file = limit(settings, max_file_bytes, "hydrate.maxFileBytes", "max file bytes")
    max_total = limit(settings, max_total_bytes, "hydrate.maxTotalBytes", "max total bytes")
    allowed = settings.boolean("hydrate.allowSecrets") if allow_secrets is None else allow_secrets
    state = refs.load(task_id)  # a missing task fails before any file is read
    task = state.task
    selection = Selection(
        mode="dir" if directory is not None else "worktree" if worktree else "rev",
        rev="" if directory is not None or worktree else ("HEAD" if rev is None else rev),
        dir=os.path.abspath(os.fspath(directory)) if directory is not None else "",
        pathspecs=list(spec.specs),
        prefix=prefix,
        priority=priority,
        ranked=ranked,
        max_file_bytes=max_file_bytes,
        max_total_bytes=max_total_bytes,
    )
    textpolicy.check_all(
        settings,
        [
            textpolicy.Field("--prefix", selection.prefix, textpolicy.PATH),
            textpolicy.Field("--dir", selection.dir, textpolicy.PATH),
            textpolicy.Field("revision", selection.rev, textpolicy.LINE),
            *(textpolicy.Field("pathspec", s, textpolicy.PATH) for s in selection.pathspecs),
        ],
        allowed,
    )
    anchors = {note.path for note in (*task.files, *task.tests)}

    def mine(link: Link) -> bool:
        return (
            link.origin == ORIGIN
            and link.source == prefix + link.path
            and (spec.matches(link.path) or link.path in anchors)
        )

    # The commit (or tree) a revision run reads; none for a work tree or directory,
    # whose content has no id to compare.
    resolved = resolve_rev(refs.repo, selection.rev) if selection.mode == "rev" else None
    pinned = (resolved[0] or resolved[1]) if resolved is not None else None
    fixed = [pinned, max_file, max_total, allowed] if pinned is not None else None
    if recognise and pinned is not None and fixed is not None:
        recorded = _recorded(task, selection)
        if (
            recorded is not None
            and recorded.inputs == _inputs(fixed, selection, task, state.links)
            and own_runs(refs.repo).get(_identity(task_id, selection)) == _local(refs)
        ):
            # The same commit, options, rules, task and links as the run that recorded
            # this (in the task), and the same code and attributes files here (in this
            # clone's record): the result is known without listing a file.
            return _recognised(task_id, state, mine, selection, pinned)
    source = _source(refs, selection, directory, resolved)
    candidates, skipped = _apply_rules(refs, source, spec, anchors, max_file, max_total)
    found = _read_content(
        refs,
        candidates,
        max_file,
        progress,
        worktree_copies=source.mode != "dir",
        memo=memo,
        learning=ranked and priority is None,
    )
    places = place(
        refs.repo,
        task,
        {path: info[3] for path, info in found.info.items()},
        commit=_history_commit(refs, source),
        top=TREE_TOP,
        priority=priority,
        ranked=ranked,
        oids={path: info[0] for path, info in found.info.items()},
        known=found.facts,
    )
    selector = Selector(max_total, allowed, [prefix + entry.path for entry in candidates])
    _pick(candidates, found, prefix, places, selector)
    listed = {entry.path for entry in source.entries}
    skipped += [Skipped(path, "missing", 0) for path in sorted(anchors - listed)]
    picks = selector.picks
    for pick in picks:
        content = found.to_write.get(pick.oid)
        if content is not None:
            refs.repo.write_blob(content)
    if progress is not None:
        progress(len(candidates), len(candidates), found.bytes_done)

    def record(current: Task, links: list[Link]) -> Task:
        inputs = _inputs(fixed, selection, current, links) if fixed is not None else ""
        return _record(current, msgspec.structs.replace(selection, inputs=inputs))

    trailers = {"source": source.label}
    if spec:
        trailers["pathspec"] = " ".join(spec.specs)
    if prefix:
        trailers["prefix"] = prefix
    outcome = commit_links(
        refs,
        task_id,
        picks,
        [*skipped, *found.skipped, *selector.skipped],
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
        task_update=record,
    )
    if source.mode == "dir":
        outcome["listing"] = source.listing
    # Read again after the run: its first check-attr may just have found that this
    # git lacks --source, which changes what the digest covers.
    _adopt(refs, task_id, selection, _local(refs) if pinned is not None else "-")
    return outcome


def _identity(task_id: str, selection: Selection) -> str:
    """A selection of a task as this clone knows it (its options, not its digest)."""
    options = msgspec.structs.replace(selection, inputs="")
    return hashlib.sha256(msgspec.json.encode([task_id, options])).hexdigest()


def _local(refs: TaskRefs) -> str:
    """What decides a run here beside what the task records: the code of the modules
    that decide it and the attributes files outside the tree (machine-local, so kept
    in this clone's record, never in the shared task)."""
    return hashlib.sha256(msgspec.json.encode(local_inputs(refs.repo))).hexdigest()


def _adopt(refs: TaskRefs, task_id: str, selection: Selection, local: str) -> None:
    """Remember that this clone ran ``selection`` itself, and under what code and
    attributes files (``prompt --refresh`` runs only such selections: one recorded
    elsewhere could name any directory or ref). The record is this user's alone
    (written ``0600``, trusted only then): another member of a shared repository
    could otherwise adopt a selection for them."""
    known = own_runs(refs.repo)
    identity = _identity(task_id, selection)
    if known.get(identity) == local:
        return
    known[identity] = local
    lines = "".join(f"{key} {value}\n" for key, value in sorted(known.items()))
    with contextlib.suppress(OSError):  # derived: losing it only asks for one add-tree again
        refs.repo.replace_file(
            own_selections_path(refs.repo), [lines.encode("ascii")], private=True
        )


def refresh(refs: TaskRefs, task_id: str) -> list[HydrateResult | dict[str, str]]:
    """Take every add-tree run the task recorded again, in the order they were made.

    A revision run whose commit, options, rules, task and links are those it
    recorded is recognised without listing a file (``recognised: True``). Only
    runs this clone made itself are taken: a selection that came with the task
    from a remote could name any directory or ref here, so it is answered
    ``{"selection": ..., "error": ...}`` with the add-tree command that adopts
    it; so is a run that cannot be taken here. The others go on.
    """
    validate.task_id(task_id)
    own = own_runs(refs.repo)
    results: list[HydrateResult | dict[str, str]] = []
    # What a refresh at this tip answers while nothing else changes (the memo):
    # each recognised run's revision and pin, and what was said of each run.
    pinned: list[tuple[str, str]] = []
    said: list[dict[str, Any]] = []
    identities: list[str] = []
    state = refs.load(task_id)
    start = state.tip.decode("ascii") if state.tip is not None else None
    for selection in state.task.selections[-MAX_SELECTIONS:]:
        what = _described(selection)
        identities.append(_identity(task_id, selection))
        if identities[-1] not in own:
            notice = {
                "selection": what,
                "error": "recorded in another clone, so not taken here; to take it, "
                f"run it once yourself: git hydrate add-tree {task_id} {what}",
            }
            results.append(notice)
            said.append(dict(notice))
            continue
        try:
            results.append(
                done := add_tree(
                    refs,
                    task_id,
                    selection.pathspecs,
                    rev=selection.rev if selection.mode == "rev" else None,
                    worktree=selection.mode == "worktree",
                    directory=selection.dir if selection.mode == "dir" else None,
                    prefix=selection.prefix,
                    priority=selection.priority,
                    ranked=selection.ranked,
                    max_file_bytes=selection.max_file_bytes,
                    max_total_bytes=selection.max_total_bytes,
                    recognise=True,
                )
            )
        except ValidationError as exc:
            results.append({"selection": what, "error": str(exc)})
            said.append({})  # (never kept: an error here may be gone next time)
            continue
        if done.get("recognised") and done.get("commit") and done.get("tip") == start:
            pinned.append((selection.rev, str(done["commit"])))
            said.append({k: done[k] for k in ("from", "unchanged", "recognised")})
        else:
            said.append({})
    # Kept only for the tip every run was recognised at, and only if no other writer
    # moved the task meanwhile: the answer must be of one state, the one it names.
    if start is not None and all(said) and refs.tip(task_id) == state.tip:
        remember(refs.repo, task_id, start, pinned, identities, said)
    return results


def _described(selection: Selection) -> str:
    """A selection as the add-tree options that make it."""
    words = {"rev": f"--rev {selection.rev}", "worktree": "--worktree"}.get(
        selection.mode, f"--dir {selection.dir}"
    )
    if selection.prefix:
        words += f" --prefix {selection.prefix}"
    return " ".join([words, *selection.pathspecs])
