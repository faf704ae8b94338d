"""The task merge is symmetric, idempotent and three-way (pure functions, hypothesis)."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.merge import MISSING, Side, merge_json, merge_states
from git_hydrate.model import Checkpoint, Link, PathNote, Task, packing_key
from tests.conftest import examples

DIGESTS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(5)]

checkpoints = st.builds(
    Checkpoint,
    summary=st.sampled_from(["s1", "s2"]),
    evidence=st.just("e"),
    next_step=st.just("n"),
    tokens=st.integers(0, 3),
    at=st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"]),
)


#: what the composites below draw from, made once (a strategy made anew at each
#: draw cost more than the draw itself)
_CHOSEN = st.lists(st.sampled_from(DIGESTS), unique=True, max_size=4)
_SOURCES = st.sampled_from(["a", "b"])
_EXPIRIES = st.sampled_from([None, 100])
_ORIGINS = st.sampled_from(["", "tree"])
_LINK_PATHS = st.sampled_from(["", "src/x.py"])
_TITLES = st.sampled_from(["t1", "t2", "t3"])
_OBJECTIVES = st.sampled_from(["o1", "o2"])
_STATUSES = st.sampled_from(["open", "done", "blocked"])
_TAGS = st.lists(st.sampled_from(["x", "y", "z"]), unique=True, max_size=3)
_FILES = st.lists(st.builds(PathNote, path=st.sampled_from(["a.py", "b.py"])))
_CHECKPOINTS = st.lists(checkpoints, max_size=3, unique=True)
_CREATED = st.sampled_from(["", "2026-01-01T00:00:00Z", "2026-02-01T00:00:00Z"])
_COMMITS = st.sampled_from(["aa", "bb", "cc"])


@st.composite
def links(draw: Any) -> list[Link]:
    chosen = draw(_CHOSEN)
    result = [
        Link(
            sha256=d,
            oid=d[:40],
            size=1,
            source=draw(_SOURCES),
            priority=draw(st.integers(0, 2)),
            expires=draw(_EXPIRIES),
            origin=draw(_ORIGINS),
            path=draw(_LINK_PATHS),
        )
        for d in chosen
    ]
    return sorted(result, key=packing_key)


@st.composite
def tasks(draw: Any) -> Task:
    return Task(
        id="T-1",
        title=draw(_TITLES),
        objective=draw(_OBJECTIVES),
        acceptance="acc",
        priority=draw(st.integers(1, 3)),
        status=draw(_STATUSES),
        tags=draw(_TAGS),
        files=draw(_FILES),
        checkpoints=draw(_CHECKPOINTS),
        created_at=draw(_CREATED),
    )


_TASKS = tasks()
_LINKS = links()


@st.composite
def sides(draw: Any) -> Side:
    return Side(
        task=draw(_TASKS),
        links=draw(_LINKS),
        time=draw(st.integers(0, 2)),
        commit=draw(_COMMITS),
    )


def _canon(result: Any) -> tuple[Any, ...]:
    return (
        msgspec.json.encode(result.task),
        msgspec.json.encode(result.links),
        [c.as_dict() for c in result.conflicts],
    )


@settings(max_examples=examples(150), deadline=None)
@given(st.one_of(st.none(), sides()), sides(), sides())
def test_merge_is_symmetric(base: Side | None, a: Side, b: Side) -> None:
    assert _canon(merge_states(base, a, b)) == _canon(merge_states(base, b, a))


@settings(max_examples=examples(100), deadline=None)
@given(sides(), sides())
def test_one_sided_change_is_taken_whole(base: Side, b: Side) -> None:
    result = merge_states(base, base, b)
    assert msgspec.json.encode(result.task) == msgspec.json.encode(b.task)
    assert result.links == b.links
    assert result.conflicts == []


@settings(max_examples=examples(100), deadline=None)
@given(st.one_of(st.none(), sides()), sides())
def test_merging_equal_sides_is_identity(base: Side | None, a: Side) -> None:
    result = merge_states(base, a, a)
    assert msgspec.json.encode(result.task) == msgspec.json.encode(a.task)
    assert result.links == a.links


def _side(title: str, link_digests: list[str], time: int, commit: str, **kw: Any) -> Side:
    task = Task(id="T", title=title, objective="o", acceptance="a", **kw)
    lks = [Link(sha256=d, oid=d[:40], size=1, source="s") for d in link_digests]
    return Side(task=task, links=sorted(lks, key=packing_key), time=time, commit=commit)


def test_links_union_with_three_way_removal() -> None:
    base = _side("t", DIGESTS[:2], 0, "00")
    ours = _side("t", [DIGESTS[1], DIGESTS[2]], 5, "aa")  # removed 0, added 2
    theirs = _side("t", [*DIGESTS[:2], DIGESTS[3]], 6, "bb")  # added 3
    result = merge_states(base, ours, theirs)
    assert sorted(lk.sha256 for lk in result.links) == sorted([DIGESTS[1], DIGESTS[2], DIGESTS[3]])
    assert result.conflicts == []


def test_scalar_conflict_takes_newer_side_and_is_reported() -> None:
    base = _side("t", [], 0, "00")
    older = _side("older", [], 5, "ff")
    newer = _side("newer", [], 6, "00")
    result = merge_states(base, older, newer)
    assert result.task.title == "newer"
    assert [c.field for c in result.conflicts] == ["title"]
    tie_a, tie_b = _side("x", [], 5, "aa"), _side("y", [], 5, "bb")
    assert merge_states(base, tie_a, tie_b).task.title == "y"  # higher commit id


def test_lists_merge_item_by_item_and_checkpoints_union_in_time_order() -> None:
    cp = [
        Checkpoint(summary=f"s{i}", evidence="e", next_step="n", tokens=i, at=f"2026-01-0{i}")
        for i in range(1, 4)
    ]
    base = _side("t", [], 0, "00", tags=["a", "b"], checkpoints=[cp[0]])
    ours = _side("t", [], 1, "aa", tags=["b", "c"], checkpoints=[cp[0], cp[2]])
    theirs = _side("t", [], 2, "bb", tags=["a", "b", "d"], checkpoints=[cp[0], cp[1]])
    result = merge_states(base, ours, theirs)
    assert result.task.tags == ["b", "d", "c"]
    assert result.task.checkpoints == cp


def test_change_wins_over_removal_for_links() -> None:
    base = _side("t", [DIGESTS[0]], 0, "00")
    removed = _side("t", [], 1, "aa")
    changed_link = Link(sha256=DIGESTS[0], oid=DIGESTS[0][:40], size=1, source="s", priority=9)
    changed = Side(task=base.task, links=[changed_link], time=0, commit="bb")
    result = merge_states(base, removed, changed)
    assert result.links == [changed_link]
    assert result.conflicts and result.conflicts[0].rule == "a change wins over a removal"


json_values = st.recursive(
    st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["p", "q"])),
    lambda inner: st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=examples(150), deadline=None)
@given(st.one_of(st.just(MISSING), json_values), json_values, json_values, st.booleans())
def test_merge_json_is_symmetric(base: Any, a: Any, b: Any, a_wins: bool) -> None:
    assert merge_json(base, a, b, a_wins) == merge_json(base, b, a, not a_wins)
