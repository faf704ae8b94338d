"""hook pre-push, hooks install|uninstall|status."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ._common import (
    complete_remotes,
    echo_json,
    json_option,
    open_ledger,
    quiet_option,
    shown,
    warn,
)

__all__ = [
    "hook",
    "hooks_group",
    "install",
    "pre_push",
    "prepare_commit_msg",
    "status",
    "uninstall",
]


@click.group("hook", short_help="Run a git hook's logic (the installed hooks call it).")
def hook() -> None:
    """Run a git hook's logic (called by the installed hook scripts).

    \b
    Example:
      git hydrate hook pre-push origin git@example.com:team/app.git < refs.txt
    """


@hook.command("pre-push")
@click.argument("remote", required=False, shell_complete=complete_remotes)
@click.argument("url", required=False)
@click.option(
    "--strict/--no-strict",
    default=None,
    help="Block the push when a concerned task cannot be packed or has omissions "
    "(default: git config hydrate.prePushStrict, else no).",
)
@quiet_option
@json_option
@click.pass_context
def pre_push(
    ctx: click.Context,
    remote: str | None,
    url: str | None,
    strict: bool | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Write prompt artefacts for the tasks a push concerns.

    Reads git's pre-push input on stdin (<local ref> <local oid> <remote ref>
    <remote oid> per line); with empty input, the range the pre-commit
    framework exports (PRE_COMMIT_FROM_REF, PRE_COMMIT_TO_REF,
    PRE_COMMIT_LOCAL_BRANCH, PRE_COMMIT_REMOTE_BRANCH). REMOTE and URL are the
    arguments git passes to the hook. A task is concerned when its ref
    (refs/hydrate/tasks/ID) is pushed, or when its id matches
    hydrate.taskPattern in a pushed ref name or in a pushed commit's message.

    Writes ID.prompt.md, ID.packet.json and manifest.json into
    hydrate.artefactDir/ID (default: .git/hydrate/artefacts/ID). Expiry is
    judged at the pushed commit's committer time, so the same task state and
    commit give byte-identical files. Never blocks the push unless --strict
    (or hydrate.prePushStrict) is set and a task cannot be packed or has
    omissions.

    \b
    Example:
      ref=refs/heads/M-1002-fix
      echo "$ref $(git rev-parse HEAD) $ref $(git rev-parse @{u})" |
        git hydrate hook pre-push origin
    """
    from .. import hooks
    from ..errors import HydrateError

    data = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read()
    blocking = bool(strict)
    try:
        with open_ledger(ctx) as ledger:
            blocking = hooks.strict_setting(ledger) if strict is None else strict
            updates = hooks.parse_pre_push(data.decode("utf-8", "surrogateescape"))
            if not data.strip():
                updates = hooks.updates_from_pre_commit(ledger, os.environ)
            report = hooks.pre_push(ledger, updates)
    except HydrateError as exc:
        if blocking:
            raise
        warn(f"git-hydrate pre-push: {exc}; the push goes on")
        return
    if as_json:
        echo_json(
            ctx, {**report, "strict": blocking, "blocked": blocking and bool(report["problems"])}
        )
    elif not quiet:
        _echo_artefacts(report["tasks"])
    if report["problems"]:
        _echo_problems(ctx, report["problems"], blocking)


def _echo_artefacts(tasks: list[dict[str, Any]]) -> None:
    """One line on stderr per task the push concerns: where its artefacts are."""
    from ..console import summary_line

    for task in tasks:
        state = "wrote" if task["changed"] else "up to date:"
        summary = summary_line(task["task"], task).split(": ", 2)[2]
        click.echo(
            f"hydrate: {shown(task['task'])}: {state} {shown(task['directory'])} ({summary})",
            err=True,
        )


