"""git hydrate mcp: a real MCP client session (the SDK's stdio client) against the server.

Every answer is checked for content and for size: exactly counted in tokens
(the ``tokens`` extra is part of the test extra) or in bytes, never above the
budget; a task too large for it ends with the summary of what was left out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Ledger, ValidationError
from git_hydrate.context_expander import OUTPUT_CONTRACT
from git_hydrate.pack.tokens import count_tokens
from git_hydrate.serve import BYTES_PER_TOKEN, TOOLS, answer_budget, call, fit_prompt

from .conftest import ROOT, fsck, git, hydrate, stocked_repo
from .wrapper import hydrate_command

if importlib.util.find_spec("mcp") is None:  # the SDK is imported by the tests that use it
    pytest.skip("the mcp extra is not installed", allow_module_level=True)

#: A budget small enough that the large task below overflows it many times.
BUDGET = 3000


def _server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's isolated git environment, for the server process; with the
    interpreter settings of this one (``PYTHON*``, as a user's shell passes them on),
    so that tests/zygote.py can fork it rather than start a new interpreter."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key.startswith(("GIT_", "HOME", "PYTHON"))
    }
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_CONFIG_HOME"] = os.environ.get("XDG_CONFIG_HOME", "")
    env["TZ"] = "UTC"
    env.update(extra or {})
    return env


def served_lines(repo: Path, lines: list[str]) -> list[dict[str, Any]]:
    """``git hydrate mcp`` run on ``repo`` with ``lines`` (one message a line) as its
    whole input: each answer, once it ended quietly (exit 0, nothing on stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "-C", str(repo), "mcp"],
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        env={**_server_env(), "PATH": os.environ["PATH"]},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b"", done
    return [json.loads(line) for line in done.stdout.splitlines()]


