"""``prompt ID --refresh`` on the fast path: answered from the refresh memo and the
prompt cache only while a refresh would recognise every recorded run again, byte for
byte what the full command line prints; any input a run depends on that changed sends
it to the full command line, which refreshes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger

from .conftest import ROOT, commit_files, git, hydrate
from .test_quick import through_entry

TASK = "R-1"


@pytest.fixture
def task(repo: Path) -> Path:
    """A task hydrated from HEAD, refreshed once by the full command line (which
    recognises the run, keeps the memo and stores the prompt)."""
    commit_files(repo, {"src/app.py": "def run():\n    return 1\n", "README.md": "# app\n"})
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, "Fix the app", "tests pass", files=["src/app.py"])
        ledger.add_tree(TASK)
    first = hydrate(repo, "prompt", TASK, "--refresh")
    assert first.returncode == 0 and "recognised" in first.stderr, first
    return repo


def same(repo: Path, *args: str) -> bool:
    """Run ``args`` through the entry point; when the fast path served them, run them
    through the full command line too and assert the same stdout, stderr and exit
    status. (A refresh the fast path leaves to the full command line may change the
    task, so it is not run twice.) Whether the fast path served them."""
    fast = through_entry(repo, *args)
    if not fast.served:  # type: ignore[attr-defined]
        assert fast.returncode in (0, 2), fast
        return False
    full = hydrate(repo, *args)
    assert (fast.stdout, fast.stderr, fast.returncode) == (
        full.stdout,
        full.stderr,
        full.returncode,
    ), (args, fast, full)
    return True


def memo(repo: Path) -> Path:
    return repo / ".git" / "hydrate" / "refresh-memo"


def test_an_unchanged_refresh_is_served_and_identical(task: Path, tmp_path: Path) -> None:
    assert same(task, "prompt", TASK, "--refresh")
    fast = through_entry(task, "prompt", TASK, "--refresh")
    assert fast.stderr.splitlines()[0].startswith(f"refreshed {TASK} from HEAD ")
    assert "unchanged 3 (recognised" in fast.stderr
    assert not same(task, "prompt", "--refresh", TASK, "--max-bytes", "64k")  # a miss first
    assert same(task, "prompt", "--refresh", TASK, "--max-bytes", "64k")
    out = tmp_path / "out.md"
    assert same(task, "prompt", TASK, "--refresh", "-o", str(out))
    assert out.read_text() == hydrate(task, "prompt", TASK).stdout
    assert not same(task, "prompt", TASK, "--refresh", "--refresh")  # left to click
    assert not same(task, "prompt", TASK, "--refresh", "-v")


def test_a_new_commit_is_refreshed_by_the_full_command_line(task: Path) -> None:
    commit_files(task, {"src/app.py": "def run():\n    return 2\n"}, "change")
    fast = through_entry(task, "prompt", TASK, "--refresh")
    assert not fast.served  # type: ignore[attr-defined]
    assert "updated 1" in fast.stderr and "return 2" in fast.stdout
    assert not same(task, "prompt", TASK, "--refresh")  # recognised: the memo kept
    assert same(task, "prompt", TASK, "--refresh")
    # the same tree at another commit is another pin
    git(task, "commit", "-q", "--allow-empty", "-m", "empty")
    assert not same(task, "prompt", TASK, "--refresh")


def full_runs_until_served(repo: Path) -> int:
    """How many times ``prompt --refresh`` went to the full command line (each time
    with the same output as the fast path would give) before the fast path served it."""
    for runs in range(4):
        if same(repo, "prompt", TASK, "--refresh"):
            return runs
    raise AssertionError("never served")


def test_what_decides_a_run_here_is_checked(task: Path) -> None:
    assert full_runs_until_served(task) == 0
    # a setting a run reads: a new budget re-runs it (a new tip, recognised next
    # time); the default spelled out is recognised at once, under the new setting
    for key, value, runs in (
        ("hydrate.maxFileBytes", "100k", 2),
        ("hydrate.maxTotalBytes", "1m", 2),
        ("hydrate.allowSecrets", "false", 1),
    ):
        git(task, "config", key, value)
        assert full_runs_until_served(task) == runs, key
    # a valueless boolean is true, unlike an unset one
    git(task, "config", "--unset", "hydrate.allowSecrets")
    assert full_runs_until_served(task) == 1
    with open(task / ".git" / "config", "a") as fh:
        fh.write("[hydrate]\n\tallowSecrets\n")
    assert full_runs_until_served(task) == 2
    # an attributes file outside the tree
    (task / ".git" / "info").mkdir(exist_ok=True)
    (task / ".git" / "info" / "attributes").write_text("*.md binary\n")
    assert full_runs_until_served(task) == 2
    # this clone's record of its own runs: another task's run changes nothing here,
    with Ledger(task) as ledger:
        ledger.add_task("R-2", "Other", "none")
        ledger.add_tree("R-2")
    assert full_runs_until_served(task) == 0
    # a different entry for this task's run is another answer: the run is taken again,
    # which puts the entry back as it was (the tip unchanged), and then it is known
    own = task / ".git" / "hydrate" / "own-selections"
    lines = own.read_text().splitlines()
    record = json.loads(memo(task).read_text())["tips"]
    (mine,) = {i for r in record.values() for i in r["identities"]}
    own.write_text(
        "".join(f"{k} {'0' * 64 if k == mine else v}\n" for k, v in (x.split() for x in lines))
    )
    assert full_runs_until_served(task) == 1


def test_a_run_of_another_clone_is_named_each_time(task: Path) -> None:
    (task / ".git" / "hydrate" / "own-selections").unlink()
    assert not same(task, "prompt", TASK, "--refresh")
    assert same(task, "prompt", TASK, "--refresh")
    fast = through_entry(task, "prompt", TASK, "--refresh")
    assert fast.stderr.startswith(f"warning: {TASK}: not refreshed: recorded in another clone")


def test_a_run_that_is_never_recognised_is_never_served(repo: Path) -> None:
    commit_files(repo, {"a.txt": "a\n"})
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, "Fix", "ok")
        ledger.add_tree(TASK, worktree=True)  # a work tree has no id to compare
    for _ in range(3):
        assert not same(repo, "prompt", TASK, "--refresh")


def test_a_damaged_or_foreign_memo_is_a_miss(task: Path) -> None:
    assert same(task, "prompt", TASK, "--refresh")
    data = json.loads(memo(task).read_text())
    ((tip, record),) = data["tips"].items()
    assert record["task"] == TASK and record["outcomes"][0]["recognised"] is True
    memo(task).chmod(0o666)  # another member of a shared repository could write it
    assert not same(task, "prompt", TASK, "--refresh")
    for damage in (
        b"",
        b"{",
        b"[]",
        b'{"format": 1}',
        b"\xff\xfe",
        b"[" * 200_000 + b"]" * 200_000,
    ):
        memo(task).write_bytes(damage)
        os.chmod(memo(task), 0o600)
        assert not same(task, "prompt", TASK, "--refresh"), damage
        assert same(task, "prompt", TASK, "--refresh"), damage  # written again
    # a record for another task at that tip, or with outcomes of the wrong shape
    for change in ({"task": "R-9"}, {"outcomes": "x"}, {"outcomes": [1]}, {"pinned": [[1]]}):
        data = json.loads(memo(task).read_text())
        data["tips"][tip].update(change)
        memo(task).write_text(json.dumps(data))
        assert not same(task, "prompt", TASK, "--refresh"), change
        assert same(task, "prompt", TASK, "--refresh"), change


def test_only_the_newest_tips_are_kept(task: Path) -> None:
    from git_hydrate.pack import refresh_memo

    assert same(task, "prompt", TASK, "--refresh")
    data = json.loads(memo(task).read_text())
    ((tip, record),) = data["tips"].items()
    data["tips"] = {f"{n:040x}": record for n in range(refresh_memo.MAX_TIPS)} | {tip: record}
    memo(task).write_text(json.dumps(data))
    git(task, "commit", "-q", "--allow-empty", "-m", "move HEAD")
    assert not same(task, "prompt", TASK, "--refresh")
    assert not same(task, "prompt", TASK, "--refresh")  # recognised: kept, the oldest out
    kept = json.loads(memo(task).read_text())["tips"]
    assert len(kept) == refresh_memo.MAX_TIPS and f"{0:040x}" not in kept


def test_a_writer_moving_the_task_during_a_refresh_keeps_nothing(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer changes the task while a refresh recognises its runs: the
    answer is of a state that is gone, so nothing is kept, and the next refresh
    (at the new tip) is the full command line's."""
    from git_hydrate.hydrate import refreshing

    memo(task).unlink()
    recognise = refreshing.add_tree

    def then_another_writer(*args: object, **kwargs: object) -> object:
        done = recognise(*args, **kwargs)  # type: ignore[arg-type]
        with Ledger(task) as other:
            other.remove_contexts(TASK, source="README.md")
        return done

    monkeypatch.setattr(refreshing, "add_tree", then_another_writer)
    with Ledger(task) as ledger:
        (outcome,) = ledger.refresh(TASK)
    monkeypatch.undo()
    assert outcome.get("recognised")  # recognised at the tip it started from
    assert not memo(task).exists()
    fast = through_entry(task, "prompt", TASK, "--refresh")
    assert not fast.served  # type: ignore[attr-defined]
    assert "added 1" in fast.stderr and "# app" in fast.stdout  # the file is back


