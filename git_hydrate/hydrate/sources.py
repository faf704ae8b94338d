"""Where hydration takes files from: a committed tree, the work tree, or a directory.

* a committed tree (``git ls-tree -r -z -l``): path, mode, blob id and size
  come from git's tree objects, so path rules and size limits are applied
  without reading a single blob;
* the work tree as ``git ls-files --cached --others --exclude-standard`` sees
  it (tracked files plus untracked files that are not ignored) — git's own
  ignore rules, never a re-implementation of them;
* a plain directory (a walk of any depth, hidden directories skipped), or git's file
  set when that directory is a checkout of its own.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import msgspec

from ..errors import CorruptData, GitFailed, ValidationError
from ..store import BeyondSymlink, ConfinedTree, Repository, git_in_directory
from .rules import SKIPPED_DIRS, FileEntry, Skipped, decode_path

__all__ = [
    "Source",
    "absent_blobs",
    "blob_sizes",
    "from_directory",
    "from_rev",
    "from_worktree",
    "list_directory",
    "list_tree",
    "list_worktree",
    "resolve_rev",
    "sized_by_git",
]

_MODE_SYMLINK = 0o120000
_MODE_GITLINK = 0o160000
#: The kind of an index entry absent from the disk, by its mode.
_INDEX_KINDS = {_MODE_SYMLINK: "symlink", _MODE_GITLINK: "submodule"}
#: The tags of ``git ls-files -v`` for an entry git does not look for in the work
#: tree: skip-worktree (``S``, ``s``) or assume-unchanged (``h``, lower case).
_UNLOOKED = (b"S", b"s", b"h")


def list_tree(out: bytes) -> list[FileEntry]:
    """Every blob and submodule of a ``git ls-tree -r -z -l`` listing, with id and
    size, in git's path order (size 0: a listing without ``-l``)."""
    entries: list[FileEntry] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        fields = meta.split()
        if len(fields) == 3:
            fields.append(b"0")  # (listed without sizes)
        if len(fields) != 4:
            raise CorruptData(f"unexpected git ls-tree output: {record[:80]!r}")
        mode = int(fields[0], 8)
        # git prints "-" as a submodule's size, and "BAD" for a blob it cannot read
        if not fields[3].isdigit() and fields[3] not in (b"-", b"BAD"):
            raise CorruptData(f"unexpected git ls-tree output: {record[:80]!r}")
        size = int(fields[3]) if fields[3].isdigit() else 0
        kind = (
            "submodule"
            if mode == _MODE_GITLINK
            else "symlink"
            if mode == _MODE_SYMLINK
            else "unreadable"
            if fields[3] == b"BAD"
            else "file"
        )
        entries.append(
            FileEntry(
                path=decode_path(raw_path),
                size=size,
                kind=kind,
                oid=fields[2].decode("ascii"),
            )
        )
    return entries


def _listed_paths(
    staged: bytes, paths: bytes, changed: set[bytes]
) -> tuple[dict[bytes, str], dict[bytes, int]]:
    """``{path: index blob id or ""}`` of the listings ``staged`` (``git ls-files -z
    -s -v``: ``<tag> <mode> <oid> <stage>\t<path>`` records) and ``paths`` (``git
    ls-files -z``: paths alone), and ``{path: mode}`` of the index's entries git
    does not look for in the work tree (:data:`_UNLOOKED`: skip-worktree, such as
    a sparse checkout's files outside its patterns, or assume-unchanged).

    The blob id is kept only for a path git reports unchanged at stage 0 that
    is not a submodule; anything else must be read from the work tree.
    """
    # (an untracked repository inside the work tree is listed as "nested/": it is
    # the folder, reported as a submodule is, not a path to drop unnamed)
    index_oid = dict.fromkeys((p.rstrip(b"/") for p in paths.split(b"\0") if p), "")
    unlooked: dict[bytes, int] = {}
    for record in staged.split(b"\0"):
        meta, tab, raw_path = record.partition(b"\t")
        fields = meta.split()
        if not tab or len(fields) != 4:
            continue
        tag, mode, oid, stage = fields
        # A conflicted path has several stages; the work tree holds the truth.
        index_oid[raw_path] = (
            oid.decode("ascii")
            if stage == b"0" and raw_path not in changed and mode != b"160000"
            else ""
        )
        if tag in _UNLOOKED and stage == b"0":
            unlooked[raw_path] = int(mode, 8)
    return index_oid, unlooked


def _kind_of(mode: int) -> str:
    """The :class:`FileEntry` kind of a work tree entry with ``lstat`` mode ``mode``."""
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "submodule"
    if stat.S_ISREG(mode):
        return "file"
    return "special"  # a FIFO, socket or device node: reported, never opened


