"""The command line's entry point: a prompt-cache hit first, then the full CLI.

(``pull``, ``push`` and ``sync`` are run without click too, by :func:`run_sharing`:
see :mod:`git_hydrate.quicksync`.)

``git hydrate prompt ID`` run again for an unchanged task is a copy of a file
the prompt cache holds. Importing click, msgspec and the rest of the package
would cost that copy several times over, so :func:`main` first tries
:func:`serve_hit`, which takes only this exact grammar::

    [-C PATH] [--compact] prompt (ID | @ | --current) [--max-bytes N | --max-bytes=N]
        [--max-tokens N | --max-tokens=N] [--encoding E | --encoding=E]
        [--outline | --no-outline] [-o FILE | --output FILE | --output=FILE]
        [--refresh] [-q | --quiet]

(options of ``prompt`` in any order around ``ID``, each at most once;
``-C`` and ``--compact`` before ``prompt``, each at most once). It answers
only a hit it is sure of: the same lookup as ``prompt`` (:func:`lookup`:
the task's ref, the settings, the budget, the entry's header, owner and
window, and the prompt's CRC-32, checked whole before a byte is written),
the same option parsers, the same writer (:class:`Deferred`) and
summary line. Everything else goes to the full command line, untouched:
any other command, option or spelling (``-v``, ``--now``,
``--no-cache``, ``-h``, ``-oFILE``, ``--``, a repeated option), ``@`` or
``--current`` when no task was started in the work tree (the branch's name
may then name one), ``--refresh`` unless the refresh memo shows that every recorded
run would be recognised unchanged (:mod:`git_hydrate.pack.refresh_memo`), a value
it would not read exactly as click does,
``GIT_COMMITTER_DATE`` set (the clock is then git's), a miss, and any error
before the first byte is written. The full command line then behaves as it
always does.
"""

from __future__ import annotations

import os
import stat
import sys

from .console import (
    Deferred,
    byte_size,
    leave,
    os_error_line,
    refreshed_line,
    silence_stdout,
    summary_line,
    token_count,
)
from .errors import EXIT_BROKEN_PIPE, EXIT_FAILURE, EXIT_INTERRUPTED
from .ids import names_a_task
from .settings import ENCODINGS

TYPE_CHECKING = False  # typing costs a few ms to import: not at run time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import BinaryIO, Final

__all__ = ["Request", "main", "parse", "run_sharing", "serve_hit"]

#: The options of ``prompt`` that take a value, by each spelling.
_VALUED: Final = {
    "--max-bytes": "max_bytes",
    "--max-tokens": "max_tokens",
    "--encoding": "encoding",
    "-o": "output",
    "--output": "output",
}
_FLAGS: Final = {"--outline": True, "--no-outline": False}


class Request:
    """A ``prompt`` command the fast path understood, its values read as click reads them."""

    __slots__ = (
        "directory",
        "encoding",
        "max_bytes",
        "max_tokens",
        "outline",
        "output",
        "quiet",
        "refresh",
        "task_id",
    )

    def __init__(
        self,
        directory: str | None,
        task_id: str,
        max_bytes: int | None,
        max_tokens: int | None,
        encoding: str | None,
        outline: bool | None,
        output: str | None,
        refresh: bool = False,
        quiet: bool = False,
    ) -> None:
        self.directory = directory
        self.refresh = refresh
        #: ``-q``: say the summary line only when it is a warning.
        self.quiet = quiet
        self.task_id = task_id
        self.max_bytes = max_bytes
        self.max_tokens = max_tokens
        self.encoding = encoding
        self.outline = outline
        self.output = output

    @property
    def budget_args(self) -> tuple[int | None, int | None, str | None, bool | None]:
        """What :func:`git_hydrate.pack.budget.resolve_budget` takes after the settings."""
        return (self.max_bytes, self.max_tokens, self.encoding, self.outline)


def parse(args: Sequence[str]) -> Request | None:
    """``args`` (after the program name) as a :class:`Request`, or ``None`` when
    they are not exactly of the fast path's grammar, or a value is one click
    would refuse or might read differently."""
    before = _before_prompt(args)
    if before is None:
        return None
    directory, at = before
    options = _PromptOptions()
    if not options.read(args[at + 1 :]):
        return None
    task_id = options.task_id()
    if task_id is None:
        return None
    values = options.values
    try:
        return Request(
            directory,
            task_id,
            _max_bytes(values.get("max_bytes")),
            _max_tokens(values.get("max_tokens")),
            _encoding(values.get("encoding")),
            options.outline,
            _output(values.get("output")),
            options.refresh,
            options.quiet,
        )
    except ValueError:
        return None


