"""import and export: other tools' formats in, tasks updated by a merge, and back out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Ledger

from .conftest import fsck, git, hydrate
from .wrapper import hydrate_command

SAMPLES = Path(__file__).parent / "import_samples"


def objects(repo: Path) -> str:
    return git(repo, "count-objects", "-v")


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "refs/hydrate")


@pytest.mark.parametrize(
    ("sample", "fmt", "expected"),
    [
        ("github.json", "github", {"GH-12": "open", "GH-13": "done", "GH-14": "cancelled"}),
        ("gitlab.json", "gitlab", {"GL-7": "open"}),
        ("beads.jsonl", "beads", {"bd-a1": "open", "bd-a2": "in_progress", "bd-a3": "done"}),
        (
            "tasks.json",
            "taskmaster",
            {"TM-1": "done", "TM-1.1": "open", "TM-1.2": "open", "TM-2": "open"},
        ),
        ("tasks.md", "speckit", {"T001": "done", "T002": "open", "T003": "open"}),
    ],
)
def test_each_format_is_detected_and_imported(
    repo: Path, ledger: Ledger, sample: str, fmt: str, expected: dict[str, str]
) -> None:
    report = ledger.import_tasks((SAMPLES / sample).read_text(encoding="utf-8"))
    assert report["format"] == fmt and report["errors"] == []
    assert sorted(report["created"]) == sorted(expected)
    got = {t["task_id"]: t["status"] for t in ledger.list_tasks()}
    assert got == expected
    again = ledger.import_tasks((SAMPLES / sample).read_text(encoding="utf-8"))
    assert again["created"] == again["updated"] == [] and len(again["unchanged"]) == len(expected)
    fsck(repo)


def test_fields_are_mapped(ledger: Ledger) -> None:
    ledger.import_tasks((SAMPLES / "github.json").read_text(encoding="utf-8"))
    task = ledger.get_task("GH-12")
    assert task["kind"] == "fix" and task["tags"] == ["bug", "api"]
    assert task["acceptance_criteria"] == ["send Retry-After", "document it in docs/api.md"]
    assert [f["path"] for f in task["files"]] == ["docs/api.md", "src/app/limits.py"]
    assert task["source"] == "https://github.com/acme/shop/issues/12"
    assert ledger.get_task("GH-13")["objective"] == "Ünïcode títle ✓"  # empty body: the title
    ledger.import_tasks((SAMPLES / "tasks.json").read_text(encoding="utf-8"))
    assert ledger.get_task("TM-1.2")["parent"] == "TM-1"
    assert ledger.get_task("TM-1.2")["depends_on"] == ["TM-1.1"]
    assert [t["path"] for t in ledger.get_task("TM-1")["tests"]] == ["tests/test_app.py"]
    ledger.import_tasks((SAMPLES / "tasks.md").read_text(encoding="utf-8"))
    assert ledger.get_task("T003")["depends_on"] == ["T001", "T002"]  # the phase before
    assert "parallel" in ledger.get_task("T003")["tags"]


def test_closed_upstream_is_never_ready(ledger: Ledger) -> None:
    ledger.import_tasks((SAMPLES / "github.json").read_text(encoding="utf-8"))
    assert [t["task_id"] for t in ledger.ready()] == ["GH-12"]


def test_reimport_merges_upstream_changes_and_keeps_local_ones(repo: Path, ledger: Ledger) -> None:
    text = (SAMPLES / "github.json").read_text(encoding="utf-8")
    ledger.import_tasks(text)
    ledger.edit_task("GH-12", priority=1, tags=["bug", "api", "local"])
    changed = text.replace("Clients hammer us.", "Clients hammer us badly.").replace(
        '"state": "OPEN"', '"state": "CLOSED"', 1
    )
    dry = ledger.import_tasks(changed, dry_run=True)
    assert dry["updated"] == ["GH-12"]
    assert ledger.get_task("GH-12")["objective"].startswith("Clients hammer us.")
    report = ledger.import_tasks(changed)
    assert report["updated"] == ["GH-12"] and report["unchanged"] == ["GH-13", "GH-14"]
    task = ledger.get_task("GH-12")
    assert task["objective"].startswith("Clients hammer us badly.")
    assert task["status"] == "done"  # closed upstream
    assert task["priority"] == 1 and "local" in task["tags"]  # changed here: kept
    assert len(ledger.list_tasks()) == 3  # never a duplicate
    fsck(repo)


def test_an_import_stopped_once_its_tasks_exist_keeps_their_bases(
    repo: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped (Ctrl-C, SIGTERM) once the tasks were made but before their bases
    were written, the next import took a local edit for the upstream's and undid it
    (explorer8). The bases land with the tasks now, just before their refs."""
    from git_hydrate.store import Repository

    text = (SAMPLES / "github.json").read_text(encoding="utf-8")
    update_refs = Repository.update_refs

    def made_then_stopped(self: Repository, updates: list[Any], *args: Any, **kwargs: Any) -> None:
        update_refs(self, updates, *args, **kwargs)
        if any(name.startswith(b"refs/hydrate/tasks/") for name, _old, _new in updates):
            raise KeyboardInterrupt  # (the tasks are made: stopped right after)

    monkeypatch.setattr(Repository, "update_refs", made_then_stopped)
    with pytest.raises(KeyboardInterrupt):
        ledger.import_tasks(text)
    monkeypatch.undo()
    assert len(ledger.list_tasks()) == 3
    ledger.edit_task("GH-12", objective="my local, better objective")
    again = ledger.import_tasks(text)
    assert again["updated"] == [] and sorted(again["unchanged"]) == ["GH-12", "GH-13", "GH-14"]
    assert ledger.get_task("GH-12")["objective"] == "my local, better objective"
    fsck(repo)


