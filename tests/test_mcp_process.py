"""git hydrate mcp as a process: what signals, a remote that never answers and a
client that leaves do to it (JSON-RPC written to its stdin, read from its stdout)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, git
from .conftest import silent_remote as quiet_remote
from .test_mcp import _server_env, stocked  # noqa: F401 - the fixture

#: The handshake every session begins with.
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.fixture
def silent_remote() -> Iterator[str]:
    """The URL of a remote that accepts connections and never answers."""
    with quiet_remote() as (url, _connected):
        yield url


class HeldPush:
    """A bare remote whose ``pre-receive`` hook holds every push until the file ``go``
    exists (at most 20 s); ``started`` is touched once one waits there."""

    def __init__(self, where: Path) -> None:
        self.url = str(where / "held.git")
        self.started, self.go = where / "push-started", where / "push-go"
        subprocess.run(["git", "init", "-q", "--bare", self.url], check=True)
        hook = Path(self.url) / "hooks" / "pre-receive"
        hook.write_text(
            "#!/bin/sh\ncat >/dev/null\n"
            f"touch '{self.started}'\ni=0\n"
            f"while [ ! -e '{self.go}' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n"
        )
        hook.chmod(0o755)

    def refs(self) -> str:
        """The remote's refs, as ``git for-each-ref`` lists them."""
        return git(Path(self.url), "for-each-ref")


@pytest.fixture
def held_push(tmp_path: Path) -> HeldPush:
    return HeldPush(tmp_path)


class Server:
    """A ``git hydrate mcp`` process on ``repo``, initialised."""

    def __init__(self, repo: Path) -> None:
        self.proc = subprocess.Popen(
            # (not forked by tests/zygote.py: its git processes are this one's children)
            [sys.executable, "-m", "git_hydrate", "-C", str(repo), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**_server_env(), "PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]},
        )
        # (read by a thread of its own: a server that does not answer fails a test
        # at answer()'s timeout instead of holding it)
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.send(INITIALIZE)
        assert self.answer()["id"] == 0
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with contextlib.suppress(OSError, ValueError):  # (closed by close())
            for line in self.proc.stdout:
                self._lines.put(line)
        self._lines.put(b"")

    def answer(self, timeout: float = 30.0) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer in {timeout} s") from None
        assert line, "the server closed its output"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def rest(self) -> list[dict[str, Any]]:
        """The answers left once the server closed its output."""
        found = []
        while line := self._lines.get(timeout=30):
            found.append(json.loads(line))
        return found

    def descendants(self) -> set[int]:
        """The processes this server started that still run (and theirs)."""
        found: set[int] = set()
        todo = [self.proc.pid]
        while todo:
            pid = todo.pop()
            children = set()
            # (every thread's: the server's calls start git from worker threads)
            for task in Path(f"/proc/{pid}/task").glob("*"):
                try:
                    children |= {int(child) for child in (task / "children").read_text().split()}
                except OSError:
                    continue
            found |= children
            todo.extend(children)
        return found

    def wait_for_git(self, timeout: float = 4.0) -> set[int]:
        """The git processes of a call, once they run (at least two: git and its remote helper)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = self.descendants()
            if len(running) >= 2:
                return running
            time.sleep(0.02)
        raise AssertionError("the call started no git")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def _gone(pids: set[int], timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            return True
        time.sleep(0.02)
    return False


def _claim_through(repo: Path, remote: str) -> Server:
    """A server whose first call, a claim through ``remote``, waits on it."""
    git(repo, "remote", "add", "origin", remote)
    server = Server(repo)
    params = {"name": "claim", "arguments": {"id": "S-1", "remote": "origin"}}
    server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    return server


def test_sigterm_during_a_call_ends_the_server_and_its_git_quietly(
    stocked: Path,  # noqa: F811
    silent_remote: str,
) -> None:
    server = _claim_through(stocked, silent_remote)
    try:
        running = server.wait_for_git()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=4) == 128 + signal.SIGTERM
        assert server.proc.stderr is not None and server.proc.stderr.read() == b""
        assert _gone(running)
    finally:
        server.close()


def test_sigterm_during_a_push_stops_it(stocked: Path, held_push: HeldPush) -> None:  # noqa: F811
    """A claim whose push waits on the remote's hook: SIGTERM ends the server and
    the push with it. Before, only the ``ls-remote`` a claim begins with ran in a
    session of its own; the push was left running and landed the claim once the
    hook let it through, after the server had ended."""
    server = _claim_through(stocked, held_push.url)
    try:
        deadline = time.monotonic() + 20
        while not held_push.started.exists():
            assert time.monotonic() < deadline, "the push never reached the hook"
            time.sleep(0.02)
        running = server.descendants()
        before = held_push.refs()
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=6) == 128 + signal.SIGTERM
        held_push.go.touch()  # (a push still running would land now)
        assert _gone(running, timeout=6)
        assert held_push.refs() == before
    finally:
        held_push.go.touch()
        server.close()


def _served(repo: Path, requests: list[dict[str, Any]]) -> subprocess.CompletedProcess[bytes]:
    """``git hydrate mcp`` in ``repo`` given ``requests`` (one a line), its input then
    closed: what it wrote and how it ended."""
    return subprocess.run(
        [sys.executable, "-m", "git_hydrate", "-C", str(repo), "mcp"],
        input="".join(json.dumps(r) + "\n" for r in requests).encode(),
        capture_output=True,
        env={**_server_env(), "PYTHONPATH": str(ROOT), "PATH": os.environ["PATH"]},
        timeout=60,
        check=False,
    )


def test_a_client_that_closes_its_input_gets_every_answer(stocked: Path) -> None:  # noqa: F811
    """Requests written, then standard input closed at once (a script's pipe): each
    still gets its answer, and the server then ends quietly. Before, the end of
    input ended the session and the calls still running were dropped."""
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        *(
            {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}
            for n, params in (
                (2, {"name": "list_tasks", "arguments": {}}),
                (3, {"name": "get_prompt", "arguments": {"id": "S-1"}}),
                (4, {"name": "show_task", "arguments": {"id": "NOPE-1"}}),
            )
        ),
    ]
    done = _served(stocked, requests)
    assert done.returncode == 0 and done.stderr == b""
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [0, 1, 2, 3, 4]
    assert answers[3]["result"]["content"][0]["text"].startswith("# Task S-1")
    assert answers[4]["result"]["isError"] is True


def test_a_cancellation_naming_no_request_id_is_dropped(stocked: Path) -> None:  # noqa: F811
    """notifications/cancelled whose requestId is a list or an object (no id JSON-RPC
    allows) ended the server with a bug report: the id was looked up in a set
    (explorer11). It names no request: the server goes on and answers the rest."""
    requests = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": v}}
            for v in ([1, 2], {"a": 1}, True, 1.5)
        ),
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    ]
    done = _served(stocked, requests)
    assert done.returncode == 0 and b"hit a bug" not in done.stderr, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [0, 1] and answers[1]["result"] == {}