def list_worktree(
    listing: tuple[bytes, bytes],
    top: ConfinedTree,
    *,
    modified: Iterable[bytes] = (),
    unlooked_kind: str = "file",
) -> list[FileEntry]:
    """The work tree as ``git ls-files --cached --others --exclude-standard`` sees it.

    Tracked files that git reports unmodified carry their index blob id (so
    their content is known without reading them); untracked and modified
    files are read from disk. Tracked files missing from the disk are left
    out (they are gone from the work tree), unless git does not look for them
    there (skip-worktree, assume-unchanged): those are unchanged as git sees
    them, and taken as their index blob (:func:`sized_by_git` sizes them). A
    path one of whose folders is a symbolic link (``conf/passwd`` with ``conf ->
    /etc``: deleted, to git) is of kind ``beyond_symlink``, never looked at
    through the link.

    Args:
        listing: The index's entries as ``git ls-files -z -s -v`` lists them (or
            ``b""``), and paths alone, read from disk (``git ls-files -z
            --others --exclude-standard``, or with ``--cached`` too): two
            listings, so that no path (one holding a tab) reads as an entry.
        top: The directory the listed paths are relative to.
        modified: Paths ``git diff-files`` reports as changed.
        unlooked_kind: The kind of a file git does not look for that is not on
            disk (``sparse`` in a partial clone: :func:`sized_by_git` takes it
            only when a pathspec does).
    """
    index_oid, unlooked = _listed_paths(*listing, set(modified))
    entries: list[FileEntry] = []
    base = top.top
    for raw_path in sorted(index_oid):
        try:
            info = top.lstat(raw_path)
        except (FileNotFoundError, NotADirectoryError, BeyondSymlink) as exc:
            mode = unlooked.get(raw_path)
            if mode is not None:  # (git does not look for it: not deleted)
                kind = _INDEX_KINDS.get(mode, unlooked_kind)
                oid = index_oid[raw_path] or None
                entries.append(FileEntry(decode_path(raw_path), 0, kind, oid))
            elif isinstance(exc, BeyondSymlink):
                entries.append(FileEntry(decode_path(raw_path), 0, "beyond_symlink"))
            continue
        kind = _kind_of(info.st_mode)
        entries.append(
            FileEntry(
                path=decode_path(raw_path),
                size=info.st_size if kind == "file" else 0,
                kind=kind,
                oid=index_oid[raw_path] or None,
                location=os.fsdecode(os.path.join(base, raw_path)),
            )
        )
    return entries


def blob_sizes(repo: Repository, oids: list[str]) -> dict[str, int | None]:
    """Each blob's size as git stores it (``None``: this repository lacks it), from
    one ``git cat-file --batch-check`` (object headers only, no body inflated)."""
    if not oids:
        return {}
    stdin = "".join(f"{oid}\n" for oid in oids).encode("ascii")
    # (one line a blob, in the order asked: its size, or "<id> missing")
    out = repo.git(["cat-file", "--batch-check=%(objectsize)"], input=stdin).stdout.splitlines()
    sizes = [int(line) if line.isdigit() else None for line in out]
    if len(sizes) != len(oids):
        raise CorruptData(f"unexpected git cat-file output: {out[:4]!r}")
    return dict(zip(oids, sizes, strict=True))


def absent_blobs(repo: Repository, tree: str) -> set[str]:
    """The blobs of ``tree`` this repository lacks (a partial clone's), listed
    without fetching one (``git rev-list --objects --missing=print``)."""
    out = repo.git(["rev-list", "--objects", "--missing=print", tree]).stdout
    return {line[1:].decode("ascii") for line in out.splitlines() if line.startswith(b"?")}


