"""A `git-hydrate` executable on PATH that runs this checkout, for tests driving the real git.

The executable is the client of ``tests/zygote.py``: each `git hydrate` is a real
process, forked from a server of this pytest process (one per xdist worker,
started when first needed) that has imported the command line already.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .conftest import ROOT, SESSION_ENV

#: The server, its client's text and the client's path, once started.
_SERVER: list[tuple[subprocess.Popen[bytes], str, str, str]] = []


def hydrate_executable() -> str:
    """The text of a `git-hydrate` executable (a client of the fork server)."""
    return _server()[1]


def hydrate_command() -> list[str]:
    """The argv that runs `git-hydrate` (``python -m git_hydrate``), forked by the server."""
    return [_server()[2]]


def python_command() -> list[str]:
    """The argv of ``python`` for ``[*python_command(), "-c", CODE, *ARGS]``: a process
    of its own that has imported git_hydrate already, forked by the server (not for
    tests of what a new interpreter imports or does at start-up)."""
    return [_server()[3]]


def _server() -> tuple[subprocess.Popen[bytes], str, str, str]:
    if not _SERVER:
        where = tempfile.mkdtemp(prefix="hydrate-zygote-")
        if len(where) > 90:  # a Unix socket's path has room for ~107 bytes
            shutil.rmtree(where)
            where = tempfile.mkdtemp(prefix="hydrate-zygote-", dir="/tmp")
        socket_path = os.path.join(where, "s")
        env = dict(SESSION_ENV)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote", socket_path],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline() or "null")
        assert ready, "tests/zygote.py did not start"
        from .zygote import client_script

        text = client_script(sys.executable, socket_path, str(ROOT), env, ready["fs"])
        client = os.path.join(where, "git-hydrate")
        python = os.path.join(where, "python")
        for path, mode in ((client, "hydrate"), (python, "python")):
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(
                    client_script(sys.executable, socket_path, str(ROOT), env, ready["fs"], mode)
                )
            os.chmod(path, 0o755)
        _SERVER.append((server, text, client, python))
        atexit.register(_stop, server, where)
    return _SERVER[0]


def _stop(server: subprocess.Popen[bytes], where: str) -> None:
    assert server.stdin is not None
    server.stdin.close()  # the server exits at EOF
    server.wait()
    shutil.rmtree(where, ignore_errors=True)


def hydrate_on_path(directory: Path) -> dict[str, str]:
    """Write ``directory/git-hydrate`` (runs ``python -m git_hydrate`` from the checkout,
    forked by the fork server) and return an environment whose PATH finds it first."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "git-hydrate"
    script.write_text(hydrate_executable(), encoding="utf-8")
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{directory}{os.pathsep}{env.get('PATH', '')}"
    return env