def test_two_imports_of_one_file_at_once_the_loser_sees_unchanged_tasks(
    repo: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import that lost the race to make the tasks reported every item left out
    ("already exists"; explorer9): tasks another import of the same source made
    meanwhile are updates, here unchanged."""
    from git_hydrate.interop import importer

    text = (SAMPLES / "github.json").read_text(encoding="utf-8")
    made = importer.add_tasks
    raced: list[bool] = []

    def the_other_import_first(*args: Any, **kwargs: Any) -> list[str]:
        if not raced:
            raced.append(True)
            with Ledger(repo) as other:
                assert len(other.import_tasks(text)["created"]) == 3
        return made(*args, **kwargs)

    monkeypatch.setattr(importer, "add_tasks", the_other_import_first)
    report = ledger.import_tasks(text)
    assert report["errors"] == [] and report["created"] == []
    assert sorted(report["unchanged"]) == ["GH-12", "GH-13", "GH-14"]
    assert len(ledger.list_tasks()) == 3
    fsck(repo)


@pytest.mark.parametrize(
    ("sample", "fmt"), [("beads.jsonl", "beads"), ("tasks.json", "taskmaster")]
)
def test_export_then_import_changes_nothing(ledger: Ledger, sample: str, fmt: str) -> None:
    ledger.import_tasks((SAMPLES / sample).read_text(encoding="utf-8"))
    ids = [t["task_id"] for t in ledger.list_tasks()]
    before = {i: ledger.get_task(i)["tip"] for i in ids}
    exported = ledger.export_tasks(ids, f"json-{fmt}")
    report = ledger.import_tasks(exported)
    assert report["format"] == fmt and report["errors"] == []
    assert sorted(report["unchanged"]) == sorted(ids)
    assert {i: ledger.get_task(i)["tip"] for i in ids} == before


@pytest.mark.parametrize(
    ("extra", "status"),
    [
        ({"status": "closed", "close_reason": "Won't fix: a duplicate of bd-1"}, "cancelled"),
        ({"status": "closed", "close_reason": "canceled"}, "cancelled"),
        ({"status": "closed", "close_reason": "cancelled the flaky job, fixed"}, "done"),
        ({"status": "closed", "close_reason": "Closed"}, "done"),
        ({"status": "in_progress", "metadata": {"hydrate_status": "review"}}, "review"),
        ({"status": "in_progress", "metadata": {"team": "web"}}, "in_progress"),
        ({"status": "closed", "metadata": {"hydrate_status": "review"}}, "done"),
    ],
)
def test_beads_reasons_and_metadata_tell_stations_apart(
    ledger: Ledger, extra: dict[str, object], status: str
) -> None:
    line = {"id": "bd-1", "title": "t", "description": "d", **extra}
    report = ledger.import_tasks(json.dumps(line) + "\n")
    assert report["errors"] == [] and report["ignored"] == {}
    assert ledger.get_task("bd-1")["status"] == status


def test_bad_items_are_left_out_with_a_reason_and_write_nothing(
    repo: Path, ledger: Ledger
) -> None:
    ledger.add_task("GH-99", objective="made by hand", acceptance="ok")
    token = "ghp_" + "a1B2" * 9
    items = [
        {"number": 1, "title": "fine", "body": "ok", "url": "https://x/1"},
        {"number": 2, "title": "huge", "body": "x" * (2 << 20), "url": "https://x/2"},
        {"number": 3, "title": "secret", "body": f"token {token}", "url": "https://x/3"},
        {"number": 1, "title": "again", "body": "dup", "url": "https://x/1"},
        {"number": 99, "title": "clash", "body": "b", "url": "https://x/99"},
        {"title": "no number"},
    ]
    report = ledger.import_tasks(json.dumps(items), "github")
    assert report["created"] == ["GH-1"]
    reasons = {e["item"]: e["error"] for e in report["errors"]}
    assert "over 1 MiB" in reasons["2"]
    assert "credential" in reasons["3"] or "secret" in reasons["3"].lower()
    assert "twice" in reasons["1"]
    assert "made by hand" in reasons["99"]
    assert "without a positive number" in reasons["?"]  # (it said "None", Python's word)
    assert sorted(t["task_id"] for t in ledger.list_tasks()) == ["GH-1", "GH-99"]


def test_cli_errors_dry_run_and_verbose(repo: Path) -> None:
    bad = hydrate(repo, "import", "-", input="{not json")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "unreadable JSON" in bad.stderr
    odd = hydrate(repo, "import", "-", input="hello world\n")
    assert odd.returncode == 1 and "--from" in odd.stderr
    missing = hydrate(repo, "import", "nope.json")
    assert missing.returncode != 0 and "nope.json" in missing.stderr
    before_objects, before_refs = objects(repo), refs(repo)
    text = (SAMPLES / "github.json").read_text(encoding="utf-8")
    dry = hydrate(repo, "import", "--dry-run", "-v", input=text)
    assert dry.returncode == 0 and "would be created GH-12" in dry.stdout
    assert "fields not used: assignees (2), comments (2)" in dry.stderr
    summary = "github: 3 would be created, 0 would be updated, 0 unchanged, 0 would be left out"
    assert f"{summary} (dry run: nothing written)\n" in dry.stderr
    assert (objects(repo), refs(repo)) == (before_objects, before_refs)
    done = hydrate(repo, "import", "--prefix", "SHOP-", "--json", input=text)
    assert json.loads(done.stdout)["created"] == ["SHOP-12", "SHOP-13", "SHOP-14"]
    md = hydrate(repo, "export", "SHOP-12")
    assert md.stdout.startswith("# Retry-After header on 429\n")
    assert "- [ ] send Retry-After" in md.stdout and "`src/app/limits.py`" in md.stdout
    assert hydrate(repo, "export", "NOPE").returncode != 0
    real = hydrate(repo, "import", "--prefix", "W-", input=text)
    assert real.stderr == "github: 3 created, 0 updated, 0 unchanged, 0 left out\n"


def test_review_findings_dry_run_round_trip_cycles_and_lost_parents(
    repo: Path, ledger: Ledger
) -> None:
    nested = (
        '{"tasks":[{"id":1,"title":"API","description":"d","status":"pending",'
        '"subtasks":[{"id":1,"title":"Routes","description":"r","status":"pending"}]}]}'
    )
    before = (objects(repo), refs(repo))
    assert ledger.import_tasks(nested, dry_run=True)["created"] == ["TM-1", "TM-1.1"]
    assert (objects(repo), refs(repo)) == before  # a dry run writes nothing, parents or not
    ledger.import_tasks(nested)
    # a subtask exported alone comes back as itself, under its parent
    alone = ledger.export_tasks(["TM-1.1"], "json-taskmaster")
    report = ledger.import_tasks(alone)
    assert report["errors"] == [] and report["updated"] == []
    assert ledger.get_task("TM-1")["title"] == "API"
    assert ledger.get_task("TM-1.1")["parent"] == "TM-1"
    # an update that would close a cycle is left out; other items still come in
    line = '{"id":"%s","title":"%s","description":"x"%s}'
    dep = ',"dependencies":[{"issue_id":"%s","depends_on_id":"%s","type":"blocks"}]'
    v1 = "\n".join([line % ("bd-a", "A", ""), line % ("bd-b", "B", "")])
    v2 = "\n".join(
        [
            line % ("bd-a", "A", dep % ("bd-a", "bd-b")),
            line % ("bd-b", "B", dep % ("bd-b", "bd-a")),
            line % ("bd-x", "X", ""),
        ]
    )
    ledger.import_tasks(v1)
    report = ledger.import_tasks(v2)
    assert report["created"] == ["bd-x"] and report["updated"] == ["bd-a"]
    assert [e["item"] for e in report["errors"]] == ["bd-b"]
    assert "cycle" in report["errors"][0]["error"]
    # a child whose parent was left out is left out too, never dangling
    token = "ghp_" + "a1B2" * 9
    pc = ',"dependencies":[{"issue_id":"bd-c","depends_on_id":"bd-p","type":"parent-child"}]'
    text = "\n".join([line % ("bd-p", "P " + token, ""), line % ("bd-c", "C", pc)])
    report = ledger.import_tasks(text)
    assert report["created"] == [] and {e["item"] for e in report["errors"]} == {"bd-p", "bd-c"}
    # an empty issue list, a negative number
    assert ledger.import_tasks("[]")["created"] == []
    bad = ledger.import_tasks('[{"number": -1, "title": "t"}]')
    assert bad["created"] == [] and "positive" in bad["errors"][0]["error"]
    fsck(repo)


def test_import_without_file_on_a_terminal_says_so_instead_of_waiting(repo: Path) -> None:
    import os
    import subprocess

    from .conftest import ROOT

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    primary, secondary = os.openpty()  # standard input is a terminal nobody types into
    try:
        proc = subprocess.run(
            [*hydrate_command(), "import"],
            cwd=repo,
            env=env,
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(secondary)
        os.close(primary)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "error: give FILE, or pipe the export in (- reads standard input, even a terminal)"
        " (see: git-hydrate import -h)\n"
    )
    assert refs(repo) == ""
    piped = hydrate(repo, "import", input=(SAMPLES / "gitlab.json").read_text())
    assert piped.returncode == 0, piped.stderr
    assert "GL-7" in refs(repo)


def test_a_task_named_twice_is_exported_once(repo: Path) -> None:
    hydrate(repo, "task-add", "E-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "start", "E-1")
    once = hydrate(repo, "export", "--format", "json-beads", "E-1")
    twice = hydrate(repo, "export", "--format", "json-beads", "E-1", "@", "E-1")
    assert twice.returncode == 0, twice.stderr
    assert twice.stdout == once.stdout and once.stdout.count("\n") == 1


def test_a_label_is_one_tag_and_what_is_no_label_is_named(repo: Path) -> None:
    github = [
        {"number": 1, "title": "t", "body": "b", "labels": "bug", "url": "u1"},
        {"number": 2, "title": "t", "body": "b", "labels": [None, {"name": None}, "ok"]},
    ]
    gitlab = [{"iid": 3, "title": "t", "labels": [{"name": "perf", "color": "#fff"}, 7]}]
    beads = {"id": "bd-4", "title": "t", "description": "d", "labels": "frontend"}
    results = [
        hydrate(repo, "import", "-", input=json.dumps(github)),
        hydrate(repo, "import", "--from", "gitlab", "-", input=json.dumps(gitlab)),
        hydrate(repo, "import", "-", input=json.dumps(beads) + "\n"),
    ]
    assert [r.returncode for r in results] == [0, 0, 0]  # the items came in
    assert [line for r in results for line in r.stderr.splitlines() if "warning" in line] == [
        "warning: item 2: label null left out: not a string or an object with a name",
        'warning: item 2: label {"name": null} left out: not a string or an object with a name',
        "warning: item 3: label 7 left out: not a string or an object with a name",
    ]
    with Ledger(repo) as ledger:
        tags = {i: ledger.get_task(i)["tags"] for i in ("GH-1", "GH-2", "GL-3", "bd-4")}
        assert ledger.get_task("GH-1")["kind"] == "fix"  # the bug label was read
    assert tags == {"GH-1": ["bug"], "GH-2": ["ok"], "GL-3": ["perf"], "bd-4": ["frontend"]}
    report = json.loads(hydrate(repo, "import", "--json", input=json.dumps(github)).stdout)
    assert [w["item"] for w in report["warnings"]] == ["2", "2"]
    assert report["warnings"][0]["warning"].startswith("label null left out")


def test_a_parent_that_is_not_here_is_named(repo: Path) -> None:
    link = [{"issue_id": "bd-8", "depends_on_id": "bd-99", "type": "parent-child"}]
    orphan = json.dumps({"id": "bd-8", "title": "orphan", "dependencies": link}) + "\n"
    first = hydrate(repo, "import", "-", input=orphan)
    assert first.returncode == 0 and first.stdout == "created bd-8\n"
    assert "warning: item bd-8: its parent bd-99 is not a task here nor in the input" in (
        first.stderr
    )
    parent = json.dumps({"id": "bd-99", "title": "parent"}) + "\n"
    second = hydrate(repo, "import", "-", input=parent + orphan)
    assert second.returncode == 0 and "warning" not in second.stderr
    with Ledger(repo) as ledger:
        assert ledger.get_task("bd-8")["parent"] == "bd-99"  # as the warning said


def test_dependencies_that_name_no_task_leave_the_item_out(ledger: Ledger) -> None:
    tasks = [
        {"id": 5, "title": "t", "dependencies": [None, 2.5, {"id": 1}], "subtasks": [{"id": 1}]},
        {"id": True, "title": "yes"},
        {"id": 6, "title": "six", "dependencies": "3"},
        {"id": 7, "title": "seven", "dependencies": [1, "2", "3.1"]},
        # (a negative id was read as its positive: TM-3 and TM-1, other tasks)
        {"id": -3, "title": "minus"},
        {"id": 8, "title": "eight", "dependencies": [-1]},
    ]
    report = ledger.import_tasks(json.dumps({"tasks": tasks}))
    assert report["created"] == ["TM-7"]
    assert ledger.get_task("TM-7")["depends_on"] == ["TM-1", "TM-2", "TM-3.1"]
    number = "a whole number (not below 0) or a string"
    assert sorted((e["item"], e["error"]) for e in report["errors"]) == sorted(
        [
            ("5", f'its dependencies null, 2.5, {{"id": 1}} name no task: an id is {number}'),
            ("8", f"its dependencies -1 name no task: an id is {number}"),
            ("?", f"its id true is not {number}"),
            ("?", f"its id -3 is not {number}"),
            ("6", 'its dependencies "3" are not a list'),
            ("5.1", "its parent TM-5 was left out"),
        ]
    )
    beads = [
        {"id": "bd-1", "title": "t", "dependencies": [{"depends_on_id": 5}, "bd-2"]},
        {"id": "bd-2", "title": "t", "dependencies": [{"depends_on_id": "bd-3"}]},
    ]
    report = ledger.import_tasks("".join(json.dumps(b) + "\n" for b in beads))
    assert report["created"] == ["bd-2"] and [e["item"] for e in report["errors"]] == ["bd-1"]
    assert "name no issue" in report["errors"][0]["error"]
    assert {t["task_id"] for t in ledger.list_tasks()} == {"TM-7", "bd-2"}


def test_an_issue_without_a_title_takes_its_objectives_first_line(ledger: Ledger) -> None:
    """As task-add gives a task without a title (it took the issue's number: "21")."""
    issues = [
        {"number": 21, "title": None, "body": "Crash on empty input\n\nmore", "state": "OPEN"}
    ]
    report = ledger.import_tasks(json.dumps(issues), "github")
    assert report["created"] == ["GH-21"]
    assert ledger.get_task("GH-21")["title"] == "Crash on empty input"


def test_an_id_met_twice_leaves_out_the_second_copy_only(repo: Path, ledger: Ledger) -> None:
    """The first copy is imported with its children; the second is named, and its
    id counts as no parent left out (it made TM-5.1 "left out: its parent TM-5 was
    left out" though TM-5 was created)."""
    tasks = [
        {"id": 5, "title": "E", "description": "e", "subtasks": [{"id": 1, "title": "E1"}]},
        {"id": 5, "title": "E dup", "description": "dup"},
    ]
    out = hydrate(repo, "import", "-", input=json.dumps({"tasks": tasks}))
    assert out.returncode == 1 and out.stdout == "created TM-5\ncreated TM-5.1\n"
    assert out.stderr.splitlines()[1:] == [
        "warning: item 5 left out: appears twice in the input (as TM-5)"
    ]
    assert ledger.get_task("TM-5")["title"] == "E"
    assert ledger.get_task("TM-5.1")["parent"] == "TM-5"
    link = [{"issue_id": "bd-c", "depends_on_id": "bd-p", "type": "parent-child"}]
    beads = [
        {"id": "bd-p", "title": "P"},
        {"id": "bd-c", "title": "C", "dependencies": link},
        # (a second copy that names a parent of its own: the first's place counts)
        {"id": "bd-p", "title": "P again", "dependencies": [{**link[0], "issue_id": "bd-p"}]},
    ]
    report = ledger.import_tasks("".join(json.dumps(b) + "\n" for b in beads))
    assert report["created"] == ["bd-p", "bd-c"] and report["warnings"] == []
    assert [(e["item"], e["error"]) for e in report["errors"]] == [
        ("bd-p", "appears twice in the input (as bd-p)")
    ]
    assert ledger.get_task("bd-c")["parent"] == "bd-p" and ledger.get_task("bd-p")["title"] == "P"
    # a first copy that cannot be read is none: the second stands, children and all
    tasks = [
        {"id": 6, "title": "F", "dependencies": [None], "subtasks": [{"id": 1, "title": "F1"}]},
        {"id": 6, "title": "F again"},
    ]
    report = ledger.import_tasks(json.dumps({"tasks": tasks}))
    assert report["created"] == ["TM-6", "TM-6.1"] and [e["item"] for e in report["errors"]] == [
        "6"
    ]
    assert ledger.get_task("TM-6.1")["parent"] == "TM-6"
    fsck(repo)


def test_json_nested_too_deeply_is_unreadable_input_not_a_bug(repo: Path) -> None:
    """Python's reader recursed into 1,000 nested lists (RecursionError: "hit a bug",
    exit 3); they are refused before reading, as other unreadable input is."""
    deep = "[" * 1000 + "]" * 1000
    too_deep = "error: unreadable JSON: nested deeper than 64 levels\n"
    for text in (deep, '{"tasks": ' + deep + "}", deep.replace("[", "[\n")):
        out = hydrate(repo, "import", "-", input=text)
        assert (out.returncode, out.stdout, out.stderr) == (1, "", too_deep)
        assert hydrate(repo, "import", "--from", "github", "-", input=text).stderr == too_deep

    # beads: the line is left out, the others come in
    def line(levels: int) -> str:  # (the object is one level, its lists the others)
        return '{"id": "bd-2", "title": "t", "description": %s}\n' % ("[" * levels + "]" * levels)

    text = '{"id": "bd-1", "title": "ok"}\n' + line(100)
    out = hydrate(repo, "import", "-", input=text)
    assert out.returncode == 1 and out.stdout == "created bd-1\n"
    assert "warning: item line 2 left out: unreadable JSON: nested deeper than 64 levels" in (
        out.stderr
    )
    # 64 levels are read (the line's object is one)
    out = hydrate(repo, "import", "-", input=line(63))
    assert out.returncode == 0 and out.stdout == "created bd-2\n", out.stderr
    assert "bd-1" in refs(repo) and "bd-2" in refs(repo)


def test_a_key_twice_in_one_object_is_unreadable_input(repo: Path) -> None:
    """Python's reader keeps the last of a key met twice: ``{"number": 1, "number": 2}``
    came in as GH-2 without a word, though whoever read the file saw 1 first. It is
    refused as a pull refuses a task.json with a key twice; a beads line so written is
    left out, the others come in."""
    refused = "error: unreadable JSON: key 'number' appears twice in one object\n"
    issue = '{"number": 1, "title": "a", "state": "OPEN", "number": 2}'
    for text in (f"[{issue}]", f"[\n{issue}\n]\n", issue):
        for given in ([], ["--from", "github"]):
            out = hydrate(repo, "import", *given, "-", input=text)
            assert (out.returncode, out.stdout, out.stderr) == (1, "", refused)
    nested = '{"tasks": [{"id": 1, "title": "a", "details": {"x": 1, "x": 2}}]}'
    out = hydrate(repo, "import", "-", input=nested)
    assert (out.returncode, out.stderr) == (
        1,
        "error: unreadable JSON: key 'x' appears twice in one object\n",
    )
    text = '{"id": "bd-1", "title": "ok"}\n{"id": "bd-2", "title": "t", "id": "bd-3"}\n'
    out = hydrate(repo, "import", "-", input=text)
    assert (out.returncode, out.stdout) == (1, "created bd-1\n")
    assert (
        "warning: item line 2 left out: unreadable JSON: key 'id' appears twice in one object"
        in out.stderr
    )
    first = hydrate(repo, "import", "-", input="\n".join(reversed(text.splitlines())))
    assert (first.returncode, first.stdout) == (1, "")
    assert "as JSONL (beads): key 'id' appears twice in one object in its first line" in (
        first.stderr
    )
    assert refs(repo).count("refs/hydrate/tasks/") == 1 and "bd-1" in refs(repo)


def test_a_reader_message_ending_in_at_is_said_once(repo: Path) -> None:
    """Python's reader says "Invalid control character at" and "Unterminated string
    starting at", leaving the position to the caller: the error read "Invalid control
    character at at line 1", and a beads line's "... at" named nothing."""
    out = hydrate(repo, "import", "-", input='[{"number": 3, "title": "a\x01b"}]')
    assert (out.returncode, out.stderr) == (
        1,
        "error: unreadable JSON: Invalid control character at line 1\n",
    )
    out = hydrate(repo, "import", "--from", "github", "-", input='[{"number": 3,\n "title": "ab')
    assert out.stderr == "error: unreadable JSON: Unterminated string starting at line 2\n"
    text = '{"id": "bd-1", "title": "ok"}\n{"id": "bd-2", "title": "a\x01b"}\n'
    out = hydrate(repo, "import", "-", input=text)
    assert (out.returncode, out.stdout) == (1, "created bd-1\n")
    assert "item line 2 left out: unreadable JSON: Invalid control character\n" in out.stderr
    out = hydrate(repo, "import", "-", input=text[text.index("\n") + 1 :] + text)
    assert "as JSONL (beads): Invalid control character in its first line;" in out.stderr


def test_a_beads_file_with_a_bad_first_line_is_pointed_at_from_beads(repo: Path) -> None:
    """Detection reads the first line of JSONL: one too deep or broken failed the
    whole input with no way out named. The error says what each format made of
    it and that --from beads imports the lines it can read (it does)."""
    good = '{"id": "bd-1", "title": "ok"}\n'
    deep = '{"id": "bd-0", "title": "t", "d": %s}\n' % ("[" * 100 + "]" * 100)
    hint = "; name the format with --from (--from beads reads each line on its own and "
    hint += "imports those it can)\n"
    out = hydrate(repo, "import", "-", input=deep + good)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        "error: unreadable JSON: as one document (github, gitlab, taskmaster): nested deeper "
        "than 64 levels; as JSONL (beads): nested deeper than 64 levels in its first line" + hint
    )
    out = hydrate(repo, "import", "-", input='{"id": "bd-0", "title": \n' + good)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        "error: unreadable JSON: as one document (github, gitlab, taskmaster): Expecting ',' "
        "delimiter at line 3; as JSONL (beads): Expecting value in its first line" + hint
    )
    out = hydrate(repo, "import", "--from", "beads", "-", input=deep + good)
    assert (out.returncode, out.stdout) == (1, "created bd-1\n")
    # one line alone is unreadable as it was: no format to name
    alone = hydrate(repo, "import", "-", input='{"id": 1,\n\n')
    assert alone.stderr == "error: unreadable JSON: Expecting property name enclosed in " \
        "double quotes at line 1\n"  # fmt: skip


