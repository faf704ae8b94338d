"""Commit trailers: the prepare-commit-msg hook and ``log --commits``, with real commits."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.hooks import packet_sha256
from git_hydrate.pack.render import packet_json

from .conftest import git, hydrate
from .wrapper import hydrate_on_path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return hydrate_on_path(tmp_path / "bin")


def commit(repo: Path, env: dict[str, str], name: str, message: str) -> str:
    (repo / name).write_text(name + "\n")
    for args in (["add", name], ["commit", "-q", "-m", message]):
        proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    return git(repo, "rev-parse", "HEAD").strip()


def trailers(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "log", "-1", "--format=%(trailers:only,unfold)", rev).strip()


@pytest.fixture
def started(repo: Path, env: dict[str, str]) -> Path:
    hydrate(repo, "task-add", "T-1", "--objective", "Fix the parser", "--acceptance", "tests")
    result = hydrate(repo, "hooks", "install", "--commit-trailer")
    assert result.returncode == 0, result
    assert [line.rpartition("/")[2] for line in result.stdout.splitlines()[-2:]] == [
        "prepare-commit-msg",
        "commit-msg",
    ]
    return repo


def _edited(repo: Path, env: dict[str, str], editor: str) -> subprocess.CompletedProcess[str]:
    """``git commit -a`` with the message written in the editor ``editor``."""
    (repo / "f").write_text((repo / "f").read_text() + "x\n" if (repo / "f").exists() else "x\n")
    git(repo, "add", "f")
    return subprocess.run(
        ["git", "commit", "-q"],
        cwd=repo,
        env={**env, "GIT_EDITOR": editor},
        capture_output=True,
        text=True,
    )


def test_a_message_written_in_the_editor_gets_them_after_it(
    started: Path, env: dict[str, str]
) -> None:
    """review9: written before the editor opened, the trailers made a message left
    empty a commit (git aborts an empty one) and glued onto a subject typed on
    line 1. The commit-msg hook adds them once the message is written."""
    repo = started
    commit(repo, env, "a", "first")
    hydrate(repo, "start", "T-1")
    left_empty = _edited(repo, env, "true")
    assert left_empty.returncode == 1 and "empty commit message" in left_empty.stderr
    typed = _edited(repo, env, "sed -i '1s/^/Fix the parser/'")
    assert typed.returncode == 0, typed.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "Fix the parser"
    assert trailers(repo).startswith("Hydrate-Task: T-1\nHydrate-Packet: ")
    # a prepare-commit-msg hook installed alone (before the commit-msg hook was)
    # still adds them, as it did
    (repo / ".git" / "hooks" / "commit-msg").unlink()
    alone = _edited(repo, env, "sed -i '1s/^/Second/'")
    assert alone.returncode == 0 and "Hydrate-Task: T-1" in trailers(repo)
    removed = hydrate(repo, "hooks", "uninstall")
    assert "prepare-commit-msg" in removed.stdout
    assert not (repo / ".git" / "hooks" / "prepare-commit-msg").exists()


def test_commits_carry_the_task_and_the_packet(started: Path, env: dict[str, str]) -> None:
    repo = started
    before = commit(repo, env, "a", "before any task")
    assert trailers(repo) == ""
    hydrate(repo, "start", "T-1")
    first = commit(repo, env, "b", "parser: keep commas")
    with Ledger(repo) as ledger:
        packet = ledger.prompt("T-1")["packet"]
        assert packet_sha256(ledger, "T-1") == hashlib.sha256(packet_json(packet)).hexdigest()
        expected = packet_sha256(ledger, "T-1")
    assert trailers(repo) == f"Hydrate-Task: T-1\nHydrate-Packet: {expected}"
    # new context: a new packet, so the next commit records another sha256
    hydrate(repo, "add", "T-1", "--text", "Strings keep their commas.")
    second = commit(repo, env, "c", "parser: strings")
    packet_two = trailers(repo).splitlines()[1].split(": ")[1]
    assert packet_two != expected and len(packet_two) == 64

    listed = hydrate(repo, "--compact", "log", "T-1", "--commits", "--json")
    assert listed.returncode == 0, listed
    found = json.loads(listed.stdout)
    assert [c["commit"] for c in found] == [second, first]  # not the task's own commits
    assert [c["packet"] for c in found] == [packet_two, expected]
    assert before not in [c["commit"] for c in found]
    text = hydrate(repo, "log", "T-1", "--commits").stdout.splitlines()
    assert text[0].startswith(second[:12]) and text[0].endswith(f"packet {packet_two[:12]}")
    assert hydrate(repo, "log", "T-1", "--commits", "-n", "1").stdout.count("\n") == 1
    none = hydrate(repo, "log", "X-9", "--commits")
    assert none.returncode == 0 and none.stdout == ""
    assert none.stderr.startswith("no commit names X-9 in a Hydrate-Task trailer ")
    assert none.stderr.count("\n") == 1


def test_the_recorded_packet_is_what_prompt_packet_sha256_prints(
    started: Path, env: dict[str, str]
) -> None:
    """Under a budget that leaves attachments out, ``expand`` (which measures its packet
    with its prompt) keeps fewer than ``prompt``: the trailer is the prompt's packet,
    and ``prompt ID --packet-sha256`` prints it (the check docs/hooks.md gives)."""
    repo = started
    for i in range(3):
        hydrate(repo, "add", "T-1", "--text", f"note {i} " * 100, "--source-label", f"n{i}")
    git(repo, "config", "hydrate.maxBytes", "2000")
    hydrate(repo, "start", "T-1")
    commit(repo, env, "b", "parser: keep commas")
    recorded = trailers(repo).splitlines()[1].split(": ")[1]
    now = hydrate(repo, "prompt", "@", "--packet-sha256")
    assert now.returncode == 0 and now.stdout == recorded + "\n", now
    expanded = json.loads(hydrate(repo, "--compact", "expand", "T-1").stdout)["packet"]
    assert hashlib.sha256(packet_json(expanded)).hexdigest() != recorded  # (fewer kept)
    both = hydrate(repo, "prompt", "T-1", "--packet-sha256", "-o", "x")
    assert both.returncode == 2 and "--packet-sha256 goes without -o" in both.stderr


def test_an_amend_keeps_the_recorded_trailers(started: Path, env: dict[str, str]) -> None:
    repo = started
    hydrate(repo, "start", "T-1")
    commit(repo, env, "b", "work")
    recorded = trailers(repo)
    hydrate(repo, "add", "T-1", "--text", "A later note.")
    proc = subprocess.run(
        ["git", "commit", "-q", "--amend", "--no-edit"], cwd=repo, env=env, capture_output=True
    )
    assert proc.returncode == 0
    assert trailers(repo) == recorded  # one of each, as first recorded


def test_the_branch_names_the_task_when_none_was_started(
    started: Path, env: dict[str, str]
) -> None:
    repo = started
    git(repo, "checkout", "-q", "-b", "fix/T-1-commas")
    commit(repo, env, "b", "work on the branch")
    assert trailers(repo).startswith("Hydrate-Task: T-1\nHydrate-Packet: ")
    assert len(json.loads(hydrate(repo, "log", "T-1", "--commits", "--json").stdout)) == 1


def test_a_merge_without_edit_gets_the_trailers_below_its_subject(
    started: Path, env: dict[str, str]
) -> None:
    """``git merge --no-edit`` hands the hook a MERGE_MSG without a final newline: the
    trailers still go in a paragraph of their own, not onto the merge's subject."""
    repo = started
    hydrate(repo, "start", "T-1")
    git(repo, "checkout", "-q", "-b", "other")
    commit(repo, env, "b", "on the branch")
    git(repo, "checkout", "-q", "main")
    commit(repo, env, "c", "on main")
    proc = subprocess.run(
        ["git", "merge", "-q", "--no-edit", "other"], cwd=repo, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    merge = git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "log", "-1", "--format=%s").strip() == "Merge branch 'other'"
    assert trailers(repo).startswith("Hydrate-Task: T-1\nHydrate-Packet: ")
    found = json.loads(hydrate(repo, "--compact", "log", "T-1", "--commits", "--json").stdout)
    assert merge in [c["commit"] for c in found]


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Merge x", "Merge x\n\n{t}"),
        ("Merge x\n", "Merge x\n\n{t}"),
        ("", "\n{t}"),
        ("# only a comment", "# only a comment\n\n{t}"),
        (
            "Subj\n\nSigned-off-by: A <a@example.com>",
            "Subj\n\nSigned-off-by: A <a@example.com>\n{t}",
        ),
        ("Subj\n\nHydrate-Task: T-9", "Subj\n\nHydrate-Task: T-9\n{p}"),
        ("Subj\n\nbody\n# a comment", "Subj\n\nbody\n\n{t}# a comment\n"),
    ],
)
def test_the_message_file_gains_only_the_trailers(
    started: Path, tmp_path: Path, message: str, expected: str
) -> None:
    repo = started
    hydrate(repo, "start", "T-1")
    with Ledger(repo) as ledger:
        packet = f"Hydrate-Packet: {packet_sha256(ledger, 'T-1')}\n"
    path = tmp_path / "MSG"
    path.write_bytes(message.encode())
    result = hydrate(repo, "hook", "prepare-commit-msg", str(path), "merge")
    assert result.returncode == 0 and result.stderr == "", result
    assert path.read_bytes().decode() == expected.format(
        t="Hydrate-Task: T-1\n" + packet, p=packet
    )


