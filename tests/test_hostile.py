"""Hostile data: what a crafted remote or a look-alike text must not achieve."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from git_hydrate import Ledger

from .conftest import git, hydrate

ESC_TITLE = "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07 \x1b[2J\x9b31m\u202eowned"


def replace_in_task(repo: Path, task_id: str, name: str, data: bytes) -> None:
    """Rewrite one top-level file of a task's tip tree, as a crafted remote would."""
    ref = f"refs/hydrate/tasks/{task_id}"
    blob = git(repo, "hash-object", "-w", "--stdin", input=data.decode()).strip()
    listing = git(repo, "ls-tree", ref)
    lines = [ln for ln in listing.splitlines() if not ln.endswith(f"\t{name}")]
    lines.append(f"100644 blob {blob}\t{name}")
    tree = git(repo, "mktree", input="\n".join(lines) + "\n").strip()
    commit = git(repo, "commit-tree", tree, "-p", ref, "-m", "hydrate: crafted").strip()
    git(repo, "update-ref", ref, commit)


def _task_with_title(repo: Path, task_id: str, title: str) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective="o", acceptance="a")
        ledger.add_context(task_id, "body\n", "notes")
    doc = json.loads(git(repo, "cat-file", "blob", f"refs/hydrate/tasks/{task_id}:task.json"))
    doc["title"] = title
    doc["kind"] = "code"
    replace_in_task(repo, task_id, "task.json", json.dumps(doc).encode())


def test_human_output_escapes_terminal_controls_and_json_keeps_them(repo: Path) -> None:
    _task_with_title(repo, "T-1", ESC_TITLE)
    for args in (["list"], ["show", "T-1"], ["status"], ["status", "T-1"], ["log", "T-1"]):
        res = hydrate(repo, *args)
        assert res.returncode == 0, (args, res)
        for control in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert control not in res.stdout + res.stderr, (args, res.stdout)
    shown = hydrate(repo, "show", "T-1").stdout
    assert "\\x1b]8;;https://evil.example/\\x07click" in shown
    assert "\\u202eowned" in shown
    data = json.loads(hydrate(repo, "show", "T-1", "--json").stdout)
    assert data["title"] == ESC_TITLE


def test_shown_escapes_every_control_kind() -> None:
    from git_hydrate.cli._common import shown, shown_block

    assert shown("plain title · ünïcode") == "plain title · ünïcode"
    assert shown("a\x1b[31mb\nc\x7f\x85") == "a\\x1b[31mb\\x0ac\\x7f\\x85"
    assert shown_block("line 1\n\tline\x1b 2") == "line 1\n\tline\\x1b 2"


# -- foreign entries in task, archive and removal trees --------------------------------

FAKE_COMMIT = "1234567890abcdef1234567890abcdef12345678"


def _add_entries(repo: Path, tree: str, lines: list[str], under: str = "") -> str:
    """``tree`` with ``lines`` (mktree lines) added, at ``under`` (a subtree path)."""
    if under:
        head, _, rest = under.partition("/")
        listing = git(repo, "ls-tree", tree).splitlines()
        sub = next(ln.split()[2] for ln in listing if ln.endswith(f"\t{head}"))
        new_sub = _add_entries(repo, sub, lines, rest)
        kept = [ln for ln in listing if not ln.endswith(f"\t{head}")]
        return git(
            repo, "mktree", "--missing", input="\n".join([*kept, f"040000 tree {new_sub}\t{head}"])
        ).strip()
    listing = git(repo, "ls-tree", tree).splitlines()
    return git(repo, "mktree", "--missing", input="\n".join(listing + lines) + "\n").strip()


def _craft(repo: Path, ref: str, lines: list[str], under: str = "") -> None:
    tree = _add_entries(repo, f"{ref}^{{tree}}", lines, under)
    commit = git(repo, "commit-tree", tree, "-p", ref, "-m", "hydrate: crafted").strip()
    git(repo, "update-ref", ref, commit)


