"""The pre-push hook: input parsing, deciding the concerned tasks, artefacts written by a real
`git push`, chaining a hook of another origin, core.hooksPath, strict mode."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger, ValidationError, hooks
from git_hydrate.hooks import RefUpdate, parse_pre_push

from .conftest import ROOT, git, hydrate
from .wrapper import hydrate_on_path

A = "a" * 40
B = "b" * 40
Z = "0" * 40


def run(cwd: Path, *args: str, env: dict[str, str], input: str | None = None) -> Result:
    proc = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, input=input, check=False
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr

    def __repr__(self) -> str:
        return f"<Result {self.returncode} out={self.stdout!r} err={self.stderr!r}>"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has a `git-hydrate` running this checkout."""
    return hydrate_on_path(tmp_path / "bin")


@pytest.fixture
def pushable(repo: Path, tmp_path: Path) -> Path:
    """``repo`` with a bare remote ``origin`` that already has ``main``, and task M-1002."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    with Ledger(repo) as ledger:
        ledger.add_task("M-1002", objective="Add GET /healthz", acceptance="200")
        ledger.add_context("M-1002", "The edge proxy sets X-Request-Id.", "notes", priority=5)
    return repo


def commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def artefacts(repo: Path, task_id: str) -> dict[str, bytes]:
    directory = repo / ".git" / "hydrate" / "artefacts" / task_id
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


# -- parsing -------------------------------------------------------------------------


def test_parse_new_branch_update_and_deletion() -> None:
    text = (
        f"refs/heads/new {A} refs/heads/new {Z}\n"
        f"refs/heads/main {A} refs/heads/main {B}\n"
        f"(delete) {Z} refs/heads/gone {B}\n"
    )
    new, moved, gone = parse_pre_push(text)
    assert new == RefUpdate("refs/heads/new", A, "refs/heads/new", Z)
    assert new.is_new and not new.is_deletion
    assert not moved.is_new and not moved.is_deletion
    assert gone.is_deletion and gone.local_ref == "(delete)" and not gone.is_new


def test_parse_sha256_empty_and_blank_lines() -> None:
    c, d = "c" * 64, "0" * 64
    assert parse_pre_push("") == []
    assert parse_pre_push("\n\n") == []
    (update,) = parse_pre_push(f"\nrefs/heads/x {c} refs/heads/y {d}\n\n")
    assert update == RefUpdate("refs/heads/x", c, "refs/heads/y", d)
    assert update.is_new


@pytest.mark.parametrize(
    "line",
    [
        f"refs/heads/x {A} refs/heads/x",
        f"refs/heads/x {A}  refs/heads/x {B}",
        f"refs/heads/x {A[:-1]} refs/heads/x {B}",
        f"refs/heads/x {A.upper()} refs/heads/x {B}",
        f"refs/heads/x {A} refs/heads/x {B} extra",
    ],
)
def test_parse_rejects_malformed_lines(line: str) -> None:
    with pytest.raises(ValidationError, match="pre-push input line 1"):
        parse_pre_push(line)


# -- which tasks a push concerns -----------------------------------------------------


def test_concerned_tasks_from_task_refs_names_and_messages(pushable: Path) -> None:
    with Ledger(pushable) as ledger:
        for task_id in ("ABC-12", "OPS-7", "Q-1"):
            ledger.add_task(task_id, objective="o", acceptance="a")
        tip = git(pushable, "rev-parse", "refs/hydrate/tasks/Q-1").strip()
        base = git(pushable, "rev-parse", "HEAD").strip()
        git(pushable, "checkout", "-q", "-b", "feature/ABC-12-fix")
        commit(pushable, "Fix OPS-7 and mention NOPE-404 (no such task)")
        head = commit(pushable, "Second commit for M-1002")
        updates = [
            RefUpdate("refs/heads/feature/ABC-12-fix", head, "refs/heads/feature/ABC-12-fix", Z),
            RefUpdate("refs/hydrate/tasks/Q-1", tip, "refs/hydrate/tasks/Q-1", Z),
            RefUpdate("(delete)", Z, "refs/heads/OPS-7-old", base),
        ]
        found = hooks.concerned_tasks(ledger, updates)
    assert sorted(found) == ["ABC-12", "M-1002", "OPS-7", "Q-1"]
    assert found["Q-1"].found_in == "task-ref"
    assert found["ABC-12"].found_in == "ref-name"
    assert found["OPS-7"].found_in == "commit-message"
    assert found["M-1002"].update.local_oid == head


def test_commit_messages_already_on_the_remote_do_not_count(pushable: Path) -> None:
    old = commit(pushable, "Old work on M-1002")
    git(pushable, "push", "-q", "origin", "main")
    new = commit(pushable, "Unrelated change")
    with Ledger(pushable) as ledger:
        assert (
            hooks.concerned_tasks(
                ledger, [RefUpdate("refs/heads/main", new, "refs/heads/main", old)]
            )
            == {}
        )
        found = hooks.concerned_tasks(
            ledger, [RefUpdate("refs/heads/main", old, "refs/heads/topic", Z)]
        )
    # A new remote ref: commits on remote-tracking branches are excluded too.
    assert found == {}


def test_task_pattern_from_git_config_with_a_group(pushable: Path) -> None:
    git(pushable, "config", "hydrate.taskPattern", r"#(\w+-\d+)")
    head = commit(pushable, "closes #M-1002; M-9 is not a reference")
    with Ledger(pushable) as ledger:
        ledger.add_task("M-9", objective="o", acceptance="a")
        found = hooks.concerned_tasks(
            ledger, [RefUpdate("refs/heads/main", head, "refs/heads/main", Z)]
        )
    assert sorted(found) == ["M-1002"]


def test_invalid_task_pattern_is_a_clear_error(pushable: Path) -> None:
    git(pushable, "config", "hydrate.taskPattern", "([A-Z")
    with Ledger(pushable) as ledger, pytest.raises(ValidationError, match=r"hydrate\.taskPattern"):
        hooks.pre_push(ledger, [])


# -- a real push ---------------------------------------------------------------------


def test_push_runs_the_installed_hook_and_writes_artefacts(
    pushable: Path, env: dict[str, str]
) -> None:
    installed = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert installed.returncode == 0, installed
    assert installed.stdout == f"installed {pushable / '.git' / 'hooks' / 'pre-push'}\n"
    git(pushable, "checkout", "-q", "-b", "topic")
    head = commit(pushable, "Implement M-1002")

    pushed = run(pushable, "git", "push", "-q", "origin", "topic", env=env)
    assert pushed.returncode == 0, pushed
    directory = pushable / ".git" / "hydrate" / "artefacts" / "M-1002"
    assert f"hydrate: M-1002: wrote {directory} (" in pushed.stderr
    files = artefacts(pushable, "M-1002")
    assert sorted(files) == ["M-1002.packet.json", "M-1002.prompt.md", "manifest.json"]
    assert files["M-1002.prompt.md"].startswith(b"# Task M-1002: Add GET /healthz\n")
    assert b"The edge proxy sets X-Request-Id." in files["M-1002.prompt.md"]
    packet = json.loads(files["M-1002.packet.json"])
    assert packet["prompt"].encode() == files["M-1002.prompt.md"]
    manifest = json.loads(files["manifest.json"])
    assert manifest["task"] == "M-1002" and manifest["commit"] == head
    assert manifest["ref"] == "refs/heads/topic" and manifest["found_in"] == "commit-message"
    assert manifest["omitted"] == []
    for item in manifest["files"]:
        data = files[item["name"]]
        assert item == {
            "name": item["name"],
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }
    # The work tree stays clean; the remote got the branch.
    assert git(pushable, "status", "--porcelain") == ""
    assert git(pushable, "ls-remote", "origin", "refs/heads/topic").split()[0] == head

    # Same task state and commit: byte-identical files, not rewritten.
    mtimes = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    line = (
        f"refs/heads/topic {head} refs/heads/topic {git(pushable, 'rev-parse', 'main').strip()}\n"
    )
    again = run(pushable, "git", "hydrate", "hook", "pre-push", "origin", env=env, input=line)
    assert again.returncode == 0, again
    assert again.stdout == ""
    assert "up to date" in again.stderr
    assert artefacts(pushable, "M-1002") == files
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == mtimes


def test_push_of_a_task_ref_writes_its_artefacts(pushable: Path, env: dict[str, str]) -> None:
    assert run(pushable, "git", "hydrate", "hooks", "install", env=env).returncode == 0
    pushed = run(pushable, "git", "push", "-q", "origin", "refs/hydrate/tasks/M-1002", env=env)
    assert pushed.returncode == 0, pushed
    manifest = json.loads(artefacts(pushable, "M-1002")["manifest.json"])
    tip = git(pushable, "rev-parse", "refs/hydrate/tasks/M-1002").strip()
    assert manifest["commit"] == tip == manifest["task_tip"]
    assert manifest["found_in"] == "task-ref"


def test_push_concerning_no_task_writes_nothing(pushable: Path, env: dict[str, str]) -> None:
    assert run(pushable, "git", "hydrate", "hooks", "install", env=env).returncode == 0
    commit(pushable, "Nothing to see")
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert pushed.returncode == 0, pushed
    assert pushed.stdout == "" and pushed.stderr == ""
    assert not (pushable / ".git" / "hydrate").exists()


def test_artefact_dir_from_git_config_relative_to_the_top(
    pushable: Path, env: dict[str, str]
) -> None:
    head = commit(pushable, "M-1002 again")
    (pushable / "sub").mkdir()
    line = f"refs/heads/main {head} refs/heads/main {Z}\n"
    result = run(
        pushable / "sub",
        "git", "-c", "hydrate.artefactDir=out/prompts",
        "hydrate", "hook", "pre-push", "--json",
        env=env, input=line,
    )  # fmt: skip
    assert result.returncode == 0, result
    report = json.loads(result.stdout)
    assert report["directory"] == str(pushable / "out" / "prompts")
    assert [task["task"] for task in report["tasks"]] == ["M-1002"]
    assert (pushable / "out" / "prompts" / "M-1002" / "manifest.json").is_file()


@pytest.mark.parametrize("linked", ["out", "out/prompts/M-1002"])
def test_artefacts_are_never_written_through_a_link_in_the_work_tree(
    pushable: Path, env: dict[str, str], tmp_path: Path, linked: str
) -> None:
    """review9: a link in the work tree on the artefacts' way (a cloned repository
    can track one) had prompt, packet and manifest written where it led, over a
    manifest.json there. The task is reported, nothing is written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "manifest.json").write_text("someone's own\n")
    link = pushable / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    head = commit(pushable, "M-1002 again")
    line = f"refs/heads/main {head} refs/heads/main {Z}\n"
    result = run(
        pushable,
        "git", "-c", "hydrate.artefactDir=out/prompts",
        "hydrate", "hook", "pre-push", "--json",
        env=env, input=line,
    )  # fmt: skip
    assert result.returncode == 0, result
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem == {
        "task": "M-1002",
        "reason": f"artefacts not written: {link} is a symbolic link: nothing is written "
        "through one in the work tree",
    }
    assert sorted(p.name for p in outside.iterdir()) == ["manifest.json"]
    assert (outside / "manifest.json").read_text() == "someone's own\n"


