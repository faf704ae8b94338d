"""agent install|uninstall|status|refresh|context: bridges into coding agents' sessions."""

from __future__ import annotations

from typing import Any

import click

from ._common import echo_json, json_option, open_ledger, quiet_option, shown, warn

__all__ = ["agent_group"]

_AGENT = click.Choice(["claude", "codex", "aider"])


class _AgentGroup(click.Group):
    """``agent claude`` (an agent where a command goes) says which command was meant."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] in _AGENT.choices:
            raise click.UsageError(
                f"{args[0]!r} is an agent, not a command: give the command first, "
                f"as in git hydrate agent install {args[0]}",
                ctx,
            )
        return super().resolve_command(ctx, args)


@click.group(
    "agent", cls=_AgentGroup, short_help="Bring the current task into Claude Code, Codex or aider."
)
def agent_group() -> None:
    """Bring the current task into a coding agent's session: claude, codex, aider.

    Each writes only between its own markers (or its own JSON entries), is
    idempotent, and is taken out cleanly by uninstall: a file nobody edited
    since gets its original bytes back.

    \b
    Example:
      git hydrate start M-1002 && git hydrate agent install codex
    """


@agent_group.command("install", short_help="Install the bridge of each AGENT in this work tree.")
@click.argument("agents", metavar="AGENT...", nargs=-1, required=True, type=_AGENT)
@click.option(
    "--user",
    is_flag=True,
    help="codex: also register the MCP server in Codex's own config.toml ($CODEX_HOME, "
    "else ~/.codex), outside the repository.",
)
@json_option
@click.pass_context
def install(ctx: click.Context, agents: tuple[str, ...], user: bool, as_json: bool) -> None:
    """Install the bridge of each AGENT (claude, codex, aider) in this work tree.

    claude: a SessionStart hook in .claude/settings.local.json that prints the
    current task's prompt (and, with git-hydrate[mcp], the server in
    .mcp.json); codex: a block in AGENTS.md, the same whatever the task,
    telling Codex to run git hydrate prompt --current; aider: the prompt in
    .git-hydrate-task.md, named by .aider.conf.yml's read: list. Files it
    creates are listed in .git/info/exclude; a tracked file it changes is named.
    A file it would read or write that is a symbolic link, or under a folder
    that is one, is refused, and nothing is written.

    \b
    Example:
      git hydrate agent install claude codex
    """
    from .. import agents as bridges

    with open_ledger(ctx) as ledger:
        results = bridges.install_all(ledger, dict.fromkeys(agents), user=user)
    _report(ctx, results, as_json)
    for result in results:
        for note in result["notes"]:
            warn(f"{result['agent']}: {note}")
        for path in result["tracked"]:
            warn(
                f"{result['agent']}: {shown(path)} is tracked by git and now holds git-hydrate's "
                f"block; git hydrate agent uninstall {result['agent']} restores it"
            )


@agent_group.command("uninstall")
@click.argument("agents", metavar="AGENT...", nargs=-1, required=True, type=_AGENT)
@json_option
@click.pass_context
def uninstall(ctx: click.Context, agents: tuple[str, ...], as_json: bool) -> None:
    """Take out what install wrote for each AGENT.

    \b
    Example:
      git hydrate agent uninstall claude
    """
    from .. import agents as bridges

    with open_ledger(ctx) as ledger:
        results = [bridges.uninstall(ledger, name) for name in dict.fromkeys(agents)]
    _report(ctx, results, as_json)


@agent_group.command(
    "refresh", short_help="Rewrite the installed agents' prompts for the current task."
)
@quiet_option
@json_option
@click.pass_context
def refresh(ctx: click.Context, quiet: bool, as_json: bool) -> None:
    """Rewrite the installed agents' prompts for the current task (aider's file).

    \b
    Example:
      git hydrate start M-1003 && git hydrate agent refresh
    """
    from .. import agents as bridges

    with open_ledger(ctx) as ledger:
        result = bridges.refresh(ledger)
    if as_json:
        echo_json(ctx, result)
    elif not quiet:
        task = shown(result["task_id"]) if result["task_id"] else "no current task"
        names = ", ".join(result["agents"]) or "none installed"
        click.echo(f"refreshed for {task}: {names}")


@agent_group.command("status", short_help="Show which agents are installed here, and their files.")
@json_option
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Show which agents are installed in this work tree and the files they use.

    \b
    Example:
      git hydrate agent status
    """
    from .. import agents as bridges

    with open_ledger(ctx) as ledger:
        result = bridges.status(ledger)
    if as_json:
        echo_json(ctx, result)
        return
    click.echo(f"current task: {shown(result['current']) if result['current'] else '(none)'}")
    for name, info in result["agents"].items():
        files = ", ".join(info["files"]) if info["installed"] else ""
        click.echo(f"{name + ':':8}{'installed' if info['installed'] else 'not installed'}"
                   + (f" ({files})" if files else ""))  # fmt: skip


@agent_group.command(
    "context", short_help="Print the current task's prompt sized for AGENT's session."
)
@click.argument("agent", metavar="AGENT", type=_AGENT)
@click.pass_context
def context(ctx: click.Context, agent: str) -> None:
    """Print the current task's prompt sized for AGENT's session start (its hook runs this).

    AGENT is claude, codex or aider.

    Prints nothing without a current task, and never fails: a session must start.
    A task whose own fields exceed the size is named, with where to read its prompt.

    \b
    Example:
      git hydrate agent context claude
    """
    from .. import agents as bridges
    from ..errors import HydrateError

    try:
        with open_ledger(ctx) as ledger:
            text = bridges.context(ledger, agent)
    except HydrateError as exc:
        warn(f"git-hydrate agent context: {exc}")
        return
    if text:
        from ..console import Deferred

        with Deferred(None) as out:  # the bytes; to a terminal, control characters shown
            out.write((text if text.endswith("\n") else text + "\n").encode("utf-8"))


def _report(ctx: click.Context, results: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        echo_json(ctx, results)
        return
    for result in results:
        files = result["files"]
        assert isinstance(files, dict)
        for path, action in files.items():
            click.echo(f"{result['agent']}: {action} {shown(path)}")
        if not files:
            click.echo(f"{result['agent']}: nothing to do")
