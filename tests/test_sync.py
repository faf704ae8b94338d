"""push, pull, sync, setup and task-rm against real remotes, with the real git binary."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate import sync as hsync

from .conftest import as_sh_reads, from_template, fsck, git, hydrate
from .conftest import seeded_remote as _seeded_remote


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare repository over a file path, holding one commit on main (a copy of a
    template made once)."""
    return from_template("sync-remote", _seeded_remote, tmp_path / "remote.git")


def after_the_first_pull(monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> None:
    """Make ``sync``'s first pull run ``then`` once it is done (someone pushing in
    between the pull and the push that follows it)."""
    real_pull = hsync.pull_into
    calls: list[int] = []

    def pull_then(*args: object) -> None:
        real_pull(*args)  # type: ignore[arg-type]
        calls.append(1)
        if len(calls) == 1:
            then()

    monkeypatch.setattr(hsync, "pull_into", pull_then)


def shared_refs(repo: Path) -> list[str]:
    """The names of the refs under ``refs/hydrate/`` in ``repo``."""
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/hydrate/").split()


def clone(remote: Path | str, dest: Path, *extra: str) -> Path:
    git(dest.parent, "clone", "-q", *extra, str(remote), str(dest))
    return dest


def tree_of(repo: Path, task_id: str) -> str:
    return git(repo, "rev-parse", f"refs/hydrate/tasks/{task_id}^{{tree}}").strip()


def hydrate_refs(repo: Path) -> dict[str, str]:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hydrate/tasks")
    return dict(line.split(" ", 1)[::-1][::-1] for line in out.splitlines())  # type: ignore[misc]


def make_task(repo: Path, task_id: str, body: str = "", **fields: object) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective=f"do {task_id}", acceptance="works", **fields)  # type: ignore[arg-type]
        if body:
            ledger.add_context(task_id, body, "notes")


def config_dump(repo: Path) -> str:
    return git(repo, "config", "--local", "--list")


# -- basics over a file path --------------------------------------------------------


def test_push_then_fresh_clone_pull_gets_every_task(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    for i in range(5):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    before = config_dump(a)
    res = hydrate(a, "push")
    assert res.returncode == 0, res
    assert res.stdout.startswith("push origin: 5 pushed (new), 0 up to date\n")
    assert res.stderr == ""
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull")
    assert res.returncode == 0, res
    assert "5 new here" in res.stdout
    assert res.stderr == ""
    for i in range(5):
        assert tree_of(a, f"T-{i}") == tree_of(b, f"T-{i}")
    with Ledger(b) as ledger:
        assert ledger.read_body("T-3", ledger.context_entries("T-3")[0]["hash"]) == "body 3\n"
    # The mirror lives outside refs/hydrate/ and refs/remotes/.
    mirror = git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate-remotes/origin/tasks")
    assert len(mirror.split()) == 5
    assert "hydrate" not in git(b, "branch", "-a")
    assert config_dump(a) == before
    assert "remote.origin.push" not in config_dump(b)
    fsck(a)
    fsck(b)
    fsck(remote)


def test_a_mirror_clone_keeps_its_unpushed_work_and_can_push(remote: Path, tmp_path: Path) -> None:
    """A `git clone --mirror` fetches +refs/*:refs/*: git applied that refspec too to
    the refs a pull fetched, force-moving the local task over its unpushed work
    ("1 up to date", exit 0). And git refuses refspecs beside remote.origin.mirror,
    so push, sync and claim --remote failed. Both work now."""
    a = clone(remote, tmp_path / "a")
    make_task(a, "M-1", body="first\n")
    assert hydrate(a, "push").returncode == 0
    mirror = tmp_path / "m.git"
    git(tmp_path, "clone", "-q", "--mirror", str(remote), str(mirror))
    assert hydrate(mirror, "pull").returncode == 0
    with Ledger(mirror) as ledger:
        ledger.add_context("M-1", "mirror-local work\n", "notes")
    with Ledger(a) as ledger:
        ledger.add_context("M-1", "upstream change\n", "notes")
    assert hydrate(a, "push").returncode == 0
    pulled = hydrate(mirror, "pull")
    assert pulled.returncode == 0 and "1 merged" in pulled.stdout, pulled
    # (a plain git fetch there still would: the pull says so, with the fix)
    assert pulled.stderr.startswith(
        "warning: remote.origin.fetch +refs/*:refs/* writes into refs/hydrate/"
    )
    with Ledger(mirror) as ledger:
        bodies = {ledger.read_body("M-1", e["hash"]) for e in ledger.context_entries("M-1")}
    assert bodies == {"first\n", "mirror-local work\n", "upstream change\n"}
    pushed = hydrate(mirror, "push")
    assert pushed.returncode == 0 and "1 pushed" in pushed.stdout, pushed
    tip = git(mirror, "rev-parse", "refs/hydrate/tasks/M-1")
    assert git(remote, "rev-parse", "refs/hydrate/tasks/M-1") == tip
    assert hydrate(mirror, "claim", "M-1", "--remote", "origin").returncode == 0
    fsck(mirror)
    fsck(remote)


def test_second_push_and_noop_sync_are_up_to_date(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1", body="x\n")
    assert hydrate(a, "push").returncode == 0
    res = hydrate(a, "sync", "--json")
    assert res.returncode == 0, res
    data = json.loads(res.stdout)
    assert data["ok"] is True
    assert data["counts"] == {"up-to-date": 1}
    assert data["tasks"] == []
    assert data["remote"] == "origin"
    assert data["rounds"] == 1
    before = git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="new title")
    res = hydrate(a, "push", "--json")
    data = json.loads(res.stdout)
    assert data["tasks"] == [
        {
            "action": "pushed",
            "detail": "",
            "new": git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip(),
            "old": before,  # what the remote held, as the last sync saw it
            "task_id": "T-1",
        }
    ]


def test_local_only_task_and_unpushed_change_survive_pull(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "SHARED", body="one\n")
    with Ledger(a) as ledger:
        hsync.push(ledger.refs)
    make_task(b, "LOCAL", body="mine\n")
    with Ledger(b) as ledger:
        hsync.pull(ledger.refs)
        ledger.edit_task("SHARED", title="edited in b")
        report = hsync.pull(ledger.refs)
        assert [(o.name, o.action) for o in report.outcomes] == [("SHARED", "ahead")]
        assert ledger.get_task("SHARED")["title"] == "edited in b"
        assert ledger.exists("LOCAL")


def test_push_rejection_is_reported_and_others_go_through(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "T-1")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="from a")
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", title="from b")
    make_task(b, "T-2")
    assert hydrate(a, "push").returncode == 0
    res = hydrate(b, "push")
    assert res.returncode == 1
    assert "REJECTED       T-1" in res.stdout
    assert "pushed (new)   T-2" in res.stdout
    assert res.stderr == "error: rejected by origin: T-1; run git hydrate sync origin\n"
    res = hydrate(b, "sync")
    assert res.returncode == 0, res
    assert "merged         T-1  (changed on both sides: title)" in res.stdout
    assert hydrate(a, "pull").returncode == 0
    assert tree_of(a, "T-1") == tree_of(b, "T-1")
    merge_msg = git(b, "log", "-1", "--format=%B", "refs/hydrate/tasks/T-1")
    assert "Hydrate-Action: merge\n" in merge_msg
    assert "Hydrate-Conflict: title\n" in merge_msg
    parents = git(b, "log", "-1", "--format=%P", "refs/hydrate/tasks/T-1").split()
    assert len(parents) == 2


