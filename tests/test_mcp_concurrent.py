"""git hydrate mcp answers while a call is slow, and answers every line it reads.

The server process is driven over stdio (JSON-RPC written to its stdin, read from
its stdout). A call is made slow for real: a ``reference-transaction`` hook that
holds a write until the test lets it go (git runs it between locking the task's
ref and moving it), or a remote that never answers.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import git
from .test_mcp import _server_env, served_lines, stocked  # noqa: F401 - the fixture
from .test_mcp_process import (  # noqa: F401 - the fixtures
    INITIALIZE,
    HeldPush,
    Server,
    _claim_through,
    _gone,
    held_push,
    silent_remote,
)


def _request(n: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": method, **({"params": params} if params else {})}


def _checkpoint(n: int, summary: str) -> dict[str, Any]:
    arguments = {"id": "S-1", "summary": summary}
    return _request(n, "tools/call", {"name": "checkpoint", "arguments": arguments})


def _wait_for(found: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not found():
        assert time.monotonic() < deadline, f"{what} did not happen in {timeout} s"
        time.sleep(0.02)


@pytest.fixture
def held(stocked: Path) -> Iterator[tuple[Path, Path]]:  # noqa: F811
    """``stocked`` with a hook that holds every ref update (locked, not yet moved)
    until the file ``go`` exists, at most 10 s; ``held`` is touched when one waits.
    Yields the two files."""
    hold, go = stocked.parent / "held", stocked.parent / "go"
    hook = stocked / ".git" / "hooks" / "reference-transaction"
    hook.write_text(
        "#!/bin/sh\n"
        'cat >/dev/null\n[ "$1" = prepared ] || exit 0\n'
        f"i=0\nwhile [ ! -e '{go}' ] && [ $i -lt 200 ]; do\n"
        f"  touch '{hold}'; sleep 0.05; i=$((i+1))\ndone\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    yield hold, go


def _answers(server: Server, count: int) -> dict[Any, dict[str, Any]]:
    found = {}
    for _ in range(count):
        answer = server.answer()
        found[answer["id"]] = answer
    return found


def _checkpoints(repo: Path) -> list[tuple[str, str]]:
    """The task S-1's checkpoints, oldest first: (number, summary)."""
    out = subprocess.run(
        [sys.executable, "-m", "git_hydrate", "-C", str(repo), "log", "S-1", "--json"],
        capture_output=True,
        env={**_server_env(), "PATH": os.environ["PATH"]},
        check=True,
    ).stdout
    changes = [c["details"] for c in json.loads(out) if c["action"] == "checkpoint"]
    return [(c["number"], c["checkpoint_summary"]) for c in reversed(changes)]


def test_a_slow_call_holds_back_no_other_request(stocked: Path, held: tuple[Path, Path]) -> None:  # noqa: F811
    """A ping and a read sent while a write waits are answered first; the write's
    answer follows once it went through. Before, the write ran on the event loop
    and nothing was read until it returned."""
    hold, go = held
    server = Server(stocked)
    try:
        server.send(_checkpoint(1, "first step"))
        _wait_for(hold.exists, "the write's hook")
        server.send(_request(2, "ping"))
        server.send(_request(3, "tools/call", {"name": "show_task", "arguments": {"id": "S-1"}}))
        early = _answers(server, 2)
        assert sorted(early) == [2, 3]
        assert "first step" not in early[3]["result"]["content"][0]["text"]
        go.touch()
        assert server.answer()["id"] == 1
        assert _checkpoints(stocked) == [("1", "first step")]
    finally:
        server.close()


def test_two_writes_at_once_lose_neither(stocked: Path, held: tuple[Path, Path]) -> None:  # noqa: F811
    """A second checkpoint of the same task starts while the first holds the task's
    ref (its ``git update-ref`` waits for the lock); both are answered and both are
    recorded: the second lost the compare-and-swap and was applied again."""
    hold, go = held
    git(stocked, "config", "core.filesRefLockTimeout", "20000")  # (waits, not fails)
    server = Server(stocked)
    try:
        server.send(_checkpoint(1, "first step"))
        _wait_for(hold.exists, "the first write's hook")
        server.send(_checkpoint(2, "second step"))
        _wait_for(lambda: _updating(server) >= 2, "a second git update-ref")
        go.touch()
        answers = _answers(server, 2)
        assert sorted(answers) == [1, 2]
        assert not any(a["result"]["isError"] for a in answers.values()), answers
        assert _checkpoints(stocked) == [("1", "first step"), ("2", "second step")]
    finally:
        server.close()


