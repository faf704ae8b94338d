"""The notice names its first omissions in packing order, whatever order the walk
decides them in: a kept attachment left out again (to make room for the notice)
after lower-ranked ones were named takes its place in the list, and is never only
counted while they stay named."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.context_expander import build_prompt
from git_hydrate.pack.formats import FORMATS
from git_hydrate.pack.omissions import Missing, Notice, Unattached
from git_hydrate.pack.render import utf8_len
from tests.conftest import examples, notice_of
from tests.test_omissions import NOW, TASK, entry, outliner

_LINE = re.compile(r"- (`+) ?(.*?) ?\1 \(")


def _named(notice: str) -> list[str]:
    """The sources the notice names one by one, in its order (the seed's format)."""
    lines = [line for line in notice.splitlines() if "--attachment" in line]
    return [match.group(2) for match in map(_LINE.match, lines) if match]


def _counted(notice: str) -> int:
    more = re.search(r"^- (?:and )?([\d,]+) (?:more|attachments?) ", notice, re.M)
    return int(more.group(1).replace(",", "")) if more else 0


def _missing_in_packing_order(entries: list[dict[str, Any]], result: dict[str, Any]) -> list[str]:
    """What the prompt does not hold whole (left out or outlined), in packing order:
    priority, highest first, then hash."""
    gone = {o["source"] for o in result["omitted"]} | {
        s["source"] for s in result.get("shrunk", [])
    }
    ranked = sorted(entries, key=lambda e: (-e["priority"], e["hash"]))
    return [e["source"] for e in ranked if e["source"] in gone]


def _notes_and_bodies() -> list[dict[str, Any]]:
    # (20 in all: the first tenth, notes 0 and 1, rank high and are never left out
    # again for the notice's lines)
    notes = [entry(f"{i}:" + "n" * 600, f"notes/{i}.txt", 100 - i) for i in range(4)]
    big = [entry(f"{i}:" + "b" * 50_000, f"big/{i:02}.txt", 10) for i in range(16)]
    return notes + big


@pytest.mark.parametrize(("room", "first"), [(2600, "notes/2.txt"), (3400, "notes/3.txt")])
def test_an_attachment_left_out_again_is_named_before_lower_ranked_ones(
    room: int, first: str
) -> None:
    """Four notes and sixteen large bodies: the last note kept is left out again to
    make room for the notice, after the large bodies' lines were named. It is named
    first (it ranks above them), not counted while they stay named."""
    entries = _notes_and_bodies()
    base = build_prompt(TASK, [], 100_000, now=NOW)["prompt_bytes"]
    result = build_prompt(TASK, entries, base + room, now=NOW)
    prompt, notice = result["prompt"], notice_of(result["prompt"])
    order = _missing_in_packing_order(entries, result)
    named = _named(notice)
    assert order[0] == first and named and named == order[: len(named)]
    assert _counted(notice) == len(order) - len(named)
    assert result["prompt_bytes"] == utf8_len(prompt) <= base + room


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=20, max_value=1500),  # body bytes
            st.integers(min_value=0, max_value=4),  # priority
            st.booleans(),  # a Python module (it can be outlined)
            st.booleans(),  # expired
            st.integers(min_value=1, max_value=30),  # source length
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(min_value=0, max_value=9000),
    st.booleans(),
)
def test_a_walk_names_the_first_omissions_in_packing_order(
    shapes: list[tuple[int, int, bool, bool, int]], room: int, outlines: bool
) -> None:
    """Whatever the walk decides and undoes, the notice names a prefix of what is
    missing in packing order and counts the rest; the prompt is its reported size,
    within the budget."""
    entries = []
    for i, (size, priority, module, expired, length) in enumerate(shapes):
        body = (
            f"# {i}\n" + "".join(f"def f{j}(x):\n    return x\n" for j in range(size // 28 + 1))
            if module
            else f"{i}:" + "t" * size
        )
        stem = f"s{i}_" + "x" * length
        extra = {"expires": NOW - 1} if expired else {}
        entries.append(entry(body, stem + (".py" if module else ".txt"), priority, **extra))
    base = build_prompt(TASK, [], 100_000, now=NOW)["prompt_bytes"]
    budget = base + room
    result = build_prompt(TASK, entries, budget, now=NOW, outline=outliner if outlines else None)
    prompt = result["prompt"]
    assert result["prompt_bytes"] == utf8_len(prompt) <= budget
    notice = notice_of(prompt)
    order = _missing_in_packing_order(entries, result)
    if not notice:
        return
    named = _named(notice)
    assert named == order[: len(named)]
    assert _counted(notice) == len(order) - len(named)


# -- the notice alone ---------------------------------------------------------------

_HASH = "0123456789abcdef" * 4
_SOURCES = st.text(alphabet="ab/é🚀`", min_size=0, max_size=40)
_ADD = st.tuples(
    st.just("add"),
    st.integers(min_value=0, max_value=30),
    _SOURCES,
    st.integers(min_value=0, max_value=300_000),
    st.booleans(),
)
_REMOVE = st.tuples(st.just("remove"), st.integers(min_value=0, max_value=30))
_OPS = st.lists(st.one_of(_ADD, _ADD, _REMOVE, st.just(("unlist",))), max_size=60)


def _greedy(notice: Notice) -> list[str]:
    """The lines a notice should name, made from scratch: the first of its
    attachments in packing order, while the cap and the byte limit allow."""
    lines: list[str] = []
    used = 0
    for index in sorted(notice.items):
        missing = notice.items[index]
        line = f"{notice.layout.notice_start(missing.source)}{missing.words(notice.task_id)}\n"
        limit = notice.max_listed_bytes
        if len(lines) >= notice.cap or (limit is not None and used + utf8_len(line) > limit):
            break
        lines.append(line)
        used += utf8_len(line)
    return lines


@settings(max_examples=examples(300), deadline=None)
@given(
    _OPS,
    st.integers(min_value=0, max_value=8),
    st.one_of(st.none(), st.integers(min_value=0, max_value=1200)),
    st.sampled_from(sorted(FORMATS)),
    st.booleans(),
)
def test_a_notice_names_the_first_in_packing_order_at_exact_cost(
    ops: list[tuple[Any, ...]], cap: int, limit: int | None, name: str, files: bool
) -> None:
    """Attachments added, removed and unlisted in any order: the notice names the
    lowest-placed ones whose lines fit, in packing order (the cap and the byte
    limit stop it at the first that does not fit), counts the rest, keeps the
    files the task names that have no attachment after them, and its cost is its
    text's bytes."""
    unattached = (Unattached("big.py", "file in play", "too_large", 300_000, "f" * 40),) * files
    notice = Notice("T-1", FORMATS[name], cap=cap, max_listed_bytes=limit, unattached=unattached)
    for op in ops:
        if op[0] == "add":
            _, index, source, size, outlined = op
            notice.add(Missing(index, _HASH, source, size, "byte_budget", outlined))
        elif op[0] == "remove":
            notice.remove(op[1])
        else:
            notice.unlist_last()
        lines = _greedy(notice)
        section = notice.section()
        assert all(line in section for line in lines)
        assert section.count("--attachment") == len(lines)
        if lines:
            start = section.index(lines[0])
            assert section[start:].startswith("".join(lines))
        for at, index in enumerate(sorted(notice.items)):
            assert notice.line_bytes(index) == (utf8_len(lines[at]) if at < len(lines) else 0)
        if files:  # (named after the attachments, or counted once none is named)
            said = unattached[0].words("T-1") if notice.cap else "file the task names not"
            assert section.index(said) > section.rfind("--attachment")
        layout = notice.layout
        assert notice.cost(after_attachments=True) == (
            utf8_len(section) + len(layout.separator) if notice else 0
        )


def test_an_omission_that_ranks_higher_takes_the_place_of_the_last_named() -> None:
    notice = Notice("T-1", cap=2)
    for index in (5, 7, 9):
        notice.add(Missing(index, _HASH, f"f{index}", 10, "byte_budget", False))
    assert _named(notice.section()) == ["f5", "f7"]
    notice.add(Missing(1, _HASH, "f1", 10, "byte_budget", False))
    assert _named(notice.section()) == ["f1", "f5"]
    assert "- and 2 more not named here" in notice.section()
    # kept after all: the next one in packing order (not in the order added) is named
    notice.remove(1)
    assert _named(notice.section()) == ["f5", "f7"]
    notice.remove(5)
    assert _named(notice.section()) == ["f7", "f9"]
    assert notice.line_bytes(9) > 0 and notice.line_bytes(5) == 0
