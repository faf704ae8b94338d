"""The HTTP server of ``git hydrate web``: the standard library's, read-only.

Every response carries a strict Content-Security-Policy (scripts, styles and
data from this server only; no inline script or style, no frames, no forms),
``nosniff`` and no referrer. Task text reaches the page only as JSON, which the
scripts put into the page as text. Only ``GET`` and ``HEAD`` are served; any
other method is refused with 405, so nothing a page (or another site) sends can
change the repository. A request whose ``Host`` is not this server's own name is
refused too, so that a site that rebinds its name to 127.0.0.1 cannot read the
tasks: listening on every interface, the names are an address (any), this
machine's names and those given with ``--allow-host``. The standard library's
own refusals (a request line too long, a malformed request) carry the same
headers and a JSON line.
"""

from __future__ import annotations

import errno
import ipaddress
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

import msgspec

from ..errors import Conflict, CorruptData, HydrateError, NotFound, ValidationError
from ..ledger import Ledger
from ..model import KINDS, STATIONS
from .board import Board, Filters
from .graph import dependency_graph
from .query import Query
from .taskpage import TaskPages
from .watch import RefsWatch

__all__ = ["CSP", "HOST_NAME", "STATIC_DIR", "WebApp", "WebServer", "json_bytes", "make_server"]

#: The Content-Security-Policy of every response.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: The page's files, shipped with the package.
STATIC_DIR: Final = Path(__file__).resolve().parent / "static"
_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
#: The pages: a path's pattern and the static file that renders it.
_PAGES: Final = (
    (re.compile(r"/\Z"), "board.html"),
    (re.compile(r"/task/[^/]+\Z"), "task.html"),
    (re.compile(r"/graph\Z"), "graph.html"),
)
#: A host name ``--allow-host`` takes (no port, no address: any address is answered).
HOST_NAME: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?\Z")
_ALLOWED: Final = "GET, HEAD"
_ANY_ADDRESS: Final = ("0.0.0.0", "::", "")
_ENCODER: Final = msgspec.json.Encoder()


def json_bytes(data: Any) -> bytes:
    """``data`` as JSON with ``<``, ``>`` and ``&`` escaped: markup in task text
    stays inert even where a browser would sniff the response as HTML."""
    body = _ENCODER.encode(data)
    # (these characters occur only inside JSON strings, where \uXXXX means the same)
    return body.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _static_files() -> dict[str, tuple[bytes, str]]:
    files = {}
    for path in sorted(STATIC_DIR.iterdir()):
        kind = _TYPES.get(path.suffix)
        if kind is not None and path.is_file():
            files[path.name] = (path.read_bytes(), kind)
    return files


