"""mcp: serve the repository's tasks to an agent over the Model Context Protocol."""

from __future__ import annotations

import click

from ._common import TokenCount, echo_json

__all__ = ["mcp"]


class McpCommand(click.Command):
    """``mcp``: its help names the tools from the server's own table, so it cannot drift.

    The table is read only when the help is shown (``mcp -h``, the man page); the command
    list of ``git hydrate -h`` takes :attr:`short_help` and does not import the server.
    """

    @property
    def help(self) -> str | None:
        if self._help_template is None or "{tools}" not in self._help_template:
            return self._help_template
        from ..serve import TOOLS

        return self._help_template.replace("{tools}", ", ".join(t["name"] for t in TOOLS))

    @help.setter
    def help(self, value: str | None) -> None:
        self._help_template = value


@click.command("mcp", cls=McpCommand, short_help="Serve the tasks over MCP on stdin and stdout.")
@click.option(
    "-C",
    "directory",
    metavar="PATH",
    type=click.Path(file_okay=False),
    default=None,
    help="Serve the repository at PATH (default: the one -C before the command names, "
    "else the current directory).",
)
@click.option(
    "--max-tokens",
    type=TokenCount(400),
    default=None,
    help="The budget of every answer, 400 or more (8k = 8,192; default: git config "
    "hydrate.mcpMaxTokens, else 8000); "
    "counted exactly with git-hydrate[tokens], else 5/2 bytes a token.",
)
@click.option(
    "--tools",
    "show_tools",
    is_flag=True,
    help="Print the tools as tools/list describes them, and their size on stderr, then exit.",
)
@click.pass_context
def mcp(
    ctx: click.Context, directory: str | None, max_tokens: int | None, show_tools: bool
) -> None:
    """Serve the tasks over MCP on stdin and stdout (needs git-hydrate[mcp]).

    Tools: {tools}; the resource
    hydrate://task/ID/prompt; the prompts work_on_task and next_ready_task.
    Every answer fits the budget: a long prompt or attachment comes in parts,
    a long list ends with what it left out. Writes follow the command line's
    rules (no credentials, an identity, compare-and-swap). Up to 4 calls run
    at once, so a slow one (a claim through a remote) holds back no other
    request; a cancelled one stops its remote's git. A line that is not JSON
    gets JSON-RPC's parse error (-32700), one that is no JSON-RPC message an
    invalid request (-32600), and the server goes on.

    \b
    Examples:
      git hydrate -C ~/src/app mcp
      claude mcp add hydrate -- git hydrate -C ~/src/app mcp
    """
    if show_tools:
        from ..serve import TOOLS
        from ..serve.answers import json_text

        echo_json(ctx, {"tools": list(TOOLS)})
        text = json_text({"tools": list(TOOLS)})
        click.echo(
            f"tools: {len(TOOLS)}; {len(text.encode('utf-8')):,} bytes" + _tokens(text), err=True
        )
        return
    from ..serve.server import serve

    root = (ctx.find_root().obj or {}).get("directory")
    serve(directory if directory is not None else root, max_tokens)


def _tokens(text: str) -> str:
    from ..errors import ValidationError
    from ..pack.tokens import count_tokens

    try:
        return f", {count_tokens(text, 'o200k_base'):,} tokens (o200k_base)"
    except ValidationError:
        return ""
