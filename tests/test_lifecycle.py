"""The task lifecycle: stations, checkpoints, status, history, list filters, the archive."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from git_hydrate import Conflict, Ledger, NotFound, ValidationError
from git_hydrate.model import STATIONS, TRANSITIONS
from tests.conftest import GIT_EMAIL, GIT_NAME, fsck, git, hydrate
from tests.wrapper import python_command

#: 2027-01-15T08:00:00Z: a fixed clock makes commits, and so the goldens, reproducible.
T0 = 1_800_000_000
ME = f"{GIT_NAME} <{GIT_EMAIL}>"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = float(T0)

    def __call__(self) -> float:
        return self.now

    def tick(self, minutes: int = 1) -> None:
        self.now += 60 * minutes


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fixed(repo: Path, clock: Clock) -> Iterator[Ledger]:
    """A ledger whose clock the test controls."""
    with Ledger(repo, clock=clock) as led:
        yield led


def refs(repo: Path) -> str:
    return git(repo, "for-each-ref")


def make(ledger: Ledger, task_id: str = "M-1", **fields: object) -> None:
    ledger.add_task(task_id, objective="Add GET /healthz", acceptance="200", **fields)  # type: ignore[arg-type]


# -- checkpoints ---------------------------------------------------------------


def test_checkpoint_flows_into_pack_prompt_and_status(repo: Path, ledger: Ledger) -> None:
    make(ledger, token_budget=1000)
    first = ledger.add_checkpoint("M-1", "route added", "tests red", "write handler", 100)
    assert first["number"] == 1 and first["tokens"] == 100 and first["author"] == ME
    ledger.add_checkpoint(
        "M-1", "handler written", "pytest: 3 passed", "add the X-Request-Id header", 400
    )

    packet = ledger.pack("M-1")["packet"]
    assert packet["checkpoint"] == {
        "summary": "handler written",
        "evidence": "pytest: 3 passed",
        "next_step": "add the X-Request-Id header",
    }
    prompt = ledger.expand("M-1")["prompt"]
    assert (
        "## Latest checkpoint\nSummary: handler written\nEvidence: pytest: 3 passed\n"
        "Next step: add the X-Request-Id header\n" in prompt
    )
    assert "route added" not in prompt

    status = ledger.status("M-1")
    assert status["metrics"] == {
        "reported_tokens": 400,
        "measured_cash_cost": None,
        "measured_token_savings": None,
    }
    assert (status["budget_remaining"], status["over_budget"]) == (600, False)
    assert status["checkpoints"] == 2 and status["checkpoint"]["summary"] == "handler written"

    # Earlier checkpoints stay in the task document and in the history.
    stored = json.loads(git(repo, "cat-file", "-p", "refs/hydrate/tasks/M-1:task.json"))
    assert [c["tokens"] for c in stored["checkpoints"]] == [100, 400]
    subjects = git(repo, "log", "--format=%s", "refs/hydrate/tasks/M-1").splitlines()
    assert subjects[:2] == [
        "hydrate: checkpoint M-1 #2 (400 tokens)",
        "hydrate: checkpoint M-1 #1 (100 tokens)",
    ]
    fsck(repo)


def test_checkpoint_cli_and_prompt(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    result = hydrate(
        repo,
        "checkpoint",
        "M-1",
        "--summary",
        "did it",
        "--evidence",
        "log line",
        "--next-step",
        "ship",
        "--tokens",
        "1200",
    )
    assert result.returncode == 0, result
    assert result.stdout == "task M-1: checkpoint #1 recorded (1200 cumulative tokens)\n"
    assert result.stderr == ""
    prompt = hydrate(repo, "prompt", "M-1")
    assert "## Latest checkpoint\nSummary: did it\nEvidence: log line\nNext step: ship\n" in (
        prompt.stdout
    )
    as_json = hydrate(
        repo, "checkpoint", "M-1", "--summary", "again", "--tokens", "1200", "--json"
    )
    assert as_json.returncode == 0, as_json
    data = json.loads(as_json.stdout)
    assert sorted(data) == [
        "at",
        "author",
        "evidence",
        "next_step",
        "number",
        "summary",
        "task_id",
        "tokens",
    ]
    assert (data["number"], data["tokens"], data["evidence"]) == (2, 1200, "")


def test_a_checkpoint_without_tokens_keeps_the_total(repo: Path) -> None:
    """``--tokens`` left out (a worker that does not count, as the Codex block's
    command is written): the total reported so far, unchanged; 0 at first."""
    from git_hydrate.agents.formats import CODEX_POINTER

    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    assert hydrate(repo, "start", "M-1").returncode == 0
    written = re.search(r"`git hydrate (checkpoint [^`]*)`", CODEX_POINTER)
    assert written is not None
    args = written.group(1).replace("TEXT", "first").split()
    first = hydrate(repo, *args, "--json")
    assert first.returncode == 0, first
    assert json.loads(first.stdout)["tokens"] == 0
    hydrate(repo, "checkpoint", "M-1", "--summary", "counted", "--tokens", "1200")
    again = hydrate(repo, "checkpoint", "M-1", "--summary", "not counted")
    assert again.returncode == 0, again
    assert again.stdout == "task M-1: checkpoint #3 recorded (1200 cumulative tokens)\n"


def test_decreasing_tokens_are_refused_and_nothing_is_written(repo: Path, ledger: Ledger) -> None:
    make(ledger)
    ledger.add_checkpoint("M-1", "s", "e", "n", 500)
    before = refs(repo)
    with pytest.raises(Conflict, match="lower than the 500 already reported"):
        ledger.add_checkpoint("M-1", "s", "e", "n", 499)
    assert refs(repo) == before
    # Equal is fine: no tokens spent since the last checkpoint.
    assert ledger.add_checkpoint("M-1", "s2", "e", "n", 500)["number"] == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"summary": ""}, ValidationError, "summary must not be empty"),
        ({"summary": "  \n"}, ValidationError, "summary must not be empty"),
        ({"tokens": -1}, ValidationError, "must be zero or more"),
        ({"tokens": True}, ValidationError, "must be an integer"),
        ({"evidence": "a\0b"}, ValidationError, "NUL"),
        ({"task_id": "NOPE"}, NotFound, "no task 'NOPE'"),
        ({"task_id": "bad/id"}, ValidationError, "invalid task id"),
    ],
)
def test_bad_checkpoints_write_nothing(
    repo: Path, ledger: Ledger, kwargs: dict[str, object], error: type, text: str
) -> None:
    make(ledger)
    before = refs(repo)
    call = {"task_id": "M-1", "summary": "s", "evidence": "e", "next_step": "n", "tokens": 1}
    call.update(kwargs)
    with pytest.raises(error, match=text):
        ledger.add_checkpoint(**call)  # type: ignore[arg-type]
    assert refs(repo) == before


# -- stations ------------------------------------------------------------------


def test_every_station_move_is_allowed_or_refused_as_documented(
    repo: Path, ledger: Ledger
) -> None:
    for n, (source, target) in enumerate(itertools.product(STATIONS, STATIONS)):
        task_id = f"S-{n}"
        make(ledger, task_id, status=source)
        if target == source:
            before = refs(repo)
            assert ledger.set_status(task_id, target)["changed"] is False
            assert refs(repo) == before
        elif target in TRANSITIONS[source]:
            assert ledger.set_status(task_id, target) == {
                "task_id": task_id,
                "from": source,
                "to": target,
                "changed": True,
            }
            assert ledger.get_task(task_id)["status"] == target
        else:
            before = refs(repo)
            allowed = ", ".join(TRANSITIONS[source])
            with pytest.raises(Conflict) as info:
                ledger.set_status(task_id, target)
            # where one step leads there, the refusal names it as a command (issue 34)
            via = [step for step in TRANSITIONS[source] if target in TRANSITIONS[step]]
            then = (
                f"; go through {via[0]} first: git hydrate status {task_id} --set {via[0]}"
                if via
                else ""
            )
            assert str(info.value) == (
                f"task {task_id} cannot move from {source} to {target}; "
                f"allowed from {source}: {allowed}{then}"
            )
            assert refs(repo) == before
    with pytest.raises(ValidationError, match="invalid station 'finished': use one of open, "):
        ledger.set_status("S-0", "finished")
    assert ledger.get_task("S-0")["status"] == "open"


def test_new_tasks_start_open_and_status_set_cli(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    assert json.loads(hydrate(repo, "status", "M-1", "--json").stdout)["status"] == "open"
    moved = hydrate(repo, "status", "M-1", "--set", "in_progress")
    assert (moved.returncode, moved.stdout, moved.stderr) == (
        0,
        "task M-1: open -> in_progress\n",
        "",
    )
    again = hydrate(repo, "status", "M-1", "--set", "in_progress")
    assert again.stdout == "task M-1 is already in_progress\n"
    as_json = hydrate(repo, "status", "M-1", "--set", "review", "--json")
    assert json.loads(as_json.stdout)["status"] == "review"


# -- status --------------------------------------------------------------------


def test_status_json_golden(repo: Path, fixed: Ledger, clock: Clock) -> None:
    make(fixed, token_budget=1000, tags=["api"], kind="fix", priority=1)
    fixed.add_context("M-1", "kept", "notes", priority=5)
    fixed.add_context("M-1", "short-lived", "chat", ttl=30)
    fixed.set_status("M-1", "in_progress")
    clock.tick(4)
    fixed.add_checkpoint("M-1", "did x", "ev", "do y", 1250)
    golden = {
        "task_id": "M-1",
        "title": "Add GET /healthz",
        "status": "in_progress",
        "kind": "fix",
        "priority": 1,
        "tags": ["api"],
        "archived": False,
        "attachments": 2,
        "assignee": "",
        "claimed_at": "",
        "taken_from": "",
        "parent": "",
        "live": 1,
        "expired": 1,
        "checkpoints": 1,
        "checkpoint": {
            "summary": "did x",
            "evidence": "ev",
            "next_step": "do y",
            "tokens": 1250,
            "at": "2027-01-15T08:04:00Z",
            "author": ME,
        },
        "token_budget": 1000,
        "metrics": {
            "reported_tokens": 1250,
            "measured_cash_cost": None,
            "measured_token_savings": None,
        },
        "budget_remaining": -250,
        "over_budget": True,
        "depends": [],
    }
    assert fixed.status("M-1", now=T0 + 3600) == golden
    # Before the TTL ran out, both attachments were live.
    early = fixed.status("M-1", now=T0 + 10)
    assert (early["live"], early["expired"]) == (2, 0)
    cli = hydrate(repo, "status", "M-1", "--json", "--now", "2027-01-15T09:00:00Z")
    assert (cli.returncode, cli.stderr) == (0, "")
    assert json.loads(cli.stdout) == golden
    human = hydrate(repo, "status", "M-1", "--now", "2027-01-15T09:00:00Z").stdout
    assert human.splitlines() == [
        "task M-1: Add GET /healthz",
        "status in_progress · kind fix · priority 1",
        "context: 2 attachment(s), 1 live, 1 expired",
        "tokens: 1250 of 1000 reported, OVER BUDGET by 250",
        "cash cost and token savings: not measured (git-hydrate does not see the model "
        "provider's usage)",
        f"latest checkpoint (#1, 1250 tokens, 2027-01-15T08:04:00Z, {ME}):",
        "  Summary: did x",
        "  Evidence: ev",
        "  Next step: do y",
    ]


def test_status_without_budget_or_checkpoint(ledger: Ledger) -> None:
    make(ledger)
    status = ledger.status("M-1")
    assert status["checkpoint"] is None and status["checkpoints"] == 0
    assert status["metrics"]["reported_tokens"] == 0
    assert (status["token_budget"], status["budget_remaining"], status["over_budget"]) == (
        0,
        None,
        False,
    )


def test_status_of_every_task_filtered_by_station(repo: Path, ledger: Ledger) -> None:
    make(ledger, "A-1", token_budget=10)
    make(ledger, "B-1", status="blocked")
    make(ledger, "C-1", status="review")
    assert [s["task_id"] for s in ledger.statuses()] == ["A-1", "B-1", "C-1"]
    assert [s["task_id"] for s in ledger.statuses(["blocked", "review"])] == ["B-1", "C-1"]
    assert [s["task_id"] for s in ledger.statuses("open")] == ["A-1"]
    with pytest.raises(ValidationError, match="invalid station"):
        ledger.statuses("nope")

    rows = hydrate(repo, "status", "--json", "--station", "review")
    assert [s["task_id"] for s in json.loads(rows.stdout)] == ["C-1"]
    assert json.loads(rows.stdout)[0] == ledger.status("C-1")
    human = hydrate(repo, "status")
    assert human.stdout.splitlines() == [
        "A-1\topen\tcode\tp2\t0 ctx\t0/10 tokens\tAdd GET /healthz",
        "B-1\tblocked\tcode\tp2\t0 ctx\t0 tokens\tAdd GET /healthz",
        "C-1\treview\tcode\tp2\t0 ctx\t0 tokens\tAdd GET /healthz",
    ]
    misuse = hydrate(repo, "status", "A-1", "--station", "open")
    assert misuse.returncode == 2 and "omit ID" in misuse.stderr
    assert hydrate(repo, "status", "--set", "done").returncode == 2


# -- history -------------------------------------------------------------------


def test_log_shows_every_kind_of_change_with_its_author(repo: Path) -> None:
    body = "The proxy sets X-Request-Id."
    digest = hashlib.sha256(body.encode()).hexdigest()
    steps = [
        ("Alice", ("task-add", "M-1", "--objective", "o", "--acceptance", "a", "--title", "T")),
        ("Bob", ("task-edit", "M-1", "--priority", "1", "--tag", "api")),
        ("Carol", ("context-add", "M-1", "--text", body, "--source-label", "notes")),
        (
            "Dave",
            ("context-add", "M-1", "--text", body, "--source-label", "notes", "--priority", "3"),
        ),
        ("Erin", ("status", "M-1", "--set", "in_progress")),
        ("Frank", ("checkpoint", "M-1", "--summary", "first\nsecond line", "--tokens", "42")),
        ("Grace", ("context-rm", "M-1", digest[:8])),
        ("Heidi", ("status", "M-1", "--set", "done")),
        ("Ivan", ("archive", "M-1")),
        ("Judy", ("unarchive", "M-1")),
    ]
    for name, args in steps:
        env = {
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": f"{name.lower()}@example.com",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": f"{name.lower()}@example.com",
        }
        result = hydrate(repo, *args, env=env)
        assert result.returncode == 0, (args, result)

    out = hydrate(repo, "log", "M-1", "--json")
    assert (out.returncode, out.stderr) == (0, "")
    entries = json.loads(out.stdout)
    assert [(e["who"], e["action"]) for e in entries] == [
        ("Judy <judy@example.com>", "unarchive"),
        ("Ivan <ivan@example.com>", "archive"),
        ("Heidi <heidi@example.com>", "status"),
        ("Grace <grace@example.com>", "context-rm"),
        ("Frank <frank@example.com>", "checkpoint"),
        ("Erin <erin@example.com>", "status"),
        ("Dave <dave@example.com>", "context-update"),
        ("Carol <carol@example.com>", "context-add"),
        ("Bob <bob@example.com>", "task-edit"),
        ("Alice <alice@example.com>", "task-add"),
    ]
    details = [e["details"] for e in entries]
    assert details[0] == {} and details[1] == {}
    assert details[2] == {"from": "in_progress", "to": "done"}
    assert details[3] == {"context": digest, "source": "notes"}
    assert details[4] == {"number": "1", "tokens": "42", "checkpoint_summary": "first"}
    assert details[6] == {"context": digest, "source": "notes", "priority": "3"}
    assert details[7] == {"context": digest, "source": "notes", "priority": "0"}
    assert details[8] == {"fields": "priority, tags"}
    assert details[9] == {"title": "T", "status": "open"}
    assert [e["commit"] for e in entries] == git(
        repo, "rev-list", "refs/hydrate/tasks/M-1"
    ).split()
    # The checkpoint's author is recorded in the task document as well.
    assert (
        json.loads(hydrate(repo, "status", "M-1", "--json").stdout)["checkpoint"]["author"]
        == "Frank <frank@example.com>"
    )

    human = hydrate(repo, "log", "M-1", "-n", "6")
    lines = human.stdout.splitlines()
    assert len(lines) == 6
    assert lines[0].endswith("  Judy <judy@example.com>  unarchive M-1")
    assert lines[4].endswith("  Frank <frank@example.com>  checkpoint M-1 #1 (42 tokens): first")
    assert lines[5].endswith("  Erin <erin@example.com>  status M-1 open -> in_progress")
    assert lines[0][:12] == entries[0]["commit"][:12]
    fsck(repo)


def test_log_json_golden(repo: Path, fixed: Ledger, clock: Clock) -> None:
    make(fixed)
    clock.tick(1)
    fixed.set_status("M-1", "in_progress")
    clock.tick(2)
    fixed.add_checkpoint("M-1", "did x", "ev", "next", 7)
    commits = git(repo, "rev-list", "refs/hydrate/tasks/M-1").split()
    assert fixed.log("M-1") == [
        {
            "commit": commits[0],
            "when": "2027-01-15T08:03:00Z",
            "who": ME,
            "action": "checkpoint",
            "summary": "checkpoint M-1 #1 (7 tokens)",
            "details": {"number": "1", "tokens": "7", "checkpoint_summary": "did x"},
        },
        {
            "commit": commits[1],
            "when": "2027-01-15T08:01:00Z",
            "who": ME,
            "action": "status",
            "summary": "status M-1 open -> in_progress",
            "details": {"from": "open", "to": "in_progress"},
        },
        {
            "commit": commits[2],
            "when": "2027-01-15T08:00:00Z",
            "who": ME,
            "action": "task-add",
            "summary": "task-add M-1",
            "details": {"title": "Add GET /healthz", "status": "open"},
        },
    ]
    assert fixed.log("M-1", limit=1)[0]["action"] == "checkpoint"
    with pytest.raises(ValidationError):
        fixed.log("M-1", limit=0)
    with pytest.raises(NotFound):
        fixed.log("NOPE")


def test_trailer_values_stay_one_line(repo: Path, ledger: Ledger) -> None:
    make(ledger)
    ledger.add_checkpoint("M-1", "line one\nHydrate-Action: forged", "e", "n", 1)
    message = git(repo, "log", "-1", "--format=%B", "refs/hydrate/tasks/M-1")
    assert "Hydrate-Action: forged" not in message
    assert ledger.log("M-1")[0]["action"] == "checkpoint"


# -- list filters --------------------------------------------------------------


def test_list_filters(repo: Path, ledger: Ledger) -> None:
    make(ledger, "A-1", kind="fix", tags=["api", "urgent"])
    make(ledger, "B-1", kind="code", tags=["api"], status="review")
    make(ledger, "C-1", kind="planning", status="review")

    def ids(**filters: object) -> list[str]:
        return [t["task_id"] for t in ledger.list_tasks(**filters)]  # type: ignore[arg-type]

    assert ids() == ["A-1", "B-1", "C-1"]
    assert ids(status="review") == ["B-1", "C-1"]
    assert ids(status=["open", "review"]) == ["A-1", "B-1", "C-1"]
    assert ids(kind="fix") == ["A-1"]
    assert ids(kind=["fix", "planning"]) == ["A-1", "C-1"]
    assert ids(tag="api") == ["A-1", "B-1"]
    assert ids(tag=["api", "urgent"]) == ["A-1"]
    assert ids(status="review", tag="api") == ["B-1"]
    assert ids(status="done") == []
    with pytest.raises(ValidationError, match="invalid station 'later'"):
        ledger.list_tasks(status="later")
    with pytest.raises(ValidationError, match="invalid kind"):
        ledger.list_tasks(kind="chore")

    out = hydrate(repo, "list", "--status", "review", "--tag", "api")
    assert (out.returncode, out.stderr) == (0, "")
    assert out.stdout.startswith("B-1\treview\tcode\t") and out.stdout.count("\n") == 1
    # (status spells the filter --station: list takes that spelling too, explorer13)
    assert hydrate(repo, "list", "--station", "review", "--tag", "api").stdout == out.stdout
    out = hydrate(repo, "list", "--kind", "fix", "--kind", "planning", "--json")
    assert [t["task_id"] for t in json.loads(out.stdout)] == ["A-1", "C-1"]
    bad = hydrate(repo, "list", "--status", "later")
    assert bad.returncode == 2  # a usage error, like a bad --kind
    assert bad.stderr.startswith(
        "error: Invalid value for '--status' / '--station': 'later' is not"
    )
    assert bad.stdout == ""


# -- archive -------------------------------------------------------------------


def test_archive_and_unarchive_round_trip_survives_gc(repo: Path) -> None:
    body = "Edge notes that must survive gc.\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    for task_id in ("D-1", "D-2", "O-1"):
        hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a", "--tag", "t")
        hydrate(repo, "add", task_id, "--text", body + task_id, "--source-label", "notes")
    hydrate(repo, "add", "D-1", "--text", body, "--source-label", "edge")
    hydrate(repo, "status", "D-1", "--set", "in_progress")
    hydrate(repo, "status", "D-1", "--set", "done")
    hydrate(repo, "status", "D-2", "--set", "cancelled")
    before_show = json.loads(hydrate(repo, "show", "D-1", "--json").stdout)

    done = hydrate(repo, "archive", "--done")
    assert (done.returncode, done.stdout, done.stderr) == (0, "archived 2: D-1, D-2\n", "")
    names = [line.split()[-1] for line in refs(repo).splitlines()]
    assert names == [
        "refs/heads/main",
        "refs/hydrate/archive",
        "refs/hydrate/tasks/O-1",
    ]
    listed = json.loads(hydrate(repo, "list", "--archived", "--json").stdout)
    assert [(t["task_id"], t["status"], t["attachments"]) for t in listed] == [
        ("D-1", "done", 2),
        ("D-2", "cancelled", 1),
    ]
    assert listed[0]["archived_by"] == ME
    assert [t["task_id"] for t in json.loads(hydrate(repo, "list", "--json").stdout)] == ["O-1"]
    assert (
        hydrate(repo, "list", "--archived", "--status", "cancelled").stdout.split("\t")[0] == "D-2"
    )

    # The archive's tree: an index, and each task's tree.
    index = json.loads(git(repo, "cat-file", "-p", "refs/hydrate/archive:index.json"))
    assert sorted(index["tasks"]) == ["D-1", "D-2"] and index["format"] == 1
    assert git(repo, "rev-parse", "refs/hydrate/archive:tasks/D-1") == git(
        repo, "rev-parse", f"{index['tasks']['D-1']['tip']}^{{tree}}"
    )
    first_parent = git(repo, "log", "--first-parent", "--format=%s", "refs/hydrate/archive")
    assert first_parent.splitlines() == [
        "hydrate: archive 2 tasks (D-1, D-2)",
        "hydrate: start the archive",
    ]

    # Only the archive keeps the bodies now: expire reflogs and prune everything else.
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    fsck(repo)
    shown = hydrate(repo, "show", "D-1", "--json")
    assert shown.returncode == 0, shown
    archived_view = json.loads(shown.stdout)
    assert archived_view["archived"] is True
    assert archived_view["context"] == before_show["context"]
    assert hydrate(repo, "show", "D-1").stdout.startswith("task D-1 (archived): o\n")
    assert (
        git(repo, "cat-file", "-p", f"refs/hydrate/archive:tasks/D-1/bodies/{digest[:2]}/{digest}")
        == body
    )
    log = json.loads(hydrate(repo, "log", "D-1", "--json").stdout)
    assert [e["action"] for e in log][:3] == ["archive", "status", "status"]
    status = json.loads(hydrate(repo, "status", "D-1", "--json").stdout)
    assert (status["archived"], status["status"], status["attachments"]) == (True, "done", 2)

    back = hydrate(repo, "unarchive", "D-1")
    assert (back.returncode, back.stdout, back.stderr) == (0, "restored task D-1 (done): o\n", "")
    assert [
        t["task_id"] for t in json.loads(hydrate(repo, "list", "--archived", "--json").stdout)
    ] == ["D-2"]
    assert "refs/hydrate/tasks/D-1" in refs(repo)
    restored = json.loads(hydrate(repo, "show", "D-1", "--json").stdout)
    assert restored["archived"] is False and restored["context"] == before_show["context"]
    packed = json.loads(hydrate(repo, "pack", "D-1").stdout)["packet"]
    assert sorted(c["body"] for c in packed["context"]) == sorted([body, body + "D-1"])
    assert json.loads(git(repo, "cat-file", "-p", "refs/hydrate/archive:index.json"))[
        "tasks"
    ].keys() == {"D-2"}
    assert git(repo, "ls-tree", "--name-only", "refs/hydrate/archive:tasks").split() == ["D-2"]
    # The restored task is writable again; its history continues.
    assert hydrate(repo, "status", "D-1", "--set", "open").returncode == 0
    assert [e["action"] for e in json.loads(hydrate(repo, "log", "D-1", "--json").stdout)][:3] == [
        "status",
        "unarchive",
        "archive",
    ]
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    fsck(repo)
    assert hydrate(repo, "show", "D-2").returncode == 0


def test_archive_named_tasks_and_refusals_write_nothing(repo: Path, ledger: Ledger) -> None:
    make(ledger, "D-1", status="done")
    make(ledger, "O-1")
    before = refs(repo)
    with pytest.raises(Conflict, match="task O-1 is open; only done or cancelled"):
        ledger.archive(["D-1", "O-1"])
    with pytest.raises(NotFound, match="no task 'X-9'"):
        ledger.archive(["D-1", "X-9"])
    with pytest.raises(ValidationError, match="name the tasks"):
        ledger.archive([])
    assert refs(repo) == before
    assert ledger.archive(["D-1"]) == {"archived": ["D-1"], "already_archived": [], "damaged": []}
    assert ledger.archive(["D-1"]) == {"archived": [], "already_archived": ["D-1"], "damaged": []}
    assert ledger.archive(done=True) == {"archived": [], "already_archived": [], "damaged": []}
    assert ledger.list_tasks(archived=True)[0]["task_id"] == "D-1"
    fsck(repo)


def test_an_archived_task_lists_its_holder_and_parent(repo: Path, ledger: Ledger) -> None:
    """``list --archived --json`` rows carry ``assignee`` and ``parent`` as ``list``'s
    do (they were missing: the archive's index does not hold them), also for an
    archive listed again (its cache) and on the web board's archived cards."""
    make(ledger, "P-1")
    make(ledger, "C-1", parent="P-1")
    ledger.claim("C-1", holder="ana")
    ledger.set_status("C-1", "done")
    make(ledger, "D-1", status="done")
    ledger.archive(["C-1", "D-1"])
    for _ in range(2):  # (read from the archived commits, then from the cache)
        listed = json.loads(hydrate(repo, "list", "--archived", "--json").stdout)
        assert [(t["task_id"], t["assignee"], t["parent"]) for t in listed] == [
            ("C-1", "ana", "P-1"),
            ("D-1", "", ""),
        ]
    assert (Path(ledger.refs.repo.common_dir) / "hydrate" / "archive-list-cache").is_file()


def test_archived_tasks_are_read_only_until_unarchived(repo: Path, ledger: Ledger) -> None:
    make(ledger, "D-1", status="done")
    ledger.archive(["D-1"])
    before = refs(repo)
    hint = "task D-1 is archived; bring it back with: git hydrate unarchive D-1"
    for call in (
        lambda: ledger.edit_task("D-1", title="x"),
        lambda: ledger.add_context("D-1", "body", "s"),
        lambda: ledger.set_status("D-1", "open"),
        lambda: ledger.add_checkpoint("D-1", "s", "e", "n", 1),
        lambda: ledger.pack("D-1"),
    ):
        with pytest.raises(NotFound) as info:
            call()
        assert str(info.value) == hint
    with pytest.raises(Conflict, match="task D-1 is archived"):
        make(ledger, "D-1")
    with pytest.raises(Conflict, match="differs from archived task 'D-1' only by case"):
        make(ledger, "d-1")
    with pytest.raises(NotFound, match="not in the archive"):
        ledger.unarchive("O-9")
    assert refs(repo) == before
    assert ledger.unarchive("D-1")["status"] == "done"
    with pytest.raises(Conflict, match="not archived; it is live"):
        ledger.unarchive("D-1")
    assert ledger.set_status("D-1", "open")["changed"] is True


def test_cli_bad_input_is_one_line_and_writes_nothing(repo: Path) -> None:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "checkpoint", "M-1", "--summary", "s", "--tokens", "10")
    cases = [
        (("status", "NOPE-1"), 1, "no task 'NOPE-1'"),
        (("status", "M-1", "--set", "finished"), 2, "'finished' is not one of 'open', "),
        (("status", "M-1", "--set", "done"), 1, "allowed from open: in_progress, blocked"),
        (("status", "--station", "nope"), 2, "'nope' is not one of 'open', "),
        (("checkpoint", "NOPE-1", "--summary", "s", "--tokens", "1"), 1, "no task 'NOPE-1'"),
        (
            ("checkpoint", "M-1", "--summary", "s", "--tokens", "9"),
            1,
            "lower than the 10 already reported",
        ),
        (("checkpoint", "M-1", "--summary", "s", "--tokens", "-5"), 2, "-5"),
        (("checkpoint", "M-1", "--summary", "", "--tokens", "11"), 1, "must not be empty"),
        (("checkpoint", "M-1", "--tokens", "11"), 2, "--summary"),
        (("log", "NOPE-1"), 1, "no task 'NOPE-1'"),
        (("archive", "M-1"), 1, "only done or cancelled"),
        (("archive",), 2, "--done"),
        (("unarchive", "M-1"), 1, "not archived"),
        (("list", "--kind", "chore"), 2, "chore"),
    ]
    before = refs(repo)
    for args, code, text in cases:
        result = hydrate(repo, *args)
        assert result.returncode == code, (args, result)
        assert text in result.stderr, (args, result)
        assert result.stdout == "", (args, result)
        assert "Traceback" not in result.stderr
        if code == 1:
            assert len(result.stderr.strip().splitlines()) == 1, (args, result)
            assert result.stderr.startswith("error: ")
    assert refs(repo) == before


