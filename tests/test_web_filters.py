"""git hydrate web's filters, driven through the real server: the holder of
unclaimed tasks, and the values each filter refuses."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from git_hydrate.web.server import WebServer

from .conftest import hydrate, web_serving


@pytest.fixture
def board(repo: Path) -> Iterator[WebServer]:
    """Three tasks: one held by a worker named ``-``, one by ``bob``, one by nobody."""
    for task in ("DASH-1", "BOB-1", "FREE-1"):
        hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a", "--kind", "fix")
    assert hydrate(repo, "claim", "DASH-1", "--as", "-").returncode == 0
    assert hydrate(repo, "claim", "BOB-1", "--as", "bob").returncode == 0
    with web_serving(repo) as server:
        yield server


def _get(server: WebServer, path: str) -> tuple[int, Any]:
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Host": f"127.0.0.1:{port}"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _ids(server: WebServer, path: str) -> list[str]:
    status, data = _get(server, path)
    assert status == 200, data
    return sorted(item["task_id"] for item in data["items"])


def test_nobody_is_no_holders_name(board: WebServer) -> None:
    """A worker may be called ``-``: the board's unclaimed tasks are those whose
    holder is empty, which no claim's holder can be."""
    status, data = _get(board, "/api/board")
    assert status == 200
    holders = {f["value"]: f["count"] for f in data["facets"]["holders"]}
    assert holders == {"": 1, "-": 1, "bob": 1}
    assert _ids(board, "/api/tasks?holder=") == ["FREE-1"]
    assert _ids(board, "/api/tasks?holder") == ["FREE-1"]
    assert _ids(board, "/api/tasks?holder=-") == ["DASH-1"]
    assert _ids(board, "/api/tasks?holder=-&holder=&kind=fix") == ["DASH-1", "FREE-1"]
    assert _ids(board, "/api/tasks?holder=bob&station=in_progress") == ["BOB-1"]
    assert _ids(board, "/api/tasks") == ["BOB-1", "DASH-1", "FREE-1"]


_KINDS = "use one of code, fix, closure, planning, product"
_STATIONS = "use one of open, in_progress, blocked, review, done, cancelled"


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("kind=nope", f"unknown kind 'nope': {_KINDS}"),
        ("kind=fix&kind=Fix", f"unknown kind 'Fix': {_KINDS}"),
        ("kind=", f"unknown kind '': {_KINDS}"),
        ("archived=yes", "archived must be 1 or 0 (or left out), not 'yes'"),
        ("archived=true", "archived must be 1 or 0 (or left out), not 'true'"),
        ("archived=2", "archived must be 1 or 0 (or left out), not '2'"),
        ("archived", "archived must be 1 or 0 (or left out), not ''"),
        ("archived=", "archived must be 1 or 0 (or left out), not ''"),
        ("tag=", "tag must not be empty: leave it out for any tag"),
    ],
)
@pytest.mark.parametrize("endpoint", ["/api/board", "/api/tasks"])
def test_a_filter_refuses_a_value_it_does_not_know(
    board: WebServer, endpoint: str, query: str, error: str
) -> None:
    status, data = _get(board, f"{endpoint}?{query}")
    assert (status, data) == (400, {"error": error})


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/api/tasks?station=nope", f"unknown station 'nope': {_STATIONS}"),
        ("/api/tasks?station=", f"unknown station '': {_STATIONS}"),
        ("/api/task/FREE-1/prompt?outline=yes", "outline must be 1 or 0 (or left out), not 'yes'"),
        ("/api/task/FREE-1/attachments?outline", "outline must be 1 or 0 (or left out), not ''"),
    ],
)
def test_a_station_or_a_switch_refuses_a_value_it_does_not_know(
    board: WebServer, path: str, error: str
) -> None:
    status, data = _get(board, path)
    assert (status, data) == (400, {"error": error})


def test_the_values_the_filters_take(board: WebServer) -> None:
    assert _ids(board, "/api/tasks?kind=fix&kind=code&archived=0") == ["BOB-1", "DASH-1", "FREE-1"]
    assert _ids(board, "/api/tasks?kind=code&archived=1") == []
    assert _ids(board, "/api/tasks?station=open") == ["FREE-1"]
    assert _ids(board, "/api/tasks?tag=none") == []  # (a tag no task has: no task)
    for outline in ("1", "0"):
        assert _get(board, f"/api/task/FREE-1/prompt?outline={outline}")[0] == 200