def test_a_title_over_a_line_is_cut_at_a_word_not_left_out(repo: Path) -> None:
    """A title of more than 1,024 characters (a line's limit) left the whole item
    out, a reason the import page did not list. It comes in with its title cut at
    its last space within the limit, ``...`` after it, and a warning; a title with
    no space to cut at is cut at the limit. Importing it again changes nothing."""
    words = "word " * 300  # (1,500 characters)
    items = [
        {"number": 1, "title": words.strip(), "body": "b", "url": "https://x/1"},
        {"number": 2, "title": "x" * 2000, "body": "b", "url": "https://x/2"},
        {"number": 3, "title": "a" * 1021 + " tail", "body": "b", "url": "https://x/3"},
    ]
    out = hydrate(repo, "import", "--from", "github", "-", input=json.dumps(items))
    assert (out.returncode, out.stdout) == (0, "created GH-1\ncreated GH-2\ncreated GH-3\n")
    assert out.stderr.splitlines()[1:] == [
        "warning: item 1: its title is longer than 1,024 characters (1,499): cut to 1,022",
        "warning: item 2: its title is longer than 1,024 characters (2,000): cut to 1,024",
        "warning: item 3: its title is longer than 1,024 characters (1,026): cut to 1,024",
    ]
    titles = [json.loads(hydrate(repo, "show", f"GH-{n}", "--json").stdout)["title"]
              for n in (1, 2, 3)]  # fmt: skip
    assert titles == [("word " * 204).strip() + "...", "x" * 1021 + "...", "a" * 1021 + "..."]
    again = hydrate(repo, "import", "--from", "github", "-", input=json.dumps(items))
    assert again.returncode == 0 and "updated" not in again.stdout, again.stdout


