"""Locks an interrupted or killed pull leaves in its remote's mirror: none when
Ctrl-C comes just after one is made, and one a killed pull left is taken over
by the next; one no git-hydrate holds is named, not blamed on other fetches."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from git_hydrate.store import Repository
from git_hydrate.store import refs as refs_module
from git_hydrate.store.packed import create_packed

from .conftest import from_template, git, hydrate
from .test_lock_leftovers import (
    _MAKE_AND_DIE,
    _env,
    _interrupting,
    _python,
    interruptible,  # noqa: F401 (a fixture used here)
)
from .test_sync import _seeded_remote, clone, make_task


@pytest.mark.usefixtures("interruptible")
def test_ctrl_c_just_after_a_ref_lock_is_made_leaves_no_lock(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit = git(repo, "rev-parse", "HEAD").strip().encode()
    names = [f"refs/hydrate-remotes/origin/tasks/T-{i:03d}".encode() for i in range(100)]
    monkeypatch.setattr(os, "link", _interrupting(os.link, lambda path: "T-050" in path))
    store = Repository(repo)
    with pytest.raises(KeyboardInterrupt):
        create_packed(store.common_dir, store.settings, [(n, commit) for n in names])
    monkeypatch.undo()
    assert [str(p) for p in (repo / ".git").rglob("*.lock")] == []
    # (the interrupt waited for the transaction's end: every ref is there)
    assert len(git(repo, "for-each-ref", "refs/hydrate-remotes/").splitlines()) == 100


@pytest.fixture
def first_pull(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A clone whose first pull fills its mirror packed (4 tasks are many here),
    and the lock file of one of its mirror refs."""
    remote = from_template("sync-remote", _seeded_remote, tmp_path / "remote.git")
    a = clone(remote, tmp_path / "a")
    for i in range(4):
        make_task(a, f"T-{i}")
    assert hydrate(a, "push").returncode == 0
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    b = clone(remote, tmp_path / "b")
    mirror = b / ".git" / "refs" / "hydrate-remotes" / "origin" / "tasks"
    mirror.mkdir(parents=True)
    return b, mirror / "T-2.lock"


def test_a_pull_takes_over_the_ref_lock_a_killed_pull_left(first_pull: tuple[Path, Path]) -> None:
    b, lock = first_pull
    proc = subprocess.run(_python(_MAKE_AND_DIE, str(lock)), check=False, env=_env())
    assert proc.returncode == -signal.SIGKILL and lock.exists()
    res = hydrate(b, "pull")
    assert res.returncode == 0, res
    assert "4 new here" in res.stdout and not lock.exists()


