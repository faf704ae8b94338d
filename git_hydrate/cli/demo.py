"""demo: a throwaway repository, a task, context, and the packed prompt."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from datetime import UTC, datetime

import click

__all__ = ["demo"]


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the throwaway repository and print its path.")
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=2600,
    show_default=True,
    help="The budget to pack the demo task into.",
)
def demo(keep: bool, max_bytes: int) -> None:
    """Show the whole job end to end in a throwaway repository.

    Creates a repository in a temporary directory, adds a task with three
    attachments (one expired, one too large for the budget), and prints the
    packed prompt followed by what was omitted and why.

    \b
    Example:
      git hydrate demo --keep
    """
    from ..ledger import Ledger

    root = tempfile.mkdtemp(prefix="git-hydrate-demo-")
    try:
        subprocess.run(["git", "init", "-q", root], check=True)
        # The demo's commits are the demo's, whatever identity this machine has (or lacks).
        for key, value in (("user.name", "git-hydrate demo"), ("user.email", "demo@invalid")):
            subprocess.run(["git", "-C", root, "config", key, value], check=True)
        now = datetime.now(UTC)
        with Ledger(root) as ledger:
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
            ledger.add_context(
                "M-1002",
                "The edge proxy sets X-Request-Id on every response.",
                "repo/edge-notes",
                priority=10,
            )
            ledger.add_context(
                "M-1002", "Health checks were moved last sprint.", "chat/old", ttl=1
            )
            ledger.add_context("M-1002", "x" * 4000, "logs/huge-trace", priority=1)
            result = ledger.expand("M-1002", max_bytes=max_bytes, now=now.timestamp() + 5)
        click.echo(result["prompt"], nl=False)
        click.echo(
            f"\n[{result['total_bytes']} of {max_bytes} bytes used; "
            f"{len(result['omitted'])} attachment(s) omitted]"
        )
        for item in result["omitted"]:
            click.echo(f"  omitted {item['hash'][:12]} from {item['source']}: {item['reason']}")
        if keep:
            click.echo(f"\nrepository kept at {root} (try: git -C {root} hydrate show M-1002)")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
