"""Pulls over criss-cross histories with many merge bases finish, the same everywhere.

Clones that sync crosswise, or a crafted remote, can give two task tips many
merge bases, each pair of which has many merge bases in turn. Building the
virtual base of such a history by recursion alone multiplies the work at each
level (ten bases four levels deep: about 10^4 ``git merge-base`` runs); the
merge-base work of one task merge is bounded instead (see
``git_hydrate/sync/merging.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.sync.merging import MAX_MERGE_BASES

from .conftest import GIT_EMAIL, GIT_NAME, ROOT, fsck, git
from .test_sync import clone, make_task, tree_of
from .wrapper import hydrate_command

REF = "refs/hydrate/tasks/T-1"


def _tip(repo: Path) -> str:
    return git(repo, "rev-parse", REF).strip()


def _commit(repo: Path, tree: str, parents: list[str], message: str) -> str:
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
    return git(repo, *args).strip()


class _Commits:
    """Commit objects made here and written by one ``git hash-object`` at the end,
    instead of one ``git commit-tree`` process each (528 for the widest history
    below); git checks every id computed here when it writes them."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.bodies: list[bytes] = []
        self.ids: list[str] = []

    def commit(self, tree: str, parents: list[str], message: str) -> str:
        who = f"{GIT_NAME} <{GIT_EMAIL}> {int(time.time())} +0000"
        body = "".join(
            [
                f"tree {tree}\n",
                *(f"parent {parent}\n" for parent in parents),
                f"author {who}\ncommitter {who}\n\n{message}\n",
            ]
        ).encode()
        self.bodies.append(body)
        self.ids.append(hashlib.sha1(b"commit %d\0" % len(body) + body).hexdigest())
        return self.ids[-1]

    def write(self, scratch: Path) -> None:
        scratch.mkdir()
        paths = []
        for number, body in enumerate(self.bodies):
            paths.append(scratch / str(number))
            paths[-1].write_bytes(body)
        paths_in = "".join(f"{path}\n" for path in paths)
        written = git(
            self.repo, "hash-object", "-w", "-t", "commit", "--stdin-paths", input=paths_in
        )
        assert written.split() == self.ids
        shutil.rmtree(scratch)


def _criss_cross(repo: Path, width: int, levels: int) -> tuple[str, str]:
    """Two tips whose merge bases are ``width`` commits, each pair of which has
    ``width`` merge bases again, ``levels`` deep. Every commit holds a valid
    task tree: the notes added one per branch, then their union."""
    root = _tip(repo)
    branches = []
    for i in range(width):
        git(repo, "update-ref", REF, root)
        with Ledger(repo) as ledger:
            ledger.add_context("T-1", f"note {i}\n", f"n{i}")
        branches.append(_tip(repo))
    git(repo, "update-ref", REF, root)
    with Ledger(repo) as ledger:
        for i in range(width):
            ledger.add_context("T-1", f"note {i}\n", f"n{i}")
    union = git(repo, "rev-parse", f"{REF}^{{tree}}").strip()
    commits = _Commits(repo)
    for level in range(levels):
        merged = []
        for i in range(width):
            # two parents a commit, as git-hydrate's own merges: a chain over the level
            tip = commits.commit(union, branches[:2], f"level {level} merge {i}.1")
            for j, parent in enumerate(branches[2:], start=2):
                tip = commits.commit(union, [tip, parent], f"level {level} merge {i}.{j}")
            merged.append(tip)
        branches = merged
    commits.write(repo.parent / f"{repo.name}-commits")
    return branches[0], branches[1]