def test_archive_in_a_sha256_repository(tmp_path: Path) -> None:
    path = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(path))
    with Ledger(path) as ledger:
        make(ledger, "D-1", status="done")
        ledger.add_context("D-1", "body", "s")
        ledger.add_checkpoint("D-1", "s", "e", "n", 3)
        ledger.archive(done=True)
        assert len(git(path, "rev-parse", "refs/hydrate/archive").strip()) == 64
        assert ledger.status("D-1")["archived"] is True
        assert [e["action"] for e in ledger.log("D-1")][:2] == ["archive", "checkpoint"]
        assert ledger.unarchive("D-1")["attachments"] == 1
    fsck(path)


def test_stale_ref_transaction_changes_nothing(repo: Path, ledger: Ledger) -> None:
    from git_hydrate.store import RefRace

    make(ledger, "A-1")
    make(ledger, "B-1")
    a = git(repo, "rev-parse", "refs/hydrate/tasks/A-1").strip().encode()
    b = git(repo, "rev-parse", "refs/hydrate/tasks/B-1").strip().encode()
    before = refs(repo)
    with pytest.raises(RefRace):
        ledger.repo.update_refs(
            [(b"refs/hydrate/tasks/A-1", a, None), (b"refs/hydrate/tasks/B-1", a, None)],
            "test",
        )
    assert refs(repo) == before
    ledger.repo.update_refs(
        [(b"refs/hydrate/tasks/A-1", a, None), (b"refs/hydrate/tasks/B-1", b, None)],
        "test",
    )
    assert ledger.task_ids() == []