def test_pre_commit_environment_when_stdin_is_empty(pushable: Path, env: dict[str, str]) -> None:
    base = git(pushable, "rev-parse", "HEAD").strip()
    head = commit(pushable, "Work for M-1002")
    pre_commit = {
        **env,
        "PRE_COMMIT_FROM_REF": base,
        "PRE_COMMIT_TO_REF": head,
        "PRE_COMMIT_LOCAL_BRANCH": "refs/heads/main",
        "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main",
        "PRE_COMMIT_REMOTE_NAME": "origin",
    }
    result = run(pushable, "git-hydrate", "hook", "pre-push", "--json", env=pre_commit, input="")
    assert result.returncode == 0, result
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["task"] == "M-1002" and task["commit"] == head
    # Without those variables and without input there is nothing to do.
    plain = run(pushable, "git-hydrate", "hook", "pre-push", "--json", env=env, input="")
    assert json.loads(plain.stdout)["tasks"] == []


def test_sha256_repository(tmp_path: Path, env: dict[str, str]) -> None:
    repo = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(repo))
    head = commit(repo, "Start X-1")
    with Ledger(repo) as ledger:
        ledger.add_task("X-1", objective="o", acceptance="a")
    line = f"refs/heads/main {head} refs/heads/main {'0' * 64}\n"
    result = run(repo, "git-hydrate", "hook", "pre-push", "--json", env=env, input=line)
    assert result.returncode == 0, result
    (task,) = json.loads(result.stdout)["tasks"]
    assert len(head) == 64 and task["commit"] == head


