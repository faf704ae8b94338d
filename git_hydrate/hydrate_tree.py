"""add-tree: attach a file set to a task as context, in one commit, without copying blobs.

A file taken from a commit is linked by the blob git already has (the task
tree points at the same object; nothing is re-stored). Each distinct blob is
read once, ever: its sha256 and text/binary verdict go to a derived cache in
the git directory (:class:`git_hydrate.files.Sha256Cache`), so re-hydrating
an unchanged tree reads no blob at all.

A task holds one link per file path (``origin="tree"``, ``path`` the
repository-relative path, ``source`` = prefix + path). Re-hydration replaces
each path's link, removes the links of files that are gone or now skipped —
only within the pathspec and prefix given — and leaves every other link
alone. A task also holds one link per body: a file whose content is already
attached (by an earlier path of the same run, or by another link) is
reported as ``duplicate`` with ``same_as`` naming that link's source.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from . import validate
from .errors import ValidationError
from .files import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TOTAL_BYTES,
    FileEntry,
    Pathspec,
    Sha256Cache,
    Skipped,
    attribute_rules,
    blob_oid,
    classify,
    list_directory,
    list_tree,
    list_worktree,
    path_rule,
    read_blobs,
)
from .model import Link
from .store import _REPO_ENV, run_git

if TYPE_CHECKING:
    from .ledger import Ledger, TaskState

__all__ = [
    "ORIGIN",
    "Pick",
    "Progress",
    "add_tree",
    "commit_links",
    "hydrate_from_path",
    "hydrate_paths",
]

ORIGIN: Final = "tree"
#: Called as ``progress(files_done, files_total, bytes_done)`` while content is read.
Progress = Callable[[int, int, int], None]


@dataclass(frozen=True, slots=True)
class Pick:
    """A file chosen to become a link."""

    path: str
    source: str
    oid: str
    sha256: str
    size: int


def _limit(value: int | None, ledger: Ledger, key: str, default: int, what: str) -> int:
    if value is None:
        return ledger.config_int(key, default)
    number = validate.token_count(value, what)
    if number <= 0:
        raise ValidationError(f"{what} must be positive, not {number}")
    return number


def _prefix(value: str) -> str:
    if not value:
        return ""
    if not isinstance(value, str) or not value.isprintable():
        raise ValidationError("prefix must be one line of printable text")
    return value if value.endswith(("/", ":")) else value + "/"


def _git_outside(directory: str, args: list[str]) -> bytes | None:
    """stdout of ``git args`` run in ``directory`` as its own repository, or None."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    proc = run_git(args, cwd=directory, env=env, check=False)
    return proc.stdout if proc.returncode == 0 else None


def _directory_entries(directory: str) -> tuple[list[FileEntry], list[Skipped], str]:
    """A directory's files: git's file set when it is a git work tree, else a walk."""
    if not os.path.isdir(directory):
        raise ValidationError(f"{directory} is not a directory")
    inside = _git_outside(directory, ["rev-parse", "--is-inside-work-tree"])
    if inside is not None and inside.strip() == b"true":
        listing = _git_outside(
            directory, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        )
        if listing is not None:
            # Paths from ls-files run in a subdirectory are relative to it.
            return list_worktree(listing, directory), [], "git ls-files"
    entries, skipped = list_directory(directory)
    return entries, skipped, "walk"


