"""``git hydrate mcp``: the tools of :mod:`.tools` over MCP's stdio transport.

Built on the official Python SDK's low-level server (``pip install
'git-hydrate[mcp]'``), which lets every answer be exactly the text
:mod:`.answers` fitted: one text content per result, no structured copy of
it. Each request opens the repository afresh, as a command would, so the
answers follow the repository and its configuration while the server runs.
Only this module imports ``mcp``; the command line imports it only when
``git hydrate mcp`` runs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Final

from .. import __version__
from ..errors import HydrateError, ValidationError
from ..ledger import Ledger
from .answers import answer_budget, error_text
from .draining import Answering, Draining, Pending
from .prompts import PROMPTS, complete_task_id, get_prompt
from .tools import PROMPT_URI, TOOLS, call, prompt_uri_task
from .wire import Lines, claimed_stdin
from .workers import Workers, silence_stdout, terminating

__all__ = ["INSTRUCTIONS", "MISSING_EXTRA", "build_server", "serve"]

#: The one-line refusal when the SDK is not installed.
MISSING_EXTRA: Final = (
    "git hydrate mcp needs the optional extra git-hydrate[mcp]: pip install 'git-hydrate[mcp]'"
)
#: What the server tells the agent about itself at initialisation.
INSTRUCTIONS: Final = (
    "Tasks of one git repository; id @ is the current task. get_prompt gives a task's "
    "prompt (a long one in parts), get_attachment one attachment it left out; record "
    "progress with checkpoint and move."
)


def _require_sdk() -> None:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        raise ValidationError(MISSING_EXTRA) from None


def build_server(path: str | None = None, max_tokens: int | None = None) -> Any:
    """The MCP server of the repository at ``path`` (``None``: the current directory).

    ``max_tokens`` overrides ``hydrate.mcpMaxTokens``.
    """
    _require_sdk()
    from mcp.server.lowlevel import Server

    workers = Workers()  # (each request that opens the repository runs in one)
    return Server(
        "git-hydrate",
        version=__version__,
        instructions=INSTRUCTIONS,
        **_tool_handlers(path, max_tokens, workers),
        **_resource_handlers(path, max_tokens, workers),
        **_prompt_handlers(path, max_tokens, workers),
    )


def _refusal(exc: HydrateError) -> Any:
    """The MCP invalid-params error that carries ``exc``'s one-line message."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    return MCPError(types.INVALID_PARAMS, error_text(f"{exc.label}: {exc}"))


def _tool_handlers(path: str | None, max_tokens: int | None, workers: Workers) -> dict[str, Any]:
    """The server's ``on_list_tools`` and ``on_call_tool``: the tools of :mod:`.tools`,
    every answer (an error too) one text content."""
    import mcp_types as types

    tools = [types.Tool.model_validate(tool) for tool in TOOLS]

    def text_result(text: str, *, error: bool = False) -> Any:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=error
        )

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        return await workers.run(lambda: answer(params.name, params.arguments or {}))

    def answer(name: str, arguments: dict[str, Any]) -> Any:
        budget = None
        try:
            with Ledger(path) as ledger:
                budget = answer_budget(ledger, max_tokens)
                text = call(ledger, name, arguments, budget)
        except HydrateError as exc:
            return text_result(error_text(f"{exc.label}: {exc}", budget), error=True)
        except Exception as exc:  # never a dead server: the agent reads what went wrong
            print(error_text(f"git-hydrate mcp: {type(exc).__name__}: {exc}"), file=sys.stderr)
            return text_result(
                error_text(
                    f"error: git-hydrate {__version__} hit a bug ({type(exc).__name__}: {exc})",
                    budget,
                ),
                error=True,
            )
        return text_result(text)

    return {"on_list_tools": list_tools, "on_call_tool": call_tool}


