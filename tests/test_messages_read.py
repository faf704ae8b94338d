"""What the commands say, read by a person: found by an exploratory tester, each line
checked against the command's output."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import hydrate


def _task(repo: Path, task_id: str, *more: str) -> None:
    made = hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a", *more)
    assert made.returncode == 0, made


def test_status_says_since_when_a_task_is_held(repo: Path) -> None:
    _task(repo, "H-1")
    assert hydrate(repo, "claim", "H-1", "--as", "agent-7").returncode == 0
    line = hydrate(repo, "status", "H-1").stdout.splitlines()[1]
    assert " · held by agent-7 since 20" in line and line.endswith("Z · kind code · priority 2")


def test_a_checkpoint_of_several_lines_stays_indented_and_empty_fields_unsaid(
    repo: Path,
) -> None:
    _task(repo, "C-1")
    done = hydrate(repo, "checkpoint", "C-1", "--summary", "first\nsecond", "--tokens", "5")
    assert done.returncode == 0, done
    shown = hydrate(repo, "status", "C-1").stdout
    assert "  Summary: first\n    second\n" in shown
    assert "Evidence:" not in shown and "Next step:" not in shown
    exported = hydrate(repo, "export", "C-1", "--format", "markdown").stdout
    assert "Evidence:" not in exported and "Next:" not in exported
    shown = hydrate(repo, "show", "C-1").stdout
    assert "  Summary: first\n    second\n" in shown
    assert "Evidence:" not in shown and "Next step:" not in shown
    prompt = hydrate(repo, "prompt", "C-1").stdout  # (no label with nothing after it)
    assert "## Latest checkpoint\nSummary: first\nsecond\n\n" in prompt
    assert "Evidence:" not in prompt and "Next step:" not in prompt
    evidence = hydrate(repo, "checkpoint", "C-1", "--summary", "s", "--evidence", "e")
    assert evidence.returncode == 0, evidence
    prompt = hydrate(repo, "prompt", "C-1").stdout
    assert "## Latest checkpoint\nSummary: s\nEvidence: e\n\n" in prompt


def test_a_refused_claim_names_each_task_it_waits_for_once(repo: Path) -> None:
    _task(repo, "P-1")
    _task(repo, "K-1", "--parent", "P-1")
    assert hydrate(repo, "task-edit", "P-1", "--depends-on", "K-1").returncode == 0
    refused = hydrate(repo, "claim", "P-1")
    assert refused.returncode != 0
    assert refused.stderr.endswith("it waits for K-1 (open)\n"), refused.stderr


def test_a_search_that_finds_nothing_does_not_echo_a_huge_query(repo: Path) -> None:
    _task(repo, "S-1")
    found = hydrate(repo, "search", "zebra " * 20_000)
    assert found.stderr.startswith("no task matches zebra zebra")
    assert found.stderr.rstrip("\n").endswith("...") and len(found.stderr) < 200