def _pull(repo: Path, remote: Path, timeout: float, code: int = 0) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.monotonic()
    proc = subprocess.run(
        [*hydrate_command(), "pull", str(remote), "--json"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    report: dict[str, object] = json.loads(proc.stdout)
    report["seconds"] = time.monotonic() - start
    return report


def _two_clones(remote: Path, tmp_path: Path, width: int, levels: int) -> tuple[Path, Path]:
    """Clone a at one tip of the criss-cross and b at the other, each with a change."""
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1", body="base\n")
    top_a, top_b = _criss_cross(a, width, levels)
    b = clone(remote, tmp_path / "b")
    git(a, "update-ref", "refs/tmp/other", top_b)
    git(b, "fetch", "-q", str(a), "refs/tmp/other:refs/tmp/other")
    git(a, "update-ref", "-d", "refs/tmp/other")
    git(b, "update-ref", REF, top_b)
    git(b, "update-ref", "-d", "refs/tmp/other")
    git(a, "update-ref", REF, top_a)
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="from a")
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", priority=2)
    bases = git(a, "merge-base", "--all", top_a, top_b).split()
    assert len(bases) == width
    return a, b


def _pull_crosswise(a: Path, b: Path, tmp_path: Path) -> None:
    a_copy = Path(shutil.copytree(a, tmp_path / "a-copy"))
    b_copy = Path(shutil.copytree(b, tmp_path / "b-copy"))
    seconds: list[float] = []
    for here, there in ((a, b_copy), (b, a_copy)):
        # (before the bound, each pull took over a minute here)
        report = _pull(here, there, timeout=30)
        outcomes = report["tasks"]
        assert isinstance(outcomes, list)
        assert [o["action"] for o in outcomes] == ["merged"], outcomes
        seconds.append(float(str(report["seconds"])))
    # (a hang is what the timeout catches; the time is printed for the record)
    print(f"pulls took {seconds[0]:.1f} s and {seconds[1]:.1f} s")


def test_many_merge_bases_many_levels_deep_merge_the_same_on_both_clones(
    remote: Path, tmp_path: Path
) -> None:
    a, b = _two_clones(remote, tmp_path, width=12, levels=4)
    _pull_crosswise(a, b, tmp_path)
    assert tree_of(a, "T-1") == tree_of(b, "T-1")
    for repo in (a, b):
        with Ledger(repo) as ledger:
            task = ledger.get_task("T-1")
            assert task["title"] == "from a" and task["priority"] == 2
            sources = sorted(e["source"] for e in ledger.context_entries("T-1"))
            assert sources == sorted(["notes", *(f"n{i}" for i in range(12))])
        fsck(repo)


def test_the_merge_of_a_criss_cross_history_is_deterministic(remote: Path, tmp_path: Path) -> None:
    a, b = _two_clones(remote, tmp_path, width=5, levels=3)
    before = Path(shutil.copytree(a, tmp_path / "a-before"))
    _pull_crosswise(a, b, tmp_path / "first")
    again = Path(shutil.copytree(before, tmp_path / "a-again"))
    _pull(again, b, timeout=30)  # b has merged meanwhile: a fast-forward
    assert tree_of(again, "T-1") == tree_of(a, "T-1") == tree_of(b, "T-1")
    fsck(again)


def test_a_merge_with_too_many_merge_bases_is_refused_named_and_the_rest_pulls(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1", body="base\n")
    make_task(a, "T-2")
    root = _tip(a)
    branches = []
    for i in range(MAX_MERGE_BASES + 1):
        git(a, "update-ref", REF, root)
        with Ledger(a) as ledger:
            ledger.add_context("T-1", f"note {i}\n", f"n{i}")
        branches.append(_tip(a))
    tree = git(a, "rev-parse", f"{REF}^{{tree}}").strip()
    top_a = _commit(a, tree, branches, "octopus a")
    top_b = _commit(a, tree, branches, "octopus b")
    git(a, "update-ref", REF, top_a)
    b = Path(shutil.copytree(a, tmp_path / "b"))
    git(b, "update-ref", REF, top_b)
    with Ledger(b) as ledger:
        ledger.edit_task("T-2", title="changed in b")
    report = _pull(a, b, timeout=30, code=1)  # a skipped task fails the pull, named
    actions = {str(o["task_id"]): (o["action"], o["detail"]) for o in report["tasks"]}  # type: ignore[union-attr]
    assert actions["T-2"][0] == "fast-forward"
    action, note = actions["T-1"]
    assert action == "skipped"
    assert f"{MAX_MERGE_BASES + 1} merge bases" in str(note)
    assert _tip(a) == top_a
    fsck(a)


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    from .test_sync import remote as make_remote

    return make_remote.__wrapped__(tmp_path)  # type: ignore[attr-defined]
