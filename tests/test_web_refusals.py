"""git hydrate web's refusals at the edge: the Host names a server on every interface
answers, the standard library's own errors, and a parameter given twice."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_hydrate.web.server import CSP, WebServer

from .conftest import hydrate, web_serving


def _serve(repo: Path, host: str, allowed: tuple[str, ...] = ()) -> Iterator[WebServer]:
    hydrate(repo, "task-add", "W-1", "--objective", "seen", "--acceptance", "a")
    with web_serving(repo, host, allowed) as server:
        yield server


@pytest.fixture
def everywhere(repo: Path) -> Iterator[WebServer]:
    """A server listening on every interface that also answers ``board.example.org``."""
    yield from _serve(repo, "0.0.0.0", ("Board.Example.org",))


@pytest.fixture
def loopback(repo: Path) -> Iterator[WebServer]:
    yield from _serve(repo, "127.0.0.1")


def _get(server: WebServer, path: str, host: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    try:
        conn.request("GET", path, headers={"Host": host})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("127.0.0.1", 200),
        ("192.0.2.7", 200),  # (an address of this machine, as a LAN reaches it)
        ("[::1]", 200),
        ("localhost", 200),
        ("board.example.org", 200),
        ("BOARD.example.ORG", 200),
        ("attacker.example", 421),  # (a name rebound to this machine)
        ("127.0.0.1.attacker.example", 421),
        ("[not-an-address]", 421),
    ],
)
def test_every_interface_answers_addresses_and_its_names_only(
    everywhere: WebServer, name: str, status: int
) -> None:
    port = everywhere.server_address[1]
    got, headers, body = _get(everywhere, "/api/board", f"{name}:{port}")
    assert got == status, body
    assert headers["Content-Security-Policy"] == CSP
    if status == 421:
        error = json.loads(body)["error"]
        assert f"not this server's: it answers any address of this machine with :{port}" in error
        assert ("--allow-host" in error) is (name != "[not-an-address]")  # (a name it takes)
        assert "W-1" not in body.decode()


def test_every_interface_answers_the_machines_own_name(everywhere: WebServer) -> None:
    port = everywhere.server_address[1]
    assert _get(everywhere, "/api/board", f"{socket.gethostname()}:{port}")[0] == 200


def test_an_allowed_name_is_answered_with_any_port_or_none(everywhere: WebServer) -> None:
    """A proxy in front of the board chooses the port it shows (or none)."""
    for host in ("board.example.org", "board.example.org:443", "Board.Example.Org:8080"):
        assert _get(everywhere, "/api/board", host)[0] == 200, host
    assert _get(everywhere, "/api/board", "other.example.org")[0] == 421


def test_a_request_without_a_host_is_refused_in_a_line(loopback: WebServer) -> None:
    status, _headers, body = _raw(
        loopback, b"GET /api/board HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n"
    )
    assert status.split()[1] == "421"
    assert json.loads(body)["error"] == "a request needs a Host header naming this server"


def test_an_address_with_another_port_is_refused(everywhere: WebServer) -> None:
    port = everywhere.server_address[1]
    assert _get(everywhere, "/api/board", f"127.0.0.1:{port + 1}")[0] == 421
    assert _get(everywhere, "/api/board", "127.0.0.1")[0] == 421  # (no port: 80 is not it)


def test_the_loopback_answers_no_other_address(loopback: WebServer) -> None:
    port = loopback.server_address[1]
    assert _get(loopback, "/api/board", f"127.0.0.1:{port}")[0] == 200
    assert _get(loopback, "/api/board", f"192.0.2.7:{port}")[0] == 421


def test_a_parameter_given_twice_is_refused(loopback: WebServer) -> None:
    port = loopback.server_address[1]
    status, _headers, body = _get(loopback, "/api/board?limit=1&limit=500", f"127.0.0.1:{port}")
    assert status == 400
    assert json.loads(body)["error"] == "limit given 2 times: give it once"
    # (a filter may repeat: every tag asked)
    assert _get(loopback, "/api/board?tag=a&tag=b", f"127.0.0.1:{port}")[0] == 200


def _raw(server: WebServer, request: bytes) -> tuple[str, dict[str, str], bytes]:
    with socket.create_connection(("127.0.0.1", server.server_address[1]), timeout=30) as conn:
        conn.sendall(request)
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return status, headers, body


@pytest.mark.parametrize(
    ("request_bytes", "code"),
    [
        (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", "414"),
        (b"GET / HTTP/1.1\r\nX-<script>: " + b"a" * 70000 + b"\r\n\r\n", "431"),
    ],
)
def test_the_standard_librarys_refusals_carry_the_policy(
    loopback: WebServer, request_bytes: bytes, code: str
) -> None:
    status, headers, body = _raw(loopback, request_bytes)
    assert status.split()[1] == code
    assert headers["Content-Security-Policy"] == CSP
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Type"] == "application/json"
    assert b"<" not in body  # (markup in the request stays inert)
    assert json.loads(body)["error"]


@pytest.mark.parametrize("name", ["board.example.org:80", "a b", "-x", "[::1]"])
def test_a_bad_allowed_name_is_one_line(repo: Path, name: str) -> None:
    result = hydrate(repo, "web", "--port", "0", "--allow-host", name)
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "is not a host name" in result.stderr


@pytest.mark.parametrize("order", [0, 1])
def test_two_host_headers_are_refused(loopback: WebServer, order: int) -> None:
    """Read one way here and another by a proxy: as RFC 9112 asks, 400 either way."""
    ours = f"127.0.0.1:{loopback.server_address[1]}"
    first, second = [(ours, "evil.example"), ("evil.example", ours)][order]
    status, headers, body = _raw(
        loopback,
        f"GET /api/board HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\n\r\n".encode(),
    )
    assert status.split()[1] == "400"
    assert json.loads(body) == {"error": "Host given 2 times: give it once"}
    assert headers["Content-Security-Policy"] == CSP and headers["Connection"] == "close"


def test_a_folded_host_is_refused_and_an_absolute_target_names_the_host(
    loopback: WebServer,
) -> None:
    """A Host folded over two lines (obsolete line folding) is a 400, as RFC 9112 asks;
    a request target in absolute form names the host itself (Host is then not read),
    so one naming another host is refused with the right Host."""
    ours = f"127.0.0.1:{loopback.server_address[1]}"
    status, _headers, body = _raw(
        loopback, f"GET /api/board HTTP/1.1\r\nHost: {ours}\r\n ,x\r\n\r\n".encode()
    )
    assert status.split()[1] == "400"
    assert json.loads(body) == {"error": "Host folded over two lines: give it on one"}
    status, _headers, body = _raw(
        loopback,
        f"GET http://evil.example/api/board HTTP/1.1\r\nHost: {ours}\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    assert status.split()[1] == "421" and "evil.example" in json.loads(body)["error"]
    status, _headers, _body = _raw(
        loopback,
        f"GET http://{ours}/api/board HTTP/1.1\r\nHost: {ours}\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    assert status.split()[1] == "200"


def test_a_host_without_its_port_is_port_80_and_told_what_is_answered(
    loopback: WebServer,
) -> None:
    port = loopback.server_address[1]
    answered = f"127.0.0.1:{port}, [::1]:{port} or localhost:{port}"
    for host, names in (("127.0.0.1", "no port, so port 80"), ("LocalHost:1", "port 1")):
        status, _headers, body = _get(loopback, "/api/version", host)
        assert status == 421
        assert json.loads(body)["error"] == (
            f"Host {host!r} names {names}, not {port}: this server answers {answered}"
        )
    status, _headers, body = _get(loopback, "/api/version", f"evil.example:{port}")
    assert status == 421
    assert json.loads(body)["error"] == (
        f"Host 'evil.example:{port}' is not this server's: it answers {answered}; "
        "git hydrate web --allow-host evil.example answers evil.example too"
    )


def test_a_refusal_on_every_interface_names_what_is_answered_not_the_machine(
    everywhere: WebServer,
) -> None:
    port = everywhere.server_address[1]
    status, _headers, body = _get(everywhere, "/api/version", "192.0.2.7")
    assert status == 421
    assert json.loads(body)["error"] == (
        f"Host '192.0.2.7' names no port, so port 80, not {port}: this server answers "
        f"any address of this machine with :{port} (as 127.0.0.1:{port}), localhost:{port}, "
        f"this machine's names with :{port} or board.example.org (any port or none)"
    )


def test_a_client_gone_before_its_answer_prints_nothing(
    loopback: WebServer, capfd: pytest.CaptureFixture[str]
) -> None:
    """review9: each request whose client reset the connection before the answer
    (a closed tab) printed a traceback or two on the server's terminal."""
    import struct
    import time

    port = loopback.server_address[1]
    for budget in range(100, 106):
        conn = socket.create_connection(("127.0.0.1", port), timeout=30)
        conn.sendall(
            f"GET /api/task/W-1/prompt?max_bytes={budget}k HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{port}\r\n\r\n".encode()
        )
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # (a reset: the answer's write fails)
    time.sleep(0.5)
    assert _get(loopback, "/api/version", f"127.0.0.1:{port}")[0] == 200
    assert capfd.readouterr().err == ""


