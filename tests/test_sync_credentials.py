"""What a first pull's listing hands its fetch: credentials, against a real git
http-backend behind basic auth (``u:TOKEN``) and the real ``git`` binary."""

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
from git_hydrate.store.credentials import Given, Told, heard
from git_hydrate.store.process import run_git

from .conftest import fsck, git, hydrate, silent_remote
from .test_sync_packed import _AUTHED_SERVER, _loose_mirror_refs, _pushed_remote, remote

__all__ = ["remote"]  # (the fixture, shared)

#: The password the server takes: nowhere else, so that a leak of it can be looked for.
TOKEN = "tok-7c1e9a5d"

pytestmark = pytest.mark.skipif(
    sys.version_info >= (3, 13), reason="http.server's CGI is gone from Python 3.13"
)


@pytest.fixture
def served(remote: Path, tmp_path: Path) -> Iterator[str]:
    """The URL of ``remote`` (four tasks pushed) served over HTTP, basic auth ``u:TOKEN``."""
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
    code = "import sys\nAUTH = sys.stdin.readline().strip().encode()\n" + _AUTHED_SERVER
    server = subprocess.Popen(  # (the password on stdin: in no argument, no environment)
        [sys.executable, "-c", code.replace('b"u:tok"', "AUTH")],
        stdin=subprocess.PIPE,
        cwd=root / "site",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(f"u:{TOKEN}\n")
        server.stdin.flush()
        yield f"http://127.0.0.1:{server.stdout.readline().strip()}/cgi-bin/git/tasks.git"
    finally:
        server.terminate()
        server.wait(timeout=5)
        shutil.rmtree(root, ignore_errors=True)


def _askpass(tmp_path: Path, password: str = TOKEN) -> tuple[Path, Path]:
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
    assert saved.read_text().splitlines() == [f"http://u:{TOKEN}@127.0.0.1%3a{port}"]
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


def _cmdline(pid: int) -> bytes:
    """The command line of process ``pid`` (empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


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


@pytest.mark.parametrize(("name", "code"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_an_interrupted_listing_leaves_no_git_running(
    tmp_path: Path, name: str, code: int
) -> None:
    """Ctrl-C (SIGINT to the foreground process group), ``timeout``'s SIGTERM or a
    closed terminal's SIGHUP during a first pull's listing, against a server that
    accepts and never answers: the pull exits 128 + the signal and stops the
    listing's session with it. git, in a session of its own, never heard the
    signal: git was killed, its ``git remote-http`` ran on, forever."""
    import signal
    import time

    with silent_remote() as (url, accepted):
        b = _clone_of(url, tmp_path)
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
            running = _sessions()
            children = {pid: sid for pid, (ppid, sid, _) in running.items() if ppid == pull.pid}
            listing = any(b"ls-remote" in _cmdline(pid) for pid in children)
            if listing:
                assert set(children.values()) - {pull.pid}, "the listing's session is its own"
            # (on a loaded machine the listing can end first, and git fetch, in the pull's
            # own session, meet the silent server: the signal reaches it there, and the
            # pull may end by it, which a shell reports as 128 + the signal too)
            sessions = set(children.values()) | {pull.pid}
            signum = getattr(signal, name)
            os.killpg(pull.pid, signum)
            _, err = pull.communicate(timeout=60)
            assert pull.returncode in ((code,) if listing else (code, -signum)), err
            deadline = time.monotonic() + 10  # (killed processes take a moment to be gone)
            left = [1]
            while left and time.monotonic() < deadline:
                left = [
                    p for p, (_, sid, st) in _sessions().items() if sid in sessions and st != "Z"
                ]
                time.sleep(0.01) if left else None
            assert left == [], "git processes of the listing's session still run"
        finally:
            for pid, (_, sid, _) in _sessions().items():
                if sid in sessions | {pull.pid}:
                    os.kill(pid, signal.SIGKILL)
            pull.wait()


FILL = ("credential", "fill")


def _fill(given: Given, request: str, repo: Path) -> str:
    """What ``git credential fill`` answers ``request`` with ``given``'s helper alone
    (no terminal, no askpass program: ``""`` when nothing answers)."""
    helper = given.helper()
    assert helper is not None
    ran = run_git(
        [*("-c", "credential.useHttpPath=true"), "-c", "credential.helper=" + helper, *FILL],
        cwd=str(repo),
        input=request.encode(),
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": ""},
        check=False,
        pass_fds=(given.fd,),
        started=given.started,
    )
    return ran.stdout.decode() if ran.returncode == 0 else ""


_CAPTURED = b"protocol=http\nhost=127.0.0.1:8080\nusername=u\npassword=" + TOKEN.encode() + b"\n"


@pytest.mark.parametrize(
    ("captured", "request_", "answered"),
    [
        (_CAPTURED, "protocol=http\nhost=127.0.0.1:8080\n", True),
        (_CAPTURED, "protocol=http\nhost=127.0.0.1:8080\npath=any.git\n", True),
        (_CAPTURED, "protocol=http\nhost=proxy.corp.example:3128\n", False),
        (_CAPTURED, "protocol=https\nhost=127.0.0.1:8080\n", False),
        (_CAPTURED + b"path=a.git\n", "protocol=http\nhost=127.0.0.1:8080\npath=a.git\n", True),
        (_CAPTURED + b"path=a.git\n", "protocol=http\nhost=127.0.0.1:8080\npath=b.git\n", False),
        (_CAPTURED + b"path=a.git\n", "protocol=http\nhost=127.0.0.1:8080\n", False),
        (_CAPTURED.replace(b"8080", b"8080'; echo x '"), "protocol=http\nhost=x\n", False),
    ],
    ids=["same", "any-path", "proxy", "https", "same-path", "other-path", "no-path", "quote"],
)
def test_a_credential_handed_on_answers_only_where_it_was_given(
    repo: Path, captured: bytes, request_: str, answered: bool
) -> None:
    """The fetch's helper answers a request for the protocol and host (and path, when
    the listing's credential had one) it was given for; another (a proxy's, another
    host's) gets nothing, and git asks on. It answered any request: a proxy was
    given the remote's password."""
    with Given(captured) as given:
        filled = _fill(given, request_, repo)
    assert (f"password={TOKEN}" in filled) == answered, filled


def test_a_credential_of_64_kib_is_handed_on_whole(repo: Path) -> None:
    """Written by a thread once git runs, a credential larger than a pipe holds
    before anyone reads it reaches the helper whole (it was written before git
    started: up to a pipe's buffer, 4 KiB when the system runs short)."""
    big = b"x" * 60000
    captured = _CAPTURED.replace(TOKEN.encode(), big)
    with Given(captured) as given:
        filled = _fill(given, "protocol=http\nhost=127.0.0.1:8080\n", repo)
    assert f"password={big.decode()}\n" in filled


def test_what_git_tells_helpers_is_read_as_it_comes(repo: Path) -> None:
    """More than a pipe holds (a 100 KiB password stored): the listing's helper
    writes it all while git runs, and it is heard whole. The pipe was read once
    git had exited, and git waited on it forever."""
    password = "p" * 100_000
    with Told() as told:
        ran = run_git(
            ["-c", "credential.helper=" + told.helper, "credential", "approve"],
            cwd=str(repo),
            input=f"protocol=https\nhost=h.example\nusername=u\npassword={password}\n".encode(),
            check=False,
            pass_fds=(told.fd,),
            started=told.started,
        )
        credential, refused = told.heard()
    assert ran.returncode == 0 and not refused
    assert credential == (
        f"protocol=https\nhost=h.example\nusername=u\npassword={password}\n".encode()
    )


def test_fields_git_tells_helpers_are_kept_but_the_challenge() -> None:
    """A credential stored with fields newer git sends (an auth type, a bearer
    credential, capabilities, an expiry) is handed on with all of them, the
    server's challenge (``wwwauth[]``) aside; only a set list was kept."""
    stored = (
        b"capability[]=authtype\nprotocol=https\nhost=h.example\nauthtype=Bearer\n"
        b"credential=abc\nephemeral=1\npassword_expiry_utc=99\nstate[]=x:1\nfuture=2\n"
    )
    told = b"action=get\nprotocol=https\nhost=h.example\nwwwauth[]=Bearer x\n"
    told += b"action=store\n" + stored + b"wwwauth[]=Bearer realm=x\n"
    assert heard(told) == (stored, False)


@pytest.mark.parametrize(
    ("told", "refused"),
    [
        (b"action=get\nhost=h\naction=erase\nhost=h\npassword=x\n", True),
        (b"action=erase\nhost=h\npassword=x\n", False),
        (b"action=get\nhost=h\naction=erase\nhost=h\naction=store\nhost=h\n", False),
    ],
)
def test_only_an_answer_asked_for_and_erased_is_refused(told: bytes, refused: bool) -> None:
    """A ``get`` our helper heard (no helper answered) then an ``erase``: what git's
    askpass program or a person gave was refused. An ``erase`` alone: a helper's
    saved credential was."""
    assert heard(told)[1] is refused


def test_the_token_is_in_no_argument_and_no_environment(
    served: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through a first pull that hands the askpass program's token from the listing
    to the fetch: every git git-hydrate starts (a git on PATH that logs its
    arguments), and every process alive whenever a credential helper or the askpass
    program runs (their arguments and environments, from /proc), never holds it."""
    log = tmp_path / "seen"
    snapshot = (
        "for p in /proc/[0-9]*; do "
        f'tr "\\0" " " <$p/cmdline; tr "\\0" " " <$p/environ; echo; done >>{log} 2>/dev/null'
    )
    real_git = shutil.which("git")
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s " "$@" >>{log}; echo >>{log}\nexec {real_git} "$@"\n'
    )
    wrapper.chmod(0o755)
    askpass, asked = _askpass(tmp_path)
    askpass.write_text(askpass.read_text().replace("\ncase", f"\n{snapshot}\ncase"))
    b = _clone_of(served, tmp_path)
    git(b, "config", "credential.helper", f"!f() {{ {snapshot}; cat >/dev/null; }}; f")
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    path = f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"
    res = hydrate(b, "pull", env={"GIT_ASKPASS": str(askpass), "PATH": path})
    assert res.returncode == 0 and "4 new here" in res.stdout, res
    assert _loose_mirror_refs(b) == [], "the token was not handed to the fetch by id"
    assert _prompts(asked) == ["Username", "Password"]
    seen = log.read_text()
    assert "ls-remote" in seen and "fetch" in seen and "credential.helper" in seen
    assert seen.count("\n") > 50  # (process listings were taken)
    assert TOKEN not in seen + res.stdout + res.stderr