def sized_by_git(
    repo: Repository,
    entries: list[FileEntry],
    *,
    named: bool,
    held: frozenset[str] = frozenset(),
    tree: str | None = None,
) -> list[FileEntry]:
    """``entries``, each file that has a blob id sized as git stores that blob
    (``unreadable``: a blob this repository lacks and cannot fetch). A file of a
    partial clone's sparse checkout not on disk (kind ``sparse``) is a file when
    a pathspec took it (``named``): its blob is fetched then; else it stays
    ``sparse``, skipped with that reason (a whole tree's worth of blobs, fetched
    one at a time, is not what a run of the work tree asks for), but for one an
    earlier run attached (``held``): its attachment follows the file.

    For the files a run takes, once the pathspec has narrowed them: the work
    tree's (a file on disk may hold other bytes than its index blob although
    git reports it unmodified: checked out through ``core.autocrlf``,
    ``eol=crlf`` or a smudge filter; what is attached is the blob, so its size
    is the blob's, never the copy's), and a tree's in a partial clone (listed
    without sizes: git fetches each blob it lacks to size it, so only those
    wanted are asked). Of ``tree`` (a commit's, in a partial clone), the blobs
    wanted that the clone lacks are fetched first, all in one fetch.
    """
    if named or held:
        entries = [
            msgspec.structs.replace(e, kind="file")
            if e.kind == "sparse" and (named or e.path in held)
            else e
            for e in entries
        ]
    wanted = list({e.oid for e in entries if e.oid and e.kind == "file"})
    if tree is not None and wanted:
        # (those of ``tree``'s blobs the clone lacks, in one fetch: not one each)
        repo.fetch_promised(sorted(absent_blobs(repo, tree).intersection(wanted)))
    try:
        sizes = blob_sizes(repo, wanted)
    except GitFailed as exc:
        remote = repo.promisor_remote()
        if remote is None:
            raise
        # (git's words name a URL or a path; the one line says what it was for)
        raise GitFailed(
            f"{exc}; this partial clone fetches the blobs it lacks from its remote "
            f"{remote!r}, which could not be read: reach it, then run the command again"
        ) from None
    if not sizes:
        return entries
    resized: list[FileEntry] = []
    for entry in entries:
        size = sizes.get(entry.oid or "", entry.size) if entry.kind == "file" else entry.size
        if size is None:
            entry = msgspec.structs.replace(entry, size=0, kind="unreadable")
        elif size != entry.size:
            entry = msgspec.structs.replace(entry, size=size)
        resized.append(entry)
    return resized


def list_directory(root: str) -> tuple[list[FileEntry], list[Skipped]]:
    """The files below ``root`` by a directory walk, plus the directories not entered.

    Hidden directories (``.name``) and :data:`SKIPPED_DIRS` are not descended
    into; each is reported once, as ``dir/`` with reason ``skipped_dir``.
    Symbolic links are reported, never followed; a file gone before its size is
    read (a build's temporary file) is reported ``unreadable``. The walk keeps
    its own stack (a directory may be thousands of levels deep), entering each
    directory's entries in name order.
    """
    if not os.path.isdir(root):
        raise ValidationError(f"{root} is not a directory")
    entries: list[FileEntry] = []
    skipped: list[Skipped] = []
    base = os.fsencode(os.path.abspath(root))
    # (a directory's path below the top, and its entries not yet looked at)
    walking = [(b"", iter(_children(base, b"", skipped)))]
    while walking:
        rel, children = walking[-1]
        child = next(children, None)
        if child is None:
            walking.pop()
            continue
        child_rel = rel + b"/" + child.name if rel else child.name
        name = os.fsdecode(child.name)
        if child.is_symlink():
            entries.append(FileEntry(decode_path(child_rel), 0, "symlink", None, None))
        elif child.is_dir():
            if name.startswith(".") or name in SKIPPED_DIRS:
                skipped.append(Skipped(decode_path(child_rel) + "/", "skipped_dir", 0))
            else:
                walking.append((child_rel, iter(_children(child.path, child_rel, skipped))))
        elif not child.is_file():  # a FIFO, socket or device node: never opened
            entries.append(FileEntry(decode_path(child_rel), 0, "special", None, None))
        else:
            try:
                size = child.stat().st_size
            except OSError:  # (gone since it was listed: as when it goes before it is read)
                skipped.append(Skipped(decode_path(child_rel), "unreadable", 0))
                continue
            entries.append(
                FileEntry(decode_path(child_rel), size, "file", None, os.fsdecode(child.path))
            )
    entries.sort(key=lambda e: e.raw_path)
    return entries, skipped


def _children(directory: bytes, rel: bytes, skipped: list[Skipped]) -> list[os.DirEntry[bytes]]:
    """The entries of ``directory`` (``rel`` below the top), by name; none when it
    cannot be read (reported in ``skipped`` as ``unreadable``).

    Raises:
        ValidationError: the top itself cannot be read.
    """
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        if not rel:
            raise ValidationError(
                f"cannot read {os.fsdecode(directory)}: {exc.strerror}"
            ) from None
        skipped.append(Skipped(decode_path(rel) + "/", "unreadable", 0))
        return []


@dataclass
class Source:
    """A file set to hydrate from, and what it is.

    ``mode`` is ``rev``, ``worktree`` or ``dir``; ``label`` says what was read
    (``HEAD <oid>``, ``worktree``, ``dir <path>``); ``tree`` and ``commit`` are
    the tree and commit read, if any; ``skipped`` holds what the listing
    itself left out (directories a walk did not enter); ``listing`` says how a
    directory was listed (``git ls-files`` or ``walk``); ``unsized``: the sizes
    of the blobs are to be asked of git for the files taken (:func:`sized_by_git`).
    """

    mode: str
    label: str
    entries: list[FileEntry]
    skipped: list[Skipped]
    tree: str | None = None
    commit: str | None = None
    listing: str = ""
    unsized: bool = False
    files: ConfinedTree | None = None
    #: Paths an earlier run attached: in a partial clone's sparse checkout, such a file
    #: is taken (its blob fetched) rather than left out as ``sparse``, so that its
    #: attachment follows it (:func:`sized_by_git`).
    held: frozenset[str] = frozenset()