def test_merge_is_the_same_whoever_merges(tmp_path: Path, remote: Path) -> None:
    """A pulls B and B pulls A (URL remotes): two merge commits, one tree."""
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1", body="base body\n", tags=["base"])
    b = clone(a, tmp_path / "b")
    with Ledger(b) as ledger:
        hsync.pull(ledger.refs, str(a))
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="a title", tags=["base", "a"])
        ledger.add_context("T-1", "from a\n", "a")
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", title="b title", priority=1, tags=["b"])
        ledger.add_context("T-1", "from b\n", "b")
        digest = ledger.context_entries("T-1")
        ledger.remove_context("T-1", next(e for e in digest if e["source"] == "notes")["hash"])
    tip_a = git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    tip_b = git(b, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    a_before = Path(shutil.copytree(a, tmp_path / "a-before"))
    with Ledger(a) as la, Ledger(b) as lb:
        ra = hsync.pull(la.refs, str(b))
        rb = hsync.pull(lb.refs, str(a_before))
        assert ra.outcomes[0].action == rb.outcomes[0].action == "merged"
        assert ra.outcomes[0].conflicts == rb.outcomes[0].conflicts
        merged = la.get_task("T-1")
        assert merged["tags"] in (["b", "a"], ["a", "b"])
        assert merged["priority"] == 1
        sources = sorted(e["source"] for e in la.context_entries("T-1"))
        assert sources == ["a", "b"]  # the removal in b stays, both additions kept
    assert git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip() != tip_a
    assert tree_of(a, "T-1") == tree_of(b, "T-1")
    assert tip_b in git(b, "log", "--format=%H", "refs/hydrate/tasks/T-1").split()
    # The URL mirror has a sanitised name.
    names = git(a, "for-each-ref", "--format=%(refname)", "refs/hydrate-remotes/").split()
    assert names and all(n.startswith("refs/hydrate-remotes/url-") for n in names)
    fsck(a)
    fsck(b)


@pytest.mark.parametrize(
    "order",
    [
        ["a", "b", "c", "a", "b", "c"],
        ["c", "b", "a", "c", "b", "a"],
        ["b", "a", "c", "c", "a", "b"],
    ],
)
def test_three_clones_converge(remote: Path, tmp_path: Path, order: list[str]) -> None:
    origin = clone(remote, tmp_path / "origin")
    make_task(origin, "T-1", body="common\n")
    make_task(origin, "T-2")
    with Ledger(origin) as ledger:
        hsync.push(ledger.refs)
    clones = {name: clone(remote, tmp_path / name) for name in "abc"}
    for path in clones.values():
        with Ledger(path) as ledger:
            hsync.pull(ledger.refs)
    edits = {
        "a": {"title": "A", "tags": ["a"]},
        "b": {"title": "B", "priority": 3},
        "c": {"objective": "C objective", "tags": ["c"]},
    }
    for name, path in clones.items():
        with Ledger(path) as ledger:
            ledger.edit_task("T-1", **edits[name])
            ledger.add_context("T-1", f"context from {name}\n", name)
            ledger.edit_task("T-2", title=f"T-2 by {name}")
        make_task(path, f"ONLY-{name}")
    for name in order:
        with Ledger(clones[name]) as ledger:
            report = hsync.sync(ledger.refs)
            assert report.ok, report.as_dict()
    trees = {name: (tree_of(p, "T-1"), tree_of(p, "T-2")) for name, p in clones.items()}
    assert len(set(trees.values())) == 1, trees
    with Ledger(clones["a"]) as ledger:
        assert sorted(ledger.task_ids()) == ["ONLY-a", "ONLY-b", "ONLY-c", "T-1", "T-2"]
        sources = sorted(e["source"] for e in ledger.context_entries("T-1"))
        assert sources == ["a", "b", "c", "notes"]
        task = ledger.get_task("T-1")
        assert task["objective"] == "C objective"
        assert task["priority"] == 3
        assert sorted(task["tags"]) == ["a", "c"]
    for path in clones.values():
        fsck(path)


# -- bad remote data --------------------------------------------------------------


def _corrupt_task(repo: Path, task_id: str, task_json: bytes | None = None) -> None:
    """Rewrite a task's tip in ``repo`` with a broken task.json or a lying link."""
    tip = git(repo, "rev-parse", f"refs/hydrate/tasks/{task_id}").strip()
    tree = git(repo, "rev-parse", f"{tip}^{{tree}}").strip()
    listing = git(repo, "ls-tree", tree)
    if task_json is not None:
        blob = (
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo,
                input=task_json,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        listing = "\n".join(
            f"100644 blob {blob}\ttask.json" if line.endswith("\ttask.json") else line
            for line in listing.splitlines()
        )
    else:  # swap the body: links.json now lies about it
        body = (
            subprocess.run(
                ["git", "hash-object", "-w", "--stdin"],
                cwd=repo,
                input=b"not the body\n",
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        sub = next(line for line in listing.splitlines() if line.endswith("\tbodies")).split()[2]
        fan = git(repo, "ls-tree", sub).split()
        leaf = git(repo, "ls-tree", fan[2]).split()
        new_leaf = git(repo, "mktree", input=f"100644 blob {body}\t{leaf[3]}\n").strip()
        new_sub = git(repo, "mktree", input=f"040000 tree {new_leaf}\t{fan[3]}\n").strip()
        # links.json names the new blob, so only the sha256 check can catch it.
        links_oid = next(ln for ln in listing.splitlines() if ln.endswith("\tlinks.json"))
        links = git(repo, "cat-file", "blob", links_oid.split()[2]).replace(leaf[2], body)
        new_links = git(repo, "hash-object", "-w", "--stdin", input=links).strip()
        listing = "\n".join(
            f"040000 tree {new_sub}\tbodies"
            if line.endswith("\tbodies")
            else f"100644 blob {new_links}\tlinks.json"
            if line.endswith("\tlinks.json")
            else line
            for line in listing.splitlines()
        )
    new_tree = git(repo, "mktree", input=listing + "\n").strip()
    commit = git(repo, "commit-tree", new_tree, "-p", tip, "-m", "hydrate: damage").strip()
    git(repo, "update-ref", f"refs/hydrate/tasks/{task_id}", commit)


def test_invalid_remote_tasks_are_skipped_and_the_rest_merges(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "GOOD", body="fine\n")
    make_task(a, "BADJSON", body="x\n")
    make_task(a, "BADSHA", body="y\n")
    make_task(a, "FUTURE")
    _corrupt_task(a, "BADJSON", b"{not json")
    _corrupt_task(a, "BADSHA")
    _corrupt_task(
        a, "FUTURE", b'{"format":99,"id":"FUTURE","title":"t","objective":"o","acceptance":"a"}'
    )
    with Ledger(a) as ledger:
        pushed = hsync.push(ledger.refs)
    # push sends none of them (see test_push_holds_back_what_pull_would_skip);
    # plain git, an older git-hydrate or another tool can
    assert sorted(pushed.failed("skipped")) == ["BADJSON", "BADSHA", "FUTURE"]
    git(a, "push", "-q", "origin", "refs/hydrate/tasks/*:refs/hydrate/tasks/*")
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    actions = {t["task_id"]: (t["action"], t["detail"]) for t in data["tasks"]}
    assert actions["GOOD"][0] == "created"
    assert actions["BADJSON"][0] == "skipped"
    assert actions["BADSHA"] == (
        "skipped",
        "remote data invalid: task BADSHA: body "
        + actions["BADSHA"][1].split("body ")[1].split(" ")[0]
        + " does not match its sha256",
    )
    assert (
        actions["FUTURE"][0] == "skipped" and "newer than this git-hydrate" in actions["FUTURE"][1]
    )
    assert res.stderr == ("error: skipped: BADJSON, BADSHA, FUTURE (the report above says why)\n")
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks").split() == [
        "refs/hydrate/tasks/GOOD"
    ]


# -- server settings, partial clones, daemon -----------------------------------------


def test_a_remote_path_that_is_not_utf8_is_shown_escaped(tmp_path: Path) -> None:
    """A remote path holding bytes that are not UTF-8 (a surrogate in ``argv``) is
    pushed to and pulled from; reports and JSON show those bytes as ``\\xNN``."""
    bare = tmp_path / "sub" / "r\udcff.git"  # (the byte 0xff, as Python decodes argv)
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(tmp_path, "init", "-q", "a")
    make_task(tmp_path / "a", "U-1")
    pushed = hydrate(tmp_path / "a", "push", "--json", str(bare))
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["remote"].endswith("sub/r\\xff.git")
    git(tmp_path, "init", "-q", "b")
    pulled = hydrate(tmp_path / "b", "pull", str(bare))
    assert pulled.returncode == 0 and "r\\xff.git: 1 new here" in pulled.stdout
    assert any(ref.endswith("/tasks/U-1") for ref in hydrate_refs(tmp_path / "b"))


def test_remote_with_fsck_objects_accepts_pushes(remote: Path, tmp_path: Path) -> None:
    git(remote, "config", "receive.fsckObjects", "true")
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "T-1", body="x\n")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs).ok
    with Ledger(b) as ledger:
        hsync.pull(ledger.refs)
        ledger.edit_task("T-1", title="b")
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="a")
        assert hsync.push(ledger.refs).ok
    make_task(b, "T-2")
    with Ledger(b) as ledger:
        hsync.remove_task(ledger.refs, "T-2")
        report = hsync.sync(ledger.refs)  # a merge commit and the removal record
        assert report.ok, report.as_dict()
        assert {o.action for o in report.outcomes} >= {"merged", "pushed"}
    fsck(remote)