# -- chaining a hook of another origin ------------------------------------------------


def foreign_hook(path: Path, log: Path, status: int) -> str:
    text = f'#!/bin/sh\necho "args: $*" >> "{log}"\ncat >> "{log}"\nexit {status}\n'
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return text


def test_foreign_hook_is_chained_and_restored(
    pushable: Path, env: dict[str, str], tmp_path: Path
) -> None:
    hook = pushable / ".git" / "hooks" / "pre-push"
    log = tmp_path / "legacy.log"
    original = foreign_hook(hook, log, 0)

    installed = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert installed.returncode == 0, installed
    assert installed.stdout.splitlines() == [
        f"installed {hook}",
        f"chained: {hook}.legacy runs first",
    ]
    assert (hook.parent / "pre-push.legacy").read_text() == original
    again = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert again.stdout.splitlines()[0] == f"already installed: {hook}"

    head = commit(pushable, "Fix M-1002")
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert pushed.returncode == 0, pushed
    # The legacy hook saw the arguments and the very input git gave.
    assert log.read_text().splitlines() == [
        f"args: origin {pushable.parent / 'remote.git'}",
        f"refs/heads/main {head} refs/heads/main {git(pushable, 'rev-parse', 'HEAD~').strip()}",
    ]
    assert "manifest.json" in artefacts(pushable, "M-1002")

    removed = run(pushable, "git", "hydrate", "hooks", "uninstall", env=env)
    assert removed.returncode == 0, removed
    assert removed.stdout.splitlines() == [
        f"removed {hook}",
        f"restored the previous hook as {hook}",
    ]
    assert hook.read_text() == original and os.access(hook, os.X_OK)
    assert not (hook.parent / "pre-push.legacy").exists()
    gone = run(pushable, "git", "hydrate", "hooks", "uninstall", env=env)
    assert gone.stdout == f"not installed: {hook} is not git-hydrate's hook\n"
    assert hook.read_text() == original


