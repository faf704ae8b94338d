"""search: find tasks by their words."""

from __future__ import annotations

import click

from ._common import Count, echo_json, json_option, open_ledger, shown, warn, warn_damaged

__all__ = ["search"]


@click.command("search", short_help="Find the tasks whose words match QUERY, best first.")
@click.argument("query", nargs=-1, required=True)
@click.option("--archived", is_flag=True, help="Search the archived tasks too.")
@click.option(
    "--attachments", is_flag=True, help="Search the attached bodies too (read once, then kept)."
)
@click.option("--limit", type=Count(1), default=20, show_default=True, help="At most N hits.")
@json_option
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    archived: bool,
    attachments: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Find the tasks whose words match QUERY, best first, each with the line
    that matched.

    Title, objective, acceptance, criteria, tags, files in play, tests and
    checkpoints are searched (with --attachments, the bodies too); words
    written in camelCase or snake_case match their parts, a plural matches its
    word (timestamp finds timestamps; -ing and -ed forms as far as the light
    stemmer takes them: caching finds cached, not cache), and a word with
    accents is found without them (cafe finds café). A damaged task (see doctor)
    is left out with a warning that names it, and so is an attachment over 1 MiB.

    \b
    Examples:
      git hydrate search retry header
      git hydrate search --archived --attachments "rate limit" --json
    """
    damaged: list[str] = []
    too_large: list[tuple[str, str]] = []
    with open_ledger(ctx) as ledger:
        hits = ledger.search(
            " ".join(query),
            archived=archived,
            attachments=attachments,
            limit=limit,
            damaged=damaged,
            too_large=too_large,
        )
    warn_damaged(damaged)
    if too_large:
        named = ", ".join(f"{shown(t)} {shown(s)}" for t, s in too_large[:3])
        many = f"{len(too_large)} attachments" if len(too_large) > 1 else "1 attachment"
        warn(f"{many} over 1 MiB not searched: {named}" + (", ..." if len(too_large) > 3 else ""))
    if as_json:
        echo_json(ctx, hits)
        return
    if not hits:
        asked = " ".join(query)
        asked = asked if len(asked) <= 80 else asked[:77] + "..."
        click.echo(f"no task matches {shown(asked)}", err=True)
        return
    for hit in hits:
        archived_mark = " (archived)" if hit["archived"] else ""
        click.echo(
            f"{shown(hit['task_id'])}\t{shown(hit['status'])}{archived_mark}"
            f"\t{shown(hit['title'])}"
        )
        click.echo(f"    {shown(hit['field'])}: {shown(hit['snippet'])}")