def test_cycles_and_lost_parents_are_found_in_one_pass_dry_run_too(
    repo: Path, ledger: Ledger
) -> None:
    """New tasks are made in one transaction, parents first (a chain of parents made
    one ref transaction per link, each reading every task: quadratic). What closes
    a cycle with the tasks before it is left out, and its children with it, as
    made one by one; a dry run says the same (it said every one was created)."""

    def issue(bid: str, parent: str = "", deps: tuple[str, ...] = ()) -> str:
        links = [{"depends_on_id": d, "type": "blocks"} for d in deps]
        links += [{"depends_on_id": parent, "type": "parent-child"}] if parent else []
        return json.dumps({"id": bid, "title": bid, "dependencies": links}) + "\n"

    text = "".join(
        [
            issue("M", parent="N"),  # (a child before its parent: parents come first)
            issue("N", parent="P", deps=("P",)),  # waits for its own parent: a cycle
            issue("P"),
            issue("D1", deps=("D2",)),
            issue("D2", deps=("D1",)),
            issue("D3", parent="D2"),
            *(issue(f"C{n}", parent=f"C{n - 1}" if n else "P") for n in range(40)),
        ]
    )
    expected = [
        ("D2", "cycle of parents and dependencies: D2 -> D1 -> D2"),
        ("N", "cycle of parents and dependencies: N -> P -> N"),
        ("D3", "its parent D2 was left out"),
        ("M", "its parent N was left out"),
    ]
    made = ["P", "D1", *(f"C{n}" for n in range(40))]
    dry = ledger.import_tasks(text, dry_run=True)
    assert sorted(dry["created"]) == sorted(made)
    assert sorted((e["item"], e["error"]) for e in dry["errors"]) == sorted(expected)
    assert refs(repo) == ""
    report = ledger.import_tasks(text)
    assert report["created"] == dry["created"] and report["errors"] == dry["errors"]
    # (D1 would wait for ever on D2, left out: the edge goes, said)
    assert (
        report["warnings"]
        == dry["warnings"]
        == [{"item": "D1", "warning": "its dependency D2 was left out: dropped"}]
    )
    assert ledger.get_task("C39")["parent"] == "C38" and ledger.get_task("C0")["parent"] == "P"
    assert {t["task_id"] for t in ledger.list_tasks()} == set(made)
    fsck(repo)