def test_failing_foreign_hook_still_blocks_the_push(
    pushable: Path, env: dict[str, str], tmp_path: Path
) -> None:
    foreign_hook(pushable / ".git" / "hooks" / "pre-push", tmp_path / "log", 3)
    assert run(pushable, "git", "hydrate", "hooks", "install", env=env).returncode == 0
    head = commit(pushable, "Fix M-1002")
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert pushed.returncode != 0
    assert "failed to push" in pushed.stderr
    assert git(pushable, "ls-remote", "origin", "refs/heads/main").split()[0] != head
    assert not (pushable / ".git" / "hydrate").exists()


def test_install_refuses_to_lose_a_hook(
    pushable: Path, env: dict[str, str], tmp_path: Path
) -> None:
    hooks_dir = pushable / ".git" / "hooks"
    foreign_hook(hooks_dir / "pre-push", tmp_path / "log", 0)
    foreign_hook(hooks_dir / "pre-push.legacy", tmp_path / "log", 0)
    result = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and "both exist" in result.stderr
    assert (
        not (hooks_dir / "pre-push").exists()
        or hooks.HOOK_MARKER not in (hooks_dir / "pre-push").read_text()
    )


def test_a_foreign_hook_that_names_the_marker_is_chained_not_replaced(
    pushable: Path, env: dict[str, str]
) -> None:
    """review9: any hook whose text held the marker was taken for git-hydrate's
    shim: install overwrote it, uninstall deleted it. Only a line that is the
    marker and a version is ours."""
    hook = pushable / ".git" / "hooks" / "pre-push"
    text = f"#!/bin/sh\n# chains to: {hooks.HOOK_MARKER} v1, see the docs\nexit 0\n"
    hook.write_text(text)
    hook.chmod(0o755)
    installed = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert installed.returncode == 0, installed
    assert (hook.parent / "pre-push.legacy").read_text() == text
    removed = run(pushable, "git", "hydrate", "hooks", "uninstall", env=env)
    assert removed.returncode == 0, removed
    assert hook.read_text() == text and not (hook.parent / "pre-push.legacy").exists()


