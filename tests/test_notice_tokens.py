"""Under a token budget the ``### Not included`` notice is counted, not guessed:
omissions are never left unsaid when the notice that only counts them fits."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from git_hydrate.context_expander import build_prompt
from git_hydrate.pack import tokens
from git_hydrate.pack.budget import Budget
from git_hydrate.pack.formats import FORMATS
from git_hydrate.pack.omissions import Missing, Notice
from tests.conftest import notice_of, render_with_notice

NOW = 1_700_000_000.0
TASK = {"id": "K-1", "title": "Notes", "objective": "notes", "acceptance": "ok"}

needs_tokens = pytest.mark.skipif(
    tokens._toktok_counter() is None and tokens._pure_counter() is None,
    reason="needs git-hydrate[tokens]",
)


def entry(body: str, source: str) -> dict[str, Any]:
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return {"hash": digest, "source": source, "priority": 0, "body": body}


def count_only(result: dict[str, Any], name: str, omitted: int, budget: int) -> str:
    """The prompt with no attachment and the notice that only counts ``omitted``."""
    rebuild = Budget(None, budget, "o200k_base", False, name).options()
    notice = Notice(str(result["packet"]["task_id"]), FORMATS[name], cap=0, rebuild=rebuild)
    for index in range(omitted):
        notice.add(Missing(index, "0" * 64, f"s{index}", 1, "byte_budget", False))
    packet = {**result["packet"], "context": []}
    return render_with_notice(packet, name, notice.section())


@needs_tokens
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_token_budget_keeps_the_notice_whenever_it_fits_alone(name: str) -> None:
    meter = tokens.Meter("o200k_base")
    entries = [entry(f"note number {i}\n", f"d/f{i}.txt") for i in range(1, 101)]
    shape = FORMATS[name]
    empty = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, layout=shape)
    dropped = 0
    for budget in range(empty["token_count"], empty["token_count"] + 240, 2):
        result = build_prompt(
            TASK, entries, None, max_tokens=budget, tokens=meter, now=NOW, layout=shape
        )
        prompt = result["prompt"]
        assert result["token_count"] == tokens.count_tokens(prompt, "o200k_base") <= budget
        if not result["omitted"]:
            continue
        alone = count_only(result, name, len(entries), budget)
        if tokens.count_tokens(alone, "o200k_base") <= budget:
            assert notice_of(prompt, name), (budget, result["kept"])
        else:
            dropped += 1
        # a byte budget without room for the count: it is not put in for the tokens
        max_bytes = len(alone.encode()) - 1
        both = build_prompt(
            TASK, entries, max_bytes, max_tokens=budget, tokens=meter, now=NOW, layout=shape
        )
        assert both["prompt_bytes"] == len(both["prompt"].encode()) <= max_bytes
        assert both["token_count"] <= budget
    assert dropped  # (the range begins where even the count does not fit)


@needs_tokens
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_under_a_token_budget_the_named_lines_take_a_quarter_of_the_room(name: str) -> None:
    """The named lines were held to a quarter of the room only under a byte budget:
    under ``--max-tokens 2000`` alone the notice named 21 lines and took 88 % of a
    requests prompt, and small top-ranked files were left out for it. A quarter of
    the token room holds them now (as bytes at two a token, the notice's estimate)."""
    meter = tokens.Meter("o200k_base")
    entries = [entry(f"{i}: " + "words of a note " * 20, f"d/f{i:03}.txt") for i in range(60)]
    shape = FORMATS[name]
    empty = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, layout=shape)
    budget = empty["token_count"] + 1000
    result = build_prompt(TASK, entries, None, max_tokens=budget, tokens=meter, layout=shape)
    named = [line for line in result["prompt"].splitlines() if "--attachment" in line]
    assert 0 < len(named) < 25
    assert sum(len(line.encode()) + 1 for line in named) <= 1000 // 4 * 2
    assert result["token_count"] <= budget and result["kept"] >= 3
