"""import, export: tasks from other tools' formats, and back."""

from __future__ import annotations

import sys
from typing import Any, Final

import click

from ..ids import TASK_ID_RULES, is_task_id
from ._common import (
    allow_secrets_option,
    echo_json,
    json_option,
    open_ledger,
    quiet_option,
    quiet_or_verbose,
    shown,
    warn,
    write_out,
)

__all__ = ["export_cmd", "import_cmd"]

_FROM = click.Choice(["github", "gitlab", "beads", "taskmaster", "speckit"])
#: import --from's names of the formats export writes as JSON.
_EXPORT_ALIASES: Final = {"beads": "json-beads", "taskmaster": "json-taskmaster"}
#: The largest input read (a 50 MB export is refused before it is parsed).
_MAX_INPUT = 32 * 1024 * 1024


def _read(source: str) -> str:
    """The text of FILE (``-``: standard input), at most 32 MiB, as UTF-8."""
    try:
        if source == "-":
            data = sys.stdin.buffer.read(_MAX_INPUT + 1)
        else:
            with open(source, "rb") as fh:
                data = fh.read(_MAX_INPUT + 1)
    except OSError as exc:
        raise click.FileError(source, hint=exc.strerror or str(exc)) from None
    if len(data) > _MAX_INPUT:
        raise click.BadParameter(f"{source} is over 32 MiB; split it", param_hint="FILE")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise click.BadParameter(f"{source} is not UTF-8 text", param_hint="FILE") from None


def _source(ctx: click.Context, source: str | None) -> str:
    """FILE as given, or ``-`` when none was and something is piped in."""
    if source is not None:
        return source
    if sys.stdin is None or sys.stdin.isatty():
        # nothing piped in: waiting for the terminal would look like a hang
        raise click.UsageError(
            "give FILE, or pipe the export in (- reads standard input, even a terminal)", ctx
        )
    return "-"


def _check_prefix(prefix: str | None) -> None:
    """Refuse a prefix no task id can begin with: else every item would be refused,
    one warning each."""
    if prefix is not None and not is_task_id(prefix + "1"):
        raise click.BadParameter(
            f"{prefix[:40]!r} cannot begin a task id ({TASK_ID_RULES})", param_hint="--prefix"
        )


@click.command("import", short_help="Create or update tasks from another tool's issues or tasks.")
@click.argument("source", metavar="[FILE]", required=False)
@click.option("--from", "fmt", type=_FROM, help="The format (default: detected).")
@click.option("--prefix", help="Put this before each source id (default: GH-, GL-, TM-, or none).")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@click.option("-v", "--verbose", is_flag=True, help="Also list the source fields not used.")
@quiet_option
@allow_secrets_option("the imported text")
@json_option
@click.pass_context
def import_cmd(
    ctx: click.Context,
    source: str | None,
    fmt: str | None,
    prefix: str | None,
    dry_run: bool,
    verbose: bool,
    quiet: bool,
    allow_secrets: bool | None,
    as_json: bool,
) -> None:
    """Create or update tasks from FILE (- or none: what is piped in): the JSON of
    `gh issue list --json …` or `glab issue list --output json`, a beads JSONL
    export, task-master's tasks.json or a spec-kit tasks.md. Paths the text
    names become files in play; tests among them (test_x.py, x_test.go, a
    file under tests/) become the task's tests.

    Importing again updates each task by a three-way merge with what was
    imported last (changes here are kept, and fields the input leaves out); it
    never makes a second task.

    \b
    Examples:
      gh issue list --json number,title,body,labels,state,url | git hydrate import
      git hydrate import .taskmaster/tasks/tasks.json --dry-run
    """
    _check_prefix(prefix)
    quiet_or_verbose(quiet, verbose)
    source = _source(ctx, source)
    text = _read(source)
    with open_ledger(ctx) as ledger:
        report: Any = ledger.import_tasks(
            text,
            fmt,
            origin=source if source != "-" else "stdin",
            prefix=prefix,
            dry_run=dry_run,
            allow_secrets=allow_secrets,
        )
    would = "would be " if dry_run else ""
    if as_json:
        echo_json(ctx, report)
    else:
        _echo_report(report, dry_run, verbose, quiet)
    for note in report["warnings"]:
        warn(f"item {shown(note['item'])}: {note['warning']}")
    for error in report["errors"]:
        warn(f"item {shown(error['item'])} {would}left out: {error['error']}")
    if report["errors"]:
        ctx.exit(1)


def _echo_report(report: Any, dry_run: bool, verbose: bool, quiet: bool) -> None:
    """The human report of an import: each task created or updated, each value of
    yours an update replaced, the counts; ``quiet``: only the values replaced."""
    would = "would be " if dry_run else ""
    for key in ("created", "updated") if not quiet else ():
        for task_id in report[key]:
            click.echo(f"{would}{key} {shown(task_id)}")
    for conflict in report["conflicts"]:
        click.echo(
            f"{shown(conflict['task_id'])}: {conflict['field']} changed here and upstream; "
            "kept the upstream value"
        )
    if not quiet:
        click.echo(_summary(report, dry_run), err=True)
    if verbose and report["ignored"]:
        fields = ", ".join(f"{k} ({n})" for k, n in report["ignored"].items())
        click.echo(f"fields not used: {fields}", err=True)


def _summary(report: Any, dry_run: bool) -> str:
    """``github: 3 created, 0 updated, 0 unchanged, 0 left out``; a dry run's says
    ``would be`` of what it did not write."""
    would = "would be " if dry_run else ""
    counts = ", ".join(
        f"{len(report[k])} {would if k != 'unchanged' else ''}{k}"
        for k in ("created", "updated", "unchanged")
    )
    unwritten = " (dry run: nothing written)" if dry_run else ""
    return f"{report['format']}: {counts}, {len(report['errors'])} {would}left out{unwritten}"


@click.command("export", short_help="Write tasks as Markdown, or as beads or task-master JSON.")
@click.argument("task_ids", metavar="ID...", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json-beads", "json-taskmaster", "beads", "taskmaster"]),
    default="markdown",
    show_default=True,
    help="Markdown for an issue body, or the JSON import reads (beads and taskmaster, "
    "import --from's names, are json-beads and json-taskmaster).",
)
@click.pass_context
def export_cmd(ctx: click.Context, task_ids: tuple[str, ...], fmt: str) -> None:
    """Write the tasks ID... (@: the current task) as Markdown (for gh issue
    create --body-file -) or as beads or task-master JSON, which import reads
    back as they were, acceptance criteria and dependencies included.

    \b
    Example:
      git hydrate export M-1002 | gh issue create --title "Add /healthz" --body-file -
    """
    with open_ledger(ctx) as ledger:
        # @: the current task; a task named twice (or as @ and by id) is written once
        ids = list(dict.fromkeys(ledger.resolve_id(task_id) for task_id in task_ids))
        fmt = _EXPORT_ALIASES.get(fmt, fmt)
        write_out(ledger.export_tasks(ids, fmt))
