"""The tools ``git hydrate mcp`` offers: few, with short descriptions, each one library call.

:data:`TOOLS` is what ``tools/list`` sends (name, description, input schema,
read-only hint); :func:`call` runs one tool and returns the text of its answer,
already fitted to the budget (:mod:`.answers`). Writes go through the
:class:`~git_hydrate.Ledger` like the command line's: credentials refused
(``hydrate.allowSecrets`` alone can let one through), a committer identity
required, every change one compare-and-swap. No MCP import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import SecretDetected, ValidationError
from ..ledger import Ledger
from ..model import KINDS, STATIONS
from ..results import shown_items
from ..textpolicy import ALLOW_SECRETS_HINT
from .answers import AnswerBudget, fit_items, json_text, shown_value, surface_format
from .attachments import attachment_text, fetch_attachment
from .pages import prompt_page, wrapped_page

__all__ = ["PROMPT_URI", "READ_ONLY", "TOOLS", "call", "prompt_uri_task"]

#: The resource template of a task's prompt.
PROMPT_URI: Final = "hydrate://task/{id}/prompt"

_ID: Final = {"type": "string"}
_STATIONS: Final = {"type": "string", "enum": list(STATIONS)}
_KIND: Final = {"type": "string", "enum": list(KINDS)}
_TAGS: Final = {"type": "array", "items": {"type": "string"}}
_PART: Final = {"type": "integer", "minimum": 1}

#: ``(name, description, properties, required, read_only)`` of every tool.
_SPECS: Final[tuple[tuple[str, str, dict[str, Any], list[str], bool], ...]] = (
    (
        "list_tasks",
        "List tasks. Filters: any status, any kind, all tags.",
        {
            "status": {"type": "array", "items": _STATIONS},
            "kind": {"type": "array", "items": {"type": "string", "enum": list(KINDS)}},
            "tag": {"type": "array", "items": {"type": "string"}},
            "archived": {"type": "boolean"},
        },
        [],
        True,
    ),
    (
        "search_tasks",
        "Find tasks by words, best first.",
        {"query": {"type": "string"}, "archived": {"type": "boolean"}, "limit": _PART},
        ["query"],
        True,
    ),
    (
        "show_task",
        "A task's fields, latest checkpoint and attachments.",
        {"id": _ID},
        ["id"],
        True,
    ),
    (
        "get_prompt",
        "The task's prompt, as `git hydrate prompt` packs it; a long one in parts (`part`).",
        {"id": _ID, "part": _PART, "version": _ID},
        ["id"],
        True,
    ),
    (
        "get_attachment",
        "One attachment's body (or `outline`) by hash, unique prefix or source; in parts.",
        {"id": _ID, "hash": _ID, "part": _PART, "outline": {"type": "boolean"}},
        ["id", "hash"],
        True,
    ),
    (
        "attach",
        "Attach text to a task as context.",
        {"id": _ID, "text": {"type": "string"}, "source": _ID, "priority": {"type": "integer"}},
        ["id", "text"],
        False,
    ),
    (
        "checkpoint",
        "Record progress: summary, evidence, next step, cumulative tokens (left out: "
        "the total reported so far).",
        {
            "id": _ID,
            "summary": {"type": "string"},
            "evidence": {"type": "string"},
            "next_step": {"type": "string"},
            "tokens": {"type": "integer"},
        },
        ["id", "summary"],
        False,
    ),
    (
        "move",
        "Move a task to a station.",
        {"id": _ID, "station": _STATIONS},
        ["id", "station"],
        False,
    ),
    (
        "ready",
        "This repository's open, unclaimed tasks whose dependencies are done, in order.",
        {"kind": {"type": "array", "items": _KIND}, "tag": _TAGS},
        [],
        True,
    ),
    (
        "claim",
        "Take a task (no id: the first ready one) as holder `as`; through `remote` (a "
        "configured remote's name, not a URL), atomic.",
        {"id": _ID, "as": _ID, "remote": _ID},
        [],
        False,
    ),
    (
        "release",
        "Give a claimed task back (holder `as`); through `remote` (a configured remote's "
        "name), atomic.",
        {"id": _ID, "as": _ID, "remote": _ID},
        ["id"],
        False,
    ),
)


def _tool(
    name: str, description: str, properties: dict[str, Any], required: list[str], read_only: bool
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    tool: dict[str, Any] = {"name": name, "description": description, "inputSchema": schema}
    if read_only:
        tool["annotations"] = {"readOnlyHint": True}
    return tool


#: The tools as ``tools/list`` describes them (MCP's wire names).
TOOLS: Final[tuple[dict[str, Any], ...]] = tuple(_tool(*spec) for spec in _SPECS)
_BY_NAME: Final = {spec[0]: spec for spec in _SPECS}
#: What a tool's secret refusal ends with: a tool takes no option to store one.
_MCP_SECRETS: Final = (
    "Remove it (no tool argument allows one: hydrate.allowSecrets=true in the "
    "repository's git config lets every write, a tool's too, store one)"
)
#: The tools that change nothing: no ref, no object (the tests hold them to it).
READ_ONLY: Final = frozenset(spec[0] for spec in _SPECS if spec[4])


def prompt_uri_task(uri: str) -> str | None:
    """The task id of ``hydrate://task/ID/prompt``, or ``None`` for another URI."""
    prefix, suffix = PROMPT_URI.split("{id}")
    if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix + suffix):
        task_id = uri[len(prefix) : -len(suffix)]
        return None if "/" in task_id else task_id
    return None