def test_core_hooks_path_relative_to_the_top(pushable: Path, env: dict[str, str]) -> None:
    git(pushable, "config", "core.hooksPath", ".githooks")
    (pushable / "sub").mkdir()
    installed = run(pushable / "sub", "git", "hydrate", "hooks", "install", env=env)
    assert installed.returncode == 0, installed
    hook = pushable / ".githooks" / "pre-push"
    assert installed.stdout == f"installed {hook}\n"
    assert not (pushable / ".git" / "hooks" / "pre-push").exists()
    status = json.loads(
        run(pushable / "sub", "git", "hydrate", "hooks", "status", "--json", env=env).stdout
    )
    assert status["hooks_path"] == ".githooks" and status["installed"] and status["current"]
    commit(pushable, "M-1002 through core.hooksPath")
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert pushed.returncode == 0, pushed
    assert "manifest.json" in artefacts(pushable, "M-1002")


def test_install_leaves_a_tracked_hook_of_the_repository_alone(
    pushable: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """A hooks directory the repository tracks (core.hooksPath .githooks) is the team's:
    installing would rewrite its pre-push for this machine and add a .legacy file."""
    foreign_hook(pushable / ".githooks" / "pre-push", tmp_path / "log", 0)
    git(pushable, "add", ".githooks/pre-push")
    git(pushable, "commit", "-q", "-m", "the team's hook")
    git(pushable, "config", "core.hooksPath", ".githooks")
    before = (pushable / ".githooks" / "pre-push").read_bytes()
    result = run(pushable, "git", "hydrate", "hooks", "install", "--commit-trailer", env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: .githooks/pre-push is tracked by git (core.hooksPath is in the work tree): "
        "git-hydrate does not replace a hook the repository shares; have it run "
        'git hydrate hook pre-push "$@" instead\n'
    )
    assert (pushable / ".githooks" / "pre-push").read_bytes() == before
    assert sorted(os.listdir(pushable / ".githooks")) == ["pre-push"]
    assert git(pushable, "status", "--porcelain") == ""


def test_install_writes_no_new_hook_into_a_tracked_hooks_directory(
    pushable: Path, env: dict[str, str]
) -> None:
    """A tracked .githooks/ without a pre-push: the shim written there would wait in
    git status to be committed, naming this machine's Python (explorer8)."""
    (pushable / ".githooks").mkdir()
    (pushable / ".githooks" / ".keep").write_text("")
    git(pushable, "add", ".githooks/.keep")
    git(pushable, "commit", "-q", "-m", "the team's hooks directory")
    git(pushable, "config", "core.hooksPath", ".githooks")
    result = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        "error: .githooks is tracked by git (core.hooksPath is in the work tree): git-hydrate "
        "writes no hook there for this machine alone; add a tracked .githooks/pre-push that "
        'runs git hydrate hook pre-push "$@" instead\n'
    )
    assert sorted(os.listdir(pushable / ".githooks")) == [".keep"]
    assert git(pushable, "status", "--porcelain") == ""