def test_lifecycle_commands_have_help_with_an_example(repo: Path) -> None:
    for command in ("status", "checkpoint", "log", "archive", "unarchive", "list"):
        result = hydrate(repo, command, "-h")
        assert result.returncode == 0, result
        assert "Example" in result.stdout and result.stderr == ""


def _spawn(repo: Path, script: str, *args: str) -> subprocess.Popen[str]:
    from tests.conftest import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [*python_command(), "-c", script, *args],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_archiving_under_concurrent_checkpoints_loses_nothing(repo: Path) -> None:
    with Ledger(repo) as ledger:
        make(ledger, "D-1", status="done")
    writer = _spawn(
        repo,
        # A busy worker: a checkpoint every few milliseconds until the task is gone.
        "import random, time\n"
        "from git_hydrate import Ledger, NotFound\n"
        "n = 0\n"
        "with Ledger('.') as led:\n"
        "    for i in range(1, 2000):\n"
        "        try:\n"
        "            led.add_checkpoint('D-1', f'c{i}', '', '', i)\n"
        "        except NotFound:\n"
        "            break\n"
        "        n = i\n"
        "        time.sleep(random.uniform(0, 0.01))\n"
        "print(n)\n",
    )
    with Ledger(repo) as ledger:
        deadline = time.monotonic() + 30
        while len(git(repo, "rev-list", "refs/hydrate/tasks/D-1").split()) < 10:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert ledger.archive(done=True)["archived"] == ["D-1"]
    out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    written = int(out)
    with Ledger(repo) as ledger:
        status = ledger.status("D-1")
        assert status["archived"] is True
        assert status["checkpoints"] == written
        assert status["metrics"]["reported_tokens"] == written
    fsck(repo)