def _echo_problems(ctx: click.Context, problems: list[dict[str, Any]], blocking: bool) -> None:
    """The tasks that could not be packed whole, as warnings, or as errors that
    block the push (exit status 1)."""
    label = "error" if blocking else "warning"
    for problem in problems:
        click.echo(f"{label}: task {shown(problem['task'])}: {shown(problem['reason'])}", err=True)
    if blocking:
        click.echo(
            "error: push blocked by hydrate.prePushStrict; fix the tasks above, "
            "or push with --no-verify to skip the hook",
            err=True,
        )
        ctx.exit(1)


@hook.command("prepare-commit-msg", short_help="Add the trailers for the current task.")
@click.argument("message_file", metavar="FILE")
@click.argument("source", required=False)
@click.argument("commit", required=False)
@click.pass_context
def prepare_commit_msg(
    ctx: click.Context, message_file: str, source: str | None, commit: str | None
) -> None:
    """Add Hydrate-Task and Hydrate-Packet trailers for the work tree's current task.

    FILE, SOURCE and COMMIT are what git passes to the prepare-commit-msg
    hook. Without a current task nothing changes. A message the editor opens
    for you to write (no SOURCE, or template) is left to the commit-msg hook
    when it is installed, which adds the trailers once you have written it.
    A message without a final newline (git merge --no-edit) gets one first, so
    the trailers stay out of its last paragraph. Never stops a commit: a task
    that cannot be packed is a warning.

    \b
    Example:
      git hydrate hook prepare-commit-msg .git/COMMIT_EDITMSG message
    """
    from .. import hooks
    from ..errors import HydrateError

    try:
        with open_ledger(ctx) as ledger:
            after = hooks.msg_hook_installed(ledger)
            hooks.prepare_commit_msg(ledger, message_file, source, after=after)
    except (HydrateError, OSError) as exc:
        warn(f"git-hydrate prepare-commit-msg: {exc}; no trailers added")


@hook.command("commit-msg", short_help="Add the trailers to the message you wrote.")
@click.argument("message_file", metavar="FILE")
@click.pass_context
def commit_msg(ctx: click.Context, message_file: str) -> None:
    """Add Hydrate-Task and Hydrate-Packet trailers to the message you wrote.

    FILE is what git passes to the commit-msg hook, after the editor closed. A
    message left empty (comments aside) is left alone, so git aborts the commit
    as it would without the hook; a trailer already there is kept. Never stops
    a commit.

    \b
    Example:
      git hydrate hook commit-msg .git/COMMIT_EDITMSG
    """
    from .. import hooks
    from ..errors import HydrateError

    try:
        with open_ledger(ctx) as ledger:
            hooks.commit_msg(ledger, message_file)
    except (HydrateError, OSError) as exc:
        warn(f"git-hydrate commit-msg: {exc}; no trailers added")


@click.group("hooks", short_help="Install, remove or inspect git-hydrate's git hooks.")
def hooks_group() -> None:
    """Install, remove or inspect git-hydrate's pre-push hook (and commit-trailer hook).

    The hooks go where git looks for hooks (core.hooksPath honoured). A
    pre-push hook of another origin is kept: it is renamed pre-push.legacy and
    runs first, with the same input; its failure still stops the push. With
    install --commit-trailer, prepare-commit-msg and commit-msg hooks are
    chained the same way.
    When git-hydrate is not on PATH, the hooks run it with the Python that
    installed them, with -P: no module of the work tree is imported.

    \b
    Example:
      git hydrate hooks install && git hydrate hooks status
    """