class WebApp:
    """The answers of the JSON endpoints, over one :class:`Ledger`.

    The ledger's repository is not shared between threads: every call into it
    holds :attr:`lock`.
    """

    def __init__(self, ledger: Ledger, clock: Callable[[], float] = time.time) -> None:
        self.ledger = ledger
        self.clock = clock
        self.lock = threading.Lock()
        self.watch = RefsWatch(ledger.refs)
        self.board = Board(self.watch)
        self.tasks = TaskPages(ledger)
        self.routes: list[tuple[re.Pattern[str], Callable[..., Any]]] = [
            (re.compile(r"/api/version\Z"), self.version),
            (re.compile(r"/api/board\Z"), self.columns),
            (re.compile(r"/api/tasks\Z"), self.task_list),
            (re.compile(r"/api/graph\Z"), self.graph),
            (re.compile(r"/api/task/([^/]+)\Z"), self.tasks.fields),
            (re.compile(r"/api/task/([^/]+)/attachments\Z"), self.tasks.attachments),
            (re.compile(r"/api/task/([^/]+)/prompt\Z"), self.tasks.prompt),
            (re.compile(r"/api/task/([^/]+)/commits\Z"), self.tasks.commits),
        ]

    def answer(self, path: str, query: Query) -> Any:
        """The JSON answer to ``path``; raises :class:`NotFound` for an unknown one."""
        for pattern, handler in self.routes:
            match = pattern.match(path)
            if match:
                with self.lock:
                    return handler(query, *(unquote(g) for g in match.groups()))
        raise NotFound(f"no such endpoint: {path}")

    def version(self, _query: Query) -> dict[str, Any]:
        return {"version": self.watch.version()}

    def _filters(self, query: Query) -> Filters:
        return Filters(
            tags=query.texts("tag"),
            kinds=query.choices("kind", KINDS),
            holders=query.every("holder"),
            archived=query.flag("archived"),
        )

    def columns(self, query: Query) -> dict[str, Any]:
        _offset, limit = query.page(default_limit=50)
        version = self.watch.version()
        return self.board.columns(
            self.ledger.refs, version, self._filters(query), limit, self.clock()
        )

    def task_list(self, query: Query) -> dict[str, Any]:
        offset, limit = query.page(default_limit=50)
        station = query.choice("station", STATIONS)
        version = self.watch.version()
        filters = self._filters(query)
        refs = self.ledger.refs
        return self.board.page(refs, version, filters, station, offset, limit, self.clock())

    def graph(self, query: Query) -> dict[str, Any]:
        limit = query.integer("limit", 300, low=1, high=2000)
        assert limit is not None
        version = self.watch.version()
        cards = self.board.cards(self.ledger.refs, version, archived=False)
        return {"version": version, **dependency_graph(cards, limit)}


class WebServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its app, its page files and its names."""

    daemon_threads = True
    app: WebApp
    files: dict[str, tuple[bytes, str]]
    #: The ``Host`` values it answers (``name:port``, names lower-cased); listening on
    #: every interface, any address with its port too (:attr:`any_address`).
    hosts: frozenset[str]
    any_address: bool = False
    #: The names given with ``--allow-host`` (lower-cased): answered with any port
    #: or none (a proxy in front of it chooses the port it shows).
    allowed: frozenset[str] = frozenset()
    #: The ``Host`` values it answers, in words, for a refusal to name (the machine's
    #: own names are not spelt out: a site rebound to it could read them).
    answered: str = ""
    #: Connections served at once; one more is closed unanswered (each is a thread:
    #: hundreds of half-sent requests held hundreds of threads).
    MAX_CONNECTIONS: Final = 64
    #: Connections the kernel holds until accepted (the standard library's 5 had a
    #: burst of connections wait a second each for the SYN sent again).
    request_queue_size = 128

    def server_activate(self) -> None:
        self.slots = threading.BoundedSemaphore(self.MAX_CONNECTIONS)
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # (no thread started: its slot is free again)
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client gone or silent (a closed tab, an aborted fetch, a timeout) is no
        error; anything else is one line on standard error, not a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        print(f"error: web: {type(exc).__name__}: {exc}", file=sys.stderr)

    def answers_to(self, host: str) -> bool:
        """Whether a request whose ``Host`` header is ``host`` is for this server."""
        host = host.lower()
        if host in self.hosts or _name_of(host) in self.allowed:
            return True
        if not self.any_address:
            return False
        name, colon, port = host.rpartition(":")
        if not colon or port != str(self.server_address[1]):
            return False
        return _is_address(name)  # (a name: one of the machine's, in hosts, or a stranger's)

    def refusal(self, host: str) -> str:
        """Why a request whose ``Host`` is ``host`` is refused, and what is answered."""
        if not host:
            return "a request needs a Host header naming this server"
        name, port = _name_of(host.lower()), _port_of(host)
        bound = self.server_address[1]
        shown = repr(host[:80])
        if self.answers_to(f"{name}:{bound}"):  # (its own name, another port)
            given = f"port {port[:8]}" if port else "no port, so port 80"
            return f"Host {shown} names {given}, not {bound}: this server answers {self.answered}"
        why = f"Host {shown} is not this server's: it answers {self.answered}"
        if HOST_NAME.match(name) and not _is_address(name):
            why += f"; git hydrate web --allow-host {name} answers {name} too"
        return why


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
    except ValueError:
        return False
    return True


def _port_of(host: str) -> str:
    """The port of a ``Host`` value, ``""`` when it has none (``[::1]:80``: ``80``)."""
    rest = host[len(_name_of(host)) :]
    return rest[1:] if rest.startswith(":") else rest


def _name_of(host: str) -> str:
    """The name of a ``Host`` value, without its port (``[::1]:80``: ``[::1]``)."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.partition(":")[0]


