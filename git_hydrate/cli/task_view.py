"""What ``show`` prints of a task beside its fields: its parts, its latest
checkpoint, its attachments, and a long list's first items with how many more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click

from ..results import shown_items
from ._common import short, shown, shown_block

__all__ = [
    "joined",
    "print_children",
    "print_context",
    "print_latest_checkpoint",
    "station_shown",
]


def station_shown(task: Mapping[str, Any]) -> str:
    """The station of a list row, with its holder: ``in_progress (NAME)``."""
    holder = task.get("assignee")
    return shown(task["status"]) + (f" ({shown(holder)})" if holder else "")


def joined(items: Sequence[str]) -> str:
    """``items`` on one line, the first :data:`~git_hydrate.results.SHOWN_ITEMS`
    of them, then how many more (``show --json`` lists them all)."""
    first, more = shown_items(items)
    return ", ".join(map(shown, first)) + _more(more)


def _more(count: int) -> str:
    return f" ... and {count:,} more (show --json for all)" if count else ""


def print_children(children: list[Mapping[str, Any]]) -> None:
    """A parent's children and their progress: ``2 of 3 done``; the first
    :data:`~git_hydrate.results.SHOWN_ITEMS` of them, then how many more."""
    done = sum(1 for child in children if child.get("status") == "done")
    click.echo(f"\nChildren ({done} of {len(children)} done):")
    first, more = shown_items(children)
    for child in first:
        if "error" in child:
            continue
        click.echo(f"  {shown(child['task_id'])}\t{station_shown(child)}\t{shown(child['title'])}")
    if more:
        click.echo(" " + _more(more))


def print_latest_checkpoint(checkpoints: Sequence[Mapping[str, Any]]) -> None:
    """The last of a task's checkpoints, as ``show`` prints it (nothing if none)."""
    if checkpoints:
        latest = checkpoints[-1]
        click.echo(
            f"\nLatest checkpoint (#{len(checkpoints)}, {latest['tokens']} tokens, "
            f"{latest['at']}, {latest['author']}):"
        )
        for label, key in (
            ("Summary", "summary"),
            ("Evidence", "evidence"),
            ("Next step", "next_step"),
        ):
            if latest[key]:
                text = shown_block(str(latest[key])).replace("\n", "\n    ")
                click.echo(f"  {label}: {text}")


def print_context(entries: Sequence[Mapping[str, Any]]) -> None:
    """A task's attachments in packing order, one line each (nothing if none)."""
    if entries:
        click.echo("\nContext (packing order):")
        for entry in entries:
            expiry = f", expires {entry['expires']}" if entry["expires"] else ""
            why = f"  ({shown(entry['reason'])})" if entry.get("reason") else ""
            click.echo(
                f"  {short(entry['hash'])}  p{entry['priority']}  {entry['size']} B"
                f"  {shown(entry['source'])}{expiry}{why}"
            )
