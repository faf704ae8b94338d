"""rank: rank a task's attached files again, or suggest the files in play its text describes."""

from __future__ import annotations

import shlex

import click

from ._common import echo_json, json_option, open_ledger, shown, task_id_argument

__all__ = ["rank"]


@click.command("rank", short_help="Rank the files attached to the task ID again.")
@task_id_argument
@click.option(
    "--rev",
    metavar="REV",
    help="Rank by the history of this commit (default: each add-tree run's own, else HEAD).",
)
@click.option(
    "--suggest",
    is_flag=True,
    help="Change nothing: list the files the task's text describes (paths it names, "
    "best content matches in REV's files), with reasons, to accept into --file-in-play.",
)
@json_option
@click.pass_context
def rank(ctx: click.Context, task_id: str, rev: str | None, suggest: bool, as_json: bool) -> None:
    """Rank the files add-tree and add-diff attached to the task ID again.

    Recomputes their priorities for the task as it is now (its files in play,
    tests and text) and the history of REV, in one commit: run it after
    task-edit --file-in-play. A file an add-tree run of a revision or of the
    work tree attached ranks among every file that run would rank now
    (listed again, no body read; a changed or new file of the work tree that
    is not attached, by its path alone), by the history of that run's commit
    (HEAD for the work tree) unless REV is given, so it gets the place
    add-tree would give it, and rank right after add-tree moves nothing;
    other files (a --dir run, add-diff, a run recorded in another clone, one
    whose blobs a partial clone lacks) rank among themselves, by REV's
    history, else HEAD's. Contents are read from the per-blob facts cache
    (a blob not seen before is read once). Files given an explicit --priority
    or --no-rank are left alone. Files in play and tests that are not attached
    are named: add-tree attaches them. --json answers {task_id, reranked,
    unchanged, missing, changed, commit, runs}: runs lists each add-tree run
    that placed its links ({run: its add-tree options, commit: whose history
    ranked them, null for a tree, links}); commit is the one that ranked the
    other links (REV's: all of them), null when there were none.

    With --suggest, nothing is written: it prints the files ranking treats as
    in play when the task names none (the paths its text names, then its best
    content matches among REV's files, which seed co-change and test pairing),
    one per line as PATH, score and reason (a file already in play or named as
    a test is not suggested), then on stderr an accept: line that runs as
    printed: task-edit with the files in play it has (their notes kept:
    --file-in-play replaces the list) and the suggested ones, each quoted for
    the shell; --json answers {task_id, commit, in_play, suggestions: [{path,
    score, reason}], unread}. In a partial clone no blob is fetched: a file
    whose blob is not here is matched by its path alone, and a note: line on
    stderr (and unread) says how many were.

    \b
    Examples:
      git hydrate rank M-1002 --suggest
      git hydrate task-edit M-1002 --file-in-play src/app/health.py
      git hydrate rank M-1002
    """
    if suggest:
        _suggest(ctx, task_id, rev, as_json)
        return
    with open_ledger(ctx) as ledger:
        result = ledger.rank(task_id, rev=rev)
    if as_json:
        echo_json(ctx, result)
        return
    state = "" if result["changed"] else " (nothing changed)"
    click.echo(
        f"{shown(task_id)}: reranked {result['reranked']}, unchanged {result['unchanged']}{state}"
    )
    for path in result["missing"]:
        click.echo(f"not attached: {path} (run: git hydrate add-tree {shown(task_id)})")


def _suggest(ctx: click.Context, task_id: str, rev: str | None, as_json: bool) -> None:
    """``rank --suggest``: the files to accept into --file-in-play, with reasons."""
    import msgspec

    with open_ledger(ctx) as ledger:
        found = ledger.suggest(task_id, rev=rev)
        files = ledger.refs.load(task_id).task.files
    if as_json:
        echo_json(ctx, msgspec.to_builtins(found))
        return
    if not found.suggestions:
        why = (
            "the task's text matches no file's path, nor the contents of those here"
            if found.unread
            else "the task's text matches no file"
        )
        click.echo(f"{shown(task_id)}: no file suggested ({why})")
        _unread(task_id, found.unread)
        return
    width = max(len(s.path) for s in found.suggestions)
    for item in found.suggestions:
        click.echo(f"{item.path:<{width}}  {item.score:.2f}  {item.reason}")
    # (--file-in-play replaces the list: the files in play now come first, notes kept)
    given = [_spelled(f.path, f.note) for f in files]
    paths = " ".join(
        f"--file-in-play {shlex.quote(p)}"
        for p in [*given, *(_spelled(s.path, "") for s in found.suggestions)]
    )
    click.echo(f"accept: git hydrate task-edit {shlex.quote(task_id)} {paths}", err=True)
    _unread(task_id, found.unread)


def _unread(task_id: str, count: int) -> None:
    """Say on stderr how many files were matched by their paths alone (a partial
    clone lacks their blobs), if any: an answer without them is no silent one."""
    if count:
        files = "1 file" if count == 1 else f"{count:,} files"
        click.echo(
            f"note: the contents of {files} are not in this partial clone: matched by path"
            f" alone (git hydrate add-tree {shlex.quote(task_id)} PATHSPEC fetches the"
            " files it takes)",
            err=True,
        )


def _spelled(path: str, note: str) -> str:
    """``PATH[:NOTE]`` as --file-in-play reads it back: a path holding ``:`` takes one
    more after it (it can carry no note then; PATH:NOTE splits at the first ``:``)."""
    if ":" in path:
        return path + ":"
    return f"{path}:{note}" if note else path
