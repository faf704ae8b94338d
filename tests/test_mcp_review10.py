"""git hydrate mcp, review 10: answers that hold together and say what they are.

A number past Python's 4,300 digits answered with the request's id; ``search_tasks``
taking the ``limit`` its hint names; ``show_task`` from one reading of the task;
``get_prompt`` parts tied to the prompt they were cut from; ``get_attachment`` parts
that join to the body byte for byte. The server in this process where it is enough
(``_local_session``), a real server process for what it reads from its standard input.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Ledger
from git_hydrate.errors import ValidationError
from git_hydrate.pack.render import UNTRUSTED_BANNER
from git_hydrate.serve.answers import answer_budget
from git_hydrate.serve.attachments import MID_LINE
from git_hydrate.serve.tools import call
from git_hydrate.taskrefs import TaskRefs

from .test_mcp import _local_session, _text, served_lines
from .test_mcp_process import INITIALIZE

if importlib.util.find_spec("mcp") is None:
    pytest.skip("the mcp extra is not installed", allow_module_level=True)


def test_a_number_too_long_to_read_is_answered_with_the_requests_id(repo: Path) -> None:
    """Python's and the SDK's readers refuse a whole number past 4,300 digits; the
    rest of the line is JSON: its id is sent back (before: a parse error, id null)."""
    big = "9" * 5000
    lines = [
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_prompt",'
        '"arguments":{"id":"T-1","part":' + big + "}}}",
        '{"jsonrpc":"2.0","id":' + big + ',"method":"ping"}',
        '{"jsonrpc":"2.0","id":"s","method":"ping","params":{"a":1' + "0" * 5000 + ".5}}",
        '{"jsonrpc":"2.0","id":2,"method":"ping"}',
    ]
    answers = served_lines(repo, lines)
    said = [(a["id"], a.get("error", {}).get("code")) for a in answers]
    assert said == [(0, None), (1, -32602), (None, -32600), ("s", -32602), (2, None)]
    assert answers[1]["error"]["message"] == "Invalid params: a number of more than 4,300 digits"
    assert answers[2]["error"]["message"] == "Invalid Request: a number of more than 4,300 digits"


def test_search_tasks_takes_the_limit_its_hint_names(repo: Path) -> None:
    """The answer cut to the budget says "ask for fewer hits with limit": the tool
    takes ``limit`` as ``search --limit`` does (before: "unknown argument 'limit'")."""
    with Ledger(repo) as ledger:
        for number in range(25):
            ledger.add_task(f"P-{number}", f"parser trailing comma case {number}", "ok")

    async def body(session: Any) -> tuple[str, str, str, Any]:
        many = _text(await session.call_tool("search_tasks", {"query": "parser"}))
        few = _text(await session.call_tool("search_tasks", {"query": "parser", "limit": 3}))
        cut = _text(await session.call_tool("search_tasks", {"query": "parser"}))
        bad = await session.call_tool("search_tasks", {"query": "parser", "limit": 0})
        return many, few, cut, bad

    many, few, _, bad = _local_session(repo, body)
    assert json.loads(many)["count"] == 20  # (the default, as the command line's)
    assert json.loads(few)["count"] == 3 and len(json.loads(few)["tasks"]) == 3
    assert bad.is_error and "'limit' must be at least 1" in _text(bad)
    _, _, cut, _ = _local_session(repo, body, max_tokens=400)
    assert "ask for fewer hits with limit" in json.loads(cut)["omitted"]["hint"]


def test_show_task_answers_from_one_commit(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another writer attaches between two readings of the task: ``show_task``'s
    fields (``tip``, ``attachments``) and its ``context`` list come from one reading
    (before: the fields from one commit, the list from the next; ~1 call in 1,000
    under writes, made certain here by writing right after the first reading)."""
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", "torn", "ok")
        ledger.add_context("T-1", "first note", "a")
    readings = TaskRefs.load_any
    written: list[str] = []

    def load_then_write(self: TaskRefs, task_id: str) -> Any:
        state = readings(self, task_id)
        if not written:
            written.append(task_id)
            with Ledger(repo) as other:  # (a second writer, as another process)
                other.add_context("T-1", "second note", "b")
        return state

    monkeypatch.setattr(TaskRefs, "load_any", load_then_write)
    with Ledger(repo) as ledger:
        answer = json.loads(call(ledger, "show_task", {"id": "T-1"}, answer_budget(ledger)))
    assert written == ["T-1"]
    assert answer["attachments"] == len(answer["context"]) == 1
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "refs/hydrate/tasks/T-1~1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert answer["tip"] == head  # (the commit read: the one before the second note)


