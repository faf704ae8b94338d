"""task-edit empties a list with its --no- form, as --no-depends-on always did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import hydrate

_LISTS = ("tags", "acceptance_criteria", "scope", "files", "tests", "depends_on")


def _lists(repo: Path, task_id: str) -> dict[str, list[object]]:
    task = json.loads(hydrate(repo, "show", task_id, "--json").stdout)
    return {key: task[key] for key in _LISTS}


@pytest.fixture
def full(repo: Path) -> Path:
    for task_id in ("DEP-1", "DEP-2"):
        assert (
            hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a").returncode
            == 0
        )
    made = hydrate(
        repo, "task-add", "TG-1", "--objective", "o", "--acceptance", "a",
        "--tag", "api", "--tag", "wrong", "--criterion", "c1", "--scope", "s1",
        "--file-in-play", "wrong.py:oops", "--test", "tests/t.py", "--depends-on", "DEP-1",
    )  # fmt: skip
    assert made.returncode == 0, made
    return repo


def test_each_no_flag_empties_its_list(full: Path) -> None:
    edited = hydrate(
        full, "task-edit", "TG-1", "--no-tag", "--no-criterion", "--no-scope",
        "--no-file-in-play", "--no-test", "--no-depends-on",
    )  # fmt: skip
    assert edited.returncode == 0, edited
    assert edited.stderr == ""
    assert _lists(full, "TG-1") == {key: [] for key in _LISTS}
    log = hydrate(full, "log", "TG-1").stdout
    assert "task-edit TG-1 (acceptance_criteria, depends_on, files, scope, tags, tests)" in log


def test_no_flag_with_values_keeps_just_those(full: Path) -> None:
    edited = hydrate(
        full, "task-edit", "TG-1", "--no-tag", "--tag", "api",
        "--file-in-play", "right.py", "--no-file-in-play",
        "--no-depends-on", "--depends-on", "DEP-2",
    )  # fmt: skip
    assert edited.returncode == 0, edited
    lists = _lists(full, "TG-1")
    assert lists["tags"] == ["api"]
    assert lists["files"] == [{"path": "right.py", "note": ""}]
    assert lists["depends_on"] == ["DEP-2"]
    assert lists["tests"] == [{"path": "tests/t.py", "note": ""}]  # untouched


@pytest.mark.parametrize(
    "option", ["--tag", "--criterion", "--scope", "--file-in-play", "--test", "--depends-on"]
)
def test_an_empty_value_names_the_way_to_empty(full: Path, option: str) -> None:
    before = hydrate(full, "show", "TG-1", "--json").stdout
    refused = hydrate(full, "task-edit", "TG-1", option, "")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert f"{option} needs a value (--no-{option[2:]} empties the list)" in refused.stderr
    assert hydrate(full, "show", "TG-1", "--json").stdout == before


def test_task_add_has_no_no_flags(repo: Path) -> None:
    refused = hydrate(repo, "task-add", "N-1", "--objective", "o", "--acceptance", "a", "--no-tag")
    assert refused.returncode == 2 and "No such option" in refused.stderr
