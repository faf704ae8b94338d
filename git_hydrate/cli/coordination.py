"""ready, claim, release: many workers sharing one set of tasks through a git remote."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from ..errors import ValidationError
from ._common import (
    complete_remotes,
    complete_task_ids,
    echo_json,
    json_option,
    open_ledger,
    shown,
    task_id_argument,
    warn_damaged,
)
from .tasks import KIND_CHOICE

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = ["claim", "ready", "release"]


def _duration(value: str | None, option: str) -> float | None:
    if value is None:
        return None
    from .. import validate

    try:
        return validate.duration(value, option)
    except ValidationError as exc:
        raise click.BadParameter(str(exc).removeprefix(f"{option} "), param_hint=option) from None


_remote_option = click.option(
    "--remote",
    metavar="REMOTE",
    shell_complete=complete_remotes,
    help="Go through this remote (name or URL): pull first, push without force "
    "(default: hydrate.claimRemote, if set).",
)
_local_option = click.option(
    "--local",
    is_flag=True,
    help="This repository only, even when hydrate.claimRemote is set.",
)
_as_option = click.option(
    "--as",
    "holder",
    metavar="NAME",
    help="Who holds the task (default: your git identity, Name <email>).",
)


def _held_row(item: Mapping[str, Any]) -> str:
    return (
        f"{shown(item['task_id'])}\t{shown(item['status'])}\tsince {shown(item['claimed_at'])}"
        f"\t{shown(item['title'])}"
    )


def _ready_row(item: Mapping[str, Any]) -> str:
    held = f"\tstale claim of {shown(item['assignee'])}" if item["stale"] else ""
    return (
        f"{shown(item['task_id'])}\tp{item['priority']}\t{shown(item['kind'])}"
        f"\t{item['attachments']} ctx\t{shown(item['title'])}{held}"
    )


@click.command("ready")
@click.option(
    "--kind", "kinds", multiple=True, type=KIND_CHOICE, help="Only this kind (repeatable)."
)
@click.option("--tag", "tags", multiple=True, help="Only tasks with this tag (repeatable: all).")
@click.option(
    "--include-stale",
    metavar="AGE",
    help="Also list claimed tasks with no claim or checkpoint for AGE (90s, 30m, 2h, 1d, 1w).",
)
@click.option(
    "--mine",
    is_flag=True,
    help="List the tasks you hold instead (see --as), oldest claim first.",
)
@click.option(
    "--as",
    "holder",
    metavar="NAME",
    help="With --mine: whose tasks (default: your git identity, Name <email>).",
)
@_remote_option
@_local_option
@json_option
@click.pass_context
def ready(
    ctx: click.Context,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    include_stale: str | None,
    mine: bool,
    holder: str | None,
    remote: str | None,
    local: bool,
    as_json: bool,
) -> int:
    """List the tasks ready to be taken, in the order to take them.

    Ready: open, claimed by nobody, and every task it depends on is done
    (live or archived). Ordered by priority (1 first), then age, then id.
    With --mine, the tasks you hold and have not finished (open, in_progress,
    blocked or review) instead, oldest claim first: what a worker that lost
    track of its claim (killed after its push) still holds. A damaged task
    (see doctor) is left out with a warning that names it.

    \b
    Examples:
      git hydrate ready
      git hydrate ready --remote origin --kind fix --json
      git hydrate ready --include-stale 2h
      git hydrate ready --mine --remote origin --as agent-7
    """
    stale = _duration(include_stale, "--include-stale")
    if local and remote is not None:
        raise click.UsageError("--local and --remote contradict each other")
    if holder is not None and not mine:
        raise click.UsageError("--as names whose tasks --mine lists: use it with --mine")
    if mine and include_stale is not None:
        raise click.UsageError("--mine lists held tasks: --include-stale does not apply")
    with open_ledger(ctx) as ledger:
        report = ledger.pull_queue(remote, local=local)
        if report is not None and not report.ok:
            failed = [o.name for o in report.outcomes if o.action == "skipped"]
            click.echo(
                f"warning: pull from {shown(report.remote)} skipped "
                f"{', '.join(map(shown, failed)) or 'some refs'}; see: git hydrate pull",
                err=True,
            )
        damaged: list[str] = []
        if mine:
            items = ledger.held(holder, kind=kinds or None, tag=tags or None, damaged=damaged)
        else:
            items = ledger.ready(
                kind=kinds or None, tag=tags or None, include_stale=stale, damaged=damaged
            )
        why = "" if items or mine or as_json else _why_none_ready(ledger, kinds, tags)
    warn_damaged(damaged)
    if as_json:
        echo_json(ctx, items)
        return 0
    for item in items:
        click.echo(_held_row(item) if mine else _ready_row(item))
    if not items:
        click.echo("you hold no task" if mine else f"no task is ready{why}", err=True)
    return 0


def _why_none_ready(ledger: Ledger, kinds: tuple[str, ...], tags: tuple[str, ...]) -> str:
    from ..dependencies import why_none_ready
    from ..listing import task_filter

    return why_none_ready(ledger.refs, task_filter(kind=kinds or None, tag=tags or None))


def _print_claim(result: Mapping[str, Any], take_next: bool) -> None:
    where = f" on {shown(result['remote'])}" if result["remote"] else ""
    taken = f", taken from {shown(result['taken_from'])}" if result["taken_from"] else ""
    task, holder = shown(result["task_id"]), shown(result["assignee"])
    if result["changed"]:
        click.echo(f"claimed {task} for {holder}{where}{taken}")
    elif take_next:  # (the task its holder already holds: a retried claim's answer)
        click.echo(f"you already hold {task} (as {holder}{where}); --another takes one more")
    else:
        click.echo(f"you already hold {task} (as {holder}{where})")


@click.command("claim", short_help="Take the task ID, or with --next the first ready one.")
@click.argument("task_id", metavar="[ID]", required=False, shell_complete=complete_task_ids)
@click.option("--next", "take_next", is_flag=True, help="Take the first ready task.")
@_remote_option
@_local_option
@_as_option
@click.option(
    "--steal",
    is_flag=True,
    help="Also take a task whose claim is stale (see --stale-after), recording whose it was.",
)
@click.option(
    "--stale-after",
    metavar="AGE",
    default="4h",
    show_default=True,
    help="With --steal: how long a claim must have had no claim or checkpoint.",
)
@click.option(
    "--kind", "kinds", multiple=True, type=KIND_CHOICE, help="With --next: only this kind."
)
@click.option("--tag", "tags", multiple=True, help="With --next: only tasks with this tag.")
@click.option(
    "--another",
    is_flag=True,
    help="With --next: take a ready task even if you already hold one in_progress.",
)
@json_option
@click.pass_context
def claim(
    ctx: click.Context,
    task_id: str | None,
    take_next: bool,
    remote: str | None,
    local: bool,
    holder: str | None,
    steal: bool,
    stale_after: str,
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    another: bool,
    as_json: bool,
) -> None:
    """Take the task ID (or, with --next, the first ready one) and move it to in_progress.

    ID may be @, the work tree's current task.

    Refused when someone else holds it or it is not ready (open, every
    dependency done). With --remote the claim is pulled, committed and pushed
    without force: when two workers claim at once the remote accepts one
    push and refuses the other, which then reports who holds the task
    (--next goes on to the next ready one). Without --remote the claim is
    made in this repository only.

    --next is safe to retry: when you already hold a task in_progress (on the
    remote too, once pulled: a claim killed after its push), that task is the
    answer, unchanged, before any other is taken. --another takes a new one.

    \b
    Examples:
      git hydrate claim M-1002 --remote origin
      git hydrate claim --next --remote origin --as agent-7 --json
      git hydrate claim M-1002 --steal --stale-after 1d
    """
    _check_which_task(task_id, take_next, bool(kinds or tags), another)
    age = _duration(stale_after, "--stale-after")
    assert age is not None
    if local and remote is not None:
        raise click.UsageError("--local and --remote contradict each other")
    with open_ledger(ctx) as ledger:
        if task_id == "@":
            task_id = ledger.resolve_id(task_id)  # the work tree's current task
        result = ledger.claim(
            task_id,
            holder=holder,
            remote=remote,
            steal=steal,
            stale_after=age,
            kind=kinds or None,
            tag=tags or None,
            local=local,
            another=another,
        )
    if as_json:
        echo_json(ctx, result)
    else:
        _print_claim(result, take_next)


def _check_which_task(task_id: str | None, take_next: bool, filtered: bool, another: bool) -> None:
    """Refuse a claim that names both or neither of an ID and --next, or that
    gives an ID with the options that choose among ready tasks."""
    if (task_id is None) == (not take_next):
        raise click.UsageError("give the task ID or --next (not both)")
    if task_id is not None and filtered:
        raise click.UsageError("--kind and --tag choose among ready tasks: use them with --next")
    if task_id is not None and another:
        raise click.UsageError("--another chooses among ready tasks: use it with --next")


@click.command("release", short_help="Give the task ID back: nobody holds it any more.")
@task_id_argument
@_remote_option
@_local_option
@_as_option
@click.option("--force", is_flag=True, help="Release it even if someone else holds it.")
@json_option
@click.pass_context
def release(
    ctx: click.Context,
    task_id: str,
    remote: str | None,
    local: bool,
    holder: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Give the task ID back: nobody holds it, and in_progress becomes open again.

    Only its holder releases a task (--force lets anyone).

    \b
    Example:
      git hydrate release M-1002 --remote origin --as agent-7
    """
    if local and remote is not None:
        raise click.UsageError("--local and --remote contradict each other")
    with open_ledger(ctx) as ledger:
        result = ledger.release(task_id, holder=holder, remote=remote, force=force, local=local)
    if as_json:
        echo_json(ctx, result)
    elif result["changed"]:
        where = f" on {shown(result['remote'])}" if result["remote"] else ""
        click.echo(
            f"released {shown(task_id)} (held by {shown(result['released'])}){where}; "
            f"it is {shown(result['status'])}"
        )
    else:
        click.echo(f"{shown(task_id)} is held by nobody")
