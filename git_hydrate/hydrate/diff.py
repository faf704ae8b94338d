"""add-diff: attach what changed — one body per file's diff, plus the commit log.

Each file's part of ``git diff`` becomes its own body (source
``diff:<range>:<path>``), so the packer's budget can keep some files' changes
when not all fit; binary diffs are skipped and reported. With ``log``, the
commit messages of the range become one more body (source ``log:<range>``).
Re-running for the same range replaces those links and removes the diffs of
files that no longer change (within the pathspecs), in one commit. The skip
rules are add-tree's (:mod:`.rules`).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Iterator
from typing import Any, Final

from .. import validate
from ..errors import CorruptData, ValidationError
from ..model import Link, Task
from ..results import HydrateResult
from ..store import Repository
from ..taskrefs import TaskRefs
from .cache import keep_compiled_prefilter
from .generated import HEAD_CHARS, says_generated
from .links import DIFF_TOP, Pick, Selector, commit_links, limits
from .pathspec import Pathspec
from .placement import Place, place
from .rules import (
    FileEntry,
    Skipped,
    attribute_rules,
    body_rule,
    path_rule,
)

__all__ = ["ORIGIN", "add_diff", "default_base"]

ORIGIN: Final = "diff"

_FILE_HEADER: Final = re.compile(rb"^(?=diff --git )", re.MULTILINE)


def _check_rev(rev: str) -> str:
    if not rev or rev.startswith("-") or not rev.isprintable() or " " in rev:
        raise ValidationError(f"invalid revision {rev!r}")
    return rev


def default_base(repo: Repository) -> str:
    """What the current branch is compared with: its upstream, else the default branch.

    Raises:
        ValidationError: neither exists, or the current branch is the default branch.
    """
    upstream = repo.upstream()
    if upstream:
        return upstream
    current = repo.symbolic_ref("HEAD") or ""
    origin_head = repo.symbolic_ref("refs/remotes/origin/HEAD")
    candidates = [origin_head] if origin_head else []
    candidates += ["main", "master"]
    for name in candidates:
        if name != current and repo.rev_parse(name, "commit") is not None:
            return name
    # (--staged and --worktree read a work tree: a bare repository has none)
    other = ", or use --staged / --worktree" if repo.work_tree is not None else ""
    if current in candidates:
        raise ValidationError(
            f"{current} has no upstream, and it is itself the default branch; give a range "
            f"such as HEAD~3..HEAD{other}"
        )
    raise ValidationError(
        f"no upstream or default branch to compare with; give a range such as main...HEAD{other}"
    )


#: The extended header lines that may follow ``diff --git`` (``rename to`` and
#: ``copy to`` name the new path).
_EXTENDED: Final = (
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"similarity index ",
    b"dissimilarity index ",
    b"rename from ",
    b"copy from ",
    b"index ",
)
_NEW_NAME: Final = (b"rename to ", b"copy to ")
_ESCAPES: Final = {ord(k): v for k, v in zip('abtnvfr"\\', b'\a\b\t\n\v\f\r"\\', strict=True)}


def _unquote(text: bytes) -> tuple[bytes, bytes]:
    """The C-quoted name at the start of ``text`` (as git quotes a path holding a
    control character, a quote or a backslash), and what follows it."""
    out = bytearray()
    i = 1
    while i < len(text):
        c = text[i]
        if c == 0x22:  # the closing quote
            return bytes(out), text[i + 1 :]
        if c != 0x5C:
            out.append(c)
            i += 1
        elif text[i + 1 : i + 2].isdigit():  # \ooo: a byte in octal
            out.append(int(text[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        elif i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            break
    raise CorruptData(f"git diff gave a header this cannot read: {text[:80]!r}")


def _name(text: bytes, prefix: bytes) -> bytes:
    """A path as a header line holds it (quoted or not), without ``prefix``."""
    name, rest = _unquote(text) if text.startswith(b'"') else (text, b"")
    if rest or not name.startswith(prefix):
        raise CorruptData(f"git diff gave a header this cannot read: {text[:80]!r}")
    return name[len(prefix) :]


def _part_path(part: bytes) -> tuple[str, bool]:
    """The path a file's part of a patch is the diff of (renames: the new path), read
    from its own header, and whether git found the file binary."""
    lines = part.split(b"\n", 12)
    if not lines[0].startswith(b"diff --git "):
        raise CorruptData(f"git diff gave a line this cannot read: {lines[0][:80]!r}")
    names = lines[0][len(b"diff --git ") :]
    new: bytes | None = None
    binary = False
    for line in lines[1:12]:
        if line.startswith(_NEW_NAME):
            new = _name(line.split(b" ", 2)[2], b"")
        elif not line.startswith(_EXTENDED):
            binary = line.startswith(b"Binary files ")
            break
    if new is None and names.startswith(b'"'):  # both names quoted: the same path
        _old, rest = _unquote(names)
        new = _name(rest[1:], b"b/")
    elif new is None:  # a/PATH b/PATH: the same path twice
        half = names[2 : 2 + (len(names) - 5) // 2]
        if names != b"a/" + half + b" b/" + half:
            raise CorruptData(f"git diff gave a header this cannot read: {names[:80]!r}")
        new = half
    return new.decode("utf-8", "surrogateescape"), binary


def _split_patch(data: bytes) -> list[tuple[str, bool, bytes]]:
    """``(path, binary, part)`` per file of a patch, each path read from its part's
    own header (a line starting ``diff --git`` is always a header).

    A file whose type changed (a file replaced by a symlink, or the reverse) comes
    as two parts with the same header line, a deletion and a creation; they stay
    one part, one file. Two different files never share a header line, since it
    names the paths.
    """
    # split before each header line: every part keeps its last newline
    merged: list[tuple[str, bool, bytes]] = []
    previous = b""
    for part in _FILE_HEADER.split(data):
        if not part:
            continue
        header = part.split(b"\n", 1)[0]
        path, binary = _part_path(part)
        if merged and header == previous:
            _path, was_binary, before = merged[-1]
            merged[-1] = (path, was_binary or binary, before + part)
        else:
            merged.append((path, binary, part))
        previous = header
    return merged


#: Inside its git directory git sees no work tree though the repository has one.
_INSIDE_GIT_DIR: Final = "run it from the work tree, not inside the git directory"


def _diff_args(
    repo: Repository, rev_range: str | None, staged: bool, worktree: bool
) -> tuple[list[str], str]:
    """``git diff`` arguments and the range's label."""
    if staged or worktree:
        if repo.work_tree is None:
            where = "this repository has none" if repo.is_bare else _INSIDE_GIT_DIR
            raise ValidationError(f"--staged and --worktree need a work tree; {where}")
        if staged and worktree:
            if repo.rev_parse("HEAD", "commit") is None:  # (no commit yet: all is new)
                empty = repo.git(["hash-object", "-t", "tree", "--stdin"], input=b"")
                return [empty.stdout.decode("ascii").strip()], "uncommitted"
            return ["HEAD"], "uncommitted"
        _refuse_unmerged(repo.unmerged_paths(), "--staged" if staged else "--worktree")
        return (["--cached"], "staged") if staged else ([], "worktree")
    if rev_range is None:
        rev_range = default_base(repo) + "...HEAD"
    if "..." in rev_range:
        left, right = rev_range.split("...", 1)
        sides, sep = [left or "HEAD", right or "HEAD"], "..."
    elif ".." in rev_range:
        left, right = rev_range.split("..", 1)
        sides, sep = [left or "HEAD", right or "HEAD"], ".."
    else:
        sides, sep = [rev_range, "HEAD"], "..."
    for side in sides:
        _check_rev(side)
        if repo.rev_parse(side, "commit") is None:
            # (a shallow clone's history stops at its cut: HEAD~1 may be beyond it)
            shallow = "; it is a shallow clone: git fetch --deepen=N brings more history"
            raise ValidationError(
                f"{side!r} does not name a commit in this repository"
                + (shallow if repo.shallow_commits() else "")
            )
    label = sep.join(sides)
    return ([label] if sep == "..." else sides), label


