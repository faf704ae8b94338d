"""The current task of a work tree: start, current, @ and --current, branch names."""

from __future__ import annotations

import json
from pathlib import Path

from git_hydrate import Ledger

from .conftest import git, hydrate


def _task(repo: Path, task_id: str) -> None:
    result = hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a")
    assert result.returncode == 0, result


def test_start_records_the_task_and_moves_it_in_progress(repo: Path) -> None:
    _task(repo, "W-1")
    started = hydrate(repo, "start", "W-1")
    assert started.returncode == 0, started
    assert started.stdout == "started W-1 (open -> in_progress)\n"
    path = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path",
                    "hydrate/current-task").strip())  # fmt: skip
    assert path.read_text() == "W-1\n"
    assert hydrate(repo, "current").stdout == "W-1\n"
    status = json.loads(hydrate(repo, "status", "W-1", "--json").stdout)
    assert (status["status"], status["assignee"]) == (
        "in_progress",
        "Hydrate Tester <tester@example.com>",
    )
    again = hydrate(repo, "start", "W-1")  # already in progress: nothing to move
    assert again.returncode == 0 and again.stdout == "started W-1\n"
    assert git(repo, "status", "--porcelain") == ""  # nothing in the work tree


def test_at_and_current_stand_for_the_task(repo: Path) -> None:
    _task(repo, "W-1")
    hydrate(repo, "start", "W-1")
    by_id = hydrate(repo, "prompt", "W-1")
    for args in (["prompt", "@"], ["prompt", "--current"], ["--compact", "show", "@", "--json"]):
        result = hydrate(repo, *args)
        assert result.returncode == 0, (args, result)
        if args[0] == "prompt":
            assert result.stdout == by_id.stdout
        else:
            assert json.loads(result.stdout)["task_id"] == "W-1"
    added = hydrate(repo, "add", "@", "--text", "a note")
    assert added.returncode == 0, added
    with Ledger(repo) as ledger:
        assert [e["source"] for e in ledger.context_entries("W-1")] == ["cli"]
    # status, whose ID may be left out (the list of all), takes them too
    shown = hydrate(repo, "--compact", "status", "@", "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["task_id"] == "W-1", shown
    moved = hydrate(repo, "status", "--current", "--set", "review")
    assert moved.stdout == "task W-1: in_progress -> review\n", moved
    assert hydrate(repo, "status").stdout.startswith("W-1\treview")


def test_without_a_current_task_one_line_says_how(repo: Path) -> None:
    result = hydrate(repo, "prompt", "@")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: no current task in this work tree: start one with")
    assert len(result.stderr.splitlines()) == 1
    assert hydrate(repo, "current").returncode == 1
    both = hydrate(repo, "show", "X-1", "--current")
    assert both.returncode == 2 and "give ID or --current, not both" in both.stderr
    missing = hydrate(repo, "show")
    assert missing.returncode == 2 and "Missing argument 'ID'" in missing.stderr


def test_the_branch_names_the_task_when_none_was_started(repo: Path) -> None:
    _task(repo, "BR-7")
    git(repo, "checkout", "-q", "-b", "feature/BR-7-login")
    found = hydrate(repo, "--compact", "current", "--json")
    assert json.loads(found.stdout) == {
        "branch": "feature/BR-7-login",
        "source": "branch",
        "task_id": "BR-7",
    }
    git(repo, "checkout", "-q", "-b", "feature/NO-9")  # not a task: no current task
    assert hydrate(repo, "current").returncode == 1
    git(repo, "config", "hydrate.taskPattern", r"task-(\d+)")
    _task(repo, "12")
    git(repo, "checkout", "-q", "-b", "task-12")
    assert hydrate(repo, "current").stdout == "12\n"
    _task(repo, "W-1")
    hydrate(repo, "start", "W-1")  # a started task wins over the branch
    assert hydrate(repo, "current").stdout == "W-1\n"
    cleared = hydrate(repo, "current", "--clear")
    assert cleared.stdout == "cleared W-1\n12\n"


def test_task_add_at_creates_the_task_the_branch_is_named_after(repo: Path) -> None:
    """``@`` stands for an existing task everywhere else; ``task-add @`` on a branch
    named after a ticket creates it (it used to fail: no current task)."""
    _task(repo, "W-1")
    hydrate(repo, "start", "W-1")  # (a started task is not what task-add @ means)
    git(repo, "checkout", "-q", "-b", "feature/BR-8-login")
    made = hydrate(repo, "task-add", "@", "--objective", "Log in", "--acceptance", "a")
    assert made.returncode == 0 and made.stdout == "created task BR-8: Log in\n"
    again = hydrate(repo, "task-add", "--current", "--objective", "o", "--acceptance", "a")
    assert again.returncode != 0 and "task BR-8 already exists" in again.stderr
    git(repo, "checkout", "-q", "-b", "nothing-here")
    none = hydrate(repo, "task-add", "@", "--objective", "o", "--acceptance", "a")
    assert none.returncode == 1 and none.stdout == ""
    assert none.stderr == (
        "error: task-add @ creates the task the branch is named after, and branch "
        "'nothing-here' names none (hydrate.taskPattern): give the ID\n"
    )
    assert [t["task_id"] for t in Ledger(repo).list_tasks()] == ["BR-8", "W-1"]


def test_each_linked_work_tree_has_its_own(repo: Path, tmp_path: Path) -> None:
    _task(repo, "W-1")
    _task(repo, "W-2")
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    hydrate(repo, "start", "W-1")
    assert hydrate(other, "current").returncode == 1
    hydrate(other, "start", "W-2")
    assert hydrate(repo, "current").stdout == "W-1\n"
    assert hydrate(other, "current").stdout == "W-2\n"
    assert hydrate(other, "-C", str(repo), "current").stdout == "W-1\n"


def test_start_follows_the_lifecycle(repo: Path) -> None:
    _task(repo, "W-1")
    hydrate(repo, "status", "W-1", "--set", "cancelled")
    refused = hydrate(repo, "start", "W-1")
    assert refused.returncode == 1
    assert "cannot move from cancelled to in_progress" in refused.stderr
    assert hydrate(repo, "current").returncode == 1  # nothing recorded


def test_start_claims_a_ready_task_and_only_moves_one_that_waits(repo: Path) -> None:
    _task(repo, "W-1")
    assert hydrate(repo, "task-add", "W-2", "--objective", "o", "--acceptance", "a",
                   "--depends-on", "W-1").returncode == 0  # fmt: skip
    waiting = hydrate(repo, "start", "W-2")
    assert waiting.returncode == 0 and waiting.stdout == "started W-2 (open -> in_progress)\n"
    assert json.loads(hydrate(repo, "show", "W-2", "--json").stdout)["assignee"] == ""
    assert hydrate(repo, "claim", "W-1", "--as", "someone-else").returncode == 0
    held = hydrate(repo, "start", "W-1")  # held by another: moved (it is), not taken
    assert held.returncode == 0
    assert json.loads(hydrate(repo, "show", "W-1", "--json").stdout)["assignee"] == "someone-else"
    # and said: "started W-1" alone let two people work on it unawares (explorer15)
    since = json.loads(hydrate(repo, "show", "W-1", "--json").stdout)["claimed_at"]
    assert held.stdout == "started W-1\n"
    assert held.stderr == (
        f"warning: W-1 is held by someone-else since {since}: it stays theirs "
        "(git hydrate claim W-1 --steal takes a stale claim)\n"
    )
    mine = hydrate(repo, "start", "W-2")
    assert (
        mine.stderr == ""
        and json.loads(hydrate(repo, "start", "--json", "W-2").stdout)["held_by"] == ""
    )


def test_a_started_task_removed_is_passed_over_and_said(repo: Path) -> None:
    """``task-rm`` of the started task: ``current`` says it is gone (exit 1, with
    ``current --clear``), ``@`` says the same in one line, and the branch's task
    is current again."""
    _task(repo, "BR-7")
    _task(repo, "R-1")
    git(repo, "checkout", "-q", "-b", "feature/BR-7")
    hydrate(repo, "start", "R-1")
    assert hydrate(repo, "task-rm", "R-1").returncode == 0
    gone = "the task started here, R-1, is no longer here (removed or archived); "
    gone += "forget it with: git hydrate current --clear"
    assert hydrate(repo, "current").stdout == "BR-7\n"  # (the branch's, as if none started)
    git(repo, "checkout", "-q", "-b", "other")
    said = hydrate(repo, "current")
    assert (said.returncode, said.stdout, said.stderr) == (1, "", gone + "\n")
    prompt = hydrate(repo, "prompt", "@")
    assert (prompt.returncode, prompt.stderr) == (1, f"error: {gone}\n")
    cleared = hydrate(repo, "current", "--clear")  # (the command said: it succeeds)
    assert (cleared.returncode, cleared.stdout) == (0, "cleared R-1\n")
    assert hydrate(repo, "current", "--clear").returncode == 1  # (nothing was started)
    assert hydrate(repo, "current").stderr == "no current task: git hydrate start ID\n"


def test_a_checkpoint_on_a_task_another_holds_is_recorded_and_said(repo: Path) -> None:
    """w2 checkpointed a task w3 held without a word; a sync merged it into w3's
    history (explorer17). It is still recorded (a reviewer may note progress), and
    said on stderr."""
    _task(repo, "W-1")
    _task(repo, "W-2")
    assert hydrate(repo, "claim", "W-1", "--as", "someone-else").returncode == 0
    since = json.loads(hydrate(repo, "show", "W-1", "--json").stdout)["claimed_at"]
    theirs = hydrate(repo, "checkpoint", "W-1", "--summary", "read it")
    assert theirs.returncode == 0
    assert theirs.stdout == "task W-1: checkpoint #1 recorded (0 cumulative tokens)\n"
    assert theirs.stderr == (
        f"warning: W-1 is held by someone-else since {since}: your checkpoint is recorded"
        " in the task's history beside their work\n"
    )
    assert hydrate(repo, "claim", "W-2").returncode == 0
    mine = hydrate(repo, "checkpoint", "W-2", "--summary", "done a step")
    assert mine.returncode == 0 and mine.stderr == ""
    unheld = hydrate(repo, "checkpoint", "W-2", "--summary", "again", "--json")
    assert unheld.stderr == "" and json.loads(unheld.stdout)["number"] == 2
