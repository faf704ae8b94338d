"""context-add (alias add), context-rm."""

from __future__ import annotations

import os
import posixpath
import sys
from typing import Any

import click

from .. import validate
from ..errors import NotFound, ValidationError
from ._common import (
    Count,
    Duration,
    echo_json,
    json_option,
    no_empty_path,
    open_ledger,
    short,
    shown,
    task_id_argument,
    working_directory,
)

__all__ = ["DEFAULT_SOURCE", "context_add", "context_rm", "file_label", "read_body_file"]

DEFAULT_SOURCE = "cli"


def read_body_file(path: str, limit: int) -> bytes:
    """The bytes of ``path`` (``-`` is standard input), with one-line errors.

    A file larger than ``limit`` is refused before it is read.
    """
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
        if len(data) > limit:
            raise ValidationError(
                f"standard input is over the limit of {limit} bytes "
                "(raise hydrate.maxBodyBytes to allow it)"
            )
        return data
    if os.path.islink(path) and not os.path.exists(path):
        raise ValidationError(f"{path} is a broken or looping symbolic link")
    if os.path.isdir(path):
        raise ValidationError(f"{path} is a directory, not a file")
    if not os.path.exists(path):
        raise ValidationError(f"{path}: no such file")
    if not os.path.isfile(path):
        raise ValidationError(f"{path} is not a regular file (a FIFO, socket or device?)")
    try:
        size = os.stat(path).st_size
        if size > limit:
            raise ValidationError(
                f"{path} is {size} bytes, over the limit of {limit} "
                "(raise hydrate.maxBodyBytes to allow it)"
            )
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ValidationError(f"cannot read {path}: {exc.strerror or exc}") from None


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([path, root]) == root


def refuse_escaping_link(path: str, top: str | None) -> None:
    """Refuse a path in the work tree ``top`` that a symbolic link leads out of it:
    a cloned repository's harmless-looking file could otherwise attach any file
    the user can read (``notes.md -> ~/.ssh/config``), to be pushed with the task.

    Raises:
        ValidationError: it does.
    """
    if top is None or path == "-":
        return
    root, real, named = os.path.realpath(top), os.path.realpath(path), os.path.abspath(path)
    # (named in the work tree, as written: a linked folder on the way counts too)
    in_tree = _inside(named, root) or _inside(named, os.path.abspath(top))
    if in_tree and not _inside(real, root):
        raise ValidationError(
            f"{path} is a symbolic link out of the work tree (to {real}); "
            "give that file's own path to attach it"
        )


def file_label(path: str, top: str | None) -> str:
    """The source label of an attached file: its path from the top of the work tree
    when it is inside it, else its name alone (never a private absolute path)."""
    real = os.path.realpath(path)
    if top is not None:
        root = os.path.realpath(top)
        if os.path.commonpath([real, root]) == root:
            return os.path.relpath(real, root).replace(os.sep, "/")
    return os.path.basename(real)


