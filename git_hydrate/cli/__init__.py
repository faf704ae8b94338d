"""The ``git hydrate`` command line: a thin click veneer over :class:`git_hydrate.Ledger`.

Each command parses its options, makes one library call and renders the
result. Command modules are imported only when their command runs (or help
lists them), so a command never pays for what it does not use. :func:`main`
is the single place where exceptions become an exit status and one line on
stderr.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Final, NoReturn

import click

from .. import __version__
from ..console import leave, os_error_line, silence_stdout
from ..errors import (
    EXIT_BROKEN_PIPE,
    EXIT_BUG,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    CorruptData,
    HydrateError,
)
from ._common import shown_block

__all__ = ["COMMANDS", "cli", "failure_status", "main"]

#: command name -> (module under git_hydrate.cli, attribute). Aliases share a target.
COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "task-add": ("tasks", "task_add"),
    "task-edit": ("tasks", "task_edit"),
    "list": ("tasks", "list_tasks"),
    "show": ("tasks", "show"),
    "search": ("search", "search"),
    "import": ("interop", "import_cmd"),
    "export": ("interop", "export_cmd"),
    "context-add": ("context", "context_add"),
    "add": ("context", "context_add"),
    "context-rm": ("context", "context_rm"),
    "pack": ("packing", "pack"),
    "expand": ("packing", "expand"),
    "prompt": ("packing", "prompt"),
    "demo": ("demo", "demo"),
    "doctor": ("doctor", "doctor"),
    "status": ("lifecycle", "status"),
    "checkpoint": ("lifecycle", "checkpoint"),
    "log": ("lifecycle", "log"),
    "mcp": ("serve", "mcp"),
    "agent": ("agent", "agent_group"),
    "start": ("current", "start"),
    "current": ("current", "current"),
    "archive": ("lifecycle", "archive"),
    "unarchive": ("lifecycle", "unarchive"),
    "hook": ("hooks", "hook"),
    "hooks": ("hooks", "hooks_group"),
    "pull": ("sync", "pull"),
    "push": ("sync", "push"),
    "sync": ("sync", "sync"),
    "setup": ("sync", "setup"),
    "task-rm": ("sync", "task_rm"),
    "add-tree": ("tree", "add_tree"),
    "add-diff": ("tree", "add_diff"),
    "rank": ("rank", "rank"),
    "ready": ("coordination", "ready"),
    "claim": ("coordination", "claim"),
    "release": ("coordination", "release"),
    "web": ("web", "web"),
    "help": ("manual", "help_command"),
}
#: Names that are only shortcuts for another command (not listed twice in help).
ALIASES: Final = {"add": "context-add"}


class ReaderGone(Exception):
    """The reader of standard output went away (``| head``). A ``BrokenPipeError``
    travels as this past click, whose ``main`` would turn it into a silent exit 1."""


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command is needed."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:  # (-h and --version print while the arguments are parsed)
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError as exc:
            raise ReaderGone from exc

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if name not in ALIASES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module = importlib.import_module(f"{__name__}.{target[0]}")
        command: click.Command = getattr(module, target[1])
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-"):
            import difflib  # (only for a command not found)

            close = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.6)
            if not close and name in _OTHER_WORDS:
                close = [_OTHER_WORDS[name]]
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(f"No such command '{name}'.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        # The command name, before click consumes the arguments.
        protected = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args
        pending = [*protected, *ctx.args]
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise ReaderGone from exc
        except click.UsageError as exc:
            # click's parser raises some errors (an option missing its value)
            # without a context: they still belong to the command being parsed.
            if exc.ctx is None and pending and pending[0] in COMMANDS:
                exc.command_path = f"{ctx.command_path} {pending[0]}"  # type: ignore[attr-defined]
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_commands(ctx, formatter)
        with formatter.section("Aliases"):
            formatter.write_dl([(alias, f"same as {name}") for alias, name in ALIASES.items()])


#: Words a new user types for a command that has another name here (the README's
#: "a board to look at" is ``web``), answered with the command they mean.
_OTHER_WORDS: Final = {
    "board": "web",
    "ui": "web",
    "ls": "list",
    "new": "task-add",
    "create": "task-add",
    "edit": "task-edit",
}


CONTEXT_SETTINGS: Final = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="git-hydrate")
@click.option(
    "-C",
    "directory",
    metavar="PATH",
    type=click.Path(file_okay=False),
    help="Run as if started in PATH (like git -C).",
)
@click.option("--compact", is_flag=True, help="Print JSON on one line.")
@click.pass_context
def cli(ctx: click.Context, directory: str | None, compact: bool) -> None:
    """Keep tasks and their context in git; pack them into prompts under a byte budget.

    \b
    Examples:
      git hydrate task-add M-1002 --objective "Add GET /healthz" --acceptance "200"
      git hydrate add M-1002 --file notes.txt --priority 10
      git hydrate prompt M-1002 --max-bytes 20000 | your-model
      git hydrate demo

    The manual: git hydrate help (after any install, with or without man).
    """
    ctx.ensure_object(dict)
    ctx.obj["compact"] = compact
    if directory is not None:  # (as git -C does: every relative path is from there)
        from ..errors import NotARepository

        try:
            os.chdir(directory)
        except OSError as exc:  # (git -C's words: "No such file or directory")
            raise NotARepository(f"cannot change to '{directory}': {exc.strerror}") from None
        directory = ctx.params["directory"] = os.getcwd()  # (still named: it wins over GIT_DIR)
    ctx.obj["directory"] = directory


#: click >= 8.2 raises this (a UsageError) for a group given no command: it is help.
_NO_ARGS_IS_HELP: Final[type[Exception] | tuple[()]] = getattr(
    click.exceptions, "NoArgsIsHelpError", ()
)


def main(argv: list[str] | None = None) -> NoReturn:
    """Run the command line and exit with its status (never a traceback)."""
    leave(run(argv))


def run(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        if _open_manual(sys.argv[1:] if argv is None else argv):
            return 0
        result: Any = cli.main(args=argv, prog_name=_prog_name(), standalone_mode=False, obj={})
    except Exception as exc:
        return failure_status(exc)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    if isinstance(result, int):
        return result
    return 0


def failure_status(exc: BaseException) -> int:
    """Say ``exc`` (raised by a command) as one line on stderr; return the exit status.

    Also what :func:`git_hydrate.quick.main` calls for an exception of a command it
    ran without click. Anything but an :class:`Exception` or a ``KeyboardInterrupt``
    is raised again."""
    try:
        raise exc
    except HydrateError as exc:
        click.echo(f"{_label(exc.label)} {shown_block(exc)}{_doctor_hint(exc)}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.UsageError as exc:
        if isinstance(exc, _NO_ARGS_IS_HELP):
            # `git hydrate` (or a group) with nothing after it: the help, as help
            click.echo(exc.format_message())
            return exc.exit_code
        # One line, like every other error; the command's -h has the rest.
        where = (
            exc.ctx.command_path
            if exc.ctx is not None
            else getattr(exc, "command_path", None) or _prog_name()
        )
        # (click lists a missing choice's values a line each, "Choose from:\n\tclaude,")
        said = " ".join(exc.format_message().split())
        click.echo(f"error: {said} (see: {where} -h)", err=True)
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code
    except click.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        click.echo("error: aborted", err=True)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except (BrokenPipeError, ReaderGone):
        # The reader went away (e.g. `| head`): say nothing more, and end as git
        # does then (see git_hydrate.console.leave).
        silence_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as exc:
        # The file system refused something outside the library's own checks.
        click.echo(os_error_line(exc), err=True)
        return EXIT_FAILURE
    except Exception as exc:
        if os.environ.get("GIT_HYDRATE_DEBUG"):
            raise
        where = _bug_site(exc)
        click.echo(
            f"error: git-hydrate {__version__} hit a bug ({type(exc).__name__}: {exc}{where}); "
            "this is not your mistake: please report it with the command you ran "
            "(GIT_HYDRATE_DEBUG=1 prints the traceback)",
            err=True,
        )
        return EXIT_BUG


def _doctor_hint(exc: HydrateError) -> str:
    """Where to look next when a stored task cannot be read: ``doctor`` checks every
    task, names each problem and, for a ref that lost its object, the ways out (a task
    of a newer format says to upgrade instead)."""
    said = exc.message
    if not isinstance(exc, CorruptData) or exc.task_id is None:
        return ""
    if "doctor" in said or "upgrade git-hydrate" in said:
        return ""
    return "; see: git hydrate doctor"


def _label(word: str) -> str:
    """``error:`` / ``fatal:``, in red on a terminal (never with NO_COLOR)."""
    from ._common import label

    return label(word, "red")


def _bug_site(exc: BaseException) -> str:
    """`` at module.py:123``: where an unexpected exception was raised, for the report."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return ""
    return f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"


def _open_manual(args: list[str]) -> bool:
    """On a terminal, ``git-hydrate --help`` shows the manual page, as ``git hydrate --help``
    does, rendered from the code that runs (so after any install: :mod:`.manual`).

    ``-h`` (and ``--help`` when output is not a terminal) prints the short help.
    """
    if args != ["--help"] or not sys.stdout.isatty():
        return False
    # imported by name, as the commands are: the page is rendered from this package
    manual = importlib.import_module(f"{__name__}.manual")
    status: int = manual.show_manual()
    return status == 0


def _prog_name() -> str:
    # Invoked by git as `git hydrate`, the program is still git-hydrate; say
    # what the user typed in usage lines.
    return "git hydrate" if os.environ.get("GIT_EXEC_PATH") else "git-hydrate"
