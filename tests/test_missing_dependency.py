"""A dependency on a task this clone does not have: kept, but said."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import hydrate


def _add(repo: Path, task_id: str, *extra: str) -> tuple[int, str, str]:
    made = hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a", *extra)
    return made.returncode, made.stdout, made.stderr


def test_task_add_keeps_it_and_warns(repo: Path) -> None:
    code, out, err = _add(repo, "D-1", "--depends-on", "NOPE-9")
    assert code == 0
    assert out == "created task D-1: o\n"
    assert err == (
        "warning: D-1 depends on NOPE-9, which is no task here: D-1 waits for it until it "
        "exists (a pull may bring it) and is done\n"
    )
    assert json.loads(hydrate(repo, "show", "D-1", "--json").stdout)["depends_on"] == ["NOPE-9"]


def test_a_present_or_archived_dependency_says_nothing(repo: Path) -> None:
    assert _add(repo, "A-1")[0] == 0
    assert _add(repo, "A-2")[0] == 0
    assert hydrate(repo, "status", "A-2", "--set", "cancelled").returncode == 0
    assert hydrate(repo, "archive", "A-2").returncode == 0
    code, _, err = _add(repo, "D-1", "--depends-on", "A-1", "--depends-on", "A-2")
    assert (code, err) == (0, "")


def test_task_edit_warns_with_a_likely_slip(repo: Path) -> None:
    assert _add(repo, "TG-1")[0] == 0
    assert _add(repo, "D-1")[0] == 0
    edited = hydrate(repo, "task-edit", "D-1", "--depends-on", "TG-1", "--depends-on", "tg-1")
    assert edited.returncode == 0, edited
    assert edited.stderr.count("\n") == 1
    assert "D-1 depends on tg-1, which is no task here" in edited.stderr
    assert edited.stderr.endswith("; did you mean TG-1?\n")
    # an edit that leaves the dependencies alone says nothing again
    assert hydrate(repo, "task-edit", "D-1", "--priority", "1").stderr == ""


def test_status_ready_and_claim_name_it(repo: Path) -> None:
    assert _add(repo, "A-1")[0] == 0
    assert _add(repo, "D-1", "--depends-on", "A-1", "--depends-on", "NOPE-9")[0] == 0
    status = hydrate(repo, "status", "D-1")
    assert "depends on: A-1 (open), NOPE-9 (not here: a pull may bring it)\n" in status.stdout
    data = json.loads(hydrate(repo, "status", "D-1", "--json").stdout)
    assert data["depends"] == [
        {"task_id": "A-1", "station": "open", "waiting": True},
        {"task_id": "NOPE-9", "station": None, "waiting": True},
    ]
    assert hydrate(repo, "status", "A-1", "--set", "cancelled").returncode == 0
    ready = hydrate(repo, "ready")
    assert ready.stdout == ""
    assert "D-1 waits for A-1 (cancelled) and NOPE-9 (not here)" in ready.stderr
    claim = hydrate(repo, "claim", "D-1", "--local")
    assert claim.returncode == 1
    assert "it waits for A-1 (cancelled), NOPE-9 (not here)" in claim.stderr


def test_every_status_row_has_its_dependencies(repo: Path) -> None:
    assert _add(repo, "A-1")[0] == 0
    assert _add(repo, "D-1", "--depends-on", "NOPE-9")[0] == 0
    rows = json.loads(hydrate(repo, "status", "--json").stdout)
    assert [row["depends"] for row in rows] == [
        [],
        [{"task_id": "NOPE-9", "station": None, "waiting": True}],
    ]


def test_a_task_is_never_offered_as_its_own_dependency(repo: Path) -> None:
    """The "did you mean" of a missing dependency leaves the task itself out: FIX-1
    depending on FIX-l was offered FIX-1 (a task cannot wait on itself)."""
    out = hydrate(repo, "task-add", "FIX-1", "--objective", "o", "--acceptance", "a",
                  "--depends-on", "FIX-l")  # fmt: skip
    assert out.returncode == 0, out
    assert out.stderr.endswith("(a pull may bring it) and is done\n"), out.stderr


def test_doctor_names_ten_missing_dependencies_of_a_task_and_counts_the_rest(
    repo: Path,
) -> None:
    """A task of 100,000 dependencies no task here (a remote's, an import's) made
    doctor write 100,000 notes for it. It names ten and counts the rest in one."""
    deps = [arg for n in range(12) for arg in ("--depends-on", f"NOPE-{n:02}")]
    assert _add(repo, "D-1", *deps)[0] == 0
    notes = [
        line for line in hydrate(repo, "doctor").stdout.splitlines() if line.startswith("note")
    ]
    assert len(notes) == 11
    assert notes[9].startswith("note    D-1: depends on NOPE-09, which is not here")
    assert notes[10] == (
        "note    D-1: depends on 2 more tasks that are not here (git hydrate show D-1 "
        "--json names them); until they are done here, this task is not ready"
    )


def test_status_names_ten_dependencies_and_counts_the_rest(repo: Path) -> None:
    """status wrote every dependency on its one line: 4 MB for a task of 100,000 (a
    remote's). It names ten, counts the rest and says where all are; --json keeps all."""
    deps = [arg for n in range(12) for arg in ("--depends-on", f"NOPE-{n:02}")]
    assert _add(repo, "D-1", *deps)[0] == 0
    status = hydrate(repo, "status", "D-1")
    named = ", ".join(f"NOPE-{n:02} (not here: a pull may bring it)" for n in range(10))
    assert (
        f"depends on: {named} and 2 more (git hydrate show D-1 --json names them)\n"
        in status.stdout
    )
    data = json.loads(hydrate(repo, "status", "D-1", "--json").stdout)
    assert len(data["depends"]) == 12