def _updating(server: Server) -> int:
    """How many ``git update-ref`` the server runs now."""
    count = 0
    for pid in server.descendants():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        count += argv[:1] == [b"git"] and b"update-ref" in argv
    return count


def test_a_cancelled_call_stops_its_git(stocked: Path, silent_remote: str) -> None:  # noqa: F811
    """A claim waiting on a remote that never answers, cancelled: its git is stopped,
    it gets no answer, the next request does, and the end of input ends the server."""
    server = _claim_through(stocked, silent_remote)
    try:
        running = server.wait_for_git()
        cancel = {"requestId": 1, "reason": "took too long"}
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        assert _gone(running, timeout=10)
        server.send(_request(2, "ping"))
        assert server.answer() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        assert server.proc.wait(timeout=20) == 0
        assert server.rest() == []  # (the cancelled claim: no answer)
        assert server.proc.stderr is not None and server.proc.stderr.read() == b""
    finally:
        server.close()


def test_a_cancelled_claim_stops_its_push(stocked: Path, held_push: HeldPush) -> None:  # noqa: F811
    """Cancelled while its push waits on the remote's hook, a claim's push is
    stopped with it: the remote never takes the claim, though the hook then lets
    pushes through. Before, only the ``ls-remote`` was stopped; the push ran on."""
    server = _claim_through(stocked, held_push.url)
    try:
        _wait_for(held_push.started.exists, "the push reaching the hook")
        running = server.descendants()
        before = held_push.refs()
        cancel = {"requestId": 1, "reason": "took too long"}
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        assert _gone(running, timeout=10)
        held_push.go.touch()
        server.send(_request(2, "ping"))
        assert server.answer() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert held_push.refs() == before
        assert "in_progress" not in _show(stocked)
    finally:
        held_push.go.touch()
        server.close()


def _show(repo: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "git_hydrate", "-C", str(repo), "show", "S-1", "--json"],
        capture_output=True,
        env={**_server_env(), "PATH": os.environ["PATH"]},
        check=True,
        text=True,
    ).stdout


