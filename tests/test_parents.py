"""Parent tasks: a child names its parent; the parent waits for its open children.

Parent edges count for readiness and for cycles alike, travel through sync and
merge like any other field, and leave a task that never had a parent byte for
byte as earlier versions wrote it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_hydrate import Ledger, NotFound, ValidationError

from .conftest import fsck, git, hydrate


def finish(ledger: Ledger, task_id: str) -> None:
    for station in ("in_progress", "done"):
        ledger.set_status(task_id, station)


def family(ledger: Ledger) -> None:
    ledger.add_task("P-1", objective="the whole feature", acceptance="all parts done")
    ledger.add_task("C-1", objective="part one", acceptance="ok", parent="P-1")
    ledger.add_task("C-2", objective="part two", acceptance="ok", parent="P-1")


def test_a_parent_is_not_ready_while_a_child_is_open(repo: Path, ledger: Ledger) -> None:
    family(ledger)
    assert [item["task_id"] for item in ledger.ready()] == ["C-1", "C-2"]
    out = hydrate(repo, "claim", "P-1", "--as", "alice")
    assert out.returncode != 0
    assert "waits for C-1 (open), C-2 (open)" in out.stderr
    finish(ledger, "C-1")
    assert [item["task_id"] for item in ledger.ready()] == ["C-2"]
    ledger.set_status("C-2", "cancelled")  # no part of the work left
    assert [item["task_id"] for item in ledger.ready()] == ["P-1"]
    fsck(repo)


def test_parent_must_exist_and_cannot_close_a_cycle(repo: Path, ledger: Ledger) -> None:
    family(ledger)
    with pytest.raises(NotFound, match="cannot be a part of NOPE: no task 'NOPE'"):
        ledger.add_task("C-3", objective="x", acceptance="y", parent="NOPE")
    with pytest.raises(ValidationError, match="cannot be its own parent"):
        ledger.edit_task("C-1", parent="C-1")
    with pytest.raises(ValidationError, match=r"cycle of parents and dependencies: P-1 -> C-1"):
        ledger.edit_task("P-1", parent="C-1")
    # a child that depends on its own parent could never be ready: refused too
    with pytest.raises(ValidationError, match=r"dependency cycle: C-1 -> P-1 -> C-1"):
        ledger.edit_task("C-1", depends_on=["P-1"])
    assert ledger.get_task("P-1")["parent"] == ""
    assert "C-3" not in {t["task_id"] for t in ledger.list_tasks()}


def test_a_cancelled_child_still_cannot_depend_on_its_parent(repo: Path, ledger: Ledger) -> None:
    # reopening it (a status change, checked for nothing) would close the cycle
    family(ledger)
    ledger.set_status("C-1", "cancelled")
    with pytest.raises(ValidationError, match=r"dependency cycle: C-1 -> P-1 -> C-1"):
        ledger.edit_task("C-1", depends_on=["P-1"])
    with pytest.raises(ValidationError, match=r"cycle of parents and dependencies"):
        ledger.add_task("C-9", objective="x", acceptance="y", parent="C-1", depends_on=["P-1"])
    ledger.set_status("C-1", "open")
    report = hydrate(repo, "doctor")
    assert report.returncode == 0 and "cycle" not in report.stdout, report.stdout


def test_a_task_without_parent_keeps_the_bytes_earlier_versions_wrote(
    repo: Path, ledger: Ledger
) -> None:
    ledger.add_task("P-1", objective="o", acceptance="a")
    raw = git(repo, "cat-file", "-p", "refs/hydrate/tasks/P-1:task.json")
    assert '"parent"' not in raw
    ledger.add_task("C-1", objective="o", acceptance="a", parent="P-1")
    child = json.loads(git(repo, "cat-file", "-p", "refs/hydrate/tasks/C-1:task.json"))
    assert child["parent"] == "P-1"
    ledger.edit_task("C-1", parent="")
    cleared = git(repo, "cat-file", "-p", "refs/hydrate/tasks/C-1:task.json")
    assert '"parent"' not in cleared


def test_cli_tree_show_and_clearing(repo: Path, ledger: Ledger) -> None:
    family(ledger)
    ledger.add_task("A-1", objective="alone", acceptance="ok")
    finish(ledger, "C-2")
    listed = hydrate(repo, "list", "--tree").stdout.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["A-1", "P-1", "  C-1", "  C-2"]
    shown = hydrate(repo, "show", "P-1").stdout
    assert "Children (1 of 2 done):" in shown
    assert "C-1\topen\tpart one" in shown
    assert "part of: P-1" in hydrate(repo, "show", "C-1").stdout
    data = json.loads(hydrate(repo, "show", "P-1", "--json").stdout)
    assert data["children"] == ["C-1", "C-2"]
    both = hydrate(repo, "task-edit", "C-1", "--parent", "P-1", "--no-parent")
    assert both.returncode == 2 and "contradict" in both.stderr
    assert hydrate(repo, "task-edit", "C-1", "--no-parent").returncode == 0
    assert json.loads(hydrate(repo, "show", "P-1", "--json").stdout)["children"] == ["C-2"]
    assert hydrate(repo, "list", "--tree", "--archived").returncode == 2


def test_tree_order_survives_a_merged_parent_cycle() -> None:
    from git_hydrate.listing import tree_order

    rows = [
        {"task_id": "A", "parent": "B"},
        {"task_id": "B", "parent": "A"},
        {"task_id": "C", "parent": ""},
    ]
    order = [(d, item["task_id"]) for d, item in tree_order(rows)]  # type: ignore[arg-type]
    assert sorted(i for _d, i in order) == ["A", "B", "C"]
    assert order[0] == (0, "C")


def test_parent_travels_through_push_and_pull(tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "README").write_text("x\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "initial")
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    one, two = tmp_path / "one", tmp_path / "two"
    for dest in (one, two):
        git(tmp_path, "clone", "-q", str(bare), str(dest))
    with Ledger(one) as ledger:
        family(ledger)
    assert hydrate(one, "push", "origin").returncode == 0
    assert hydrate(two, "pull", "origin").returncode == 0
    with Ledger(two) as ledger:
        assert ledger.get_task("C-1")["parent"] == "P-1"
        assert [c["task_id"] for c in ledger.children("P-1")] == ["C-1", "C-2"]
    fsck(two)


def test_a_childs_prompt_carries_its_parents_title_and_objective(
    repo: Path, ledger: Ledger
) -> None:
    family(ledger)
    ledger.add_context("C-1", "the child's own notes\n", "notes")
    prompt = ledger.prompt("C-1", max_bytes=64 * 1024)["prompt"]
    parent_at = prompt.index("parent task P-1")
    assert "the whole feature" in prompt[parent_at:]
    assert parent_at < prompt.index("the child's own notes")  # before the child's own
    ledger.edit_task("P-1", objective="the whole feature, rescoped")
    again = ledger.prompt("C-1", max_bytes=64 * 1024)["prompt"]  # not a stale cache entry
    assert "the whole feature, rescoped" in again
    # an attachment like any other: inside the budget, and named when left out
    result = ledger.prompt("C-1", max_bytes=len(prompt.encode()) - 20)
    assert "parent task P-1" in result["prompt"]  # first in packing order: kept
    assert "the child's own notes" not in result["prompt"]  # the child's own: left out
    assert [o["source"] for o in result["omitted"]] == ["notes"]
    alone = ledger.prompt("P-1", max_bytes=64 * 1024)["prompt"]
    assert "parent task" not in alone


def test_the_notice_names_a_left_out_parent_by_a_command_that_prints_it(
    repo: Path, ledger: Ledger
) -> None:
    """The parent's text, left out of a small prompt, was named with `show CHILD
    --attachment HASH`, which said there was no such attachment (explorer11); so did
    the MCP get_attachment tool (the same reading)."""
    ledger.add_task("R-1", objective="parent words " * 2000, acceptance="a")
    ledger.add_task("R-2", objective="child", acceptance="a", parent="R-1")
    result = ledger.prompt("R-2", max_bytes=2000)
    (line,) = [ln for ln in result["prompt"].splitlines() if "`parent task R-1`" in ln]
    command = line.rpartition("; ")[2]
    assert command.startswith("git hydrate show R-2 --attachment ")
    out = hydrate(repo, *command.split()[2:])
    assert out.returncode == 0, out
    assert "source: parent task R-1" in out.stdout and "parent words parent words" in out.stdout
    entry, body = ledger.attachment("R-2", command.split()[-1][:8])
    assert entry["source"] == "parent task R-1" and body.startswith("parent words")
    missing = hydrate(repo, "show", "R-2", "--attachment", "0000")
    assert missing.returncode != 0 and "has no attachment whose hash starts with" in missing.stderr


def test_an_archived_parent_still_says_what_its_live_part_belongs_to(
    repo: Path, ledger: Ledger
) -> None:
    """Archiving a parent whose child is still open dropped the parent's text from the
    child's prompt without a word (explorer11): it is read from the archive now, and
    archive says which parts are still live."""
    family(ledger)
    finish(ledger, "P-1")
    out = hydrate(repo, "archive", "P-1")
    assert out.returncode == 0 and out.stdout == "archived 1: P-1\n"
    assert out.stderr == (
        "warning: archived P-1 while its part(s) C-1, C-2 are live (their prompts keep its "
        "text, from the archive)\n"
    )
    prompt = ledger.prompt("C-1", max_bytes=64 * 1024)["prompt"]
    assert "### Context from parent task P-1" in prompt and "the whole feature" in prompt


def test_a_refused_claim_names_ten_of_what_it_waits_for(repo: Path, ledger: Ledger) -> None:
    """A parent of 10,000 open parts was refused in one line of 159 KB naming every
    one; the line names ten and counts the rest, and show --json names them all."""
    ledger.add_task("P-1", objective="o", acceptance="a", depends_on=["D-1"])
    ledger.add_task("D-1", objective="o", acceptance="a")
    for n in range(12):
        ledger.add_task(f"P-1.{n:02}", objective="o", acceptance="a", parent="P-1")
    out = hydrate(repo, "claim", "P-1", "--as", "alice")
    named = ", ".join(f"P-1.{n:02} (open)" for n in range(9))
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        f"error: task P-1 is not ready: it waits for D-1 (open), {named} and 3 more "
        "(git hydrate show P-1 --json names them)\n"
    )
    for done in ("D-1", "P-1.00", "P-1.01"):
        finish(ledger, done)
    out = hydrate(repo, "claim", "P-1", "--as", "alice")
    named = ", ".join(f"P-1.{n:02} (open)" for n in range(2, 12))
    assert out.stderr == f"error: task P-1 is not ready: it waits for {named}\n"
    # claim --next, nothing ready: the parent waits for its held parts, ten named
    ledger.add_task("P-1.12", objective="o", acceptance="a", parent="P-1")
    for n in range(2, 13):
        ledger.claim(f"P-1.{n:02}", holder="bob")
    out = hydrate(repo, "claim", "--next", "--as", "alice")
    assert out.returncode == 1 and "\n" not in out.stderr.rstrip("\n")
    assert out.stderr.count(", held by bob") == 10
    assert " and 1 more (git hydrate show P-1 --json names them)" in out.stderr


def test_doctor_notes_a_child_whose_parent_is_gone(repo: Path, ledger: Ledger) -> None:
    family(ledger)
    ledger.set_status("P-1", "cancelled")
    ledger.archive(["P-1"])
    out = hydrate(repo, "doctor")
    assert "part of P-1, which is not live here" in out.stdout + out.stderr
    assert "--no-parent" in out.stdout + out.stderr


def test_task_rm_of_a_parent_names_the_children_it_leaves(repo: Path, ledger: Ledger) -> None:
    """Only doctor said so, later; task-rm says it at once, as a note (exit 0)."""
    ledger.add_task("P-1", objective="o", acceptance="a")
    ledger.add_task("Q-1", objective="o", acceptance="a")
    for n in range(1, 6):
        ledger.add_task(f"P-1.{n}", objective="o", acceptance="a", parent="P-1")
    ledger.add_task("Q-1.1", objective="o", acceptance="a", parent="Q-1")
    many = hydrate(repo, "task-rm", "P-1")
    assert many.returncode == 0 and many.stdout.startswith("removed task P-1 ")
    assert many.stderr == (
        "note: P-1.1, P-1.2, P-1.3 and 2 more, children of P-1, are left without their "
        "parent (clear it with: git hydrate task-edit ID --no-parent)\n"
    )
    one = hydrate(repo, "task-rm", "Q-1", "--json")
    assert one.returncode == 0 and json.loads(one.stdout)["task_id"] == "Q-1"
    assert json.loads(one.stdout)["orphaned"] == ["Q-1.1"]  # (what the note names, for a program)
    assert one.stderr == (
        "note: Q-1.1, a child of Q-1, is left without its parent "
        "(clear it with: git hydrate task-edit Q-1.1 --no-parent)\n"
    )
    none = hydrate(repo, "task-rm", "Q-1.1", "--json")  # (no children: nothing to say)
    assert none.returncode == 0 and none.stderr == ""
    assert json.loads(none.stdout)["orphaned"] == []


def test_doctor_notes_a_dependency_that_was_cancelled(repo: Path, ledger: Ledger) -> None:
    """A task depending on a cancelled one is never ready, and doctor said nothing
    (explorer10): a note says so, with the way out; an archived parent's note says
    the prompt still carries its text."""
    ledger.add_task("X-1", objective="o", acceptance="a")
    ledger.add_task("W-1", objective="o", acceptance="a", depends_on=["X-1"])
    ledger.set_status("X-1", "cancelled")
    out = hydrate(repo, "doctor")
    assert out.returncode == 0, out
    assert (
        "depends on X-1, which is cancelled: this task is not ready while it does (drop it "
        "with: git hydrate task-edit W-1 --depends-on ..., or reopen X-1)"
    ) in out.stdout
    family(ledger)
    finish(ledger, "P-1")
    ledger.archive(["P-1"])
    notes = hydrate(repo, "doctor").stdout
    assert "part of P-1, which is not live here (archived; its prompt reads" in notes


def test_a_long_cycle_is_named_by_its_ends(repo: Path, ledger: Ledger) -> None:
    """A cycle of 5,000 tasks was named whole: task-edit's refusal was a line of
    54 KB, and doctor said the whole cycle once for each task on it (270 MB). A
    cycle of more than twelve tasks is named by its first five and last five, with
    how many come between."""
    from .test_textpolicy import _craft

    for n in range(20):
        ledger.add_task(f"L-{n:02}", objective="o", acceptance="a",
                        depends_on=[f"L-{n - 1:02}"] if n else [])  # fmt: skip
    refused = hydrate(repo, "task-edit", "L-00", "--depends-on", "L-19")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (
        "error: dependency cycle: L-00 -> L-19 -> L-18 -> L-17 -> L-16 -> (11 more) -> "
        "L-04 -> L-03 -> L-02 -> L-01 -> L-00\n"
    )
    short = hydrate(repo, "task-edit", "L-05", "--depends-on", "L-09")
    assert (
        short.stderr == "error: dependency cycle: L-05 -> L-09 -> L-08 -> L-07 -> L-06 -> L-05\n"
    )
    _craft(repo, "L-00", depends_on=["L-19"])  # (as a merge can close it)
    doctor = hydrate(repo, "doctor")
    assert doctor.returncode == 1
    assert (
        "L-00: dependency cycle L-00 -> L-19 -> L-18 -> L-17 -> L-16 -> (11 more) -> L-04 -> "
        "L-03 -> L-02 -> L-01 -> L-00: it can never be ready"
    ) in doctor.stdout
    assert max(map(len, doctor.stdout.splitlines())) < 300
    claim = hydrate(repo, "claim", "L-00", "--as", "alice")
    assert "on a dependency cycle (L-00 -> L-19 -> L-18 -> L-17 -> L-16 -> (11 more) ->" in (
        claim.stderr
    )
