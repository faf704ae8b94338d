"""``pull``, ``push`` and ``sync`` without click: their reports, and a fast path.

A pull of a thousand tasks spends about as much CPU starting Python and
importing what it needs as the ``git fetch`` it is measured against spends in
all (``benchmarks/RESULTS.md``, issue 33 item 4); click alone is a quarter of
those imports. So :func:`git_hydrate.quick.main` hands these three commands to
:func:`serve_sharing` first, which takes only this exact grammar::

    [-C PATH] [--compact] (pull | push) [--json] [--compact] [-q] [REMOTE [ID]...]
    [-C PATH] [--compact] sync [--json] [--compact] [-q] [REMOTE]

(``--json``, ``--compact`` and ``-q`` or ``--quiet`` anywhere after the command,
each at most once; ``-C`` and ``--compact`` before it, each at most once) and
runs the same library
call the command does, printing the same report (:func:`render_report`, which
the click command uses too). Anything else — another option or spelling (``-h``,
``--``, ``-`` followed by anything), a second ``REMOTE`` to ``sync``, ``-C`` at
something that is no readable directory, a standard stream closed — goes to the
full command line, untouched. An exception is raised to the caller, which says it
as the full command line does (:func:`git_hydrate.cli.failure_status`).
"""

from __future__ import annotations

import gc
import os
import sys

from .console import shown

TYPE_CHECKING = False  # typing costs a few ms to import: not at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Final

    from .sync import Report

    Echo = Callable[[str, bool], None]

__all__ = ["LABELS", "parse_sharing", "render_report", "serve_sharing"]

#: How the human report names each outcome.
LABELS: Final = {
    "created": "new here",
    "fast-forward": "updated",
    "merged": "merged",
    "restored": "restored",
    "unarchived": "unarchived",
    "removed": "removed",
    "kept": "kept",
    "not-restored": "removed here, not brought back",
    "replaces-removed": "replaces a removed copy",
    "ahead": "to push",
    "absent": "absent",
    "skipped": "SKIPPED",
    "ignored": "ignored",
    "pushed": "pushed",
    "pushed-new": "pushed (new)",
    "forced": "forced",
    "deleted-remote": "deleted there",
    "rejected": "REJECTED",
    "behind": "behind",
    "refused": "REFUSED",
    "not-deleted": "not deleted",
    "not-replaced": "not replaced",
}
#: The options the commands take, each spelling by the option it spells.
_FLAGS: Final = {
    "--json": "--json",
    "--compact": "--compact",
    "-q": "--quiet",
    "--quiet": "--quiet",
}
#: The commands this module serves, and whether each takes task ids after REMOTE.
_TAKES_IDS: Final = {"pull": True, "push": True, "sync": False}


def _value(value: Any) -> str:
    import json  # (only a merge's conflicts are shown this way)

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _conflict_line(conflict: Mapping[str, Any]) -> str:
    """What a merge kept of a field both sides changed, and the value it dropped."""
    chosen = conflict["chosen"]
    dropped = [value for value in conflict["values"] if value != chosen]
    line = f"      kept {conflict['field']} = {_value(chosen)}"
    if dropped:
        line += f", dropped {_value(dropped[0])}"
    return line + f" ({conflict['rule']})"


def render_report(
    report: Report, as_json: bool, compact: bool, echo: Echo, *, quiet: bool = False
) -> int:
    """Print a pull/push/sync report through ``echo(text, to_stderr)``; return the
    exit status (1 if anything failed). ``quiet`` (``-q``) leaves out the report of
    one that went well, except its warnings (:meth:`Report.warnings`: what wants the
    user, on stderr); one that failed is reported whole."""
    if as_json:
        from .codec import format_output

        echo(format_output(report.as_dict(), compact=compact), False)
    elif quiet and report.ok:
        for warning in report.warnings():
            echo(f"warning: {shown(warning)}", True)
    else:
        _summary(report, echo)
    if report.ok:
        return 0
    remote = shown(report.remote)
    skipped = report.failed("skipped")
    # (one a sync skips as damaged there is not settled by another sync: see SKIPPED)
    rejected = [name for name in report.failed("rejected") if name not in skipped]
    absent = report.failed("absent")
    if rejected:
        names = ", ".join(map(shown, rejected))
        from shlex import quote

        again = shown(quote(report.remote))
        echo(f"error: rejected by {remote}: {names}; run git hydrate sync {again}", True)
    refused: dict[str, list[str]] = {}
    for outcome in report.outcomes:
        if outcome.action == "refused":
            refused.setdefault(outcome.detail, []).append(outcome.name)
    for detail, names_of in refused.items():
        # (a remote's hook wrote part of the detail: shown as the report's line shows it)
        named = ", ".join(map(shown, names_of))
        echo(f"error: refused by {remote}: {named}: {shown(detail)}", True)
    if skipped:
        names = ", ".join(map(shown, skipped))
        echo(f"error: skipped: {names} (the report above says why)", True)
    if absent:
        where = f"on {remote}" if report.operation == "pull" else "here"
        echo(f"error: no such task {where}: {', '.join(map(shown, absent))}", True)
    return 1