def test_partial_clone_pulls_bodies_and_packs(remote: Path, tmp_path: Path) -> None:
    git(remote, "config", "uploadpack.allowFilter", "true")
    a = clone(remote, tmp_path / "a")
    # A body identical to a file of the project: the blobless clone lacks that blob.
    make_task(a, "T-1", body="shared body text\n")
    make_task(a, "T-2", body="only in hydrate\n")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs).ok
    p = clone(f"file://{remote}", tmp_path / "partial", "--filter=blob:none", "--no-checkout")
    assert git(p, "config", "remote.origin.promisor").strip() == "true"
    res = hydrate(p, "pull")
    assert res.returncode == 0, res
    assert "2 new here" in res.stdout
    res = hydrate(p, "--compact", "pack", "T-1")
    assert res.returncode == 0, res
    assert "shared body text" in res.stdout
    with Ledger(p) as ledger:
        ledger.edit_task("T-2", title="from the partial clone")
        assert hsync.push(ledger.refs).ok
    # After setup a plain (filtered) `git fetch` fills the mirror without bodies;
    # the pull still gets them.
    make_task(a, "T-3", body="README-like body\n")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs, ids=["T-3"]).ok
    assert hydrate(p, "setup").returncode == 0
    git(p, "fetch", "-q")
    res = hydrate(p, "pull")
    assert res.returncode == 0, res
    assert "new here       T-3" in res.stdout
    res = hydrate(p, "--compact", "pack", "T-3")
    assert res.returncode == 0, res
    assert "README-like body" in res.stdout


@pytest.fixture
def daemon(remote: Path) -> Iterator[str]:
    """A real `git daemon` serving the remote over git:// on 127.0.0.1."""
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    probe = subprocess.run(["git", "daemon", "-h"], capture_output=True, text=True)
    if "usage" not in (probe.stdout + probe.stderr).lower():
        pytest.skip("git daemon is not available")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--listen=127.0.0.1",
            f"--port={port}",
            "--export-all",
            "--enable=receive-pack",
            f"--base-path={remote.parent}",
            str(remote.parent),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/{remote.name}"
    try:
        for _ in range(100):
            if proc.poll() is not None:
                pytest.skip("git daemon exited at start")
            ok = subprocess.run(["git", "ls-remote", url], capture_output=True)
            if ok.returncode == 0:
                break
            time.sleep(0.05)
        else:
            pytest.skip("git daemon did not come up")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_git_daemon_push_pull(daemon: str, tmp_path: Path) -> None:
    a = clone(daemon, tmp_path / "a")
    b = clone(daemon, tmp_path / "b")
    make_task(a, "T-1", body="over git://\n")
    res = hydrate(a, "push")
    assert res.returncode == 0, res
    with Ledger(b) as ledger:
        ledger.add_task("T-1", objective="made in b", acceptance="x")
        res_b = hsync.sync(ledger.refs)  # unrelated histories: merged, no common base
        assert res_b.ok, res_b.as_dict()
    res = hydrate(a, "sync", daemon)  # a URL works as well
    assert res.returncode == 0, res
    assert tree_of(a, "T-1") == tree_of(b, "T-1")
    with Ledger(a) as ledger:
        assert [e["source"] for e in ledger.context_entries("T-1")] == ["notes"]


# -- configuration ----------------------------------------------------------------


def test_config_untouched_except_by_setup(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1")
    before = config_dump(a)
    for command in ("push", "pull", "sync"):
        assert hydrate(a, command).returncode == 0
    assert config_dump(a) == before
    res = hydrate(a, "setup")
    assert res.returncode == 0, res
    assert res.stdout == (
        "added remote.origin.fetch +refs/hydrate/*:refs/hydrate-remotes/origin/*\n"
    )
    res = hydrate(a, "setup")
    assert res.stdout.startswith("already set up: ")
    fetches = git(a, "config", "--get-all", "remote.origin.fetch").splitlines()
    assert fetches == [
        "+refs/heads/*:refs/remotes/origin/*",
        "+refs/hydrate/*:refs/hydrate-remotes/origin/*",
    ]
    assert git(a, "config", "--get-all", "remote.origin.push", check=False) == ""
    # A plain fetch now keeps the mirror current, and a plain push still pushes branches.
    b = clone(remote, tmp_path / "b")
    make_task(b, "T-2")
    assert hydrate(b, "push").returncode == 0
    git(a, "fetch", "-q")
    assert "refs/hydrate-remotes/origin/tasks/T-2" in git(a, "for-each-ref")
    (a / "f").write_text("x")
    git(a, "add", "f")
    git(a, "commit", "-q", "-m", "work")
    git(a, "push", "-q")
    assert git(remote, "rev-parse", "main") == git(a, "rev-parse", "main")


def test_a_remote_name_no_mirror_ref_can_hold_says_what_to_do(
    tmp_path: Path, repo: Path, remote: Path
) -> None:
    """git allows ``;`` and ``$`` in a remote's name, a mirror ref here does not: the
    error says to rename it or to give its URL, and both work as printed."""
    git(repo, "remote", "add", "a;b", str(remote))
    make_task(repo, "T-1")
    res = hydrate(repo, "push", "a;b")
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr == (
        "error: remote name 'a;b' cannot name a mirror ref (letters, digits and . _ - / "
        "only, no '..'); rename it: git remote rename 'a;b' NEW; or give its URL in its "
        f"place: {remote}\n"
    )
    setup = hydrate(repo, "setup", "a;b")  # (setup needs a name: no URL offered)
    assert setup.returncode == 1 and setup.stderr.endswith("git remote rename 'a;b' NEW\n")
    assert hydrate(repo, "push", str(remote)).returncode == 0  # the URL, as printed
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks") == (
        "refs/hydrate/tasks/T-1\n"
    )
    git(repo, "remote", "rename", "a;b", "ab")  # (the rename, as printed)
    assert hydrate(repo, "pull", "ab").returncode == 0


def test_default_remote_errors_and_url(tmp_path: Path, repo: Path, remote: Path) -> None:
    res = hydrate(repo, "pull")
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr.startswith("error: no remote to sync with: ")
    res = hydrate(repo, "push", "nosuch")
    assert res.returncode == 1
    assert res.stderr == (
        "error: no remote named 'nosuch' (configured remotes: none); "
        "add it with: git remote add nosuch URL\n"
    )
    res = hydrate(repo, "setup")
    assert res.returncode == 1
    assert "; name one (git hydrate setup REMOTE) or add one with: " in res.stderr
    res = hydrate(repo, "pull", str(tmp_path / "missing.git"))
    assert res.returncode == 1
    assert res.stderr.startswith("error: git fetch ")
    git(repo, "remote", "add", "upstream", str(remote))
    git(repo, "config", "branch.main.remote", "upstream")
    make_task(repo, "T-1")
    res = hydrate(repo, "push")
    assert res.returncode == 0, res
    assert res.stdout.startswith("push upstream: ")


# -- removal ------------------------------------------------------------------------


def test_task_rm_is_not_undone_by_pull_unless_changed_since(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "T-1", body="x\n")
    make_task(a, "T-2")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    removed_tip = git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    res = hydrate(a, "task-rm", "T-1")
    assert res.returncode == 0, res
    assert res.stdout == f"removed task T-1 (was {removed_tip[:12]})\n"
    assert git(a, "rev-parse", "--verify", "-q", "refs/hydrate/tasks/T-1", check=False) == ""
    # History stays reachable through the removal record.
    assert removed_tip in git(a, "rev-list", "refs/hydrate/removed").split()
    res = hydrate(a, "pull", "--json")
    data = json.loads(res.stdout)
    assert [(t["task_id"], t["action"]) for t in data["tasks"]] == [("T-1", "not-restored")]
    res = hydrate(a, "pull")
    assert res.returncode == 0
    assert res.stdout == "pull origin: 1 removed here, not brought back, 1 up to date\n"
    assert res.stderr == ""
    assert git(a, "rev-parse", "--verify", "-q", "refs/hydrate/tasks/T-1", check=False) == ""
    # Someone changes it on the remote after the removal: the pull restores it and says so.
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", title="still needed")
        assert hsync.push(ledger.refs).ok
    res = hydrate(a, "pull")
    assert res.returncode == 0
    assert "restored       T-1  (removed here, but changed on origin since; restored)" in (
        res.stdout
    )
    fsck(a)