def _before_prompt(args: Sequence[str]) -> tuple[str | None, int] | None:
    """``-C PATH`` and where ``prompt`` is in ``args``, or ``None`` when what comes
    before it is not ``[-C PATH] [--compact]`` (each at most once), there is no
    ``prompt``, or ``PATH`` is not a directory click would accept."""
    at, directory, seen = 0, None, set[str]()
    while at < len(args) and args[at] != "prompt":
        arg = args[at]
        if arg in seen:
            return None
        seen.add(arg)
        if arg == "-C" and at + 1 < len(args):
            directory = args[at + 1]
            at += 2
        elif arg == "--compact":
            at += 1
        else:
            return None
    if at == len(args) or (directory is not None and not _usable_directory(directory)):
        return None
    return directory, at


class _PromptOptions:
    """The arguments after ``prompt`` as they were given, not yet checked."""

    __slots__ = ("current", "given_id", "outline", "quiet", "refresh", "values")

    def __init__(self) -> None:
        self.given_id: str | None = None
        self.outline: bool | None = None
        self.refresh = self.current = self.quiet = False
        self.values: dict[str, str] = {}

    def read(self, rest: Sequence[str]) -> bool:
        """Take ``rest``; ``False`` at the first argument the grammar has no
        place for (an unknown or repeated option, a second ``ID``, no value)."""
        at = 0
        while at < len(rest):
            arg = rest[at]
            at += 1
            if arg == "-" or not arg.startswith("-"):
                if self.given_id is not None:
                    return False  # click: an unexpected extra argument
                self.given_id = arg
            elif arg in _FLAGS or arg in ("--refresh", "--current", "-q", "--quiet"):
                if not self._flag(arg):
                    return False
            else:
                taken = self._valued(arg, rest[at] if at < len(rest) else None)
                if taken is None:
                    return False
                at += taken
        return True

    def _flag(self, arg: str) -> bool:
        """Set the flag ``arg``; ``False`` when it (or its negation) was given already."""
        if arg in _FLAGS:
            if self.outline is not None:
                return False
            self.outline = _FLAGS[arg]
        elif arg == "--refresh":
            if self.refresh:
                return False
            self.refresh = True
        elif arg in ("-q", "--quiet"):
            if self.quiet:
                return False
            self.quiet = True
        else:
            if self.current:
                return False
            self.current = True
        return True

    def _valued(self, arg: str, following: str | None) -> int | None:
        """Keep the value of the option ``arg`` (``--name=value``, or ``following``
        whatever it looks like, as click takes it); how many more arguments that
        took, or ``None`` for an unknown or repeated option without its value."""
        name, equals, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        option = _VALUED.get(name)
        if option is None or option in self.values:
            return None
        if equals:
            self.values[option] = attached
            return 0
        if following is None:
            return None
        self.values[option] = following
        return 1

    def task_id(self) -> str | None:
        """The task asked for (``@`` for ``--current``), or ``None`` when none, both,
        or a name that is no task id (``@`` itself is resolved by the lookup)."""
        if self.current:
            if self.given_id is not None:
                return None  # click: give ID or --current, not both
            return "@"
        task_id = self.given_id
        if task_id is None:
            return None
        if task_id != "@" and not names_a_task(task_id.encode("utf-8", "surrogateescape")):
            return None
        return task_id


def _usable_directory(path: str) -> bool:
    """``-C PATH`` that click accepts (``click.Path(file_okay=False)``: readable,
    not a file) and that is a directory: anything else is for the full CLI to say."""
    return os.path.isdir(path) and os.access(path, os.R_OK)


def _max_bytes(value: str | None) -> int | None:
    return None if value is None else byte_size(value)


def _max_tokens(value: str | None) -> int | None:
    return None if value is None else token_count(value)


def _encoding(value: str | None) -> str | None:
    if value is not None and value not in ENCODINGS:  # click.Choice: exact names
        raise ValueError(value)
    return value


