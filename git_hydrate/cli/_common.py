"""Helpers shared by the command modules: opening the ledger, rendering output."""

from __future__ import annotations

import functools
import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import click

from ..console import byte_size, is_terminal, shown, shown_block, token_count, write_whole
from ..model import STATIONS
from ..settings import ENCODINGS, PROMPT_FORMATS, default_help
from ..validate import MAX_TTL

if TYPE_CHECKING:
    from ..ledger import Ledger

__all__ = [
    "BUDGET_OPTIONS",
    "STATION_CHOICE",
    "ByteSize",
    "Count",
    "Duration",
    "IsoTime",
    "TokenCount",
    "allow_secrets_option",
    "budget_options",
    "colour",
    "compact",
    "compact_option",
    "complete_remotes",
    "complete_task_ids",
    "echo_json",
    "few_collections",
    "format_option",
    "json_option",
    "label",
    "new_task_id_argument",
    "no_empty_path",
    "open_ledger",
    "optional_task_id_argument",
    "quiet_option",
    "quiet_or_verbose",
    "short",
    "shown",
    "shown_block",
    "summarise",
    "task_id_argument",
    "warn",
    "warn_stray_refs",
]

F = TypeVar("F", bound=Callable[..., Any])

#: A station given on the command line: a bad one is a usage error (exit 2)
#: that lists the valid ones, like a bad ``--kind``.
STATION_CHOICE: Final = click.Choice(list(STATIONS))