def _refuse_unmerged(unmerged: list[str], option: str) -> None:
    """Refuse ``option`` while paths are unmerged: git diff shows them combined (or
    not at all), no diff per file; ``--staged --worktree`` (from HEAD) has one."""
    if not unmerged:
        return
    one = len(unmerged) == 1
    more = f" and {len(unmerged) - 3} more" if len(unmerged) > 3 else ""
    raise ValidationError(
        f"{', '.join(unmerged[:3])}{more} {'is' if one else 'are'} unmerged (a merge or "
        f"rebase stopped): {option} has no diff of {'it' if one else 'them'} to attach; give "
        "--staged --worktree to attach the changes from HEAD, conflict markers included"
    )


#: The most paths a diff is told to leave out (each is a word of its command line).
_MOST_LEFT_OUT: Final = 256


def _new_files_too_large(repo: Repository, listing: bytes, max_file: int) -> dict[str, int]:
    """The files the diff adds from the work tree (an intent-to-add file, say)
    whose size alone is over ``max_file``, and their sizes: the diff of a new file
    holds each of its bytes and more, so it could never be taken. Judged by
    ``lstat`` before git is asked for any patch text (git would read and hash the
    whole file: 84 s for one of 2 GB); ``listing``: the diff's ``--raw`` listing."""
    if repo.work_tree is None:
        return {}
    found: dict[str, int] = {}
    for _old_mode, _new_mode, _old, new, status, raw in _raw_entries(listing):
        if status != b"A" or new.strip(b"0"):  # (not added, or not from the work tree)
            continue
        try:
            info = os.lstat(os.path.join(os.fsencode(repo.work_tree), raw))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and info.st_size > max_file:
            found[raw.decode("utf-8", "surrogateescape")] = info.st_size
    return found if len(found) <= _MOST_LEFT_OUT else {}