def test_a_cycle_of_parents_in_the_input_is_refused_not_broken(repo: Path, ledger: Ledger) -> None:
    """A's parent B, B's parent A, in one input: A was made without a parent (its
    warning said B was "not a task here nor in the input") and B under A. Each
    member of the cycle is left out naming it, and their children with them."""
    lines = [
        {"id": bid, "title": bid, "dependencies": [{"depends_on_id": up, "type": "parent-child"}]}
        for bid, up in (("A", "B"), ("B", "A"), ("C", "A"))
    ]
    text = "".join(json.dumps(line) + "\n" for line in [*lines, {"id": "D", "title": "D"}])
    report = ledger.import_tasks(text)
    assert report["created"] == ["D"] and report["warnings"] == []
    assert sorted((e["item"], e["error"]) for e in report["errors"]) == [
        ("A", "cycle of parents: A -> B -> A"),
        ("B", "cycle of parents: B -> A -> B"),
        ("C", "its parent A was left out"),
    ]
    assert [t["task_id"] for t in ledger.list_tasks()] == ["D"]
    fsck(repo)


def test_an_update_naming_a_new_parent_left_out_keeps_its_parent(
    repo: Path, ledger: Ledger
) -> None:
    """An imported task updated to name as parent a task this run was to make, and
    then left out (here for a cycle through it), pointed at a task that is not
    here. Updates that name a parent made in the run wait for it; when it was
    not made, the parent stays as it was, with a warning."""

    def issue(bid: str, parent: str = "", dep: str = "") -> str:
        links = [{"depends_on_id": parent, "type": "parent-child"}] if parent else []
        links += [{"depends_on_id": dep, "type": "blocks"}] if dep else []
        return json.dumps({"id": bid, "title": bid, "dependencies": links}) + "\n"

    ledger.import_tasks(issue("X") + issue("Y"))
    report = ledger.import_tasks(
        issue("X", parent="P") + issue("P2", dep="P") + issue("P", dep="P2")
    )
    assert ledger.get_task("X")["parent"] == ""
    assert {"item": "X", "warning": "its new parent P was left out: its parent is unchanged"} in (
        report["warnings"]
    )
    assert not any(t["task_id"] == "P" for t in ledger.list_tasks())
    report = ledger.import_tasks(issue("Y", parent="Q") + issue("Q"))
    assert ledger.get_task("Y")["parent"] == "Q" and report["updated"] == ["Y"]
    assert report["created"] == ["Q"] and report["warnings"] == []
    fsck(repo)


def test_a_criterion_or_tag_longer_than_a_line_does_not_cost_the_item(ledger: Ledger) -> None:
    """Each left the whole item out (a title is cut since): a criterion that long is
    kept at the end of the acceptance, a tag that long is left out, each said."""
    long = "the report lists " + "every row " * 110
    issue = {
        "id": "bd-9",
        "title": "Report",
        "acceptance_criteria": f"it renders\n\n- [ ] short one\n- [ ] {long}",
        "labels": ["ok", "x" * 1100],
    }
    report = ledger.import_tasks(json.dumps(issue) + "\n")
    assert report["created"] == ["bd-9"] and report["errors"] == []
    task = ledger.get_task("bd-9")
    assert task["acceptance_criteria"] == ["short one"]
    assert task["acceptance"] == f"it renders\n\n{long.strip()}"
    assert task["tags"] == ["ok"]
    assert [w["warning"] for w in report["warnings"]] == [
        "1 acceptance criteria longer than 1,024 characters: kept in the acceptance",
        "a tag longer than 1,024 characters: left out",
    ]


