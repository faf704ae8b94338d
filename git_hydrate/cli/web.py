"""web: a local, read-only web page of the tasks, their prompts and what was left out."""

from __future__ import annotations

import click

from ._common import Count, open_ledger, warn

__all__ = ["DEFAULT_PORT", "web"]

#: The port ``web`` listens on unless told otherwise.
DEFAULT_PORT = 7878
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _host_names(
    _ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    from ..web.server import HOST_NAME

    for name in value:
        if not HOST_NAME.match(name):
            raise click.BadParameter(f"{name[:80]!r} is not a host name (as in board.example.org)")
    return value


@click.command("web", short_help="Serve a read-only web page of the tasks (until Ctrl-C).")
@click.option(
    "--port",
    type=Count(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (0: any free port).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    metavar="ADDRESS",
    help="The address to listen on. Anything but the loopback shows the tasks, "
    "unauthenticated, to the network.",
)
@click.option(
    "--allow-host",
    "allowed",
    multiple=True,
    metavar="NAME",
    callback=_host_names,
    help="Answer requests for this host name too, with any port or none (repeatable): a "
    "name of this machine that the board is reached by, or a proxy's. Requests for any "
    "other name are refused, "
    "so that a site that rebinds its name to this machine cannot read the tasks.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the board in the web browser.")
@click.pass_context
def web(
    ctx: click.Context, port: int, host: str, allowed: tuple[str, ...], open_browser: bool
) -> None:
    """Serve a read-only web page of the tasks until interrupted (Ctrl-C).

    The board (columns by station; filters by tag, kind and holder; archived
    tasks on request), each task's page (fields, checkpoints, attachments in
    packing order with a budget control that packs with the same packer as
    prompt, the prompt, the work commits and the packet each saw) and the
    dependency graph of the open tasks. The page follows the refs as they move,
    works offline and never changes the repository: only GET and HEAD are
    served.

    \b
    Examples:
      git hydrate web --open
      git hydrate web --port 0
      git hydrate web --host 0.0.0.0 --allow-host board.example.org
    """
    from ..web.server import make_server

    with open_ledger(ctx) as ledger:
        server = make_server(ledger, host, port, allowed)
        try:
            bound = server.server_address[1]
            shown = f"[{host}]" if ":" in host else host
            url = f"http://{shown}:{bound}/"
            if host not in _LOOPBACK:
                warn(f"listening on {host}: anyone who can reach it can read every task")
            click.echo(f"serving {url} (read-only; Ctrl-C stops)", err=True)
            if open_browser:
                import webbrowser

                if not webbrowser.open(url):  # (a machine without one: say so, not nothing)
                    warn(f"--open: no web browser could be started here; open {url} in one")
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                click.echo("stopped", err=True)
        finally:
            server.server_close()