def test_task_rm_remote_and_propagation(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    c = clone(remote, tmp_path / "c")
    make_task(a, "T-1")
    make_task(a, "T-2")
    assert hydrate(a, "push").returncode == 0
    for path in (b, c):
        assert hydrate(path, "pull").returncode == 0
    with Ledger(c) as ledger:
        ledger.edit_task("T-2", title="changed in c")
    res = hydrate(a, "task-rm", "T-1", "--remote", "origin")
    assert res.returncode == 0, res
    assert res.stdout.endswith("deleted on origin\n")
    assert "refs/hydrate/tasks/T-1" not in git(remote, "for-each-ref")
    assert "refs/hydrate/removed" in git(remote, "for-each-ref")
    res = hydrate(b, "pull")
    assert "removed        T-1" in res.stdout
    assert git(b, "rev-parse", "--verify", "-q", "refs/hydrate/tasks/T-1", check=False) == ""
    # c changed T-2 after a's copy: removing it remotely from a is refused, nothing removed.
    assert hydrate(c, "push").returncode == 0
    res = hydrate(a, "task-rm", "T-2", "--remote", "origin")
    assert res.returncode == 1
    assert res.stdout == ""
    assert res.stderr == (
        "error: task T-2 has changes on origin that you have not pulled; "
        "run git hydrate pull origin T-2 first\n"
    )
    assert git(a, "rev-parse", "--verify", "-q", "refs/hydrate/tasks/T-2", check=False) != ""
    res = hydrate(a, "task-rm", "NOPE")
    assert res.returncode == 1
    assert res.stderr == (
        "error: no task 'NOPE' here; to remove it from a remote: "
        "git hydrate task-rm NOPE --remote REMOTE\n"
    )
    res = hydrate(a, "task-rm", "NOPE", "--remote", "origin")
    assert res.returncode == 1
    assert res.stderr == "error: no task 'NOPE' here or on origin\n"
    # A task that exists only on the remote can be removed there.
    make_task(c, "C-ONLY")
    assert hydrate(c, "push").returncode == 0
    res = hydrate(a, "task-rm", "C-ONLY", "--remote", "origin", "--json")
    assert res.returncode == 0, res
    data = json.loads(res.stdout)
    assert data["local"] is False
    assert data["remote"] == {"remote": "origin", "deleted": True, "detail": ""}
    assert "refs/hydrate/tasks/C-ONLY" not in git(remote, "for-each-ref")
    res = hydrate(c, "pull")
    assert "removed        C-ONLY" in res.stdout


def test_union_refs_travel_and_merge(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    for path, ids in ((a, ("A-1", "A-2")), (b, ("B-1",))):
        for task_id in ids:
            make_task(path, task_id)
        with Ledger(path) as ledger:
            for task_id in ids:
                hsync.remove_task(ledger.refs, task_id)
    # Each clone archives a finished task of its own.
    for path, key in ((a, "A-9"), (b, "B-9")):
        make_task(path, key)
        with Ledger(path) as ledger:
            ledger.set_status(key, "cancelled")
            ledger.archive([key])
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        refs = [(o.name, o.action) for o in report.outcomes if not o.is_task]
        assert ("refs/hydrate/removed", "merged") in refs
        assert ("refs/hydrate/archive", "merged") in refs
    with Ledger(a) as ledger:
        assert hsync.pull(ledger.refs).ok
    for path in (a, b):
        removed = json.loads(git(path, "show", "refs/hydrate/removed:removed.json"))
        assert sorted(removed["removed"]) == ["A-1", "A-2", "B-1"]
        index = json.loads(git(path, "show", "refs/hydrate/archive:index.json"))
        assert sorted(index["tasks"]) == ["A-9", "B-9"]
    assert git(a, "rev-parse", "refs/hydrate/removed") == git(
        b, "rev-parse", "refs/hydrate/removed"
    )
    fsck(a)


def test_pull_named_ids_only(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    for task_id in ("T-1", "T-2"):
        make_task(a, task_id)
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull", "origin", "T-2", "T-9")
    assert res.returncode == 1, res
    assert res.stderr == "error: no such task on origin: T-9\n"
    assert "new here       T-2" in res.stdout
    assert "absent         T-9  (not on origin)" in res.stdout
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks").split() == [
        "refs/hydrate/tasks/T-2"
    ]
    res = hydrate(b, "pull", "T-2")
    assert res.returncode == 1
    assert res.stderr == (
        "error: no remote named 'T-2' (configured remotes: origin); or give a URL; "
        "to name tasks, give the remote first: git hydrate pull origin T-2\n"
    )
    # each command's hint names that command, and the command it names works (issue 34)
    res = hydrate(b, "push", "T-2")
    assert res.returncode == 1
    assert res.stderr.endswith(
        "; to name tasks, give the remote first: git hydrate push origin T-2\n"
    )
    assert hydrate(b, "push", "origin", "T-2").returncode == 0
    res = hydrate(b, "sync", "T-2")
    assert res.returncode == 1
    assert res.stderr.endswith(
        "; sync takes no task ids: git hydrate pull origin T-2, then git hydrate push origin T-2\n"
    )
    res = hydrate(b, "setup", "T-2")
    assert res.returncode == 1
    assert (
        res.stderr == "error: no remote named 'T-2' (configured remotes: origin); or give a URL\n"
    )
    res = hydrate(b, "setup", str(remote))
    assert res.returncode == 1
    assert res.stderr.endswith(
        "; add one with: git remote add NAME URL, then: git hydrate setup NAME\n"
    )
    res = hydrate(b, "push", "origin", "bad/id")
    assert res.returncode == 1
    assert res.stderr == "error: invalid task id 'bad/id'\n"


def test_concurrent_local_write_during_pull_is_not_lost(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    for task_id in ("T-1", "T-2"):
        make_task(a, task_id, body=f"{task_id} from a\n")
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    from git_hydrate.sync import pulling as pull_module

    real_batch = pull_module._apply_batch

    def racing_batch(refs: object, outcomes: list[hsync.Outcome], where: str) -> set[str]:
        # Another writer creates T-1 here between the plan and the transaction.
        make_task(b, "T-1", body="written meanwhile\n")
        return real_batch(refs, outcomes, where)  # type: ignore[arg-type]

    monkeypatch.setattr(pull_module, "_apply_batch", racing_batch)
    with Ledger(b) as ledger:
        report = hsync.pull(ledger.refs)
        assert report.ok, report.as_dict()
        assert [(o.name, o.action) for o in report.outcomes] == [
            ("T-1", "merged"),
            ("T-2", "created"),
        ]
        sources = sorted(e["size"] for e in ledger.context_entries("T-1"))
        assert len(sources) == 2  # both bodies kept
    # the task redone alone: a reflog entry for the one moved, none for the one created
    reflog = git(b, "reflog", "show", "--format=%gs", "refs/hydrate/tasks/T-1")
    assert reflog.splitlines()[0] == "hydrate: pull T-1 from origin"
    assert not (b / ".git/logs/refs/hydrate/tasks/T-2").exists()
    fsck(b)


def test_pull_logs_the_tasks_it_moves_not_those_it_creates(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    for task_id in ("T-1", "T-2"):
        make_task(a, task_id)
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    # created: nothing earlier to recover (the remote and the mirror hold it)
    assert not (b / ".git/logs/refs/hydrate/tasks/T-1").exists()
    created = git(b, "rev-parse", "refs/hydrate/tasks/T-1")
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="moved")
    make_task(a, "T-3")
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    # moved: git's reflog holds the earlier tip, with the pull's message
    reflog = git(b, "reflog", "show", "--format=%H %gs", "refs/hydrate/tasks/T-1")
    assert reflog.splitlines()[0].endswith(" hydrate: pull from origin")
    assert git(b, "rev-parse", "refs/hydrate/tasks/T-1@{1}") == created
    assert not (b / ".git/logs/refs/hydrate/tasks/T-3").exists()
    fsck(b)


def test_sync_retries_when_someone_pushes_meanwhile(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1")
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    c = clone(remote, tmp_path / "c")
    for path in (b, c):
        assert hydrate(path, "pull").returncode == 0
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", title="b")

    def someone_pushes() -> None:
        with Ledger(c) as other:
            other.edit_task("T-1", priority=1)
            assert hsync.push(other.refs).ok

    after_the_first_pull(monkeypatch, someone_pushes)
    with Ledger(b) as ledger:
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        assert report.rounds == 2
        assert ledger.get_task("T-1")["title"] == "b"
        assert ledger.get_task("T-1")["priority"] == 1
    assert git(remote, "rev-parse", "refs/hydrate/tasks/T-1") == git(
        b, "rev-parse", "refs/hydrate/tasks/T-1"
    )


def test_sha256_repositories_push_pull_and_merge(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--object-format=sha256", str(bare))
    a = tmp_path / "a"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(a))
    git(a, "remote", "add", "origin", str(bare))
    make_task(a, "T-1", body="sha-256 body\n")
    assert hydrate(a, "push").returncode == 0
    b = tmp_path / "b"  # (git 2.39 clones an empty SHA-256 repository as SHA-1)
    git(tmp_path, "init", "-q", "--object-format=sha256", str(b))
    git(b, "remote", "add", "origin", str(bare))
    assert hydrate(b, "pull").returncode == 0
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="a")
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", priority=1)
    assert hydrate(a, "sync").returncode == 0
    res = hydrate(b, "sync")
    assert res.returncode == 0, res
    assert "merged" in res.stdout
    assert hydrate(a, "pull").returncode == 0
    assert tree_of(a, "T-1") == tree_of(b, "T-1")
    assert len(tree_of(a, "T-1")) == 64
    fsck(b)


def test_criss_cross_merge_keeps_a_later_removal(remote: Path, tmp_path: Path) -> None:
    """Two merge bases: they are merged into a virtual base, so a removal stays removed."""
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1", body="base\n")
    b = clone(a, tmp_path / "b")
    with Ledger(b) as ledger:
        hsync.pull(ledger.refs, str(a))
        ledger.add_context("T-1", "added in b\n", "b")
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="a")
    a_copy = Path(shutil.copytree(a, tmp_path / "a-copy"))
    b_copy = Path(shutil.copytree(b, tmp_path / "b-copy"))
    with Ledger(a) as la, Ledger(b) as lb:
        assert hsync.pull(la.refs, str(b_copy)).outcomes[0].action == "merged"
        assert hsync.pull(lb.refs, str(a_copy)).outcomes[0].action == "merged"
        added = next(e for e in la.context_entries("T-1") if e["source"] == "b")
        la.remove_context("T-1", added["hash"])  # a removes what b added
        lb.edit_task("T-1", priority=3)
    tip_a = git(a, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    tip_b = git(b, "rev-parse", "refs/hydrate/tasks/T-1").strip()
    with Ledger(a) as la:
        report = hsync.pull(la.refs, str(b))
        assert report.outcomes[0].action == "merged"
        assert len(git(a, "merge-base", "--all", tip_a, tip_b).split()) == 2
        assert [e["source"] for e in la.context_entries("T-1")] == ["notes"]
        assert la.get_task("T-1")["priority"] == 3
        assert la.get_task("T-1")["title"] == "a"


def test_every_sync_command_has_help_with_an_example(repo: Path) -> None:
    for command in ("pull", "push", "sync", "setup", "task-rm"):
        res = hydrate(repo, command, "-h")
        assert res.returncode == 0, res
        assert "Example" in res.stdout  # (Example: or Examples:)
        assert res.stderr == ""


def test_archiving_travels_and_frees_the_refs_everywhere(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "D-1", body="finished work")
    make_task(a, "D-2", body="also finished")
    make_task(a, "L-1")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs).ok
    with Ledger(b) as ledger:
        assert hsync.pull(ledger.refs).ok
        assert ledger.task_ids() == ["D-1", "D-2", "L-1"]
        # B changes D-2 after the pull: that copy must survive A's archive
        ledger.add_context("D-2", "a late note from b", "b")
    with Ledger(a) as ledger:
        for task_id in ("D-1", "D-2"):
            ledger.set_status(task_id, "cancelled")
        ledger.archive(done=True)
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        assert ("D-1", "deleted-remote") in [(o.name, o.action) for o in report.outcomes]
    remote_refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks")
    assert remote_refs.split() == ["refs/hydrate/tasks/L-1"]
    with Ledger(b) as ledger:
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        actions = {(o.name, o.action) for o in report.outcomes}
        assert ("D-1", "archived") in actions
        # D-2 changed here after it was archived there: it stays live and is pushed back
        assert "D-2" in ledger.task_ids() and "D-1" not in ledger.task_ids()
        assert ledger.get_task("D-1")["archived"] is True
        [entry] = ledger.context_entries("D-1")
    assert git(b, "cat-file", "blob", entry["oid"]) == "finished work"
    with Ledger(a) as ledger:
        assert hsync.pull(ledger.refs).ok
        assert "D-2" in ledger.task_ids()
        assert "a late note from b" in [
            ledger.read_body("D-2", e["hash"]) for e in ledger.context_entries("D-2")
        ]
    fsck(a)
    fsck(b)
    fsck(remote)


def test_a_damaged_remote_archive_is_skipped_and_the_rest_merges(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "OK-1")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs).ok
    blob = git(a, "hash-object", "-w", "--stdin", input="not json\n").strip()
    tree = git(a, "mktree", input=f"100644 blob {blob}\tindex.json\n").strip()
    evil = git(a, "commit-tree", tree, "-m", "evil").strip()
    git(a, "push", "-q", str(remote), f"{evil}:refs/hydrate/archive")
    with Ledger(b) as ledger:
        report = hsync.pull(ledger.refs)
        assert not report.ok
        outcomes = {(o.name, o.action) for o in report.outcomes}
        assert ("refs/hydrate/archive", "skipped") in outcomes
        assert ledger.task_ids() == ["OK-1"]
        ledger.add_task("NEW-1", objective="o", acceptance="a")  # not blocked
    assert git(b, "for-each-ref", "refs/hydrate/archive") == ""
    fsck(b)


def test_a_removed_task_does_not_come_back_inside_a_new_one(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "R-2", body="OLD NOTES")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
        hsync.remove_task(ledger.refs, "R-2")
        ledger.add_task("R-2", objective="brand new", acceptance="b")
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        actions = {(o.name, o.action) for o in report.outcomes}
        assert ("R-2", "replaces-removed") in actions
        assert ledger.context_entries("R-2") == []
        assert ledger.get_task("R-2")["objective"] == "brand new"
    # the remote now holds the new task; a fresh clone gets it, without the old notes
    assert git(remote, "rev-parse", "refs/hydrate/tasks/R-2") == git(
        a, "rev-parse", "refs/hydrate/tasks/R-2"
    )
    c = clone(remote, tmp_path / "c")
    with Ledger(c) as ledger:
        assert hsync.pull(ledger.refs).ok
        assert ledger.get_task("R-2")["objective"] == "brand new"
        assert ledger.context_entries("R-2") == []
    fsck(remote)


def test_a_pull_that_keeps_one_side_of_a_field_names_both_values(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1")
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    with Ledger(a, clock=lambda: 1_800_000_000) as ledger:
        ledger.edit_task("T-1", title="title from a")
    assert hydrate(a, "push").returncode == 0
    with Ledger(b, clock=lambda: 1_700_000_000) as ledger:
        ledger.edit_task("T-1", title="title from b")
    pulled = hydrate(b, "pull")
    assert pulled.returncode == 0, pulled
    assert '      kept title = "title from a", dropped "title from b" (newer side' in (
        pulled.stdout
    ), pulled.stdout


# -- issue 21 -------------------------------------------------------------------------


def _finish(ledger: Ledger, task_id: str) -> None:
    ledger.set_status(task_id, "cancelled")


def test_push_after_an_archive_travelled_is_not_rejected(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "X-1")
    make_task(a, "X-2")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
        _finish(ledger, "X-1")
        ledger.archive(["X-1"])
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        assert ("X-1", "deleted-remote") in [(o.name, o.action) for o in report.outcomes]
        # the mirror says what the remote holds now: no second deletion, no stale lease
        again = hsync.push(ledger.refs)
        assert again.ok, again.as_dict()
        assert again.outcomes == []
    assert git(a, "for-each-ref", "--format=%(refname)", "refs/hydrate-remotes/origin/tasks") == (
        "refs/hydrate-remotes/origin/tasks/X-2\n"
    )
    res = hydrate(a, "push")
    assert res.returncode == 0, res


def test_first_push_after_an_archive_deletes_the_remote_ref_without_a_fetch(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "Y-1")
    make_task(a, "Y-2")
    with Ledger(a) as ledger:
        assert hsync.push(ledger.refs).ok  # push only: this clone never fetched
        _finish(ledger, "Y-1")
        ledger.archive(["Y-1"])
        report = hsync.push(ledger.refs)
        assert report.ok, report.as_dict()
        assert ("Y-1", "deleted-remote") in [(o.name, o.action) for o in report.outcomes]
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks").split() == [
        "refs/hydrate/tasks/Y-2"
    ]
    fsck(remote)
    # a clone whose tasks came some other way (no mirror at all) deletes it too
    c = clone(remote, tmp_path / "c")
    git(c, "fetch", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    with Ledger(c) as ledger:
        _finish(ledger, "Y-2")
        ledger.archive(["Y-2"])
        report = hsync.push(ledger.refs)
        assert report.ok, report.as_dict()
        assert ("Y-2", "deleted-remote") in [(o.name, o.action) for o in report.outcomes]
    assert git(remote, "for-each-ref", "refs/hydrate/tasks") == ""


def _declining_hook(remote: Path, name: str = "pre-receive") -> None:
    hook = remote / "hooks" / name
    hook.write_text("#!/bin/sh\necho 'tasks are frozen this week' >&2\nexit 1\n")
    hook.chmod(0o755)


def test_a_declining_hook_is_named_once_and_sync_does_not_retry(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "H-1")
    _declining_hook(remote)
    res = hydrate(a, "push")
    assert res.returncode == 1
    assert "REFUSED" in res.stdout and "REJECTED" not in res.stdout
    assert "hook" in res.stderr and "run git hydrate sync" not in res.stderr
    assert "tasks are frozen this week" in res.stderr  # the hook's own words
    assert res.stderr.count("error:") == 1
    with Ledger(a) as ledger:
        report = hsync.sync(ledger.refs)
    assert not report.ok
    assert report.rounds == 1
    assert report.failed("refused") == ["H-1"]
    res = hydrate(a, "sync")
    assert res.returncode == 1 and res.stderr.count("error:") == 1, res


def test_a_hidden_namespace_is_said_on_pull_and_push(remote: Path, tmp_path: Path) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "N-1")
    assert hydrate(a, "push").returncode == 0
    git(remote, "config", "transfer.hideRefs", "refs/hydrate")
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull")
    assert "0 up to date" not in res.stdout
    assert "hideRefs" in res.stderr, res
    # a clone that had pulled before hears it too
    res = hydrate(a, "pull")
    assert "any more" in res.stderr and "hideRefs" in res.stderr, res
    with Ledger(a) as ledger:
        ledger.edit_task("N-1", title="changed")
        report = hsync.sync(ledger.refs)
    assert report.rounds == 1
    assert report.failed("refused") == ["N-1"]
    assert "hides refs/hydrate/" in report.outcomes[-1].detail


def test_sync_counts_each_task_once_whatever_the_rounds(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "T-1")
    make_task(a, "R-1")
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    c = clone(remote, tmp_path / "c")
    for path in (b, c):
        assert hydrate(path, "pull").returncode == 0
    with Ledger(b) as ledger:
        ledger.edit_task("T-1", title="b")
        hsync.remove_task(ledger.refs, "R-1")  # here only: the remote keeps it

    def someone_pushes() -> None:
        with Ledger(c) as other:
            other.edit_task("T-1", priority=1)
            assert hsync.push(other.refs).ok

    after_the_first_pull(monkeypatch, someone_pushes)
    with Ledger(b) as ledger:
        report = hsync.sync(ledger.refs)
    assert report.rounds == 2
    names = [(o.name, o.action) for o in report.outcomes if o.is_task]
    assert len(names) == len(set(names)), names


def test_doctor_and_setup_name_a_fetch_refspec_that_overwrites_tasks(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    make_task(a, "M-1")
    assert hydrate(a, "push").returncode == 0
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--mirror", str(remote), str(mirror))
    res = hydrate(mirror, "doctor")
    assert res.returncode == 1, res
    assert "remote.origin.fetch +refs/*:refs/*" in res.stdout
    assert "^refs/hydrate/*" in res.stdout
    assert json.loads(hydrate(mirror, "doctor", "--json").stdout)["config"][0]["remote"] == (
        "origin"
    )
    res = hydrate(mirror, "setup", "origin")
    assert res.returncode == 0 and "writes into refs/hydrate/" in res.stderr, res
    # the fix it names works: a plain fetch no longer overwrites a local task commit
    git(mirror, "config", "--add", "remote.origin.fetch", "^refs/hydrate/*")
    assert hydrate(mirror, "doctor").returncode == 0
    with Ledger(mirror) as ledger:
        ledger.edit_task("M-1", title="unpushed")
    git(mirror, "fetch", "-q", "--prune", "origin")
    with Ledger(mirror) as ledger:
        assert ledger.get_task("M-1")["title"] == "unpushed"
    # an ordinary clone is fine
    assert hydrate(a, "doctor").returncode == 0


def test_commands_that_name_a_configured_remote_quote_it(remote: Path, tmp_path: Path) -> None:
    """git takes ``$``, ``(``, ``)`` and ``;`` in a remote's name: the commands a hint
    or doctor prints name it quoted for the shell, as they run."""
    a = clone(remote, tmp_path / "a")
    odd = "o$(id);x&y`id`"
    git(a, "remote", "rename", "origin", odd)
    res = hydrate(a, "push", "T-2")
    assert res.returncode == 1
    suggested = res.stderr.rstrip("\n").split("give the remote first: ", 1)[1]
    assert as_sh_reads(suggested, tmp_path) == ["git", "hydrate", "push", odd, "T-2"]
    git(a, "config", "--add", f"remote.{odd}.fetch", "+refs/*:refs/*")
    problem = json.loads(hydrate(a, "doctor", "--json").stdout)["config"][0]["problem"]
    fix = problem.split("git config --add ", 1)[1]
    words = as_sh_reads(f"git config --add {fix.split(' (git 2.29+)', 1)[0]}", tmp_path)
    assert words == ["git", "config", "--add", f"remote.{odd}.fetch", "^refs/hydrate/*"]
    setup = problem.split(" then ", 1)[1]
    assert as_sh_reads(setup.split(":", 1)[0], tmp_path) == ["git", "hydrate", "setup", odd]


def test_sync_carries_a_local_removal_to_the_remote_under_a_lease(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "G-1")
    make_task(a, "G-2")
    make_task(a, "K-1")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        assert hsync.sync(ledger.refs).ok
        ledger.edit_task("G-2", title="b changed it")  # after A's copy, before A's removal
        assert hsync.push(ledger.refs).ok
    with Ledger(a) as ledger:
        hsync.remove_task(ledger.refs, "G-1")  # no --remote
        hsync.remove_task(ledger.refs, "G-2")
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        actions = {(o.name, o.action) for o in report.outcomes}
        assert ("G-1", "deleted-remote") in actions
        # B changed G-2 since: the lease keeps it, and the pull brought it back here
        assert ("G-2", "restored") in actions
        assert "G-2" in ledger.task_ids()
        # and no pull reports G-1 ever again
        again = hsync.sync(ledger.refs)
        assert again.ok and again.outcomes == [], again.as_dict()
    remote_ids = git(remote, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/hydrate/tasks")
    assert remote_ids.split() == ["G-2", "K-1"]
    with Ledger(b) as ledger:
        report = hsync.pull(ledger.refs)
        assert ("G-1", "removed") in {(o.name, o.action) for o in report.outcomes}
        assert ledger.task_ids() == ["G-2", "K-1"]
    fsck(remote)


def _bodies(ledger: Ledger, task_id: str) -> set[str]:
    return {ledger.read_body(task_id, e["hash"]) for e in ledger.context_entries(task_id)}


@pytest.mark.parametrize("archive_pushed_first", [False, True])
def test_an_archive_meets_a_concurrent_change_one_live_task_with_both(
    remote: Path, tmp_path: Path, archive_pushed_first: bool
) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "X-1")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(a) as ledger:
        ledger.add_context("X-1", "A's last note", "a")
        ledger.set_status("X-1", "cancelled")
        ledger.archive(["X-1"])
        if archive_pushed_first:
            assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        ledger.add_context("X-1", "B's note", "b")
        ledger.edit_task("X-1", title="B's title")
        if not archive_pushed_first:
            assert hsync.push(ledger.refs).ok
    first, second = (b, a) if archive_pushed_first else (a, b)
    for path in (first, second, first):
        with Ledger(path) as ledger:
            report = hsync.sync(ledger.refs)
            assert report.ok, report.as_dict()
    states = []
    for path in (a, b):
        with Ledger(path) as ledger:
            assert ledger.task_ids() == ["X-1"]
            assert ledger.list_tasks(archived=True) == []
            assert _bodies(ledger, "X-1") == {"A's last note", "B's note"}
            task = ledger.get_task("X-1")
            assert task["title"] == "B's title" and task["status"] == "cancelled"
            assert task["archived"] is False
            states.append(git(path, "rev-parse", "refs/hydrate/tasks/X-1", "refs/hydrate/archive"))
    assert states[0] == states[1]
    # one task again: it can be archived again
    with Ledger(a) as ledger:
        assert ledger.archive(["X-1"])["archived"] == ["X-1"]
    fsck(a)
    fsck(b)


# -- seeded random clones, archive and unarchive included ---------------------------


class _Acked:
    """Every acknowledged write of a random run, per task id."""

    def __init__(self) -> None:
        self.bodies: dict[str, set[str]] = {}
        self.checkpoints: dict[str, set[str]] = {}
        self.titles: dict[str, set[str]] = {}


def _random_step(rng: object, path: Path, acked: _Acked, step: int) -> None:
    import random

    from git_hydrate.errors import HydrateError

    assert isinstance(rng, random.Random)
    ids = [f"T-{n}" for n in range(4)]
    with Ledger(path) as ledger:
        live = ledger.task_ids()
        archived = [t["task_id"] for t in ledger.list_tasks(archived=True)]
        op = rng.choice(["add", "note", "note", "title", "checkpoint", "archive", "unarchive"])
        task_id = rng.choice(ids)
        try:
            if op == "add" and task_id not in live and task_id not in archived:
                title = f"created {step}"
                ledger.add_task(task_id, objective="o", acceptance="a", title=title)
                acked.titles.setdefault(task_id, set()).add(title)
            elif op == "note" and task_id in live:
                body = f"note {step} on {task_id}"
                ledger.add_context(task_id, body, f"s{step}")
                acked.bodies.setdefault(task_id, set()).add(body)
            elif op == "title" and task_id in live:
                title = f"title {step}"
                ledger.edit_task(task_id, title=title)
                acked.titles.setdefault(task_id, set()).add(title)
            elif op == "checkpoint" and task_id in live:
                summary = f"checkpoint {step}"
                ledger.add_checkpoint(task_id, summary, tokens=step)
                acked.checkpoints.setdefault(task_id, set()).add(summary)
            elif op == "archive" and task_id in live:
                if ledger.get_task(task_id)["status"] not in ("done", "cancelled"):
                    ledger.set_status(task_id, "cancelled")
                ledger.archive([task_id])
            elif op == "unarchive" and task_id in archived:
                ledger.unarchive(task_id)
        except HydrateError as exc:  # refused writes are not acknowledged
            assert "Busy" not in type(exc).__name__, exc


def _final_state(path: Path, task_id: str) -> tuple[str, set[str], set[str]]:
    with Ledger(path) as ledger:
        task = ledger.get_task(task_id)
        entries = ledger.context_entries(task_id)
        bodies = {git(path, "cat-file", "blob", entry["oid"]) for entry in entries}
        summaries = {c["summary"] for c in task["checkpoints"]}
        return task["title"], bodies, summaries


#: Seed 206 found a lost note (two archives of different changes); the others run in
#: CI's slow step (``pytest -m slow``), ~2.5 CPU-seconds each.
@pytest.mark.parametrize(
    "seed", [206, *(pytest.param(seed, marks=pytest.mark.slow) for seed in (11, 21, 31, 41))]
)
def test_random_clones_with_archive_converge_and_keep_every_write(
    remote: Path, tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import random

    rng = random.Random(seed)
    clones = [clone(remote, tmp_path / f"c{n}") for n in range(3 + seed % 3)]
    acked = _Acked()
    tick = iter(range(1_800_000_000, 1_800_100_000, 7))

    def next_moment() -> None:
        # git's date variables make a seed replay the same commits (same merges)
        moment = f"@{next(tick)} +0000"
        monkeypatch.setenv("GIT_COMMITTER_DATE", moment)
        monkeypatch.setenv("GIT_AUTHOR_DATE", moment)

    for step in range(1, 61):
        next_moment()
        path = rng.choice(clones)
        if rng.random() < 0.3:
            with Ledger(path) as ledger:
                report = hsync.sync(ledger.refs)
            assert report.ok, (seed, step, report.as_dict())
        else:
            _random_step(rng, path, acked, step)
    for _round in range(3):
        for path in clones:
            next_moment()
            with Ledger(path) as ledger:
                report = hsync.sync(ledger.refs)
            assert report.ok, (seed, report.as_dict())
    shapes = set()
    for path in clones:
        tasks = git(path, "for-each-ref", "--format=%(objectname) %(refname)", "refs/hydrate/")
        with Ledger(path) as ledger:
            index = sorted(t["task_id"] for t in ledger.list_tasks(archived=True))
            both = set(index) & set(ledger.task_ids())
        assert not both, (seed, path, both)  # one task, never live and archived at once
        shapes.add((tasks, tuple(index)))
    assert len(shapes) == 1, (seed, shapes)  # every clone converged
    for task_id in set(acked.titles) | set(acked.bodies) | set(acked.checkpoints):
        title, bodies, summaries = _final_state(clones[0], task_id)
        # bodies and checkpoints are kept by every merge; a title is superseded by a newer one
        assert acked.bodies.get(task_id, set()) <= bodies, (seed, task_id)
        assert acked.checkpoints.get(task_id, set()) <= summaries, (seed, task_id)
        assert title in acked.titles.get(task_id, set()), (seed, task_id, title)
    fsck(remote)
    for path in clones:
        fsck(path)


def test_a_noop_sync_is_one_fetch_and_no_push(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_hydrate.store import Repository

    a = clone(remote, tmp_path / "a")
    make_task(a, "P-1")
    make_task(a, "P-2")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    pushes: list[object] = []
    real_push = Repository.push_with_messages

    def counting_push(self: Repository, *args: object, **kwargs: object) -> object:
        pushes.append(args)
        return real_push(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Repository, "push_with_messages", counting_push)
    with Ledger(a) as ledger:
        report = hsync.sync(ledger.refs)
        assert report.ok and report.outcomes == [] and report.up_to_date >= 2
        assert pushes == []
        # anything to push, and the push happens
        ledger.edit_task("P-1", title="changed")
        report = hsync.sync(ledger.refs)
        assert ("P-1", "pushed") in [(o.name, o.action) for o in report.outcomes]
        assert len(pushes) == 1


@pytest.fixture
def smart_http(remote: Path) -> Iterator[str]:
    """The remote served over smart HTTP: git http-backend as a CGI script.

    http.server runs CGI scripts as ``nobody`` when started as root, so the
    served copy lives in a directory anyone may enter and write.
    """
    import sys as _sys
    import tempfile

    if _sys.version_info >= (3, 13):
        pytest.skip("http.server --cgi is gone from Python 3.13")
    root = Path(tempfile.mkdtemp(prefix="hydrate-http-"))
    try:
        served = root / "remote.git"
        git(root, "clone", "-q", "--bare", str(remote), str(served))
        git(served, "config", "http.receivepack", "true")
        site = root / "site"
        (site / "cgi-bin").mkdir(parents=True)
        script = site / "cgi-bin" / "git"
        script.write_text(
            "#!/bin/sh\n"
            f"GIT_PROJECT_ROOT='{root}' GIT_HTTP_EXPORT_ALL=1 "
            "exec git -c safe.directory='*' http-backend\n"
        )
        for path in [root, *root.rglob("*")]:
            path.chmod(0o777 if path.is_dir() or path == script else 0o666)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        proc = subprocess.Popen(
            [_sys.executable, "-m", "http.server", "--cgi", str(port), "--bind", "127.0.0.1"],
            cwd=site,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}/cgi-bin/git/remote.git"
        try:
            for _ in range(100):
                if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
                    break
                time.sleep(0.05)
            else:
                pytest.skip("the smart HTTP server did not come up")
            yield url
            fsck(served)
        finally:
            proc.terminate()
            proc.wait(timeout=5)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_smart_http_push_pull_and_archive(smart_http: str, tmp_path: Path) -> None:
    a = tmp_path / "ha"
    b = tmp_path / "hb"
    for path in (a, b):
        git(tmp_path, "init", "-q", str(path))
        git(path, "remote", "add", "origin", smart_http)
    make_task(a, "W-1", body="over http")
    make_task(a, "W-2")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        assert hsync.pull(ledger.refs).ok
        assert ledger.task_ids() == ["W-1", "W-2"]
        ledger.add_context("W-2", "b over http", "b")
        ledger.set_status("W-1", "cancelled")
        ledger.archive(["W-1"])
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
        assert ledger.task_ids() == ["W-2"]
        assert "b over http" in _bodies(ledger, "W-2")
    fsck(a)
    fsck(b)


def test_two_archives_of_different_changes_merge_into_one_live_task(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    make_task(a, "Z-1")
    with Ledger(a) as ledger:
        assert hsync.sync(ledger.refs).ok
    with Ledger(b) as ledger:
        assert hsync.sync(ledger.refs).ok

    def at(seconds: int) -> None:
        for name in ("GIT_COMMITTER_DATE", "GIT_AUTHOR_DATE"):
            monkeypatch.setenv(name, f"@{seconds} +0000")

    at(1_800_000_000)  # A's archive is the older one: the archives' merge keeps B's entry
    with Ledger(a) as ledger:
        ledger.add_context("Z-1", "only A has this", "a")
        ledger.set_status("Z-1", "cancelled")
        ledger.archive(["Z-1"])
    at(1_800_000_100)
    with Ledger(b) as ledger:
        ledger.set_status("Z-1", "cancelled")
        ledger.archive(["Z-1"])
        assert hsync.sync(ledger.refs).ok
    at(1_800_000_200)
    with Ledger(a) as ledger:
        report = hsync.sync(ledger.refs)
        assert report.ok, report.as_dict()
        assert ("Z-1", "unarchived") in [(o.name, o.action) for o in report.outcomes]
    with Ledger(b) as ledger:
        assert hsync.sync(ledger.refs).ok
    for path in (a, b):
        with Ledger(path) as ledger:
            assert ledger.task_ids() == ["Z-1"]
            assert ledger.list_tasks(archived=True) == []
            assert _bodies(ledger, "Z-1") == {"only A has this"}


def test_a_task_ref_at_no_commit_is_never_pushed(tmp_path: Path, remote: Path) -> None:
    # pushed, a ref at a blob or a tree would be pulled as a damaged task by every clone
    local = clone(remote, tmp_path / "local")
    make_task(local, "OK-1")
    blob = git(local, "hash-object", "-w", "--stdin", input="not a task\n").strip()
    git(local, "update-ref", "refs/hydrate/tasks/BAD-1", blob)
    pushed = hydrate(local, "push", "origin")
    assert pushed.returncode == 1
    assert "SKIPPED        BAD-1  (damaged: its ref points at a blob, not a" in pushed.stdout
    assert pushed.stderr == "error: skipped: BAD-1 (the report above says why)\n"
    assert list(hydrate_refs(remote)) == ["refs/hydrate/tasks/OK-1"]
    named = hydrate(local, "--compact", "push", "origin", "BAD-1", "--json")
    assert named.returncode == 1
    assert [t["action"] for t in json.loads(named.stdout)["tasks"]] == ["skipped"]
    assert list(hydrate_refs(remote)) == ["refs/hydrate/tasks/OK-1"]


def test_a_task_ref_at_a_missing_object_or_none_is_skipped_alone(
    tmp_path: Path, remote: Path
) -> None:
    """A ref file naming an object this repository lacks made git refuse the whole
    push (an unpacker error for every task), and one holding no object id was
    reported as deleted there; each is now skipped alone, the rest pushed, doctor
    names the ways out, and a pull that git stops on points at doctor."""
    local = clone(remote, tmp_path / "local")
    make_task(local, "OK-1")
    refs_dir = local / ".git" / "refs" / "hydrate" / "tasks"
    (refs_dir / "BAD-1").write_text("0" * 39 + "1\n")
    (refs_dir / "BAD-5").write_text("garbage\n")
    pushed = hydrate(local, "push", "origin")
    assert pushed.returncode == 1, pushed.stdout
    lacks = f"points at {'0' * 39}1, an object this repository lacks; see: git hydrate doctor)"
    assert f"  SKIPPED        BAD-1  (damaged: its ref {lacks}" in pushed.stdout
    assert (
        "  SKIPPED        BAD-5  (damaged: its ref holds no object id; see: git hydrate doctor)"
        in pushed.stdout
    )
    assert "deleted there" not in pushed.stdout
    assert list(hydrate_refs(remote)) == ["refs/hydrate/tasks/OK-1"], pushed.stdout
    doctor = hydrate(local, "doctor").stdout
    # (refs written by hand: no reflog to reset them from, and doctor says so)
    assert (
        "problem BAD-5: its ref holds no object id, and it has no reflog to reset it from; "
        "git update-ref -d refs/hydrate/tasks/BAD-5 drops it" in doctor
    )
    assert "git update-ref -d refs/hydrate/tasks/BAD-1 drops it" in doctor
    pulled = hydrate(local, "pull", "origin")
    assert pulled.returncode != 0
    assert pulled.stderr.endswith("that ref is damaged here; see: git hydrate doctor\n")
    assert pulled.stderr.count("\n") == 1


def test_an_empty_task_ref_file_deletes_nothing_on_the_remote(
    tmp_path: Path, remote: Path
) -> None:
    """A task ref file emptied here (a crash, a tool): git ignores it, and a push of
    every task sent its deletion, so the remote lost the task and the push said
    "deleted there" with exit 0. It is skipped alone now, and doctor names it."""
    local = clone(remote, tmp_path / "local")
    make_task(local, "K-1")
    make_task(local, "K-2")
    assert hydrate(local, "push", "origin").returncode == 0
    there = hydrate_refs(remote)
    (local / ".git" / "refs" / "hydrate" / "tasks" / "K-1").write_bytes(b"")
    pushed = hydrate(local, "push", "origin")
    assert pushed.returncode == 1, pushed.stdout
    assert "  SKIPPED        K-1  (damaged: its ref holds no object id;" in pushed.stdout
    assert "deleted there" not in pushed.stdout
    assert hydrate_refs(remote) == there
    assert "problem K-1: its ref holds no object id;" in hydrate(local, "doctor").stdout


def test_removing_a_task_ref_at_no_commit_keeps_the_repository_sound(
    tmp_path: Path, remote: Path
) -> None:
    # the removal record keeps removed tips as parents; a blob cannot be one
    blob = git(remote, "hash-object", "-w", "--stdin", input="not a task\n").strip()
    git(remote, "update-ref", "refs/hydrate/tasks/BAD-1", blob)
    local = clone(remote, tmp_path / "local")
    git(local, "update-ref", "refs/hydrate/tasks/BAD-2", git(local, "write-tree").strip())
    removed = hydrate(local, "task-rm", "BAD-2")
    assert removed.returncode == 0, removed.stderr
    fsck(local)
    there = hydrate(local, "task-rm", "BAD-1", "--remote", "origin")
    assert there.returncode == 0, there.stderr
    assert "deleted on origin" in there.stdout
    assert hydrate_refs(remote) == {}
    fsck(local)
    fsck(remote)
    assert set(json.loads(git(local, "show", "refs/hydrate/removed:removed.json"))["removed"]) == {
        "BAD-1",
        "BAD-2",
    }


@pytest.mark.parametrize("local_only", [False, True])
def test_sync_counts_a_task_it_pulled_once(remote: Path, tmp_path: Path, local_only: bool) -> None:
    """A task the pull brought was counted again as up to date by the push that
    followed (or by the no-op check): a lead's ``sync`` of a fleet's six tasks said
    ``4 updated, 6 up to date``. Each task is counted once: 2 updated, 1 up to date.
    (``local_only``: a task of this clone alone, which the push sends.)"""
    a = clone(remote, tmp_path / "a")
    b = clone(remote, tmp_path / "b")
    for task_id in ("T-1", "T-2", "T-3"):
        make_task(a, task_id)
    assert hydrate(a, "push").returncode == 0
    assert hydrate(b, "pull").returncode == 0
    with Ledger(a) as ledger:
        ledger.edit_task("T-1", title="changed by a")
        ledger.edit_task("T-2", title="changed by a")
    assert hydrate(a, "push").returncode == 0
    if local_only:
        make_task(b, "L-1")
    res = hydrate(b, "sync", "--json")
    assert res.returncode == 0, res.stderr
    counts = json.loads(res.stdout)["counts"]
    expected = {"fast-forward": 2, "up-to-date": 1}
    assert counts == ({**expected, "pushed-new": 1} if local_only else expected)
