"""pack, expand, prompt."""

from __future__ import annotations

import sys
from datetime import datetime

import click

from ._common import budget_options, echo_json, open_ledger, short, shown

__all__ = ["expand", "pack", "prompt"]


@click.command("pack")
@click.argument("task_id", metavar="ID")
@budget_options
@click.pass_context
def pack(ctx: click.Context, task_id: str, max_bytes: int | None, now: datetime | None) -> None:
    """Pack the task ID into a JSON packet whose compact encoding fits --max-bytes.

    Prints {packet, packet_bytes, max_bytes, token_estimate, token_count, note,
    omitted}. Attachments that expired or did not fit are listed in omitted.

    \b
    Example:
      git hydrate --compact pack M-6001 --max-bytes 3500 | jq .omitted
    """
    with open_ledger(ctx) as ledger:
        result = ledger.pack(task_id, max_bytes=max_bytes, now=now)
    echo_json(ctx, result)


@click.command("expand")
@click.argument("task_id", metavar="ID")
@budget_options
@click.pass_context
def expand(ctx: click.Context, task_id: str, max_bytes: int | None, now: datetime | None) -> None:
    """Pack the task ID into a packet and a prompt that fit --max-bytes together.

    Prints {packet, prompt, packet_bytes, prompt_bytes, total_bytes, max_bytes,
    token_estimate, note, omitted}.

    \b
    Example:
      git hydrate expand M-1002 --max-bytes 20000
    """
    with open_ledger(ctx) as ledger:
        result = ledger.expand(task_id, max_bytes=max_bytes, now=now)
    echo_json(ctx, result)


@click.command("prompt")
@click.argument("task_id", metavar="ID")
@budget_options
@click.pass_context
def prompt(ctx: click.Context, task_id: str, max_bytes: int | None, now: datetime | None) -> None:
    """Print the prompt of the task ID alone (as expand measures it), for a model.

    Omitted attachments are reported on stderr in one warning line.

    \b
    Example:
      git hydrate prompt M-1002 --max-bytes 20000 > M-1002.prompt.md
    """
    with open_ledger(ctx) as ledger:
        result = ledger.expand(task_id, max_bytes=max_bytes, now=now)
    # Bytes straight to stdout: click.echo would scan megabytes for ANSI codes.
    sys.stdout.flush()
    sys.stdout.buffer.write(result["prompt"].encode("utf-8"))
    sys.stdout.buffer.flush()
    omitted = result["omitted"]
    if omitted:
        listed = ", ".join(
            f"{short(item['hash'])} ({shown(item['source'])}, {shown(item['reason'])})"
            for item in omitted
        )
        click.echo(
            f"warning: {len(omitted)} attachment(s) of {shown(task_id)} omitted: {listed}",
            err=True,
        )
