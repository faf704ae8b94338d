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


def test_a_pull_names_a_ref_lock_no_one_is_known_to_hold(first_pull: tuple[Path, Path]) -> None:
    b, lock = first_pull
    lock.write_bytes(b"")  # (as a git killed while it held it leaves one)
    res = hydrate(b, "pull")
    assert res.returncode == 75, res
    assert f"{lock} is taken" in res.stderr and "no process known" in res.stderr
    assert "kept winning" not in res.stderr and res.stderr.count("\n") == 1
    cleared = hydrate(b, "doctor", "--clear-stale-locks")
    assert f"kept    {lock}: only " in cleared.stdout and lock.exists()


def _aged(path: Path, seconds: float) -> None:
    import time

    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_lock_a_killed_git_fetch_left_is_named_with_the_command_that_clears_it(
    first_pull: tuple[Path, Path],
) -> None:
    """A ``git fetch`` killed with its process group leaves git's lock (no maker named
    in it): pull never removes it (a live git may hold one: a plain ``git fetch``
    after setup writes the same refs, from another user or host), but says the
    command that clears it now, or in how many seconds doctor will."""
    import re

    b, lock = first_pull
    assert hydrate(b, "pull").returncode == 0  # (the mirror filled: git fetch from now on)
    a = b.parent / "a"
    assert hydrate(a, "task-edit", "T-2", "--title", "moved on").returncode == 0
    assert hydrate(a, "push").returncode == 0
    lock.write_bytes(b"")
    _aged(lock, 30)
    young = hydrate(b, "pull")
    assert young.returncode == 75 and lock.exists()
    said = re.search(r"--clear-stale-locks clears it in (\d+) s\n", young.stderr)
    assert said is not None and 25 <= int(said.group(1)) <= 30, young.stderr
    assert "no git or git-hydrate process is fetching in this clone" in young.stderr
    _aged(lock, 90)
    old = hydrate(b, "pull")
    assert old.returncode == 75 and lock.exists()
    assert old.stderr.endswith(
        "if no git or git-hydrate process is fetching in this clone, clear it with: "
        "git hydrate doctor --clear-stale-locks\n"
    ), old.stderr
    assert hydrate(b, "doctor", "--clear-stale-locks").returncode == 0 and not lock.exists()
    pulled = hydrate(b, "pull")
    assert pulled.returncode == 0 and "1 updated" in pulled.stdout


def test_a_packed_write_names_the_command_that_clears_a_lock_in_its_way(
    first_pull: tuple[Path, Path],
) -> None:
    """The first pull writes its mirror refs itself (packed): the same words."""
    b, lock = first_pull
    lock.write_bytes(b"")
    _aged(lock, 90)
    old = hydrate(b, "pull")
    assert old.returncode == 75 and lock.exists()
    assert old.stderr.endswith(
        "process is writing it, clear it with: git hydrate doctor --clear-stale-locks\n"
    ), old.stderr