def _bodies(
    repo: Repository,
    args: list[str],
    label: str,
    spec: Pathspec,
    log: bool,
    limits: tuple[int, Task],
) -> tuple[list[tuple[str, str, bytes]], list[Skipped], list[str]]:
    """``(path, source, diff)`` per changed file (and the log), binary diffs, new
    files too large to take (``limits``: the largest, and the task) and generated
    or vendored files (:func:`_left_aside`) skipped, and the paths of every changed
    file."""
    max_file, task = limits
    from_work_tree = label in ("worktree", "uncommitted")
    listing = repo.diff_raw(args) if from_work_tree and repo.work_tree is not None else None
    large = _new_files_too_large(repo, listing, max_file) if listing is not None else {}
    # (one run, each part's path read from its own header: a second run could see
    # another work tree, and pairing the two by position file one diff under
    # another's name)
    parts = _split_patch(repo.diff(args, leaving_out=sorted(large)))
    bodies: list[tuple[str, str, bytes]] = []
    skipped = [
        Skipped(path, "too_large", size) for path, size in large.items() if spec.matches(path)
    ]
    for path, binary, part in parts:
        if not spec.matches(path):
            continue
        if binary:
            skipped.append(Skipped(path, "binary", len(part)))
        else:
            bodies.append((path, f"diff:{label}:{path}", part))
    named = {note.path for note in (*task.files, *task.tests)}  # (taken, as add-tree takes them)
    judged = [path for path, _source, _part in bodies if path not in named]
    aside = _left_aside(repo, judged, label)
    judged = [path for path in judged if path not in aside]
    aside.update(dict.fromkeys(_said_generated(repo, args, judged, listing), "generated"))
    if aside:
        skipped += [Skipped(p, aside[p], len(part)) for p, _s, part in bodies if p in aside]
        bodies = [body for body in bodies if body[0] not in aside]
    if log:
        text = repo.log_text(label)
        if text.strip():
            bodies.insert(0, ("", f"log:{label}", text))
    return bodies, skipped, [path for path, _binary, _part in parts] + list(large)


def _names(listing: bytes) -> list[str]:
    """The paths of a ``-z`` listing whose entries end in a tab and the path (or are
    the path alone)."""
    return [
        entry.rpartition(b"\t")[2].decode("utf-8", "surrogateescape")
        for entry in listing.split(b"\0")
        if entry
    ]


def _left_aside(repo: Repository, paths: list[str], label: str) -> dict[str, str]:
    """The diffs of ``paths`` add-tree's rules leave out by the file's path or marks:
    one under a skipped directory such as ``node_modules`` or ``dist``
    (``skipped_dir``), a lockfile or minified file, or one ``.gitattributes`` marks
    ``linguist-generated`` (``generated``) or ``linguist-vendored`` (``vendored``),
    as of the range's newer side (the work tree's for uncommitted changes)."""
    found: dict[str, str] = {}
    for path in paths:
        why = path_rule(FileEntry(path, 1), 1)  # (by its path alone: sizes are the body's)
        if why in ("skipped_dir", "generated"):
            found[path] = why
    asked = [FileEntry(path, 0) for path in paths if path not in found]
    newer = (label.split("..")[-1].lstrip(".") or "HEAD") if ".." in label else None
    tree = repo.rev_parse(newer, "tree") if newer is not None else None
    for path, why in attribute_rules(repo, asked, tree=tree).items():
        if why in ("generated", "vendored"):
            found[path] = why
    return found


