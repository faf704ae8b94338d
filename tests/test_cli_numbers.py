"""Numbers on the command line: every byte or token count reads git's suffixes
through the one parser; a count that is no size (a priority, a port, a limit)
is a plain whole number, refused in one line of the project's own words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, hydrate


def _task(repo: Path, task_id: str = "N-1", *extra: str) -> None:
    made = hydrate(repo, "task-add", task_id, "--objective", "o", "--acceptance", "a", *extra)
    assert made.returncode == 0, made


def test_token_counts_take_git_suffixes(repo: Path) -> None:
    _task(repo, "N-1", "--token-budget", "16k")
    shown = json.loads(hydrate(repo, "show", "N-1", "--json").stdout)
    assert shown["token_budget"] == 16 * 1024
    edited = hydrate(repo, "task-edit", "N-1", "--token-budget", "1m", "--json")
    assert edited.returncode == 0, edited
    assert json.loads(edited.stdout)["token_budget"] == 1024 * 1024
    point = hydrate(repo, "checkpoint", "N-1", "--summary", "s", "--tokens", "1k", "--json")
    assert point.returncode == 0, point
    assert json.loads(point.stdout)["tokens"] == 1024
    # zero stays a valid token budget and checkpoint total
    assert hydrate(repo, "task-edit", "N-1", "--token-budget", "0").returncode == 0
    _task(repo, "N-2")
    assert hydrate(repo, "checkpoint", "N-2", "--summary", "s", "--tokens", "0").returncode == 0


def test_mcp_answer_budget_takes_suffixes(repo: Path) -> None:
    tools = hydrate(repo, "mcp", "--max-tokens", "8k", "--tools")
    assert tools.returncode == 0, tools
    low = hydrate(repo, "mcp", "--max-tokens", "300", "--tools")
    assert low.returncode == 2
    assert low.stderr.count("\n") == 1 and "'300' must be at least 400" in low.stderr


def test_demo_budget_takes_suffixes(tmp_path: Path) -> None:
    demo = hydrate(tmp_path, "demo", "--max-bytes", "2k")
    assert demo.returncode == 0, demo
    assert "of 2,048 bytes" in demo.stderr + demo.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("task-edit", "N-1", "--token-budget", "lots"), "'lots' is not a number of tokens"),
        (("task-edit", "N-1", "--token-budget", "-1"), "'-1' must be at least 0"),
        (("task-edit", "N-1", "--token-budget", "9p"), "'9p' is not a number of tokens"),
        (("checkpoint", "N-1", "--summary", "s", "--tokens", "2e3"), "is not a number of tokens"),
        (("demo", "--max-bytes", "0"), "'0' must be at least 1"),
        (("task-edit", "N-1", "--priority", "high"), "'high' is not a whole number"),
        (("task-edit", "N-1", "--priority", "5"), "'5' is not from 1 to 3"),
        (("task-edit", "N-1", "--priority", "1k"), "'1k' is not a whole number"),
        (("context-add", "N-1", "--text", "x", "--priority", "1.5"), "is not a whole number"),
        (("search", "x", "--limit", "0"), "'0' must be at least 1"),
        (("log", "N-1", "-n", "ten"), "'ten' is not a whole number"),
        (("web", "--port", "http"), "'http' is not a whole number"),
        (("web", "--port", "70000"), "'70000' is not from 0 to 65535"),
    ],
)
def test_bad_numbers_are_one_line_in_our_words(
    repo: Path, args: tuple[str, ...], said: str
) -> None:
    _task(repo)
    result = hydrate(repo, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert said in result.stderr
    assert "integer range" not in result.stderr and "valid integer" not in result.stderr


def test_a_number_of_thousands_of_digits_is_one_line_not_a_crash(repo: Path) -> None:
    """review11: Python's int() reads at most 4,300 digits and says so with a
    ValueError, which crashed every plain count (--port, --priority; "hit a bug",
    exit 3) and a budget in git config; a budget option said Python's own words."""
    big = "9" * 5000
    out = hydrate(repo, "task-add", "N-1", "--objective", "o", "--acceptance", "a")
    assert out.returncode == 0, out
    port = hydrate(repo, "web", "--port", big)
    assert port.returncode == 2 and port.stderr.startswith(
        "error: Invalid value for '--port': a number of 5,000 digits is not from 0 to 65535"
    )
    budget = hydrate(repo, "prompt", "N-1", "--max-bytes", big)
    assert budget.returncode == 2 and "... (5,000 characters) is too large: at most" in (
        budget.stderr
    )
    assert budget.stderr.count("\n") == 1 and len(budget.stderr) < 300
    git(repo, "config", "hydrate.maxBytes", big)
    config = hydrate(repo, "prompt", "N-1")
    assert config.returncode == 1 and config.stderr.startswith(
        "error: git config hydrate.maxBytes must be a whole number"
    )


def test_doctor_older_than_reads_a_duration_in_one_line(repo: Path) -> None:
    """explorer13: --older-than abc said click's "is not a valid float range"; it
    reads a duration as --ttl does (90, 90s, 30m), zero included (any age)."""
    for good in ("0", "90", "2m", "1.5h"):
        out = hydrate(repo, "doctor", "--older-than", good, "--clear-stale-locks")
        assert out.returncode == 0, (good, out)
    bad = hydrate(repo, "doctor", "--older-than", "abc")
    assert (bad.returncode, bad.stderr.splitlines()[0]) == (
        2,
        "error: Invalid value for '--older-than': 'abc' is not a duration (such as 90, 90s, "
        "30m, 12h, 7d) (see: git-hydrate doctor -h)",
    )
    negative = hydrate(repo, "doctor", "--older-than", "-5")
    assert negative.returncode == 2 and "'-5' must be at least zero" in negative.stderr