class _WebServer6(WebServer):
    address_family = socket.AF_INET6


def _bind_hint(exc: OSError, port: int) -> str:
    """What to change when binding failed: the port when it is taken (or needs
    privileges), the address when it is no address of this machine or no name at
    all; ``--port`` is no help there."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return "; give an address of this machine with --host (default: 127.0.0.1)"
    return "; choose another with --port N (0: any free port)" if port else ""


def make_server(
    ledger: Ledger, host: str = "127.0.0.1", port: int = 0, allowed: tuple[str, ...] = ()
) -> WebServer:
    """A server bound to ``host:port`` (``0``: any free port), not yet serving,
    answering requests for its own names and ``allowed`` (host names).

    Raises:
        HydrateError: the address cannot be bound (in use, not allowed, unknown).
    """
    try:
        kind = _WebServer6 if ":" in host else WebServer
        server = kind((host, port), Handler)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise HydrateError(
            f"cannot listen on {host}:{port}: {why}{_bind_hint(exc, port)}"
        ) from None
    except (OverflowError, ValueError) as exc:  # pragma: no cover - the CLI checks ports
        raise ValidationError(f"cannot listen on {host}:{port}: {exc}") from None
    server.app = WebApp(ledger)
    server.files = _static_files()
    bound = server.server_address[1]
    names = {"127.0.0.1", "localhost", "[::1]"}  # (and ``allowed``, with any port)
    if host in _ANY_ADDRESS:  # (on every interface: any address, and this machine's names)
        server.any_address = True
        names |= {socket.gethostname(), socket.getfqdn()}
    else:
        names.add(f"[{host}]" if ":" in host else host)
    server.hosts = frozenset(f"{name.lower()}:{bound}" for name in names)
    server.allowed = frozenset(name.lower() for name in allowed)
    if bound == 80:  # (a browser leaves the default port out)
        server.hosts |= {name.lower() for name in names}
    server.answered = _answered(server, host)
    return server


def _answered(server: WebServer, host: str) -> str:
    bound = server.server_address[1]
    if server.any_address:
        values = [
            f"any address of this machine with :{bound} (as 127.0.0.1:{bound})",
            f"localhost:{bound}",
            f"this machine's names with :{bound}",
        ]
    else:
        shown = f"[{host}]" if ":" in host else host
        names = dict.fromkeys(["127.0.0.1", "[::1]", "localhost", shown.lower()])
        values = [f"{name}:{bound}" for name in names]
    values += [f"{name} (any port or none)" for name in sorted(server.allowed)]
    return ", ".join(values[:-1]) + f" or {values[-1]}"


def _status(exc: HydrateError) -> HTTPStatus:
    if isinstance(exc, NotFound):
        return HTTPStatus.NOT_FOUND
    if isinstance(exc, ValidationError):
        return HTTPStatus.BAD_REQUEST
    if isinstance(exc, Conflict):
        return HTTPStatus.CONFLICT
    if isinstance(exc, CorruptData):
        return HTTPStatus.INTERNAL_SERVER_ERROR
    return HTTPStatus.BAD_REQUEST


class Handler(BaseHTTPRequestHandler):
    """GET and HEAD of the pages, their files and the JSON endpoints; 405 otherwise."""

    server: WebServer
    server_version = "git-hydrate"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    #: Seconds a connection may stay silent (mid-request or idle between requests)
    #: before it is closed.
    timeout = 30

    def do_GET(self) -> None:
        self._respond(head=False)

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def __getattr__(self, name: str) -> Any:
        # Every other method (POST, PUT, DELETE, OPTIONS, made-up ones) is refused.
        if name.startswith("do_"):
            return self._refuse
        raise AttributeError(name)

    def _refuse(self) -> None:
        # A body may follow (POST): never read it, and close the connection after.
        self.close_connection = True
        self._send(
            HTTPStatus.METHOD_NOT_ALLOWED,
            _ENCODER.encode({"error": f"{self.command} is not allowed: this page is read-only"}),
            "application/json",
            head=False,
            extra={"Allow": _ALLOWED, "Connection": "close"},
        )

    def send_error(
        self, code: int, message: str | None = None, explain: str | None = None
    ) -> None:
        # (the standard library's own refusals: a request line too long, a malformed
        # request, too many headers; with every response's headers, and closing)
        self.close_connection = True
        try:
            status = HTTPStatus(code)
        except ValueError:  # pragma: no cover - the standard library sends known codes
            status = HTTPStatus.BAD_REQUEST
        body = json_bytes({"error": message or status.phrase})
        head = getattr(self, "command", "") == "HEAD"
        self._send(status, body, "application/json", head, extra={"Connection": "close"})

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: the terminal shows the address and errors only

    def _refused_host(self, head: bool) -> bool:
        """Refuse (and say so) a request with two ``Host`` headers, as RFC 9112
        section 3.2 asks (the first here, the last in a proxy), or for another host."""
        hosts = self.headers.get_all("Host") or [""]
        bad = f"Host given {len(hosts)} times: give it once" if len(hosts) > 1 else ""
        if not bad and ("\n" in hosts[0] or "\r" in hosts[0]):
            bad = "Host folded over two lines: give it on one"  # (RFC 9112 5.2: obs-fold)
        if bad:
            self.close_connection = True
            body = _ENCODER.encode({"error": bad})
            extra = {"Connection": "close"}
            self._send(HTTPStatus.BAD_REQUEST, body, "application/json", head, extra=extra)
            return True
        # (a target in absolute form names its host, which Host then does not: RFC 9112 3.2.2)
        host = urlsplit(self.path).netloc if "://" in self.path.split("?", 1)[0] else hosts[0]
        if self.server.answers_to(host):
            return False
        body = _ENCODER.encode({"error": self.server.refusal(host)})
        self._send(HTTPStatus.MISDIRECTED_REQUEST, body, "application/json", head)
        return True

    def _respond(self, head: bool) -> None:
        if self._refused_host(head):
            return
        target = urlsplit(self.path)
        path = target.path
        if path.startswith("/api/"):
            self._api(path, target.query, head)
            return
        if path.startswith("/static/"):
            found = self.server.files.get(path.removeprefix("/static/"))
            if found is not None:
                self._send(HTTPStatus.OK, found[0], found[1], head, cache="no-cache")
                return
        for pattern, page in _PAGES:
            if pattern.match(path):
                content, kind = self.server.files[page]
                self._send(HTTPStatus.OK, content, kind, head, cache="no-cache")
                return
        self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)

    def _api(self, path: str, raw_query: str, head: bool) -> None:
        try:
            data = self.server.app.answer(path, Query(raw_query))
            status = HTTPStatus.OK
        except HydrateError as exc:
            data, status = {"error": str(exc)}, _status(exc)
        except Exception as exc:  # a bug: say so on the page and the terminal, keep serving
            print(f"error: web: {type(exc).__name__}: {exc} ({path})", file=sys.stderr)
            data = {"error": f"internal error: {type(exc).__name__}: {exc}"}
            status = HTTPStatus.INTERNAL_SERVER_ERROR
        self._send(status, json_bytes(data), "application/json", head)

    def _send(
        self,
        status: HTTPStatus,
        body: bytes,
        kind: str,
        head: bool,
        *,
        cache: str = "no-store",
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        for name, value in {**_HEADERS, **(extra or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", cache)
        self.end_headers()
        if not head:
            self.wfile.write(body)
