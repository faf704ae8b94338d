"""status, checkpoint, log, archive, unarchive."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import click

from ..validate import MAX_TOKEN_COUNT
from ._common import (
    STATION_CHOICE,
    Count,
    IsoTime,
    TokenCount,
    allow_secrets_option,
    echo_json,
    json_option,
    open_ledger,
    optional_task_id_argument,
    shown,
    shown_block,
    task_id_argument,
    warn,
    warn_stray_refs,
)
from .tasks import EMPTY_HINT, held_by, station_shown

if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["STATIONS_HELP", "archive", "checkpoint", "log", "status", "unarchive"]

STATIONS_HELP = "open, in_progress, blocked, review, done, cancelled"


def _budget_line(status: Mapping[str, Any]) -> str:
    reported = status["metrics"]["reported_tokens"]
    budget = status["token_budget"]
    if not budget:
        return f"tokens: {reported} reported, no budget set"
    remaining = status["budget_remaining"]
    if remaining < 0:
        return f"tokens: {reported} of {budget} reported, OVER BUDGET by {-remaining}"
    return f"tokens: {reported} of {budget} reported, {remaining} remaining"


def _depends_line(status: Mapping[str, Any]) -> str:
    """``depends on: A-1 (done), B-2 (open), N-9 (not here: …)``; the first ten, and
    how many more (100,000 of a remote's task made a line of 4 MB)."""
    from ..dependencies import named_waits

    return f"depends on: {named_waits(status['task_id'], status['depends'], name=_dependency)}"


def _dependency(dep: Mapping[str, Any]) -> str:
    station = dep["station"]
    where = shown(station) if station is not None else "not here: a pull may bring it"
    return f"{shown(dep['task_id'])} ({where})"


def _print_status(status: Mapping[str, Any]) -> None:
    archived = " (archived)" if status["archived"] else ""
    click.echo(f"task {shown(status['task_id'])}{archived}: {shown(status['title'])}")
    click.echo(
        f"status {shown(status['status'])}{held_by(status)} · kind {shown(status['kind'])}"
        f" · priority {status['priority']}"
    )
    click.echo(
        f"context: {status['attachments']} attachment(s), {status['live']} live, "
        f"{status['expired']} expired"
    )
    if status.get("depends"):
        click.echo(_depends_line(status))
    click.echo(_budget_line(status))
    click.echo(
        "cash cost and token savings: not measured (git-hydrate does not see the model "
        "provider's usage)"
    )
    checkpoint = status["checkpoint"]
    if checkpoint is None:
        click.echo("no checkpoint yet")
        return
    click.echo(
        f"latest checkpoint (#{status['checkpoints']}, {checkpoint['tokens']} tokens, "
        f"{shown(checkpoint['at'])}, {shown(checkpoint['author'])}):"
    )
    for label, key in (
        ("Summary", "summary"),
        ("Evidence", "evidence"),
        ("Next step", "next_step"),
    ):
        if checkpoint[key]:  # (a line of several lines indented as the first)
            click.echo(f"  {label}: " + shown_block(checkpoint[key]).replace("\n", "\n    "))


def _status_row(status: Mapping[str, Any]) -> str:
    reported = status["metrics"]["reported_tokens"]
    tokens = f"{reported}/{status['token_budget']}" if status["token_budget"] else f"{reported}"
    over = " OVER" if status["over_budget"] else ""
    expired = f" ({status['expired']} expired)" if status["expired"] else ""
    return (
        f"{shown(status['task_id'])}\t{station_shown(status)}\t{shown(status['kind'])}"
        f"\tp{status['priority']}"
        f"\t{status['attachments']} ctx{expired}\t{tokens} tokens{over}\t{shown(status['title'])}"
    )


class _StatusCommand(click.Command):
    """``status ID in_progress`` (a station where ``--set`` goes) is told to use
    ``--set``, not only that ``in_progress`` is an unexpected extra argument."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # (click's parser takes the words out of ``args``)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            from ..model import STATIONS

            words = [a for a in given if not a.startswith("-")]
            typed = words[-1].replace("-", "_").lower() if len(words) == 2 else ""
            if "unexpected extra argument" not in exc.message or typed not in STATIONS:
                raise
            import shlex

            task = shlex.quote(words[0])
            raise click.UsageError(
                f"to move {task} to {typed}: git hydrate status {task} --set {typed}", ctx
            ) from None


@click.command("status", cls=_StatusCommand)
@optional_task_id_argument
@click.option(
    "--set",
    "new_station",
    type=STATION_CHOICE,
    metavar="STATION",
    help=f"Move the task ID to STATION ({STATIONS_HELP}).",
)
@click.option(
    "--station",
    "stations",
    multiple=True,
    type=STATION_CHOICE,
    metavar="STATION",
    help="Without ID: only tasks at STATION (repeatable).",
)
@click.option(
    "--now",
    type=IsoTime(),
    default=None,
    help="Count expired attachments at this moment instead of the current time.",
)
@json_option
@click.pass_context
def status(
    ctx: click.Context,
    task_id: str | None,
    new_station: str | None,
    stations: tuple[str, ...],
    now: datetime | None,
    as_json: bool,
) -> None:
    """Show where a task stands, or move it to another station.

    With ID: its station, attachments (live/expired), the tasks it depends on
    and where each stands (or that it is not here), latest checkpoint, token
    budget and metrics. Without ID: one line per live task. Stations and the
    allowed moves:

    \b
      open        -> in_progress, blocked, cancelled   (a new task starts here)
      in_progress -> blocked, review, done, open, cancelled
      blocked     -> open, in_progress, cancelled
      review      -> in_progress, done, cancelled
      done        -> open
      cancelled   -> open

    \b
    Examples:
      git hydrate status M-1002 --set in_progress
      git hydrate status M-1002 --json
      git hydrate status --station blocked --station review
    """
    if task_id is None and new_station is not None:
        raise click.UsageError("--set needs the task ID")
    if task_id is not None and stations:
        raise click.UsageError("--station filters the list of all tasks; omit ID to use it")
    with open_ledger(ctx) as ledger:
        if task_id is None:
            rows = ledger.statuses(list(stations) or None, now=now)
            if as_json:
                echo_json(ctx, rows)
            else:
                for row in rows:
                    if "error" in row:
                        click.echo(f"{shown(row['task_id'])}\tdamaged\t{shown(row['error'])}")
                    else:
                        click.echo(_status_row(row))
                warn_stray_refs(ledger)
                if not rows and not stations:
                    click.echo(EMPTY_HINT, err=True)
            return
        moved = ledger.set_status(task_id, new_station) if new_station is not None else None
        result = ledger.status(task_id, now=now)
    if as_json:
        echo_json(ctx, result)
    elif moved is not None:
        if moved["changed"]:
            click.echo(f"task {shown(task_id)}: {shown(moved['from'])} -> {shown(moved['to'])}")
        else:
            click.echo(f"task {shown(task_id)} is already {shown(moved['to'])}")
    else:
        _print_status(result)


@click.command("checkpoint", short_help="Record a checkpoint on the task ID.")
@task_id_argument
@click.option("--summary", required=True, help="What was done since the last checkpoint.")
@click.option("--evidence", default="", help="What shows it (test output, commit, link).")
@click.option("--next-step", "next_step", default="", help="What the next worker should do.")
@click.option(
    "--tokens",
    type=TokenCount(0, MAX_TOKEN_COUNT),
    help="Cumulative tokens used on the task so far (18400, 18k; never lower than the last "
    "checkpoint; "
    "left out: the total reported so far, unchanged).",
)
@allow_secrets_option("the checkpoint")
@json_option
@click.pass_context
def checkpoint(
    ctx: click.Context,
    task_id: str,
    summary: str,
    evidence: str,
    next_step: str,
    tokens: int | None,
    allow_secrets: bool | None,
    as_json: bool,
) -> None:
    """Record a checkpoint on the task ID (one commit, by your git identity).

    The latest checkpoint goes into the packet and the prompt's
    "## Latest checkpoint" section; earlier ones stay in the task's history.

    \b
    Example:
      git hydrate checkpoint M-1002 --summary "handler and route added" \\
          --evidence "pytest tests/test_health.py: 3 passed" \\
          --next-step "add the X-Request-Id header" --tokens 18400
    """
    from ..current import held_by_another

    with open_ledger(ctx) as ledger:
        result = ledger.add_checkpoint(
            task_id, summary, evidence, next_step, tokens, allow_secrets=allow_secrets
        )
        other = held_by_another(ledger.refs, result["task_id"])
    if as_json:
        echo_json(ctx, result)
    else:
        click.echo(
            f"task {shown(task_id)}: checkpoint #{result['number']} recorded "
            f"({result['tokens']} cumulative tokens)"
        )
    if other:
        click.echo(
            f"warning: {shown(result['task_id'])} is held by {shown(other)}: your checkpoint "
            "is recorded in the task's history beside their work",
            err=True,
        )


@click.command("log", short_help="Show the history of the task ID, newest first.")
@task_id_argument
@click.option(
    "-n",
    "--max-count",
    "limit",
    type=Count(1),
    default=None,
    help="Show at most N changes.",
)
@click.option(
    "--commits",
    is_flag=True,
    help="List the work commits carrying the trailer Hydrate-Task: ID instead "
    "(see hooks install --commit-trailer).",
)
@json_option
@click.pass_context
def log(ctx: click.Context, task_id: str, limit: int | None, commits: bool, as_json: bool) -> None:
    """Show the history of the task ID, newest first (archived tasks too).

    Each change: when (UTC), who (the commit author) and what — task-add,
    task-edit, context-add/-update/-rm, add-tree, add-diff, status, checkpoint,
    merge, archive, unarchive — read from the task's commit chain.

    With --commits: the commits of HEAD, the branches, tags and remote-tracking
    branches whose Hydrate-Task trailer names ID, newest first, each with its
    Hydrate-Packet (the packet the worker's prompt was rendered from).

    \b
    Examples:
      git hydrate log M-1002
      git hydrate log M-1002 --json -n 5
      git hydrate log M-1002 --commits
    """
    if commits:
        with open_ledger(ctx) as ledger:
            found = ledger.commits(task_id)[:limit]
        if as_json:
            echo_json(ctx, found)
            return
        if not found:  # on stderr: standard output stays empty for scripts
            click.echo(
                f"no commit names {shown(task_id)} in a Hydrate-Task trailer "
                "(git hydrate hooks install --commit-trailer adds one to each new commit)",
                err=True,
            )
        for item in found:
            packet = f"  packet {item['packet'][:12]}" if item["packet"] else ""
            click.echo(
                f"{str(item['commit'])[:12]}  {item['when']}  {shown(item['who'])}"
                f"  {shown(item['subject'])}{packet}"
            )
        return
    with open_ledger(ctx) as ledger:
        entries = ledger.log(task_id, limit)
    if as_json:
        echo_json(ctx, entries)
        return
    for entry in entries:
        said = entry["details"].get("checkpoint_summary")
        extra = f": {shown(said)}" if said else ""
        click.echo(
            f"{entry['commit'][:12]}  {entry['when']}  {shown(entry['who'])}"
            f"  {shown(entry['summary'])}{extra}"
        )


@click.command("archive", short_help="Fold done or cancelled tasks into refs/hydrate/archive.")
@click.argument("task_ids", metavar="[ID]...", nargs=-1)
@click.option("--done", is_flag=True, help="Archive every live task that is done or cancelled.")
@json_option
@click.pass_context
def archive(ctx: click.Context, task_ids: tuple[str, ...], done: bool, as_json: bool) -> None:
    """Fold done or cancelled tasks into refs/hydrate/archive and drop their refs.

    The archive is one ref whose commit keeps every archived task's history
    reachable; `list --archived`, `show`, `status` and `log` still read them,
    and `unarchive` brings one back. Nothing is archived unless every named
    task is done or cancelled. A task archived while parts of it are still
    live is named in a warning with them (their prompts keep its text, read
    from the archive).

    \b
    Examples:
      git hydrate archive M-1002 M-1003
      git hydrate archive --done
    """
    if not task_ids and not done:
        raise click.UsageError("name the tasks to archive, or use --done")
    with open_ledger(ctx) as ledger:
        result = ledger.archive(task_ids, done=done)
        parts = {
            task_id: [c["task_id"] for c in ledger.children(task_id) if "error" not in c]
            for task_id in result["archived"]
        }
    if as_json:
        echo_json(ctx, result)
        return
    for task_id, children in parts.items():
        if children:
            warn(
                f"archived {shown(task_id)} while its part(s) {', '.join(map(shown, children))} "
                "are live (their prompts keep its text, from the archive)"
            )
    if result["archived"]:
        click.echo(
            f"archived {len(result['archived'])}: {', '.join(map(shown, result['archived']))}"
        )
    if result["already_archived"]:
        click.echo(f"already archived: {', '.join(map(shown, result['already_archived']))}")
    if not result["archived"] and not result["already_archived"]:
        click.echo("nothing to archive: no live task is done or cancelled")
    for item in result.get("damaged", []):
        warn(f"skipped damaged task {shown(item['task_id'])}: {shown(item['error'])}")


@click.command("unarchive", short_help="Bring the archived task ID back as a live task.")
@task_id_argument
@json_option
@click.pass_context
def unarchive(ctx: click.Context, task_id: str, as_json: bool) -> None:
    """Bring the archived task ID back as a live task (at the station it had).

    \b
    Examples:
      git hydrate unarchive M-1002
      git hydrate status M-1002 --set open
    """
    with open_ledger(ctx) as ledger:
        task = ledger.unarchive(task_id)
    if as_json:
        echo_json(ctx, task)
    else:
        click.echo(
            f"restored task {shown(task['task_id'])} ({shown(task['status'])}):"
            f" {shown(task['title'])}"
        )