def test_a_line_that_is_no_message_gets_the_json_rpc_error(stocked: Path) -> None:  # noqa: F811
    """Not JSON: a parse error (-32700, id null); JSON but no JSON-RPC message: an
    invalid request (-32600, with the request's id when it has one); a blank line
    is skipped. The server goes on serving, and ends quietly. Before, each such
    line was dropped: its sender waited for ever."""
    lines = [
        "garbage {",
        json.dumps(INITIALIZE),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "   ",
        json.dumps({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": 5}),
        json.dumps({"jsonrpc": "1.0", "id": "a", "method": "ping"}),
        json.dumps([{"jsonrpc": "2.0", "id": 8, "method": "ping"}]),
        json.dumps({"jsonrpc": "2.0", "method": 5}),
        json.dumps({"jsonrpc": "2.0", "id": 9, "result": 5}),
        # (JSON, but its string escapes a lone surrogate: no Unicode text)
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_tasks",'
        '"arguments":{"query":"\\ud800"}}}',
        # (ids JSON-RPC and MCP do not allow: the SDK took each for a notification)
        *(
            json.dumps({"jsonrpc": "2.0", "id": bad, "method": "ping"})
            for bad in (None, 1.5, True, {"a": 1})
        ),
        # (nested deeper than the SDK reads: Python's reader takes it, id and all;
        # then deeper than that too: it crashed the server, exit 3; 100,000 deep, as
        # Python 3.13's reader takes 9,000 levels, 3.11's not 1,000)
        '{"jsonrpc":"2.0","id":11,"method":"ping","params":{"a":' + "[" * 300 + "]" * 300 + "}}",
        '{"jsonrpc":"2.0","id":12,"method":"ping","params":{"a":'
        + "[" * 100_000
        + "]" * 100_000
        + "}}",
        json.dumps(_request(2, "ping")),
    ]
    answers = served_lines(stocked, lines)
    assert [(a["id"], a.get("error", {}).get("code")) for a in answers] == [
        (None, -32700),
        (0, None),
        (7, -32600),
        ("a", -32600),
        (None, -32600),  # (a batch: MCP sends one message a line)
        (None, -32600),
        (None, -32600),  # (what reads as a response: its id is the client's own)
        (3, -32600),
        *[(None, -32600)] * 4,
        (11, -32600),
        (None, -32700),
        (2, None),
    ]
    assert answers[0]["error"]["message"] == "Parse error: the line is not JSON"
    assert answers[-8]["error"]["message"] == "Invalid Request: a string holds a lone surrogate"
    assert (
        answers[-4]["error"]["message"] == "Invalid Request: an id is a string or a whole number"
    )
    assert answers[-3]["error"]["message"] == "Invalid Request: nested too deeply"
    assert answers[-2]["error"]["message"] == "Parse error: nested too deeply"


def test_a_line_that_is_not_utf8_is_refused_not_stored_altered(stocked: Path) -> None:  # noqa: F811
    """review13: bytes that are no UTF-8 in a request (a Latin-1 ``é``) were read as
    U+FFFD, as the SDK reads them, and the call went on: an attachment or a
    checkpoint was stored with text the client never sent. JSON is UTF-8 (RFC
    8259, 8.1): such a line is an invalid request, answered with its id."""
    before = git(stocked, "for-each-ref", "refs/hydrate")
    call = {"name": "checkpoint", "arguments": {"id": "S-1", "summary": "caf\udce9"}}
    lines = [
        json.dumps(INITIALIZE).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        json.dumps(_request(5, "tools/call", call), ensure_ascii=False).encode(
            "utf-8", "surrogateescape"
        ),
        b'{"jsonrpc":"2.0","id":6,"method":"ping","params":{"a":"\xff"}}',
        b'\xff{"jsonrpc":"2.0","id":7,"method":"ping"}',
        json.dumps(_request(8, "ping")).encode(),
    ]
    done = _serve_lines(stocked, lines)
    assert done.returncode == 0 and done.stderr == b"", done
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    codes = {n: a.get("error", {}).get("code") for n, a in answers.items()}
    # (the bytes before the JSON make it no JSON either: a parse error, id null)
    assert codes == {0: None, 5: -32600, 6: -32600, None: -32700, 8: None}
    assert answers[5]["error"]["message"] == "Invalid Request: the line is not UTF-8"
    assert git(stocked, "for-each-ref", "refs/hydrate") == before


def _serve_lines(repo: Path, lines: list[bytes]) -> subprocess.CompletedProcess[bytes]:
    """``git hydrate mcp`` in ``repo`` fed ``lines`` (raw bytes, one request each)."""
    return subprocess.run(
        [sys.executable, "-m", "git_hydrate", "-C", str(repo), "mcp"],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        env={**_server_env(), "PATH": os.environ["PATH"]},
        timeout=60,
        check=False,
    )


def test_an_id_that_is_no_unicode_text_is_answered_with_null(stocked: Path) -> None:  # noqa: F811
    """review14: a request whose string id holds a byte that is no UTF-8, or
    escapes a lone surrogate, was refused with that id, which the server could not
    write: it crashed ("hit a bug") and the requests after it went unanswered.
    Such an id cannot be sent back (JSON-RPC 2.0, 5: null when it cannot be
    detected)."""
    lines = [
        json.dumps(INITIALIZE).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        b'{"jsonrpc":"2.0","id":"a\xff","method":"ping"}',
        b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        json.dumps(_request(8, "ping")).encode(),
    ]
    done = _serve_lines(stocked, lines)
    assert done.returncode == 0 and done.stderr == b"", done
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(a["id"], a.get("error", {}).get("code")) for a in answers] == [
        (0, None),
        (None, -32600),
        (None, -32600),
        (8, None),
    ]
    assert answers[1]["error"]["message"] == "Invalid Request: the line is not UTF-8"
    assert answers[2]["error"]["message"] == "Invalid Request: a string holds a lone surrogate"
