"""Serving agents: ``git hydrate mcp`` and the answers it sends, each within a budget.

:mod:`.answers` fits a text to the budget, :mod:`.tools` defines and runs the
tools; neither imports the MCP SDK. :mod:`.server` (imported only by the
``mcp`` command) puts them on MCP's stdio transport, each call in a worker
thread (:mod:`.workers`), each line that is no message answered with
JSON-RPC's error (:mod:`.wire`), the end of input waiting for the answers
(:mod:`.draining`).
"""

from __future__ import annotations

from .answers import BYTES_PER_TOKEN, AnswerBudget, answer_budget, fit_items, fit_prompt
from .tools import PROMPT_URI, TOOLS, call, prompt_uri_task

__all__ = [
    "BYTES_PER_TOKEN",
    "PROMPT_URI",
    "TOOLS",
    "AnswerBudget",
    "answer_budget",
    "call",
    "fit_items",
    "fit_prompt",
    "prompt_uri_task",
]
