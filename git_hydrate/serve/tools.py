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

from ..errors import ValidationError
from ..ledger import Ledger
from ..model import KINDS, STATIONS
from .answers import AnswerBudget, fit_items, fit_prompt, json_text

__all__ = ["PROMPT_URI", "TOOLS", "call", "prompt_uri_task"]

#: The resource template of a task's prompt.
PROMPT_URI: Final = "hydrate://task/{id}/prompt"

_ID: Final = {"type": "string"}
_STATIONS: Final = {"type": "string", "enum": list(STATIONS)}
_KIND: Final = {"type": "string", "enum": list(KINDS)}
_TAGS: Final = {"type": "array", "items": {"type": "string"}}

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
        "show_task",
        "A task's fields, latest checkpoint and attachments.",
        {"id": _ID},
        ["id"],
        True,
    ),
    (
        "get_prompt",
        "The task's prompt: its context packed to fit; omissions listed at the end.",
        {"id": _ID},
        ["id"],
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
        "Record progress: summary, evidence, next step, cumulative tokens.",
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
        "Open, unclaimed tasks whose dependencies are done, in the order to take them.",
        {"kind": {"type": "array", "items": _KIND}, "tag": _TAGS, "remote": _ID},
        [],
        True,
    ),
    (
        "claim",
        "Take a task (no id: the first ready one) as holder `as`; through `remote`, atomic.",
        {"id": _ID, "as": _ID, "remote": _ID},
        [],
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


def prompt_uri_task(uri: str) -> str | None:
    """The task id of ``hydrate://task/ID/prompt``, or ``None`` for another URI."""
    prefix, suffix = PROMPT_URI.split("{id}")
    if uri.startswith(prefix) and uri.endswith(suffix) and len(uri) > len(prefix + suffix):
        task_id = uri[len(prefix) : -len(suffix)]
        return None if "/" in task_id else task_id
    return None


# -- arguments ------------------------------------------------------------------------------


def _check(name: str, arguments: Mapping[str, Any]) -> None:
    """Refuse unknown, missing or mistyped arguments in one line."""
    _, _, properties, required, _ = _BY_NAME[name]
    for key in required:
        if key not in arguments:
            raise ValidationError(f"{name}: the argument {key!r} is required")
    for key, value in arguments.items():
        spec = properties.get(key)
        if spec is None:
            raise ValidationError(f"{name}: unknown argument {key!r}")
        _check_value(name, key, spec, value)


_TYPES: Final[dict[str, Any]] = {"string": str, "boolean": bool, "array": list}


def _check_value(name: str, key: str, spec: Mapping[str, Any], value: Any) -> None:
    kind = spec["type"]
    if kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, _TYPES[kind])
    if not ok:
        raise ValidationError(f"{name}: {key!r} must be of type {kind}")
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
        raise ValidationError(f"unknown tool {name!r}; the tools are {', '.join(_BY_NAME)}")
    _check(name, arguments)
    given = dict(arguments)
    if "id" in given:
        given["id"] = ledger.resolve_id(given["id"])  # "@": the work tree's current task
    return _HANDLERS[name](ledger, given, budget)


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


def _show_task(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    task_id = args["id"]
    task: dict[str, Any] = dict(ledger.get_task(task_id))
    entries = ledger.context_entries(task_id)
    head = {"task_id": task_id}
    head.update((key, value) for key, value in task.items() if key != "checkpoints")
    head["checkpoints"] = len(task.get("checkpoints") or [])
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
    return fit_prompt(ledger, args["id"], budget)


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
        args.get("tokens", 0),
    )
    # (not the texts the caller just sent)
    return json_text({key: result[key] for key in ("task_id", "number", "tokens", "at", "author")})


def _move(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    return json_text(dict(ledger.set_status(args["id"], args["station"])))


def _ready(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    ledger.pull_queue(args.get("remote") or None)
    kind, tag = args.get("kind") or None, args.get("tag") or None
    tasks: list[Any] = list(ledger.ready(kind=kind, tag=tag))
    return _fit_tasks(budget, tasks, "narrow the queue with kind or tag")


def _claim(ledger: Ledger, args: dict[str, Any], budget: AnswerBudget) -> str:
    return json_text(
        dict(ledger.claim(args.get("id"), holder=args.get("as"), remote=args.get("remote")))
    )


_HANDLERS: Final = {
    "list_tasks": _list_tasks,
    "show_task": _show_task,
    "get_prompt": _get_prompt,
    "attach": _attach,
    "checkpoint": _checkpoint,
    "move": _move,
    "ready": _ready,
    "claim": _claim,
}