def test_a_pull_waits_for_a_young_ref_lock_then_skips_only_its_task(
    first_pull: tuple[Path, Path],
) -> None:
    """A lock no process is known to hold, younger than a live git keeps one, is
    waited for (a fetch of another worktree may hold it); still there once it is
    older, its task is SKIPPED and the rest pulled, not the whole pull stopped."""
    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0  # (the mirror filled: git fetch from now on)
    a = b.parent / "a"
    for task_id in ("T-1", "T-2"):
        assert hydrate(a, "task-edit", task_id, "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    lock.write_bytes(b"")  # (as a git killed while it held it leaves one)
    _aged(lock, 7)
    res = hydrate(b, "pull")
    assert res.returncode == 1 and lock.exists(), res
    assert "1 updated, 1 SKIPPED" in res.stdout
    line = next(x for x in res.stdout.splitlines() if " T-2 " in x)
    assert f"{lock} is taken (10 s old, no process known)" in line, line
    assert res.stderr == "error: skipped: T-2 (the report above says why)\n"
    cleared = hydrate(b, "doctor", "--clear-stale-locks")
    assert f"kept    {lock}: only " in cleared.stdout and lock.exists()


def test_a_pull_goes_on_when_a_young_ref_lock_is_released(
    first_pull: tuple[Path, Path],
) -> None:
    """The lock another fetch held is gone within the wait: nothing is skipped."""
    import threading

    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0
    a = b.parent / "a"
    assert hydrate(a, "task-edit", "T-2", "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 3)
    timer = threading.Timer(4.0, lock.unlink)  # (after the few quick fetches again)
    timer.start()
    try:
        res = hydrate(b, "pull")
    finally:
        timer.join()
    assert res.returncode == 0 and "1 updated" in res.stdout, res
    assert res.stderr == ""


def _aged(path: Path, seconds: float) -> None:
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_lock_a_killed_git_fetch_left_stops_only_its_task(
    first_pull: tuple[Path, Path],
) -> None:
    """A ``git fetch`` killed with its process group leaves git's lock on a mirror
    ref (no maker named in it). Pull never removes it (a live git may hold one: a
    plain ``git fetch`` after setup writes the same refs, from another user or
    host): it fetches every other ref, merges them, and reports that task as
    SKIPPED with the command that clears the lock, now or in how many seconds."""
    import re

    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0  # (the mirror filled: git fetch from now on)
    a = b.parent / "a"
    for task_id in ("T-1", "T-2"):
        assert hydrate(a, "task-edit", task_id, "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 30)
    young = hydrate(b, "pull")
    assert young.returncode == 1 and lock.exists(), young
    assert "1 updated" in young.stdout and "1 SKIPPED" in young.stdout
    line = next(x for x in young.stdout.splitlines() if " T-2 " in x)
    assert line.startswith(
        f"  SKIPPED        T-2  (not fetched: the lock of its mirror ref, {lock}"
    )
    said = re.search(r"--clear-stale-locks clears it in (\d+) s\)$", line)
    assert said is not None and 25 <= int(said.group(1)) <= 30, line
    assert young.stderr == "error: skipped: T-2 (the report above says why)\n"
    _aged(lock, 90)
    old = hydrate(b, "pull", "origin", "T-2")
    assert old.returncode == 1 and lock.exists() and "absent" not in old.stdout, old
    assert old.stdout.endswith(
        "if no git or git-hydrate process is fetching in this clone, clear it with: "
        "git hydrate doctor --clear-stale-locks)\n"
    ), old.stdout
    assert hydrate(b, "doctor", "--clear-stale-locks").returncode == 0 and not lock.exists()
    pulled = hydrate(b, "pull")
    assert pulled.returncode == 0 and "1 updated" in pulled.stdout, pulled
    assert git(b, "rev-parse", "refs/hydrate/tasks/T-2") == git(
        a, "rev-parse", "refs/hydrate/tasks/T-2"
    )


def test_a_first_pull_leaves_out_only_the_ref_a_lock_stops(
    first_pull: tuple[Path, Path],
) -> None:
    """The first pull writes its mirror refs itself (packed): a lock left behind on
    one of them leaves that task out, SKIPPED with the same words; the rest lands."""
    b, lock = first_pull
    lock.write_bytes(b"")
    _aged(lock, 90)
    old = hydrate(b, "pull")
    assert old.returncode == 1 and lock.exists(), old
    assert "3 new here, 1 SKIPPED" in old.stdout
    line = next(x for x in old.stdout.splitlines() if " T-2 " in x)
    assert line.startswith(
        f"  SKIPPED        T-2  (not fetched: the lock of its mirror ref, {lock}"
    )
    assert line.endswith(
        "if no git or git-hydrate process is fetching in this clone, clear it with: "
        "git hydrate doctor --clear-stale-locks)"
    ), line
    assert old.stderr == "error: skipped: T-2 (the report above says why)\n"
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks/").split() == [
        "refs/hydrate/tasks/T-0",
        "refs/hydrate/tasks/T-1",
        "refs/hydrate/tasks/T-3",
    ]
    assert hydrate(b, "doctor", "--clear-stale-locks").returncode == 0 and not lock.exists()
    pulled = hydrate(b, "pull")
    assert pulled.returncode == 0 and "1 new here" in pulled.stdout, pulled


def test_a_packed_refs_lock_left_behind_skips_only_the_refs_to_delete(
    first_pull: tuple[Path, Path],
) -> None:
    """``packed-refs.lock`` stops deleting a packed mirror ref: the pull fetches the
    rest without pruning, and a task the remote no longer has is SKIPPED (its mirror
    ref still names it), with the command that clears the lock."""
    b, _lock = first_pull
    assert hydrate(b, "pull").returncode == 0  # (the mirror written packed)
    a = b.parent / "a"
    assert hydrate(a, "task-edit", "T-1", "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    git(b.parent / "remote.git", "update-ref", "-d", "refs/hydrate/tasks/T-3")
    packed_lock = b / ".git" / "packed-refs.lock"
    packed_lock.write_bytes(b"")
    _aged(packed_lock, 30)
    res = hydrate(b, "pull")
    assert res.returncode == 1 and packed_lock.exists(), res
    assert "1 updated, 1 SKIPPED" in res.stdout
    line = next(x for x in res.stdout.splitlines() if " T-3 " in x)
    assert line.startswith(
        "  SKIPPED        T-3  (not fetched: gone from origin, its mirror ref cannot be "
        f"deleted: {packed_lock} is taken ("
    ), line
    assert " s old, no process known); if no git or git-hydrate process is fetching" in line
    assert res.stderr == "error: skipped: T-3 (the report above says why)\n"
    assert hydrate(b, "doctor", "--clear-stale-locks", "--older-than", "10").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    assert "refs/hydrate-remotes/origin/tasks/T-3" not in git(b, "for-each-ref")


def test_a_push_that_landed_is_reported_though_a_stuck_lock_keeps_its_mirror_behind(
    first_pull: tuple[Path, Path],
) -> None:
    """The mirror is a cache a push brings forward when it can: a lock left behind on
    one of its refs leaves that one behind (the next fetch corrects it), and the
    push that landed says so, exit 0, not "locked" (exit 75) as if it had not."""
    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0
    assert hydrate(b, "task-edit", "T-2", "--title", "from b").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 30)
    pushed = hydrate(b, "push")
    assert pushed.returncode == 0 and "  pushed         T-2" in pushed.stdout, pushed
    assert pushed.stderr == "" and lock.exists()
    ref = "refs/hydrate/tasks/T-2"
    assert git(b.parent / "remote.git", "rev-parse", ref) == git(b, "rev-parse", ref)


def test_a_git_without_negative_refspecs_stops_on_the_lock_as_before(
    first_pull: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git before 2.29 refuses ``^ref``: the pull stops on the lock and names the
    command, as it did before it could leave one ref out."""
    from .conftest import git_first_on_path

    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 90)
    a = b.parent / "a"
    assert hydrate(a, "task-edit", "T-2", "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    git_first_on_path(
        tmp_path,
        monkeypatch,
        lambda real, _log: (
            "#!/bin/sh\n"
            'for arg in "$@"; do case "$arg" in\n'
            "  ^*) echo \"fatal: invalid refspec '$arg'\" >&2; exit 128;;\n"
            "esac; done\n"
            f'exec {real} "$@"\n'
        ),
    )
    res = hydrate(b, "pull")
    assert res.returncode == 75 and lock.exists(), res
    assert res.stderr.startswith(f"error: the fetch cannot lock a ref: {lock} is taken (9")
    assert res.stderr.endswith("clear it with: git hydrate doctor --clear-stale-locks\n")


def test_a_sync_past_a_stuck_lock_says_why_once(first_pull: tuple[Path, Path]) -> None:
    """sync pulls and pushes the rest; the task whose mirror lock is stuck is
    SKIPPED, and the push's line for it points there, not at a pull."""
    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0
    a = b.parent / "a"
    assert hydrate(a, "task-edit", "T-2", "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "task-edit", "T-3", "--title", "from b").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 30)
    synced = hydrate(b, "sync")
    assert synced.returncode == 1 and lock.exists(), synced
    assert "  pushed         T-3" in synced.stdout
    lines = [x for x in synced.stdout.splitlines() if " T-2 " in x]
    assert lines[0].startswith("  SKIPPED        T-2  (not fetched: ")
    assert lines[1:] == [
        "  behind         T-2  (its mirror ref is locked here, a pull does not fetch it: "
        "see SKIPPED above)"
    ]
    assert synced.stderr == "error: skipped: T-2 (the report above says why)\n"
