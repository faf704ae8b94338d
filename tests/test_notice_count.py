"""A prompt that leaves anything out says so whenever one line saying it fits.

The exploratory tester's repro: a task with a large and a small file attached
and a file in play that does not exist. The notice's smallest form is one line
that counts every omission (the attachments left out and the files the task
names that have none) with the command that lists them; a prompt without a
notice is one whose budget could not hold even that line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.pack.tokens import count_tokens

from .conftest import commit_files, hydrate, notice_of


@pytest.fixture
def e_repo(repo: Path) -> Path:
    commit_files(repo, {"big.txt": "x" * 5000 + "\n", "small.txt": "small\n"})
    out = hydrate(repo, "task-add", "E-1", "--objective", "look at big.txt",
                  "--acceptance", "ok", "--file-in-play", "missing.py")  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert hydrate(repo, "add-tree", "E-1").returncode == 0
    return repo


def test_one_line_counts_every_omission_when_two_do_not_fit(e_repo: Path) -> None:
    out = hydrate(e_repo, "prompt", "E-1", "--max-bytes", "660")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.encode()) <= 660
    assert re.fullmatch(
        "### Not included\n"
        r"- \d attachments? left out or shrunk and 1 file the task names not attached: "
        "git hydrate prompt E-1 --max-bytes 660 -v lists every one\n",
        notice_of(out.stdout),
    )


def _one_line(prompt: str, option: str) -> str:
    """``prompt`` (one that keeps no attachment and has a notice) with the notice
    of one line counting every omission, its command spelling ``option``."""
    return prompt.replace(
        notice_of(prompt),
        "### Not included\n"
        "- 2 attachments left out or shrunk and 1 file the task names not attached: "
        f"git hydrate prompt E-1 {option} -v lists every one\n",
    )


@pytest.mark.parametrize("unit", ["max_bytes", "max_tokens"])
def test_an_omission_is_unsaid_only_when_one_line_does_not_fit(e_repo: Path, unit: str) -> None:
    """At every budget a prompt without a notice could not hold the one line even
    with every attachment left out; once said, every larger budget says it."""
    with Ledger(e_repo) as ledger:
        results = {b: ledger.prompt("E-1", b, cache=False) for b in range(560, 800, 4)}
        (empty,) = [r for r in results.values() if not r["kept"] and notice_of(r["prompt"])][:1]
        if unit == "max_tokens":
            results = {t: ledger.prompt("E-1", cache=False, max_tokens=t) for t in range(130, 200)}
    said_at = None
    for budget, result in results.items():
        assert result["omitted"], "the budget is below the big file's"
        if notice_of(result["prompt"]):
            said_at = budget if said_at is None else said_at
            continue
        assert said_at is None, f"unsaid at {budget}, said at {said_at}"
        option = f"--{unit.replace('_', '-')} {budget}"
        alone = _one_line(empty["prompt"], option)
        size = len(alone.encode()) if unit == "max_bytes" else count_tokens(alone, "o200k_base")
        assert size > budget, f"one line fits at {budget} but nothing is said"
    assert said_at is not None