def _output(value: str | None) -> str | None:
    """``-o FILE`` as ``click.Path(dir_okay=False, writable=True, allow_dash=True)``
    accepts it; one click would refuse is not taken (nor an empty or unprintable
    name: click would show it differently in an error)."""
    if value is None or value == "-":
        return value
    if not value or not value.isprintable():
        raise ValueError(value)
    try:
        status = os.stat(value)
    except OSError:
        return value  # to be created: click checks nothing more
    if stat.S_ISDIR(status.st_mode) or not os.access(value, os.R_OK | os.W_OK):
        raise ValueError(value)
    return value


def serve_hit(args: Sequence[str]) -> int | None:
    """Print the prompt ``args`` ask for from the prompt cache, as ``git hydrate``
    would, and return the exit status; ``None`` (nothing written) when this is
    not a hit of the fast path's grammar: then the full command line must run."""
    request = parse(args)
    if request is None or os.environ.get("GIT_COMMITTER_DATE"):
        return None
    if sys.stdout is None or sys.stderr is None:
        return None  # started with a standard stream closed: the full CLI says what
    from .pack.prompt_cache import lookup  # (only for a command the fast path may answer)

    try:
        entry = lookup(
            request.directory,
            request.task_id,
            request.budget_args,
            refreshed=request.refresh,
        )
    except Exception:  # HydrateError, OSError, or a bug: the full CLI says which
        return None
    if entry is None:
        return None
    with entry:
        task_id = entry.task_id or request.task_id  # (``@``: the current task's id)
        try:
            said = [refreshed_line(task_id, done) for done in entry.refreshed]
            line = summary_line(task_id, entry.fields)
        except Exception:  # fields this version cannot say: the full CLI says what
            return None
        if not all(text.isprintable() for text in (*said, line)):
            return None  # click would strip what is not: leave it to click
        if not all(text.isascii() for text in (*said, line)) and not _utf8(sys.stderr):
            return None  # click writes UTF-8 where a stream says ASCII: leave it to click
        if request.quiet:  # (as the full command line: its warnings only)
            said = [text for text in said if text.startswith("warning:")]
            line = line if line.startswith("warning:") else ""
        return _write(request, entry.file, entry.offset, entry.prompt_bytes, [*said, line])


def _utf8(stream: object) -> bool:
    encoding = str(getattr(stream, "encoding", "") or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")


def _write(request: Request, source: BinaryIO, offset: int, count: int, lines: list[str]) -> int:
    """Say what the refresh found, copy the prompt and say the summary (the last
    line); errors as ``git_hydrate.cli.run`` says them."""
    try:
        for said in lines[:-1]:
            sys.stderr.write(said + "\n")
        sys.stderr.flush()
        with Deferred(request.output) as out:
            out.copy_from(source, offset, count)
        if lines[-1]:  # (none: -q, and all went well)
            sys.stderr.write(lines[-1] + "\n")
            sys.stderr.flush()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        silence_stdout()  # the reader went away (`| head`): say nothing more
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        sys.stderr.write(os_error_line(exc) + "\n")
        sys.stderr.flush()
        return EXIT_FAILURE
    return 0


def main() -> None:
    """``git-hydrate`` and ``python -m git_hydrate``: a fast path, else the full CLI."""
    args = sys.argv[1:]
    try:
        # (any other command goes straight to the command line)
        status = serve_hit(args) if "prompt" in args else None
        if status is None and _SHARING.intersection(args):
            status = run_sharing(args)
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)
    if status is None:
        try:
            from .cli import main as full  # (the command line's imports: ~40 ms)
        except KeyboardInterrupt:  # (Ctrl-C meanwhile: as during a command, no traceback)
            sys.exit(EXIT_INTERRUPTED)
        full()
    leave(status)


#: The commands :mod:`git_hydrate.quicksync` runs without click.
_SHARING: Final = frozenset({"pull", "push", "sync"})


def run_sharing(args: Sequence[str]) -> int | None:
    """``pull``, ``push`` or ``sync`` without click (:func:`git_hydrate.quicksync.serve_sharing`);
    an exception said as the full command line says it."""
    from .quicksync import serve_sharing

    try:
        return serve_sharing(args)
    except Exception as exc:
        from .cli import failure_status

        return failure_status(exc)
