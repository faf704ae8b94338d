"""Value per byte under a token budget: a large file is weighed in tokens too.

``prompt --max-tokens 8k`` without ``--max-bytes`` packed nushell's 26 KiB
``src/main.rs`` whole where, under a byte budget of the same room, it waited
and the smaller files ranked below it came in: the rule weighed only against a
byte room. It weighs in each budget there is now, by the meter's exact counts:
a Python module tokenises at ~2.5 bytes a token, so an estimate at 4 bytes a
token does not see it as large where it is.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from git_hydrate.context_expander import build_prompt
from git_hydrate.pack import tokens
from git_hydrate.pack.entries import Attachment, Item
from git_hydrate.pack.formats import FORMATS
from git_hydrate.pack.measure import Plan, Walked, candidate, whole_tokens
from git_hydrate.pack.value import LARGE_SHARE
from git_hydrate.pack.walk import walk
from tests.conftest import commit_files, examples, hydrate, outliner

NOW = 1_700_000_000.0
TASK = {"id": "V-1", "title": "Value", "objective": "Weigh in tokens.", "acceptance": "a"}
#: The token room of the budgets below (the budget less the mandatory part).
ROOM = 3_000

needs_tokens = pytest.mark.skipif(
    tokens._toktok_counter() is None and tokens._pure_counter() is None,
    reason="needs git-hydrate[tokens]",
)
pytestmark = needs_tokens


def entry(body: str, source: str, priority: int, **extra: Any) -> dict[str, Any]:
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return {"hash": digest, "source": source, "priority": priority, "body": body, **extra}


def python_module(functions: int) -> str:
    """2,560 bytes and 1,012 tokens (o200k_base) at 4 functions: ~2.5 bytes a token."""
    return "".join(
        f"def function_{i}(value):\n    '''Doc {i}.'''\n" + "    value += 1\n" * 40
        for i in range(functions)
    )


LARGE = python_module(4)
#: Five of ~530 tokens each: all five fit the room alone, three beside the large one.
SMALLS = [f"{i}: " + "word " * 530 for i in range(5)]


def _entries(**large: Any) -> list[dict[str, Any]]:
    return [
        entry(LARGE, "big.py", 10, **large),
        *(entry(body, f"s{i}.txt", 5 - i) for i, body in enumerate(SMALLS)),
    ]


def _prompt(entries: list[dict[str, Any]], room_bytes: int | None = None) -> dict[str, Any]:
    meter = tokens.Meter("o200k_base")
    base = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, now=NOW)
    max_bytes = None if room_bytes is None else base["prompt_bytes"] + room_bytes
    return build_prompt(
        TASK,
        entries,
        max_bytes,
        max_tokens=base["token_count"] + ROOM,
        tokens=meter,
        outline=outliner,
        now=NOW,
    )


def _kept(result: dict[str, Any]) -> list[str]:
    return [item["source"] for item in result["packet"]["context"]]


def test_a_large_file_waits_under_a_token_budget_alone() -> None:
    # (by its bytes it is no quarter of the room, at 4 bytes a token or even at 1)
    assert len(LARGE.encode("utf-8")) <= ROOM
    result = _prompt(_entries())
    assert _kept(result) == ["big.py (outline)", *(f"s{i}.txt" for i in range(5))]
    assert result["token_count"] <= result["max_tokens"]
    (said,) = result["decisions"]
    # it ranks first, so high: its outline is kept in its place at once, never tried whole
    # again, and -v says so (it said "it is packed after them if it still fits": Signal-
    # Server's first file, 25 KB in 32 KiB, ended an outline; explorer23)
    assert re.fullmatch(
        r"value per byte: big\.py \(1,0\d\d tokens, over 1/4 of the 3,000 tokens of room\) "
        r"waits: in its place 2 later attachments fit whole; it ranks high: its outline is "
        r"kept in its place",
        said,
    ), said


def test_a_large_file_that_ranks_low_is_packed_after_them() -> None:
    """Below the first tenth of the order, a large file that waits is tried whole
    after the later ones, then as its outline: -v says that."""
    small = [entry("ok\n" * 20, f"t{i}.txt", 50 - i) for i in range(10)]
    result = _prompt([*small, *_entries()])
    said = [line for line in result["decisions"] if line.startswith("value per byte: big.py")]
    assert said and said[0].endswith("it is packed after them if it still fits, else outlined")


def test_a_file_large_in_tokens_waits_beside_a_roomy_byte_budget() -> None:
    result = _prompt(_entries(), room_bytes=10**6)
    assert _kept(result) == ["big.py (outline)", *(f"s{i}.txt" for i in range(5))]
    (said,) = result["decisions"]
    assert "tokens of room) waits" in said and "bytes" not in said


def test_a_file_large_in_bytes_waits_beside_a_roomy_token_budget() -> None:
    """Large in either budget is enough: here in bytes alone (its 1,019 tokens are
    no quarter of 10,000), the five small files ~200 tokens and ~1 KB each."""
    small = [entry(f"{i}: " + "word " * 200, f"s{i}.txt", 5 - i) for i in range(5)]
    meter = tokens.Meter("o200k_base")
    base = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, now=NOW)
    result = build_prompt(
        TASK,
        [entry(LARGE, "big.py", 10), *small],
        base["prompt_bytes"] + 6_000,
        max_tokens=base["token_count"] + 10_000,
        tokens=meter,
        outline=outliner,
        now=NOW,
    )
    assert _kept(result)[1:] == [f"s{i}.txt" for i in range(5)]
    (said,) = result["decisions"]
    assert re.match(r"value per byte: big\.py \(2,5\d\d bytes, over 1/4 of the 6,000 bytes ", said)
    assert "tokens" not in said


def test_what_waiting_gains_is_counted_in_both_budgets() -> None:
    """In tokens, two of the small files fit in the large one's place; in bytes (each
    ~2.7 KB) only one more does: waiting would not gain two whole files within both
    budgets, so the large one keeps its place."""
    assert "waits" in _prompt(_entries())["decisions"][0]  # (in tokens alone it waits)
    result = _prompt(_entries(), room_bytes=8_500)
    assert _kept(result)[0] == "big.py"
    assert "decisions" not in result


def test_a_named_file_never_waits_under_a_token_budget() -> None:
    result = _prompt(_entries(named="file in play"))
    assert _kept(result)[0] == "big.py"
    assert "decisions" not in result
    assert result["token_count"] <= result["max_tokens"]


def _named_pair() -> list[dict[str, Any]]:
    """Two named modules, ~3.8 KB and ~1,500 tokens each."""
    return [
        entry(
            python_module(6).replace("function_", name),
            f"{name}.py",
            10 - at,
            named="file in play",
        )
        for at, name in enumerate(("a", "b"))
    ]


@pytest.mark.parametrize("room", [1_700, 1_800])
def test_a_named_file_is_kept_whole_only_beside_the_outlines_after_it_in_tokens(room: int) -> None:
    """The reserve of the files the task names after one is counted in tokens too:
    a.py whole in a token room that leaves no room for b.py's outline is an outline
    too, so that b.py is outlined rather than left out (before: a.py whole, b.py
    left out, not even outlined); where both fit, a.py stays whole."""
    meter = tokens.Meter("o200k_base")
    base = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, now=NOW)
    result = build_prompt(
        TASK,
        _named_pair(),
        None,
        max_tokens=base["token_count"] + room,
        tokens=meter,
        outline=outliner,
        now=NOW,
    )
    first = "a.py (outline)" if room == 1_700 else "a.py"
    assert _kept(result) == [first, "b.py (outline)"]
    assert result["token_count"] <= result["max_tokens"]


@pytest.mark.parametrize("budget", ["tokens", "bytes"])
def test_the_reserve_holds_the_notice_heading_the_first_outline_opens(budget: str) -> None:
    """The reserve holds the notice's heading and introduction when the notice is
    empty (the first named file's case): a.py whole beside b.py's outline needs
    1,744 tokens (4,511 bytes) more than the bare prompt; at 1,760 (4,450) a.py
    was kept whole and b.py left out, not even outlined, for the heading was
    reserved only once the notice held something. Both are outlines now."""
    meter = tokens.Meter("o200k_base")
    if budget == "tokens":
        base = build_prompt(TASK, [], None, max_tokens=10**6, tokens=meter, now=NOW)
        result = build_prompt(
            TASK,
            _named_pair(),
            None,
            max_tokens=base["token_count"] + 1_760,
            tokens=meter,
            outline=outliner,
            now=NOW,
        )
    else:
        bare = build_prompt(TASK, [], 10**6, now=NOW)["prompt_bytes"]
        result = build_prompt(TASK, _named_pair(), bare + 4_450, outline=outliner, now=NOW)
        # the reserve is exact in bytes: a.py is whole as soon as both fit
        both = build_prompt(TASK, _named_pair(), bare + 4_511, outline=outliner, now=NOW)
        assert _kept(both) == ["a.py", "b.py (outline)"]
        assert both["prompt_bytes"] == bare + 4_511
    assert _kept(result) == ["a.py (outline)", "b.py (outline)"]


@pytest.mark.parametrize("in_play", [False, True])
def test_prompt_max_tokens_weighs_a_stored_task_in_tokens(repo: Path, in_play: bool) -> None:
    """The command line, its bodies read from git: ``-v`` says the decision in tokens."""
    files = {"big.py": LARGE, **{f"s{i}.txt": body for i, body in enumerate(SMALLS)}}
    commit_files(repo, files)
    named = ["--file-in-play", "big.py"] if in_play else []
    hydrate(repo, "task-add", "V-1", "--objective", "o", "--acceptance", "a", *named)
    for priority, name in enumerate(reversed(files)):
        hydrate(repo, "add", "V-1", "--file", name, "--priority", str(priority))
    refused = hydrate(repo, "prompt", "V-1", "--max-tokens", "1")
    base = re.search(r"it needs --max-tokens (\d+) or more", refused.stderr)
    assert base is not None, refused.stderr
    out = hydrate(repo, "prompt", "V-1", "--max-tokens", str(int(base[1]) + ROOM), "-v")
    assert out.returncode == 0, out.stderr
    headings = re.findall(r"^### (?:Context from|Outline of) (\S+)", out.stdout, re.M)
    if in_play:
        assert headings[0] == "big.py" and "value per byte" not in out.stderr
        assert "### Context from big.py\n" in out.stdout
    else:
        assert headings == ["big.py", *(f"s{i}.txt" for i in range(5))], headings
        assert "### Outline of big.py (not the whole file)" in out.stdout
        assert re.search(
            r"value per byte: big\.py \(1,0\d\d tokens, over 1/4 of the [\d,]+ tokens of "
            r"room\) waits",
            out.stderr,
        ), out.stderr


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_remembered_count_gives_the_same_tokens_without_the_body(name: str) -> None:
    """A large file's later ones are counted by their sections; a body whose count the
    meter remembers (from an earlier run) is not read again, where the section's first
    piece does not depend on it (in ``markdown`` the fence does), and the count is the
    one the walk gets keeping it."""
    body = LARGE + "``` <not> & a fence\n"
    plan = Plan(
        json=False,
        prompt=True,
        room_bytes=None,
        room_tokens=10**6,
        meter=tokens.Meter("o200k_base"),
        layout=FORMATS[name],
        value_per_byte=True,
    )
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    stored = Attachment.of({"hash": digest, "source": "a/big.py", "oid": "ab" * 20, "size": 99})
    read: list[str] = []

    def load(attachment: Attachment) -> str:
        read.append(attachment.source)
        return body

    counted = [whole_tokens(plan, Walked(plan), stored, load) for _ in range(2)]
    assert len(read) == (2 if name == "markdown" else 1)
    item = Item(body, digest, stored.source)
    assert counted == [candidate(plan, stored, item, "full", 2)[3]] * 2


#: Texts of different densities: ~1, ~4 and ~2.5 bytes a token.
_PIECES = ["(), ", "word ", "    value += 1\n"]


def _walked(named: list[tuple[int, str]], room: int) -> Walked:
    """The pure walk of ``named`` (each body's number, and the body) in that order."""
    attachments = [Attachment.of(entry(body, f"f{i}.txt", 100 - i)) for i, body in named]
    plan = Plan(
        json=False,
        prompt=True,
        room_bytes=None,
        room_tokens=room,
        meter=tokens.Meter("o200k_base"),
        block_tokens=20,
        value_per_byte=True,
        outliner=lambda _entry, _read: "v\n",  # (each has an outline: it may wait)
    )
    return walk(attachments, plan, now=NOW, load_body=None)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 8), st.sampled_from(_PIECES)), min_size=1, max_size=12),
    st.tuples(st.integers(20, 200), st.sampled_from(_PIECES)),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=200, max_value=1500),
)
# before tokens were weighed: the large one, first, kept whole in the room of the two
@example([(1, "(), "), (1, "(), ")], (159, "(), "), 0, 200)
def test_in_tokens_one_file_never_leaves_out_two_that_fit_without_it(
    smalls: list[tuple[int, str]], large: tuple[int, str], at: int, room: int
) -> None:
    """The rule alone, under a token budget alone (no notice): a large attachment
    among small ones (each under a quarter of the room), wherever it ranks, kept
    whole, never leaves out two or more that the walk without it keeps whole."""
    pieces = [*smalls[:at], large, *smalls[at:]]
    named = [(i, f"{i}:" + piece * times) for i, (times, piece) in enumerate(pieces)]
    walked = _walked(named, room)
    assert walked.used_tokens <= room
    place = min(at, len(smalls))
    held = [k for k in walked.kept if k.index == place and k.shrunk is None]
    # (its own tokens: the first kept opens the block, 20 tokens here, for a line's 1)
    if not held or (held[0].tokens - (19 if held[0].opens else 0)) * LARGE_SHARE <= room:
        return
    without = _walked([*named[:place], *named[place + 1 :]], room)
    whole = {k.entry.hash for k in without.kept if k.shrunk is None}
    left_out = {o.hash for o in walked.omitted} | {
        k.entry.hash for k in walked.kept if k.shrunk is not None
    }
    assert len(left_out & whole) < 2, (room, sorted(left_out & whole))
