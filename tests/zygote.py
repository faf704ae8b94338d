"""A fork server for the `git hydrate` processes tests start: each is a real process
(its own pid, the caller's stdin, stdout and stderr, working directory, environment
and umask, an exit status of its own), forked from a server that has already
imported what a command imports, instead of a new interpreter doing it again
(~130 ms of CPU each, ~600 ms for the MCP server's SDK; the fork costs a few).

    python tests/zygote.py SOCKET      # the server: imports, then answers on SOCKET

The client is a small script (:func:`client_script`, run with ``python -SI``: no
site, so ~20 ms) that sends its argv, working directory, environment and umask
with its descriptors 0, 1 and 2 over a Unix socket, is told the pid of the
process forked for it, passes on the signals it gets, and exits as that process
does. The forked process runs ``python -m git_hydrate`` as a new interpreter
would (``runpy``, then the interpreter's own exit: atexit, threads joined,
streams flushed, a traceback and status 1 on an uncaught exception). Where the
client cannot be served (no server, a descriptor closed, a ``PYTHON*`` setting
the server was not started with) it runs ``python -m git_hydrate`` itself.
A second client (mode ``"python"``) runs ``python -c CODE ARGS`` so: the
writers that concurrency tests start, each a process of its own, without
importing git_hydrate again (~150 ms of CPU each).

Not for tests of what a new interpreter does: what it imports, its start-up,
its caches on disk (those start ``sys.executable`` themselves).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import sys
from typing import Any

#: The client, run by ``python -SI`` (stdlib only); ``%(...)s`` filled by client_script.
_CLIENT = r"""#!%(python)s -SI
import json, os, signal, socket, sys

SOCKET = %(socket)r
MODE = %(mode)r  # "hydrate": python -m git_hydrate ARGS; "python": python -c CODE ARGS
EXPECTED = %(expected)r  # the PYTHON* settings of the server, less PYTHONPATH
FS = %(fs)r  # the server's file system encoding
PATHS = %(paths)r  # what PYTHONPATH may name (the server imports from these)


def fallback():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (%(root)r, env.get("PYTHONPATH")) if p)
    head = [%(python)r] if MODE == "python" else [%(python)r, "-m", "git_hydrate"]
    argv = [*head, *sys.argv[1:]]
    os.execve(argv[0], argv, env)


def servable():
    given = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    paths = [p for p in given.pop("PYTHONPATH", "").split(os.pathsep) if p]
    if given != EXPECTED or not set(paths) <= set(PATHS):
        return False
    if [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()] != FS:
        return False
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def main():
    if not servable() or (MODE == "python" and sys.argv[1:2] != ["-c"]):
        fallback()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.connect(SOCKET)
    except OSError:
        fallback()
    umask = os.umask(0o22)
    os.umask(umask)
    streams = [
        [s.encoding, s.errors] for s in (sys.stdin, sys.stdout, sys.stderr)
    ]
    request = {
        "mode": MODE,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "umask": umask,
        "streams": streams,
    }
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    answer = conn.recv(64)
    if not answer:  # nothing forked
        fallback()
    pid = int(answer)

    def forward(number, _frame):
        try:
            os.kill(pid, number)
        except ProcessLookupError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, forward)
    answer = conn.recv(64)
    code = int(answer) if answer else 1
    if code < 0:  # killed by a signal: so is this process
        try:
            signal.signal(-code, signal.SIG_DFL)
        except OSError:
            pass  # SIGKILL, SIGSTOP: their handling is the default already
        os.kill(os.getpid(), -code)
    sys.exit(code)