def test_a_task_that_cannot_be_packed_never_stops_a_commit(
    started: Path, env: dict[str, str]
) -> None:
    repo = started
    hydrate(repo, "start", "T-1")
    git(repo, "config", "hydrate.maxBytes", "10")  # the prompt cannot fit
    (repo / "d").write_text("d\n")
    git(repo, "add", "d")
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "still commits"], cwd=repo, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "warning: git-hydrate prepare-commit-msg:" in proc.stderr
    assert trailers(repo) == ""


def test_a_foreign_hook_is_chained_and_restored_byte_identical(
    repo: Path, env: dict[str, str]
) -> None:
    hooks = repo / ".git" / "hooks"
    foreign = hooks / "prepare-commit-msg"
    original = b'#!/bin/sh\nprintf "\\nSigned-off-by: Foreign <f@example.com>\\n" >> "$1"\n'
    foreign.write_bytes(original)
    foreign.chmod(0o755)
    hydrate(repo, "task-add", "T-1", "--objective", "o", "--acceptance", "a")
    hydrate(repo, "hooks", "install", "--commit-trailer")
    assert (hooks / "prepare-commit-msg.legacy").read_bytes() == original
    status = json.loads(hydrate(repo, "--compact", "hooks", "status", "--json").stdout)
    assert status["commit_trailer"]["installed"] and status["commit_trailer"]["current"]
    hydrate(repo, "start", "T-1")
    commit(repo, env, "b", "both hooks ran")
    body = trailers(repo)
    assert "Signed-off-by: Foreign <f@example.com>" in body and "Hydrate-Task: T-1" in body
    again = hydrate(repo, "hooks", "install", "--commit-trailer", "--json")
    assert json.loads(again.stdout)["commit_trailer"]["action"] == "unchanged"
    removed = hydrate(repo, "hooks", "uninstall")
    assert "removed" in removed.stdout and "prepare-commit-msg" in removed.stdout
    assert foreign.read_bytes() == original
    assert not (hooks / "prepare-commit-msg.legacy").exists()
    assert not (hooks / "pre-push").exists()


