"""add-tree's picking: refusing at once the files that cannot fit what is left of
the total budget gives exactly what offering each of them would; the result
lists the skips as each one's own dict would."""

from __future__ import annotations

from operator import attrgetter

from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.hydrate.links import Selector, _skip_dicts
from git_hydrate.hydrate.reading import Content
from git_hydrate.hydrate.rules import Skipped
from git_hydrate.hydrate.tree import _pick
from tests.conftest import examples

_ROW = st.tuples(
    st.sampled_from(["text", "text", "text", "secret", "binary"]),
    st.integers(0, 5),  # the body: equal numbers are duplicates
    st.integers(1, 400),  # bytes
    st.integers(-3, 3),  # priority
    st.sampled_from(["a.py", "ghp_" + "a1B2c3D4e5" * 4, "d" * 1030]),  # a token; too long
)


def _every_offered(
    found: Content, prefix: str, places: dict[str, tuple[int, float | None, str]], s: Selector
) -> None:
    """The plain way: every file offered, in packing order."""
    for _priority, path in sorted((-place[0], path) for path, place in places.items()):
        oid, digest, cls, size = found.info[path]
        s.offer(path, prefix + path, digest, size, cls, oid, "", places[path])


@settings(max_examples=examples(300))
@given(
    rows=st.lists(_ROW, max_size=40),
    budget=st.integers(1, 3000),
    allow=st.booleans(),
    prefix=st.sampled_from(["", "svc/"]),
)
def test_refusing_what_cannot_fit_equals_offering_every_file(
    rows: list[tuple[str, int, int, int, str]], budget: int, allow: bool, prefix: str
) -> None:
    found = Content()
    places: dict[str, tuple[int, float | None, str]] = {}
    for i, (cls, body, size, priority, name) in enumerate(rows):
        path = f"f{i:02d}/{name}"
        found.info[path] = (f"oid{body}", f"sha{body}", cls, size)
        places[path] = (priority, 0.5, f"reason {i}")
    labels = [prefix + path for path in found.info]
    fast, plain = Selector(budget, allow, labels), Selector(budget, allow, labels)
    _pick(found, prefix, places, fast)
    _every_offered(found, prefix, places, plain)
    assert fast.picks == plain.picks
    assert fast.skipped == plain.skipped
    assert fast.remaining == plain.remaining


def test_files_after_the_budget_is_spent_keep_their_own_reasons() -> None:
    found = Content()
    found.info = {
        "a.py": ("o1", "s1", "text", 100),
        "b.bin": ("o2", "s2", "binary", 500),
        "c.py": ("o3", "s1", "text", 100),  # the body of a.py
        "d.py": ("o4", "s4", "text", 300),
        "e.py": ("o5", "s5", "secret", 400),
    }
    places: dict[str, tuple[int, float | None, str]] = {
        path: (-i, 0.1, "") for i, path in enumerate(found.info)
    }
    selector = Selector(150, False, list(found.info))
    _pick(found, "", places, selector)
    assert [pick.path for pick in selector.picks] == ["a.py"]
    assert [(s.path, s.reason, s.same_as) for s in selector.skipped] == [
        ("b.bin", "binary", ""),
        ("c.py", "duplicate", "a.py"),
        ("d.py", "total_budget", ""),
        ("e.py", "secret", ""),
    ]


_SKIP = st.builds(
    Skipped,
    st.sampled_from(["a.py", "b.py", "b/c.py", "caf\u00e9.py", "bad\udcff.py"]),
    st.sampled_from(["total_budget", "secret", "duplicate", "binary"]),
    st.integers(0, 9),
    st.sampled_from(["", "", "a.py"]),
)


@settings(max_examples=examples(200))
@given(skips=st.lists(_SKIP, max_size=30))
def test_the_result_lists_skips_as_each_one_s_dict_by_path_then_reason(
    skips: list[Skipped],
) -> None:
    plain = [s.as_dict() for s in sorted(skips, key=attrgetter("path", "reason"))]
    assert _skip_dicts(skips) == plain
    assert [list(d) for d in _skip_dicts(skips)] == [list(d) for d in plain]  # (key order)