# -- arguments ------------------------------------------------------------------------------


def _check(name: str, arguments: Mapping[str, Any]) -> None:
    """Refuse unknown, missing or mistyped arguments in one line. An unknown one is
    said first, with the arguments the tool takes: ``{"task_id": …}`` is a misspelt
    ``id``, not a call that forgot one."""
    _, _, properties, required, _ = _BY_NAME[name]
    for key in arguments:
        if key not in properties:
            takes = ", ".join(properties) or "none"
            raise ValidationError(
                f"{name}: unknown argument {shown_value(key)} (its arguments: {takes})"
            )
    for key in required:
        if key not in arguments:
            raise ValidationError(f"{name}: the argument {key!r} is required")
    for key, value in arguments.items():
        _check_value(name, key, properties[key], value)


_TYPES: Final[dict[str, Any]] = {"string": str, "boolean": bool, "array": list}


def _check_value(name: str, key: str, spec: Mapping[str, Any], value: Any) -> None:
    kind = spec["type"]
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, _TYPES[kind])
    if not ok:
        raise ValidationError(f"{name}: {key!r} must be of type {kind}")
    if "minimum" in spec and value < spec["minimum"]:
        raise ValidationError(f"{name}: {key!r} must be at least {spec['minimum']}")
    if kind == "array":
        for item in value:
            _check_value(name, key, spec["items"], item)
    elif "enum" in spec and value not in spec["enum"]:
        raise ValidationError(f"{name}: {key!r} must be one of {', '.join(spec['enum'])}")


# -- the tools ------------------------------------------------------------------------------


def call(ledger: Ledger, name: str, arguments: Mapping[str, Any], budget: AnswerBudget) -> str:
    """Run the tool ``name`` and return its answer, fitted to ``budget``.

    Raises:
        HydrateError: what the command line would refuse (one line each), or
            arguments the tool does not take.
    """
    if name not in _BY_NAME:
        raise ValidationError(
            f"unknown tool {shown_value(name)}; the tools are {', '.join(_BY_NAME)}"
        )
    _check(name, arguments)
    given = dict(arguments)
    if "id" in given:
        given["id"] = ledger.resolve_id(given["id"])  # "@": the work tree's current task
    try:
        return _HANDLERS[name](ledger, given, budget)
    except SecretDetected as exc:  # (no --allow-secrets here: say what a tool can do)
        raise SecretDetected(exc.message.replace(ALLOW_SECRETS_HINT, _MCP_SECRETS)) from None


def _fit_tasks(budget: AnswerBudget, tasks: list[Any], hint: str) -> str:
    """A list of tasks that fits the answer's budget, ending with what it left out."""
    return fit_items(
        budget,
        {"count": len(tasks)},
        "tasks",
        tasks,
        lambda left: {
            "tasks": left,
            "reason": f"the answer's budget of {budget.describe()}",
            "hint": hint,
        },
    )


