"""add-tree: attach a commit's files, the work tree or a directory as context."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import click

from ..settings import default_help
from ..validate import printable
from ._common import (
    ByteSize,
    Count,
    budget_options,
    echo_json,
    few_collections,
    format_option,
    json_option,
    no_empty_path,
    open_ledger,
    quiet_option,
    quiet_or_verbose,
    shown,
    summarise,
    task_id_argument,
    working_directory,
)
from .progress import Progress, human_bytes

if TYPE_CHECKING:
    from ..ledger import Ledger
    from ..pack.budget import Budget
    from ..pack.memo import BodyMemo
    from ..results import HydrateResult

__all__ = [
    "add_diff",
    "add_tree",
    "budget_warning",
    "hydration_options",
]

F = TypeVar("F", bound=Callable[..., Any])


def _skipped_lines(
    skipped: Sequence[Mapping[str, Any]], named: Mapping[str, str] | None = None
) -> list[str]:
    """One line per skipped file; files under a skipped directory are summed per
    directory; a file the task names (``named``: its path to how) says so."""
    from ..hydrate.rules import SKIPPED_DIRS

    lines: list[str] = []
    dirs: dict[str, list[int]] = {}
    # (the reasons' column as wide as the longest one listed, 13 at least)
    width = max([13, *(len(item["reason"]) for item in skipped)])
    for item in skipped:
        path, reason, size = item["path"], item["reason"], item["bytes"]
        if reason == "skipped_dir" and not path.endswith("/"):
            parts = path.split("/")
            cut = next(i for i, part in enumerate(parts[:-1]) if part in SKIPPED_DIRS)
            key = "/".join(parts[: cut + 1]) + "/"
            tally = dirs.setdefault(key, [0, 0])
            tally[0] += 1
            tally[1] += size
            continue
        if reason == "duplicate":
            detail = f"same as {item.get('same_as', '?')}"
        elif path.endswith("/"):
            detail = "not entered"
        elif reason == "sparse":
            detail = "size unknown: its blob is not here"
        else:
            detail = f"{size} bytes"
        if named and path in named:
            detail += f"; {named[path]}, not attached"
        if not printable(path):
            path = path.encode("unicode_escape").decode("ascii")
        lines.append(f"  {reason:<{width}} {path} ({detail})")
    for key, (count, size) in dirs.items():
        noun = "file" if count == 1 else "files"
        lines.append(f"  {'skipped_dir':<{width}} {key} ({count} {noun}, {size} bytes)")
    return lines


#: Up to this many files left out are listed; past it, a summary by reason (-v lists all).
LIST_SKIPPED: Final = 10
#: The most bytes of bodies ``add-tree --prompt`` keeps in memory for its prompt.
MAX_KEPT_BODIES: Final = 256 << 20


def _kept_for(limits: Budget) -> int:
    """How many bytes of the bodies it reads ``add-tree --prompt`` keeps for the
    prompt that follows: about what the budget can hold (the rest would be
    read for nothing), between 8 MiB and :data:`MAX_KEPT_BODIES`."""
    room = limits.max_bytes if limits.max_bytes is not None else 8 * (limits.max_tokens or 0)
    return min(MAX_KEPT_BODIES, max(8 << 20, room))


def budget_warning(ledger: Ledger, result: HydrateResult) -> str | None:
    """A warning when the run (``result``) changed the task and its attachments now
    exceed its default byte budget, else ``None`` (a run that changed nothing: the
    one that did said it).

    The figure is the bodies' bytes; a prompt holding them all needs a little more.
    """
    if not result["changed"]:
        return None
    task_id = result["task_id"]
    attached = sum(entry["size"] for entry in ledger.context_entries(task_id))
    budget = ledger.settings.size("hydrate.maxBytes")
    if attached <= budget:
        return None
    return (
        f"warning: {task_id} has {attached:,} bytes attached, {attached / budget:.1f} times "
        f"its default budget ({budget:,} bytes, hydrate.maxBytes); prompt will omit what "
        f"does not fit: see git hydrate prompt {task_id} -v, --max-bytes, --outline"
    )


def _untracked_note(paths: list[str]) -> None:
    """add-diff --worktree: the new files it has no diff of, on stderr."""
    if paths:
        noun = "file has" if len(paths) == 1 else "files have"
        named = ", ".join(map(shown, paths[:LIST_SKIPPED]))
        more = f" and {len(paths) - LIST_SKIPPED} more" if len(paths) > LIST_SKIPPED else ""
        click.echo(
            f"note: {len(paths)} untracked {noun} no diff, not attached: {named}{more}"
            " (git add -N PATH makes a new file part of --worktree)",
            err=True,
        )


def _report(
    ctx: click.Context,
    task_id: str,
    result: HydrateResult,
    as_json: bool,
    origin: str,
    verbose: bool = False,
    warning: str | None = None,
    err: bool = False,
    quiet: bool = False,
) -> None:
    """Print what add-tree or add-diff did: JSON, or counts and the files left out
    (``quiet``: only the files the task names left out); then the budget warning,
    if any, on stderr."""
    if warning is not None:
        click.echo(warning, err=True)
    if as_json:
        echo_json(ctx, result)
        return
    named = {item["path"]: item["named"] for item in result.get("unattached") or ()}
    if quiet:
        _untracked_note(result.get("untracked") or [])
        for file in result.get("unattached") or ():
            click.echo(_skipped_lines([file], named)[0], err=err)
        return
    reranked = f"reranked {result['reranked']}, " if result.get("reranked") else ""
    counts = (
        f"added {result['added']}, updated {result['updated']}, {reranked}"
        f"unchanged {result['unchanged']}, removed {result['removed']}"
    )
    state = "" if result["changed"] else " (nothing changed)"
    size = result["total_bytes"]
    amount = f"{size:,} byte{'' if size == 1 else 's'}"
    click.echo(f"{shown(task_id)}: {counts}; {amount} {origin}{state}", err=err)
    _untracked_note(result.get("untracked") or [])
    skipped = result["skipped"]
    if not skipped:
        return
    noun = "file" if len(skipped) == 1 else "files"
    if verbose or len(skipped) <= LIST_SKIPPED:
        click.echo(f"skipped {len(skipped)} {noun}:", err=err)
        for line in _skipped_lines(skipped, named):
            click.echo(line, err=err)
        return
    for file in result.get("unattached") or ():
        # (the task names it: its prompt will lack it, so it is said without -v)
        click.echo(_skipped_lines([file], named)[0], err=err)
    tally: dict[str, list[int]] = {}
    for item in skipped:
        counts_bytes = tally.setdefault(item["reason"], [0, 0])
        counts_bytes[0] += 1
        counts_bytes[1] += item["bytes"]
    by_reason = ", ".join(
        f"{n} {reason}" + ("" if reason == "sparse" else f" ({human_bytes(size)})")
        for reason, (n, size) in sorted(tally.items(), key=lambda kv: (-kv[1][0], kv[0]))
    )
    click.echo(f"skipped {len(skipped)} {noun}: {by_reason} (-v lists them)", err=err)


def hydration_options(what: str) -> Callable[[F], F]:
    """``--priority``, ``--no-rank``, ``--max-file-bytes``, ``--max-total-bytes``,
    ``-v``, ``--allow-secrets`` and ``-q`` (refused with ``-v``), shared by add-tree
    and add-diff (``what`` each attaches)."""

    def decorate(func: F) -> F:
        options = [
            click.option(
                "--priority",
                type=Count(-(2**31), 2**31 - 1),
                default=None,
                help=f"Give every attached {what} this priority (higher packs first) "
                "instead of ranking them for the task.",
            ),
            click.option(
                "--no-rank",
                "no_rank",
                is_flag=True,
                help=f"Do not rank: every {what} at priority 0, packed in hash order.",
            ),
            click.option(
                "--max-file-bytes",
                type=ByteSize(),
                default=None,
                help=f"Skip larger {what}s (default: {default_help('hydrate.maxFileBytes')}).",
            ),
            click.option(
                "--max-total-bytes",
                type=ByteSize(),
                default=None,
                help="Attach at most this much "
                f"(default: {default_help('hydrate.maxTotalBytes')}).",
            ),
            click.option(
                "-v",
                "--verbose",
                is_flag=True,
                help=f"List every {what} left out, not only a summary by reason.",
            ),
            click.option(
                "--allow-secrets",
                is_flag=True,
                default=None,
                help=f"Attach {what}s that look like they contain credentials instead of "
                "skipping them.",
            ),
            quiet_option,
        ]

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            quiet_or_verbose(kwargs["quiet"], kwargs["verbose"])
            return func(*args, **kwargs)

        command = cast(F, checked)
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


@click.command("add-tree")
@task_id_argument
@click.argument("pathspecs", nargs=-1, metavar="[PATHSPEC]...")
@click.option("--rev", metavar="REV", help="Take the files of this commit (default: HEAD).")
@click.option(
    "--worktree",
    is_flag=True,
    help="Take the work tree: tracked plus untracked files that are not ignored (a file "
    "git reports unmodified as its index blob, a sparse checkout's skip-worktree files "
    "included; a modified or untracked one as on disk).",
)
@click.option(
    "--dir",
    "directory",
    metavar="PATH",
    type=click.Path(file_okay=False),
    callback=no_empty_path,
    help="Take the files of a directory (git's file set if it is a checkout, else a walk).",
)
@click.option(
    "--prefix",
    default="",
    metavar="P",
    help="Put P/ before each path in the source label (to hydrate several resources).",
)
@hydration_options("file")
@click.option(
    "--prompt",
    "then_prompt",
    is_flag=True,
    help="Then print the task's prompt on standard output, in the same process, within "
    "the budget options (a budget the task's head alone overflows is refused before "
    "anything is attached); each body is read once; the report goes to standard error.",
)
@format_option
@budget_options
@json_option
@click.pass_context
def add_tree(
    ctx: click.Context,
    /,
    task_id: str,
    pathspecs: tuple[str, ...],
    rev: str | None,
    worktree: bool,
    directory: str | None,
    verbose: bool,
    then_prompt: bool,
    budget: dict[str, Any],
    now: datetime | None,
    as_json: bool,
    **hydration: Any,
) -> None:
    """Attach the repository's files to the task ID as context.

    By default the files of the commit HEAD, linked by the blobs git already has
    (nothing is copied). PATHSPECs (paths, directories, globs such as '*.py',
    exclusions such as ':!tests') narrow the set; in a subdirectory they are
    relative to it, and an absolute path inside the work tree is the path it
    names, like git's. Running it again follows the files: changed files replace
    their old body, links of deleted files are removed (within the PATHSPECs),
    and an unchanged set writes nothing. One commit per run. In a partial clone,
    only the blobs of the files the PATHSPECs take are fetched, in one fetch.

    Left out, with their reasons: directories such as node_modules, .venv, dist and build
    (skipped_dir); binary extensions (skipped_ext); lockfiles, minified files, a tool's output
    by name (*.pb.go) or first lines ("Code generated ... DO NOT EDIT.", @generated), what
    .gitattributes marks linguist-generated (generated), binary, -diff or linguist-vendored
    (vendored) (a file the task names is taken from these but binary); symlinks, submodules;
    paths through a linked folder (beyond_symlink: never read through it); FIFOs, sockets and
    devices (special); with --worktree in a partial clone, files outside the sparse checkout no
    PATHSPEC takes (sparse); files over --max-file-bytes (too_large); empty files; content with
    a NUL byte in the first 8 KiB (binary) or not UTF-8 (not_utf8); Git LFS pointers; files
    beyond --max-total-bytes, the lowest ranked (total_budget); text that looks like it holds a
    credential (secret, unless --allow-secrets); and content already attached under another
    path (duplicate). A file in play or a named test left out is said on a line of its own even
    without -v, and the task records why (the prompt names it under Not included).

    \b
    Examples:
      git hydrate add-tree M-1002                      # every file of HEAD
      git hydrate add-tree M-1002 src '*.md' ':!src/vendor'
      git hydrate add-tree M-1002 --worktree --priority 5
      git hydrate add-tree M-1002 --rev v1.2.0 --prefix old --json
      git hydrate add-tree M-1002 --dir ../other-service --prefix svc
      git hydrate add-tree M-1002 src --prompt > M-1002.prompt.md
    """
    _refuse_conflicts(rev, worktree, directory, then_prompt, as_json, now, budget)
    with open_ledger(ctx) as ledger, few_collections():
        specs = _from_top(ctx, ledger, pathspecs, directory)
        limits, memo = _prompt_budget(ledger, task_id, budget) if then_prompt else (None, None)
        result = _attach(ledger, task_id, specs, memo, rev, worktree, directory, **hydration)
        warning = budget_warning(ledger, result) if not then_prompt else None
        origin = f"from {shown(result['from'])}"
        quiet = hydration["quiet"]
        _report(ctx, task_id, result, as_json, origin, verbose, warning, then_prompt, quiet)
        if then_prompt:
            _print_prompt(ledger, task_id, now=now, memo=memo, limits=limits, quiet=quiet)


def _refuse_conflicts(
    rev: str | None,
    worktree: bool,
    directory: str | None,
    then_prompt: bool,
    as_json: bool,
    now: datetime | None,
    budget: dict[str, Any],
) -> None:
    """Refuse the add-tree options that do not go together, as a usage error."""
    if sum((rev is not None, worktree, directory is not None)) > 1:
        raise click.UsageError("give at most one of --rev, --worktree and --dir")
    if then_prompt and as_json:
        raise click.UsageError("--prompt prints the prompt: it does not combine with --json")
    if not then_prompt and (now is not None or any(v is not None for v in budget.values())):
        raise click.UsageError("the budget options size the prompt: give them with --prompt")


def _from_top(
    ctx: click.Context, ledger: Ledger, pathspecs: tuple[str, ...], directory: str | None
) -> list[str]:
    """The PATHSPECs relative to the top of the work tree, as git reads them from
    the current directory; with --dir, as given (relative to that directory)."""
    from ..hydrate.pathspec import relative_to_top

    if directory is not None:
        return list(pathspecs)
    _not_inside_the_git_dir(ledger, pathspecs)
    return relative_to_top(pathspecs, ledger.repo.work_tree, working_directory(ctx))


def _not_inside_the_git_dir(ledger: Ledger, pathspecs: Sequence[str]) -> None:
    """Refuse PATHSPECs typed inside the git directory of a repository that has a
    work tree (git sees none there, so ``.`` would be read as the whole tree)."""
    from ..errors import ValidationError

    repo = ledger.repo
    if repo.work_tree is not None or repo.is_bare:
        return
    typed = [spec for spec in pathspecs if not spec.startswith((":/", ":(top)"))]
    if typed:
        raise ValidationError(
            f"pathspec {typed[0][:80]!r} is read from the work tree: "
            "run it from the work tree, not inside the git directory"
        )


def _prompt_budget(
    ledger: Ledger, task_id: str, budget: dict[str, Any]
) -> tuple[Budget, BodyMemo]:
    """``add-tree --prompt``'s budget, checked against the task's head before
    anything is attached, and the memo that keeps the bodies read for the prompt."""
    from ..pack.memo import BodyMemo

    limits = ledger.budget(**budget)
    # a budget the head alone overflows is refused before anything is attached
    ledger.check_prompt_budget(task_id, budget=limits)
    return limits, BodyMemo.for_prompt(_kept_for(limits), limits)


def _attach(
    ledger: Ledger,
    task_id: str,
    specs: list[str],
    memo: BodyMemo | None,
    rev: str | None,
    worktree: bool,
    directory: str | None,
    *,
    quiet: bool,
    prefix: str,
    priority: int | None,
    no_rank: bool,
    max_file_bytes: int | None,
    max_total_bytes: int | None,
    allow_secrets: bool | None,
) -> HydrateResult:
    """Attach the files the options select, with a progress bar on a terminal
    (unless ``quiet``)."""
    progress = Progress(enabled=not quiet)
    try:
        return ledger.add_tree(
            task_id,
            specs,
            rev=rev,
            worktree=worktree,
            directory=directory,
            prefix=prefix,
            priority=priority,
            ranked=not no_rank,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
            progress=progress,
            allow_secrets=allow_secrets or None,
            memo=memo,
        )
    finally:
        progress.close()


def _print_prompt(
    ledger: Ledger,
    task_id: str,
    *,
    now: datetime | None,
    memo: BodyMemo | None,
    limits: Budget | None,
    quiet: bool,
) -> None:
    """Print the task's prompt on standard output (``add-tree --prompt``), its
    summary line on standard error (``quiet``: only a warning, as ``prompt -q``)."""
    from ..console import Deferred, summary_line

    with Deferred(None) as out:
        made = ledger.write_prompt(task_id, out, now=now, memo=memo, budget=limits)
    summarise(summary_line(task_id, made), quiet)


def _rev_range(
    ctx: click.Context, task_id: str, before: list[str], *, staged: bool, worktree: bool
) -> tuple[str | None, str]:
    """The REV-RANGE of what came before ``--``, and what to say if it is a path of
    the work tree (``git diff FILE`` reads one so; here paths go after ``--``)."""
    import os
    import shlex

    if len(before) > 1:
        raise click.UsageError("give at most one REV-RANGE; put paths after --")
    rev_range = before[0] if before else None
    hint = ""
    typed = os.path.join(working_directory(ctx), rev_range or "")
    if rev_range and ".." not in rev_range and os.path.lexists(typed):
        flags = " --staged" * staged + " --worktree" * worktree
        quoted = f"{shlex.quote(task_id)}{flags} -- {shlex.quote(rev_range)}"
        hint = f"paths go after --: git hydrate add-diff {quoted}"
    if rev_range is not None and (staged or worktree):
        said = f"{rev_range!r} is a path; {hint}" if hint else ""
        raise click.UsageError(said or "give a REV-RANGE or --staged/--worktree, not both")
    return rev_range, hint


@contextlib.contextmanager
def _path_typed_as_range(rev_range: str | None, hint: str) -> Iterator[None]:
    """Add ``hint`` to the error that the REV-RANGE typed names no commit."""
    from ..errors import ValidationError

    try:
        yield
    except ValidationError as exc:
        if hint and str(exc).startswith(f"{rev_range!r} does not name a commit"):
            raise ValidationError(f"{exc}; it is a path, and {hint}") from None
        raise


class _DashDashCommand(click.Command):
    """Remembers how many arguments followed ``--`` (click drops the marker)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            ctx.meta["after_dashdash"] = len(args) - args.index("--") - 1
        return super().parse_args(ctx, args)