def _next_call(part: str, tool: str) -> dict[str, Any]:
    """The arguments of the call a part names for the next one."""
    found: dict[str, Any] = json.loads(part.rsplit(f"the next: {tool} ", 1)[1].rstrip("]\n"))
    return found


def test_prompt_parts_cut_from_another_prompt_are_refused(repo: Path) -> None:
    """Part 1, then another writer attaches, then part 2 as part 1 names it: refused
    with the way on (before: part 2 of the new prompt, and an attachment that moved
    across the cut was in neither part)."""
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", "pages", "ok")
        for number in range(6):
            body = f"body {number} " + f"lorem ipsum {number} " * 40
            ledger.add_context("T-1", body, f"src{number}")
        budget = answer_budget(ledger, 400)
        first = call(ledger, "get_prompt", {"id": "T-1"}, budget)
        following = _next_call(first, "get_prompt")
        assert following["part"] == 2 and len(following["version"]) == 16
        # (unchanged: part 2 as named is part 2)
        assert call(ledger, "get_prompt", following, budget)
        ledger.add_context("T-1", "URGENT " + "new context " * 60, "urgent", 5)
        with pytest.raises(ValidationError) as refused:
            call(ledger, "get_prompt", following, budget)
        assert "the prompt of T-1 changed since that part was cut" in str(refused.value)
        assert 'start again from part 1: get_prompt {"id":"T-1"}' in str(refused.value)
        # from part 1 again: the parts join to the prompt as it is now
        parts = [call(ledger, "get_prompt", {"id": "T-1"}, budget)]
        while "the last]" not in parts[-1].rsplit("\n", 2)[-2]:
            parts.append(call(ledger, "get_prompt", _next_call(parts[-1], "get_prompt"), budget))
        whole = ledger.prompt("T-1", format="markdown")["prompt"]
    assert "".join(part[: part.rindex("\n\n[part ")] for part in parts) == whole
    assert "URGENT" in whole


def _fenced(part: str) -> str:
    """What a markdown part's fence holds, as the docs join parts: without the newline
    before the closing fence when the heading says the part ends mid-line."""
    block = part.split(UNTRUSTED_BANNER + "\n\n", 1)[1]
    opener, rest = block.split("\n", 1)
    fence = "`" * (len(opener) - len(opener.lstrip("`")))
    held = rest[: rest.rindex("\n" + fence + "\n") + 1]
    heading = part.split("\n", 1)[0]
    return held[:-1] if heading.endswith(MID_LINE) else held


@pytest.mark.parametrize("lines", [False, True])
def test_attachment_parts_join_to_the_body_byte_for_byte(repo: Path, lines: bool) -> None:
    """A body of one 90 KB line (minified JSON) and one of many lines, neither ending
    with a newline: the parts, joined as the docs say, are the body (before: each part
    of the long line gained a newline, and nothing said so)."""
    if lines:
        body = "".join(f"row {number}: " + "x" * (number % 97) + "\n" for number in range(2000))
        body = body.rstrip("\n")
    else:
        body = json.dumps({f"k{number}": f"value number {number}" for number in range(3100)})
        assert len(body) > 90_000 and "\n" not in body
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", "long line", "ok")
        digest = ledger.add_context("T-1", body, "data.json")["hash"]
        budget = answer_budget(ledger, 4000)
        arguments: dict[str, Any] = {"id": "T-1", "hash": digest[:16]}
        parts = [call(ledger, "get_attachment", arguments, budget)]
        while "the last]" not in parts[-1].rsplit("\n", 2)[-2]:
            arguments = _next_call(parts[-1], "get_attachment")
            parts.append(call(ledger, "get_attachment", arguments, budget))
    assert len(parts) > 3
    assert "".join(_fenced(part) for part in parts) == body
    marked = [part.split("\n", 1)[0].endswith(MID_LINE) for part in parts]
    assert marked == ([False] * (len(parts) - 1) + [True] if lines else [True] * len(parts))


def test_get_attachment_refuses_a_prompt_format_that_is_none(repo: Path) -> None:
    """hydrate.promptFormat=html: get_attachment refused it as get_prompt does (before:
    it answered, in the seed's shape)."""
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", "format", "ok")
        digest = ledger.add_context("T-1", "body\n", "a.txt")["hash"]
    subprocess.run(["git", "-C", str(repo), "config", "hydrate.promptFormat", "html"], check=True)
    said = "hydrate.promptFormat must be one of seed, markdown, xml, not 'html'"
    with Ledger(repo) as ledger:
        budget = answer_budget(ledger)
        for name, arguments in (
            ("get_prompt", {"id": "T-1"}),
            ("get_attachment", {"id": "T-1", "hash": digest[:8]}),
        ):
            with pytest.raises(ValidationError, match=said):
                call(ledger, name, arguments, budget)