#: Bytes of a file read to judge what it says of itself (:mod:`.generated`).
_HEAD_BYTES: Final = 4 * HEAD_CHARS


def _said_generated(
    repo: Repository, args: list[str], paths: list[str], listing: bytes | None
) -> list[str]:
    """Those of ``paths`` (files the diff changes) whose content says a tool wrote
    it (:func:`.generated.says_generated`), as of the diff's newer side (the older
    for a file it deletes; a work-tree file read through no symbolic link).
    ``listing``: the diff's ``--raw`` listing, if read already."""
    if not paths:
        return []
    sides = _sides(repo.diff_raw(args) if listing is None else listing, set(paths))
    blobs = sorted({oid for oid in sides.values() if oid})
    heads = {oid: data[:_HEAD_BYTES] for oid, data in repo.stream_blobs(blobs)} if blobs else {}
    found = []
    for path, oid in sides.items():
        head = heads.get(oid) if oid else _worktree_head(repo, path)
        if head is not None and says_generated(head.decode("utf-8", "replace")):
            found.append(path)
    return found


def _sides(listing: bytes, wanted: set[str]) -> dict[str, str]:
    """The blob of each regular file of ``wanted`` on the diff's newer side (the
    older for a file it deletes), from its ``--raw -z`` listing; ``""``: the file
    in the work tree."""
    found: dict[str, str] = {}
    for old_mode, new_mode, old, new, status, raw in _raw_entries(listing):
        path = raw.decode("utf-8", "surrogateescape")
        mode, oid = (old_mode, old) if status == b"D" else (new_mode, new)
        if path in wanted and mode.startswith(b"100"):
            found[path] = oid.decode("ascii") if oid.strip(b"0") else ""
    return found


def _raw_entries(listing: bytes) -> Iterator[tuple[bytes, bytes, bytes, bytes, bytes, bytes]]:
    """The entries of a diff's ``--raw -z`` listing: the two modes and blob ids, the
    status letter and the raw path (of a file renamed or copied, the new one)."""
    fields = listing.split(b"\0")
    at = 0
    while at + 1 < len(fields) and fields[at].startswith(b":"):
        old_mode, new_mode, old, new, status = fields[at][1:].split(b" ")[:5]
        two = status[:1] in (b"R", b"C")  # (renamed or copied: the new path follows)
        yield old_mode, new_mode, old, new, status[:1], fields[at + 2 if two else at + 1]
        at += 3 if two else 2


def _worktree_head(repo: Repository, path: str) -> bytes | None:
    """The first bytes of the work tree's regular file ``path``, never read through
    a symbolic link (``None``: not there, or not readable so)."""
    files = repo.work_tree_files
    if files is None:
        return None
    try:
        return files.read(path.encode("utf-8", "surrogateescape"), _HEAD_BYTES)
    except OSError:
        return None


def _check_matched(repo: Repository, spec: Pathspec, changed: list[str], label: str) -> None:
    """Refuse a pathspec that names no file at all, as add-tree does (a typo would
    otherwise read "nothing changed"); one naming a file that did not change is fine.

    Only when a pathspec matched no changed file are the files listed: the index's
    for uncommitted changes (and the untracked ones, to say so), else both sides'
    trees of the range.
    """
    unmatched = spec.unmatched(changed)
    if not unmatched:
        return
    untracked: list[str] = []
    if ".." in label:
        sides = re.split(r"\.\.\.?", label)
        known = [p for side in sides for p in _names(repo.ls_tree(side, sizes=False))]
    else:
        tracked, others = repo.ls_files()
        known, untracked = _names(tracked), _names(others)
    unmatched = Pathspec(unmatched).unmatched(known)
    if not unmatched:
        return
    if not Pathspec(unmatched[:1]).unmatched(untracked):
        raise ValidationError(
            f"pathspec '{unmatched[0]}' matched only untracked files, which have no diff "
            "(git add -N makes a new file part of --worktree)"
        )
    raise ValidationError(f"pathspec '{unmatched[0]}' did not match any files")