def _list_tasks(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    tasks: list[Any] = list(
        ledger.list_tasks(
            status=args.get("status") or None,
            kind=args.get("kind") or None,
            tag=args.get("tag") or None,
            archived=bool(args.get("archived")),
        )
    )
    return _fit_tasks(budget, tasks, "narrow the list with status, kind or tag")


def _search_tasks(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    hits: list[Any] = ledger.search(
        args["query"][:1000],
        archived=bool(args.get("archived")),
        limit=args.get("limit", 20),  # (as the command line's --limit)
    )
    return _fit_tasks(budget, hits, "ask for fewer hits with limit, or a narrower query")


def _show_task(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    task_id = args["id"]
    found, entries = ledger.task_with_context(task_id)  # (one commit: fields and list agree)
    task: dict[str, Any] = dict(found)
    head = {"task_id": task_id}
    head.update((key, value) for key, value in task.items() if key != "checkpoints")
    head["checkpoints"] = len(task.get("checkpoints") or [])
    for key in ("depends_on", "tags"):  # (as show and the board's task page list them)
        head[key], head[f"{key}_more"] = shown_items(task.get(key) or [])
    return fit_items(
        budget,
        head,
        "context",
        [
            {key: entry[key] for key in ("hash", "source", "priority", "size", "expires")}
            for entry in entries
        ],
        lambda left: {
            "context": left,
            "reason": f"the answer's budget of {budget.describe()}",
            "hint": f"git hydrate show {task_id}",
        },
    )


def _get_prompt(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    # The command line's prompt (its budget), in the surfaces' format
    text = str(ledger.prompt(args["id"], format=surface_format(ledger))["prompt"])
    return prompt_page(text, budget, args.get("part", 1), args["id"], args.get("version"))


def _get_attachment(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    task_id, outline = args["id"], bool(args.get("outline"))
    entry, body = fetch_attachment(ledger, task_id, args["hash"], outline=outline)
    shape = surface_format(ledger)  # (the prompts' own: markdown holds the bytes as they are)
    call = {"id": task_id, "hash": str(entry["hash"])[:16]}
    if outline:
        call["outline"] = True

    def wrap(piece: str, part: int, total: int) -> str:
        text = attachment_text(
            task_id, entry, piece, outline=outline, part=(part, total), shape=shape
        )
        if total == 1:
            return text
        if part == total:
            return f"{text}\n[part {part} of {total}: the last]\n"
        following = json_text({**call, "part": part + 1})
        return f"{text}\n[part {part} of {total}; the next: get_attachment {following}]\n"

    what = f"attachment {str(entry['hash'])[:12]} of {task_id}" + (" (outline)" if outline else "")
    return wrapped_page(body, budget, args.get("part", 1), wrap, what, shape)


def _attach(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    result: Mapping[str, Any] = ledger.add_context(
        args["id"], args["text"], args.get("source") or "mcp", args.get("priority", 0)
    )
    keys = ("task_id", "hash", "source", "priority", "size", "created", "changed")
    return json_text({key: result[key] for key in keys if key in result})


def _checkpoint(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    result: Mapping[str, Any] = ledger.add_checkpoint(
        args["id"],
        args["summary"],
        args.get("evidence", ""),
        args.get("next_step", ""),
        args.get("tokens"),  # (left out: the total reported so far)
    )
    # (not the texts the caller just sent)
    return json_text({key: result[key] for key in ("task_id", "number", "tokens", "at", "author")})


def _move(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    return json_text(dict(ledger.set_status(args["id"], args["station"])))


def _ready(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    # Read-only: the queue as this repository has it (no pull, even with
    # hydrate.claimRemote set); claim through a remote pulls first.
    kind, tag = args.get("kind") or None, args.get("tag") or None
    tasks: list[Any] = list(ledger.ready(kind=kind, tag=tag))
    return _fit_tasks(budget, tasks, "narrow the queue with kind or tag")


def _claim(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    remote = _named_remote(ledger, args.get("remote"))
    return json_text(dict(ledger.claim(args.get("id"), holder=args.get("as"), remote=remote)))


def _release(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    remote = _named_remote(ledger, args.get("remote"))
    return json_text(dict(ledger.release(args["id"], holder=args.get("as"), remote=remote)))


def _named_remote(ledger: Ledger, remote: str | None) -> str | None:
    """``remote`` if it names a remote this repository has configured (``None``:
    ``hydrate.claimRemote``'s). A claim pushes the task and pulls what comes back:
    a URL in a tool's arguments, which a prompt's untrusted text can put there,
    would send the task's context anywhere."""
    if remote is None or ledger.settings.has(f"remote.{remote}.url"):
        return remote
    raise ValidationError(
        f"remote {remote!r} is not a remote of this repository: give the name of one "
        "(git remote -v lists them); a URL is not taken here"
    )


_HANDLERS: Final = {
    "list_tasks": _list_tasks,
    "search_tasks": _search_tasks,
    "show_task": _show_task,
    "get_prompt": _get_prompt,
    "get_attachment": _get_attachment,
    "attach": _attach,
    "checkpoint": _checkpoint,
    "move": _move,
    "ready": _ready,
    "claim": _claim,
    "release": _release,
}