def _resource_handlers(
    path: str | None, max_tokens: int | None, workers: Workers
) -> dict[str, Any]:
    """The server's ``on_list_resources``, ``on_list_resource_templates`` and
    ``on_read_resource``: task prompts as resources (:data:`.tools.PROMPT_URI`)."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    async def list_resources(ctx: Any, params: Any) -> Any:
        # The current task's prompt only: a resource per task would make this answer
        # grow with the repository; the template reaches every other task.
        found = await workers.run(lambda: _current_task(path))
        resources = []
        if found is not None:
            task_id = str(found["task_id"])
            resources.append(
                types.Resource(
                    uri=PROMPT_URI.replace("{id}", task_id),
                    name=f"{task_id} prompt",
                    description="The current task's prompt, packed to fit.",
                    mime_type="text/markdown",
                )
            )
        return types.ListResourcesResult(resources=resources)

    async def list_templates(ctx: Any, params: Any) -> Any:
        template = types.ResourceTemplate(
            uri_template=PROMPT_URI,
            name="prompt",
            description="A task's prompt, packed to fit.",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        task_id = prompt_uri_task(uri)
        if task_id is None:
            raise MCPError(
                types.INVALID_PARAMS, error_text(f"unknown resource {uri!r}; try {PROMPT_URI}")
            )
        # hydrate://task/@/prompt: the current one; a long prompt's first part
        text = await _refused_or(
            workers,
            lambda ledger, budget: call(ledger, "get_prompt", {"id": task_id}, budget),
            path,
            max_tokens,
        )
        contents = types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")
        return types.ReadResourceResult(contents=[contents])

    return {
        "on_list_resources": list_resources,
        "on_list_resource_templates": list_templates,
        "on_read_resource": read_resource,
    }


def _current_task(path: str | None) -> Any:
    try:
        with Ledger(path) as ledger:
            return ledger.current()
    except HydrateError:
        return None


def _prompt_handlers(path: str | None, max_tokens: int | None, workers: Workers) -> dict[str, Any]:
    """The server's ``on_list_prompts``, ``on_get_prompt`` and ``on_completion``:
    the prompts of :mod:`.prompts`, and task ids completed for their arguments."""
    import mcp_types as types

    async def list_prompts(ctx: Any, params: Any) -> Any:
        return types.ListPromptsResult(prompts=[types.Prompt.model_validate(p) for p in PROMPTS])

    async def prompt(ctx: Any, params: Any) -> Any:
        name, arguments = params.name, params.arguments or {}
        description, text = await _refused_or(
            workers,
            lambda ledger, budget: get_prompt(ledger, name, arguments, budget),
            path,
            max_tokens,
        )
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=text)
        )
        return types.GetPromptResult(description=description, messages=[message])

    async def complete(ctx: Any, params: Any) -> Any:
        values: list[str] = []
        total = 0
        if params.ref.type == "ref/prompt" or params.argument.name == "id":
            values, total = await workers.run(lambda: completions(params.argument.value))
        completion = types.Completion(values=values, total=total, has_more=total > len(values))
        return types.CompleteResult(completion=completion)

    def completions(prefix: str) -> tuple[list[str], int]:
        try:
            with Ledger(path) as ledger:
                return complete_task_id(ledger, prefix)
        except HydrateError:
            return [], 0

    return {"on_list_prompts": list_prompts, "on_get_prompt": prompt, "on_completion": complete}


async def _refused_or(
    workers: Workers,
    make: Callable[[Ledger, Any], Any],
    path: str | None,
    max_tokens: int | None,
) -> Any:
    """``make(ledger, budget)`` in a worker thread; a refusal raised as the MCP
    invalid-params error that carries its one line."""

    def made() -> Any:
        try:
            with Ledger(path) as ledger:
                return make(ledger, answer_budget(ledger, max_tokens))
        except HydrateError as exc:
            return exc

    found = await workers.run(made)
    if isinstance(found, HydrateError):
        raise _refusal(found)
    return found


def serve(path: str | None = None, max_tokens: int | None = None) -> None:
    """Serve the repository at ``path`` over stdio until the client closes the stream.

    Raises:
        ValidationError: the ``mcp`` extra is not installed.
        NotARepository: ``path`` is not a repository (checked before serving).
    """
    _require_sdk()
    with Ledger(path) as ledger:  # refuse now, not at the first request
        answer_budget(ledger, max_tokens)
    server = build_server(path, max_tokens)

    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        with claimed_stdin() as stdin:
            lines = Lines(stdin)  # (each line that is no message answered: .wire)
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                lines.answer_to(write_stream)
                pending = Pending()  # (the end of input waits for the answers: .draining)
                reading, writing = Draining(read_stream, pending), Answering(write_stream, pending)
                await server.run(reading, writing, server.create_initialization_options())

    try:
        with terminating():  # (SIGTERM and SIGHUP stop the calls' gits: .workers)
            anyio.run(run)
    except BaseException as exc:
        if not _client_gone(exc):
            raise
        silence_stdout()  # the client went away mid-answer: the session is over


def _client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or every exception a group holds) says the client went away."""
    import anyio

    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(inner) for inner in exc.exceptions)
    gone = (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError)
    return isinstance(exc, gone) or (
        isinstance(exc, anyio.ClosedResourceError) and exc.__context__ is not None
    )