def _session(
    repo: Path,
    body: Callable[[Any], Awaitable[Any]],
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Any:
    """Run ``body(session)`` in an initialised client session with a server on ``repo``."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    command = hydrate_command()  # a real process, forked by tests/zygote.py
    params = StdioServerParameters(
        command=command[0],
        args=[*command[1:], "-C", str(repo), "mcp", *args],
        env=_server_env(env),
        cwd=str(repo.parent),
    )

    async def run() -> Any:
        # the server's stderr to this test's (the SDK's default is the sys.stderr of
        # when it was imported: maybe an in-process command's, long closed)
        errors = sys.stderr
        async with (
            stdio_client(params, errlog=errors) as (read, write),
            ClientSession(read, write) as session,
        ):
            init = await session.initialize()
            assert init.capabilities.tools is not None
            assert init.capabilities.resources is not None  # or clients never look
            return await body(session)

    return anyio.run(run)


def _local_session(
    repo: Path, body: Callable[[Any], Awaitable[Any]], *, max_tokens: int | None = None
) -> Any:
    """:func:`_session` with the server in this process (``build_server``, what
    ``git hydrate mcp`` serves) over the SDK's in-memory streams: the same
    requests and answers, without a server process to start (~1.5 CPU-seconds).
    Tests of what the process adds (the command's options, stdio, identity from
    its environment, two servers at once) use :func:`_session`."""
    import anyio
    from mcp import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from git_hydrate.serve.server import build_server

    server = build_server(str(repo), max_tokens)

    async def run() -> Any:
        streams = create_client_server_memory_streams()
        async with streams as (client, served), anyio.create_task_group() as group:
            options = server.create_initialization_options()
            group.start_soon(server.run, served[0], served[1], options)
            async with ClientSession(client[0], client[1]) as session:
                init = await session.initialize()
                assert init.capabilities.tools is not None
                assert init.capabilities.resources is not None
                answer = await body(session)
            group.cancel_scope.cancel()
        return answer

    return anyio.run(run)


def _text(result: Any) -> str:
    """The one text content of a tool result: sent once, never also as structured content."""
    assert result.structured_content is None
    assert len(result.content) == 1
    assert result.content[0].type == "text"
    return str(result.content[0].text)


def _tokens(text: str) -> int:
    return count_tokens(text, "o200k_base")


@pytest.fixture
def stocked(tmp_path: Path) -> Path:
    """A small task S-1, a large task L-1 (100 attachments of ~1 KiB), 60 more tasks
    (a copy of a template made once)."""
    return stocked_repo(tmp_path / "repo", "mcp-stocked", _stock)


def _stock(repo: Path) -> None:
    git(repo, "config", "hydrate.mcpMaxTokens", str(BUDGET))
    with Ledger(repo) as ledger:
        ledger.add_task("S-1", "Add GET /healthz", "returns 200", title="Health check")
        ledger.add_context("S-1", "The proxy sets X-Request-Id.\n", "notes.md", 10)
        ledger.add_task("L-1", "Refactor the parser", "the tests pass", title="Large")
        ledger.add_contexts(
            "L-1",
            [
                (
                    f"# part {i}\n" + f"line {i} of the parser notes, kept for context\n" * 24,
                    f"docs/part-{i:03}.md",
                    i,
                    None,
                )
                for i in range(100)
            ],
        )
        for i in range(60):
            tags = ["bulk", "few"] if i < 5 else ["bulk"]
            ledger.add_task(f"B-{i}", f"Bulk task number {i} " * 4, "done", tags=tags)


def test_a_session_calls_every_tool_and_reads_the_resource(stocked: Path) -> None:
    async def body(session: Any) -> dict[str, Any]:
        seen: dict[str, Any] = {"tools": await session.list_tools()}
        calls = {
            "list_s": ("list_tasks", {"tag": ["bulk", "few"], "status": ["open"]}),
            "list_all": ("list_tasks", {}),
            "show_s": ("show_task", {"id": "S-1"}),
            "show_l": ("show_task", {"id": "L-1"}),
            "prompt_s": ("get_prompt", {"id": "S-1"}),
            "prompt_l": ("get_prompt", {"id": "L-1"}),
            "attach": ("attach", {"id": "S-1", "text": "Use the v2 router.", "priority": 5}),
            "checkpoint": ("checkpoint", {"id": "S-1", "summary": "route added", "tokens": 42}),
            "move": ("move", {"id": "S-1", "station": "in_progress"}),
            "ready": ("ready", {"tag": ["bulk"]}),
            "ready_all": ("ready", {}),
            "claim": ("claim", {"as": "agent-1"}),
        }
        for key, (name, arguments) in calls.items():
            seen[key] = await session.call_tool(name, arguments)
        seen["templates"] = await session.list_resource_templates()
        seen["listed"] = await session.list_resources()
        seen["resource"] = await session.read_resource("hydrate://task/L-1/prompt")
        return seen

    seen = _session(stocked, body)

    # tools/list: eleven tools, small
    tools = seen["tools"].tools
    assert [t.name for t in tools] == [
        "list_tasks",
        "search_tasks",
        "show_task",
        "get_prompt",
        "get_attachment",
        "attach",
        "checkpoint",
        "move",
        "ready",
        "claim",
        "release",
    ]
    listed = json.dumps(
        [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools],
        separators=(",", ":"),
    )
    # every tool costs each session these bytes: eleven tools stay under 3,400 (~820 tokens;
    # 3,300 and 800 until search_tasks took limit and get_prompt version, review10)
    assert len(listed.encode()) < 3400 and _tokens(listed) < 820

    answers = {
        key: _text(result)
        for key, result in seen.items()
        if key not in ("tools", "templates", "resource", "listed")
    }
    for key, text in answers.items():
        assert not seen[key].is_error, (key, text)
        assert _tokens(text) <= BUDGET, key

    small = json.loads(answers["list_s"])
    assert small["count"] == 5 and "omitted" not in small
    assert [t["task_id"] for t in small["tasks"]] == ["B-0", "B-1", "B-2", "B-3", "B-4"]
    every = json.loads(answers["list_all"])
    assert every["count"] == 62 and 0 < len(every["tasks"]) < 62
    assert list(every)[-1] == "omitted"  # the answer ends with what it left out
    assert every["omitted"]["tasks"] == 62 - len(every["tasks"])

    show_s = json.loads(answers["show_s"])
    assert show_s["task_id"] == "S-1" and show_s["context"][0]["source"] == "notes.md"
    show_l = json.loads(answers["show_l"])
    assert 0 < len(show_l["context"]) < 100
    assert show_l["omitted"]["context"] == 100 - len(show_l["context"])

    assert answers["prompt_s"].startswith("# Task S-1: Health check")
    assert "X-Request-Id" in answers["prompt_s"]
    assert "### Not included" not in answers["prompt_s"]
    large = answers["prompt_l"]
    assert large.startswith("# Task L-1: Large")
    tail = large.rstrip("\n").rsplit("\n", 1)[-1]
    assert tail.startswith("[part 1 of ") and 'get_prompt {"id":"L-1","part":2,"version":"' in tail

    assert json.loads(answers["attach"])["created"] is True
    assert json.loads(answers["checkpoint"])["number"] == 1
    assert json.loads(answers["move"]) == {
        "task_id": "S-1",
        "from": "open",
        "to": "in_progress",
        "changed": True,
    }

    queue = json.loads(answers["ready"])
    assert queue["count"] == 60 and queue["tasks"][0]["task_id"] == "B-0"
    first = json.loads(answers["ready_all"])["tasks"][0]["task_id"]
    claimed = json.loads(answers["claim"])
    assert (claimed["task_id"], claimed["assignee"], claimed["status"]) == (
        first,
        "agent-1",
        "in_progress",
    )

    assert seen["listed"].resources == []  # no current task: the template reaches them all
    (template,) = seen["templates"].resource_templates
    assert template.uri_template == "hydrate://task/{id}/prompt"
    (content,) = seen["resource"].contents
    assert content.text == large  # get_prompt's first part

    # the writes are the library's: one commit each, git fsck clean
    status = hydrate(stocked, "--compact", "status", "S-1", "--json")
    assert json.loads(status.stdout)["status"] == "in_progress"
    assert json.loads(status.stdout)["attachments"] == 2
    fsck(stocked)


def test_a_misspelt_argument_is_named_before_the_one_it_stands_for(stocked: Path) -> None:
    """``{"task_id": "S-1"}`` was told "the argument 'id' is required", never that
    task_id is no argument (explorer15): the unknown one is named first, with the
    tool's arguments."""

    async def body(session: Any) -> list[Any]:
        return [
            await session.call_tool("get_prompt", {"task_id": "S-1"}),
            await session.call_tool("show_task", {}),
        ]

    texts = [_text(result) for result in _local_session(stocked, body)]
    assert texts == [
        "error: get_prompt: unknown argument 'task_id' (its arguments: id, part, version)",
        "error: show_task: the argument 'id' is required",
    ]


def test_refusals_are_tool_errors_and_write_nothing(stocked: Path) -> None:
    before = git(stocked, "for-each-ref", "refs/hydrate")
    secret = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"

    async def body(session: Any) -> list[Any]:
        return [
            await session.call_tool(name, arguments)
            for name, arguments in [
                ("attach", {"id": "S-1", "text": secret}),
                ("move", {"id": "S-1", "station": "done"}),  # not a move from open
                ("move", {"id": "S-1", "station": "sideways"}),
                ("get_prompt", {"id": "NOPE-1"}),
                ("get_prompt", {}),
                ("checkpoint", {"id": "S-1", "summary": "x", "tokens": "many"}),
                ("frobnicate", {}),
                ("get_prompt", {"id": "S-1", "part": 2}),
                ("get_prompt", {"id": "S-1", "part": 0}),
            ]
        ]

    results = _local_session(stocked, body)
    texts = [_text(result) for result in results]
    assert all(result.is_error for result in results), texts
    assert all(text.startswith("error: ") and "\n" not in text for text in texts), texts
    assert "looks like it contains a secret" in texts[0]
    assert "--allow-secrets" not in texts[0]  # (a tool has no options)
    assert texts[0].endswith(
        "Remove it (no tool argument allows one: hydrate.allowSecrets=true in the "
        "repository's git config lets every write, a tool's too, store one)"
    )
    assert "no task 'NOPE-1'" in texts[3]
    assert "'id' is required" in texts[4]
    assert "'tokens' must be of type integer" in texts[5]
    assert "unknown tool 'frobnicate'" in texts[6]
    assert texts[7] == "error: the prompt of S-1 has 1 part, not 2"
    assert "'part' must be at least 1" in texts[8]
    assert git(stocked, "for-each-ref", "refs/hydrate") == before


def test_writes_need_an_identity(stocked: Path, tmp_path: Path) -> None:
    git(stocked, "config", "user.useConfigOnly", "true")
    nobody = {
        "HOME": str(tmp_path / "nobody"),
        "GIT_CONFIG_GLOBAL": str(tmp_path / "nobody" / ".gitconfig"),
        "GIT_AUTHOR_NAME": "",
        "GIT_AUTHOR_EMAIL": "",
        "GIT_COMMITTER_NAME": "",
        "GIT_COMMITTER_EMAIL": "",
        "EMAIL": "",
    }
    before = git(stocked, "for-each-ref", "refs/hydrate")

    async def body(session: Any) -> list[Any]:
        return [
            await session.call_tool("checkpoint", {"id": "S-1", "summary": "x"}),
            await session.call_tool("show_task", {"id": "S-1"}),  # reading needs none
        ]

    write, read = _session(stocked, body, env=nobody)
    assert write.is_error and _text(write).startswith("error: git has no identity")
    assert not read.is_error
    assert git(stocked, "for-each-ref", "refs/hydrate") == before


def test_two_servers_writing_at_once_lose_nothing(stocked: Path) -> None:
    import threading

    errors: list[BaseException] = []

    def writer(n: int) -> None:
        async def body(session: Any) -> None:
            for i in range(8):
                result = await session.call_tool(
                    "attach", {"id": "S-1", "text": f"note {n}-{i}\n", "source": f"w{n}"}
                )
                assert not result.is_error, _text(result)

        try:
            _session(stocked, body)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    with Ledger(stocked) as ledger:
        sources = [e["source"] for e in ledger.context_entries("S-1")]
    assert sorted(sources).count("w0") == 8 and sources.count("w1") == 8
    fsck(stocked)


def test_max_tokens_option_and_setting_bound_every_answer(stocked: Path) -> None:
    async def body(session: Any) -> list[str]:
        return [
            _text(await session.call_tool("get_prompt", {"id": "L-1"})),
            _text(await session.call_tool("show_task", {"id": "L-1"})),
            _text(await session.call_tool("list_tasks", {})),
        ]

    for text in _session(stocked, body, args=("--max-tokens", "900")):
        assert _tokens(text) <= 900
    git(stocked, "config", "hydrate.mcpMaxTokens", "1200")
    texts = _local_session(stocked, body)
    assert all(_tokens(text) <= 1200 for text in texts)
    assert "1,200 tokens" in texts[1]


# -- without a token counter: a byte budget ------------------------------------------------


@pytest.mark.parametrize("tokens", [600, 2000, 3000])
def test_a_byte_budget_bounds_every_answer(stocked: Path, tokens: int) -> None:
    with Ledger(stocked) as ledger:
        budget = answer_budget(ledger, tokens, count_tokens=False)
        assert budget.unit == "bytes" and budget.limit == int(tokens * BYTES_PER_TOKEN)
        for name, arguments in [
            ("get_prompt", {"id": "L-1"}),
            ("show_task", {"id": "L-1"}),
            ("list_tasks", {}),
        ]:
            text = call(ledger, name, arguments, budget)
            assert len(text.encode()) <= budget.limit, name
            assert ("[part 1 of " if name == "get_prompt" else "omitted") in text, name
        large = fit_prompt(ledger, "L-1", budget)
        assert large.endswith(OUTPUT_CONTRACT + "\n") and "\n### Not included\n" in large


def test_the_default_budget_fits_claude_codes_defaults(repo: Path) -> None:
    # Claude Code warns past 10,000 tokens and moves a result over 50,000
    # characters to a file: the default keeps a fifth under both.
    with Ledger(repo) as ledger:
        counted = answer_budget(ledger)
        assert (counted.limit, counted.unit, counted.byte_cap) == (8000, "tokens", 40000)
        assert answer_budget(ledger, count_tokens=False).limit == 20000
        assert not counted.fits(" x" * 20001)  # few tokens, too many bytes
        with pytest.raises(ValidationError, match="at least 400 tokens"):
            answer_budget(ledger, 399)


def test_tools_option_prints_the_schema_and_its_size(repo: Path) -> None:
    result = hydrate(repo, "--compact", "mcp", "--tools")
    assert result.returncode == 0, result
    assert json.loads(result.stdout) == {"tools": list(TOOLS)}
    size = len(result.stdout.strip().encode())
    assert result.stderr.startswith(f"tools: 11; {size:,} bytes, ")
    assert size < 3400


# -- the extra is optional -------------------------------------------------------------------


def _python(code: str, cwd: Path, blocked: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (blocked, ROOT) if p is not None)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_without_the_extra_one_line_names_it(repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    (blocked / "mcp").mkdir(parents=True)
    (blocked / "mcp" / "__init__.py").write_text("raise ImportError('not installed')\n")
    proc = _python("from git_hydrate.cli import main; main(['mcp'])", repo, blocked)
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr == (
        "error: git hydrate mcp needs the optional extra git-hydrate[mcp]: "
        "pip install 'git-hydrate[mcp]'\n"
    )


@pytest.mark.parametrize("args", [["-h"], ["list"], ["mcp", "-h"], ["mcp", "--tools"]])
def test_the_command_line_never_imports_the_sdk_otherwise(repo: Path, args: list[str]) -> None:
    code = (
        "import sys\nfrom git_hydrate.cli import run\n"
        f"code = run({args!r})\n"
        "sys.stdout.flush()\n"
        "print('LOADED' if any(m == 'mcp' or m.startswith(('mcp.', 'mcp_types')) "
        "for m in sys.modules) else 'CLEAN', code, file=sys.stderr)\n"
    )
    proc = _python(code, repo)
    assert proc.stderr.strip().splitlines()[-1] == "CLEAN 0", proc.stderr


def test_at_is_the_current_task_over_mcp(stocked: Path) -> None:
    assert hydrate(stocked, "start", "S-1").returncode == 0

    async def body(session: Any) -> list[Any]:
        return [
            await session.call_tool("get_prompt", {"id": "@"}),
            await session.read_resource("hydrate://task/@/prompt"),
            await session.list_resources(),
            await session.call_tool("checkpoint", {"id": "@", "summary": "half way"}),
        ]

    prompt, resource, resources, checkpoint = _local_session(stocked, body)
    assert _text(prompt).startswith("# Task S-1: Health check")
    assert json.loads(_text(checkpoint))["task_id"] == "S-1"
    assert [str(r.uri) for r in resources.resources] == ["hydrate://task/S-1/prompt"]
    assert resource.contents[0].text == _text(prompt)


def test_a_checkpoint_without_tokens_keeps_the_total_over_mcp(stocked: Path) -> None:
    """``tokens`` left out after a counted checkpoint: the total so far, not 0
    (which the cumulative count would refuse as lower)."""

    async def body(session: Any) -> list[Any]:
        return [
            await session.call_tool("checkpoint", {"id": "S-1", "summary": "a", "tokens": 42}),
            await session.call_tool("checkpoint", {"id": "S-1", "summary": "b"}),
        ]

    counted, uncounted = _local_session(stocked, body)
    assert not uncounted.is_error, _text(uncounted)
    assert json.loads(_text(counted))["tokens"] == json.loads(_text(uncounted))["tokens"] == 42
