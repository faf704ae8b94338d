"""What a first pull's listing hands its fetch: credentials, against a real git
http-backend behind basic auth (``u:tok``) and the real ``git`` binary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_hydrate.store import refs as refs_module

from .conftest import fsck, git, hydrate
from .test_sync_packed import _AUTHED_SERVER, _loose_mirror_refs, _pushed_remote, remote

__all__ = ["remote"]  # (the fixture, shared)

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 13), reason="http.server's CGI is gone from Python 3.13"
)


@pytest.fixture
def served(remote: Path, tmp_path: Path) -> Iterator[str]:
    """The URL of ``remote`` (four tasks pushed) served over HTTP, basic auth ``u:tok``."""
    _pushed_remote(remote, tmp_path)
    root = Path(tempfile.mkdtemp(prefix="hydrate-auth-"))
    git(root, "clone", "-q", "--mirror", str(remote), str(root / "tasks.git"))
    script = root / "site" / "cgi-bin" / "git"
    script.parent.mkdir(parents=True)
    script.write_text(
        f"#!/bin/sh\nGIT_PROJECT_ROOT='{root}' GIT_HTTP_EXPORT_ALL=1 "
        "exec git -c safe.directory='*' http-backend\n"
    )
    for path in [root, *root.rglob("*")]:  # (CGI runs as nobody under root)
        path.chmod(0o777 if path.is_dir() or path == script else 0o666)
    server = subprocess.Popen(
        [sys.executable, "-c", _AUTHED_SERVER],
        cwd=root / "site",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield f"http://127.0.0.1:{server.stdout.readline().strip()}/cgi-bin/git/tasks.git"
    finally:
        server.terminate()
        server.wait(timeout=5)
        shutil.rmtree(root, ignore_errors=True)


def _askpass(tmp_path: Path, password: str = "tok") -> tuple[Path, Path]:
    """An askpass program answering ``u`` and ``password``, and the file of its prompts."""
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass"
    askpass.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{asked}"\n'
        f'case "$1" in Username*) echo u;; *) echo {password};; esac\n'
    )
    askpass.chmod(0o755)
    return askpass, asked


def _prompts(asked: Path) -> list[str]:
    return [p.split(" ", 1)[0] for p in asked.read_text().splitlines()] if asked.exists() else []


def _clone_of(url: str, tmp_path: Path) -> Path:
    b = tmp_path / "b"
    git(tmp_path, "init", "-q", str(b))
    git(b, "remote", "add", "origin", url)
    return b


def test_a_stale_saved_credential_is_asked_again_once_and_saved(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A credential helper's saved password is wrong: the listing's refusal is not
    the pull's end (no person or program answered it), git fetch asks the askpass
    program once, and the helper saves the good one. The pull failed ("Authentication
    failed"), asked nobody, and the helper's credential was gone."""
    b = _clone_of(served, tmp_path)
    port = served.split(":")[2].split("/")[0]
    saved = tmp_path / "creds"
    saved.write_text(f"http://u:wrong@127.0.0.1:{port}\n")
    git(b, "config", "credential.helper", f"store --file={saved}")
    askpass, asked = _askpass(tmp_path)
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    res = hydrate(b, "pull", env={"GIT_ASKPASS": str(askpass)})
    assert res.returncode == 0 and "4 new here" in res.stdout, res
    assert _prompts(asked) == ["Username", "Password"]
    assert saved.read_text().splitlines() == [f"http://u:tok@127.0.0.1%3a{port}"]
    assert len(git(b, "for-each-ref", "refs/hydrate-remotes/").splitlines()) == 4
    fsck(b)


def test_a_wrong_answer_from_the_askpass_program_ends_the_pull(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The askpass program answered the listing and the remote refused it: asking
    again would ask the same program, so the pull ends there, asked once, and the
    token it gave appears in no error."""
    b = _clone_of(served, tmp_path)
    askpass, asked = _askpass(tmp_path, password="s3cr3t-wrong")
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    res = hydrate(b, "pull", env={"GIT_ASKPASS": str(askpass)})
    assert res.returncode != 0 and "Authentication failed" in res.stderr, res
    assert _prompts(asked) == ["Username", "Password"]
    assert "s3cr3t" not in res.stderr + res.stdout
    assert _loose_mirror_refs(b) == []


def _sessions() -> dict[int, tuple[int, int, str]]:
    """``{pid: (parent, session, state)}`` of the processes alive now (from /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # state ppid pgrp session ...
        found[int(entry.name)] = (int(fields[1]), int(fields[3]), fields[0])
    return found


def test_an_interrupted_listing_leaves_no_git_running(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the foreground process group) during a first pull's listing,
    against a server that accepts and never answers: the pull exits 130 and stops
    the listing's session with it. git, in a session of its own, never heard the
    signal: git was killed, its ``git remote-http`` ran on, forever."""
    import signal
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return
            accepted.set()

    threading.Thread(target=accept, daemon=True).start()
    b = _clone_of(f"http://127.0.0.1:{listener.getsockname()[1]}/tasks.git", tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    pull = subprocess.Popen(
        [sys.executable, "-m", "git_hydrate", "pull"],
        cwd=b,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    sessions: set[int] = set()
    try:
        assert accepted.wait(60), "the listing never connected"
        listing = [pid for pid, (ppid, sid, _) in _sessions().items() if ppid == pull.pid]
        sessions = {_sessions()[pid][1] for pid in listing} - {pull.pid}
        assert sessions, "the listing runs in a session of its own"
        os.killpg(pull.pid, signal.SIGINT)
        _, err = pull.communicate(timeout=60)
        assert pull.returncode == 130, err
        deadline = time.monotonic() + 10  # (killed processes take a moment to be gone)
        left = [1]
        while left and time.monotonic() < deadline:
            left = [p for p, (_, sid, st) in _sessions().items() if sid in sessions and st != "Z"]
        assert left == [], "git processes of the listing's session still run"
    finally:
        for pid, (_, sid, _) in _sessions().items():
            if sid in sessions | {pull.pid}:
                os.kill(pid, signal.SIGKILL)
        pull.wait()
        listener.close()
        for conn in held:
            conn.close()