main()
"""


def client_script(
    python: str,
    socket_path: str,
    root: str,
    env: dict[str, str],
    fs: list[str],
    mode: str = "hydrate",
) -> str:
    """The client's text, for a server on ``socket_path`` started with ``env``
    (``fs``: its file system encoding and errors, from its first line): run as
    ``CLIENT ARGS``, it is ``python -m git_hydrate ARGS``; in the mode ``"python"``,
    run as ``CLIENT -c CODE ARGS``, it is ``python -c CODE ARGS`` (anything else
    its own new interpreter)."""
    expected = {k: v for k, v in env.items() if k.startswith("PYTHON") and k != "PYTHONPATH"}
    paths = [root, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return _CLIENT % {
        "python": python,
        "socket": socket_path,
        "mode": mode,
        "expected": expected,
        "paths": paths,
        "root": root,
        "fs": fs,
    }


#: Whether this interpreter's streams are unbuffered (``-u``, ``PYTHONUNBUFFERED``):
#: as its start-up made ``stdout``, before a fork replaces it.
_UNBUFFERED = [bool(sys.stdout.write_through)]


def _preload() -> None:
    """What commands import, imported once here."""
    import git_hydrate.cli
    import git_hydrate.ledger
    import git_hydrate.quick

    try:  # the optional extras, as far as they are installed
        import git_hydrate.pack.tokens
        import git_hydrate.serve.server  # noqa: F401
    except ImportError:
        pass


#: Whether the MCP SDK was imported here (see :func:`_preload_sdk`).
_SDK_LOADED: list[bool] = []
#: What ``git hydrate mcp`` imports of the SDK (``git_hydrate/serve/server.py``).
_SDK_MODULES = (
    "anyio",
    "anyio._backends._asyncio",
    "mcp.server.lowlevel",
    "mcp.server.stdio",
    "mcp.shared.exceptions",
    "mcp_types",
)


def _preload_sdk() -> None:
    """The MCP SDK's modules, imported here at the first request naming ``mcp``
    (~1.3 CPU-seconds, which every `git hydrate mcp` forked would spend again);
    not at start-up, for a server that never forks an MCP server."""
    if _SDK_LOADED:
        return
    _SDK_LOADED.append(True)
    import gc
    import importlib

    try:
        for name in _SDK_MODULES:
            importlib.import_module(name)
    except ImportError:
        return  # the extra is not installed: the command says so itself

    gc.freeze()


def _serve(listener: socket.socket) -> tuple[dict[str, Any], list[int]]:
    """Fork a process for each request; answer each client its pid, then its exit
    status. Returns only in a forked process: its request and descriptors."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _n, _f: None)
    waiting: dict[int, socket.socket] = {}
    chooser = selectors.DefaultSelector()
    chooser.register(listener, selectors.EVENT_READ)
    chooser.register(wake_r, selectors.EVENT_READ)
    chooser.register(sys.stdin, selectors.EVENT_READ)  # the tests' end: EOF
    while True:
        for key, _events in chooser.select():
            if key.fileobj is sys.stdin:
                if not os.read(0, 512):
                    # the tests' end: no finalising of all the server imported (the
                    # xdist worker waits for this exit before its own)
                    os._exit(0)
            elif key.fileobj is listener:
                conn, _ = listener.accept()
                data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
                if b'"mcp"' in data:  # perhaps `git hydrate mcp`: the SDK, once
                    _preload_sdk()
                pid = os.fork()
                if pid == 0:
                    chooser.close()
                    for other in (listener, conn, *waiting.values()):
                        other.close()
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    os.close(wake_r)
                    os.close(wake_w)
                    return json.loads(data), fds
                for fd in fds:
                    os.close(fd)
                conn.send(str(pid).encode())
                waiting[pid] = conn
            else:
                os.read(wake_r, 512)
                _reap(waiting)


def _reap(waiting: dict[int, socket.socket]) -> None:
    while waiting:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # the client went away
                conn.send(str(os.waitstatus_to_exitcode(status)).encode())
            conn.close()


#: The code of a ``python -c`` request, in the process forked for it.
_CODE: list[str] = []


def _become(request: dict[str, Any], fds: list[int]) -> None:
    """Take the client's descriptors, directory, environment and umask, and its
    streams' encodings and buffering (what a new interpreter would choose)."""
    import locale
    import time

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    locale.setlocale(locale.LC_CTYPE, "")
    if request.get("mode") == "python":  # python -c CODE ARGS
        _CODE.append(request["argv"][1])
        sys.path[0] = ""  # `python -c` puts the working directory first, so named
        sys.argv = ["-c", *request["argv"][2:]]
    else:
        sys.path[0] = request["cwd"]  # `python -m` puts the working directory first
        sys.argv = ["-m", *request["argv"]]
    for fd, (encoding, errors) in enumerate(request["streams"]):
        _stream(fd, encoding, errors)


def _stream(fd: int, encoding: str, errors: str) -> None:
    """``sys.stdin``, ``stdout`` or ``stderr`` (descriptor ``fd``) made as the
    interpreter makes them at start-up (``create_stdio``): on the descriptor,
    never closing it, in the client's encoding (its locale and settings)."""
    import io

    buffered = not _UNBUFFERED[0]
    write = fd != 0
    mode, buffering = ("wb", -1 if buffered else 0) if write else ("rb", -1)
    raw = open(fd, mode, buffering, closefd=False)  # noqa: SIM115 (the stream's, for good)
    line_buffering = buffered and (os.isatty(fd) or fd == 2)
    stream = io.TextIOWrapper(
        raw,
        encoding=encoding,
        errors=errors,
        newline="\n",
        line_buffering=line_buffering,
        write_through=not buffered,
    )
    stream.mode = "w" if write else "r"  # type: ignore[misc]
    name = ("stdin", "stdout", "stderr")[fd]
    setattr(sys, name, stream)
    setattr(sys, f"__{name}__", stream)


def main(socket_path: str) -> None:
    _preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(socket_path)
    listener.listen(64)
    import gc

    gc.freeze()  # what is imported stays out of the forks' collections (and pages)
    ready = {"fs": [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    request, fds = _serve(listener)
    _become(request, fds)


def _run() -> None:
    """Run ``python -m git_hydrate`` (or ``-c CODE``) in this forked process, and exit as the
    interpreter would: the status of ``SystemExit`` (its message printed), else
    0, or the traceback and 1; non-daemon threads joined, atexit functions run,
    streams flushed. Then ``os._exit``: tearing down every module the server
    imported would write to all of its memory, copying each page it shares with
    the server (seconds of system time over a run)."""
    import runpy
    import threading
    import types

    main = sys.modules["__main__"] = types.ModuleType("__main__")  # as empty as a new one
    code = 0
    try:
        if _CODE:  # python -c: the code run in __main__, as the interpreter runs it
            exec(compile(_CODE[0], "<string>", "exec"), main.__dict__)
        else:
            runpy._run_module_as_main("git_hydrate")  # type: ignore[attr-defined]
    except SystemExit as exc:
        code = _exit_status(exc.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as the interpreter does when stdout cannot be flushed
    os._exit(code)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    main(sys.argv[1])
    _run()