def add_tree(
    ledger: Ledger,
    task_id: str,
    pathspecs: Iterable[str] = (),
    *,
    rev: str | None = None,
    worktree: bool = False,
    directory: str | os.PathLike[str] | None = None,
    prefix: str = "",
    priority: int = 0,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
    progress: Progress | None = None,
    allow_secrets: bool | None = None,
) -> dict[str, Any]:
    """Attach the files of a commit, the work tree or a directory to a task.

    See :meth:`git_hydrate.Ledger.add_tree` for the arguments and result.
    """
    validate.task_id(task_id)
    priority = validate.context_priority(priority)
    if sum((rev is not None, bool(worktree), directory is not None)) > 1:
        raise ValidationError("give at most one of rev, worktree and directory")
    prefix = _prefix(prefix)
    spec = Pathspec(pathspecs)
    max_file = _limit(
        max_file_bytes, ledger, "hydrate.maxFileBytes", DEFAULT_MAX_FILE_BYTES, "max file bytes"
    )
    max_total = _limit(
        max_total_bytes,
        ledger,
        "hydrate.maxTotalBytes",
        DEFAULT_MAX_TOTAL_BYTES,
        "max total bytes",
    )
    ledger._load(task_id)  # a missing task fails before any file is read
    repo = ledger.repo

    def git(args: list[str]) -> bytes:
        return repo.git(args).stdout

    skipped: list[Skipped] = []
    label: str
    tree: str | None = None
    resolved: str | None = None
    if directory is not None:
        directory = os.fspath(directory)
        entries, skipped, how = _directory_entries(directory)
        label = f"dir {os.path.abspath(directory)}"
        mode = "dir"
    elif worktree:
        if repo.work_tree is None:
            raise ValidationError("--worktree needs a work tree; this repository has none")
        modified = repo.git(["diff-files", "-z", "--name-only"], check=False).stdout
        listing = git(
            [
                *("ls-files", "-z", "-s", "--cached", "--others", "--exclude-standard"),
                *("--full-name", "--", ":/"),
            ]
        )
        entries = list_worktree(listing, repo.work_tree, modified=modified.split(b"\0"))
        label = "worktree"
        mode = "worktree"
    else:
        rev = "HEAD" if rev is None else rev
        if not isinstance(rev, str) or not rev or rev.startswith("-") or not rev.isprintable():
            raise ValidationError(f"invalid revision {rev!r}")
        proc = repo.git(["rev-parse", "--verify", "--quiet", rev + "^{tree}"], check=False)
        if proc.returncode != 0:
            if rev == "HEAD":
                raise ValidationError(
                    "HEAD names no commit yet; commit first, or take the work tree with --worktree"
                )
            raise ValidationError(f"{rev!r} does not name a commit or tree in this repository")
        tree = proc.stdout.strip().decode("ascii")
        commit = repo.git(["rev-parse", "--verify", "--quiet", rev + "^{commit}"], check=False)
        resolved = commit.stdout.strip().decode("ascii") if commit.returncode == 0 else tree
        entries = list_tree(git, tree)
        label = f"{rev} {resolved}" if rev != resolved else rev
        if commit.returncode != 0:
            resolved = None  # a tree, not a commit
        mode = "rev"

    entries = [e for e in entries if spec.matches(e.path)]
    if mode != "dir":

        def git_input(args: list[str], data: bytes) -> bytes | None:
            proc = repo.git(args, input=data, check=False)
            return proc.stdout if proc.returncode == 0 else None

        by_attribute = attribute_rules(git_input, entries, tree=tree if mode == "rev" else None)
    else:
        by_attribute = {}
    skipped = [
        s
        for s in skipped
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

    # -- content: sha256, oid and verdict of every candidate ---------------------
    cache = Sha256Cache(os.path.join(repo.common_dir, "hydrate", "sha256-cache"), repo)
    object_format = repo.hash_name
    if allow_secrets is None:
        allow_secrets = ledger.config_bool("hydrate.allowSecrets", False)
    # Content classes that may be attached: secrets only when deliberately allowed.
    attachable = ("text", "secret") if allow_secrets else ("text",)
    info: dict[str, tuple[str, str, str, int]] = {}  # path -> (oid, sha256, class, size)
    to_write: dict[str, bytes] = {}
    total_files = len(candidates)
    done_files = done_bytes = 0
    unread: dict[str, list[FileEntry]] = {}
    for entry in candidates:
        if entry.oid is not None:
            hit = cache.get(entry.oid)
            if hit is not None:
                info[entry.path] = (entry.oid, hit[0], hit[1], entry.size)
                done_files += 1
                continue
            unread.setdefault(entry.oid, []).append(entry)
            continue
        assert entry.location is not None
        try:
            with open(entry.location, "rb") as fh:
                data = fh.read(max_file + 1)
        except OSError:
            skipped.append(Skipped(entry.path, "unreadable", entry.size))
            continue
        oid = blob_oid(data, object_format)
        if len(data) > max_file:
            skipped.append(Skipped(entry.path, "too_large", len(data)))
            continue
        cls = classify(data)
        digest = hashlib.sha256(data).hexdigest()
        cache.put(oid, digest, cls)  # saves the read once these files are committed
        info[entry.path] = (oid, digest, cls, len(data))
        if cls in attachable:
            to_write[oid] = data
        done_files += 1
        done_bytes += len(data)
        if progress is not None:
            progress(done_files, total_files, done_bytes)
    if unread:
        argv, cwd, env = repo.git_invocation()
        for oid, data in read_blobs(argv, cwd, env, list(unread)):
            cls = classify(data)
            digest = hashlib.sha256(data).hexdigest()
            cache.put(oid, digest, cls)
            for entry in unread[oid]:
                info[entry.path] = (oid, digest, cls, len(data))
                done_files += 1
                done_bytes += len(data)
            if progress is not None:
                progress(done_files, total_files, done_bytes)
    cache.save()

    # -- selection: path order, the total budget, one link per body -----------------
    picks: list[Pick] = []
    seen: dict[str, str] = {}
    remaining = max_total
    for entry in candidates:
        found = info.get(entry.path)
        if found is None:
            continue
        oid, digest, cls, size = found
        source = prefix + entry.path
        if cls not in attachable:
            skipped.append(Skipped(entry.path, cls, size))
        elif digest in seen:
            skipped.append(Skipped(entry.path, "duplicate", size, same_as=seen[digest]))
        elif size > remaining:
            skipped.append(Skipped(entry.path, "total_budget", size))
        elif len(source) > validate.MAX_LABEL_CHARS:
            skipped.append(Skipped(entry.path, "bad_path", size))
        else:
            picks.append(Pick(entry.path, source, oid, digest, size))
            seen[digest] = source
            remaining -= size
    for pick in picks:
        content = to_write.get(pick.oid)
        if content is not None:
            repo.write_blob(content)
    if progress is not None:
        progress(total_files, total_files, done_bytes)

    # -- the commit ---------------------------------------------------------------
    def mine(link: Link) -> bool:
        return (
            link.origin == ORIGIN and link.source == prefix + link.path and spec.matches(link.path)
        )

    trailers = {"source": label}
    if spec:
        trailers["pathspec"] = " ".join(spec.specs)
    if prefix:
        trailers["prefix"] = prefix
    outcome = commit_links(
        ledger,
        task_id,
        picks,
        skipped,
        origin=ORIGIN,
        in_scope=mine,
        priority=priority,
        action="add-tree",
        summary=f"from {label}",
        trailers=trailers,
        result={"mode": mode, "from": label, "commit": resolved, "files": len(entries)},
    )
    if mode == "dir":
        outcome["listing"] = how
    return outcome


def commit_links(
    ledger: Ledger,
    task_id: str,
    picks: list[Pick],
    skipped: list[Skipped],
    *,
    origin: str,
    in_scope: Callable[[Link], bool],
    priority: int,
    action: str,
    summary: str,
    trailers: dict[str, str],
    result: dict[str, Any],
) -> dict[str, Any]:
    """Replace the task's links ``in_scope`` with ``picks``, in one commit (or none).

    One link per path: a pick replaces the in-scope link of its path; in-scope
    links whose path is not picked are removed; a pick whose body another
    (out-of-scope) link already holds is reported as a duplicate.
    """
    from .ledger import Change, Unchanged, _message, body_path

    def apply(state: TaskState | None) -> Change:
        if state is None:
            ledger._load(task_id)
            raise AssertionError("unreachable")
        old = {link.path: link for link in state.links if in_scope(link)}
        kept = [link for link in state.links if not in_scope(link)]
        kept_sources = {link.sha256: link.source for link in kept}
        late_skips: list[Skipped] = []
        links: list[Link] = []
        for pick in picks:
            if pick.sha256 in kept_sources:
                late_skips.append(
                    Skipped(pick.path, "duplicate", pick.size, same_as=kept_sources[pick.sha256])
                )
                continue
            links.append(
                Link(
                    sha256=pick.sha256,
                    oid=pick.oid,
                    size=pick.size,
                    source=pick.source,
                    priority=priority,
                    origin=origin,
                    path=pick.path,
                )
            )
        added = updated = unchanged = 0
        for link in links:
            before = old.get(link.path)
            if before is None:
                added += 1
            elif before == link:
                unchanged += 1
            else:
                updated += 1
        new_paths = {link.path for link in links}
        removed = sorted(path for path in old if path not in new_paths)
        all_skips = sorted([*skipped, *late_skips], key=lambda s: (s.path, s.reason))
        outcome: dict[str, Any] = {
            "task_id": task_id,
            **result,
            "added": added,
            "updated": updated,
            "unchanged": unchanged,
            "removed": len(removed),
            "removed_paths": removed,
            "skipped": [s.as_dict() for s in all_skips],
            "total_bytes": sum(link.size for link in links),
        }
        if not (added or updated or removed):
            raise Unchanged({**outcome, "changed": False})
        final = [*kept, *links]
        before_shas = {link.sha256 for link in state.links}
        after = {link.sha256: link.oid for link in final}
        bodies: dict[bytes, bytes | None] = {
            body_path(digest): None for digest in before_shas - after.keys()
        }
        for digest, oid in after.items():
            if digest not in before_shas:
                bodies[body_path(digest)] = oid.encode("ascii")
        counts = f"added {added}, updated {updated}, removed {len(removed)}"
        return Change(
            task=state.task,
            links=final,
            bodies=bodies,
            message=_message(
                f"{action} {task_id} {summary} (+{added} ~{updated} -{len(removed)})",
                action,
                task_id,
                **trailers,
                counts=counts,
            ),
            result={**outcome, "changed": True},
        )

    written: dict[str, Any] = ledger._write(task_id, apply)
    tip = ledger._tip(task_id)
    written["tip"] = tip.decode("ascii") if tip is not None else None
    return written


def hydrate_from_path(
    ledger: Ledger,
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
    top = ledger.repo.work_tree
    own = top is not None and os.path.realpath(top) == here
    result = add_tree(
        ledger,
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
    ledger: Ledger,
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
            top = ledger.repo.work_tree
            real = os.path.realpath(os.fspath(path))
            if top is None or os.path.realpath(top) != real:
                prefix = os.path.basename(real) + "/"
        total += hydrate_from_path(
            ledger,
            task_id,
            path,
            prefix=prefix,
            priority=priority,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
        )
    return total