def test_a_line_beyond_ascii_on_an_ascii_stderr_is_left_to_click(task: Path) -> None:
    """click writes UTF-8 where a stream says it is ASCII; Python's stderr would
    escape the character: the fast path leaves such a line to the full CLI, so both
    write the same bytes."""
    git(task, "branch", "función")
    with Ledger(task) as ledger:
        ledger.add_tree(TASK, rev="función")
    assert hydrate(task, "prompt", TASK, "--refresh").returncode == 0
    assert hydrate(task, "prompt", TASK, "--refresh").returncode == 0  # recognised: kept
    full = [sys.executable, "-c", "from git_hydrate.cli import main; main()"]
    entry = [sys.executable, "-m", "git_hydrate"]
    outputs = []
    for argv in (entry, full):
        proc = subprocess.run(
            [*argv, "prompt", TASK, "--refresh"],
            cwd=task,
            capture_output=True,
            env={**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(ROOT)},
            check=False,
        )
        outputs.append((proc.returncode, proc.stdout, proc.stderr))
    assert outputs[0] == outputs[1]
    assert "from función".encode() in outputs[0][2]
    assert through_entry(task, "prompt", TASK, "--refresh").served  # type: ignore[attr-defined]


def _settles_after_one_refresh(repo: Path) -> None:
    """After one ``prompt --refresh``, two more write no commit."""

    def commits() -> int:
        return len(git(repo, "rev-list", f"refs/hydrate/tasks/{TASK}").split())

    assert hydrate(repo, "prompt", TASK, "--refresh").returncode == 0
    settled = commits()
    for _ in range(2):
        assert hydrate(repo, "prompt", TASK, "--refresh").returncode == 0
        assert commits() == settled


