"""export, then import into another repository: the tasks come back as they were.

Each test exports from one real repository with the command line and imports the
output into a fresh one, then compares the fields the format carries.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from git_hydrate import Ledger

from .conftest import from_template, hydrate, one_commit

SAMPLES = Path(__file__).parent / "import_samples"
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


def beads_both_ways(
    repo: Path, tmp_path: Path, task_id: str
) -> tuple[str, dict[str, object], Path]:
    """The beads export's ``acceptance_criteria`` of ``task_id``, the task as a fresh
    repository imports that export, and that repository."""
    exported = json.loads(ok(repo, "export", "--format", "json-beads", task_id))
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-beads", task_id)
    return str(exported["acceptance_criteria"]), task(target, task_id), target


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
    written, back, target = beads_both_ways(repo, tmp_path, "bd-a1")
    assert written == "orders go through\n\n- [ ] c3"
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


def deps_and_parents(where: Path, ids: dict[str, str]) -> dict[str, tuple[list[str], str]]:
    """Each task of ``ids`` (its id here: its id there) with its dependencies and parent,
    named as there."""
    found = {}
    for here, there in ids.items():
        shown = task(where, here)
        deps = [ids.get(str(d), f"?{d}") for d in shown["depends_on"]]  # type: ignore[attr-defined]
        parent = str(shown["parent"])
        found[there] = (deps, ids.get(parent, f"?{parent}") if parent else "")
    return found


def test_taskmaster_dependencies_name_the_same_tasks_after_a_round_trip(
    repo: Path, tmp_path: Path
) -> None:
    add(repo, "X-1", "ok")
    add(repo, "P-1", "ok")
    add(repo, "C-1", "ok", "--parent", "P-1", "--depends-on", "X-1")  # a subtask on a task
    add(repo, "C-2", "ok", "--parent", "P-1", "--depends-on", "C-1")  # on its sibling
    add(repo, "X-2", "ok", "--depends-on", "X-1", "--depends-on", "C-1")  # on a task, a subtask
    add(repo, "Q-1", "ok")
    add(repo, "D-1", "ok", "--parent", "Q-1", "--depends-on", "C-2")  # on another's subtask
    ids = {"X-1": "X-1", "P-1": "P-1", "C-1": "P-1.C-1", "C-2": "P-1.C-2", "X-2": "X-2"}
    ids |= {"Q-1": "Q-1", "D-1": "Q-1.D-1"}
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-taskmaster", *ids)
    expected = deps_and_parents(repo, ids)
    assert expected["P-1.C-1"] == (["X-1"], "P-1")
    assert deps_and_parents(target, {TM + v: v for v in ids.values()}) == expected


def test_numbered_subtasks_keep_their_siblings_and_outside_tasks_apart(
    repo: Path, tmp_path: Path
) -> None:
    sub = '{"id": %d, "title": "s%d", "status": "pending", "dependencies": %s}'
    tasks = (
        '{"tasks": ['
        '{"id": 1, "title": "one", "status": "pending", "dependencies": [], "subtasks": ['
        + ", ".join([sub % (1, 1, "[]"), sub % (2, 2, "[1]"), sub % (3, 3, "[]")])
        + ']}, {"id": 2, "title": "two", "status": "pending", "dependencies": []},'
        ' {"id": 3, "title": "three", "status": "pending", "dependencies": [1]}]}'
    )
    ok(repo, "import", "-", input=tasks)
    # TM-1.3 waits for its sibling 2 and for the task 2, TM-3 also for a subtask
    ok(repo, "task-edit", "TM-1.3", "--depends-on", "TM-1.2", "--depends-on", "TM-2")
    ok(repo, "task-edit", "TM-3", "--depends-on", "TM-1", "--depends-on", "TM-1.2")
    ids = {i: i for i in ("TM-1", "TM-1.1", "TM-1.2", "TM-1.3", "TM-2", "TM-3")}
    expected = deps_and_parents(repo, ids)
    assert expected["TM-1.2"] == (["TM-1.1"], "TM-1")
    assert expected["TM-1.3"] == (["TM-1.2", "TM-2"], "TM-1")
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-taskmaster", *ids)
    assert deps_and_parents(target, ids) == expected
    # a subtask exported without its task still tells its sibling from the task
    alone = fresh(tmp_path, "alone")
    round_trip(repo, alone, "json-taskmaster", "TM-1.3")
    assert task(alone, "TM-1.3")["depends_on"] == ["TM-1.2", "TM-2"]


def test_string_ids_of_siblings_still_name_the_siblings(ledger: Ledger) -> None:
    text = json.dumps(
        {
            "tasks": [
                {"id": 9, "title": "t", "status": "pending"},
                {
                    "id": 5,
                    "title": "five",
                    "subtasks": [
                        {"id": "1", "title": "a"},
                        {"id": "2", "title": "b", "dependencies": ["1", "9", 1]},
                    ],
                },
            ]
        }
    )
    assert ledger.import_tasks(text)["errors"] == []
    assert ledger.get_task("TM-5.2")["depends_on"] == ["TM-5.1", "TM-9"]


def test_an_acceptance_line_that_reads_as_a_checkbox_is_not_lost(
    repo: Path, tmp_path: Path
) -> None:
    """A line of the acceptance typed as ``- [ ] …`` is written to beads as it is
    (it comes back as a criterion, beads' reading of it), never dropped."""
    add(repo, "P-1", "line one\n- [ ] a line I wrote", "--criterion", "c1")
    written, back, _target = beads_both_ways(repo, tmp_path, "P-1")
    assert written == "line one\n- [ ] a line I wrote\n\n- [ ] c1"
    assert back["acceptance"] == "line one"
    assert back["acceptance_criteria"] == ["a line I wrote", "c1"]


def test_cancelled_and_review_survive_a_beads_round_trip(repo: Path, tmp_path: Path) -> None:
    """beads closes a cancelled issue with a reason and keeps ``metadata``: both come
    back, so a task waiting for a cancelled one stays waiting."""
    add(repo, "X-1", "ok")
    ok(repo, "status", "X-1", "--set", "cancelled")
    add(repo, "Y-1", "ok", "--depends-on", "X-1")
    add(repo, "R-1", "ok")
    ok(repo, "status", "R-1", "--set", "in_progress")
    ok(repo, "status", "R-1", "--set", "review")
    add(repo, "D-1", "ok")
    ok(repo, "status", "D-1", "--set", "in_progress")
    ok(repo, "status", "D-1", "--set", "done")
    target = fresh(tmp_path, "target")
    lines = round_trip(repo, target, "json-beads", "X-1", "Y-1", "R-1", "D-1").splitlines()
    written = {line["id"]: line for line in map(json.loads, lines)}
    assert written["X-1"]["status"] == "closed" and written["X-1"]["close_reason"] == "cancelled"
    assert written["R-1"]["status"] == "in_progress"  # what beads' own tools read
    assert written["D-1"]["status"] == "closed" and "close_reason" not in written["D-1"]
    for task_id in ("X-1", "Y-1", "R-1", "D-1"):
        assert task(target, task_id)["status"] == task(repo, task_id)["status"], task_id
    assert "Y-1" not in ok(target, "ready")


def test_an_export_imported_where_it_came_from_is_unchanged(repo: Path) -> None:
    """The docs' beads example, with the stations moved here before the export."""
    ok(repo, "import", "-", input=(SAMPLES / "beads.jsonl").read_text(encoding="utf-8"))
    ok(repo, "status", "bd-a1", "--set", "cancelled")
    ok(repo, "status", "bd-a2", "--set", "review")
    before = {i: task(repo, i)["tip"] for i in ("bd-a1", "bd-a2")}
    exported = ok(repo, "export", "--format", "json-beads", "bd-a1", "bd-a2")
    result = hydrate(repo, "import", "-", input=exported)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # nothing updated, no conflict
    assert "0 updated, 2 unchanged" in result.stderr
    assert {i: task(repo, i)["tip"] for i in before} == before


@pytest.mark.parametrize("fmt", ["json-beads", "json-taskmaster"])
def test_spaces_inside_a_title_tag_or_criterion_come_back(
    repo: Path, tmp_path: Path, fmt: str
) -> None:
    """Runs of spaces are what the user typed: an import used to fold them into one
    (the title changed on a round trip, and importing the export back here was an
    update). Line breaks still become one space: a title is one line."""
    add(repo, "S-1", "ok", "--title", "Fix  the   crash", "--criterion", "a  b", "--tag", "x  y")
    target = fresh(tmp_path, "target")
    round_trip(repo, target, fmt, "S-1")
    back, here = task(target, ("" if fmt == "json-beads" else TM) + "S-1"), task(repo, "S-1")
    for key in ("title", "acceptance_criteria", "tags")[: 3 if fmt == "json-beads" else 1]:
        assert back[key] == here[key], key
    assert here["title"] == "Fix  the   crash"
    if fmt == "json-beads":  # (task-master's ids carry the prefix: another task)
        again = hydrate(target, "import", "-", input=ok(target, "export", "--format", fmt, "S-1"))
        assert again.returncode == 0 and "1 unchanged" in again.stderr, again.stderr


def test_a_line_break_in_an_imported_title_is_one_space(ledger: Ledger) -> None:
    """(And a long title is kept whole, as task-add keeps it: it was cut at 200.)"""
    long = "word " * 60 + "end"
    issues = [{"number": 4, "title": "Crash \r\n\t on  start"}, {"number": 5, "title": long}]
    ledger.import_tasks(json.dumps(issues))
    assert ledger.get_task("GH-4")["title"] == "Crash on  start"
    assert ledger.get_task("GH-5")["title"] == long


def test_a_parent_chain_deeper_than_import_reads_is_refused_by_export(
    repo: Path, tmp_path: Path
) -> None:
    """json-taskmaster nests each part in its parent: a chain of 500 ended the export
    with RecursionError ("hit a bug"), and from 32 levels on the file it wrote was
    one import refuses. The deepest that reads back (31) round-trips; deeper is
    refused in one line, pointing at json-beads."""
    from git_hydrate.interop.export import TASKMASTER_DEPTH

    def chain(depth: int) -> str:
        link = [{"depends_on_id": "", "type": "parent-child"}]
        return "".join(
            json.dumps(
                {
                    "id": f"c{i}",
                    "title": f"c{i}",
                    "dependencies": [{**link[0], "depends_on_id": f"c{i - 1}"}] if i else [],
                }
            )
            + "\n"
            for i in range(depth)
        )

    ok(repo, "import", "-", input=chain(500))
    ids = [f"c{i}" for i in range(TASKMASTER_DEPTH)]
    target = fresh(tmp_path, "target")
    round_trip(repo, target, "json-taskmaster", *ids)
    deepest = task(target, TM + ".".join(ids))  # (a part's id is its path)
    assert deepest["parent"] == TM + ".".join(ids[:-1])
    for deeper in (TASKMASTER_DEPTH + 1, 500):
        refused = hydrate(
            repo, "export", "--format", "json-taskmaster", *(f"c{i}" for i in range(deeper))
        )
        assert (refused.returncode, refused.stdout) == (1, "")
        assert refused.stderr == (
            f"error: json-taskmaster nests each part in its parent, and c{TASKMASTER_DEPTH} "
            f"would be {TASKMASTER_DEPTH + 1} levels deep, more than import reads back: "
            "export it with --format json-beads (parents as links)\n"
        )


def test_export_takes_imports_names_of_the_formats(repo: Path) -> None:
    """explorer15: `export --format beads` was refused though `import --from beads`
    reads what `export --format json-beads` writes: both names are taken."""
    made = hydrate(repo, "task-add", "E-1", "--objective", "o", "--acceptance", "a")
    assert made.returncode == 0, made
    for alias, name in (("beads", "json-beads"), ("taskmaster", "json-taskmaster")):
        by_alias = hydrate(repo, "export", "E-1", "--format", alias)
        assert by_alias.returncode == 0, by_alias
        assert by_alias.stdout == hydrate(repo, "export", "E-1", "--format", name).stdout


def test_a_cycle_of_parents_is_refused_by_taskmaster_export_not_left_out(
    repo: Path, tmp_path: Path
) -> None:
    """review13: json-taskmaster nests each part under its parent from the tasks
    that have none: tasks on a cycle of parents (which a merge of two clones can
    close) have none, and the export printed ``{"tasks": []}`` with exit 0."""
    from .conftest import git

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    add(repo, "X", "a")
    add(repo, "Y", "a")
    ok(repo, "push", "origin")
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    ok(other, "pull", "origin")
    ok(other, "task-edit", "X", "--parent", "Y")  # each clone closes half of the loop
    ok(repo, "task-edit", "Y", "--parent", "X")
    ok(other, "sync", "origin")
    ok(repo, "sync", "origin")
    result = hydrate(repo, "export", "--format", "json-taskmaster", "X", "Y")
    assert result.returncode == 1 and result.stdout == ""
    assert "X, Y are on a cycle of parents" in result.stderr, result.stderr
    from git_hydrate.errors import ValidationError
    from git_hydrate.interop.export import _refuse_unplaced

    with pytest.raises(ValidationError, match=r"and X is on a cycle of parents, or under one"):
        _refuse_unplaced(["X"])
    assert len(result.stderr.splitlines()) == 1
    # beads writes parents as links: the cycle is exported as it is
    beads = ok(repo, "export", "--format", "json-beads", "X", "Y")
    assert len(beads.splitlines()) == 2


def test_the_acceptance_keeps_its_line_breaks_through_a_beads_round_trip(
    repo: Path, tmp_path: Path
) -> None:
    """review13: beside criteria, the acceptance came back with each line break made
    a line feed (a Windows one, a form feed, U+2028): its lines were split, then
    joined with ``\\n``."""
    acceptance = "first line\r\nsecond\u2028third"
    add(repo, "W-1", acceptance, "--criterion", "c1")
    _written, back, _target = beads_both_ways(repo, tmp_path, "W-1")
    assert back["acceptance"] == acceptance
    assert back["acceptance_criteria"] == ["c1"]
