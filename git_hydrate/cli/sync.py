"""push, pull, sync, setup, task-rm: sharing tasks through git remotes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..quicksync import render_report
from ._common import (
    compact,
    complete_remotes,
    echo_json,
    few_collections,
    json_option,
    open_ledger,
    quiet_option,
    shown,
    task_id_argument,
)

if TYPE_CHECKING:
    from ..sync import Report

__all__ = ["pull", "push", "setup", "sync", "task_rm"]


def _render(ctx: click.Context, report: Report, as_json: bool, quiet: bool) -> int:
    """Print a pull/push/sync report; return the exit status (1 if anything failed)."""
    return render_report(report, as_json, compact(ctx), _click_echo, quiet=quiet)


def _click_echo(text: str, to_stderr: bool) -> None:
    click.echo(text, err=to_stderr)


@click.command("pull")
@click.argument("remote", required=False, shell_complete=complete_remotes)
@click.argument("task_ids", metavar="[ID]...", nargs=-1)
@quiet_option
@json_option
@click.pass_context
def pull(
    ctx: click.Context, remote: str | None, task_ids: tuple[str, ...], quiet: bool, as_json: bool
) -> int:
    """Fetch REMOTE's tasks and merge them into yours, task by task.

    REMOTE is a remote name or URL (default: the current branch's remote,
    else origin). Tasks are fetched into refs/hydrate-remotes/REMOTE/ (the
    fetch uses --no-filter, so partial clones get the bodies), then: new
    there -> created here; yours behind ->
    fast-forwarded; yours ahead -> left for push; both changed -> a merge
    commit (both parents) holding the merged state. Your local-only tasks and
    unpushed changes are never dropped. A task whose remote data fails
    validation (a body that does not match its sha256, a key twice in
    task.json, a date that is none) is skipped and reported (exit status 1);
    the rest merges; so is a task whose mirror ref a killed git left locked
    (a lock is waited for while a live git may hold it, up to 20 s; then
    named with the command that clears it), and one gone from the remote
    whose mirror ref such a packed-refs.lock keeps. What wants you though the pull
    went well (a task kept live because the remote's archive names it wrongly:
    see doctor) is also a warning on stderr, with -q too.

    \b
    Examples:
      git hydrate pull
      git hydrate pull origin M-1002 M-1003
      git hydrate pull -q           # in a hook: silent unless something is wrong
    """
    # (thousands of tasks decoded and checked: no cyclic garbage among them)
    with few_collections(), open_ledger(ctx) as ledger:
        report = ledger.pull(remote, task_ids)
    return _render(ctx, report, as_json, quiet)


@click.command("push")
@click.argument("remote", required=False, shell_complete=complete_remotes)
@click.argument("task_ids", metavar="[ID]...", nargs=-1)
@quiet_option
@json_option
@click.pass_context
def push(
    ctx: click.Context, remote: str | None, task_ids: tuple[str, ...], quiet: bool, as_json: bool
) -> int:
    """Push your tasks (all, or the IDs) to REMOTE, never forcing.

    Without IDs the removal record and the archive go too, and tasks removed
    or archived here are deleted there, each only once the record (or archive)
    holding it is there: a remote that refuses it keeps them (not deleted),
    and the exit status is 1. A task the remote refuses (it has changes you
    lack) is reported by id, the others still go through, and the exit status
    is 1: run `git hydrate sync` to merge and retry; one whose copy there is no
    commit (a blob, a tree) is REFUSED with the push that replaces it. A task
    you did not change
    since you last fetched it, only moved on the remote, is reported as behind
    (run `git hydrate pull`), not as a failure. A task, removal record or
    archive that a pull would refuse (damaged: see `git hydrate doctor`) is
    not sent: it is reported as SKIPPED with why, the rest goes, and the exit
    status is 1. Client-side hooks are not run (--no-verify).

    \b
    Examples:
      git hydrate push
      git hydrate push origin M-1002
      git hydrate push -q           # in a script: silent unless something is wrong
    """
    # (thousands of tasks decoded and checked: no cyclic garbage among them)
    with few_collections(), open_ledger(ctx) as ledger:
        report = ledger.push(remote, task_ids)
    return _render(ctx, report, as_json, quiet)


@click.command("sync", short_help="Pull from REMOTE, then push; again if someone pushed.")
@click.argument("remote", required=False, shell_complete=complete_remotes)
@quiet_option
@json_option
@click.pass_context
def sync(ctx: click.Context, remote: str | None, quiet: bool, as_json: bool) -> int:
    """Pull from REMOTE, then push; if someone pushed meanwhile, pull and push again.

    At most 3 rounds; what is still rejected then is reported (exit status 1).
    A refusal no pull can settle (a declining hook, hidden refs) ends the
    first round, named once with what to do.

    \b
    Examples:
      git hydrate sync
      git hydrate sync upstream --json
      git hydrate sync -q           # in a hook: silent unless something is wrong
    """
    # (thousands of tasks decoded and checked: no cyclic garbage among them)
    with few_collections(), open_ledger(ctx) as ledger:
        report = ledger.sync(remote)
    return _render(ctx, report, as_json, quiet)


@click.command("setup", short_help="Let a plain `git fetch REMOTE` keep the task mirror current.")
@click.argument("remote", required=False, shell_complete=complete_remotes)
@json_option
@click.pass_context
def setup(ctx: click.Context, remote: str | None, as_json: bool) -> None:
    """Let a plain `git fetch REMOTE` keep the task mirror current (optional).

    Adds one wildcard fetch refspec, +refs/hydrate/*:refs/hydrate-remotes/REMOTE/*,
    to remote.REMOTE.fetch (once). Nothing else is changed; remote.REMOTE.push
    is never written, so a plain `git push` keeps pushing your branch.

    \b
    Example:
      git hydrate setup origin
    """
    from ..sync import setup as do_setup

    with open_ledger(ctx) as ledger:
        result = do_setup(ledger.refs, remote)
    if as_json:
        echo_json(ctx, result)
    elif result["added"]:
        click.echo(f"added {result['key']} {result['refspec']}")
    else:
        click.echo(f"already set up: {result['key']} {result['refspec']}")
    if not as_json:
        for problem in result["problems"]:
            click.echo(f"warning: {problem}", err=True)


@click.command("task-rm", short_help="Remove the task ID (its history stays reachable).")
@task_id_argument
@click.option(
    "--remote",
    metavar="REMOTE",
    help="Also delete it on REMOTE (refused if REMOTE has changes you have not pulled).",
)
@json_option
@click.pass_context
def task_rm(ctx: click.Context, task_id: str, remote: str | None, as_json: bool) -> int:
    """Remove the task ID; its history stays reachable through refs/hydrate/removed.

    A later pull does not bring it back unless someone changed it after your
    removal (then the pull says it restored it). Clones that pull your removal
    record drop their copy unless they changed it since. Without --remote,
    the next push or sync deletes it on the remote if nobody changed it
    there since (under a lease). With --remote, the deletion there and your
    removal record go in one atomic push: if REMOTE refuses either, neither
    lands, it says why, and the exit status is 1 (the task stays removed here).
    REMOTE's removal record is merged into yours first, and the other tasks
    it holds that you did not change since are removed here too, as a pull
    would. Live children of the task keep naming it as their parent: a note
    on stderr says which (--json: their ids under "orphaned").

    \b
    Examples:
      git hydrate task-rm M-1002
      git hydrate task-rm M-1002 --remote origin
    """
    from ..sync import remove_task

    with open_ledger(ctx) as ledger:
        result: dict[str, Any] = remove_task(ledger.refs, task_id, remote)
        # (its live children keep naming it: doctor notes each, this says so now)
        orphans = [c["task_id"] for c in ledger.children(task_id)] if result["local"] else []
    there = result["remote"]
    if as_json:
        echo_json(ctx, {**result, "orphaned": orphans})
    else:
        if result["local"]:
            click.echo(f"removed task {shown(task_id)} (was {result['removed_tip'][:12]})")
        else:
            click.echo(
                f"task {shown(task_id)} was not here; recorded the removal of its remote copy"
            )
        # (other tasks the remote's removal record holds: dropped as a pull would)
        for outcome in result["dropped"]:
            too = " here too" if outcome["action"] == "removed" else ""
            click.echo(
                f"{outcome['action']} task {shown(outcome['task_id'])}{too} "
                f"({shown(outcome['detail'])})"
            )
        if there is not None:
            state = "deleted on" if there["deleted"] else "not deleted on"
            detail = f" ({shown(there['detail'])})" if there["detail"] else ""
            click.echo(f"{state} {shown(there['remote'])}{detail}")
    _note_orphans(task_id, orphans)
    # (not deleted because it was not there, and the removal record went: done)
    if there is None or there["deleted"] or there["detail"] == f"not on {there['remote']}":
        return 0
    where = shown(there["remote"])
    if there["detail"].endswith(f"not on {there['remote']}"):
        click.echo(
            f"error: the removal of task {shown(task_id)} was not recorded on {where}", err=True
        )
    else:
        click.echo(f"error: task {shown(task_id)} was not deleted on {where}", err=True)
    return 1


def _note_orphans(task_id: str, orphans: list[str], shown_at_most: int = 3) -> None:
    """One line on stderr naming the live children a removed task leaves behind
    (a note: the removal stands, and so does the exit status)."""
    if not orphans:
        return
    if len(orphans) == 1:
        child = shown(orphans[0])
        click.echo(
            f"note: {child}, a child of {shown(task_id)}, is left without its parent "
            f"(clear it with: git hydrate task-edit {child} --no-parent)",
            err=True,
        )
        return
    named = ", ".join(shown(child) for child in orphans[:shown_at_most])
    rest = len(orphans) - shown_at_most
    named += f" and {rest} more" if rest > 0 else ""
    click.echo(
        f"note: {named}, children of {shown(task_id)}, are left without their parent "
        "(clear it with: git hydrate task-edit ID --no-parent)",
        err=True,
    )