@contextmanager
def few_collections() -> Iterator[None]:
    """No cyclic garbage collection while a command handles tens of thousands of
    files at once: what it builds is not cyclic garbage, yet each of its many
    allocations counts towards a collection that visits every object (a quarter of
    a new task's CPU on a 30,000-file tree, measured in benchmarks/RESULTS.md, issue
    33). Collection resumes after, as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextmanager
def open_ledger(ctx: click.Context) -> Iterator[Ledger]:
    """The ledger of the repository the command runs in (``-C`` honoured)."""
    from ..ledger import Ledger

    root = ctx.find_root()
    directory = (root.obj or {}).get("directory")
    with Ledger(directory) as ledger:
        yield ledger


def working_directory(ctx: click.Context) -> str:
    """The directory the command runs in, as an absolute path (``-C``'s, if given):
    where paths the user typed are relative to."""
    import os

    directory = (ctx.find_root().obj or {}).get("directory")
    return os.path.abspath(directory) if directory else os.getcwd()


def compact(ctx: click.Context) -> bool:
    """Whether the global ``--compact`` flag was given."""
    return bool((ctx.find_root().obj or {}).get("compact"))


def echo_json(ctx: click.Context, data: Any) -> None:
    """Print ``data`` as JSON (indented, or one line with ``--compact``)."""
    from ..codec import format_output

    terminal = is_terminal(sys.stdout)
    write_out(format_output(data, compact=compact(ctx), terminal=terminal) + "\n")


def write_out(text: str) -> None:
    """``text`` on standard output, written whole or not at all: through its file
    descriptor, a write at a time, when it has one. (Python's buffered writer hands
    a large text to one write, and when the reader goes away while that write waits
    it keeps the part the pipe took and drops the rest without a word: a reader
    that left in the middle of ``pack | head`` was never seen. A short write here
    is followed by another, which raises ``BrokenPipeError``.)"""
    stream = sys.stdout
    try:
        fd = stream.fileno()
        data = text.encode(stream.encoding or "utf-8", stream.errors or "strict")
    except (AttributeError, OSError, ValueError, LookupError):
        click.echo(text, nl=False)  # (a test runner's stream, or text it cannot encode)
        return
    stream.flush()
    write_whole(fd, data)


def _set_compact(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        root = ctx.find_root()
        root.ensure_object(dict)
        root.obj["compact"] = True
    return value


def compact_option(func: F) -> F:
    """``--compact`` after the command name too (the same as before it)."""
    return click.option(
        "--compact",
        is_flag=True,
        expose_value=False,
        callback=_set_compact,
        help="Print JSON on one line.",
    )(func)


def json_option(func: F) -> F:
    """The ``--json`` flag (and ``--compact``) of commands that print data. Where the
    output is JSON anyway (pack, expand), ``--json`` is accepted and changes nothing."""
    func = compact_option(func)
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(
        func
    )


def quiet_option(func: F) -> F:
    """``-q``/``--quiet``, as git's: print nothing when all went well; errors,
    refusals and warnings still go to stderr, and ``--json`` prints as it does."""
    return click.option(
        "-q", "--quiet", is_flag=True, help="Print nothing unless something is wrong."
    )(func)


def quiet_or_verbose(quiet: bool, verbose: bool) -> None:
    """Refuse ``-q`` with ``-v``: nothing said, and everything listed, at once."""
    if quiet and verbose:
        raise click.UsageError("give -q or -v, not both")


def summarise(line: str, quiet: bool) -> None:
    """A command's summary line on stderr; with ``-q``, only when it is a warning."""
    if not quiet or line.startswith("warning:"):
        click.echo(line, err=True)


class ByteSize(click.ParamType):  # type: ignore[type-arg]
    """A positive number of bytes, with git's ``k``/``m``/``g`` suffixes (``8k``),
    optionally followed by ``b`` or ``ib`` (``64KiB``): 1024-based, as in git."""

    name = "BYTES"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        try:
            return byte_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class TokenCount(click.ParamType):  # type: ignore[type-arg]
    """A number of tokens, with git's ``k``/``m``/``g`` suffixes (``16k``), from
    ``least`` (1 unless a count may be none) to ``most``: every token count the
    command line takes is read as ``--max-tokens`` is."""

    name = "TOKENS"

    def __init__(self, least: int = 1, most: int = 2**63 - 1) -> None:
        self.least, self.most = least, most

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        try:
            return token_count(str(value), self.least, self.most)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Count(click.IntRange):
    """A whole number that is no size (a priority, a port, a limit), from ``least``
    to ``most``, shown in help as click shows a range; what is not one is said in
    one plain line (click's own words name its type: "is not a valid integer range")."""

    #: Help names the value ``N`` (click's ``INTEGER RANGE`` named the type).
    name = "n"

    def __init__(self, least: int | None = None, most: int | None = None) -> None:
        super().__init__(least, most)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        digits = text[1:] if text[:1] in "+-" else text
        if not (digits.isascii() and digits.isdigit()):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        low, high = self.min, self.max
        shown = repr(text) if len(text) <= 40 else f"a number of {len(digits):,} digits"
        if len(digits.lstrip("0")) > 30:  # (past every range here; int() refuses 4,301)
            number = -(10**31) if text[:1] == "-" else 10**31
        else:
            number = int(text)
        value = shown
        if (low is not None and number < low) or (high is not None and number > high):
            if low is not None and high is not None:
                self.fail(f"{value} is not from {low} to {high}", param, ctx)
            self.fail(f"{value} must be at least {low}" if low is not None
                      else f"{value} must be at most {high}", param, ctx)  # fmt: skip
        return number


_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class Duration(click.ParamType):  # type: ignore[type-arg]
    """A time to live: seconds, or a number with ``s``, ``m``, ``h``, ``d`` or ``w``."""

    name = "DURATION"

    def __init__(self, zero: bool = False) -> None:
        #: Whether 0 is a duration (``doctor --older-than 0``: any age), else refused.
        self.zero = zero

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int | float):
            return float(value)
        text = str(value).strip().lower()
        unit = _UNITS.get(text[-1:], 0)
        try:
            seconds = float(text[:-1] if unit else text) * (unit or 1)
        except ValueError:
            self.fail(f"{value!r} is not a duration (such as 90, 90s, 30m, 12h, 7d)", param, ctx)
        if not (seconds >= 0 if self.zero else seconds > 0):
            least = "at least zero" if self.zero else "more than zero"
            self.fail(f"{value!r} must be {least}", param, ctx)
        if not seconds <= MAX_TTL:  # (nan and inf too)
            self.fail(f"{value!r} is more than 100 years", param, ctx)
        return seconds


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


