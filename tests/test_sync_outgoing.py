"""Push sends nothing a pull would refuse: a damaged task, removal record or
archive stays here, named, and everything else goes (git_hydrate.sync.outgoing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import fsck, git, hydrate
from .test_sync import clone, make_task, shared_refs

REMOVED = "refs/hydrate/removed"


def empty_commit(repo: Path, *files: tuple[str, str]) -> str:
    """A commit whose tree holds ``files`` (``(name, content)``) and nothing else."""
    listing = ""
    for name, content in files:
        blob = git(repo, "hash-object", "-w", "--stdin", input=content).strip()
        listing += f"100644 blob {blob}\t{name}\n"
    tree = git(repo, "mktree", input=listing).strip()
    return git(repo, "commit-tree", tree, "-m", "by hand").strip()


def test_push_holds_back_what_pull_would_skip(origin: Path, tmp_path: Path) -> None:
    # the tester's repro: every clone's pull used to skip these, forever
    a = clone(origin, tmp_path / "a")
    make_task(a, "Q-1")
    git(a, "update-ref", "refs/hydrate/tasks/BAD-3", empty_commit(a))
    git(a, "update-ref", REMOVED, git(a, "hash-object", "-w", "--stdin", input="junk\n").strip())
    pushed = hydrate(a, "push", "origin")
    assert pushed.returncode == 1
    lines = pushed.stdout.splitlines()
    # (counts are of tasks: the record's line and the error below name it)
    assert lines[0] == "push origin: 1 pushed (new), 1 SKIPPED, 0 up to date"
    assert lines[1].startswith("  SKIPPED        BAD-3  (damaged, a pull would refuse it: commit ")
    assert lines[1].endswith(" has no task.json or links.json; see: git hydrate doctor)")
    assert lines[2].startswith(f"  SKIPPED        {REMOVED}  (damaged, a pull would refuse it: ")
    assert lines[2].endswith(" is a blob, not a commit; see: git hydrate doctor)")
    assert lines[3:] == ["  pushed (new)   Q-1"]
    assert pushed.stderr == f"error: skipped: BAD-3, {REMOVED} (the report above says why)\n"
    assert shared_refs(origin) == ["refs/hydrate/tasks/Q-1"]
    b = clone(origin, tmp_path / "b")
    for _twice in range(2):
        pulled = hydrate(b, "pull", "origin")
        assert (pulled.returncode, pulled.stderr) == (0, "")
    assert shared_refs(b) == ["refs/hydrate/tasks/Q-1"]
    fsck(origin)


def test_named_tasks_beside_a_damaged_one_still_go(origin: Path, tmp_path: Path) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "Q-1")
    make_task(a, "Q-2")
    git(a, "update-ref", "refs/hydrate/tasks/BAD-3", empty_commit(a, ("task.json", "{no")))
    pushed = hydrate(a, "--compact", "push", "origin", "Q-1", "BAD-3", "--json")
    assert pushed.returncode == 1
    tasks = json.loads(pushed.stdout)["tasks"]
    assert [(t["task_id"], t["action"]) for t in tasks] == [
        ("BAD-3", "skipped"),
        ("Q-1", "pushed-new"),
    ]
    assert "has no links.json" in tasks[0]["detail"]
    assert shared_refs(origin) == ["refs/hydrate/tasks/Q-1"]
    everything = hydrate(a, "push", "origin")
    assert everything.returncode == 1
    assert everything.stdout.splitlines()[0] == (
        "push origin: 1 pushed (new), 1 SKIPPED, 1 up to date"
    )
    assert shared_refs(origin) == ["refs/hydrate/tasks/Q-1", "refs/hydrate/tasks/Q-2"]


def test_an_archive_without_its_index_is_not_pushed(origin: Path, tmp_path: Path) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "OK-1")
    git(a, "update-ref", "refs/hydrate/archive", empty_commit(a, ("README", "no index\n")))
    pushed = hydrate(a, "push", "origin")
    assert pushed.returncode == 1
    assert "  SKIPPED        refs/hydrate/archive  (damaged, a pull would refuse it: " in (
        pushed.stdout
    )
    assert "has no index.json" in pushed.stdout
    assert pushed.stderr == "error: skipped: refs/hydrate/archive (the report above says why)\n"
    assert shared_refs(origin) == ["refs/hydrate/tasks/OK-1"]


def test_a_damaged_removal_record_is_not_pushed_nor_deletes(origin: Path, tmp_path: Path) -> None:
    # Deleting N-20 there while the record that says why stays here would let
    # any other clone push N-20 back as new.
    a = clone(origin, tmp_path / "a")
    make_task(a, "N-20")
    make_task(a, "K-1")
    assert hydrate(a, "push", "origin").returncode == 0
    assert hydrate(a, "task-rm", "N-20").returncode == 0
    good = git(a, "rev-parse", REMOVED).strip()
    blob = git(a, "hash-object", "-w", "--stdin", input="{not json\n").strip()
    tree = git(a, "mktree", input=f"100644 blob {blob}\tremoved.json\n").strip()
    git(a, "update-ref", REMOVED, git(a, "commit-tree", tree, "-p", good, "-m", "x").strip())
    pushed = hydrate(a, "push", "origin")
    assert pushed.returncode == 1
    assert f"  SKIPPED        {REMOVED}  (damaged, a pull would refuse it: " in pushed.stdout
    assert pushed.stderr == f"error: skipped: {REMOVED} (the report above says why)\n"
    assert shared_refs(origin) == ["refs/hydrate/tasks/K-1", "refs/hydrate/tasks/N-20"]
    # mended (the record it came from), the removal travels and deletes
    git(a, "update-ref", REMOVED, good)
    again = hydrate(a, "push", "origin")
    assert again.returncode == 0, again.stdout + again.stderr
    assert shared_refs(origin) == [REMOVED, "refs/hydrate/tasks/K-1"]


@pytest.mark.parametrize(
    "command",
    [["pull", "origin"], ["sync", "origin"], ["pull", "origin", "K-1"], ["task-rm", "K-1"]],
)
def test_a_local_removal_record_at_no_commit_is_named(
    origin: Path, tmp_path: Path, command: list[str]
) -> None:
    a = clone(origin, tmp_path / "a")
    make_task(a, "K-1")
    assert hydrate(a, "push", "origin").returncode == 0
    blob = git(a, "hash-object", "-w", "--stdin", input="junk\n").strip()
    git(a, "update-ref", REMOVED, blob)
    result = hydrate(a, *command)
    assert result.returncode != 0
    assert result.stderr == (
        f"error: {REMOVED} is damaged (object {blob} is a blob, not a commit); "
        f"see: git hydrate doctor; it records nothing: git update-ref -d {REMOVED} drops it\n"
    )
    assert git(a, "rev-parse", "refs/hydrate/tasks/K-1").strip()  # nothing removed


def test_a_remote_record_that_is_no_commit_is_named_with_the_way_out(
    origin: Path, tmp_path: Path
) -> None:
    """The remote's removal record holds a blob: push said "run sync", and sync said
    SKIPPED and REFUSED ("a pull cannot change that") with no way out, while the
    removal waited on the record forever (review15). The push names the copy and the
    push that replaces it; a sync says it once; run, the next push deletes the task."""
    a = clone(origin, tmp_path / "a")
    for task_id in ("Q-1", "Q-2"):
        make_task(a, task_id)
    assert hydrate(a, "push").returncode == 0
    junk = git(origin, "hash-object", "-w", "--stdin", input="junk\n").strip()
    git(origin, "update-ref", REMOVED, junk)
    assert hydrate(a, "task-rm", "Q-2").returncode == 0
    command = f"git push --force-with-lease={REMOVED}:{junk} origin {REMOVED}:{REMOVED}"
    pushed = hydrate(a, "push")
    assert pushed.returncode == 1
    assert (
        f"  REFUSED        {REMOVED}  (origin's copy is a blob, not a commit (no pull or sync "
        f"takes it); to replace it with yours: {command})"
    ) in pushed.stdout.splitlines()
    synced = hydrate(a, "sync")
    assert synced.returncode == 1
    assert f"SKIPPED        {REMOVED}" in synced.stdout and command in synced.stdout
    assert "REFUSED" not in synced.stdout and "refused" not in synced.stderr
    git(a, *command.split()[1:])
    again = hydrate(a, "push")
    assert again.returncode == 0, again
    assert shared_refs(origin) == [REMOVED, "refs/hydrate/tasks/Q-1"]
    fsck(origin)