def _remote(tmp_path: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    return bare


def _clone(remote: Path, dest: Path) -> Path:
    git(dest.parent, "init", "-q", "-b", "main", str(dest))
    git(dest, "remote", "add", "origin", str(remote))
    git(dest, "commit", "-q", "--allow-empty", "-m", "initial")
    return dest


def test_a_task_tree_with_foreign_entries_is_refused_on_pull(tmp_path: Path) -> None:
    from .conftest import fsck

    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    for task_id in ("GOOD", "LINK", "SYM", "DOTGIT", "BODYLINK", "EXEC"):
        with Ledger(a) as ledger:
            ledger.add_task(task_id, objective="o", acceptance="a")
            ledger.add_context(task_id, f"body of {task_id}\n", "notes")
    blob = git(a, "hash-object", "-w", "--stdin", input="/etc/passwd").strip()
    _craft(a, "refs/hydrate/tasks/LINK", [f"160000 commit {FAKE_COMMIT}\tevil"])
    _craft(a, "refs/hydrate/tasks/SYM", [f"120000 blob {blob}\tlinks.jsonx"])
    _craft(a, "refs/hydrate/tasks/DOTGIT", [f"100644 blob {blob}\t.git"])
    _craft(a, "refs/hydrate/tasks/EXEC", [f"100755 blob {blob}\trun.sh"])
    fan = git(a, "ls-tree", "refs/hydrate/tasks/BODYLINK:bodies").split()[3]
    _craft(
        a,
        "refs/hydrate/tasks/BODYLINK",
        [f"160000 commit {FAKE_COMMIT}\t{'0' * 64}"],
        f"bodies/{fan}",
    )
    doctor = hydrate(a, "doctor")
    assert doctor.returncode == 1
    assert "problem LINK: foreign entry evil (a gitlink (submodule))" in doctor.stdout
    assert "problem SYM: foreign entry links.jsonx (a symlink)" in doctor.stdout
    assert "problem DOTGIT: foreign entry .git (a file)" in doctor.stdout
    assert f"problem BODYLINK: foreign entry bodies/{fan}/{'0' * 64} (a gitlink" in doctor.stdout
    assert "ok      GOOD" in doctor.stdout
    git(a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")

    b = _clone(remote, tmp_path / "b")
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 1
    actions = {t["task_id"]: (t["action"], t["detail"]) for t in json.loads(res.stdout)["tasks"]}
    assert actions["GOOD"][0] == "created"
    assert actions["LINK"] == (
        "skipped",
        "remote data invalid: task LINK: foreign entry evil (a gitlink (submodule))",
    )
    for task_id in ("SYM", "DOTGIT", "BODYLINK", "EXEC"):
        assert actions[task_id][0] == "skipped"
        assert "foreign entry" in actions[task_id][1]
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks").split() == [
        "refs/hydrate/tasks/GOOD"
    ]
    # git fsck checks every object, reachable or not: the fetched tree holding
    # ".git" is flagged whatever the pull decides. Nothing else may be.
    proc = subprocess.run(
        ["git", "fsck", "--strict", "--no-progress"], cwd=b, capture_output=True, text=True
    )
    dotgit = git(b, "rev-parse", "refs/hydrate-remotes/origin/tasks/DOTGIT^{tree}").strip()
    assert proc.stderr.strip() == f"error in tree {dotgit}: hasDotgit: contains '.git'"
    git(b, "update-ref", "-d", "refs/hydrate-remotes/origin/tasks/DOTGIT")
    git(b, "prune", "--expire=now")
    fsck(b)


def _archived(repo: Path, task_id: str) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective="o", acceptance="a")
        ledger.add_context(task_id, f"body of {task_id}\n", "notes")
    assert hydrate(repo, "status", task_id, "--set", "cancelled").returncode == 0
    assert hydrate(repo, "archive", task_id).returncode == 0