def test_a_dependency_on_an_item_left_out_is_dropped_with_a_warning(ledger: Ledger) -> None:
    """Of a beads cycle bd-1 <-> bd-2, bd-2 is left out; bd-1 was made depending on it
    and waited for ever on a task that is not here, without a word (explorer11). So
    with spec-kit and task-master items left out for a bad path. The edge to a task
    this import left out is dropped, with a warning; one to a task here stays."""
    ledger.add_task("bd-9", objective="here already", acceptance="a")
    deps = {"bd-1": ["bd-2", "bd-9"], "bd-2": ["bd-1"]}
    beads = [
        {
            "id": task_id,
            "title": task_id,
            "description": "d",
            "dependencies": [
                {"issue_id": task_id, "depends_on_id": d, "type": "blocks"} for d in on
            ],
        }
        for task_id, on in deps.items()
    ]
    report = ledger.import_tasks("".join(json.dumps(b) + "\n" for b in beads), "beads")
    assert report["created"] == ["bd-1"]
    assert [e["item"] for e in report["errors"]] == ["bd-2"]
    assert report["warnings"] == [
        {"item": "bd-1", "warning": "its dependency bd-2 was left out: dropped"}
    ]
    assert ledger.get_task("bd-1")["depends_on"] == ["bd-9"]


def test_a_path_no_task_may_hold_leaves_out_the_path_not_the_item(ledger: Ledger) -> None:
    """A description that mentions ../other-repo/lib.py, or a test strategy naming
    tests/../../x.py, left the whole task-master item out ("leaves the repository";
    explorer11): the path is left out, said in a warning, and the task comes in."""
    tasks = [
        {
            "id": 10,
            "title": "p2",
            "description": "Compare with ../other-repo/lib.py and src/a.py",
            "testStrategy": "run tests/../../x.py and tests/test_a.py",
        }
    ]
    report = ledger.import_tasks(json.dumps({"tasks": tasks}))
    assert report["created"] == ["TM-10"] and report["errors"] == []
    assert [w["warning"].split(":")[0] for w in report["warnings"]] == [
        "file in play path '../other-repo/lib.py' leaves the repository",
        "test path 'tests/../../x.py' leaves the repository",
    ]
    task = ledger.get_task("TM-10")
    assert [f["path"] for f in task["files"]] == ["src/a.py"]
    assert [t["path"] for t in task["tests"]] == ["tests/test_a.py"]


def test_an_id_that_is_no_task_id_is_said_as_imported(repo: Path) -> None:
    """A source id that is no task id as it is came in renamed without a word: a/b as
    a-b, ä-1 as 1, -dash as dash (explorer11); a GitHub number that is none was named
    "None". Each rename is a warning now; a missing number is "?", a string "12" as
    JSON writes it."""
    lines = [{"id": i, "title": i, "description": "d"} for i in ("a/b", "ä-1", "-dash", "ok-1")]
    out = hydrate(repo, "import", "--from", "beads", "-",
                  input="".join(json.dumps(x) + "\n" for x in lines))  # fmt: skip
    assert out.returncode == 0 and out.stdout.split() == [
        "created", "a-b", "created", "1", "created", "dash", "created", "ok-1"
    ]  # fmt: skip
    assert out.stderr.splitlines()[1:] == [
        "warning: item a/b: its id 'a/b' is no task id: imported as a-b",
        "warning: item ä-1: its id 'ä-1' is no task id: imported as 1",
        "warning: item -dash: its id '-dash' is no task id: imported as dash",
    ]
    issues = [{"number": None, "title": "x"}, {"number": "12", "title": "y"}]
    bad = hydrate(repo, "import", "--from", "github", "-", input=json.dumps(issues))
    assert bad.stderr.splitlines()[1:] == [
        "warning: item ? left out: GitHub issue without a positive number",
        'warning: item "12" left out: GitHub issue without a positive number',
    ]


def test_a_spec_kit_line_inside_a_code_fence_is_no_task(ledger: Ledger) -> None:
    """tasks.md may show the format in a fenced example: its `- [ ] T006` line was
    imported as a task (explorer11). Lines between fences are text."""
    text = (
        "# Tasks\n\n## Phase 1\n- [ ] T001 Create src/a.py\n\n"
        "Example of the format:\n\n````markdown\n```\n- [ ] T006 not a task\n```\n````\n"
        "~~~\n- [ ] T007 nor this\n~~~\n"
        "- [x] T002 Write tests/test_a.py\n"
    )
    report = ledger.import_tasks(text, "speckit")
    assert report["created"] == ["T001", "T002"] and report["errors"] == []


def test_an_update_drops_a_dependency_on_an_item_left_out(ledger: Ledger) -> None:
    """The same for a task imported before: its update kept the edge to an item the
    import left out (review8: bd-2 refused for a field over 1 MiB)."""
    first = {"id": "bd-1", "title": "A", "description": "d"}
    ledger.import_tasks(json.dumps(first) + "\n", "beads")
    link = {"issue_id": "bd-1", "depends_on_id": "bd-2", "type": "blocks"}
    again = {**first, "description": "d2", "dependencies": [link]}
    refused = {"id": "bd-2", "title": "B", "description": "x" * ((1 << 20) + 10)}
    report = ledger.import_tasks(json.dumps(again) + "\n" + json.dumps(refused) + "\n", "beads")
    assert report["updated"] == ["bd-1"] and [e["item"] for e in report["errors"]] == ["bd-2"]
    assert report["warnings"] == [
        {"item": "bd-1", "warning": "its dependency bd-2 was left out: dropped"}
    ]
    task = ledger.get_task("bd-1")
    assert task["depends_on"] == [] and task["objective"] == "d2"


def test_a_number_too_long_to_read_is_an_unreadable_item_not_a_crash(repo: Path) -> None:
    """review10: Python reads no integer of more than 4,300 digits and says so with a
    plain ValueError, which crashed every format ("hit a bug", exit 3; one such beads
    line, the whole import); detected, it was called nested too deeply."""
    huge = "1" * 5000
    for fmt in ("github", "taskmaster"):
        doc = (
            f'[{{"number": {huge}, "title": "t", "url": "u"}}]'
            if fmt == "github"
            else f'{{"tasks": [{{"id": {huge}, "title": "t"}}]}}'
        )
        for args in (("import", "-"), ("import", "--from", fmt, "-")):
            out = hydrate(repo, *args, input=doc)
            assert (out.returncode, out.stderr) == (
                1,
                "error: unreadable JSON: a number of more digits than can be read at line 1\n",
            ), (fmt, args, out)
    lines = f'{{"id": "bd-0", "title": "t", "n": {huge}}}\n{{"id": "bd-1", "title": "ok"}}\n'
    out = hydrate(repo, "import", "--from", "beads", "-", input=lines)
    assert (out.returncode, out.stdout) == (1, "created bd-1\n")
    assert "line 1 left out: unreadable JSON: a number of more digits" in out.stderr


