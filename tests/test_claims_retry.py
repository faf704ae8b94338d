"""Claims a worker can retry, and staleness on two clocks (issue 29: idempotent claims, D8)."""

from __future__ import annotations

import json
from pathlib import Path

from git_hydrate import Ledger

from .conftest import git, hydrate


def _remote_with_tasks(tmp_path: Path, *ids: str) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    planner = _clone(bare, tmp_path / "planner")
    with Ledger(planner) as ledger:
        for task_id in ids:
            ledger.add_task(task_id, objective=f"do {task_id}", acceptance="works")
    assert hydrate(planner, "push").returncode == 0
    return bare


def _clone(bare: Path, dest: Path) -> Path:
    git(dest.parent, "clone", "-q", str(bare), str(dest))
    return dest


def _claim(repo: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    res = hydrate(repo, "claim", *args, "--json", env=env)
    assert res.returncode == 0, res
    data: dict[str, object] = json.loads(res.stdout)
    return data


# -- a retried claim finds what its holder holds ------------------------------------------


def test_a_retried_claim_next_finds_the_task_its_holder_holds(repo: Path) -> None:
    with Ledger(repo) as ledger:
        for task_id in ("A", "B", "C"):
            ledger.add_task(task_id, objective=f"do {task_id}", acceptance="works")
    first = _claim(repo, "--next", "--as", "w1")
    assert (first["task_id"], first["changed"]) == ("A", True)
    again = _claim(repo, "--next", "--as", "w1")
    assert (again["task_id"], again["changed"]) == ("A", False)
    retried = hydrate(repo, "claim", "--next", "--as", "w1").stdout
    assert retried == "you already hold A (as w1); --another takes one more\n"
    assert hydrate(repo, "claim", "A", "--as", "w1").stdout == "you already hold A (as w1)\n"
    other = _claim(repo, "--next", "--as", "w2")
    assert other["task_id"] == "B"  # another holder is not given w1's task
    more = _claim(repo, "--next", "--as", "w1", "--another")
    assert (more["task_id"], more["changed"]) == ("C", True)
    mine = hydrate(repo, "ready", "--mine", "--as", "w1")
    assert mine.returncode == 0, mine
    assert [line.split("\t")[:2] for line in mine.stdout.splitlines()] == [
        ["A", "in_progress"],
        ["C", "in_progress"],
    ]
    listed = json.loads(hydrate(repo, "ready", "--mine", "--as", "w2", "--json").stdout)
    assert [item["task_id"] for item in listed] == ["B"]
    nobody = hydrate(repo, "ready", "--mine", "--as", "w3")
    assert (nobody.returncode, nobody.stdout, nobody.stderr) == (0, "", "you hold no task\n")
    refused = hydrate(repo, "claim", "A", "--another")
    assert refused.returncode == 2 and "use it with --next" in refused.stderr
    assert hydrate(repo, "ready", "--as", "w1").returncode == 2


def test_a_claim_whose_answer_was_lost_is_found_on_the_remote(tmp_path: Path) -> None:
    bare = _remote_with_tasks(tmp_path, "A", "B")
    first = _clone(bare, tmp_path / "first")
    taken = _claim(first, "--next", "--remote", "origin", "--as", "w1")
    assert (taken["task_id"], taken["changed"]) == ("A", True)
    # The worker was killed before it printed; it starts again in a fresh clone.
    retry = _clone(bare, tmp_path / "retry")
    again = _claim(retry, "--next", "--remote", "origin", "--as", "w1")
    assert (again["task_id"], again["changed"], again["remote"]) == ("A", False, "origin")
    mine = json.loads(
        hydrate(retry, "ready", "--mine", "--remote", "origin", "--as", "w1", "--json").stdout
    )
    assert [item["task_id"] for item in mine] == ["A"]
    ready = json.loads(hydrate(retry, "ready", "--remote", "origin", "--json").stdout)
    assert [item["task_id"] for item in ready] == ["B"]  # B was never taken


# -- staleness on two clocks ----------------------------------------------------------------


def _at(moment: str) -> dict[str, str]:
    return {"GIT_COMMITTER_DATE": moment, "GIT_AUTHOR_DATE": moment}


def _held_then_checkpointed(tmp_path: Path, holder_clock: str) -> tuple[Path, Path]:
    """A holder whose clock says ``holder_clock`` claims K-1 and checkpoints; a
    stealer's clone pulls it when its own clock says 12:01."""
    bare = _remote_with_tasks(tmp_path, "K-1")
    holder = _clone(bare, tmp_path / "holder")
    _claim(holder, "K-1", "--remote", "origin", "--as", "slow", env=_at(holder_clock))
    res = hydrate(
        holder, "checkpoint", "K-1", "--summary", "alive", "--tokens", "1", env=_at(holder_clock)
    )
    assert res.returncode == 0, res
    assert hydrate(holder, "push", env=_at(holder_clock)).returncode == 0
    stealer = _clone(bare, tmp_path / "stealer")
    return holder, stealer


def test_a_holder_whose_clock_is_slow_is_not_stolen_from_a_minute_later(tmp_path: Path) -> None:
    _holder, stealer = _held_then_checkpointed(tmp_path, "2030-01-01T10:00:00Z")  # 2 h slow
    args = ("claim", "K-1", "--steal", "--stale-after", "1h", "--remote", "origin", "--as", "me")
    early = hydrate(stealer, *args, env=_at("2030-01-01T12:01:00Z"))
    assert early.returncode == 1, early
    assert "not stale, so not taken" in early.stderr
    late = hydrate(stealer, *args, "--json", env=_at("2030-01-01T13:02:00Z"))
    assert late.returncode == 0, late
    assert json.loads(late.stdout)["taken_from"] == "slow"


def test_a_holder_whose_clock_is_a_day_fast_is_stolen_from_once_stale_here(
    tmp_path: Path,
) -> None:
    _holder, stealer = _held_then_checkpointed(tmp_path, "2030-01-02T12:00:00Z")  # a day fast
    listed = hydrate(
        stealer,
        "ready",
        "--remote",
        "origin",
        "--include-stale",
        "1h",
        "--json",
        env=_at("2030-01-01T12:01:00Z"),
    )
    assert json.loads(listed.stdout) == []  # first seen here just now
    args = ("claim", "K-1", "--steal", "--stale-after", "1h", "--remote", "origin", "--as", "me")
    late = hydrate(stealer, *args, "--json", env=_at("2030-01-01T13:02:00Z"))
    assert late.returncode == 0, late
    assert json.loads(late.stdout)["taken_from"] == "slow"
    seen = (stealer / ".git" / "hydrate" / "claims-seen").read_text().splitlines()
    assert seen[0] == "git-hydrate claims-seen 1" and seen[1].startswith("K-1 ")
