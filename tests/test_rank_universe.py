"""``rank`` ranks the attached files among every file add-tree ranked (the
recorded run's candidates), not among themselves: right after add-tree it
moves nothing, and after a task edit it gives what add-tree gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import commit_files, hydrate

TASK = "U-1"
WORDS = ["parser", "token", "render", "cache", "config", "widget", "socket", "logger"]


@pytest.fixture
def project(repo: Path) -> Path:
    """Forty files whose words and history differ, so that ranking a half of them
    alone weighs their words (and picks seeds) otherwise than among all."""
    files = {}
    for i in range(40):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]
        body = f"def {a}_{i}():\n    return {b}_{i}  # {a} {b}\n" * (1 + i % 7)
        files[f"src/{a}/{b}_{i}.py"] = body
    commit_files(repo, files, "layout")
    paths = sorted(files)
    for n in range(6):
        commit_files(
            repo,
            {path: files[path] + f"# {n}\n" for path in paths[n * 3 : n * 3 + 4]},
            f"change {WORDS[n]} and {WORDS[n + 1]} together",
        )
    with Ledger(repo) as ledger:
        ledger.add_task(
            TASK,
            objective="The parser drops a token when the render cache is cold",
            acceptance="tokens survive",
        )
    return repo


def places(repo: Path) -> dict[str, tuple[int, float | None]]:
    with Ledger(repo) as ledger:
        return {e["source"]: (e["priority"], e["score"]) for e in ledger.context_entries(TASK)}


@pytest.mark.parametrize("budget", [None, 2_000])
def test_rank_right_after_add_tree_moves_nothing(project: Path, budget: int | None) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree(TASK, max_total_bytes=budget)
        before = places(project)
        if budget is not None:  # (the budget attaches about half the files)
            assert 10 < len(before) < 30
        result = ledger.rank(TASK)
    assert (result["reranked"], result["changed"]) == (0, False)
    assert places(project) == before
    out = hydrate(project, "rank", TASK)
    assert "reranked 0" in out.stdout


def test_rank_after_a_task_edit_gives_what_add_tree_gives(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree(TASK, max_total_bytes=2_000)
        attached = list(places(project))
        ledger.edit_task(TASK, files=[attached[-1]], tests=[])
        assert ledger.rank(TASK)["reranked"] > 0
        ranked = places(project)
        again = ledger.add_tree(TASK, max_total_bytes=2_000)
    assert again["reranked"] == 0
    now = places(project)
    assert {path: now[path] for path in ranked if path in now} == {
        path: ranked[path] for path in ranked if path in now
    }


def test_rank_after_add_tree_of_an_older_commit_moves_nothing(project: Path) -> None:
    """A run of another revision ranked by that revision's history: so does ``rank``
    (without ``--rev``)."""
    with Ledger(project) as ledger:
        ledger.add_tree(TASK, rev="HEAD~3", max_total_bytes=2_000)
        before = places(project)
        result = ledger.rank(TASK)
    assert (result["reranked"], result["changed"]) == (0, False)
    assert places(project) == before


def test_rank_right_after_a_worktree_run_moves_nothing(project: Path) -> None:
    """A ``--worktree`` run's files ranked among themselves: right after add-tree,
    ``rank`` moved 6 of 11. They rank among every file that run would rank now
    (the work tree listed again), by HEAD's history, as add-tree ranks them;
    ``runs`` says so, and ``commit`` (no link ranked by HEAD alone) is null."""
    with Ledger(project) as ledger:
        ledger.add_tree(TASK, worktree=True, max_total_bytes=2_000)
        before = places(project)
        assert 10 < len(before) < 30
        result = ledger.rank(TASK)
    assert (result["reranked"], result["changed"]) == (0, False)
    assert places(project) == before
    runs = [(r["run"], r["links"]) for r in result["runs"]]
    assert runs == [("--worktree --max-total-bytes 2000", len(before))]
    assert result["commit"] is None


def test_rank_json_names_the_commit_that_ranked_each_run(project: Path) -> None:
    """``commit`` said HEAD though a run of HEAD~3 ranked every link by HEAD~3's
    history: it is null then, and ``runs`` names the run and its commit; with
    ``--rev`` that revision ranks every link, and ``commit`` names it."""
    import json

    from tests.conftest import git

    with Ledger(project) as ledger:
        ledger.add_tree(TASK, rev="HEAD~3", max_total_bytes=2_000)
    older, head = (git(project, "rev-parse", rev).strip() for rev in ("HEAD~3", "HEAD"))
    ranked = json.loads(hydrate(project, "rank", TASK, "--json").stdout)
    assert ranked["commit"] is None
    run = "--rev 'HEAD~3' --max-total-bytes 2000"
    assert [(r["run"], r["commit"]) for r in ranked["runs"]] == [(run, older)]
    pinned = json.loads(hydrate(project, "rank", TASK, "--rev", "HEAD", "--json").stdout)
    assert pinned["commit"] == head
    assert [(r["run"], r["commit"]) for r in pinned["runs"]] == [(run, head)]
