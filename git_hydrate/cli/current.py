"""start, current: the work tree's current task."""

from __future__ import annotations

import shlex

import click

from ._common import complete_task_ids, echo_json, json_option, open_ledger, shown

__all__ = ["current", "start"]


@click.command("start", short_help="Make ID this work tree's current task (in_progress).")
@click.argument("task_id", metavar="ID", shell_complete=complete_task_ids)
@json_option
@click.pass_context
def start(ctx: click.Context, task_id: str, as_json: bool) -> None:
    """Make ID this work tree's current task and move it to in_progress.

    Recorded in the work tree's own git directory (git rev-parse --git-path
    hydrate/current-task), so each linked work tree has its own; afterwards
    @ or --current stands for it wherever a command takes an ID.

    \b
    Example:
      git hydrate start M-1002 && git hydrate prompt @
    """
    with open_ledger(ctx) as ledger:
        result = ledger.start(task_id)
    if as_json:
        echo_json(ctx, result)
        return
    moved = f" ({result['from']} -> {result['to']})" if result["changed"] else ""
    click.echo(f"started {shown(result['task_id'])}{moved}")
    if result["held_by"]:
        task = shown(result["task_id"])
        click.echo(
            f"warning: {task} is held by {shown(result['held_by'])}: it stays theirs "
            f"(git hydrate claim {shlex.quote(result['task_id'])} --steal takes a stale claim)",
            err=True,
        )


@click.command("current", short_help="Print this work tree's current task.")
@click.option("--clear", is_flag=True, help="Forget the task started in this work tree.")
@json_option
@click.pass_context
def current(ctx: click.Context, clear: bool, as_json: bool) -> int:
    """Print this work tree's current task (exit status 1 when there is none).

    With --clear, forget the started task first (a branch may still name one);
    its exit status is 0 when it did, whatever is current after.

    The task started here (git hydrate start), else the first id of an existing
    task that hydrate.taskPattern finds in the branch name. A started task that
    is no longer here (removed or archived) is passed over, and said so.

    \b
    Example:
      git hydrate current
    """
    from ..current import gone, gone_line  # (not at import: --help reads no repository)

    previous = None
    with open_ledger(ctx) as ledger:
        if clear:
            previous = ledger.clear_current()
            if not as_json:
                click.echo(f"cleared {shown(previous)}" if previous else "nothing was started")
        found = ledger.current()
        left = gone(ledger.refs) if found is None else None
    done = 0 if clear and previous else 1  # (--clear did what it was asked)
    if as_json:
        echo_json(ctx, found)
        return 0 if found else done
    if found is None:
        if not clear:
            said = gone_line(left) if left else "no current task: git hydrate start ID"
            click.echo(said, err=True)
        return done
    click.echo(found["task_id"])
    return 0