def resolve_rev(
    repo: Repository,
    rev: str,
    *,
    unborn: str = "commit first, or take the work tree with --worktree",
) -> tuple[str | None, str]:
    """The commit (``None`` for a tree) and the tree ``rev`` names: one ``git
    rev-parse``, the tree then read from the commit.

    Raises:
        ValidationError: ``rev`` is not a revision, or names no commit or tree here.
    """
    if not isinstance(rev, str) or not rev or rev.startswith("-") or not rev.isprintable():
        raise ValidationError(f"invalid revision {rev!r}")
    commit = repo.rev_parse(rev, "commit")
    if commit is not None:
        return commit, repo.read_commit_tree(commit.encode("ascii"))[0].decode("ascii")
    tree = repo.rev_parse(rev, "tree")
    if tree is None:
        if rev == "HEAD":
            raise ValidationError(f"HEAD names no commit yet; {unborn}")
        raise ValidationError(f"{rev!r} does not name a commit or tree in this repository")
    return None, tree


def from_rev(
    repo: Repository,
    rev: str,
    resolved: tuple[str | None, str] | None = None,
    lister: Callable[[Repository, str], list[FileEntry]] | None = None,
) -> Source:
    """The files of the commit (or tree) ``rev`` (``resolved``: what
    :func:`resolve_rev` found for it already; ``lister``: what lists a tree's
    files as :func:`list_tree` does, instead of ``git ls-tree``).

    Raises:
        ValidationError: ``rev`` names no commit or tree here.
    """
    commit, tree = resolve_rev(repo, rev) if resolved is None else resolved
    pinned = commit or tree
    label = f"{rev} {pinned}" if rev != pinned else rev
    if repo.partial_clone():  # (ls-tree -l would fetch every blob it lacks, to size it)
        entries = list_tree(repo.ls_tree(tree, sizes=False))
        return Source("rev", label, entries, [], tree=tree, commit=commit, unsized=True)
    entries = lister(repo, tree) if lister is not None else list_tree(repo.ls_tree(tree))
    return Source("rev", label, entries, [], tree=tree, commit=commit)


def from_worktree(repo: Repository) -> Source:
    """The work tree: tracked files plus untracked files that are not ignored.

    Raises:
        ValidationError: the repository has no work tree.
    """
    if repo.work_tree is None:
        if not repo.is_bare:  # (run from inside its git directory, as git sees it)
            raise ValidationError(
                "--worktree needs a work tree; run it from the work tree, not inside the "
                "git directory"
            )
        raise ValidationError("--worktree needs a work tree; this repository has none")
    modified = repo.modified_files()
    sparse = "sparse" if repo.partial_clone() else "file"
    files = repo.work_tree_files
    assert files is not None  # (there is a work tree)
    entries = list_worktree(repo.ls_files(), files, modified=modified, unlooked_kind=sparse)
    return Source("worktree", "worktree", entries, [], unsized=True, files=files)


def from_directory(directory: str) -> Source:
    """A directory's files: git's file set when it is a git work tree, else a walk.

    Raises:
        ValidationError: not a directory, unreadable, or a git directory (a bare
            repository, ``.git`` or inside it: git's files, this tool's caches).
    """
    if not os.path.isdir(directory):
        raise ValidationError(f"{directory} is not a directory")
    label = f"dir {os.path.abspath(directory)}"
    files = ConfinedTree(os.path.abspath(directory))
    where = git_in_directory(
        directory, ["rev-parse", "--is-inside-git-dir", "--is-inside-work-tree"]
    )
    in_git_dir, _, inside = (where or b"").strip().partition(b"\n")
    if in_git_dir == b"true":
        raise ValidationError(
            f"{directory} is a git directory (or inside one): its files are git's and "
            "git-hydrate's own, not context"
        )
    if inside == b"true":
        listing = git_in_directory(
            directory, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        )
        if listing:
            # Paths from ls-files run in a subdirectory are relative to it.
            entries = list_worktree((b"", listing), files)
            return Source("dir", label, entries, [], listing="git ls-files", files=files)
        if listing is not None:
            # A directory the enclosing work tree ignores whole (an installed tree
            # inside a tool's checkout): git lists nothing, so walk it, and say so.
            entries, skipped = list_directory(directory)
            walked = "walk (git ignores the whole directory in its enclosing work tree)"
            return Source("dir", label, entries, skipped, listing=walked, files=files)
    entries, skipped = list_directory(directory)
    return Source("dir", label, entries, skipped, listing="walk", files=files)