def test_a_beads_export_with_a_line_separator_reads_back(repo: Path) -> None:
    """review10: export writes U+2028 raw (valid JSON), and import split JSONL with
    str.splitlines, which also splits there: our own export did not read back."""
    title = "first\u2028second"
    assert (
        hydrate(repo, "task-add", "bd-1", "--objective", title, "--acceptance", "a").returncode
        == 0
    )
    exported = hydrate(repo, "export", "bd-1", "--format", "json-beads").stdout
    assert "\u2028" in exported and exported.count("\n") == 1
    other = repo.parent / "other"
    git(repo.parent, "init", "-q", str(other))
    out = hydrate(other, "import", "-", input=exported)
    assert out.returncode == 0, out
    with Ledger(other) as ledger:
        assert ledger.get_task("bd-1")["objective"] == title


def test_terminal_codes_in_an_issue_are_taken_out_not_the_issue(repo: Path) -> None:
    """review10: an issue whose body held pasted, coloured terminal output was left
    out whole ("objective holds control characters"). The escape sequences and any
    other control character are taken out, what they coloured kept, and said."""
    body = "Steps:\n```\n\x1b[31;1mError:\x1b[0m boom\x07\n\x1b]0;title\x07done\n```"
    issues = [
        {"number": 1, "title": "Crash\x1b[0m on start", "body": body, "url": "https://x/1"},
        {"number": 2, "title": "Fine", "body": "plain", "url": "https://x/2"},
    ]
    out = hydrate(repo, "import", "--from", "github", "-", input=json.dumps(issues))
    assert out.returncode == 0, out
    assert out.stderr.endswith(
        "\nwarning: item 1: terminal codes and control characters taken out of its title, "
        "objective\n"
    )
    with Ledger(repo) as ledger:
        task = ledger.get_task("GH-1")
    assert task["title"] == "Crash on start"
    assert task["objective"].startswith("Steps:\n```\nError: boom\ndone\n```")


def test_invisible_characters_in_a_line_field_are_taken_out_not_the_issue(repo: Path) -> None:
    """A zero-width space in a title (pasted from a chat), a bidi override in a
    criterion or a coloured label left the whole issue out ("title must be one line
    without control characters"), while a terminal code in the same title was taken
    out. A title's, a criterion's and a tag's invisible format characters and control
    characters are taken out the same way, and said; the joiner of emoji stays."""
    issues = [
        {
            "number": 1,
            "title": "Fix\u200b crash \U0001f469\u200d\U0001f4bb",
            "body": "- [ ] exit \u202e0 on success\n",
            "labels": [{"name": "\x1b[31mbug\x1b[0m"}, "ui\u2066x"],
            "url": "https://x/1",
        },
    ]
    out = hydrate(repo, "import", "--from", "github", "-", input=json.dumps(issues))
    assert (out.returncode, out.stdout) == (0, "created GH-1\n"), out.stderr
    assert out.stderr.endswith(
        "\nwarning: item 1: terminal codes and control characters taken out of its title, "
        "criteria, tags\n"
    )
    with Ledger(repo) as ledger:
        task = ledger.get_task("GH-1")
    assert task["title"] == "Fix crash \U0001f469\u200d\U0001f4bb"
    assert task["acceptance_criteria"] == ["exit 0 on success"]
    assert task["tags"] == ["bug", "uix"]


def test_a_dependency_on_no_task_here_is_kept_with_a_warning(repo: Path) -> None:
    """review11: task-add and task-edit warn of a dependency on a task that is not
    here; import made such a task silently (README: "kept, with a warning")."""
    line = '{"id": "bd-1", "title": "t", "dependencies": [{"depends_on_id": "bd-9"}]}\n'
    out = hydrate(repo, "import", "--from", "beads", "-", input=line)
    assert out.returncode == 0, out
    assert out.stderr.endswith(
        "warning: item bd-1: depends on bd-9, which is no task here: it waits for it until it is\n"
    )
    with Ledger(repo) as ledger:
        assert ledger.get_task("bd-1")["depends_on"] == ["bd-9"]


def test_a_dry_run_takes_a_dependency_on_a_task_it_makes_for_one_here(repo: Path) -> None:
    """A dry run warned that bd-1 depends on bd-2, "no task here", when the same
    import makes bd-2: a dependency on one of the run's own items is no warning."""
    lines = (
        '{"id": "bd-1", "title": "t", "dependencies": [{"depends_on_id": "bd-2"}]}\n'
        '{"id": "bd-2", "title": "u"}\n'
    )
    for args in (["--dry-run"], []):
        out = hydrate(repo, "import", "--from", "beads", *args, "-", input=lines)
        assert out.returncode == 0, out
        assert "warning" not in out.stderr, out.stderr


def test_an_update_that_adds_a_dependency_on_no_task_here_warns(repo: Path) -> None:
    """An update's dependency on a task that is not here was written silently
    (only the tasks an import made were warned of), in a dry run too."""
    first = '{"id": "bd-1", "title": "t"}\n'
    assert hydrate(repo, "import", "--from", "beads", "-", input=first).returncode == 0
    line = '{"id": "bd-1", "title": "t2", "dependencies": [{"depends_on_id": "bd-7"}]}\n'
    warning = (
        "warning: item bd-1: depends on bd-7, which is no task here: it waits for it until it is\n"
    )
    for args in (["--dry-run"], []):
        out = hydrate(repo, "import", "--from", "beads", *args, "-", input=line)
        assert out.returncode == 0, out
        assert out.stderr.endswith(warning), out.stderr
    with Ledger(repo) as ledger:
        assert ledger.get_task("bd-1")["depends_on"] == ["bd-7"]


@pytest.mark.parametrize(
    ("later", "fmt", "task_id"),
    [
        # gh issue list --json number,state: the states alone
        ([{"number": 12, "state": "CLOSED"}], "github", "GH-12"),
        # and with the titles, no bodies
        ([{"number": 12, "title": "Login", "state": "CLOSED"}], "github", "GH-12"),
        ([{"iid": 7, "state": "closed"}], "gitlab", "GL-7"),
        ({"id": "bd-9", "status": "closed"}, "beads", "bd-9"),
    ],
    ids=["gh-number-state", "gh-no-body", "gitlab-iid-state", "beads-id-status"],
)
def test_a_field_the_source_leaves_out_is_kept_by_an_update(
    ledger: Ledger, later: Any, fmt: str, task_id: str
) -> None:
    """review13: a re-import of fewer fields (``gh issue list --json number,state``
    to bring the states over) read each field left out as empty: the title became
    the number, the objective empty (a task no command makes) or the title, and
    the criteria, labels, files and dependencies went."""
    body = "Log in by email.\n\n- [ ] the form posts\n\nsee src/login.py"
    first: dict[str, Any] = {
        "github": [
            {"number": 12, "title": "Login", "body": body, "labels": [{"name": "auth"}],
             "state": "OPEN", "url": "github:12"}
        ],
        "gitlab": [
            {"iid": 7, "title": "Login", "description": body, "labels": ["auth"],
             "state": "opened", "web_url": "gitlab:7"}
        ],
        "beads": {"id": "bd-9", "title": "Login", "description": body,
                  "acceptance_criteria": "- [ ] the form posts", "status": "open",
                  "priority": 1, "issue_type": "task", "labels": ["auth"],
                  "dependencies": [{"issue_id": "bd-9", "depends_on_id": "bd-8",
                                    "type": "blocks"}]},
    }  # fmt: skip
    if fmt == "beads":
        ledger.add_task("bd-8", "o", "a")
    ledger.import_tasks(json.dumps(first[fmt]), fmt)
    before = ledger.get_task(task_id)
    report = ledger.import_tasks(json.dumps(later), fmt)
    assert report["errors"] == [] and report["updated"] == [task_id]
    after = ledger.get_task(task_id)
    assert after["status"] == "done"
    kept = ("title", "objective", "acceptance", "acceptance_criteria", "tags", "files")
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    assert after["depends_on"] == before["depends_on"] and after["priority"] == before["priority"]
    # the next full import merges against what the source said: nothing to change
    again = ledger.import_tasks(json.dumps(first[fmt]).replace('"open', '"closed'), fmt)
    assert again["errors"] == []