def test_install_into_the_work_tree_says_git_status_lists_the_hook(
    pushable: Path, env: dict[str, str]
) -> None:
    """core.hooksPath at a new directory of the work tree: the hook is written (the
    user asked for that place) and said to be one `git add -A` would share (explorer9);
    under an ignore rule, or in .git/hooks, nothing is said."""
    git(pushable, "config", "core.hooksPath", "newdir")
    result = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert result.returncode == 0, result
    assert result.stderr == (
        "warning: newdir/pre-push is in the work tree and no ignore rule covers it: git status "
        "lists it, and it names this machine's Python; list it in .git/info/exclude\n"
    )
    (pushable / ".git" / "info").mkdir(exist_ok=True)
    with open(pushable / ".git" / "info" / "exclude", "a") as fh:
        fh.write("/newdir/\n")
    again = run(pushable, "git", "hydrate", "hooks", "install", "--json", env=env)
    assert again.returncode == 0 and again.stderr == ""
    assert json.loads(again.stdout)["notes"] == []
    git(pushable, "config", "--unset", "core.hooksPath")
    plain = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert plain.returncode == 0 and plain.stderr == ""


def test_status_human_output(pushable: Path, env: dict[str, str]) -> None:
    before = run(pushable, "git", "hydrate", "hooks", "status", env=env)
    assert before.returncode == 0 and before.stderr == ""
    assert (
        before.stdout.splitlines()[0]
        == f"pre-push hook:   not installed: {pushable / '.git' / 'hooks' / 'pre-push'}"
    )
    assert "strict:          no" in before.stdout.splitlines()


def test_status_and_install_name_the_tasks_the_pattern_cannot_find(
    pushable: Path, env: dict[str, str]
) -> None:
    """Ids such as F1 (no dash) never match the default pattern: a branch F1-fix or a
    commit message naming F1 writes no artefacts, and nothing said so."""
    with Ledger(pushable) as ledger:
        for task_id in ("F1", "fix_2"):
            ledger.add_task(task_id, objective="o", acceptance="a")
    status = run(pushable, "git", "hydrate", "hooks", "status", env=env)
    assert status.returncode == 0 and status.stderr == ""
    row = (
        "task ids:        2 tasks the pattern cannot find in a branch name or commit message: "
        "F1, fix_2"
    )
    assert row in status.stdout.splitlines()
    as_json = json.loads(
        run(pushable, "git", "hydrate", "hooks", "status", "--json", env=env).stdout
    )
    assert as_json["unmatched_tasks"] == ["F1", "fix_2"]
    installed = run(pushable, "git", "hydrate", "hooks", "install", env=env)
    assert installed.returncode == 0
    assert installed.stderr == (
        "warning: the task pattern (git config hydrate.taskPattern, "
        "'\\b[A-Z][A-Z0-9]*-[0-9]+\\b') finds no id of 2 tasks (F1, fix_2) in a branch "
        "name or commit message: a push concerns them only when it pushes their refs\n"
    )
    git(pushable, "config", "hydrate.taskPattern", r"\b[A-Za-z][A-Za-z0-9_-]*\b")
    quiet = run(pushable, "git", "hydrate", "hooks", "status", env=env)
    assert not any(line.startswith("task ids:") for line in quiet.stdout.splitlines())


def test_shim_in_the_repository_is_the_installed_one() -> None:
    assert (ROOT / "hooks" / "pre-push").read_text() == hooks.shim_text("")
    assert os.access(ROOT / "hooks" / "pre-push", os.X_OK)


