"""A push that finds a task moved on the remote, where this clone changed nothing
of it, reports it as behind (a pull brings it) and does not fail for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate import sync as hsync

from .conftest import as_sh_reads, git, hydrate
from .test_sync import after_the_first_pull, clone

BEHIND = "  behind         T  (origin has a newer version: git hydrate pull origin)"


def _two_clones(origin: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A pushed T and U; B pulled them; then A changed T and pushed it."""
    a = clone(origin, tmp_path / "a")
    for task_id in ("T", "U"):
        assert (
            hydrate(a, "task-add", task_id, "--objective", "x", "--acceptance", "x").returncode
            == 0
        )
    assert hydrate(a, "push", "origin").returncode == 0
    b = clone(origin, tmp_path / "b")
    assert hydrate(b, "pull", "origin").returncode == 0
    assert hydrate(a, "task-edit", "T", "--objective", "one more").returncode == 0
    assert hydrate(a, "push", "origin").returncode == 0
    return a, b


def test_a_task_changed_only_elsewhere_is_behind_not_rejected(
    origin: Path, tmp_path: Path
) -> None:
    _a, b = _two_clones(origin, tmp_path)
    seen = git(b, "rev-parse", "refs/hydrate/tasks/T").strip()
    assert hydrate(b, "task-add", "V", "--objective", "x", "--acceptance", "x").returncode == 0
    res = hydrate(b, "push", "origin")
    assert res.returncode == 0, res
    assert res.stdout.splitlines() == [
        "push origin: 1 behind, 1 pushed (new), 1 up to date",
        "  pushed (new)   V",
        BEHIND,
    ]
    assert res.stderr == ""
    # nothing of the remote's T was touched, and B's copy is still what it saw
    assert git(b, "rev-parse", "refs/hydrate/tasks/T").strip() == seen
    res = hydrate(b, "push", "origin", "--json")
    assert res.returncode == 0, res
    data = json.loads(res.stdout)
    assert data["ok"] is True
    assert data["counts"] == {"behind": 1, "up-to-date": 2}
    assert data["tasks"] == [
        {
            "action": "behind",
            "detail": "origin has a newer version: git hydrate pull origin",
            "new": None,
            "old": seen,
            "task_id": "T",
        }
    ]
    # the pull it names brings it, and the next push has nothing to say of T
    assert hydrate(b, "pull", "origin").returncode == 0
    res = hydrate(b, "push", "origin")
    assert res.returncode == 0 and "behind" not in res.stdout, res


def test_a_task_changed_here_too_is_still_rejected(origin: Path, tmp_path: Path) -> None:
    _a, b = _two_clones(origin, tmp_path)
    assert hydrate(b, "task-edit", "T", "--objective", "mine").returncode == 0
    res = hydrate(b, "push", "origin")
    assert res.returncode == 1
    assert "REJECTED       T" in res.stdout and "behind" not in res.stdout
    assert res.stderr == "error: rejected by origin: T; run git hydrate sync origin\n"


def test_a_tip_the_mirror_holds_in_its_history_is_behind(origin: Path, tmp_path: Path) -> None:
    """The mirror fetched further than the task was pulled (a pull of other ids):
    the local tip is an ancestor of what this clone last saw there."""
    a, b = _two_clones(origin, tmp_path)
    assert hydrate(b, "pull", "origin", "U").returncode == 0  # fetches T, merges U only
    mirror = git(b, "rev-parse", "refs/hydrate-remotes/origin/tasks/T").strip()
    assert mirror != git(b, "rev-parse", "refs/hydrate/tasks/T").strip()
    assert hydrate(a, "task-edit", "T", "--objective", "and another").returncode == 0
    assert hydrate(a, "push", "origin").returncode == 0
    res = hydrate(b, "push", "origin")
    assert res.returncode == 0, res
    assert BEHIND in res.stdout.splitlines()
    with Ledger(b) as ledger:
        report = hsync.push(ledger.refs, "origin", ["T"])
    assert report.ok and [(o.name, o.action) for o in report.outcomes] == [("T", "behind")]


def test_sync_pulls_again_a_task_that_moved_after_its_pull(
    origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = _two_clones(origin, tmp_path)
    assert hydrate(b, "task-add", "V", "--objective", "x", "--acceptance", "x").returncode == 0

    def someone_pushes() -> None:
        assert hydrate(a, "task-edit", "U", "--objective", "moved").returncode == 0
        assert hydrate(a, "push", "origin").returncode == 0

    after_the_first_pull(monkeypatch, someone_pushes)
    with Ledger(b) as ledger:
        report = hsync.sync(ledger.refs, "origin")
        assert report.ok, report.as_dict()
        assert report.rounds == 2
        assert ledger.get_task("U")["objective"] == "moved"
    assert "behind" not in {o.action for o in report.outcomes}


def test_the_commands_a_push_suggests_name_a_url_as_one_word(tmp_path: Path) -> None:
    """A remote given as a URL or path may hold ``&``, ``;``, a space or a quote: the
    command a report suggests names it quoted for the shell, so that it runs as
    shown (``git hydrate pull /srv/team & co.git`` ran ``co.git`` on its own)."""
    odd = tmp_path / "team & co's $(id).git"
    git(tmp_path, "init", "-q", "--bare", str(odd))
    a, b = clone(odd, tmp_path / "a"), clone(odd, tmp_path / "b")
    assert hydrate(a, "task-add", "T", "--objective", "x", "--acceptance", "x").returncode == 0
    assert hydrate(a, "push", str(odd)).returncode == 0
    assert hydrate(b, "pull", str(odd)).returncode == 0
    assert hydrate(a, "task-edit", "T", "--objective", "one more").returncode == 0
    assert hydrate(a, "push", str(odd)).returncode == 0
    res = hydrate(b, "push", str(odd), "--json")
    assert res.returncode == 0, res
    (task,) = json.loads(res.stdout)["tasks"]
    suggested = task["detail"].split(": ", 1)[1]
    assert as_sh_reads(suggested, tmp_path) == ["git", "hydrate", "pull", str(odd)]
    # a rejection (both sides changed T) names the same word in its sync command
    assert hydrate(b, "task-edit", "T", "--objective", "mine").returncode == 0
    res = hydrate(b, "push", str(odd))
    assert res.returncode == 1
    suggested = res.stderr.rstrip("\n").split("; run ", 1)[1]
    assert as_sh_reads(suggested, tmp_path) == ["git", "hydrate", "sync", str(odd)]
    rejected = next(line for line in res.stdout.splitlines() if "REJECTED  " in line)
    assert "you do not have: run " in rejected, rejected
    in_report = rejected.split("you do not have: run ", 1)[1].removesuffix(")")
    assert in_report == suggested
