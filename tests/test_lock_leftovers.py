"""Locks an ended command leaves: none when Ctrl-C or SIGTERM ends it, and one a
killed command left is taken over at once; a live writer's lock is never broken."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Busy, Ledger
from git_hydrate.store import lockfiles
from git_hydrate.taskrefs import locks as locks_module

from .conftest import ROOT, fsck, git, hydrate
from .test_sync import make_task

#: A process that holds the graph lock and a new id's lock until it is ended.
_HOLDER = (
    "import sys, time\n"
    "from git_hydrate import Ledger\n"
    "with Ledger(sys.argv[1]) as ledger:\n"
    "    with ledger.refs.name_lock('T-1'), ledger.refs.graph_lock():\n"
    "        print('ready', flush=True)\n"
    "        time.sleep(600)\n"
)


def _python(code: str, *args: str) -> list[str]:
    """A new interpreter of its own (one a signal reaches, SIGKILL too)."""
    return [sys.executable, "-c", code, *args]


@pytest.fixture
def holder(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[subprocess.Popen[str]]:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    proc = subprocess.Popen(_python(_HOLDER, str(repo)), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=60)


def _own_locks(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".git").glob("hydrate-*.lock"))


@pytest.fixture
def interruptible() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, as in a command (a test runner's
    worker may ignore it)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _interrupting(real: Callable[..., Any], when: Callable[[Any], bool]) -> Callable[..., Any]:
    """``real``, after which Ctrl-C comes when ``when(path made)``: at the worst
    moment, just after the lock file is made."""
    made = -1 if real is os.link else 0  # (os.link(base, path), os.open(path, ...))

    def call(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if when(args[made]):
            signal.raise_signal(signal.SIGINT)
        return result

    return call


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_just_after_an_own_lock_is_made_leaves_no_lock(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_task(repo, "B-1")
    monkeypatch.setattr(os, "open", _interrupting(os.open, lambda p: str(p).endswith("h.lock")))
    with Ledger(repo) as ledger, pytest.raises(KeyboardInterrupt):
        ledger.edit_task("B-1", depends_on=["B-2"])  # (an edge: the graph lock is taken)
    monkeypatch.undo()
    assert _own_locks(repo) == []


def test_sigterm_removes_the_locks_the_command_holds(
    repo: Path, holder: subprocess.Popen[str]
) -> None:
    assert len(_own_locks(repo)) == 2
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=60) == 128 + signal.SIGTERM
    assert _own_locks(repo) == []


def test_a_lock_whose_maker_was_killed_is_taken_over_at_once(
    repo: Path, holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    holder.kill()
    holder.wait(timeout=60)
    assert _own_locks(repo) == ["hydrate-graph.lock", f"hydrate-id-{_folded('t-1')}.lock"]
    report = json.loads(hydrate(repo, "doctor", "--json").stdout)
    assert {(lock["pid"], lock["maker"], lock["held"]) for lock in report["locks"]} == {
        (holder.pid, "gone", False)
    }

    def waited(_seconds: float) -> None:
        raise AssertionError("waited for a lock whose maker is gone")

    monkeypatch.setattr(locks_module.time, "sleep", waited)  # (young: it was waited for)
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", "t", "o", depends_on=["T-2"])  # both locks
    assert _own_locks(repo) == []


def test_a_lock_held_by_a_live_process_is_not_broken(
    repo: Path, holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = repo / ".git" / "hydrate-graph.lock"
    made = graph.read_bytes()
    old = time.time() - 3600  # (older than any live writer keeps one: its maker runs)
    os.utime(graph, (old, old))
    monkeypatch.setattr(locks_module, "STALE_LOCK_SECONDS", 0.2)
    with Ledger(repo) as ledger, pytest.raises(Busy, match="graph"):
        ledger.add_task("B-1", "t", "o", depends_on=["B-2"])
    assert graph.read_bytes() == made and made.split()[1] == str(holder.pid).encode()
    cleared = hydrate(repo, "doctor", "--clear-stale-locks")
    assert f"kept    {graph}: git-hydrate process {holder.pid} holds it and runs" in (
        cleared.stdout
    )
    assert graph.exists() and holder.poll() is None
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=60) == 128 + signal.SIGTERM and not graph.exists()


def test_doctor_clears_own_locks_whose_maker_is_gone(repo: Path) -> None:
    lock = repo / ".git" / "hydrate-graph.lock"
    proc = subprocess.run(_python(_MAKE_AND_DIE, str(lock)), check=False, env=_env())
    assert proc.returncode == -signal.SIGKILL, proc
    listed = hydrate(repo, "doctor")
    assert listed.returncode == 1, listed
    said = f"lock    {lock} ("
    assert (
        f"left by git-hydrate process {_pid_of(lock)}, which has ended"
        in (listed.stdout[listed.stdout.index(said) :])
    )
    cleared = hydrate(repo, "doctor", "--clear-stale-locks")
    assert f"removed stale lock {lock}" in cleared.stdout and not lock.exists()


#: A git-hydrate process killed while it holds the lock file argv[1].
_MAKE_AND_DIE = (
    "import os, signal, sys\n"
    "from git_hydrate.store import lockfiles\n"
    "lockfiles.create(sys.argv[1])\n"
    "os.kill(os.getpid(), signal.SIGKILL)\n"
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _pid_of(lock: Path) -> int:
    found = lockfiles.maker(str(lock))
    assert found is not None
    return found[0]


def _folded(task_id: str) -> str:
    import hashlib

    return hashlib.sha256(task_id.encode()).hexdigest()[:32]


def test_a_job_killed_during_a_ref_transaction_leaves_no_git_lock(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A runner that kills a command's whole process group (a timeout's SIGKILL, a
    cancelled job) while ``git update-ref`` held its ref locks killed git too: the
    locks stayed, unmarked, and every later write of those tasks failed (exit 75)
    until ``doctor --clear-stale-locks``, a minute on (review15: a pull of 500 tasks
    left 500). The transaction's git now runs in a session of its own and finishes,
    or aborts without its last line: no lock is left, and the write is whole or
    absent. (A reference-transaction hook holds git at its locks, to kill there.)"""
    make_task(repo, "T-1")
    before = subprocess.run(
        ["git", "rev-parse", "refs/hydrate/tasks/T-1"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    mark = tmp_path / "prepared"
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(
        '#!/bin/sh\ncat >/dev/null\n[ "$1" = prepared ] && touch "$MARK" && sleep 2\nexit 0\n'
    )
    hook.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("MARK", str(mark))
    command = [sys.executable, "-m", "git_hydrate", "checkpoint", "T-1", "--summary", "s"]
    proc = subprocess.Popen(command, cwd=repo, start_new_session=True)
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert mark.exists(), "git never held its locks"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    locks = sorted((repo / ".git").rglob("*.lock"))
    deadline = time.monotonic() + 20
    while locks and time.monotonic() < deadline:
        time.sleep(0.05)
        locks = sorted((repo / ".git").rglob("*.lock"))
    assert locks == []
    hook.unlink()
    after = subprocess.run(
        ["git", "rev-parse", "refs/hydrate/tasks/T-1"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    shown = json.loads(hydrate(repo, "show", "T-1", "--json").stdout)
    assert len(shown["checkpoints"]) == (0 if after == before else 1)
    res = hydrate(repo, "checkpoint", "T-1", "--summary", "again")
    assert res.returncode == 0, res


#: The command line, run where Ctrl-C raises KeyboardInterrupt (a test runner's
#: worker may have SIGINT ignored, which a child inherits).
_INTERRUPTIBLE = (
    "import runpy, signal\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "runpy.run_module('git_hydrate', run_name='__main__', alter_sys=True)\n"
)


def test_ctrl_c_twice_while_a_hook_holds_a_ref_transaction_leaves_no_lock(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Ctrl-C while a reference-transaction hook held git at its locks waited up
    to 30 s for git, and Ctrl-C again (or the 30 s) killed git with SIGKILL: its
    lock stayed, unmarked, for every later write of the task to stop on, and the
    hook ran on, orphaned. Git is now stopped as
    Ctrl-C stopped it before its session was its own: SIGTERM, on which git
    removes its locks; the hook ends with it."""
    make_task(repo, "T-1")
    before = git(repo, "rev-parse", "refs/hydrate/tasks/T-1")
    mark = tmp_path / "prepared"
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(
        '#!/bin/sh\ncat >/dev/null\n[ "$1" = prepared ] || exit 0\necho $$ >"$MARK"\nsleep 60\n'
    )
    hook.chmod(0o755)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("MARK", str(mark))
    command = _python(_INTERRUPTIBLE, "checkpoint", "T-1", "--summary", "s")
    proc = subprocess.Popen(command, cwd=repo, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (mark.exists() and mark.read_text().strip()):
        assert proc.poll() is None and time.monotonic() < deadline, "git never held its locks"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None  # (git is let finish: the hook still runs)
    os.killpg(proc.pid, signal.SIGINT)
    _out, err = proc.communicate(timeout=20)
    assert (proc.returncode, err.strip()) == (130, b"")  # (no traceback)
    assert sorted((repo / ".git").rglob("*.lock")) == []
    assert not _runs(int(mark.read_text()))
    hook.unlink()
    assert git(repo, "rev-parse", "refs/hydrate/tasks/T-1") == before
    fsck(repo)
    assert hydrate(repo, "checkpoint", "T-1", "--summary", "again").returncode == 0


def _runs(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie no one has reaped yet does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_new_ids_lock_a_full_disk_cut_short_is_not_left(repo: Path) -> None:
    """A full disk makes the lock file but refuses its line (here the file size limit
    stands in for it): the write is refused in one line, and no lock that names no
    maker is left to hold up the next task-add or to make doctor fail."""
    import resource

    add = ("task-add", "B-1", "--objective", "o", "--acceptance", "a")
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, limits[1]))
        result = hydrate(repo, *add)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot write to the repository (")
    assert "Traceback" not in result.stderr
    assert _own_locks(repo) == []
    started = time.monotonic()
    assert hydrate(repo, *add).returncode == 0
    assert time.monotonic() - started < 5  # (a left lock: 10 s before it is taken over)
    assert hydrate(repo, "doctor").returncode == 0