def test_shim_without_git_hydrate_warns_and_lets_the_push_go(
    pushable: Path, tmp_path: Path
) -> None:
    hook = pushable / ".git" / "hooks" / "pre-push"
    hook.write_text(hooks.shim_text(str(tmp_path / "no-such-python")))
    hook.chmod(0o755)
    bare_env = {
        **os.environ,
        "PATH": os.pathsep.join(
            p
            for p in os.environ["PATH"].split(os.pathsep)
            if not (Path(p) / "git-hydrate").exists()
        ),
    }
    commit(pushable, "M-1002")
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=bare_env)
    assert pushed.returncode == 0, pushed
    assert pushed.stderr == "warning: git-hydrate is not installed; no prompt artefacts written\n"


def test_fallback_python_imports_nothing_from_the_work_tree(
    pushable: Path, tmp_path: Path
) -> None:
    """Without git-hydrate on PATH the shims run the installing Python, from the top of
    the work tree: a ``typing.py`` there is not imported, and commit and push still go."""
    assert hydrate(pushable, "hooks", "install", "--commit-trailer").returncode == 0
    assert hydrate(pushable, "start", "M-1002").returncode == 0
    for name in ("pre-push", "prepare-commit-msg"):
        shim = (pushable / ".git" / "hooks" / name).read_text()
        assert f"INSTALL_PYTHON={shlex.quote(sys.executable)}\n" in shim  # the fallback is armed
    marker = tmp_path / "PWNED"
    (pushable / "typing.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    bare_env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    bare_env["PYTHONPATH"] = str(ROOT)  # this checkout, as an installed git-hydrate
    bare_env["PATH"] = os.pathsep.join(
        p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "git-hydrate").exists()
    )
    committed = run(pushable, "git", "commit", "-q", "--allow-empty", "-m", "w", env=bare_env)
    assert committed.returncode == 0, committed
    task = git(pushable, "log", "-1", "--format=%(trailers:key=Hydrate-Task,valueonly)")
    assert task.strip() == "M-1002"
    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=bare_env)
    assert pushed.returncode == 0, pushed
    assert not marker.exists()
    assert "manifest.json" in artefacts(pushable, "M-1002")  # the hook ran, not the warning


# -- strict mode ---------------------------------------------------------------------


def test_omissions_warn_by_default_and_block_in_strict_mode(
    pushable: Path, env: dict[str, str]
) -> None:
    with Ledger(pushable) as ledger:
        ledger.add_context("M-1002", "x" * 6000, "big-log", priority=1)
    git(pushable, "config", "hydrate.maxBytes", "4000")
    assert run(pushable, "git", "hydrate", "hooks", "install", env=env).returncode == 0
    head = commit(pushable, "M-1002 work")

    pushed = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert pushed.returncode == 0, pushed
    assert "warning: task M-1002: 1 attachment(s) omitted (byte_budget)" in pushed.stderr
    manifest = json.loads(artefacts(pushable, "M-1002")["manifest.json"])
    assert [item["reason"] for item in manifest["omitted"]] == ["byte_budget"]

    git(pushable, "config", "hydrate.prePushStrict", "true")
    newer = commit(pushable, "more M-1002 work")
    blocked = run(pushable, "git", "push", "-q", "origin", "main", env=env)
    assert blocked.returncode != 0
    assert "error: task M-1002: 1 attachment(s) omitted (byte_budget)" in blocked.stderr
    assert "push blocked by hydrate.prePushStrict" in blocked.stderr
    assert git(pushable, "ls-remote", "origin", "refs/heads/main").split()[0] == head != newer


