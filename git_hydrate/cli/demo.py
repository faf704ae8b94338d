"""demo: a throwaway repository, a task, context, and the packed prompt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import click

from ._common import ByteSize, write_out

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..ledger import Ledger

__all__ = ["demo"]


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository and print its path.")
@click.option(
    "--max-bytes",
    type=ByteSize(),
    default=1400,
    show_default=True,
    help="The prompt's byte budget (1400, 2k, 2KiB).",
)
def demo(keep: bool, max_bytes: int) -> None:
    """Show the whole job end to end in a throwaway repository.

    Creates a repository in a temporary directory and shows each command it
    runs, as a tutorial would: a task, three attachments (one that expires, one
    too large for the budget), then the prompt within the budget, followed by
    the line prompt prints about what it kept and left out, and why.

    \b
    Example:
      git hydrate demo --keep
    """
    from ..console import summary_line
    from ..ledger import Ledger
    from .packing import listing

    def show(command: str) -> None:
        click.echo(click.style(f"$ {command}", bold=True) if color else f"$ {command}")

    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    root = tempfile.mkdtemp(prefix="git-hydrate-demo-")
    try:
        subprocess.run(["git", "init", "-q", root], check=True)
        # The demo's commits are the demo's, whatever identity this machine has (or lacks).
        for key, value in (("user.name", "git-hydrate demo"), ("user.email", "demo@invalid")):
            subprocess.run(["git", "-C", root, "config", key, value], check=True)
        click.echo(f"# a throwaway repository: {root}\n")
        with Ledger(root) as ledger:
            _attach_the_examples(ledger, show)
            # The demo does not wait: it packs as of 5 seconds from now, and says so.
            later = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
            click.echo(
                "# packed as of 5 seconds from now (--now), when the 1-second note has expired:"
            )
            show(f"git hydrate prompt M-1002 --max-bytes {max_bytes} --now {_iso(later)} -v")
            result = ledger.prompt("M-1002", max_bytes=max_bytes, now=later.timestamp())
        write_out(result["prompt"])
        # what prompt says on stderr, here on stdout so the demo reads top to bottom
        click.echo(f"\n{summary_line('M-1002', result)}")
        for line in listing(result):
            click.echo(line)
        if keep:
            click.echo(f"\nrepository kept at {root} (try: git -C {root} hydrate show M-1002)")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _attach_the_examples(ledger: Ledger, show: Callable[[str], None]) -> None:
    """The demo's task and its three attachments, each shown as its command."""
    show(
        'git hydrate task-add M-1002 --objective "Add GET /healthz" \\\n'
        '    --acceptance "200 with the request id header" \\\n'
        '    --criterion "responds 200" --criterion "echoes X-Request-Id" \\\n'
        "    --scope api/health --tag api \\\n"
        '    --file-in-play app/health.py:"new handler" --test tests/test_health.py'
    )
    ledger.add_task(
        "M-1002",
        objective="Add GET /healthz",
        acceptance="200 with the request id header",
        acceptance_criteria=["responds 200", "echoes X-Request-Id"],
        scope=["api/health"],
        tags=["api"],
        files=[("app/health.py", "new handler")],
        tests=[("tests/test_health.py", "")],
    )
    note = "The edge proxy sets X-Request-Id on every response."
    show(
        f'git hydrate add M-1002 --text "{note}" \\\n'
        "    --source-label repo/edge-notes --priority 10"
    )
    ledger.add_context("M-1002", note, "repo/edge-notes", priority=10)
    old = "Health checks were moved last sprint."
    show(f'git hydrate add M-1002 --text "{old}" --source-label chat/old --ttl 1s')
    ledger.add_context("M-1002", old, "chat/old", ttl=1)
    show(
        "git hydrate add M-1002 --text \"$(printf 'x%.0s' {1..4000})\" "
        "--source-label logs/huge-trace --priority 1"
    )
    ledger.add_context("M-1002", "x" * 4000, "logs/huge-trace", priority=1)