def test_connections_are_bounded_and_a_silent_one_is_closed(
    loopback: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review9: a connection that never finished its request held a thread for as
    long as it stayed open (200 of them: 201 threads). Past MAX_CONNECTIONS one
    more is closed unanswered; a silent one is closed after the timeout."""
    import time

    from git_hydrate.web.server import Handler

    monkeypatch.setattr(Handler, "timeout", 1)
    port = loopback.server_address[1]
    held = []
    try:
        for _ in range(loopback.MAX_CONNECTIONS):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
            held[-1].sendall(b"GET / HTTP/1.1\r\n")  # (and no more)
        time.sleep(0.3)
        extra = socket.create_connection(("127.0.0.1", port), timeout=30)
        with extra:
            assert extra.recv(100) == b""  # (closed unanswered)
        for conn in held:  # (each closed after the timeout, a second)
            assert conn.recv(100) == b""
    finally:
        for conn in held:
            conn.close()
    assert _get(loopback, "/api/version", f"127.0.0.1:{port}")[0] == 200


def test_a_budget_too_long_to_be_one_is_refused_not_cut(loopback: WebServer) -> None:
    """review9: a budget value was cut to 40 characters, so 38 zeros and 64k were
    read as a 64-byte budget."""
    port = loopback.server_address[1]
    status, _headers, body = _get(
        loopback, "/api/task/W-1/prompt?max_bytes=" + "0" * 38 + "64k", f"127.0.0.1:{port}"
    )
    assert status == 400 and "is no size (too long)" in json.loads(body)["error"]
