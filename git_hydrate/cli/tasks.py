"""task-add, task-edit, list, show."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

import click

from .. import validate
from ..validate import MAX_TOKEN_COUNT
from ._common import (
    STATION_CHOICE,
    Count,
    TokenCount,
    allow_secrets_option,
    complete_task_ids,
    echo_json,
    json_option,
    new_task_id_argument,
    open_ledger,
    shown,
    shown_block,
    task_id_argument,
    warn,
    warn_stray_refs,
    working_directory,
)
from .task_view import (
    joined,
    print_children,
    print_context,
    print_latest_checkpoint,
    station_shown,
)
from .task_warnings import warn_not_here, warn_patterns

if TYPE_CHECKING:
    from ..ledger import Ledger
    from ..results import ListItem

__all__ = [
    "EMPTY_HINT",
    "KIND_CHOICE",
    "held_by",
    "list_tasks",
    "show",
    "station_shown",
    "task_add",
    "task_edit",
    "task_field_options",
    "warn_not_here",
]

F = TypeVar("F", bound=Callable[..., Any])

#: What an empty listing says (on stderr: standard output stays empty for scripts).
EMPTY_HINT = (
    "no tasks here yet: create one with git hydrate task-add ID --objective TEXT "
    "--acceptance TEXT, or bring the team's with git hydrate pull"
)

KIND_CHOICE = click.Choice(["code", "fix", "closure", "planning", "product"])


def task_field_options(*, creating: bool) -> Callable[[F], F]:
    """The options task-add and task-edit share (required ones only on task-add)."""
    options = [
        *_text_options(creating),
        *_planning_options(creating),
        *_link_options(creating),
        allow_secrets_option("the text"),
    ]

    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _text_options(creating: bool) -> list[Callable[[F], F]]:
    """What the task says: objective, acceptance, title, criteria, scope."""
    return [
        click.option("--objective", required=creating, help="What the task must achieve."),
        click.option("--acceptance", required=creating, help="How success is judged."),
        click.option("--title", help="A one-line title (default: the objective's first line)."),
        click.option(
            "--criterion",
            "criteria",
            multiple=True,
            help="An acceptance criterion (repeatable).",
        ),
        *_emptying(creating, "criterion", "criteria", "acceptance criteria"),
        click.option("--scope", multiple=True, metavar="KEY", help="A scope key (repeatable)."),
        *_emptying(creating, "scope", "scope", "scope keys"),
    ]


#: task-edit's ``--no-X`` flags that empty a list: (option, its parameter, the field).
_EMPTYING: Final = (
    ("criterion", "criteria", "acceptance_criteria"),
    ("scope", "scope", "scope"),
    ("tag", "tags", "tags"),
    ("file-in-play", "files", "files"),
    ("test", "tests", "tests"),
    ("depends-on", "depends_on", "depends_on"),
)


def _emptying(creating: bool, option: str, name: str, what: str) -> list[Callable[[F], F]]:
    """task-edit's ``--no-OPTION``: empty the list (with ``--OPTION``: the list
    is exactly the values given, as ``--OPTION`` alone makes it); none on task-add."""
    if creating:
        return []
    return [
        click.option(
            f"--no-{option}",
            f"no_{name}",
            is_flag=True,
            help=f"Remove all {what} (with --{option} too: just those given).",
        )
    ]


def _one_id_each(
    _ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    """``--depends-on A-1,B-2`` is two ids in one (no id holds a comma): the
    option is repeated for each, as a list option is everywhere here."""
    for value in values:
        parts = value.split(",")
        if len(parts) > 1 and all(part.strip() for part in parts):
            repeated = " ".join(f"--depends-on {shlex.quote(p.strip())}" for p in parts)
            raise click.BadParameter(
                f"{value!r} names {len(parts)} tasks: give each its own, {repeated}"
            )
    return values


def _planning_options(creating: bool) -> list[Callable[[F], F]]:
    """How the task is planned: kind, priority, token budget, tags (with
    their defaults only when creating: task-edit leaves unset what is not given)."""
    return [
        click.option(
            "--kind",
            type=KIND_CHOICE,
            default="code" if creating else None,
            show_default=creating,
            help="The kind of work.",
        ),
        click.option(
            "--priority",
            type=Count(1, 3),
            default=2 if creating else None,
            show_default=creating,
            help="1 (highest) to 3.",
        ),
        click.option(
            "--token-budget",
            type=TokenCount(0, MAX_TOKEN_COUNT),
            default=0 if creating else None,
            show_default=creating,
            help="The task's cumulative token budget (16k = 16,384; 0: none).",
        ),
        click.option("--tag", "tags", multiple=True, help="A tag (repeatable)."),
        *_emptying(creating, "tag", "tags", "tags"),
    ]


def _link_options(creating: bool) -> list[Callable[[F], F]]:
    """What the task points at: files, tests, the tasks it depends on, its
    parent (and, on task-edit, the flags that drop each)."""
    options = [
        click.option(
            "--file-in-play",
            "files",
            multiple=True,
            metavar="PATH[:NOTE]",
            help="A file the worker will touch, relative to the current directory as git "
            "reads a path, or absolute inside the work tree (repeatable; a path holding ':' "
            "takes one more after it, and no note: c:olon/x.py:).",
        ),
        *_emptying(creating, "file-in-play", "files", "files in play"),
        click.option(
            "--test",
            "tests",
            multiple=True,
            metavar="PATH[:NOTE]",
            help="A test to write or update, a path as --file-in-play's (repeatable).",
        ),
        *_emptying(creating, "test", "tests", "tests"),
        click.option(
            "--depends-on",
            "depends_on",
            multiple=True,
            metavar="ID",
            callback=_one_id_each,
            shell_complete=complete_task_ids,
            help="A task that must be done before this one is ready (repeatable; one that "
            "is not here yet is kept, with a warning: a pull may bring it).",
        ),
        *_emptying(creating, "depends-on", "depends_on", "dependencies: depend on no task"),
        click.option(
            "--parent",
            metavar="ID",
            shell_complete=complete_task_ids,
            help="The task this one is a part of: it waits for its open children.",
        ),
    ]
    if not creating:
        options.append(
            click.option("--no-parent", is_flag=True, help="Be a part of no task any more.")
        )
    return options


def held_by(task: Mapping[str, Any]) -> str:
    """`` · held by NAME since TIME`` (and whom it was taken from), or nothing."""
    if not task.get("assignee"):
        return ""
    since = f" since {shown(task['claimed_at'])}" if task.get("claimed_at") else ""
    taken = f" (taken from {shown(task['taken_from'])})" if task.get("taken_from") else ""
    return f" · held by {shown(task['assignee'])}{since}{taken}"


def _print_task(task: Mapping[str, Any]) -> None:
    archived = " (archived)" if task.get("archived") else ""
    click.echo(f"task {shown(task['task_id'])}{archived}: {shown(task['title'])}")
    # a task without a token budget (0) says nothing about one (issue 34)
    budget = f" · token budget {task['token_budget']}" if task["token_budget"] else ""
    click.echo(
        f"status {shown(task['status'])}{held_by(task)} · kind {shown(task['kind'])}"
        f" · priority {task['priority']}{budget} · {task['attachments']} attachment(s)"
    )
    if task.get("depends_on"):
        click.echo(f"depends on: {joined(task['depends_on'])}")
    if task.get("parent"):
        click.echo(f"part of: {shown(task['parent'])}")


@click.command("task-add")
@new_task_id_argument
@task_field_options(creating=True)
@json_option
@click.pass_context
def task_add(ctx: click.Context, /, task_id: str, as_json: bool, **fields: Any) -> None:
    """Create the task ID.

    \b
    Example:
      git hydrate task-add M-1002 --objective "Add GET /healthz" \\
          --acceptance "200 with the request id header" --criterion "returns 200" \\
          --scope api/health --tag api --file-in-play app/health.py:"new handler"
    """
    with open_ledger(ctx) as ledger:
        _paths_from_here(ctx, ledger, fields)
        task = ledger.add_task(
            task_id,
            fields["objective"],
            fields["acceptance"],
            title=fields["title"],
            acceptance_criteria=fields["criteria"],
            scope=fields["scope"],
            kind=fields["kind"],
            priority=fields["priority"],
            token_budget=fields["token_budget"],
            tags=fields["tags"],
            files=fields["files"],
            tests=fields["tests"],
            depends_on=fields["depends_on"],
            parent=fields["parent"],
            allow_secrets=fields["allow_secrets"],
        )
        warn_not_here(ledger, task["task_id"], fields["depends_on"])
        warn_patterns(ledger, task, fields)
    if as_json:
        echo_json(ctx, task)
    else:
        click.echo(f"created task {shown(task['task_id'])}: {shown(task['title'])}")


def _paths_from_here(ctx: click.Context, ledger: Ledger, fields: dict[str, Any]) -> None:
    """The ``files`` and ``tests`` entries of ``fields`` as paths relative to the
    work tree's top, read from the current directory (or ``-C``'s) as git reads a
    path given in a subdirectory (at the top, or outside a work tree, as given),
    an absolute path inside the work tree as the file it names."""
    top = ledger.repo.work_tree
    if top is None:
        return
    tops, base = validate.where(top, working_directory(ctx))
    for key, what in (("files", "file in play"), ("tests", "test")):
        if fields.get(key):
            fields[key] = validate.entries_from(fields[key], base, what, tops)


@click.command("task-edit", short_help="Change fields of the task ID.")
@task_id_argument
@task_field_options(creating=False)
@json_option
@click.pass_context
def task_edit(ctx: click.Context, /, task_id: str, as_json: bool, **fields: Any) -> None:
    """Change fields of the task ID; list options replace the whole list.

    \b
    Example:
      git hydrate task-edit M-1002 --priority 1 --tag api --tag urgent
    """
    changes: dict[str, Any] = {
        "objective": fields["objective"],
        "acceptance": fields["acceptance"],
        "title": fields["title"],
        "kind": fields["kind"],
        "priority": fields["priority"],
        "token_budget": fields["token_budget"],
        "parent": fields["parent"],
    }
    changes.update(_list_changes(fields))
    if fields["parent"] is not None and not fields["parent"].strip():
        raise click.UsageError("--parent needs a task id (--no-parent drops the parent)")
    if fields["no_parent"]:
        if fields["parent"]:
            raise click.UsageError("--no-parent and --parent contradict each other")
        changes["parent"] = ""
    if all(value is None for value in changes.values()):
        raise click.UsageError("nothing to change: give at least one field option")
    with open_ledger(ctx) as ledger:
        _paths_from_here(ctx, ledger, changes)
        task = ledger.edit_task(task_id, allow_secrets=fields["allow_secrets"], **changes)
        warn_not_here(ledger, task["task_id"], changes.get("depends_on") or ())
        warn_patterns(ledger, task, changes)
    if as_json:
        echo_json(ctx, task)
    else:
        click.echo(f"updated task {shown(task['task_id'])}: {shown(task['title'])}")


def _list_changes(fields: Mapping[str, Any]) -> dict[str, list[str]]:
    """The lists task-edit replaces: each ``--X`` given (the whole list), or
    ``[]`` for ``--no-X`` alone. An empty value is refused with the way to
    empty the list, as ``--parent ""`` is."""
    changes: dict[str, list[str]] = {}
    for option, name, field in _EMPTYING:
        values = fields[name]
        if any(not value.strip() for value in values):
            raise click.UsageError(f"--{option} needs a value (--no-{option} empties the list)")
        if values or fields[f"no_{name}"]:
            changes[field] = list(values)
    return changes


@click.command("list", short_help="List the live tasks (or the archived ones), filtered.")
@click.option(
    "--status",
    "--station",
    "stations",
    multiple=True,
    type=STATION_CHOICE,
    metavar="STATION",
    help="Only tasks at STATION (repeatable: any of them; --station, as status spells it).",
)
@click.option(
    "--kind", "kinds", multiple=True, type=KIND_CHOICE, help="Only this kind (repeatable)."
)
@click.option("--tag", "tags", multiple=True, help="Only tasks with this tag (repeatable: all).")
@click.option("--archived", is_flag=True, help="List the archived tasks instead.")
@click.option("--tree", is_flag=True, help="Each child under its parent, indented.")
@json_option
@click.pass_context
def list_tasks(
    ctx: click.Context,
    stations: tuple[str, ...],
    kinds: tuple[str, ...],
    tags: tuple[str, ...],
    archived: bool,
    tree: bool,
    as_json: bool,
) -> None:
    """List the live tasks (or the archived ones), optionally filtered.

    \b
    Examples:
      git hydrate list --status in_progress --status review --tag api
      git hydrate list --archived --json
      git hydrate list --tree
    """
    if tree and archived:
        raise click.UsageError("--tree lists live tasks: leave out --archived")
    with open_ledger(ctx) as ledger:
        tasks = ledger.list_tasks(
            status=stations or None, kind=kinds or None, tag=tags or None, archived=archived
        )
        if not as_json and not archived:
            warn_stray_refs(ledger)
    if as_json:
        echo_json(ctx, tasks)
        return
    damaged = 0
    rows: list[Mapping[str, Any]] = list(tasks)
    depths: Sequence[tuple[int, Mapping[str, Any]]] = [(0, t) for t in rows]
    if tree:
        from ..listing import tree_order  # (here: `git hydrate -h` needs none of it)

        depths = tree_order(cast("list[ListItem]", rows))
    for depth, task in depths:
        indent = "  " * depth
        if "error" in task:
            damaged += 1
            click.echo(f"{indent}{shown(task['task_id'])}\tdamaged\t{shown(task['error'])}")
            continue
        click.echo(
            f"{indent}{shown(task['task_id'])}\t{station_shown(task)}\t{shown(task['kind'])}"
            f"\tp{task['priority']}\t{task['attachments']} ctx\t{shown(task['title'])}"
        )
    if damaged:
        warn(f"{damaged} damaged task(s); see: git hydrate doctor")
    if not rows and not (stations or kinds or tags):
        click.echo(EMPTY_HINT if not archived else "no archived tasks", err=True)


@click.command("show", short_help="Show the task ID and its attachments (or one's body).")
@task_id_argument
@click.option(
    "--attachment",
    "attachment",
    metavar="HASH",
    default=None,
    help="Print one attachment's body instead, by its hash or a unique prefix (4 or more "
    "hex digits) or its source (src/app.py, as the list names it), as untrusted data "
    "with its source and size, in the prompt's format "
    "(--format markdown: its bytes whole in a fence; seed: a line that reads as structure "
    "marked with a backslash); on a terminal, control characters other than line feed and "
    "tab are shown as \\xNN, \\uNNNN or \\UNNNNNNNN.",
)
@click.option(
    "--outline",
    is_flag=True,
    help="With --attachment: its outline instead of its body (git-hydrate[outline]).",
)
@click.option(
    "--format",
    "shape",
    type=click.Choice(["seed", "markdown", "xml"]),
    default=None,
    help="With --attachment: the body as this prompt format holds it (markdown: byte for "
    "byte in a fence; default: hydrate.promptFormat, else seed, which neutralises lines "
    "that look like boundaries).",
)
@json_option
@click.pass_context
def show(
    ctx: click.Context,
    task_id: str,
    attachment: str | None,
    outline: bool,
    shape: str | None,
    as_json: bool,
) -> None:
    """Show the task ID and its context attachments (or one attachment's body).

    Of its dependencies, tags and parts, the first 100 are listed, then
    "... and N more (show --json for all)"; --json lists every one (the
    board's task page and the MCP tool show_task list as many).

    \b
    Examples:
      git hydrate show M-1002
      git hydrate show M-1002 --attachment 3f2a9c --format markdown
    """
    if attachment is not None:
        _show_attachment(ctx, task_id, attachment, (outline, shape), as_json)
        return
    if outline or shape is not None:
        raise click.UsageError(
            f"{'--outline' if outline else '--format'} goes with --attachment HASH"
        )
    with open_ledger(ctx) as ledger:
        task: Mapping[str, Any] = _task_or_mentions(ledger, task_id)
        entries = ledger.context_entries(task_id)
        children: list[Mapping[str, Any]] = list(ledger.children(task_id))
    if as_json:
        ids = [child["task_id"] for child in children]
        echo_json(ctx, {**task, "children": ids, "context": entries})
        return
    _print_task(task)
    if children:
        print_children(children)
    for label, key in (("Objective", "objective"), ("Acceptance", "acceptance")):
        click.echo(f"\n{label}:\n{shown_block(task[key])}")
    if task["acceptance_criteria"]:
        click.echo("\nAcceptance criteria:")
        for criterion in task["acceptance_criteria"]:
            click.echo(f"  - [ ] {shown(criterion)}")
    if task["scope"]:
        click.echo(f"Scope: {', '.join(map(shown, task['scope']))}")
    if task["tags"]:
        click.echo(f"Tags: {joined(task['tags'])}")
    for label, key in (("Files in play", "files"), ("Tests to write or update", "tests")):
        if task[key]:
            click.echo(f"\n{label}:")
            for note in task[key]:
                click.echo(
                    f"  {shown(note['path'])}"
                    + (f" — {shown(note['note'])}" if note["note"] else "")
                )
    print_latest_checkpoint(task.get("checkpoints") or [])
    print_context(entries)


def _task_or_mentions(ledger: Ledger, task_id: str) -> Mapping[str, Any]:
    """The task ``task_id``; when there is none and it reads as a word (no digit),
    the error points at the tasks that mention it (``show parser``)."""
    from ..errors import NotFound, ValidationError

    try:
        return ledger.get_task(task_id)
    except NotFound as exc:
        if any(c.isdigit() for c in task_id) or "create it with" not in str(exc):
            raise
        from ..search import search_tasks

        try:
            hits = search_tasks(ledger.refs, task_id, limit=10**9)  # (all: a count)
        except ValidationError:
            raise exc from None
        if not hits:
            raise
        noun = "task mentions" if len(hits) == 1 else "tasks mention"
        search = f"git hydrate search {shlex.quote(task_id)}"
        raise NotFound(f"no task {task_id!r}; {len(hits)} {noun} it: {search}") from None


def _show_attachment(
    ctx: click.Context,
    task_id: str,
    prefix: str,
    how: tuple[bool, str | None],
    as_json: bool,
) -> None:
    from ..console import Deferred
    from ..serve.attachments import attachment_text, fetch_attachment

    outline, shape = how
    with open_ledger(ctx) as ledger:
        task_id = ledger.resolve_id(task_id)
        entry, body = fetch_attachment(ledger, task_id, prefix, outline=outline)
        if shape is None:
            shape = ledger.budget().format  # (hydrate.promptFormat, else seed)
    if as_json:
        echo_json(ctx, {"task_id": task_id, **entry, "outline": outline, "body": body})
        return
    text = attachment_text(task_id, entry, body, outline=outline, shape=shape)
    with Deferred(None) as out:  # the bytes; to a terminal, control characters shown
        out.write(text.encode("utf-8"))