def test_overlapping_runs_settle_after_one_refresh(repo: Path) -> None:
    """A run of one path, then one of the whole tree: each placed the path's link in
    turn (alone it ranks first, among all it does not), two commits at every refresh,
    never recognised (explorer12: 3 -> 9 commits in three refreshes). A link a later
    run also answers for is placed by that run: the history stops growing."""
    for n in (0, 1, 2, 4, 5):  # (one commit each: no co-change between them)
        commit_files(repo, {f"mod{n}.py": f"def f{n}():\n    return {n}\n"}, f"add mod{n}")
    commit_files(repo, {"mod3.py": "def timeout_retry():\n    return 3\n"}, "add retry")
    commit_files(repo, {"app.py": "def run():\n    return timeout()\n"}, "app")
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, "Fix the app timeout", "tests pass", files=["app.py"])
        ledger.add_tree(TASK, ["mod3.py"])
        alone = {e["source"]: e["priority"] for e in ledger.context_entries(TASK)}
        ledger.add_tree(TASK)
        placed = {e["source"]: e["priority"] for e in ledger.context_entries(TASK)}
        assert alone["mod3.py"] != placed["mod3.py"]  # (the two runs place it apart)

    _settles_after_one_refresh(repo)
    with Ledger(repo) as ledger:  # (the whole tree's places stand, as after its run)
        assert {e["source"]: e["priority"] for e in ledger.context_entries(TASK)} == placed


def test_overlapping_runs_of_two_sources_settle_too(repo: Path, tmp_path: Path) -> None:
    """A run of HEAD's src/ and then one of a directory's src/ (no prefix): the same
    paths from two sources. Each refresh had the first add back what the second
    removes and put back its own bodies (review8: 3 -> 9 commits in three
    refreshes). A path a later run answers for is left to it: the history settles,
    on what the runs left when they were made."""
    commit_files(repo, {"src/a.py": "a = 1\n", "src/b.py": "b = 1\n"}, "src")
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "a.py").write_text("a = 2  # the directory's\n")
    (other / "src" / "c.py").write_text("c = 3\n")
    with Ledger(repo) as ledger:
        ledger.add_task(TASK, "Fix a", "tests pass")
        ledger.add_tree(TASK, ["src"])
        ledger.add_tree(TASK, ["src"], directory=str(other))
        made = {e["source"]: e["hash"] for e in ledger.context_entries(TASK)}
    assert sorted(made) == ["src/a.py", "src/c.py"]

    _settles_after_one_refresh(repo)
    with Ledger(repo) as ledger:
        assert {e["source"]: e["hash"] for e in ledger.context_entries(TASK)} == made


def test_every_module_of_the_runs_packages_is_in_what_decides_a_run(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A development install keeps its version string: an edit of any module that
    decides an add-tree run (how a file is read, its evidence for ranking) must take
    the run again. hydrate/evidence.py and hydrate/reading.py were off the hand-kept
    list: after an edit, ``prompt --refresh`` said "recognised" (review12)."""
    from git_hydrate.pack import refresh_memo

    code = tmp_path / "package"
    for package in ("hydrate", "secrets"):
        (code / package).mkdir(parents=True)
        for module in (ROOT / "git_hydrate" / package).glob("*.py"):
            (code / package / module.name).write_text("# v1\n")
    monkeypatch.setattr(refresh_memo, "_CODE", str(code), raising=False)
    with Ledger(repo) as ledger:
        before = refresh_memo.local_inputs(ledger.refs.repo)
        for name in ("hydrate/evidence.py", "hydrate/reading.py", "secrets/plain.py"):
            (code / name).write_text(f"# {name} edited: another rule\n")
            after = refresh_memo.local_inputs(ledger.refs.repo)
            assert after != before, name
            before = after
