"""add-diff: attach what changed — one body per file's diff, plus the commit log.

Each file's part of ``git diff`` becomes its own body (source
``diff:<range>:<path>``), so the packer's budget can keep some files' changes
when not all fit; binary diffs are skipped and reported. With ``log``, the
commit messages of the range become one more body (source ``log:<range>``).
Re-running for the same range replaces those links and removes the diffs of
files that no longer change (within the pathspecs), in one commit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from . import validate
from .errors import CorruptData, ValidationError
from .files import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TOTAL_BYTES, Pathspec, Skipped
from .hydrate_tree import Pick, _limit, commit_links
from .model import Link

if TYPE_CHECKING:
    from .ledger import Ledger
    from .store import Repository

__all__ = ["ORIGIN", "add_diff", "default_base"]

ORIGIN: Final = "diff"
#: Options that make ``git diff`` output independent of the user's diff config.
_STABLE: Final = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "-M",
)


def _check_rev(rev: str) -> str:
    if not rev or rev.startswith("-") or not rev.isprintable() or " " in rev:
        raise ValidationError(f"invalid revision {rev!r}")
    return rev


def default_base(repo: Repository) -> str:
    """What the current branch is compared with: its upstream, else the default branch.

    Raises:
        ValidationError: neither exists, or the current branch is the default branch.
    """
    upstream = repo.git(
        ["rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}"], check=False
    )
    if upstream.returncode == 0 and upstream.stdout.strip():
        return upstream.stdout.strip().decode("utf-8", "replace")

    def short(args: list[str]) -> str:
        out = repo.git(["symbolic-ref", "-q", "--short", *args], check=False).stdout
        return out.strip().decode("utf-8", "replace")

    current = short(["HEAD"])
    origin_head = short(["refs/remotes/origin/HEAD"])
    candidates = [origin_head] if origin_head else []
    candidates += ["main", "master"]
    for name in candidates:
        if name == current:
            continue
        found = repo.git(["rev-parse", "--verify", "--quiet", name + "^{commit}"], check=False)
        if found.returncode == 0:
            return name
    if current in candidates:
        raise ValidationError(
            f"{current} has no upstream, and it is itself the default branch; give a range "
            "such as HEAD~3..HEAD, or use --staged / --worktree"
        )
    raise ValidationError(
        "no upstream or default branch to compare with; give a range such as main...HEAD, "
        "or use --staged / --worktree"
    )


def _split_numstat(data: bytes) -> list[tuple[bool, str]]:
    """``(binary, path)`` per file from ``git diff --numstat -z`` (renames: the new path)."""
    result: list[tuple[bool, str]] = []
    tokens = data.split(b"\0")
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token:
            continue
        added, _, rest = token.partition(b"\t")
        _deleted, _, path = rest.partition(b"\t")
        if not path:  # a rename or copy: the two paths follow
            path = tokens[i + 1] if i + 1 < len(tokens) else b""
            i += 2
        result.append((added == b"-", path.decode("utf-8", "surrogateescape")))
    return result


def _split_patch(data: bytes) -> list[bytes]:
    """The per-file parts of a patch (a line starting ``diff --git`` is always a header)."""
    if not data:
        return []
    parts = data.split(b"\ndiff --git ")
    return [parts[0]] + [b"diff --git " + part for part in parts[1:]]


def add_diff(
    ledger: Ledger,
    task_id: str,
    rev_range: str | None = None,
    pathspecs: Iterable[str] = (),
    *,
    staged: bool = False,
    worktree: bool = False,
    log: bool = False,
    priority: int = 0,
    max_file_bytes: int | None = None,
    max_total_bytes: int | None = None,
    allow_secrets: bool | None = None,
) -> dict[str, Any]:
    """Attach the diff of a range (or of staged / work-tree changes), one body per file.

    See :meth:`git_hydrate.Ledger.add_diff`.
    """
    validate.task_id(task_id)
    priority = validate.context_priority(priority)
    spec = Pathspec(pathspecs)
    if rev_range is not None and (staged or worktree):
        raise ValidationError("give a revision range or --staged/--worktree, not both")
    if log and (staged or worktree):
        raise ValidationError("--log needs a revision range (uncommitted changes have no log)")
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
    ledger._load(task_id)
    repo = ledger.repo
    if staged or worktree:
        if repo.work_tree is None:
            raise ValidationError("--staged and --worktree need a work tree")
        if staged and worktree:
            args, label = ["HEAD"], "uncommitted"
        elif staged:
            args, label = ["--cached"], "staged"
        else:
            args, label = [], "worktree"
    else:
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
            found = repo.git(["rev-parse", "--verify", "--quiet", side + "^{commit}"], check=False)
            if found.returncode != 0:
                raise ValidationError(f"{side!r} does not name a commit in this repository")
        label = sep.join(sides)
        args = [label] if sep == "..." else sides
    numstat = repo.git(["diff", "-z", "--numstat", *_STABLE, *args, "--"]).stdout
    patch = repo.git(["diff", *_STABLE, *args, "--"]).stdout
    files = _split_numstat(numstat)
    parts = _split_patch(patch)
    if len(parts) != len(files):
        raise CorruptData(
            f"git diff gave {len(parts)} file diffs for {len(files)} files; cannot split it"
        )
    skipped: list[Skipped] = []
    picks: list[Pick] = []
    seen: dict[str, str] = {}
    remaining = max_total
    prefix = f"diff:{label}:"
    if allow_secrets is None:
        allow_secrets = ledger.config_bool("hydrate.allowSecrets", False)
    from .secrets import scan

    bodies: list[tuple[str, str, bytes]] = []
    for (binary, path), part in zip(files, parts, strict=True):
        if not spec.matches(path):
            continue
        if binary:
            skipped.append(Skipped(path, "binary", len(part)))
        else:
            bodies.append((path, prefix + path, part))
    if log:
        text = repo.git(
            ["log", "--no-color", "--format=commit %H%nAuthor: %an <%ae>%nDate: %aI%n%n%B", label]
        ).stdout
        if text.strip():
            bodies.insert(0, ("", f"log:{label}", text))
    for path, source, data in bodies:
        shown = path or source
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(Skipped(shown, "not_utf8", len(data)))
            continue
        digest = hashlib.sha256(data).hexdigest()
        if b"\0" in data:
            skipped.append(Skipped(shown, "binary", len(data)))
        elif not path.isprintable() or len(source) > validate.MAX_LABEL_CHARS:
            skipped.append(Skipped(shown, "bad_path", len(data)))
        elif len(data) > max_file:
            skipped.append(Skipped(shown, "too_large", len(data)))
        elif not allow_secrets and scan(data.decode("utf-8"), limit=1):
            skipped.append(Skipped(shown, "secret", len(data)))
        elif digest in seen:
            skipped.append(Skipped(shown, "duplicate", len(data), same_as=seen[digest]))
        elif len(data) > remaining:
            skipped.append(Skipped(shown, "total_budget", len(data)))
        else:
            oid = repo.write_blob(data).decode("ascii")
            picks.append(Pick(path, source, oid, digest, len(data)))
            seen[digest] = source
            remaining -= len(data)

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
        ledger,
        task_id,
        picks,
        skipped,
        origin=ORIGIN,
        in_scope=mine,
        priority=priority,
        action="add-diff",
        summary=f"of {label}",
        trailers=trailers,
        result={"range": label, "files": len(files)},
    )