def test_a_remote_archive_with_a_gitlink_is_refused_and_fsck_stays_clean(tmp_path: Path) -> None:
    from .conftest import fsck

    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    b = _clone(remote, tmp_path / "b")
    _archived(a, "DONE-A")
    _craft(a, "refs/hydrate/archive", [f"160000 commit {FAKE_COMMIT}\tevil"], "tasks/DONE-A")
    doctor = hydrate(a, "doctor")
    assert doctor.returncode == 1
    assert (
        "problem refs/hydrate/archive: foreign entry tasks/DONE-A/evil (a gitlink (submodule))"
        in doctor.stdout
    )
    git(a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    _archived(b, "DONE-B")  # b has an archive of its own: the pull would merge the two
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 1
    outcomes = {t["ref"]: (t["action"], t["detail"]) for t in json.loads(res.stdout)["refs"]}
    action, detail = outcomes["refs/hydrate/archive"]
    assert action == "skipped"
    assert "foreign entry tasks/DONE-A/evil (a gitlink (submodule))" in detail
    fsck(b)
    assert "evil" not in git(b, "ls-tree", "-r", "refs/hydrate/archive")


def test_the_union_merge_keeps_modes_and_refuses_foreign_kinds(tmp_path: Path) -> None:
    from git_hydrate.errors import CorruptData
    from git_hydrate.store import Repository
    from git_hydrate.sync import union

    repo = _clone(_remote(tmp_path), tmp_path / "a")
    blob = git(repo, "hash-object", "-w", "--stdin", input="{}\n").strip()
    sub = git(repo, "mktree", input=f"100644 blob {blob}\tindex.json\n").strip()
    plain = git(repo, "mktree", input=f"040000 tree {sub}\ttasks\n100644 blob {blob}\tx.json\n")
    with_link = git(
        repo, "mktree", "--missing", input=f"160000 commit {FAKE_COMMIT}\tevil\n"
    ).strip()
    with Repository(repo) as store:
        merged = union._merge_trees(
            store, None, plain.strip().encode(), plain.strip().encode(), True
        )
        assert (
            git(repo, "ls-tree", "-r", "-t", merged.decode()).split("\n")[0].startswith("040000")
        )
        try:
            union._merge_trees(store, None, plain.strip().encode(), with_link.encode(), True)
        except CorruptData as exc:
            assert "foreign entry evil (a gitlink (submodule))" in str(exc)
        else:
            raise AssertionError("a gitlink was carried")


# -- remote claims about local tasks -------------------------------------------------


def test_a_remote_archive_naming_a_live_task_at_a_missing_tip_does_not_drop_it(
    tmp_path: Path,
) -> None:
    from git_hydrate import codec
    from git_hydrate.model import ArchivedTask, ArchiveIndex

    from .conftest import fsck

    remote = _remote(tmp_path)
    victim = _clone(remote, tmp_path / "victim")
    with Ledger(victim) as ledger:
        ledger.add_task("LIVE-1", objective="o", acceptance="a")
        ledger.add_context("LIVE-1", "the victim's notes\n", "notes")
    git(victim, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    attacker = _clone(remote, tmp_path / "attacker")
    git(attacker, "fetch", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    live_tip = git(attacker, "rev-parse", "refs/hydrate/tasks/LIVE-1").strip()
    for claimed in ("0" * 40, git(attacker, "rev-parse", "main").strip()):
        index = ArchiveIndex(
            tasks={
                "LIVE-1": ArchivedTask(
                    tip=claimed, title="t", status="done", kind="code", priority=2
                )
            }
        )
        blob = git(attacker, "hash-object", "-w", "--stdin", input=codec.encode(index).decode())
        tree = git(attacker, "mktree", input=f"100644 blob {blob.strip()}\tindex.json\n").strip()
        # the victim's own tip as a parent: the archive "covers" it
        evil = git(attacker, "commit-tree", tree, "-p", live_tip, "-m", "archive").strip()
        git(attacker, "push", "-q", "-f", "origin", f"{evil}:refs/hydrate/archive")
        res = hydrate(victim, "pull", "--json")
        tasks = {t["task_id"]: t for t in json.loads(res.stdout)["tasks"]}
        assert tasks["LIVE-1"]["action"] == "kept", res.stdout
        assert f"the archive names it at {claimed[:12]}" in tasks["LIVE-1"]["detail"]
        assert git(victim, "rev-parse", "refs/hydrate/tasks/LIVE-1").strip() == live_tip
        shown = hydrate(victim, "show", "LIVE-1")
        assert shown.returncode == 0 and "(archived)" not in shown.stdout
        git(victim, "update-ref", "-d", "refs/hydrate/archive")
    fsck(victim)


# -- denial of service and out-of-range data -------------------------------------------

DEEP = b"[" * 5000 + b"]" * 5000


def test_deeply_nested_remote_json_is_refused_per_document(tmp_path: Path) -> None:
    from .conftest import fsck

    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    for task_id in ("GOOD", "DEEP-TASK", "DEEP-LINKS"):
        with Ledger(a) as ledger:
            ledger.add_task(task_id, objective="o", acceptance="a")
    replace_in_task(
        a, "DEEP-TASK", "task.json", b'{"format":1,"id":"DEEP-TASK","title":' + DEEP + b"}"
    )
    replace_in_task(a, "DEEP-LINKS", "links.json", b'{"format":1,"links":' + DEEP + b"}")
    # the removal record and the archive index, nested as deep
    for ref, name in (
        ("refs/hydrate/removed", "removed.json"),
        ("refs/hydrate/archive", "index.json"),
    ):
        blob = git(a, "hash-object", "-w", "--stdin", input=(b'{"x":' + DEEP + b"}").decode())
        tree = git(a, "mktree", input=f"100644 blob {blob.strip()}\t{name}\n").strip()
        git(a, "update-ref", ref, git(a, "commit-tree", tree, "-m", "deep").strip())
    listed = hydrate(a, "list")  # locally too: one damaged task, the others listed
    assert listed.returncode == 0, listed
    assert "DEEP-TASK\tdamaged\ttask DEEP-TASK: task.json: JSON nested deeper than 64" in (
        listed.stdout
    )
    assert "GOOD\topen" in listed.stdout
    git(a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")

    b = _clone(remote, tmp_path / "b")
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    tasks = {t["task_id"]: (t["action"], t["detail"]) for t in data["tasks"]}
    refs = {t["ref"]: (t["action"], t["detail"]) for t in data["refs"]}
    assert tasks["GOOD"][0] == "created"
    assert tasks["DEEP-TASK"] == (
        "skipped",
        "remote data invalid: task DEEP-TASK: task.json: JSON nested deeper than 64 levels",
    )
    assert tasks["DEEP-LINKS"][0] == "skipped"
    assert "links.json: JSON nested deeper than 64 levels" in tasks["DEEP-LINKS"][1]
    assert refs["refs/hydrate/removed"][0] == "skipped"
    assert "removed.json: JSON nested deeper" in refs["refs/hydrate/removed"][1]
    assert refs["refs/hydrate/archive"][0] == "skipped"
    assert "index.json: JSON nested deeper" in refs["refs/hydrate/archive"][1]
    fsck(b)


def test_an_expiry_outside_the_date_range_is_corrupt_data_for_that_link(tmp_path: Path) -> None:
    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    for task_id, expires in (("FAR", 253402300800), ("NEG", -1), ("OK-1", 253402300799)):
        with Ledger(a) as ledger:
            ledger.add_task(task_id, objective="o", acceptance="a")
            ledger.add_context(task_id, f"body {task_id}\n", "notes", ttl=60)
        ref = f"refs/hydrate/tasks/{task_id}:links.json"
        links = json.loads(git(a, "cat-file", "blob", ref))
        links["links"][0]["expires"] = expires
        replace_in_task(a, task_id, "links.json", json.dumps(links).encode())
    shown = hydrate(a, "show", "FAR")
    assert shown.returncode == 1
    assert "links.json: Expected `int` <= 253402300799 - at `$.links[0].expires`" in shown.stderr
    assert hydrate(a, "show", "OK-1").returncode == 0
    git(a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    b = _clone(remote, tmp_path / "b")
    res = hydrate(b, "pull", "--json")
    assert "Traceback" not in res.stderr and "bug" not in res.stderr
    tasks = {t["task_id"]: (t["action"], t["detail"]) for t in json.loads(res.stdout)["tasks"]}
    assert tasks["FAR"][0] == "skipped" and "$.links[0].expires" in tasks["FAR"][1]
    assert tasks["NEG"][0] == "skipped" and "Expected `int` >= 0" in tasks["NEG"][1]
    assert tasks["OK-1"][0] == "created"
    assert hydrate(b, "show", "OK-1").returncode == 0


def test_a_bad_station_is_a_usage_error_listing_the_valid_ones(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("A-1", objective="o", acceptance="a")
    for args in (
        ["status", "A-1", "--set", "nope"],
        ["list", "--status", "nope"],
        ["status", "--station", "nope"],
    ):
        res = hydrate(repo, *args)
        assert res.returncode == 2, (args, res)
        assert res.stdout == ""
        assert "'nope' is not one of 'open', 'in_progress', 'blocked', 'review', 'done', " in (
            res.stderr
        )


# -- credentials in free text ----------------------------------------------------------

SECRET_LINE = "DB_PASSWORD=" + "Tr0ub4dor" + "Xyz93"
SECRET_URL = "postgres://app:" + "hunter2" + "secret@db:5432/app"


def test_every_free_text_field_is_scanned_for_secrets(repo: Path) -> None:
    assert (
        hydrate(repo, "task-add", "T-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    refused = [
        (["task-add", "T-2", "--objective", SECRET_LINE, "--acceptance", "a"], "objective"),
        (["task-add", "T-2", "--objective", "o", "--acceptance", SECRET_LINE], "acceptance"),
        (
            ["task-add", "T-2", "--objective", "o", "--acceptance", "a", "--title", SECRET_URL],
            "title",
        ),
        (
            [
                "task-add",
                "T-2",
                "--objective",
                "o",
                "--acceptance",
                "a",
                "--criterion",
                SECRET_URL,
            ],
            "acceptance criterion",
        ),
        (
            [
                "task-add",
                "T-2",
                "--objective",
                "o",
                "--acceptance",
                "a",
                "--file-in-play",
                "app.py:" + SECRET_URL,
            ],
            "file in play",
        ),
        (["task-edit", "T-1", "--objective", "x\n" + SECRET_LINE], "objective"),
        (["checkpoint", "T-1", "--summary", SECRET_URL, "--tokens", "1"], "checkpoint summary"),
        (
            [
                "checkpoint",
                "T-1",
                "--summary",
                "s",
                "--evidence",
                "log:\n" + SECRET_LINE,
                "--tokens",
                "1",
            ],
            "checkpoint evidence",
        ),
        (
            ["checkpoint", "T-1", "--summary", "s", "--next-step", SECRET_URL, "--tokens", "1"],
            "checkpoint next step",
        ),
        (["context-add", "T-1", "--text", "body", "--source-label", SECRET_URL], "source label"),
    ]
    before = git(repo, "for-each-ref", "refs/hydrate")
    for args, what in refused:
        res = hydrate(repo, *args)
        assert res.returncode == 1, (args, res)
        assert res.stderr.startswith(f"error: {what} looks like it contains a secret ("), res
        assert "Tr0ub4dor" not in res.stderr and "hunter2" not in res.stderr
        assert "--allow-secrets" in res.stderr
    assert git(repo, "for-each-ref", "refs/hydrate") == before  # nothing written
    # the same switches as for bodies
    for args, _what in refused:
        assert hydrate(repo, *args, "--allow-secrets").returncode == 0, args
        if args[0] == "task-add":
            git(repo, "update-ref", "-d", "refs/hydrate/tasks/T-2")
    git(repo, "config", "hydrate.allowSecrets", "true")
    assert hydrate(repo, *refused[0][0]).returncode == 0
    git(repo, "config", "hydrate.allowSecrets", "")  # git reads "" as false
    assert hydrate(repo, "task-edit", "T-2", "--acceptance", SECRET_LINE).returncode == 1


def test_the_api_takes_allow_secrets_for_free_text(repo: Path) -> None:
    from git_hydrate import SecretDetected

    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
        for call in (
            lambda: ledger.add_task("T-2", objective=SECRET_LINE, acceptance="a"),
            lambda: ledger.edit_task("T-1", title=SECRET_URL),
            lambda: ledger.add_checkpoint("T-1", "s", SECRET_LINE, "", 1),
        ):
            try:
                call()
            except SecretDetected:
                pass
            else:
                raise AssertionError("a secret was stored")
        ledger.add_task("T-2", objective=SECRET_LINE, acceptance="a", allow_secrets=True)
        ledger.edit_task("T-1", title=SECRET_URL, allow_secrets=True)
        ledger.add_checkpoint("T-1", "s", SECRET_LINE, "", 1, allow_secrets=True)


# -- fields a newer version wrote --------------------------------------------------------


def _doc(repo: Path, task_id: str, name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads(
        git(repo, "cat-file", "blob", f"refs/hydrate/tasks/{task_id}:{name}")
    )
    return data


def test_unknown_top_level_fields_survive_a_local_write(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
    doc = _doc(repo, "T-1", "task.json")
    doc["zz_future"] = {"nested": [1, 2]}
    doc["a_future"] = "kept"
    replace_in_task(repo, "T-1", "task.json", json.dumps(doc).encode())
    assert hydrate(repo, "task-edit", "T-1", "--priority", "1").returncode == 0
    assert hydrate(repo, "checkpoint", "T-1", "--summary", "s", "--tokens", "5").returncode == 0
    assert hydrate(repo, "context-add", "T-1", "--text", "body").returncode == 0
    after = _doc(repo, "T-1", "task.json")
    assert after["zz_future"] == {"nested": [1, 2]} and after["a_future"] == "kept"
    assert after["priority"] == 1 and len(after["checkpoints"]) == 1  # type: ignore[arg-type]
    raw = git(repo, "cat-file", "blob", "refs/hydrate/tasks/T-1:task.json")
    assert raw.endswith('"a_future":"kept","zz_future":{"nested":[1,2]}}\n')  # deterministic


def test_unknown_top_level_fields_survive_a_sync_merge(tmp_path: Path) -> None:
    """A newer version's field, on either side of a merge, is in the merged task."""
    from .conftest import fsck

    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    with Ledger(a) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
    assert hydrate(a, "push").returncode == 0
    b = _clone(remote, tmp_path / "b")
    assert hydrate(b, "pull").returncode == 0
    # a newer version on A writes two fields; B, older, edits the task meanwhile
    doc = _doc(a, "T-1", "task.json")
    doc["zz_future"] = {"from": "a"}
    doc["shared"] = "a's value"
    replace_in_task(a, "T-1", "task.json", json.dumps(doc).encode())
    assert hydrate(a, "push").returncode == 0
    doc = _doc(b, "T-1", "task.json")
    doc["b_future"] = [1, 2]
    doc["shared"] = "b's value"
    replace_in_task(b, "T-1", "task.json", json.dumps(doc).encode())
    # commit times are in seconds: B's edit is the newer side, dated a minute on
    # (git's date variables, as the writes read them) instead of waiting a second
    later = {
        v: f"@{int(time.time()) + 60} +0000" for v in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
    }
    assert hydrate(b, "task-edit", "T-1", "--priority", "3", env=later).returncode == 0
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 0, res
    assert git(b, "rev-list", "--parents", "-n", "1", "refs/hydrate/tasks/T-1").count(" ") == 2
    after = _doc(b, "T-1", "task.json")
    assert after["zz_future"] == {"from": "a"} and after["b_future"] == [1, 2]
    assert after["shared"] == "b's value"  # the newer side's, as for known fields
    assert after["priority"] == 3
    fsck(b)


def test_unknown_nested_fields_refuse_the_write_by_name(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
        ledger.add_checkpoint("T-1", "s", "e", "n", 1)
        ledger.add_context("T-1", "body\n", "notes")
    doc = _doc(repo, "T-1", "task.json")
    doc["checkpoints"][0]["mood"] = "fine"  # type: ignore[index]
    replace_in_task(repo, "T-1", "task.json", json.dumps(doc).encode())
    tip = git(repo, "rev-parse", "refs/hydrate/tasks/T-1")
    res = hydrate(repo, "task-edit", "T-1", "--priority", "1")
    assert res.returncode == 1
    assert res.stderr == (
        "error: task T-1 holds fields this git-hydrate does not know "
        "(task.json $.checkpoints[0].mood); a write would drop them: "
        "upgrade git-hydrate to change this task\n"
    )
    assert git(repo, "rev-parse", "refs/hydrate/tasks/T-1") == tip
    # a link field this version does not know
    doc["checkpoints"][0].pop("mood")  # type: ignore[index]
    replace_in_task(repo, "T-1", "task.json", json.dumps(doc).encode())
    links = _doc(repo, "T-1", "links.json")
    links["links"][0]["label"] = "from the future"  # type: ignore[index]
    replace_in_task(repo, "T-1", "links.json", json.dumps(links).encode())
    res = hydrate(repo, "context-add", "T-1", "--text", "more")
    assert res.returncode == 1
    assert "(links.json $.links[" in res.stderr and "].label)" in res.stderr
    assert hydrate(repo, "show", "T-1").returncode == 0  # reading is unaffected


def test_a_local_write_does_not_carry_foreign_top_level_entries(repo: Path) -> None:
    from .conftest import fsck

    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
        ledger.add_context("T-1", "body\n", "notes")
    blob = git(repo, "hash-object", "-w", "--stdin", input="x").strip()
    _craft(
        repo,
        "refs/hydrate/tasks/T-1",
        [
            f"160000 commit {FAKE_COMMIT}\tevil",
            f"120000 blob {blob}\tlink",
            f"100755 blob {blob}\trun",
        ],
    )
    assert "foreign entry evil" in hydrate(repo, "doctor").stdout
    assert hydrate(repo, "task-edit", "T-1", "--priority", "1").returncode == 0
    names = git(repo, "ls-tree", "--name-only", "refs/hydrate/tasks/T-1").split()
    assert names == ["bodies", "links.json", "task.json"]
    assert hydrate(repo, "doctor").returncode == 0
    fsck(repo)


def test_a_stale_packed_refs_lock_is_named_at_once_and_cleared_by_doctor(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    from git_hydrate.taskrefs import retry

    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
    # git's own wait for packed-refs.lock (core.packedRefsTimeout, 1 s by default, at
    # each of the two refusals below) is not what is tested: hydrate's answer is
    git(repo, "config", "core.packedRefsTimeout", "0")
    lock = repo / ".git" / "packed-refs.lock"
    lock.write_text("")
    os.utime(lock, (time.time() - 600, time.time() - 600))
    # deleting a ref needs packed-refs.lock: task-rm, archive
    assert hydrate(repo, "status", "T-1", "--set", "cancelled").returncode == 0
    slept: list[float] = []
    monkeypatch.setattr(retry.time, "sleep", slept.append)  # every back-off, recorded
    for args in (["task-rm", "T-1"], ["archive", "T-1"]):
        res = hydrate(repo, *args)
        assert slept == []  # given up at once, not retried (for a minute and more)
        assert res.returncode == 75, res
        assert f"is locked by {lock} (" in res.stderr
        assert "git hydrate doctor --clear-stale-locks" in res.stderr
    assert f"lock    {lock}" in hydrate(repo, "doctor").stdout
    cleared = hydrate(repo, "doctor", "--clear-stale-locks")
    assert f"removed stale lock {lock}" in cleared.stdout
    assert not lock.exists()
    assert hydrate(repo, "archive", "T-1").returncode == 0


def test_unknown_nested_fields_stop_a_merge_of_that_task_only(tmp_path: Path) -> None:
    """A merge cannot keep a newer version's nested field: it changes neither side of
    that task, names the field, and merges the others; a fast-forward keeps it."""
    remote = _remote(tmp_path)
    a = _clone(remote, tmp_path / "a")
    with Ledger(a) as ledger:
        for task_id in ("T-1", "T-2"):
            ledger.add_task(task_id, objective="o", acceptance="a")
            ledger.add_checkpoint(task_id, "s", "e", "n", 1)
    assert hydrate(a, "push").returncode == 0
    b = _clone(remote, tmp_path / "b")
    c = _clone(remote, tmp_path / "c")
    assert hydrate(b, "pull").returncode == 0
    assert hydrate(c, "pull").returncode == 0
    doc = _doc(a, "T-1", "task.json")
    doc["checkpoints"][0]["mood"] = "fine"  # type: ignore[index]
    replace_in_task(a, "T-1", "task.json", json.dumps(doc).encode())
    assert hydrate(a, "task-edit", "T-2", "--priority", "1").returncode == 0
    assert git(a, "push", "-q", "origin", "refs/hydrate/tasks/*:refs/hydrate/tasks/*") == ""
    assert hydrate(b, "task-edit", "T-1", "--priority", "3").returncode == 0
    assert hydrate(b, "task-edit", "T-2", "--title", "b's title").returncode == 0
    before = git(b, "rev-parse", "refs/hydrate/tasks/T-1")
    res = hydrate(b, "pull", "--json")
    assert res.returncode == 1
    outcomes = {o["task_id"]: o for o in json.loads(res.stdout)["tasks"]}
    assert outcomes["T-1"]["action"] == "skipped"
    assert (
        "the remote task holds fields this git-hydrate does not know"
        in (outcomes["T-1"]["detail"])
    )
    assert "task.json $.checkpoints[0].mood" in outcomes["T-1"]["detail"]
    assert outcomes["T-2"]["action"] == "merged"
    assert git(b, "rev-parse", "refs/hydrate/tasks/T-1") == before
    # A clone with no change of its own takes the remote commit whole: nothing is lost.
    assert hydrate(c, "pull").returncode == 0
    assert _doc(c, "T-1", "task.json")["checkpoints"][0]["mood"] == "fine"  # type: ignore[index]


def test_unknown_link_fields_of_a_fanned_out_task_refuse_the_write(repo: Path) -> None:
    """Found in review: a task of more than 1,000 links lost a newer version's link
    field on a local write, where a smaller task's write was refused by name."""
    with Ledger(repo) as ledger:
        ledger.add_task("F-1", objective="o", acceptance="a")
        ledger.add_contexts("F-1", [(f"body {i}\n", f"s{i}", 0, None) for i in range(1010)])
    ref = "refs/hydrate/tasks/F-1"
    shard = json.loads(git(repo, "cat-file", "blob", f"{ref}:links/0.json"))
    shard["links"][0]["label"] = "from the future"
    blob = git(repo, "hash-object", "-w", "--stdin", input=json.dumps(shard)).strip()
    sub = [ln for ln in git(repo, "ls-tree", f"{ref}:links").splitlines()]
    sub = [ln for ln in sub if not ln.endswith("\t0.json")] + [f"100644 blob {blob}\t0.json"]
    links_tree = git(repo, "mktree", input="\n".join(sub) + "\n").strip()
    top = [ln for ln in git(repo, "ls-tree", ref).splitlines() if not ln.endswith("\tlinks")]
    top.append(f"040000 tree {links_tree}\tlinks")
    tree = git(repo, "mktree", input="\n".join(top) + "\n").strip()
    commit = git(repo, "commit-tree", tree, "-p", ref, "-m", "hydrate: crafted").strip()
    git(repo, "update-ref", ref, commit)
    other = next(lk for lk in shard["links"][1:] if lk["sha256"].startswith("0"))
    res = hydrate(repo, "context-rm", "F-1", other["sha256"])
    assert res.returncode == 1, res
    assert "links/0.json $.links[" in res.stderr and ".label" in res.stderr
    assert git(repo, "rev-parse", ref).strip() == commit


@pytest.mark.parametrize(
    ("document", "deep"),
    [
        (b'{"a":[' * 40 + b"1" + b"]}" * 40, True),  # (80 levels, objects and arrays in turn)
        (b"[" * 64 + b"]" * 64, False),
        (b"[" * 65 + b"]" * 65, True),
        (b'["[[[[[[\\"[[["' + b",[]" * 200 + b"]", False),  # (brackets in strings)
        (b"[" * 70, True),  # (never closed: not JSON, still too deep to be read)
    ],
)
def test_the_depth_check_is_exact(document: bytes, deep: bool) -> None:
    """Peeling matched pairs took two levels a pass where arrays and objects came in
    turn, so 128 such levels passed a limit of 64."""
    from git_hydrate.codec import check_depth
    from git_hydrate.errors import CorruptData

    if deep:
        with pytest.raises(CorruptData, match="JSON nested deeper than 64 levels"):
            check_depth(document, "x")
    else:
        check_depth(document, "x")
