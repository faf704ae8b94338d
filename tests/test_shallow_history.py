"""Ranking in a shallow clone (``git clone --depth``): the commit at the cut looks
like a root commit adding every file it holds, changes that never happened
together. It must not count in any history signal (co-change, "changes often",
past commits like the task), in the clone and in its linked worktrees."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.hydrate.history import read_history
from tests.conftest import commit_files, git

TASK = "S-1"
UNRELATED = [f"misc/u{i}.py" for i in range(20)]


@pytest.fixture
def origin(repo: Path) -> Path:
    """20 commits each adding an unrelated file, then 4 changing ``src/core.py``
    with ``src/partner.py``."""
    for i, path in enumerate(UNRELATED):
        commit_files(repo, {path: f"value = {i}\n"}, f"add unrelated module {i}")
    for i in range(4):
        commit_files(
            repo,
            {"src/core.py": f"def core(): return {i}\n", "src/partner.py": f"P = {i}\n"},
            f"core and partner change together {i}",
        )
    return repo


def _clone(origin: Path, tmp_path: Path, depth: int | None) -> Path:
    """A clone of ``origin`` cut at ``depth`` commits (``None``: a full clone)."""
    clone = tmp_path / f"depth{depth}"
    cut = ["--depth", str(depth)] if depth else []
    git(tmp_path, "clone", "-q", *cut, f"file://{origin}", str(clone))
    with Ledger(clone) as ledger:
        ledger.add_task(TASK, objective="Speed up core", acceptance="-", files=["src/core.py"])
    return clone


def _reasons(clone: Path) -> dict[str, str]:
    with Ledger(clone) as ledger:
        ledger.add_tree(TASK)
        return {e["source"]: e["reason"] for e in ledger.context_entries(TASK)}


def test_the_commit_at_the_cut_is_left_out_of_the_history(origin: Path, tmp_path: Path) -> None:
    clone = _clone(origin, tmp_path, 3)
    newest = git(clone, "rev-list", "HEAD").split()
    assert len(newest) == 3  # (the third is the cut: git shows it adding all 22 files)
    with Ledger(clone) as ledger:
        history = read_history(ledger.repo, newest[0])
    assert history.commits == newest[:2]
    assert history.paths == [["src/core.py", "src/partner.py"]] * 2
    # a linked worktree shares the clone's shallow file (in the common directory)
    git(clone, "worktree", "add", "-q", str(tmp_path / "linked"), "HEAD")
    with Ledger(tmp_path / "linked") as ledger:
        assert read_history(ledger.repo, newest[0]) == history


@pytest.mark.parametrize("depth", [1, 3])
def test_no_file_co_changes_through_the_cut(origin: Path, tmp_path: Path, depth: int) -> None:
    """The partner ranks first after the file in play, as in the full clone; the
    unrelated files, which only the cut "adds" with it, get no history signal."""
    reasons = _reasons(_clone(origin, tmp_path, depth))
    full = _reasons(_clone(origin, tmp_path, None))
    assert list(full)[:2] == ["src/core.py", "src/partner.py"]
    assert full["src/partner.py"] == "co-change with src/core.py"
    assert list(reasons)[:2] == ["src/core.py", "src/partner.py"]
    assert {reasons[path] for path in UNRELATED} == {"no signal"}
    if depth == 1:  # (no history is left: the one commit is the cut)
        assert reasons["src/partner.py"] == "same directory"
    else:
        assert reasons["src/partner.py"] == "co-change with src/core.py"


def test_a_real_root_commit_of_many_files_is_a_sweep(repo: Path) -> None:
    """In a full clone, a root commit adding more files than a sweep (30) is left
    out as any sweep is, as the cut is; one of a few files is history like any
    other commit."""
    git(repo, "checkout", "-q", "--orphan", "fresh")
    git(repo, "rm", "-q", "-r", "--cached", ".")
    root = commit_files(repo, {f"lib/m{i}.py": f"m = {i}\n" for i in range(31)}, "import")
    small = commit_files(repo, {"a.py": "a\n", "b.py": "b\n"}, "a and b")
    with Ledger(repo) as ledger:
        history = read_history(ledger.repo, small)
    assert root not in history.commits and history.commits == [small]
    assert history.paths == [["a.py", "b.py"]]
