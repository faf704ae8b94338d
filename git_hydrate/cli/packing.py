"""pack, expand, prompt."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import click

from ..console import Deferred, refreshed_line, summary_line, thousands

if TYPE_CHECKING:
    from ..pack.prompt_cache import Entry

from ._common import (
    BUDGET_OPTIONS,
    budget_options,
    echo_json,
    format_option,
    json_option,
    no_empty_path,
    open_ledger,
    quiet_option,
    quiet_or_verbose,
    short,
    shown,
    summarise,
    task_id_argument,
)

__all__ = [
    "LISTED_ON_A_TERMINAL",
    "expand",
    "listing",
    "pack",
    "prompt",
    "refreshed_line",
]

#: How many omitted or shrunk attachments ``-v`` lists on a terminal (``-vv``: all).
LISTED_ON_A_TERMINAL = 20


@click.command("pack", short_help="Pack the task ID into a JSON packet within the budget.")
@task_id_argument
@budget_options
@json_option
@click.pass_context
def pack(
    ctx: click.Context,
    task_id: str,
    budget: dict[str, Any],
    now: datetime | None,
    as_json: bool,
) -> None:
    """Pack the task ID into a JSON packet whose compact encoding fits --max-bytes.

    Prints {packet, packet_bytes, max_bytes, token_estimate, token_count, note,
    omitted}. Attachments that expired or did not fit are listed in omitted.
    With --max-tokens the packet's tokens are bounded too, and token_count is
    exact (plus max_tokens, token_encoding); with --outline, attachments kept
    as their outlines are listed in shrunk. flagged, when present, lists the
    files the task names (files in play, named tests) that the packet does
    not hold whole or that have no attachment at all.

    \b
    Example:
      git hydrate --compact pack M-6001 --max-bytes 3500 | jq .omitted
    """
    with open_ledger(ctx) as ledger:
        result = ledger.pack(task_id, now=now, budget=ledger.budget(**budget))
    echo_json(ctx, result)


@click.command("expand", short_help="Pack the task ID into a packet and a prompt, together.")
@task_id_argument
@format_option
@budget_options
@json_option
@click.pass_context
def expand(
    ctx: click.Context,
    task_id: str,
    budget: dict[str, Any],
    now: datetime | None,
    as_json: bool,
) -> None:
    """Pack the task ID into a packet and a prompt that fit --max-bytes together.

    Prints {packet, prompt, packet_bytes, prompt_bytes, total_bytes, max_bytes,
    token_estimate, note, omitted}. --max-tokens bounds the tokens of packet
    and prompt together (adds token_count, packet_tokens, total_tokens,
    max_tokens, token_encoding); --outline adds shrunk; flagged lists the
    files the task names that are not held whole or not attached.

    \b
    Example:
      git hydrate expand M-1002 --max-bytes 20000
    """
    with open_ledger(ctx) as ledger:
        result = ledger.expand(task_id, now=now, budget=ledger.budget(**budget))
    echo_json(ctx, result)


@click.command("prompt", short_help="Print the prompt of the task ID, within the budget.")
@task_id_argument
@format_option
@budget_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    default=None,
    callback=no_empty_path,
    help="Write the prompt to this file instead of standard output (opened only once "
    "the prompt is built: a prompt that fails leaves the file as it was). Without -o, "
    "standard output gets the prompt's exact bytes; a terminal shows control characters "
    "other than line feed and tab as \\xNN, \\uNNNN or \\UNNNNNNNN.",
)
@click.option(
    "-v",
    "--verbose",
    "--omitted",
    "verbose",
    count=True,
    help="After the summary, list what was omitted or shrunk (the first "
    f"{LISTED_ON_A_TERMINAL} on a terminal; -vv: all).",
)
@click.option(
    "--refresh",
    is_flag=True,
    help="First take every add-tree run the task recorded again (one process); an "
    "unchanged commit is recognised without listing a file.",
)
@click.option(
    "--no-cache",
    "no_cache",
    is_flag=True,
    help="Build the prompt again even if the prompt cache holds it (hydrate.promptCache).",
)
@click.option(
    "--packet-sha256",
    "packet_sha256",
    is_flag=True,
    help="Print, instead of the prompt, the sha256 of the packet it is rendered from (in "
    "compact JSON): what the commit trailer Hydrate-Packet records.",
)
@quiet_option
@click.pass_context
def prompt(
    ctx: click.Context,
    task_id: str,
    budget: dict[str, Any],
    now: datetime | None,
    output: str | None,
    verbose: int,
    refresh: bool,
    no_cache: bool,
    packet_sha256: bool,
    quiet: bool,
) -> None:
    """Print the prompt of the task ID alone; its own UTF-8 bytes fit --max-bytes.

    The prompt is measured by itself (expand measures packet and prompt together). A prompt built
    before for the same task tip, budget and expired attachments comes from the prompt cache,
    byte for byte (hydrate.promptCache; --no-cache builds it again). --refresh first takes the
    task's add-tree runs again (no budget is recorded: this command's applies). One summary line
    goes to stderr: attachments kept, bytes (and tokens) used of the budget, omitted by reason,
    shrunk, and the budget that would hold everything, then each file in play or named test not
    held whole or not attached at all (with add-tree's reason), and each secret add-tree withheld
    that ranked high; -v lists the omitted and shrunk attachments and the files the task names
    that have none. The prompt names them too, in its own ### Not included part, with the command
    that lists them all: this one with the options that build this very prompt again (git hydrate
    prompt ID --max-bytes 16000 --format markdown -v). A file over a quarter of the room, in
    bytes or in tokens, that would leave out two or more after it waits for them, as its outline
    (never one the task names; -v says why). With -q, the summary line only when it is a warning.

    \b
    Examples:
      git hydrate prompt M-1002 --max-bytes 20000 -o M-1002.prompt.md
      git hydrate prompt M-1002 --max-tokens 32000 --outline -v
      git hydrate prompt M-1002 --refresh -o M-1002.prompt.md
    """
    quiet_or_verbose(quiet, bool(verbose))
    if packet_sha256:
        _print_packet_sha256(ctx, task_id, budget, now, (output, verbose, refresh))
        return
    budget_args = tuple(budget[name] for name in BUDGET_OPTIONS)
    # (after --refresh the ledger is open already: its own cache lookup serves)
    fast = not (no_cache or verbose or refresh)
    hit = _cached_prompt(ctx, task_id, now, budget_args) if fast else None
    if hit is not None:
        with hit, Deferred(output) as out:
            out.copy_from(hit.file, hit.offset, hit.prompt_bytes)
        summarise(summary_line(task_id, hit.fields), quiet)
        return
    with open_ledger(ctx) as ledger:
        for done in ledger.refresh(task_id) if refresh else ():
            summarise(refreshed_line(task_id, done), quiet)
        with Deferred(output) as out:
            limits = ledger.budget(**budget)
            result = ledger.write_prompt(task_id, out, now=now, cache=not no_cache, budget=limits)
        # why each attachment packs where it does (ranking's reasons), for -v
        why = {e["hash"]: e["reason"] for e in ledger.context_entries(task_id)} if verbose else {}
    summarise(summary_line(task_id, result), quiet)
    if verbose:
        limit = None if verbose > 1 or not _stderr_is_a_terminal() else LISTED_ON_A_TERMINAL
        for line in listing(result, limit, why):
            click.echo(line, err=True)


def _print_packet_sha256(
    ctx: click.Context,
    task_id: str,
    budget: dict[str, Any],
    now: datetime | None,
    others: tuple[str | None, int, bool],
) -> None:
    """``prompt --packet-sha256``: the sha256 the commit trailer records, for this budget."""
    if any(others):
        raise click.UsageError("--packet-sha256 goes without -o, -v and --refresh")
    from ..hooks.trailer import packet_sha256

    with open_ledger(ctx) as ledger:
        click.echo(packet_sha256(ledger, task_id, ledger.budget(**budget), now))


def _cached_prompt(
    ctx: click.Context, task_id: str, now: datetime | None, budget_args: tuple[Any, ...]
) -> Entry | None:
    """The prompt's entry in the prompt cache, found without importing the packer (or
    ``None``: then the ledger builds it, and says what is wrong if anything is), by
    :func:`git_hydrate.pack.prompt_cache.lookup`, the one lookup of a hit."""
    from ..errors import HydrateError
    from ..pack.prompt_cache import lookup

    directory = (ctx.find_root().obj or {}).get("directory")
    try:
        # (--now is aware: IsoTime gives a value without a zone UTC's)
        return lookup(directory, task_id, budget_args, None if now is None else now.timestamp())
    except (HydrateError, OSError):
        return None


def _stderr_is_a_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def listing(
    result: Mapping[str, Any], limit: int | None = None, why: Mapping[str, str] | None = None
) -> list[str]:
    """One line per omitted or shrunk attachment, then per file the task names that
    has no attachment (the first ``limit``, then a count);
    ``why`` adds the reason ranking placed each one where it is."""
    why = why or {}
    lines = [
        f"  omitted {short(item['hash'])} {shown(item['source'])} ({item['reason']}"
        + (f"; ranked: {why[item['hash']]})" if why.get(item["hash"]) else ")")
        for item in result["omitted"]
    ]
    lines += [
        f"  shrunk  {short(item['hash'])} {shown(item['source'])} "
        f"(outline {short(item['outline_hash'])}, {thousands(item['bytes_saved'])} bytes saved)"
        for item in result.get("shrunk") or []
    ]
    lines += [
        f"  unattached {item['named']} {shown(item['source'])} "
        f"({item.get('reason') or 'not read by add-tree'})"
        for item in result.get("flagged") or []
        if item["kept"] == "unattached"
    ]
    if limit is not None and len(lines) > limit:
        rest = len(lines) - limit
        lines = [*lines[:limit], f"  ... and {rest} more (-vv lists all)"]
    # how value per byte placed a large attachment (see docs/packing.md)
    lines += [f"  {shown(line)}" for line in result.get("decisions") or ()]
    return lines