@pytest.mark.parametrize(
    ("first", "later", "fmt", "task_id"),
    [
        (
            {"number": 12, "title": "Login", "body": "Log in by email.", "state": "OPEN",
             "url": "https://github.com/acme/shop/issues/12"},
            {"number": 12, "state": "CLOSED"},
            "github",
            "GH-12",
        ),
        (
            {"number": 12, "title": "Login", "body": "Log in by email.", "state": "OPEN",
             "url": "https://github.com/acme/shop/issues/12"},
            {"number": 12, "title": "Login", "body": "Log in by email.", "state": "CLOSED"},
            "github",
            "GH-12",
        ),
        (
            {"iid": 7, "title": "Login", "description": "Log in by email.", "state": "opened",
             "web_url": "https://gitlab.com/acme/shop/-/issues/7"},
            {"iid": 7, "state": "closed"},
            "gitlab",
            "GL-7",
        ),
    ],
    ids=["gh-number-state", "gh-no-url", "gitlab-iid-state"],
)  # fmt: skip
def test_an_update_without_the_issue_url_keeps_the_source_and_acceptance(
    ledger: Ledger, first: dict[str, Any], later: dict[str, Any], fmt: str, task_id: str
) -> None:
    """review14: ``gh issue list --json number,state`` has no ``url``: the item's
    source read as ``github:12``, not the task's URL, and the update was refused
    ("exists here and was made from https://..."); with a body, the acceptance
    would have named ``github:12``."""
    ledger.import_tasks(json.dumps([first]), fmt)
    before = ledger.get_task(task_id)
    report = ledger.import_tasks(json.dumps([later]), fmt)
    assert report["errors"] == [] and report["updated"] == [task_id], report
    after = ledger.get_task(task_id)
    assert after["status"] == "done"
    kept = ("title", "objective", "acceptance", "source")
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}


def test_an_update_without_the_url_of_another_issue_is_refused(ledger: Ledger) -> None:
    """A task made from another issue's URL (imported with another prefix's
    numbers) is not taken for this item's when the item has no URL."""
    first = [{"number": 12, "title": "Login", "body": "b", "state": "OPEN",
              "url": "https://github.com/acme/shop/issues/112"}]  # fmt: skip
    ledger.import_tasks(json.dumps(first), "github")
    report = ledger.import_tasks(json.dumps([{"number": 12, "state": "CLOSED"}]), "github")
    assert report["updated"] == [] and "exists here and was made from" in str(report["errors"])
    assert ledger.get_task("GH-12")["status"] == "open"


def test_spec_kit_tells_a_test_by_its_folder_or_name_not_by_four_letters(
    ledger: Ledger,
) -> None:
    """spec-kit's paths were tests when they held ``test`` anywhere: ``src/latest.py``,
    ``src/contest/app.py`` and ``src/pytest_plugin.py`` became "Tests to write or
    update". A test is a file under a test folder or named as one."""
    text = (
        "## Phase 1\n"
        "- [ ] T001 Fix the cache in src/latest.py and src/contest/app.py\n"
        "- [ ] T002 Load src/pytest_plugin.py, covered by tests/unit/cache.py\n"
        "- [ ] T003 Check cli/test_cli.py, pkg/x_test.go, web/a.spec.ts and src/GsonTest.java\n"
    )
    ledger.import_tasks(text, "speckit")

    def split(task_id: str) -> tuple[list[str], list[str]]:
        shown = ledger.get_task(task_id)
        return [f["path"] for f in shown["files"]], [t["path"] for t in shown["tests"]]

    assert split("T001") == (["src/latest.py", "src/contest/app.py"], [])
    assert split("T002") == (["src/pytest_plugin.py"], ["tests/unit/cache.py"])
    assert split("T003") == (
        [],
        ["cli/test_cli.py", "pkg/x_test.go", "web/a.spec.ts", "src/GsonTest.java"],
    )


@pytest.mark.parametrize(
    ("fmt", "text", "task_id"),
    [
        (
            "github",
            '[{"number": 8, "title": "t", "body": "%s", "url": "https://github.com/o/r/issues/8"}]',
            "GH-8",
        ),
        (
            "gitlab",
            '[{"iid": 8, "title": "t", "description": "%s", "state": "opened", '
            '"web_url": "https://gitlab.com/o/r/-/issues/8"}]',
            "GL-8",
        ),
        ("beads", '{"id": "bd-8", "title": "t", "description": "%s", "status": "open"}', "bd-8"),
        ("taskmaster", '{"tasks": [{"id": 8, "title": "t", "description": "%s"}]}', "TM-8"),
    ],
)
def test_a_test_an_issue_names_is_a_test_to_write_not_a_file_in_play(
    ledger: Ledger, fmt: str, text: str, task_id: str
) -> None:
    """An issue's body named tests/test_app.py before src/app.py: both became files in
    play, the test first, so add-tree ranked it above the code the issue is about. A
    test (named as one, or under a test folder) goes where the task keeps its tests."""
    body = "tests/test_app.py::test_f fails since src/app.py changed; see spec/support/h.rb"
    body += " and specs/001-login/plan.md"  # (spec-kit's design: no test, review16)
    report = ledger.import_tasks(text % body, fmt)
    assert report["created"] == [task_id], report
    task = ledger.get_task(task_id)
    assert [f["path"] for f in task["files"]] == ["src/app.py", "specs/001-login/plan.md"]
    assert [t["path"] for t in task["tests"]] == ["tests/test_app.py", "spec/support/h.rb"]
    prompt = ledger.prompt(task_id)["prompt"]
    assert "## Files in play\n- `src/app.py`\n- `specs/001-login/plan.md`\n\n## Tests" in prompt


def test_quiet_import_says_only_what_went_wrong(repo: Path) -> None:
    """import -q, for scripts: no created/updated lines nor the summary; a warning
    and an item left out are still said, with the same exit status."""
    issues = SAMPLES / "github.json"
    quiet = hydrate(repo, "import", str(issues), "-q")
    assert (quiet.stdout, quiet.stderr, quiet.returncode) == ("", "", 0)
    assert hydrate(repo, "import", str(issues)).stderr.startswith("github: 0 created")
    broken = '[{"number": 1, "title": "t", "labels": [null]}, {"title": "no number"}]'
    said = hydrate(repo, "import", "-", "-q", "--from", "github", input=broken)
    assert said.returncode == 1 and said.stdout == ""
    assert [line.split(":")[0] for line in said.stderr.splitlines()] == ["warning"] * 2
    both = hydrate(repo, "import", str(issues), "-q", "-v")
    assert both.returncode == 2 and both.stderr.startswith("error: give -q or -v, not both")
