"""The MCP prompts ``git hydrate mcp`` offers: start work on a task in one step.

:data:`PROMPTS` is what ``prompts/list`` sends; :func:`get_prompt` makes the
one user message of ``prompts/get``, within the answer's budget like every
other answer: a line saying what to do, then the task's prompt packed to fit
(:func:`~.answers.fit_prompt`: what it left out is listed, to be fetched with
``get_attachment``). Reading a prompt writes nothing: ``next_ready_task`` names
the task to claim, it does not claim it. No MCP import here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import TooSmall, ValidationError
from ..ledger import Ledger
from .answers import AnswerBudget, fit_prompt, shown_value

__all__ = ["PROMPTS", "complete_task_id", "get_prompt"]

#: The prompts as ``prompts/list`` describes them (MCP's wire names).
PROMPTS: Final[tuple[dict[str, Any], ...]] = (
    {
        "name": "work_on_task",
        "description": "Work on a task: its prompt, with its output contract.",
        "arguments": [
            {"name": "id", "description": "The task's id (@: the current task).", "required": True}
        ],
    },
    {
        "name": "next_ready_task",
        "description": "The first task of the ready queue, to claim and work on.",
        "arguments": [],
    },
)
#: The most ids one completion answers (MCP's limit).
_COMPLETIONS: Final = 100


def _within(budget: AnswerBudget, preface: str) -> AnswerBudget:
    """``budget`` less what ``preface`` takes."""
    size = len(preface.encode("utf-8"))
    return budget._replace(
        limit=budget.limit - (budget.size(preface) if budget.meter is not None else size),
        max_bytes=budget.byte_cap - size,
    )


def _work_on(ledger: Ledger, task_id: str, preface: str, budget: AnswerBudget) -> str:
    """``preface``, then the task's prompt packed to fit; when its fields alone do not
    fit one answer (an objective of 100 KB), how to read it in parts instead."""
    try:
        return preface + fit_prompt(ledger, task_id, _within(budget, preface))
    except TooSmall:
        ledger.get_task(task_id)  # (a task that cannot be read says so, as before)
        return (
            f"{preface}The prompt of {task_id} is longer than one answer "
            f"({budget.describe()}): its ticket alone does not fit. Read it in parts with "
            f'the get_prompt tool: {{"id": "{task_id}", "part": 1}}, then the part each '
            "one names next.\n"
        )


def get_prompt(
    ledger: Ledger, name: str, arguments: Mapping[str, str], budget: AnswerBudget
) -> tuple[str, str]:
    """The prompt ``name`` with ``arguments``: ``(description, text)``.

    Raises:
        HydrateError: an unknown prompt or argument, or what reading the task refuses.
    """
    if name == "work_on_task":
        unknown = set(arguments) - {"id"}
        if unknown:
            raise ValidationError(f"work_on_task: unknown argument {shown_value(min(unknown))}")
        if not arguments.get("id"):
            raise ValidationError("work_on_task: the argument 'id' is required")
        task_id = ledger.resolve_id(arguments["id"])
        preface = (
            f"Work on task {task_id} of this repository, following its output contract. "
            "Record progress with the checkpoint tool; fetch what the prompt left out "
            "with get_attachment.\n\n"
        )
        return f"Work on {task_id}", _work_on(ledger, task_id, preface, budget)
    if name == "next_ready_task":
        if arguments:
            raise ValidationError("next_ready_task takes no arguments")
        queue = ledger.ready()
        if not queue:
            return "No task is ready", "No task of this repository is ready to be taken.\n"
        task_id = str(queue[0]["task_id"])
        preface = (
            f"The first ready task is {task_id}. Claim it with the claim tool (id {task_id}) "
            "before you start; if the claim is refused, someone took it: ask for the next. "
            "Then work on it, following its output contract.\n\n"
        )
        return f"Claim and work on {task_id}", _work_on(ledger, task_id, preface, budget)
    names = ", ".join(str(p["name"]) for p in PROMPTS)
    raise ValidationError(f"unknown prompt {shown_value(name)}; the prompts are {names}")


def complete_task_id(ledger: Ledger, typed: str) -> tuple[list[str], int]:
    """The task ids starting with ``typed`` (case ignored): the first 100, and how many."""
    wanted = typed.casefold()
    found = [task_id for task_id in ledger.task_ids() if task_id.casefold().startswith(wanted)]
    return found[:_COMPLETIONS], len(found)