def _pick(
    repo: Repository,
    bodies: list[tuple[str, str, bytes]],
    places: dict[str, Place],
    max_file: int,
    max_total: int,
    allow_secrets: bool,
) -> tuple[list[Pick], list[Skipped]]:
    selector = Selector(max_total, allow_secrets, [body[1] for body in bodies])
    keep_compiled_prefilter(
        repo, scanning=sum(len(body[2]) for body in bodies if len(body[2]) <= max_file)
    )
    ordered = sorted(bodies, key=lambda body: (-places[body[0]][0], body[0]))
    for path, source, data in ordered:

        def write(data: bytes = data) -> str:
            return repo.write_blob(data).decode("ascii")

        cls = body_rule(data, path, max_file)
        digest = hashlib.sha256(data).hexdigest()
        selector.offer(
            path, source, digest, len(data), cls, write, shown=path or source, place=places[path]
        )
    return selector.picks, selector.skipped


def _check_what_to_diff(rev_range: str | None, uncommitted: bool, log: bool) -> None:
    """Refuse a range given with --staged/--worktree, and --log without a range."""
    if rev_range is not None and uncommitted:
        raise ValidationError("give a revision range or --staged/--worktree, not both")
    if log and uncommitted:
        raise ValidationError("--log needs a revision range (uncommitted changes have no log)")


def _placed(
    refs: TaskRefs,
    task: Task,
    bodies: list[tuple[str, str, bytes]],
    label: str,
    priority: int | None,
    ranked: bool,
) -> dict[str, Place]:
    """Where each file's diff goes, and the log (``""``)."""
    # The log first, then the diffs ranked like files, by the history of the
    # range's newer side (HEAD for uncommitted changes).
    places = dict(
        place(
            refs.repo,
            task,
            {path: len(data) for path, _source, data in bodies if path},
            commit=refs.repo.rev_parse(label.split("..")[-1].lstrip(".") or "HEAD")
            if ".." in label
            else refs.repo.rev_parse("HEAD"),
            top=DIFF_TOP - 1,  # the log, when asked for, is at DIFF_TOP
            priority=priority,
            ranked=ranked,
        )
    )
    places[""] = (
        (priority or 0, None, "")
        if priority is not None or not ranked
        else (
            DIFF_TOP,
            None,
            "commit messages of the range",
        )
    )
    return places


def add_diff(
    refs: TaskRefs,
    task_id: str,
    rev_range: str | None = None,
    pathspecs: Iterable[str] = (),
    *,
    staged: bool = False,
    worktree: bool = False,
    log: bool = False,
    priority: int | None = None,
    ranked: bool = True,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
    allow_secrets: bool | None = None,
) -> HydrateResult:
    """Attach the diff of a range (or of staged / work-tree changes), one body per file.

    See :meth:`git_hydrate.Ledger.add_diff`.
    """
    settings = refs.repo.settings
    validate.task_id(task_id)
    if priority is not None:
        priority = validate.context_priority(priority)
    spec = Pathspec(pathspecs)
    _check_what_to_diff(rev_range, staged or worktree, log)
    max_file, max_total = limits(settings, max_file_bytes, max_total_bytes)
    task = refs.load(task_id).task
    args, label = _diff_args(refs.repo, rev_range, staged, worktree)
    bodies, skipped, changed = _bodies(refs.repo, args, label, spec, log, (max_file, task))
    _check_matched(refs.repo, spec, changed, label)
    places = _placed(refs, task, bodies, label, priority, ranked)
    allowed = settings.boolean("hydrate.allowSecrets") if allow_secrets is None else allow_secrets
    picks, late = _pick(refs.repo, bodies, places, max_file, max_total, allowed)
    prefix = f"diff:{label}:"

    def mine(link: Link) -> bool:
        if link.origin != ORIGIN:
            return False
        if link.source == f"log:{label}":
            return log
        return link.source == prefix + link.path and spec.matches(link.path)

    trailers = {"source": label}
    if spec:
        trailers["pathspec"] = " ".join(spec.specs)
    return commit_links(
        refs,
        task_id,
        picks,
        [*skipped, *late],
        origin=ORIGIN,
        in_scope=mine,
        action="add-diff",
        summary=f"of {label}",
        trailers=trailers,
        result={"range": label, "files": len(changed), **_untracked(refs.repo, spec, worktree)},
    )


def _untracked(repo: Repository, spec: Pathspec, worktree: bool) -> dict[str, Any]:
    """With ``worktree``, ``untracked``: the untracked files no ignore rule covers,
    within ``spec``, of which it has no diff (``git add -N`` gives them one)."""
    if not worktree:
        return {}
    _tracked, others = repo.ls_files()
    return {"untracked": sorted(path for path in _names(others) if spec.matches(path))}
