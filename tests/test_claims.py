"""Dependencies, the ready queue and claims: locally, and through real remotes
(a bare repository over file:// and a real `git daemon` over git://)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import msgspec
import pytest

from git_hydrate import Ledger, codec
from git_hydrate import sync as hsync
from git_hydrate.errors import NotFound
from git_hydrate.merge import Side, merge_states
from git_hydrate.model import Task

from .conftest import ROOT, fsck, git, hydrate
from .test_sync import clone, daemon, remote  # noqa: F401  (fixtures)
from .wrapper import python_command

T0 = 1_800_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def add(ledger: Ledger, task_id: str, **fields: Any) -> None:
    ledger.add_task(task_id, f"do {task_id}", "works", **fields)


# -- storage ------------------------------------------------------------------------


def test_unused_coordination_fields_are_not_written() -> None:
    plain = Task(id="A", title="t", objective="o", acceptance="a")
    data = codec.encode(plain)
    for name in codec.OPTIONAL_TASK_FIELDS:
        assert f'"{name}"'.encode() not in data
    assert Task.__struct_fields__[-len(codec.OPTIONAL_TASK_FIELDS) :] == codec.OPTIONAL_TASK_FIELDS
    held = msgspec.structs.replace(
        plain, depends_on=["B"], assignee="x", claimed_at="2027-01-01T00:00:00Z"
    )
    encoded = codec.encode(held)
    assert encoded.endswith(
        b',"depends_on":["B"],"assignee":"x","claimed_at":"2027-01-01T00:00:00Z"}\n'
    )
    assert codec.decode_task(encoded, "t") == held
    # A value that spells a default tail inside a string is not touched.
    tricky = msgspec.structs.replace(plain, title=',"assignee":""', assignee="y")
    assert codec.decode_task(codec.encode(tricky), "t") == tricky


# -- dependencies ---------------------------------------------------------------------


def test_dependencies_are_stored_shown_and_cycles_refused(repo: Path) -> None:
    assert hydrate(repo, "task-add", "A", "--objective", "o", "--acceptance", "a").returncode == 0
    made = hydrate(
        repo, "task-add", "B", "--objective", "o", "--acceptance", "a",
        "--depends-on", "A", "--depends-on", "LATER", "--depends-on", "A",
    )  # fmt: skip
    assert made.returncode == 0, made
    shown = json.loads(hydrate(repo, "show", "B", "--json").stdout)
    assert shown["depends_on"] == ["A", "LATER"]
    assert "depends on: A, LATER" in hydrate(repo, "show", "B").stdout
    cycle = hydrate(repo, "task-edit", "A", "--depends-on", "B")
    assert cycle.returncode == 1
    assert cycle.stderr.strip() == "error: dependency cycle: A -> B -> A"
    self_dep = hydrate(repo, "task-edit", "A", "--depends-on", "A")
    assert self_dep.returncode == 1 and "cannot depend on itself" in self_dep.stderr
    bad = hydrate(repo, "task-edit", "A", "--depends-on", "no/slash")
    assert bad.returncode == 1 and "invalid task id" in bad.stderr
    assert json.loads(hydrate(repo, "show", "A", "--json").stdout)["depends_on"] == []
    # The packet of expand carries them; pack's key set stays the seed's.
    expanded = json.loads(hydrate(repo, "expand", "B", "--json").stdout)["packet"]
    assert expanded["depends_on"] == ["A", "LATER"]
    packed = json.loads(hydrate(repo, "pack", "B", "--json").stdout)
    assert "depends_on" not in packed["packet"]
    # An unknown dependency is allowed and reported, without failing doctor.
    doctor = hydrate(repo, "doctor")
    assert doctor.returncode == 0, doctor
    assert "note    B: depends on LATER, which is not here" in doctor.stdout
    cleared = hydrate(repo, "task-edit", "B", "--no-depends-on")
    assert cleared.returncode == 0, cleared
    assert json.loads(hydrate(repo, "show", "B", "--json").stdout)["depends_on"] == []
    both = hydrate(repo, "task-edit", "B", "--no-depends-on", "--depends-on", "A")
    assert both.returncode == 0, both  # (as --no-tag --tag T: just those given)
    assert json.loads(hydrate(repo, "show", "B", "--json").stdout)["depends_on"] == ["A"]


def test_a_cycle_made_by_a_merge_is_a_doctor_problem_and_never_ready(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    with Ledger(a) as la:
        add(la, "X")
        add(la, "Y")
        assert hsync.push(la.refs).ok
    with Ledger(b) as lb:
        assert hsync.pull(lb.refs).ok
        lb.edit_task("X", depends_on=["Y"])  # each side closes half of the loop
    with Ledger(a) as la:
        la.edit_task("Y", depends_on=["X"])
        assert hsync.sync(la.refs).ok
    with Ledger(b) as lb:
        assert hsync.sync(lb.refs).ok
        assert lb.ready() == []
        # Both open: claim named the other as what X waits for, not the cycle that
        # makes it wait for ever (explorer10).
        with pytest.raises(Exception, match=r"on a dependency cycle \(X -> Y -> X\)"):
            lb.claim("X", holder="bob")
        # Found in review: claim took a task on a cycle once the others were done.
        lb.set_status("Y", "in_progress")
        lb.set_status("Y", "done")
        assert lb.ready() == []
        with pytest.raises(Exception, match=r"on a dependency cycle \(X -> Y -> X\)"):
            lb.claim("X", holder="bob")
    report = json.loads(hydrate(b, "doctor", "--json").stdout)
    problems = {t["task_id"]: t["problems"] for t in report["tasks"]}
    assert any("dependency cycle X -> Y -> X" in p for p in problems["X"])
    assert any("dependency cycle Y -> X -> Y" in p for p in problems["Y"])
    assert hydrate(b, "doctor").returncode == 1


# -- the ready queue -------------------------------------------------------------------


def test_an_empty_queue_names_what_the_nearest_tasks_wait_for(repo: Path) -> None:
    # issue 34: claim --next and ready say why nothing is ready, at most three tasks
    with Ledger(repo) as ledger:
        with pytest.raises(NotFound) as empty:
            ledger.claim(holder="w")
        assert str(empty.value) == (
            "no task is ready: no task is open (git hydrate list shows where each stands)"
        )
        add(ledger, "A")
        add(ledger, "B", depends_on=["A"])
        add(ledger, "C", depends_on=["A", "Z-9"], kind="fix")
        add(ledger, "D", depends_on=["B"])
        add(ledger, "E", depends_on=["B"])
        holder = "Ann Lee <ann@example.com>"
        since = ledger.claim("A", holder=holder)["claimed_at"]
        with pytest.raises(NotFound) as waiting:
            ledger.claim(holder="w")
        assert str(waiting.value) == (
            f"no task is ready: B waits for A, held by {holder} since {since}; "
            f"C waits for A, held by {holder} since {since} and Z-9 (not here); "
            "D waits for B (open); 1 more wait"
        )
        with pytest.raises(NotFound) as fixes:
            ledger.claim(holder="w", kind="fix")
        assert str(fixes.value) == (
            f"no task is ready: C waits for A, held by {holder} since {since} and Z-9 (not here)"
        )
        with pytest.raises(NotFound) as untagged:  # (open ones, none with the tag)
            ledger.claim(holder="w", tag="nope")
        assert str(untagged.value) == (
            "no task is ready: no open task has the kind or tag asked "
            "(git hydrate list shows them)"
        )
    # The release hint quotes the holder so that it can be pasted, and it works.
    refused = hydrate(repo, "release", "A", "--as", "w")
    assert refused.returncode == 1
    hint = refused.stderr.rstrip("\n").rpartition("(or, as its holder: ")[2].removesuffix(")")
    assert hint == "--as 'Ann Lee <ann@example.com>'"
    released = hydrate(repo, "release", "A", *shlex.split(hint))
    assert released.returncode == 0 and released.stdout.startswith("released A (held by Ann Lee")


def test_ready_orders_by_priority_then_age_and_filters(repo: Path) -> None:
    clock = Clock()
    with Ledger(repo, clock=clock) as ledger:
        for task_id, priority, kind, tags in (
            ("P3-FIRST", 3, "code", []),
            ("P1-OLDER", 1, "fix", ["api"]),
            ("P1-NEWER", 1, "code", ["api"]),
            ("P2", 2, "code", []),
        ):
            clock.now += 60
            add(ledger, task_id, priority=priority, kind=kind, tags=tags)
        clock.now += 60
        add(ledger, "BLOCKED", priority=1, depends_on=["P2"])
        add(ledger, "STARTED", priority=1)
        ledger.set_status("STARTED", "in_progress")  # not open: not ready
        order = ["P1-OLDER", "P1-NEWER", "P2", "P3-FIRST"]
        assert [item["task_id"] for item in ledger.ready()] == order
        assert [i["task_id"] for i in ledger.ready(kind="fix")] == ["P1-OLDER"]
        assert [i["task_id"] for i in ledger.ready(tag="api")] == ["P1-OLDER", "P1-NEWER"]
    out = hydrate(repo, "ready")
    assert out.returncode == 0
    assert [line.split("\t")[0] for line in out.stdout.splitlines()] == order
    listed = json.loads(hydrate(repo, "ready", "--json", "--tag", "api").stdout)
    assert [i["task_id"] for i in listed] == ["P1-OLDER", "P1-NEWER"]
    assert set(listed[0]) == {
        "task_id", "title", "status", "kind", "priority", "tags", "attachments",
        "created_at", "depends_on", "assignee", "claimed_at", "stale",
    }  # fmt: skip
    bad = hydrate(repo, "ready", "--include-stale", "soon")
    assert bad.returncode == 2 and "positive duration" in bad.stderr


def test_chain_and_diamond_become_ready_as_other_clones_finish(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    planner = clone(remote, tmp_path / "planner")
    workers = [clone(remote, tmp_path / f"w{i}") for i in range(2)]
    with Ledger(planner) as ledger:
        # chain C1 <- C2 <- C3; diamond D1 <- (D2, D3) <- D4
        add(ledger, "C1")
        add(ledger, "C2", depends_on=["C1"])
        add(ledger, "C3", depends_on=["C2"])
        add(ledger, "D1")
        add(ledger, "D2", depends_on=["D1"])
        add(ledger, "D3", depends_on=["D1"])
        add(ledger, "D4", depends_on=["D2", "D3"])
        assert hsync.push(ledger.refs).ok

    def ready_in(path: Path) -> list[str]:
        res = hydrate(path, "ready", "--remote", "origin", "--json")
        assert res.returncode == 0, res
        return sorted(item["task_id"] for item in json.loads(res.stdout))

    def finish(path: Path, task_id: str) -> None:
        assert hydrate(path, "claim", task_id, "--remote", "origin").returncode == 0
        with Ledger(path) as ledger:
            ledger.set_status(task_id, "done")
            assert hsync.sync(ledger.refs).ok

    assert ready_in(planner) == ["C1", "D1"]
    finish(workers[0], "C1")
    assert ready_in(workers[1]) == ["C2", "D1"]
    finish(workers[1], "D1")
    assert ready_in(planner) == ["C2", "D2", "D3"]
    finish(workers[0], "D2")
    assert ready_in(workers[1]) == ["C2", "D3"]  # D4 still waits for D3
    finish(workers[1], "D3")
    finish(workers[0], "C2")
    assert ready_in(planner) == ["C3", "D4"]
    # A dependency archived as done still counts as done.
    with Ledger(planner) as ledger:
        ledger.archive(["C2"])
        assert [i["task_id"] for i in ledger.ready()] == ["C3", "D4"]


# -- local claims ------------------------------------------------------------------------


def test_local_claim_release_and_the_station_that_goes_with_it(repo: Path) -> None:
    with Ledger(repo) as ledger:
        add(ledger, "A")
        add(ledger, "B", depends_on=["A"])
    res = hydrate(repo, "claim", "A", "--as", "agent-1")
    assert res.returncode == 0, res
    assert res.stdout == "claimed A for agent-1\n"
    again = hydrate(repo, "claim", "A", "--as", "agent-1", "--json")
    assert json.loads(again.stdout)["changed"] is False
    taken = hydrate(repo, "claim", "A", "--as", "agent-2")
    assert taken.returncode == 1
    assert "task A is held by agent-1 since" in taken.stderr
    waiting = hydrate(repo, "claim", "B")
    assert waiting.returncode == 1
    assert waiting.stderr.strip() == "error: task B is not ready: it waits for A (in_progress)"
    listing = hydrate(repo, "list").stdout.splitlines()
    assert listing[0].split("\t")[1] == "in_progress (agent-1)"
    assert json.loads(hydrate(repo, "list", "--json").stdout)[0]["assignee"] == "agent-1"
    assert "held by agent-1 since" in hydrate(repo, "show", "A").stdout
    assert "held by agent-1" in hydrate(repo, "status", "A").stdout
    nothing = hydrate(repo, "claim", "--next")
    since = json.loads(hydrate(repo, "show", "A", "--json").stdout)["claimed_at"]
    why = f"no task is ready: B waits for A, held by agent-1 since {since}"
    assert nothing.returncode == 1 and nothing.stderr == f"error: {why}\n"
    assert hydrate(repo, "ready").stderr == f"{why}\n"
    # Only the holder releases (or --force); the task is open again.
    refused = hydrate(repo, "release", "A", "--as", "agent-2")
    assert refused.returncode == 1
    assert refused.stderr == (
        "error: task A is held by agent-1, not agent-2: only its holder releases it; "
        "to release it anyway: git hydrate release A --force (or, as its holder: --as agent-1)\n"
    )
    released = hydrate(repo, "release", "A", "--as", "agent-1", "--json")
    assert json.loads(released.stdout) == {
        "task_id": "A",
        "released": "agent-1",
        "status": "open",
        "changed": True,
        "remote": None,
    }
    assert hydrate(repo, "claim", "--next", "--as", "agent-2").stdout == "claimed A for agent-2\n"
    assert hydrate(repo, "release", "A", "--force").returncode == 0
    # Moving a task back to open ends its claim; the default holder is the git identity.
    assert hydrate(repo, "claim", "A").stdout.startswith("claimed A for Hydrate Tester <")
    assert hydrate(repo, "status", "A", "--set", "open").returncode == 0
    assert json.loads(hydrate(repo, "show", "A", "--json").stdout)["assignee"] == ""
    message = git(repo, "log", "-1", "--format=%B", "refs/hydrate/tasks/A")
    assert "Hydrate-Released: Hydrate Tester <tester@example.com>" in message
    # Usage errors.
    assert hydrate(repo, "claim").returncode == 2
    assert hydrate(repo, "claim", "A", "--next").returncode == 2
    assert hydrate(repo, "claim", "A", "--kind", "fix").returncode == 2
    assert hydrate(repo, "claim", "A", "--as", "two\nlines").returncode == 1
    assert hydrate(repo, "claim", "NOPE").returncode == 1
    no_current = hydrate(repo, "claim", "@")
    assert no_current.returncode == 1 and "current task" in no_current.stderr
    fsck(repo)


def test_stale_claims_are_listed_and_stolen_only_when_stale(repo: Path) -> None:
    clock = Clock()
    with Ledger(repo, clock=clock) as ledger:
        add(ledger, "A")
        ledger.claim("A", holder="gone-agent")
        clock.now += 3 * 3600
        assert ledger.ready(include_stale=4 * 3600) == []
        with pytest.raises(Exception, match="not stale, so not taken"):
            ledger.claim("A", holder="me", steal=True, stale_after=4 * 3600)
        with pytest.raises(Exception, match="held by gone-agent"):
            ledger.claim("A", holder="me")
        stale = ledger.ready(include_stale=2 * 3600)
        assert [(i["task_id"], i["stale"], i["assignee"]) for i in stale] == [
            ("A", True, "gone-agent")
        ]
        # A checkpoint is a sign of life: the claim is fresh again.
        ledger.add_checkpoint("A", "still here", tokens=10)
        clock.now += 3600
        assert ledger.ready(include_stale=2 * 3600) == []
        clock.now += 2 * 3600
        taken = ledger.claim(None, holder="me", steal=True, stale_after=2 * 3600)
        assert (taken["task_id"], taken["assignee"], taken["taken_from"]) == (
            "A",
            "me",
            "gone-agent",
        )
    message = git(repo, "log", "-1", "--format=%B", "refs/hydrate/tasks/A")
    assert "Hydrate-Taken-From: gone-agent" in message
    assert "taken from gone-agent" in hydrate(repo, "show", "A").stdout


# -- claims through a remote ----------------------------------------------------------------


def test_claim_through_a_remote_names_the_holder_to_the_loser(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    with Ledger(a) as la:
        add(la, "T-1")
        assert hsync.push(la.refs).ok
    with Ledger(b) as lb:
        assert hsync.pull(lb.refs).ok  # b has seen T-1 unclaimed
    # hydrate.claimRemote makes the remote the default; --local overrides it.
    git(b, "config", "hydrate.claimRemote", "origin")
    assert json.loads(hydrate(b, "ready", "--json").stdout)[0]["task_id"] == "T-1"
    assert hydrate(b, "claim", "T-1", "--local", "--remote", "origin").returncode == 2
    unknown = hydrate(a, "claim", "T-1", "--remote", "nowhere")
    assert unknown.returncode == 1
    assert unknown.stderr == (
        "error: no remote named 'nowhere' (configured remotes: origin); or give a URL\n"
    )
    won = hydrate(a, "claim", "T-1", "--remote", "origin", "--as", "alice", "--json")
    assert won.returncode == 0, won
    assert json.loads(won.stdout)["remote"] == "origin"
    # b claims with an out-of-date view: the claim pulls first and refuses.
    lost = hydrate(b, "claim", "T-1", "--as", "bob")  # through hydrate.claimRemote
    assert lost.returncode == 1
    assert "task T-1 is held by alice since" in lost.stderr
    # And when the remote moves between b's pull and b's push, the remote refuses the
    # push itself: b's own ref is untouched and it reports the holder after a new pull.
    with Ledger(b) as lb:
        tip_before = lb.refs.tip("T-1")
        assert lb.release("T-1", holder="alice", remote="origin")["changed"]
        _tip, commit, _result = lb.refs.prepare("T-1", lambda state: _claimed_by(state, "bob"))
        with Ledger(a) as la:
            la.claim("T-1", holder="carol", remote="origin")
        from git_hydrate import claims

        where = hsync.resolve_remote(lb.refs, "origin")
        assert commit is not None
        assert claims._publish(lb.refs, where, "T-1", commit) is False
        assert lb.refs.tip("T-1") != tip_before  # the release landed here
        with pytest.raises(Exception, match="held by carol"):
            lb.claim("T-1", holder="bob", remote="origin")
    fsck(a)
    fsck(b)


def _claimed_by(state: Any, holder: str) -> Any:
    from git_hydrate.taskrefs import Change

    task = msgspec.structs.replace(
        state.task, assignee=holder, claimed_at="2027-01-01T00:00:00Z", status="in_progress"
    )
    return Change(task=task, links=state.links, message="hydrate: test claim\n", result=None)


def test_two_offline_claims_merge_the_same_way_on_every_clone(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    with Ledger(a) as la:
        add(la, "T-1")
        assert hsync.push(la.refs).ok
    with Ledger(b, clock=Clock(T0 + 60)) as lb:
        assert hsync.pull(lb.refs).ok
        lb.claim("T-1", holder="later-bob")  # offline: no remote
    with Ledger(a, clock=Clock(T0)) as la:
        la.claim("T-1", holder="early-alice")
        report = hsync.sync(la.refs)
        assert report.ok
    with Ledger(b) as lb:
        pulled = hsync.sync(lb.refs)
        assert pulled.ok
        merged = [o for o in pulled.outcomes if o.name == "T-1"]
        assert merged and any(c["field"] == "claim" for c in merged[0].conflicts)
        assert lb.get_task("T-1")["assignee"] == "early-alice"
        assert lb.get_task("T-1")["status"] == "in_progress"
    with Ledger(a) as la:
        assert hsync.sync(la.refs).ok
        assert la.get_task("T-1")["assignee"] == "early-alice"
    assert git(a, "rev-parse", "refs/hydrate/tasks/T-1") == git(
        b, "rev-parse", "refs/hydrate/tasks/T-1"
    )


def test_claim_merge_rules_are_symmetric() -> None:
    base = Task(id="T", title="t", objective="o", acceptance="a")

    def held(holder: str, at: str, status: str = "in_progress") -> Task:
        return msgspec.structs.replace(base, assignee=holder, claimed_at=at, status=status)

    cases = [
        (held("zed", "2027-01-01T00:00:00Z"), held("amy", "2027-01-01T00:00:05Z"), "zed"),
        (held("zed", "2027-01-01T00:00:00Z"), held("amy", "2027-01-01T00:00:00Z"), "amy"),
        (held("zed", "2027-01-01T00:00:00Z"), msgspec.structs.replace(base, title="x"), "zed"),
    ]
    for one, other, holder in cases:
        for x, y in ((one, other), (other, one)):
            result = merge_states(Side(base, []), Side(x, [], 2, "bb"), Side(y, [], 1, "aa"))
            assert result.task.assignee == holder
            assert result.task.status == "in_progress"
    # A release on one side, a new claim on the other: the claim stands, with its station.
    was = held("amy", "2027-01-01T00:00:00Z")
    released = msgspec.structs.replace(base, status="open", title="released")
    stolen = held("bob", "2027-01-02T00:00:00Z")
    for x, y in ((released, stolen), (stolen, released)):
        result = merge_states(Side(was, []), Side(x, [], 5, "cc"), Side(y, [], 1, "aa"))
        assert (result.task.assignee, result.task.status) == ("bob", "in_progress")
        assert [c.field for c in result.conflicts if c.field in ("claim", "status")] == [
            "claim",
            "status",
        ]
    # Two offline claims, the later one's side finished the task: an older claim does
    # not reopen it (explorer10: bob's in_progress undid alice's pushed done).
    early = held("bob", "2027-01-01T00:00:00Z")
    for finished in ("done", "cancelled"):
        later = held("alice", "2027-01-01T00:00:01Z", finished)
        for x, y in ((early, later), (later, early)):
            result = merge_states(Side(base, []), Side(x, [], 5, "cc"), Side(y, [], 1, "aa"))
            assert (result.task.assignee, result.task.status) == ("alice", finished)


_WORKER = textwrap.dedent(
    """
    import json, sys
    from git_hydrate import Ledger
    from git_hydrate.errors import NotFound
    path, url, name, out = sys.argv[1:]
    claimed = []
    with Ledger(path) as ledger:
        print("ready", flush=True)
        sys.stdin.readline()  # every worker starts claiming at once
        while True:
            try:
                result = ledger.claim(None, holder=name, remote=url, another=True)
            except NotFound:
                break
            claimed.append([result["task_id"], result["attempts"]])
    with open(out, "w") as fh:
        json.dump(claimed, fh)
    """
)


def race(url: str, tmp_path: Path, tasks: int, workers: int = 8) -> None:
    """``workers`` processes, each in its own clone, claim --next until nothing is ready.

    The workers start claiming together (each waits, once its interpreter and clone
    are ready, for a word on stdin): all of them race for the first task whatever the
    machine's load, and some push is refused (asserted of eight), which is the race."""
    seed = clone(url, tmp_path / "planner")
    with Ledger(seed) as ledger:
        for n in range(tasks):
            add(ledger, f"T-{n:03d}", priority=1 + n % 3)
        assert hsync.push(ledger.refs).ok
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = []
    for w in range(workers):
        path = clone(url, tmp_path / f"worker{w}")
        out = tmp_path / f"worker{w}.json"
        procs.append(
            (
                f"worker-{w}",
                out,
                subprocess.Popen(
                    [*python_command(), "-c", _WORKER, str(path), url, f"worker-{w}", str(out)],
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    for _name, _out, proc in procs:  # (nothing else is written before the word)
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", line + proc.communicate()[1]
    for _name, _out, proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    holders: dict[str, list[str]] = {}
    pushes = 0
    for name, out, proc in procs:
        _stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr
        for task_id, attempts in json.loads(out.read_text()):
            holders.setdefault(task_id, []).append(name)
            pushes += attempts
    assert sorted(holders) == [f"T-{n:03d}" for n in range(tasks)]  # none lost
    assert {t: h for t, h in holders.items() if len(h) != 1} == {}  # none twice
    if workers >= 8:  # (three workers might, rarely, take turns without a refusal)
        assert pushes > tasks, "no claim's push was refused: the workers did not race"
    check = clone(url, tmp_path / "check")
    with Ledger(check) as ledger:
        assert hsync.pull(ledger.refs).ok
        for task_id, (holder,) in holders.items():
            task = ledger.get_task(task_id)
            assert (task["assignee"], task["status"]) == (holder, "in_progress"), task_id
    fsck(check)


def test_three_workers_claim_every_task_exactly_once_over_file(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    race(f"file://{remote}", tmp_path, tasks=9, workers=3)


@pytest.mark.slow
def test_eight_workers_claim_every_task_exactly_once_over_file(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    race(f"file://{remote}", tmp_path, tasks=16)


@pytest.mark.slow
def test_eight_workers_claim_every_task_exactly_once_over_git_daemon(
    daemon: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    race(daemon, tmp_path, tasks=16)


def test_a_claim_a_remote_accepted_beats_an_older_offline_one(
    remote: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Found in review: an earlier claim made in one clone only used to overturn a
    later claim the remote had accepted, and to undo its ``done``."""
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    with Ledger(a) as la:
        add(la, "T-1")
        add(la, "T-2")
        assert hsync.push(la.refs).ok
    with Ledger(b, clock=Clock(T0)) as lb:
        assert hsync.pull(lb.refs).ok
        lb.claim("T-1", holder="bob")  # offline, and the earlier of the two
        lb.claim("T-2", holder="bob")
    with Ledger(a, clock=Clock(T0 + 60)) as la:
        won = la.claim("T-1", holder="alice", remote="origin")
        assert (won["assignee"], won["changed"]) == ("alice", True)
        la.set_status("T-1", "review")
        la.set_status("T-1", "done")
        assert hsync.push(la.refs).ok
        assert la.claim("T-2", holder="alice", remote="origin")["assignee"] == "alice"
    with Ledger(b, clock=Clock(T0 + 120)) as lb:
        report = hsync.sync(lb.refs)
        assert report.ok, report.as_dict()
        done = lb.get_task("T-1")
        assert (done["assignee"], done["status"], done["claimed_via"]) == (
            "alice",
            "done",
            "origin",
        )
        # Claiming through the remote now sees alice's accepted claim and refuses.
        with pytest.raises(Exception, match="held by alice"):
            lb.claim("T-2", holder="bob", remote="origin")
    check = clone(remote, tmp_path / "check")
    with Ledger(check) as lc:
        assert hsync.pull(lc.refs).ok
        assert lc.get_task("T-1")["status"] == "done"
        assert lc.get_task("T-2")["assignee"] == "alice"


def test_the_loser_of_the_last_ready_task_hears_nothing_is_ready(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claim --next lists the queue, then writes: a task taken meanwhile by another
    process is passed over, and when it was the last one, the loser is told that
    nothing is ready (not that the task it never named is held)."""
    from git_hydrate import claims

    with Ledger(repo) as ledger:
        add(ledger, "L-1")
    listed = claims.ready

    def raced(refs: Any, **options: Any) -> Any:
        queue = listed(refs, **options)
        with Ledger(repo) as other:
            other.claim("L-1", holder="b", local=True)  # (another process, meanwhile)
        return queue

    monkeypatch.setattr(claims, "ready", raced)
    with Ledger(repo) as ledger, pytest.raises(NotFound) as lost:
        ledger.claim(holder="a", local=True)
    assert str(lost.value).startswith("no task is ready"), str(lost.value)
    held = {task["task_id"]: task for task in json.loads(hydrate(repo, "list", "--json").stdout)}
    assert held["L-1"]["assignee"] == "b"
