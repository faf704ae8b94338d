"""Lost races in one clone are retried: fetches of several processes into the
same mirror refs (agents in worktrees of one repository), claims through a remote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger

from .conftest import ROOT, fsck, git, hydrate

MIRROR_REF = "refs/hydrate-remotes/origin/tasks/T-1"


def _shared(tmp_path: Path, tasks: int = 3) -> tuple[Path, Path, Path]:
    """A bare remote, a clone ``a`` that pushed ``tasks`` tasks, a clone ``b`` that pulled them."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    a, b = tmp_path / "a", tmp_path / "b"
    for path in (a, b):
        git(tmp_path, "clone", "-q", str(bare), str(path))
    with Ledger(a) as ledger:
        for i in range(1, tasks + 1):
            ledger.add_task(f"T-{i}", objective=f"do {i}", acceptance="works")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    return bare, a, b


def test_a_fetch_that_finds_a_mirror_ref_locked_is_retried(tmp_path: Path) -> None:
    # A concurrent fetch holding the mirror ref's lock, made deterministic: the
    # remote's upload-pack (run by the fetch itself) takes the lock on the first
    # fetch and lets it go on the next, as the winning fetch would.
    _bare, a, b = _shared(tmp_path)
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="changed on a")
    assert hydrate(a, "push").returncode == 0
    lock = b / ".git" / (MIRROR_REF + ".lock")
    marker = tmp_path / "fetched-once"
    wrapper = tmp_path / "upload-pack"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"if [ -e '{marker}' ]; then rm -f '{lock}'; "
        f"else : > '{marker}'; : > '{lock}'; fi\n"
        'exec git-upload-pack "$@"\n'
    )
    wrapper.chmod(0o755)
    git(b, "config", "remote.origin.uploadpack", str(wrapper))
    res = hydrate(b, "pull")
    assert res.returncode == 0, res
    assert "T-1" in res.stdout and res.stderr == ""
    assert marker.exists() and not lock.exists()
    assert git(b, "rev-parse", "refs/hydrate/tasks/T-1") == git(
        a, "rev-parse", "refs/hydrate/tasks/T-1"
    )
    fsck(b)


@pytest.mark.slow  # every attempt is a fetch, for up to 20 s
def test_a_lock_nobody_lets_go_stops_only_its_task_after_the_wait(tmp_path: Path) -> None:
    _bare, a, b = _shared(tmp_path, tasks=1)
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="changed on a")
    assert hydrate(a, "push").returncode == 0
    before = git(b, "rev-parse", "refs/hydrate/tasks/T-1")
    lock = b / ".git" / (MIRROR_REF + ".lock")
    lock.write_text("")
    res = hydrate(b, "pull")
    # (a young lock is waited for while a live git may hold it, then its task is
    # skipped and named with the lock; it used to say "other fetches in this clone
    # kept winning", though none was fetching, and to stop the whole pull)
    assert res.returncode == 1, res
    assert "SKIPPED" in res.stdout and "T-1" in res.stdout, res
    assert "the lock of its mirror ref" in res.stdout and "kept winning" not in res.stdout
    assert res.stderr == "error: skipped: T-1 (the report above says why)\n", res
    assert lock.exists()  # (pull never removes git's lock)
    assert git(b, "rev-parse", "refs/hydrate/tasks/T-1") == before


PULLER = """
import sys
from git_hydrate import Ledger
from git_hydrate import sync
with Ledger(".") as ledger:
    print("ready", flush=True)
    sys.stdin.readline()  # every puller starts pulling at once
    for _ in range(int(sys.argv[1])):
        report = sync.pull(ledger.refs)
        print("ok" if report.ok else "failed", flush=True)
"""


@pytest.mark.slow
def test_concurrent_pulls_in_one_clone_all_succeed(tmp_path: Path) -> None:
    _bare, a, b = _shared(tmp_path, tasks=12)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    failures: list[str] = []
    # Two rounds of four pullers released together (each waits, once its interpreter
    # is up, for a word on stdin), their fetches into the one clone overlapping
    # whatever the machine's load; started as they came up (a pull is shorter than an
    # interpreter's start), four rounds had been run for some pulls to meet.
    for round_ in range(2):
        with Ledger(a) as ledger:
            for i in range(1, 13):
                ledger.edit_task(f"T-{i}", title=f"round {round_}")
        assert hydrate(a, "push").returncode == 0
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", PULLER, "2"],
                cwd=b,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        for proc in procs:  # (nothing else is written before the word)
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == "ready\n", line + proc.communicate()[1]
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or "failed" in out:
                failures.append(err.strip().splitlines()[-1] if err.strip() else out)
    assert failures == []
    for i in range(1, 13):
        ref = f"refs/hydrate/tasks/T-{i}"
        assert git(b, "rev-parse", ref) == git(a, "rev-parse", ref)
    fsck(b)


def test_a_push_that_meets_the_remotes_ref_lock_is_a_race_sync_retries(tmp_path: Path) -> None:
    # Another push holding the remote ref's lock: git says "failed to lock" (or
    # "cannot lock ref"); like a non-fast-forward, a pull and a new push settle it.
    bare, a, _b = _shared(tmp_path, tasks=1)
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="changed on a")
    lock = bare / "refs" / "hydrate" / "tasks" / "T-1.lock"
    lock.write_text("")
    res = hydrate(a, "push", "--json")
    assert res.returncode == 1, res
    (outcome,) = json.loads(res.stdout)["tasks"]
    assert outcome["action"] == "rejected", outcome
    assert "another push to origin held the ref meanwhile" in outcome["detail"]
    synced = hydrate(a, "sync", "--json")
    assert json.loads(synced.stdout)["rounds"] == 3  # retried, as a race
    lock.unlink()
    assert hydrate(a, "sync").returncode == 0
    assert git(bare, "rev-parse", "refs/hydrate/tasks/T-1") == git(
        a, "rev-parse", "refs/hydrate/tasks/T-1"
    )


def test_a_ref_another_push_landed_at_the_same_value_is_up_to_date(tmp_path: Path) -> None:
    # Two pushes of one clone at once: the second meets the first's lock on a ref
    # the first then lands at the very value the second sends. Made deterministic
    # by the remote's update hook landing it first. Nothing was lost: up to date
    # (and the mirror says so), not "REJECTED" with exit status 1.
    bare, a, _b = _shared(tmp_path, tasks=1)
    hook = bare / "hooks" / "update"
    hook.write_text(
        '#!/bin/sh\ncase "$1" in refs/hydrate/tasks/*) git update-ref "$1" "$3" ;; esac\n'
    )
    hook.chmod(0o755)
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="changed on a")
        ledger.add_task("T-2", objective="new", acceptance="works")
    res = hydrate(a, "push", "--json")
    assert res.returncode == 0, res
    assert json.loads(res.stdout)["tasks"] == []
    for ref in ("refs/hydrate/tasks/T-1", "refs/hydrate/tasks/T-2"):
        assert git(bare, "rev-parse", ref) == git(a, "rev-parse", ref)
    again = hydrate(a, "push")
    assert again.returncode == 0 and again.stdout == "push origin: 2 up to date\n", again
