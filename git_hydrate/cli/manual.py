"""``git hydrate help``: the manual page after any install, with or without ``man``.

git answers ``git hydrate --help`` itself: it runs ``man git-hydrate``, which
finds the page only where a regular or pipx install put it
(``<prefix>/share/man/man1``). An editable install (``pip install -e``)
installs no data files, so there git's ``--help`` finds nothing. The page is
generated from the command tree (:mod:`git_hydrate.cli.manpage`), so this
command renders it from the code that runs: through ``man -l`` on a terminal
when ``man`` is installed and can show it, else as plain text (paged on a terminal).
``git-hydrate --help`` on a terminal shows the page the same way.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from typing import Final

import click

__all__ = ["help_command", "plain_text", "show_manual"]

#: Where the text of a section starts, as man indents it.
_INDENT: Final = 7
_ESCAPE: Final = re.compile(r"\\(f[BIRP]|\(..|\[u([0-9A-F]{4,6})\]|.)")
_NAMED: Final = {"(aq": "'", "(ga": "`", "(ha": "^", "(ti": "~", "-": "-", "e": "\\", "&": ""}


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match[2] is not None:
            return chr(int(match[2], 16))
        if match[1].startswith("f"):
            return ""
        return _NAMED.get(match[1], match[1])

    return _ESCAPE.sub(one, text)


class _Text:
    """The plain-text page being written: filled paragraphs, indents, blank lines."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []
        self.indents = [_INDENT]
        self.words: list[str] = []
        self.fill = True
        self.blank = False
        #: Right after a heading, where man leaves out a paragraph's blank line.
        self.fresh = False

    def flush(self) -> None:
        if not self.words:
            return
        self._gap()
        indent = " " * self.indents[-1]
        self.lines += textwrap.wrap(
            " ".join(self.words),
            max(self.width, len(indent) + 20),
            initial_indent=indent,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        self.words = []

    def space(self) -> None:
        self.flush()
        self.blank = bool(self.lines) and not self.fresh

    def heading(self, title: str) -> None:
        self.flush()
        if self.lines:
            self.lines.append("")
        self.lines.append(title)
        self.indents = [_INDENT]
        self.blank = False
        self.fresh = True

    def text(self, line: str) -> None:
        if self.fill:
            self.words += line.split()
        else:
            self._gap()
            self.lines.append((" " * self.indents[-1] + line).rstrip())

    def _gap(self) -> None:
        if self.blank:
            self.lines.append("")
            self.blank = False
        self.fresh = False


def plain_text(page: str, width: int = 80) -> str:
    """The man page ``page`` (the roff :func:`~git_hydrate.cli.manpage.render` writes)
    as plain text ``width`` columns wide, laid out as ``man`` lays it out."""
    out = _Text(width)
    for raw in page.splitlines():
        if not raw.startswith("."):
            out.text(_unescape(raw))
            continue
        request, _, rest = raw[1:].partition(" ")
        if request == "TH":
            title = re.findall(r'"([^"]*)"', rest)
            name = f"{_unescape(title[0])}({title[1]})" if len(title) > 1 else ""
            out.lines.append(name)
        elif request == "SH":
            out.heading(_unescape(rest).strip('"'))
        elif request in ("PP", "sp"):
            out.space()
        elif request == "RS":
            out.flush()
            out.indents.append(out.indents[-1] + int(rest or "4"))
        elif request == "RE":
            out.flush()
            if len(out.indents) > 1:
                out.indents.pop()
        elif request in ("nf", "fi"):
            out.flush()
            out.fill = request == "fi"
        # .\" comments, .nh and .ad change nothing in plain text
    out.flush()
    return "\n".join(out.lines) + "\n"


def show_manual(page: str | None = None) -> int:
    """Show the man ``page`` (default: this git-hydrate's): ``man -l`` on a terminal
    when man exists and can show it, else plain text, paged on a terminal.

    Returns the exit status: 0, or man's when a signal ended it (the reader
    interrupted it: the page is not shown again).
    """
    if page is None:
        from .manpage import render

        page = render()
    man = shutil.which("man")
    if sys.stdout.isatty() and man is not None:
        status = _through_man(man, page)
        if status is not None:
            return status
    if sys.stdout.isatty():
        columns = shutil.get_terminal_size().columns
        click.echo_via_pager(plain_text(page, max(40, min(columns, 100) - 1)))
    else:
        from ._common import write_out  # (a reader that leaves is seen: 141)

        write_out(plain_text(page))
    return 0


def _through_man(man: str, page: str) -> int | None:
    """Show ``page`` with ``man -l``; its status, or ``None`` when man failed (no
    formatter, a broken man-db, a page it refuses): then the caller shows the text."""
    with tempfile.TemporaryDirectory(prefix="git-hydrate-") as tmp:
        path = os.path.join(tmp, "git-hydrate.1")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
        try:
            proc = subprocess.run([man, "-l", path], check=False, stderr=subprocess.PIPE)
        except OSError:
            return None  # found on PATH but cannot run
    if proc.returncode == 0 or proc.returncode < 0:
        sys.stderr.buffer.write(proc.stderr)  # man's own warnings, if any
        return proc.returncode if proc.returncode == 0 else 128 - proc.returncode
    return None


@click.command("help")
@click.argument("command", nargs=-1, metavar="[COMMAND]...")
@click.pass_context
def help_command(ctx: click.Context, command: tuple[str, ...]) -> int:
    """Show the manual page, or the short help of COMMAND.

    Works after any install (regular, editable, pipx) and without man: on a
    terminal it opens the page with man -l when man is installed (and can show
    it), else pages plain text; piped, it prints plain text. (git answers git hydrate --help
    itself by running man git-hydrate, which finds the page only where a
    regular or pipx install put it.)

    \b
    Examples:
      git hydrate help
      git hydrate help prompt          # same as: git hydrate prompt -h
      git hydrate help hooks install
    """
    if command:
        click.echo(_short_help(ctx, command), nl=False)
        return 0
    return show_manual()


def _short_help(ctx: click.Context, names: tuple[str, ...]) -> str:
    """The ``-h`` text of the command ``names`` (``hooks install``: a subcommand)."""
    parent = ctx.find_root()
    group = parent.command
    for name in names:
        found = group.get_command(parent, name) if isinstance(group, click.Group) else None
        if found is None:
            known = group.list_commands(parent) if isinstance(group, click.Group) else []
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise click.UsageError(f"No such command '{' '.join(names)}'.{hint}", ctx)
        parent = found.context_class(found, info_name=name, parent=parent)
        group = found
    return group.get_help(parent) + "\n"
