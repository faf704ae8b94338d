"""export, then import into another repository: the tasks come back as they were.

Each test exports from one real repository with the command line and imports the
output into a fresh one, then compares the fields the format carries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import from_template, hydrate, one_commit

TM = "TM-"  # the prefix task-master's tasks are imported under


def fresh(tmp_path: Path, name: str) -> Path:
    """Another repository with one commit, nothing imported."""
    return from_template("repo", one_commit, tmp_path / name)


def ok(where: Path, *args: str, input: str | None = None) -> str:
    result = hydrate(where, *args, input=input)
    assert result.returncode == 0, result.stderr
    return result.stdout


def add(where: Path, task_id: str, acceptance: str, *more: str) -> None:
    ok(where, "task-add", task_id, "--objective", "o", "--acceptance", acceptance, *more)


def task(where: Path, task_id: str) -> dict[str, object]:
    shown: dict[str, object] = json.loads(ok(where, "show", task_id, "--json"))
    return shown


def round_trip(source: Path, target: Path, fmt: str, *ids: str) -> str:
    """Export ``ids`` from ``source`` in ``fmt`` and import that into ``target``."""
    exported = ok(source, "export", "--format", fmt, *ids)
    ok(target, "import", "-", input=exported)
    return exported


@pytest.mark.parametrize(("fmt", "prefix"), [("json-beads", ""), ("json-taskmaster", TM)])
def test_acceptance_and_criteria_survive_a_round_trip(
    repo: Path, tmp_path: Path, fmt: str, prefix: str
) -> None:
    add(repo, "T-1", "all parts", "--criterion", "c1", "--criterion", "c2")
    add(repo, "T-2", "the page loads\nand says hello", "--criterion", "replies in 1 s")
    add(repo, "T-3", "no criteria")
    target = fresh(tmp_path, "target")
    round_trip(repo, target, fmt, "T-1", "T-2", "T-3")
    for task_id in ("T-1", "T-2", "T-3"):
        before, after = task(repo, task_id), task(target, prefix + task_id)
        assert after["acceptance"] == before["acceptance"], task_id
        assert after["acceptance_criteria"] == before["acceptance_criteria"], task_id
    assert task(target, prefix + "T-1")["acceptance_criteria"] == ["c1", "c2"]


def test_a_criterion_replaced_after_a_beads_import_is_not_brought_back(
    repo: Path, tmp_path: Path
) -> None:
    line = {
        "id": "bd-a1",
        "title": "Checkout",
        "description": "The new checkout",
        "acceptance_criteria": "orders go through\n\n- [ ] c1\n- [ ] c2",
        "status": "open",
    }
    ok(repo, "import", "-", input=json.dumps(line) + "\n")
    imported = task(repo, "bd-a1")
    # the checkbox lines are the criteria; the acceptance is the rest, not a second copy
    assert imported["acceptance"] == "orders go through"
    assert imported["acceptance_criteria"] == ["c1", "c2"]
    ok(repo, "task-edit", "bd-a1", "--criterion", "c3")  # a list option replaces the list
    exported = json.loads(ok(repo, "export", "--format", "json-beads", "bd-a1"))
    assert exported["acceptance_criteria"] == "orders go through\n\n- [ ] c3"
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-beads", "bd-a1")
    back = task(target, "bd-a1")
    assert back["acceptance"] == "orders go through"
    assert back["acceptance_criteria"] == ["c3"]
    prompt = ok(target, "prompt", "bd-a1")
    assert "c3" in prompt and "c1" not in prompt and "c2" not in prompt


def test_criteria_alone_come_back_as_the_checklist_they_were(repo: Path, tmp_path: Path) -> None:
    line = {"id": "bd-b1", "title": "Ship", "acceptance_criteria": "- [ ] pay\n- [ ] ship"}
    ok(repo, "import", "-", input=json.dumps(line) + "\n")
    assert task(repo, "bd-b1")["acceptance"] == "every acceptance criterion holds"
    exported = json.loads(ok(repo, "export", "--format", "json-beads", "bd-b1"))
    assert exported["acceptance_criteria"] == line["acceptance_criteria"]
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-beads", "bd-b1")
    assert task(target, "bd-b1")["acceptance_criteria"] == ["pay", "ship"]
    # and a task-master round trip of the same task keeps them too
    target = fresh(tmp_path, "tm")
    exported_tm = round_trip(repo, target, "json-taskmaster", "bd-b1")
    assert json.loads(exported_tm)["tasks"][0]["acceptanceCriteria"] == ["pay", "ship"]
    assert task(target, TM + "bd-b1")["acceptance_criteria"] == ["pay", "ship"]