def test_strict_mode_blocks_a_task_that_cannot_be_packed(
    pushable: Path, env: dict[str, str]
) -> None:
    head = commit(pushable, "M-1002")
    line = f"refs/heads/main {head} refs/heads/main {Z}\n"
    args = ("git", "-c", "hydrate.maxBytes=50", "hydrate", "hook", "pre-push")
    lenient = run(pushable, *args, env=env, input=line)
    assert lenient.returncode == 0, lenient
    assert "warning: task M-1002: cannot be packed: mandatory ticket structure" in lenient.stderr
    strict = run(pushable, *args, "--strict", env=env, input=line)
    assert strict.returncode == 1
    assert strict.stdout == ""
    assert "error: task M-1002: cannot be packed" in strict.stderr


def test_bad_input_never_blocks_by_default(pushable: Path, env: dict[str, str]) -> None:
    result = run(pushable, "git-hydrate", "hook", "pre-push", env=env, input="garbage\n")
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr == (
        "warning: git-hydrate pre-push: pre-push input line 1 is not "
        "'<local ref> <local oid> <remote ref> <remote oid>'; the push goes on\n"
    )
    strict = run(
        pushable, "git-hydrate", "hook", "pre-push", "--strict", env=env, input="garbage\n"
    )
    assert strict.returncode == 1 and strict.stderr.startswith("error: pre-push input line 1")


def test_hook_outside_a_repository_is_not_blocking(tmp_path: Path) -> None:
    result = hydrate(tmp_path, "hook", "pre-push", input="")
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr.startswith("warning: git-hydrate pre-push: not a git repository")


def test_expiry_is_judged_at_the_pushed_commit_time(
    repo: Path, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    created = 1_800_000_000
    with Ledger(repo, clock=lambda: float(created)) as ledger:
        ledger.add_task("M-7", objective="o", acceptance="a")
        ledger.add_context("M-7", "short-lived note", "chat", ttl=60)
    reports = []
    for offset in (30, 120, 30):
        monkeypatch.setenv("GIT_COMMITTER_DATE", f"@{created + offset} +0000")
        head = commit(repo, f"M-7 at +{offset}s")
        line = f"refs/heads/main {head} refs/heads/main {Z}\n"
        result = run(repo, "git-hydrate", "hook", "pre-push", "--json", env=env, input=line)
        assert result.returncode == 0, result
        (task,) = json.loads(result.stdout)["tasks"]
        manifest = json.loads(artefacts(repo, "M-7")["manifest.json"])
        reports.append(([o["reason"] for o in task["omitted"]], manifest["now"]))
    assert reports[0] == ([], "2027-01-15T08:00:30Z")
    assert reports[1] == (["expired"], "2027-01-15T08:02:00Z")
    assert reports[2] == reports[0]


def test_status_of_a_shim_installed_by_another_python(pushable: Path) -> None:
    with Ledger(pushable) as ledger:
        assert hooks.install(ledger, python="/opt/other venv/bin/python")["action"] == "installed"
        assert hooks.install(ledger, python="/opt/other venv/bin/python")["action"] == "unchanged"
        state = hooks.status(ledger)
        assert state["installed"] and state["current"] and not state["foreign"]
        assert state["python"] == "/opt/other venv/bin/python"
        hook = Path(state["hook"])
        hook.write_text(hook.read_text().replace(" v1\n", " v0\n"))
        assert not hooks.status(ledger)["current"]
        assert hooks.install(ledger)["action"] == "updated"
        assert hooks.status(ledger)["current"]


def test_linked_worktree_shares_the_hook_and_the_artefact_dir(
    pushable: Path, env: dict[str, str], tmp_path: Path
) -> None:
    linked = tmp_path / "linked"
    git(pushable, "worktree", "add", "-q", "-b", "side", str(linked))
    installed = run(linked, "git", "hydrate", "hooks", "install", env=env)
    assert installed.stdout == f"installed {pushable / '.git' / 'hooks' / 'pre-push'}\n"
    commit(linked, "M-1002 from a linked worktree")
    pushed = run(linked, "git", "push", "-q", "origin", "side", env=env)
    assert pushed.returncode == 0, pushed
    assert "manifest.json" in artefacts(pushable, "M-1002")
    assert git(linked, "status", "--porcelain") == ""