@click.command("add-diff", cls=_DashDashCommand)
@task_id_argument
@click.argument("args", nargs=-1, metavar="[REV-RANGE] [-- PATHSPEC...]")
@click.option("--staged", is_flag=True, help="Diff the index against HEAD.")
@click.option("--worktree", is_flag=True, help="Diff the work tree against the index.")
@click.option("--log", is_flag=True, help="Also attach the range's commit messages.")
@hydration_options("file diff")
@json_option
@click.pass_context
def add_diff(
    ctx: click.Context,
    task_id: str,
    args: tuple[str, ...],
    staged: bool,
    worktree: bool,
    log: bool,
    priority: int | None,
    no_rank: bool,
    max_file_bytes: int | None,
    max_total_bytes: int | None,
    allow_secrets: bool | None,
    verbose: bool,
    quiet: bool,
    as_json: bool,
) -> None:
    """Attach what changed to the task ID: one body per file's diff.

    REV-RANGE is A..B (git diff A B), A...B (since their merge base) or REV
    (REV...HEAD); by default the current branch against its upstream, else
    against the default branch. --staged diffs the index against HEAD,
    --worktree the work tree against the index, both together every
    uncommitted change (an untracked file has none: --worktree names it).
    Each file's diff is its own body, labelled diff:<range>:<path>, so the
    budget can keep some files' changes when not all fit; binary diffs, new work-tree files over
    --max-file-bytes (unread), and what add-tree leaves out as generated (by name or by the
    file's first lines), vendored or skipped_dir (unless the task names the file), are
    skipped and reported (a submodule's diff is
    its two commit ids, whatever diff.submodule says). --log adds the
    commit messages of the range (log:<range>). PATHSPECs go after -- and are
    read as add-tree's; one that names no file at all is refused. Running it again
    for the same range replaces its diffs, in one commit.

    \b
    Examples:
      git hydrate add-diff M-1002                       # this branch vs upstream
      git hydrate add-diff M-1002 main...HEAD --log -- src
      git hydrate add-diff M-1002 --staged --worktree --priority 20
    """
    after = ctx.meta.get("after_dashdash", 0)
    before, pathspecs = list(args[: len(args) - after]), list(args[len(args) - after :])
    rev_range, hint = _rev_range(ctx, task_id, before, staged=staged, worktree=worktree)
    with open_ledger(ctx) as ledger, _path_typed_as_range(rev_range, hint):
        result = ledger.add_diff(
            task_id,
            rev_range,
            _from_top(ctx, ledger, tuple(pathspecs), None),
            staged=staged,
            worktree=worktree,
            log=log,
            priority=priority,
            ranked=not no_rank,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
            allow_secrets=allow_secrets or None,
        )
        warning = budget_warning(ledger, result)
    origin = f"of diff:{result['range']}"
    _report(ctx, task_id, result, as_json, origin, verbose, warning, quiet=quiet)
