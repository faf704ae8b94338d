"""Merge bases of many task tips without a process per task (issue 33): the walk
answers what ``git merge-base --all`` answers, or leaves the pair to git."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.store import Repository
from git_hydrate.sync.ancestry import quick_bases

from .conftest import from_template, fsck, git, hydrate
from .test_sync import _seeded_remote, clone, make_task


def _commit(repo: Path, message: str, *parents: str) -> str:
    args = [arg for parent in parents for arg in ("-p", parent)]
    return git(repo, "commit-tree", *args, "-m", message, "HEAD^{tree}").strip()


def _chain(repo: Path, start: str, length: int, name: str) -> list[str]:
    commits = [start]
    for i in range(length):
        commits.append(_commit(repo, f"{name} {i}", commits[-1]))
    return commits


def _git_bases(repo: Path, a: str, b: str) -> list[bytes]:
    out = git(repo, "merge-base", "--all", a, b, check=False)
    return sorted(line.encode() for line in out.split())


def test_the_walk_answers_as_git_or_not_at_all(repo: Path) -> None:
    root = git(repo, "rev-parse", "HEAD").strip()
    line = _chain(repo, root, 40, "line")
    side = _chain(repo, line[3], 2, "side")
    merged = _commit(repo, "merge", line[6], side[-1])
    after = _chain(repo, merged, 2, "after")
    lonely = _commit(repo, "unrelated")
    missing = "1" * 40
    pairs = {
        "behind": (line[2], line[7]),  # fast-forward
        "ahead": (line[9], line[4]),
        "through a merge's second parent": (side[1], after[-1]),
        "diverged": (line[5], side[-1]),
        "unrelated": (lonely, line[1]),
        "deeper than the walk": (line[0], line[40]),
        "a commit missing here": (missing, line[3]),
    }
    with Repository(repo) as store:
        found = quick_bases(store, [(a.encode(), b.encode()) for a, b in pairs.values()], depth=16)
    settled = {name for name, (a, b) in pairs.items() if (a.encode(), b.encode()) in found}
    assert settled == {"behind", "ahead", "through a merge's second parent"}
    for a, b in pairs.values():
        if (a.encode(), b.encode()) in found:
            assert found[(a.encode(), b.encode())] == _git_bases(repo, a, b)
    with Repository(repo) as store:  # deep enough, the long one is settled too
        deep = quick_bases(store, [(line[0].encode(), line[40].encode())], depth=64)
    assert deep == {(line[0].encode(), line[40].encode()): [line[0].encode()]}


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return from_template("sync-remote", _seeded_remote, tmp_path / "remote.git")


def test_a_pull_of_moved_tasks_asks_git_only_of_the_diverged_one(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    for task_id in ("BEHIND-1", "BEHIND-2", "AHEAD", "BOTH"):
        make_task(a, task_id)
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    for task_id in ("BEHIND-1", "BEHIND-2", "BOTH"):
        assert hydrate(a, "task-edit", task_id, "--title", f"there {task_id}").returncode == 0
    assert hydrate(a, "push").returncode == 0
    for task_id in ("AHEAD", "BOTH"):
        assert hydrate(b, "task-edit", task_id, "--tag", "here").returncode == 0
    asked: list[tuple[bytes, bytes]] = []
    real = Repository.merge_bases

    def counting(self: Repository, x: bytes, y: bytes) -> list[bytes]:
        asked.append((x, y))
        return real(self, x, y)

    monkeypatch.setattr(Repository, "merge_bases", counting)
    with Ledger(b) as ledger:
        report = ledger.pull()
    assert report.ok
    assert {o.name: o.action for o in report.outcomes} == {
        "BEHIND-1": "fast-forward",
        "BEHIND-2": "fast-forward",
        "AHEAD": "ahead",
        "BOTH": "merged",
    }
    both = git(b, "rev-parse", "refs/hydrate-remotes/origin/tasks/BOTH").strip().encode()
    # the diverged task alone: to plan it, and again to merge it (git's bases, as before)
    assert asked and {remote_tip for _local, remote_tip in asked} == {both}
    mirror = "refs/hydrate-remotes/origin/tasks/"
    for task_id in ("BEHIND-1", "BEHIND-2"):
        here = git(b, "rev-parse", f"refs/hydrate/tasks/{task_id}").strip()
        assert here == git(b, "rev-parse", f"{mirror}{task_id}").strip()
    fsck(b)