@hooks_group.command("install", short_help="Install the pre-push hook (again: refresh it).")
@click.option(
    "--commit-trailer",
    is_flag=True,
    help="Also install prepare-commit-msg and commit-msg hooks that add Hydrate-Task "
    "and Hydrate-Packet trailers for the work tree's current task.",
)
@click.option(
    "--agent-refresh",
    is_flag=True,
    help="Also install a post-checkout hook that runs git hydrate agent refresh.",
)
@json_option
@click.pass_context
def install(ctx: click.Context, commit_trailer: bool, agent_refresh: bool, as_json: bool) -> None:
    """Install the pre-push hook (again: refresh it; a foreign hook is chained).

    A hooks directory the repository tracks (core.hooksPath in the work tree) is
    left alone: have its pre-push run `git hydrate hook pre-push "$@"` instead.

    \b
    Example:
      git hydrate hooks install --commit-trailer
    """
    from .. import hooks

    with open_ledger(ctx) as ledger:
        result = hooks.install(ledger, commit_trailer=commit_trailer, agent_refresh=agent_refresh)
    if as_json:
        echo_json(ctx, result)
        return
    words = {"installed": "installed", "updated": "updated", "unchanged": "already installed:"}
    for one in (result, result["commit_trailer"], result["commit_msg"], result["agent_refresh"]):
        if one is None:
            continue
        click.echo(f"{words[one['action']]} {shown(one['hook'])}")
        if one["legacy"]:
            click.echo(f"chained: {shown(one['legacy'])} runs first")
    for note in result["notes"]:
        warn(note)


@hooks_group.command(
    "uninstall", short_help="Remove the pre-push hook; restore the one it chained."
)
@json_option
@click.pass_context
def uninstall(ctx: click.Context, as_json: bool) -> None:
    """Remove the pre-push hook and restore the hook it chained, if any.

    \b
    Example:
      git hydrate hooks uninstall
    """
    from .. import hooks

    with open_ledger(ctx) as ledger:
        result = hooks.uninstall(ledger)
    if as_json:
        echo_json(ctx, result)
        return
    if result["action"] == "not-installed":
        click.echo(f"not installed: {shown(result['hook'])} is not git-hydrate's hook")
    for one in (result, result["commit_trailer"], result["commit_msg"], result["agent_refresh"]):
        if one["action"] == "removed":
            click.echo(f"removed {shown(one['hook'])}")
            if one["restored"]:
                click.echo(f"restored the previous hook as {shown(one['restored'])}")


@hooks_group.command("status", short_help="Show where the hook is, whether current, its settings.")
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show where the hook is, whether it is installed and current, and its settings.

    \b
    Example:
      git hydrate hooks status --json
    """
    from .. import hooks

    with open_ledger(ctx) as ledger:
        result: dict[str, Any] = hooks.status(ledger)
    if as_json:
        echo_json(ctx, result)
        return
    if result["installed"]:
        state = "installed" if result["current"] else "installed (outdated: run hooks install)"
    elif result["foreign"]:
        state = "not installed (another pre-push hook is there)"
    else:
        state = "not installed"
    rows = [
        ("pre-push hook", f"{state}: {shown(result['hook'])}"),
        ("core.hooksPath", result["hooks_path"] or "(not set)"),
        ("chained hook", result["legacy"] or "(none)"),
        ("fallback python", result["python"] or "(none)"),
        ("artefacts", result["artefact_dir"]),
        ("strict", "yes" if result["strict"] else "no"),
        ("task pattern", result["task_pattern"]),
        ("commit trailer", _trailer_state(result["commit_trailer"], "--commit-trailer")),
        ("commit-msg hook", _trailer_state(result["commit_msg"], "--commit-trailer")),
        ("agent refresh", _trailer_state(result["agent_refresh"], "--agent-refresh")),
    ]
    unmatched = result["unmatched_tasks"]
    if unmatched:
        ids = ", ".join(unmatched[:5]) + (", ..." if len(unmatched) > 5 else "")
        tasks = f"{len(unmatched)} task{'s' if len(unmatched) != 1 else ''}"
        text = f"{tasks} the pattern cannot find in a branch name or commit message: "
        rows.insert(7, ("task ids", text + ids))
    for name, value in rows:
        click.echo(f"{name + ':':17}{value}")


def _trailer_state(trailer: dict[str, Any], flag: str) -> str:
    if not trailer["installed"]:
        return f"not installed (hooks install {flag})"
    state = "installed" if trailer["current"] else "installed (outdated: run hooks install)"
    return f"{state}: {shown(trailer['hook'])}"
