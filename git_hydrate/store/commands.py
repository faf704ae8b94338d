"""Named git commands: everything git-hydrate asks of git besides objects and refs.

Each method runs one git command with fixed, reviewed options and returns
plain values; no other module builds a git command line.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Final

from ..settings import parse_bool
from .base import RepositoryBase
from .process import Background, begin_git, outside_env, run_git

__all__ = ["DIFF_OPTIONS", "Commands", "git_in_directory"]

#: Options that make ``git diff`` output independent of the user's diff config.
DIFF_OPTIONS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "-M",
    "--submodule=short",  # (diff.submodule=log|diff: lines outside any file's part)
)


def git_in_directory(directory: str, args: list[str]) -> bytes | None:
    """stdout of ``git args`` run in ``directory`` as its own repository, or ``None``."""
    proc = run_git(args, cwd=directory, env=outside_env(), check=False)
    return proc.stdout if proc.returncode == 0 else None


#: A branch name read in-process: plain characters only (git's other rules, on
#: dots, slashes and ``.lock``, are checked by :func:`_head_branch`).
_BRANCH_CHARACTERS: Final = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./"
)


def _object_line(data: bytes) -> bool:
    """Whether ``data`` is an object id (SHA-1 or SHA-256, lower-case) and a newline."""
    return (
        len(data) in (41, 65)
        and data[-1:] == b"\n"
        and all(c in b"0123456789abcdef" for c in data[:-1])
    )


def _head_branch(git_dir: str, common_dir: str) -> str | None:
    """What ``git symbolic-ref -q --short HEAD`` prints, from the file: the branch,
    ``""`` for a detached ``HEAD``, ``None`` where git must say.

    Read only when certain: ``HEAD`` a regular file holding ``ref: refs/heads/NAME``
    or an object id, each with one newline; ``NAME`` of plain characters and
    components; not itself a symbolic ref (git follows it); and no ref git's
    ``--short`` would find ambiguous with it (``NAME``, ``refs/NAME``,
    ``refs/tags/NAME``, loose in either directory or packed), where git would
    print a longer name.
    """
    try:
        fd = os.open(os.path.join(git_dir, "HEAD"), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None  # a symbolic link (or none): git's
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(4097)
    if _object_line(data):
        return ""
    if not (data.startswith(b"ref: refs/heads/") and data.endswith(b"\n")):
        return None
    name = data[16:-1].decode("ascii", "replace")
    parts = name.split("/")
    if (
        not set(name) <= _BRANCH_CHARACTERS
        or any(not p or p.startswith(".") or p.endswith((".lock", ".")) for p in parts)
        or ".." in name
        or name.startswith(("-", "main-worktree/", "worktrees/"))  # (other worktrees' refs)
    ):
        return None
    branch = os.path.join(common_dir, "refs", "heads", name)
    if os.path.islink(branch) or (os.path.exists(branch) and not os.path.isfile(branch)):
        return None
    if os.path.isfile(branch):
        with open(branch, "rb") as fh:
            held = fh.read(66)
        if not _object_line(held):
            return None  # a symbolic ref itself (git follows it), or empty or damaged
    others = (name, f"refs/{name}", f"refs/tags/{name}")
    for home in {git_dir, common_dir}:
        if any(os.path.lexists(os.path.join(home, other)) for other in others):
            return None
    try:
        with open(os.path.join(common_dir, "packed-refs"), "rb") as fh:
            packed = fh.read()
    except FileNotFoundError:
        return name
    except OSError:
        return None
    if any(f" {other}\n".encode() in packed for other in others):
        return None
    return name


#: git's exit status for a usage error (an option it does not know).
_USAGE_ERROR: Final = 129


class Commands(RepositoryBase):
    """git commands by name (mixed into :class:`~git_hydrate.store.Repository`)."""

    # -- revisions ----------------------------------------------------------------

    def git_path(self, name: str) -> str:
        """``git rev-parse --git-path NAME``, absolute: where git keeps ``NAME`` for this
        work tree (a linked work tree has its own, except for the shared paths).

        Without a process for the names git-hydrate asks about, where the repository
        was found in-process (no variable redirects git's paths): ``hydrate/...`` is
        the work tree's own, ``info/exclude`` shared (git's ``common_list``).
        """
        known = self._known_git_path(name)
        if known is not None:
            return known
        proc = self.git(["rev-parse", "--path-format=absolute", "--git-path", name])
        return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")

    def _known_git_path(self, name: str) -> str | None:
        if not self.found_in_process or any(p in ("", ".", "..") for p in name.split("/")):
            return None
        if name.startswith("hydrate/"):
            home = self.git_dir
        elif name == "info/exclude":
            home = self.common_dir
        else:
            return None
        return os.path.realpath(os.path.join(home, name))

    def symbolic_ref(self, name: str) -> str | None:
        """The short name of the branch the symbolic ref ``name`` points at, or ``None``.

        ``HEAD`` of a repository found in-process is read from its file where git's
        answer is certain (:func:`_head_branch`); anything else is git's.
        """
        if name == "HEAD" and self.found_in_process:
            known = _head_branch(self.git_dir, self.common_dir)
            if known is not None:
                return known or None
        proc = self.git(["symbolic-ref", "-q", "--short", name], check=False)
        value = proc.stdout.decode("utf-8", "replace").strip()
        return value if proc.returncode == 0 and value else None

    def upstream(self) -> str | None:
        """The current branch's upstream (``origin/main``), or ``None``."""
        proc = self.git(
            ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"], check=False
        )
        value = proc.stdout.decode("utf-8", "replace").strip()
        return value if proc.returncode == 0 and value else None

    def merge_bases(self, a: bytes, b: bytes) -> list[bytes]:
        """Every merge base of two commits (sorted; empty when they share no history)."""
        proc = self.git(["merge-base", "--all", a.decode(), b.decode()], check=False)
        return sorted(proc.stdout.split()) if proc.returncode == 0 else []

    def is_ancestor(self, ancestor: bytes, descendant: bytes) -> bool:
        """Whether ``ancestor`` is reachable from ``descendant`` (a commit is its own)."""
        if ancestor == descendant:
            return True
        proc = self.git(
            ["merge-base", "--is-ancestor", ancestor.decode(), descendant.decode()], check=False
        )
        return proc.returncode == 0

    def reachable(self, tips: Iterable[bytes]) -> set[bytes]:
        """Every commit reachable from ``tips`` (one ``git rev-list``)."""
        heads = [t.decode() for t in tips]
        if not heads:
            return set()
        proc = self.git(["rev-list", "--stdin"], input="\n".join(heads).encode() + b"\n")
        return set(proc.stdout.split())

    def missing_objects(self, heads: Sequence[bytes], known_glob: str) -> list[str]:
        """Objects reachable from ``heads`` but absent here (a partial clone's gaps),
        not walking into what ``known_glob``'s refs already reach."""
        proc = self.git(
            [
                "rev-list",
                "--objects",
                "--missing=print",
                "--stdin",
                "--not",
                f"--glob={known_glob}",
            ],
            input=b"".join(head + b"\n" for head in heads),
            check=False,
        )
        return [line[1:].decode() for line in proc.stdout.splitlines() if line.startswith(b"?")]

    def commit_time(self, oid: str) -> int | None:
        """The committer time of commit ``oid``, or ``None`` when it is not a commit."""
        proc = self.git(["log", "-1", "--no-walk", "--format=%ct", oid], check=False)
        text = proc.stdout.decode("ascii", "replace").strip()
        return int(text) if proc.returncode == 0 and text.isdigit() else None

    def commit_messages(self, tip: str, exclude: Sequence[str], limit: int) -> str | None:
        """The messages of the newest ``limit`` commits of ``tip`` not reachable from
        ``exclude``, NUL-separated; ``None`` when git cannot walk them."""
        proc = self.git(
            [
                *("-c", "log.showSignature=false", "log", "--no-color", "-z", "--format=%B"),
                f"--max-count={limit}",
                tip,
                "--not",
                *exclude,
            ],
            check=False,
        )
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    def changed_paths(self, rev: str, limit: int) -> bytes:
        """``git log`` of ``rev`` and its ancestors only (newest first, at most ``limit``
        non-merge commits): ``NUL<commit id> <subject>NUL<body>NUL`` then one changed
        path per line."""
        return self.git(_changed_paths_args(rev, limit)).stdout

    def begin_changed_paths(self, rev: str, limit: int) -> Background | None:
        """:meth:`changed_paths` begun now, to be read later (``None``: not begun)."""
        argv, cwd, env = self.git_invocation()
        return begin_git([*argv, *_changed_paths_args(rev, limit)], cwd, env)

    def log_text(self, range_: str) -> bytes:
        """The commit messages of a range, with id, author and date, oldest last."""
        return self.git(
            [
                # (log.showSignature would put gpg's lines in the body)
                *("-c", "log.showSignature=false", "log", "--no-color"),
                "--format=commit %H%nAuthor: %an <%ae>%nDate: %aI%n%n%B",
                range_,
                "--",
            ]
        ).stdout

    def add_trailers(self, path: str, trailers: Sequence[tuple[str, str]]) -> None:
        """``git interpret-trailers --in-place`` on the message file ``path``: each
        ``(key, value)`` added unless a trailer with that key is there already."""
        args = ["interpret-trailers", "--in-place", "--if-exists", "doNothing"]
        for key, value in trailers:
            args += ["--trailer", f"{key}: {value}"]
        self.git([*args, path], what="adding commit trailers")

    def trailer_log(self, keys: Sequence[str]) -> bytes:
        """Every commit of the branches, tags, remote-tracking branches and ``HEAD``
        (never ``refs/hydrate/``): ``%H NUL %at NUL %an <%ae> NUL %s`` then, for each
        of ``keys``, NUL and its trailer values (comma separated), one record per RS."""
        fields = ["%H", "%at", "%an <%ae>", "%s"] + [
            f"%(trailers:key={key},valueonly,separator=%x2C)" for key in keys
        ]
        proc = self.git(
            [
                *("-c", "log.showSignature=false", "log", "--no-color"),
                "--format=" + "%x00".join(fields) + "%x1e",
                "HEAD",
                *("--branches", "--tags", "--remotes"),
            ],
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else b""

    # -- trees, the index, the work tree ---------------------------------------------

    def ls_tree(self, tree: str, *, sizes: bool = True) -> bytes:
        """``git ls-tree -r -z -l --full-tree`` of ``tree`` (without ``-l`` when not
        ``sizes``: no blob is looked up, none fetched in a partial clone)."""
        return self.git(
            ["ls-tree", "-r", "-z", *(["-l"] if sizes else []), "--full-tree", tree]
        ).stdout

    def partial_clone(self) -> bool:
        """Whether objects may be missing here for a promisor remote to serve (``git
        clone --filter``): git then fetches each one it is asked about."""
        settings = self.settings
        if settings.has("extensions.partialClone"):
            return True
        return any(
            key.endswith(".promisor") and parse_bool(settings.raw(key)) is True
            for key in settings.keys("remote.")
        )

    def promisor_remote(self) -> str | None:
        """The remote a partial clone fetches the objects it lacks from (``None``:
        not a partial clone)."""
        remote = self.settings.raw("extensions.partialClone")
        if remote:
            return remote
        promisors = [
            key[len("remote.") : -len(".promisor")]
            for key in self.settings.keys("remote.")
            if key.endswith(".promisor") and parse_bool(self.settings.raw(key)) is True
        ]
        return promisors[0] if promisors else None

    def fetch_promised(self, oids: Sequence[str]) -> None:
        """Fetch the objects ``oids`` from the promisor remote in one ``git fetch``,
        the one git's own lazy fetch runs for a single object each time it meets one
        missing (3,000 files' blobs: 3,000 fetches). A failure is left to that lazy
        fetch, which then reports it object by object."""
        remote = self.promisor_remote() if oids else None
        if not remote:
            return
        self.git(
            [
                *("-c", "fetch.negotiationAlgorithm=noop", "fetch", remote, "--no-tags"),
                *("--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none"),
                *("--quiet", "--stdin"),
            ],
            input="".join(f"{oid}\n" for oid in oids).encode("ascii"),
            check=False,
        )

    def shallow_commits(self) -> frozenset[str]:
        """The commits at this clone's shallow cut (its ``shallow`` file, in the common
        directory: linked worktrees share it), whose parents are not here; none in a
        clone with its whole history."""
        try:
            with open(os.path.join(self.common_dir, "shallow"), "rb") as fh:
                return frozenset(fh.read().decode("ascii", "replace").split())
        except OSError:
            return frozenset()

    def ls_files(self) -> tuple[bytes, bytes]:
        """The work tree's files, paths from the top: the index's entries as ``git
        ls-files -z -s -v`` lists them (each with its tag: ``S`` skip-worktree), and
        the untracked files not ignored (``-z --others --exclude-standard``: paths
        alone). Two listings, not one: in one, an untracked path holding a tab
        would read as an index entry."""
        where = ("--full-name", "--", ":/")
        tracked = self.git(["ls-files", "-z", "-s", "-v", *where]).stdout
        untracked = self.git(["ls-files", "-z", "--others", "--exclude-standard", *where]).stdout
        return tracked, untracked

    def tracked(self, paths: Sequence[str]) -> set[str]:
        """Which of ``paths`` (relative to the top of the work tree) are in the index."""
        if not paths:
            return set()
        specs = [f":(top,literal){path}" for path in paths]
        proc = self.git(["ls-files", "-z", "--full-name", "--", *specs])
        found = {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}
        return {path for path in paths if path in found}

    def modified_files(self) -> list[bytes]:
        """Tracked paths whose work-tree content differs from the index."""
        proc = self.git(["diff-files", "-z", "--name-only"], check=False)
        return [path for path in proc.stdout.split(b"\0") if path]

    def unmerged_paths(self) -> list[str]:
        """The paths the index holds unmerged (a merge or rebase stopped on them)."""
        proc = self.git(["ls-files", "-z", "--unmerged"], check=False)
        found = (entry.partition(b"\t")[2] for entry in proc.stdout.split(b"\0") if entry)
        return list(dict.fromkeys(path.decode("utf-8", "replace") for path in found))

    def check_attr(self, names: Sequence[str], paths: bytes, tree: str | None) -> bytes | None:
        """``git check-attr -z --stdin`` of NUL-separated ``paths`` (as of ``tree`` when
        given and git can, else from the index; from the work tree without ``tree``)."""
        base = ["check-attr", "-z", "--stdin"]
        if tree is None:
            proc = self.git([*base, *names], input=paths, check=False)
            return proc.stdout if proc.returncode == 0 else None
        if self.lacks("check-attr --source"):
            proc = self.git([*base, "--cached", *names], input=paths, check=False)
            return proc.stdout if proc.returncode == 0 else None
        proc = self.git([*base, f"--source={tree}", *names], input=paths, check=False)
        if proc.returncode != 0:  # git < 2.40 has no --source
            if proc.returncode == _USAGE_ERROR:
                self._remember_lacking("check-attr --source")
            proc = self.git([*base, "--cached", *names], input=paths, check=False)
        return proc.stdout if proc.returncode == 0 else None

    def diff(self, args: Sequence[str], leaving_out: Sequence[str] = ()) -> bytes:
        """``git diff`` with stable output options, and its paths as they are
        (``core.quotePath`` off: a worker reads ``ü``, not ``\\303\\274``, and the
        prompt spends no bytes on escapes; a path with a tab, a newline or a quote is
        still quoted). ``leaving_out``: paths (from the top, as written) it does not
        diff."""
        quoting = ["-c", "core.quotePath=false"]
        spec = (
            [":/", *(f":(top,exclude,literal){path}" for path in leaving_out)]
            if leaving_out
            else []
        )
        return self.git([*quoting, "diff", *DIFF_OPTIONS, *args, "--", *spec]).stdout

    def diff_raw(self, args: Sequence[str]) -> bytes:
        """:meth:`diff`'s files as ``git diff --raw -z`` lists them: modes, full blob
        ids (zeros: the file in the work tree), status and path(s); no content is
        read for it, nor the work tree's files hashed."""
        quoting = ["-c", "core.quotePath=false"]
        listing = ["--raw", "-z", "--no-abbrev"]
        return self.git([*quoting, "diff", *DIFF_OPTIONS, *listing, *args, "--"]).stdout

    # -- remotes ---------------------------------------------------------------------

    def config_add(self, key: str, value: str) -> None:
        """Add one value to a multi-valued config key (``git config --add``)."""
        self.git(["config", "--add", key, value])
        self._settings = None  # read again when next asked


def _changed_paths_args(rev: str, limit: int) -> list[str]:
    """The arguments of :meth:`Commands.changed_paths`."""
    return [
        *("-c", "core.quotePath=false", "log", "--no-merges", "--no-renames"),
        *("--name-only", "--format=%x00%H %s%x00%b%x00", f"--max-count={limit}", rev, "--"),
    ]
