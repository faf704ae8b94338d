"""Task ids: the one pattern every check asks, against the rules as written."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.ids import TASK_ID_RE, is_task_id, names_a_task

from .conftest import examples


def _by_the_rules(value: str) -> bool:
    """TASK_ID_RULES spelt out one by one (how is_task_id read before it was one
    pattern: a pull asked it of every id four times)."""
    return bool(
        TASK_ID_RE.match(value)
        and ".." not in value
        and not value.endswith(".")
        and not value.lower().endswith(".lock")
    )


_PIECES = st.sampled_from(
    ["a", "Z", "0", ".", "..", "-", "_", ".lock", ".LoCk", "lock", "\n", " ", "/", "é",
     "\u212a", "x" * 127, "İ", "\0"]
)  # fmt: skip


@settings(max_examples=examples(500))
@given(st.lists(_PIECES, max_size=6).map("".join) | st.text(max_size=12))
def test_one_pattern_answers_as_the_rules(value: str) -> None:
    assert is_task_id(value) == _by_the_rules(value)
    raw = value.encode("utf-8", "surrogatepass")
    assert names_a_task(raw) == (raw.isascii() and _by_the_rules(value))


def test_the_edges() -> None:
    for good in ["a", "T-1", "a.b", "x" * 128, "lock", "a.lockx", "v1.2"]:
        assert is_task_id(good) and names_a_task(good.encode()), good
    for bad in ["", ".a", "-a", "a..b", "a.", "a.lock", "a.LOCK", "a\n", "x" * 129, "a/b", "é"]:
        assert not is_task_id(bad), bad
        assert not names_a_task(bad.encode()), bad


def test_the_rules_say_letters_are_ascii_as_the_pattern_does() -> None:
    from git_hydrate.ids import TASK_ID_RULES

    assert not is_task_id("Ä-1") and not is_task_id("ß-1") and is_task_id("Z-1")
    assert "ASCII letters" in TASK_ID_RULES
