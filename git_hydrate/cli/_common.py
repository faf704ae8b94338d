"""Helpers shared by the command modules: opening the ledger, rendering output."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

import click

from ..model import STATIONS
from ..settings import default_help

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = [
    "STATION_CHOICE",
    "IsoTime",
    "allow_secrets_option",
    "budget_options",
    "compact",
    "echo_json",
    "json_option",
    "open_ledger",
    "short",
    "shown",
    "shown_block",
    "warn_stray_refs",
]

F = TypeVar("F", bound=Callable[..., Any])

#: A station given on the command line: a bad one is a usage error (exit 2)
#: that lists the valid ones, like a bad ``--kind``.
STATION_CHOICE: Final = click.Choice(list(STATIONS))


@contextmanager
def open_ledger(ctx: click.Context) -> Iterator[Ledger]:
    """The ledger of the repository the command runs in (``-C`` honoured)."""
    from ..ledger import Ledger

    root = ctx.find_root()
    directory = (root.obj or {}).get("directory")
    with Ledger(directory) as ledger:
        yield ledger


def compact(ctx: click.Context) -> bool:
    """Whether the global ``--compact`` flag was given."""
    return bool((ctx.find_root().obj or {}).get("compact"))


def echo_json(ctx: click.Context, data: Any) -> None:
    """Print ``data`` as JSON (indented, or one line with ``--compact``)."""
    from ..codec import format_output

    click.echo(format_output(data, compact=compact(ctx)))


def json_option(func: F) -> F:
    """The ``--json`` flag of commands whose default output is for people."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(
        func
    )


class IsoTime(click.ParamType):  # type: ignore[type-arg]
    """An ISO 8601 moment; a value without a zone is taken as UTC."""

    name = "ISO8601"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        try:
            moment = datetime.fromisoformat(str(value).strip())
        except ValueError:
            self.fail(f"{value!r} is not an ISO 8601 date and time", param, ctx)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment


def allow_secrets_option(what: str) -> Callable[[F], F]:
    """``--allow-secrets``: store ``what`` even if it looks like it holds a credential."""
    return click.option(
        "--allow-secrets",
        is_flag=True,
        default=None,
        help=f"Store {what} even if it looks like it contains a credential.",
    )


def budget_options(func: F) -> F:
    """``--max-bytes`` and ``--now``, shared by the packing commands."""
    func = click.option(
        "--now",
        type=IsoTime(),
        default=None,
        help="Judge expiry at this moment instead of the current time.",
    )(func)
    func = click.option(
        "--max-bytes",
        type=click.IntRange(min=1),
        default=None,
        help=f"The byte budget (default: {default_help('hydrate.maxBytes')}).",
    )(func)
    return func


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(value: Any) -> str:
    """A one-line field (title, id, source label, station...) safe for a terminal.

    Fields can come from a remote: a control character (ESC starting a CSI or
    OSC sequence, another C0 or C1 control, DEL, a bidi or zero-width
    character) would reach the user's terminal and could rewrite what it
    shows. Every character that is not printable is escaped as ``\\xNN`` or
    ``\\uNNNN``; JSON output never goes through here.
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escaped(ch) for ch in text)


def shown_block(value: Any) -> str:
    """Like :func:`shown`, for a text of several lines: line feeds and tabs are kept."""
    text = str(value)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in " \n\t" else _escaped(ch) for ch in text)


def short(digest: str) -> str:
    """The 12-digit abbreviation of a sha256 used in human output."""
    return digest[:12]


def warn_stray_refs(ledger: Ledger) -> None:
    """Say on stderr which refs under refs/hydrate/tasks/ a listing left out."""
    for ref in ledger.stray_task_refs():
        click.echo(
            f"warning: ignoring {shown(ref)}: not a valid task id; see: git hydrate doctor",
            err=True,
        )