def _summary(report: Report, echo: Echo) -> None:
    """The human report: a line of counts, the notes, then a line per task."""
    counts = report.counts()
    parts = [
        f"{n} {LABELS.get(action, action)}"
        for action, n in counts.items()
        if n and action != "up-to-date"
    ]
    if counts["up-to-date"] or not report.notes:
        parts.append(f"{counts['up-to-date']} up to date")
    said = ", ".join(parts) or "nothing to do"
    echo(f"{report.operation} {shown(report.remote)}: {said}", False)
    for warning in report.warnings():
        echo(f"warning: {shown(warning)}", True)
    lines = []
    for outcome in report.outcomes:
        if outcome.action == "not-restored":
            continue  # counted above; every pull would list them again (--json has them)
        label = LABELS.get(outcome.action, outcome.action)
        line = f"  {label:<14} {shown(outcome.name)}"
        if outcome.detail:
            line += f"  ({shown(outcome.detail)})"
        lines.append(line)
        lines += [_conflict_line(conflict) for conflict in outcome.conflicts]
    if lines:  # (one write: a first pull lists thousands of tasks)
        echo("\n".join(lines), False)


class SharingRequest:
    """A ``pull``, ``push`` or ``sync`` the fast path understood."""

    __slots__ = ("as_json", "command", "compact", "directory", "quiet", "remote", "task_ids")

    def __init__(self, command: str, directory: str | None) -> None:
        self.command = command
        self.directory = directory
        self.remote: str | None = None
        self.task_ids: tuple[str, ...] = ()
        self.as_json = self.compact = self.quiet = False


def parse_sharing(args: Sequence[str]) -> SharingRequest | None:
    """``args`` (after the program name) as a :class:`SharingRequest`, or ``None``
    when they are not exactly of the fast path's grammar."""
    at, directory, compact = 0, None, False
    while at < len(args) and args[at] not in _TAKES_IDS:
        if args[at] == "-C" and directory is None and at + 1 < len(args):
            directory = args[at + 1]
            at += 2
        elif args[at] == "--compact" and not compact:
            compact = True
            at += 1
        else:
            return None
    if at == len(args) or (directory is not None and not _usable_directory(directory)):
        return None
    request = SharingRequest(args[at], directory)
    positional: list[str] = []
    seen: set[str] = set()
    for arg in args[at + 1 :]:
        if arg in _FLAGS and _FLAGS[arg] not in seen:
            seen.add(_FLAGS[arg])
        elif arg.startswith("-"):
            return None  # -h, --, an unknown or repeated option: click says what
        else:
            positional.append(arg)
    if len(positional) > 1 and not _TAKES_IDS[request.command]:
        return None  # click: an unexpected extra argument
    request.as_json = "--json" in seen
    request.compact = compact or "--compact" in seen
    request.quiet = "--quiet" in seen
    if positional:
        request.remote, request.task_ids = positional[0], tuple(positional[1:])
    return request


def _usable_directory(path: str) -> bool:
    """``-C PATH`` that click accepts (``click.Path(file_okay=False)``) and that is a
    readable directory: anything else is for the full command line to say."""
    return os.path.isdir(path) and os.access(path, os.R_OK)


def serve_sharing(args: Sequence[str]) -> int | None:
    """Run the ``pull``, ``push`` or ``sync`` that ``args`` ask for and return its exit
    status; ``None`` (nothing done) when ``args`` are not of the fast path's grammar.

    Raises:
        Exception: what the library raised, for the caller to say as the full
            command line would.
    """
    request = parse_sharing(args)
    if request is None or sys.stdout is None or sys.stderr is None:
        return None
    # (what Ledger.pull/push/sync do, without importing the Ledger and every
    # command it serves: 15-30 ms of a pull's start-up)
    from .sync import share

    # (thousands of tasks decoded and checked: no cyclic garbage among them)
    was = gc.isenabled()
    gc.disable()
    try:
        report = share(request.command, request.directory, request.remote, request.task_ids)
    finally:
        if was:
            gc.enable()
    return render_report(report, request.as_json, request.compact, _echo, quiet=request.quiet)


def _echo(text: str, to_stderr: bool) -> None:
    """``text`` and a newline, as ``click.echo`` writes them (flushed); through click
    itself where the stream would not take the text as it is (not UTF-8), or where
    click would not write it as it is (an ESC: click strips ANSI sequences from a
    stream that is no terminal, a remote's hook message may hold them)."""
    stream = sys.stderr if to_stderr else sys.stdout
    if "\x1b" not in text and (text.isascii() or _utf8(stream)):
        try:
            stream.write(text + "\n")
        except UnicodeEncodeError:
            pass  # (nothing written: the text is encoded before it is buffered)
        else:
            stream.flush()
            return
    import click

    click.echo(text, err=to_stderr)


def _utf8(stream: object) -> bool:
    encoding = str(getattr(stream, "encoding", "") or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8")
