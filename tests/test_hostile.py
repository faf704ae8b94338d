"""Hostile data: what a crafted remote or a look-alike text must not achieve."""

from __future__ import annotations

import json
from pathlib import Path

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