def test_the_committed_shims_match_the_generated_ones() -> None:
    from git_hydrate import hooks

    root = Path(__file__).resolve().parent.parent
    assert (root / "hooks" / "prepare-commit-msg").read_text() == hooks.trailer_shim_text("")


def test_comment_char_auto_leaves_a_gitmoji_subject_its_trailers(
    started: Path, env: dict[str, str]
) -> None:
    """review11: with core.commentChar=auto, every line beginning with one of git's
    candidates (``:sparkles: add``) was taken for a comment, so the message counted
    as empty and got no trailers; git had chosen ``#``. The character is read from
    git's help text at the end; an emptied message still aborts."""
    repo = started
    commit(repo, env, "a", "first")
    hydrate(repo, "start", "T-1")
    git(repo, "config", "core.commentChar", "auto")
    typed = _edited(repo, env, "sed -i '1s/^/:sparkles: add the feature/'")
    assert typed.returncode == 0, typed.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == ":sparkles: add the feature"
    assert trailers(repo).startswith("Hydrate-Task: T-1\nHydrate-Packet: ")
    left_empty = _edited(repo, env, "true")
    assert left_empty.returncode == 1 and "empty commit message" in left_empty.stderr


def test_log_commits_gives_when_and_who_as_log_does(repo: Path) -> None:
    """A fleet's lead reads ``log ID`` and ``log ID --commits`` side by side (and the
    web page shows both): ``log`` said ``2026-12-05T05:55:03Z  w2 <w2@fleet.test>``,
    ``--commits`` ``2026-12-05T06:55:03+01:00  w2``. Both give UTC and the author with
    the address now."""
    hydrate(repo, "task-add", "T-1", "--objective", "Fix the parser", "--acceptance", "tests")
    (repo / "a").write_text("a\n")
    git(repo, "add", "a")
    env = {"GIT_AUTHOR_DATE": "2027-01-15T09:30:00+01:00"}
    proc = subprocess.run(
        ["git", "commit", "-q", "-m", "fix\n\nHydrate-Task: T-1"],
        cwd=repo,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    found = json.loads(hydrate(repo, "log", "T-1", "--commits", "--json").stdout)
    history = json.loads(hydrate(repo, "log", "T-1", "--json").stdout)
    assert found[0]["when"] == "2027-01-15T08:30:00Z"
    assert found[0]["who"] == history[0]["who"]
    assert "<" in found[0]["who"]