def no_empty_path(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """A path option's callback: an empty value names no file (``-o ''`` said only
    "No such file or directory", after building the prompt)."""
    if value == "":
        raise click.BadParameter("an empty path names no file")
    return value


def allow_secrets_option(what: str) -> Callable[[F], F]:
    """``--allow-secrets``: store ``what`` even if it looks like it holds a credential."""
    return click.option(
        "--allow-secrets",
        is_flag=True,
        default=None,
        help=f"Store {what} even if it looks like it contains a credential.",
    )


#: The options :func:`budget_options` gathers into one budget request.
BUDGET_OPTIONS: Final = ("max_bytes", "max_tokens", "encoding", "outline", "format")


def budget_options(func: F) -> F:
    """``--max-bytes``, ``--max-tokens``, ``--encoding``, ``--outline`` and ``--now``,
    shared by the packing commands.

    The command receives the budget options given as one mapping, ``budget``
    (for :meth:`git_hydrate.Ledger.budget`, which fills in the rest from the
    settings), and ``now``: a new budget option is added here and in
    :class:`git_hydrate.pack.budget.Budget`, not to every command.
    """

    @functools.wraps(func)
    def gathered(*args: Any, **kwargs: Any) -> Any:
        # (--format only where a prompt is printed: see format_option)
        kwargs["budget"] = {name: kwargs.pop(name, None) for name in BUDGET_OPTIONS}
        return func(*args, **kwargs)

    command = cast(F, gathered)
    command = click.option(
        "--outline/--no-outline",
        default=None,
        help="Keep the outline of an attachment that no longer fits in full, when the "
        f"outline fits (default: {default_help('hydrate.outline')}).",
    )(command)
    command = click.option(
        "--encoding",
        type=click.Choice(ENCODINGS),
        default=None,
        help=f"The token encoding of --max-tokens (default: {default_help('hydrate.encoding')}).",
    )(command)
    command = click.option(
        "--max-tokens",
        type=TokenCount(),  # as git reads hydrate.maxTokens
        default=None,
        help="A token budget, counted exactly (16k = 16,384); with --max-bytes both apply "
        f"(default: {default_help('hydrate.maxTokens')}). Needs git-hydrate[tokens].",
    )(command)
    command = click.option(
        "--now",
        type=IsoTime(),
        default=None,
        help="Judge expiry at this moment instead of the current time.",
    )(command)
    return click.option(
        "--max-bytes",
        type=ByteSize(),
        default=None,
        help="The byte budget, in decimal; 64k, 64KB and 64KiB are all 65,536 bytes "
        f"(default: {default_help('hydrate.maxBytes')}).",
    )(command)


def format_option(func: F) -> F:
    """``--format``, for the commands that print a prompt (above :func:`budget_options`,
    which gathers it into the budget)."""
    return click.option(
        "--format",
        "format",
        type=click.Choice(PROMPT_FORMATS),
        default=None,
        help="How the untrusted block holds each attachment: seed (the seed's layout; a "
        "line that could read as structure gets a backslash), markdown (each body "
        "unchanged in a fence nothing in it can close) or xml (<documents>, each body "
        f"escaped). The budget measures the prompt in this format "
        f"(default: {default_help('hydrate.promptFormat')}).",
    )(func)


def short(digest: str) -> str:
    """The 12-digit abbreviation of a sha256 used in human output."""
    return digest[:12]


def warn_stray_refs(ledger: Ledger) -> None:
    """Say on stderr which refs under refs/hydrate/tasks/ a listing left out."""
    for ref in ledger.stray_task_refs():
        warn(f"ignoring {shown(ref)}: not a valid task id; see: git hydrate doctor")


def warn_damaged(task_ids: Sequence[str]) -> None:
    """Say on stderr that damaged tasks were left out, and where to look."""
    if task_ids:
        named = ", ".join(shown(t) for t in task_ids[:3]) + (", ..." if len(task_ids) > 3 else "")
        warn(f"left out {len(task_ids)} damaged task(s) ({named}); see: git hydrate doctor")


# -- colour ----------------------------------------------------------------------


def colour(stream: Any = None) -> bool:
    """Whether to colour what goes to ``stream`` (stderr by default): a terminal only,
    and never when ``NO_COLOR`` is set or ``TERM`` is ``dumb`` (https://no-color.org)."""
    import os
    import sys

    target = sys.stderr if stream is None else stream
    try:
        tty = target.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def label(word: str, fg: str) -> str:
    """``word:`` in colour on a terminal, plain otherwise."""
    return click.style(f"{word}:", fg=fg, bold=True) if colour() else f"{word}:"


def warn(message: str) -> None:
    """A warning line on stderr (``warning:`` in yellow on a terminal)."""
    click.echo(f"{label('warning', 'yellow')} {message}", err=True)


# -- shell completion --------------------------------------------------------------


def _ledger_for_completion(ctx: click.Context) -> Ledger | None:
    from ..errors import HydrateError
    from ..ledger import Ledger

    try:
        return Ledger((ctx.find_root().params or {}).get("directory"))
    except HydrateError:
        return None


def complete_task_ids(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Task ids for shell completion (live ones; none outside a repository)."""
    from click.shell_completion import CompletionItem

    ledger = _ledger_for_completion(ctx)
    if ledger is None:
        return []
    with ledger:
        return [CompletionItem(t) for t in ledger.task_ids() if t.startswith(incomplete)]


def complete_remotes(
    ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """The repository's remotes for shell completion."""
    from click.shell_completion import CompletionItem

    ledger = _ledger_for_completion(ctx)
    if ledger is None:
        return []
    with ledger:
        return [CompletionItem(r) for r in ledger.repo.remotes() if r.startswith(incomplete)]


def _current_flag(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta["git_hydrate_current"] = True
    return value


def _task_id(
    ctx: click.Context, param: click.Parameter, value: str | None, *, new: bool = False
) -> str | None:
    """The ID given, or for ``@`` / ``--current`` the work tree's current task
    (``new``: the id the branch names, for the task to create)."""
    wanted = bool(ctx.meta.get("git_hydrate_current"))
    if wanted and value is not None:
        raise click.UsageError("give ID or --current, not both", ctx)
    if value is None:
        if not wanted:
            raise click.MissingParameter(ctx=ctx, param=param)
        value = "@"
    if value != "@" or ctx.resilient_parsing:
        return value
    from ..ledger import Ledger

    with Ledger((ctx.find_root().obj or {}).get("directory")) as ledger:
        return ledger.resolve_id(value, new=new)


def _optional_task_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """:func:`_task_id`, or ``None`` when neither ID nor ``--current`` is given."""
    if value is None and not ctx.meta.get("git_hydrate_current"):
        return None
    return _task_id(ctx, param, value)


def optional_task_id_argument(func: F) -> F:
    """:func:`task_id_argument` for a command whose ``ID`` may be left out (``[ID]``)."""
    return task_id_argument(func, optional=True)


def new_task_id_argument(func: F) -> F:
    """:func:`task_id_argument` for the task to create: ``@`` is the id the branch names."""
    return task_id_argument(func, new=True)


def task_id_argument(func: F, *, optional: bool = False, new: bool = False) -> F:
    """The ``ID`` argument, completed from the live task ids; ``@`` (or ``--current``)
    is the work tree's current task, or with ``new`` the id the branch names."""
    callback = _optional_task_id if optional else functools.partial(_task_id, new=new)
    func = click.argument(
        "task_id", metavar="[ID]" if optional else "ID", required=False,
        callback=callback,
        shell_complete=complete_task_ids,
    )(func)  # fmt: skip
    return click.option(
        "--current",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_current_flag,
        help=(
            "The task the branch is named after instead of ID (as ID @ is)."
            if new
            else "The work tree's current task instead of ID (as ID @ is)."
        ),
    )(func)