def test_concurrent_archivers_both_land(repo: Path) -> None:
    with Ledger(repo) as ledger:
        for n in range(12):
            make(ledger, f"D-{n}", status="done")
    script = (
        "import sys\n"
        "from git_hydrate import Ledger\n"
        "with Ledger('.') as led:\n"
        "    for task_id in sys.argv[1:]:\n"
        "        led.archive([task_id])\n"
    )
    procs = [
        _spawn(repo, script, *[f"D-{n}" for n in range(0, 12, 2)]),
        _spawn(repo, script, *[f"D-{n}" for n in range(1, 12, 2)]),
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    with Ledger(repo) as ledger:
        assert ledger.task_ids() == []
        assert len(ledger.list_tasks(archived=True)) == 12
    assert len(git(repo, "rev-list", "--first-parent", "refs/hydrate/archive").split()) == 13
    fsck(repo)


def test_damaged_or_newer_archive_is_a_clear_error(repo: Path) -> None:
    with Ledger(repo) as ledger:
        make(ledger, "D-1", status="done")
        ledger.archive(["D-1"])
    cases = [
        ('{"format":2,"tasks":{}}', "stored format 2 is newer than this git-hydrate"),
        (
            '{"format":1,"tasks":{"D-1":{"tip":"zz","title":"t","status":"done",'
            '"kind":"code","priority":2}}}',
            "at `$.tasks[...].tip`",
        ),
        ("not json", "JSON is malformed"),
    ]
    for index, reason in cases:
        blob = git(repo, "hash-object", "-w", "--stdin", input=index).strip()
        tree = git(repo, "mktree", input=f"100644 blob {blob}\tindex.json\n").strip()
        commit = git(repo, "commit-tree", tree, "-p", "refs/hydrate/archive", "-m", "x").strip()
        git(repo, "update-ref", "refs/hydrate/archive", commit)
        before = refs(repo)
        for args in (("list", "--archived"), ("show", "D-1"), ("unarchive", "D-1")):
            result = hydrate(repo, *args)
            assert result.returncode == 1, (index, args, result)
            assert result.stderr.startswith("error: refs/hydrate/archive: index.json: ")
            assert reason in result.stderr, (index, args, result)
            assert len(result.stderr.splitlines()) == 1 and result.stdout == ""
        assert refs(repo) == before


def test_log_walks_merges_and_foreign_commits_once(repo: Path, ledger: Ledger) -> None:
    make(ledger)
    first = git(repo, "rev-parse", "refs/hydrate/tasks/M-1").strip()
    ledger.edit_task("M-1", priority=1)
    ours = git(repo, "rev-parse", "refs/hydrate/tasks/M-1").strip()
    theirs = git(
        repo, "commit-tree", f"{first}^{{tree}}", "-p", first, "-m", "edited elsewhere"
    ).strip()
    merge = git(
        repo, "commit-tree", f"{ours}^{{tree}}", "-p", ours, "-p", theirs, "-m", "merge"
    ).strip()
    git(repo, "update-ref", "refs/hydrate/tasks/M-1", merge, ours)
    entries = ledger.log("M-1")
    assert sorted(e["commit"] for e in entries) == sorted([first, ours, theirs, merge])
    assert entries[0] == {
        "commit": merge,
        "when": entries[0]["when"],
        "who": ME,
        "action": "merge",
        "summary": "merge",
        "details": {},
    }
    assert entries[-1]["action"] == "task-add"
    assert {e["action"] for e in entries[1:3]} == {"commit", "task-edit"}


def test_reported_tokens_are_the_maximum_after_merged_checkpoints(repo: Path) -> None:
    """Merging concurrent checkpoints can leave a smaller total last in time order."""
    with Ledger(repo) as ledger:
        make(ledger, "M-9")
        ledger.add_checkpoint("M-9", "first", tokens=100)
        ledger.add_checkpoint("M-9", "second", tokens=300)
    ref = "refs/hydrate/tasks/M-9"
    task = json.loads(git(repo, "cat-file", "-p", f"{ref}:task.json"))
    task["checkpoints"] = list(reversed(task["checkpoints"]))  # 300, then 100
    blob = git(repo, "hash-object", "-w", "--stdin", input=json.dumps(task)).strip()
    links = git(repo, "rev-parse", f"{ref}:links.json").strip()
    tree = git(
        repo, "mktree", input=f"100644 blob {links}\tlinks.json\n100644 blob {blob}\ttask.json\n"
    ).strip()
    commit = git(repo, "commit-tree", tree, "-p", ref, "-m", "merged").strip()
    git(repo, "update-ref", ref, commit)
    with Ledger(repo) as ledger:
        assert ledger.status("M-9")["metrics"]["reported_tokens"] == 300
        with pytest.raises(Conflict, match="lower than the 300 already reported"):
            ledger.add_checkpoint("M-9", "third", tokens=200)
        ledger.add_checkpoint("M-9", "third", tokens=300)


def test_statuses_answer_from_the_cache_and_follow_changes_and_the_clock(repo: Path) -> None:
    cache = repo / ".git" / "hydrate" / "status-cache"
    with Ledger(repo) as ledger:
        make(ledger, "S-1")
        make(ledger, "S-2")
        ledger.add_context("S-1", "expiring note", "src", ttl=100)
        now = ledger.refs.clock()
        cold = ledger.statuses(now=now)
        assert cache.exists()
        warm = ledger.statuses(now=now)
        assert warm == cold == [ledger.status("S-1", now=now), ledger.status("S-2", now=now)]
        later = ledger.statuses(now=now + 1000)  # the same cached parts, judged later
        assert (later[0]["live"], later[0]["expired"]) == (0, 1)
        ledger.add_checkpoint("S-2", "did it", tokens=42)
        after = {s["task_id"]: s for s in ledger.statuses(now=now)}
        assert after["S-2"]["metrics"]["reported_tokens"] == 42
        assert after["S-2"] == ledger.status("S-2", now=now)
    cache.write_bytes(b"garbage")
    with Ledger(repo) as ledger:
        assert {s["task_id"] for s in ledger.statuses(now=now)} == {"S-1", "S-2"}