@click.command("context-add", short_help="Attach context (a file or a text) to the task ID.")
@task_id_argument
@click.option(
    "--file",
    "file_",
    metavar="FILE",
    callback=no_empty_path,
    help="Attach the content of FILE (- for stdin).",
)
@click.option("--text", help="Attach this text.")
@click.option(
    "--source-label",
    default=DEFAULT_SOURCE,
    show_default=True,
    help="Where the context came from; with --file and the default, the file's path in "
    "the repository (or its name, for a file outside it).",
)
@click.option(
    "--priority",
    type=Count(-(2**31), 2**31 - 1),
    default=0,
    show_default=True,
    help="Higher packs first.",
)
@click.option(
    "--ttl",
    type=Duration(),
    help="Expire after this long: seconds, or 90s, 30m, 12h, 7d, 2w.",
)
@click.option(
    "--allow-secrets",
    is_flag=True,
    default=None,
    help="Store the body even if it looks like it contains a credential.",
)
@json_option
@click.pass_context
def context_add(
    ctx: click.Context,
    task_id: str,
    file_: str | None,
    text: str | None,
    source_label: str,
    priority: int,
    ttl: float | None,
    allow_secrets: bool | None,
    as_json: bool,
) -> None:
    """Attach context to the task ID (exactly one of --file and --text).

    Attaching the same body again updates its source, priority and expiry. A
    FILE of the work tree that a symbolic link leads out of it (a cloned
    repository's notes.md -> ~/.ssh/config) is refused: name the file itself.

    \b
    Examples:
      git hydrate context-add M-1002 --file ./edge-notes.txt \\
          --source-label "repo/edge-notes" --priority 10
      git hydrate add M-1002 --text "The edge proxy sets X-Request-Id." --ttl 86400
    """
    if (file_ is None) == (text is None):
        raise click.UsageError("give exactly one of --file and --text")
    body: Any = text
    with open_ledger(ctx) as ledger:
        if file_ is not None:
            refuse_escaping_link(file_, ledger.repo.work_tree)
            limit = ledger.settings.size("hydrate.maxBodyBytes")
            body = read_body_file(file_, limit)
            if source_label == DEFAULT_SOURCE and file_ != "-":
                source_label = file_label(file_, ledger.repo.work_tree)
        entry = ledger.add_context(
            task_id,
            body,
            source_label,
            priority=priority,
            ttl=ttl,
            allow_secrets=allow_secrets or None,
        )
    if as_json:
        echo_json(ctx, entry)
        return
    verb = "added" if entry["created"] else "updated" if entry["changed"] else "unchanged"
    expiry = f", expires {entry['expires']}" if entry["expires"] else ""
    click.echo(
        f"{verb} {short(entry['hash'])} to {shown(task_id)} "
        f"({shown(entry['source'])}, priority {entry['priority']}, "
        f"{entry['size']:,} byte{'' if entry['size'] == 1 else 's'}{expiry})"
    )


@click.command("context-rm", short_help="Detach context from the task ID.")
@task_id_argument
@click.argument("digests", metavar="[HASH]...", nargs=-1)
@click.option(
    "--source",
    "source_glob",
    metavar="GLOB",
    help="Also detach every attachment whose source matches GLOB ('src/*', 'diff:*').",
)
@click.option("--all", "everything", is_flag=True, help="Detach every attachment.")
@json_option
@click.pass_context
def context_rm(
    ctx: click.Context,
    task_id: str,
    digests: tuple[str, ...],
    source_glob: str | None,
    everything: bool,
    as_json: bool,
) -> None:
    """Detach context from the task ID, in one commit, and say what was removed.

    HASH is a full sha256 or a unique prefix of 4 or more digits; several may
    be given. --source GLOB detaches what an add-tree or add-diff too broad
    attached (sources are paths from the top of the work tree, from any
    folder); --all detaches everything.

    \b
    Examples:
      git hydrate context-rm M-1002 19f2a4b976c8
      git hydrate context-rm M-1002 --source 'vendor/*'
    """
    if not digests and source_glob is None and not everything:
        raise click.UsageError("name the context to remove: HASH..., --source GLOB or --all")
    with open_ledger(ctx) as ledger:
        if len(digests) == 1 and source_glob is None and not everything:
            entry = ledger.remove_context(task_id, digests[0])
            if as_json:
                echo_json(ctx, entry)
            else:
                click.echo(
                    f"removed {short(entry['hash'])} ({shown(entry['source'])}) "
                    f"from {shown(task_id)}"
                )
            return
        try:
            result = ledger.remove_contexts(
                task_id, digests, source=source_glob, everything=everything
            )
        except NotFound as exc:
            top = ledger.repo.work_tree
            folder = validate.where(top, working_directory(ctx))[1] if top is not None else ""
            if source_glob is None or not folder or "whose source matches" not in str(exc):
                raise
            # (`./a.py`, `../b.py`: the path they name, none above the top)
            meant = posixpath.normpath(f"{folder}/{source_glob}")
            if meant == ".." or meant.startswith("../"):
                raise
            raise NotFound(
                f"{exc} (sources are paths from the top of the work tree: --source {meant!r}?)"
            ) from None
    if as_json:
        echo_json(ctx, result)
        return
    for item in result["removed"]:
        click.echo(
            f"removed {short(item['hash'])} ({shown(item['source'])}) from {shown(task_id)}"
        )
    noun = "attachment" if result["count"] == 1 else "attachments"
    click.echo(f"{task_id}: {result['count']} {noun} removed")
