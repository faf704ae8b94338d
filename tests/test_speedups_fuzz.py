"""Hostile input against the tokeniser's C half (``git_hydrate._speedups``).

Runs in CI's slow step (``pytest -m slow``). Any bytes in any buffer, any ASCII raw
token, mappings that mutate themselves, fail or answer the wrong type, and every
allocation failing in turn: the C functions answer as their Python twins do, or
raise; they never crash, leak or answer with an exception set.
``benchmarks/fuzz_speedups.py`` is the long campaign (random, for minutes, under
AddressSanitizer); this is its part a test run affords.
"""

from __future__ import annotations

import array
import gc
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.hydrate import terms
from tests.conftest import examples

speedups = pytest.importorskip("git_hydrate._speedups", reason="built without a C compiler")

pytestmark = pytest.mark.slow

#: Pieces of blobs: the token bytes' edges, camel and stemmer cases, stop words,
#: bytes no token holds (NUL, DEL, invalid UTF-8, a UTF-8 letter).
PIECES = [
    *(b"a", b"A", b"z", b"Z", b"0", b"9", b"_", b"ab", b"Ab", b"AB", b"abc", b"ABC"),
    *(b"HTTPServer", b"ies", b"ing", b"ed", b"eed", b"ss", b"us", b"is", b"s", b"get"),
    *(b"the", b"12", b"__", b" ", b"\n", b"\0", b"\xff", b"\x80", "é".encode(), b"-"),
    *(b"@", b"[", b"`", b"{", b"/", b":", b"\x7f", b"\x1f"),
]
blobs = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from(PIECES), max_size=200).map(b"".join),
    st.tuples(
        st.sampled_from([b"x", b"Ab", b"A", b"_", b"9", b"aB1"]),
        st.integers(1, 20_000),
        st.binary(max_size=3),
        st.booleans(),
    ).map(lambda t: t[0] * t[1] + t[2] if t[3] else t[2] + t[0] * t[1]),
)


def _buffers(data: bytes) -> list[Any]:
    """``data`` in each buffer the C functions read: one of its exact size (an
    ``array`` made from a list: from bytes it is given room to grow; bytes keep a
    NUL after their end), where a read past the end is one past the allocation
    (AddressSanitizer's report, in ``benchmarks/fuzz_speedups.py``'s build), and a
    view in the middle of token bytes."""
    around = b"Zz_" + data + b"_zZ"
    return [
        data,
        bytearray(data),
        memoryview(data),
        array.array("B", list(data)),
        memoryview(around)[3 : 3 + len(data)],
    ]


@settings(max_examples=examples(1500))
@given(blobs)
def test_any_blob_in_any_buffer_counts_as_in_python(data: bytes) -> None:
    raw = list(terms._raw_counts(data).items())
    words = terms._word_counts(data, terms._Splits())
    for buffer in _buffers(data):
        assert list(speedups.raw_counts(buffer).items()) == raw
        counted = speedups.word_counts(buffer, terms._Splits())
        assert list(counted.items()) == list(words.items())


raw_tokens = st.one_of(
    st.text(alphabet="aAbBsSgGdDeEiIyYnNuUzZ_0123456789", max_size=40),
    st.lists(st.sampled_from([p.decode() for p in PIECES[:20]]), min_size=1, max_size=300).map(
        "".join
    ),
    st.from_regex(r"[A-Za-z0-9_]{1,200}", fullmatch=True),
)


@settings(max_examples=examples(1500))
@given(raw_tokens)
def test_any_raw_token_splits_as_in_python(raw: str) -> None:
    assert speedups.split_words(raw, terms._STOP) == terms._words(raw)


@settings(max_examples=examples(1000))
@given(st.text(min_size=1, max_size=20).filter(lambda text: not terms._RAW.fullmatch(text)))
def test_any_other_text_is_refused(text: str) -> None:
    """Text with a character outside ``[A-Za-z0-9_]``, ASCII or not."""
    with pytest.raises(ValueError, match="raw token"):
        speedups.split_words(text, terms._STOP)


class _Boom(Exception):
    pass


def _mutating(base: dict[str, Any], action: int, fail_at: int) -> dict[str, Any]:
    """A mapping whose ``__missing__`` changes it (clears it, drops or adds a key)
    or raises at its ``fail_at``-th call, then answers."""
    calls = [0]

    class Mutating(dict[str, Any]):
        def __missing__(self, key: str) -> tuple[str, ...]:
            calls[0] += 1
            if action == 0:
                self.clear()
            elif action == 1 and self:
                self.pop(next(iter(self)))
            elif action == 2:
                self[key + "_"] = ("added",)
            elif calls[0] >= fail_at:
                raise _Boom(key)
            found = self[key] = (key, "missing")
            return found

    return Mutating(base)


def _outcome(count: Callable[..., dict[Any, int]], data: bytes, splits: Any) -> Any:
    try:
        return list(count(data, splits).items())
    except Exception as error:  # (the type is what both must agree on)
        return type(error)


words_of_any_type = st.lists(
    st.sampled_from(["w", "x", "w", "long" * 10, 1, 2.0, None, (), True]), max_size=4
).map(tuple)


@settings(max_examples=examples(600))
@given(
    st.lists(st.sampled_from([b"ab", b"cd", b"ef", b"Gh", b"ij_k", b"9", b"."]), max_size=30),
    st.lists(words_of_any_type, min_size=8, max_size=8),
    st.integers(0, 3),
    st.integers(0, 12),
    st.floats(0, 1),
)
def test_a_mapping_that_changes_or_fails_is_met_as_in_python(
    pieces: list[bytes], values: list[tuple[Any, ...]], action: int, fail_at: int, kept: float
) -> None:
    """Whatever the mapping does while it is asked, C asks the same keys in the same
    order and answers the same counts or raises the same exception, and leaves the
    mapping as Python does."""
    data = b" ".join(pieces)
    tokens = list(terms._raw_counts(data))
    base = {token: values[at % 8] for at, token in enumerate(tokens) if at % 8 < kept * 8}
    compiled, python = _mutating(base, action, fail_at), _mutating(base, action, fail_at)
    assert _outcome(speedups.word_counts, data, compiled) == _outcome(
        terms._word_counts, data, python
    )
    assert compiled == python


def test_no_reference_is_taken_or_leaked_on_any_failure() -> None:
    """Each way a call fails, a thousand times: what it was given has the references
    it had, and memory traced does not grow."""
    data = b" ".join(f"tok{number} other_{number % 7}".encode() for number in range(300))
    good = {raw: (raw, "shared") for raw in terms._raw_counts(data)}
    last = next(reversed(good))

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

    class EqualityFails:
        """Hashed as ``like``, and comparing to it fails."""

        def __init__(self, like: str) -> None:
            self.like = like

        def __hash__(self) -> int:
            return hash(self.like)

        def __eq__(self, other: object) -> bool:
            raise _Boom("eq")

    stop = frozenset({EqualityFails("name")})
    raising = _mutating({k: v for k, v in good.items() if k != last}, 3, 1)
    calls: list[Callable[[], object]] = [
        lambda: speedups.word_counts(data, {k: v for k, v in good.items() if k != last}),
        lambda: speedups.word_counts(data, raising),
        lambda: speedups.word_counts(data, {**good, last: [last]}),
        lambda: speedups.word_counts(data, {**good, last: (Unhashable(),)}),
        lambda: speedups.word_counts(data, {**good, last: (EqualityFails("shared"),)}),
        lambda: speedups.word_counts("text", good),
        lambda: speedups.split_words("getHTTPServer_name", stop),
        lambda: speedups.split_words("naïve_thing", terms._STOP),
        lambda: speedups.split_words("foo.bar", terms._STOP),
        lambda: speedups.split_words("word", ["word"]),
    ]
    given_objects = [
        data,
        stop,
        *good.values(),
        *(word for split in good.values() for word in split),
    ]
    before = [sys.getrefcount(item) for item in given_objects]
    for call in calls:

        def fail(times: int, call: Callable[[], object] = call) -> None:
            for _ in range(times):
                try:
                    call()
                except Exception:
                    continue
                raise AssertionError("no exception")

        fail(20)
        gc.collect()
        tracemalloc.start()
        try:
            fail(20)
            start = tracemalloc.get_traced_memory()[0]
            fail(1_000)
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert grown < 16 * 1024, (calls.index(call), grown)
    gc.collect()
    assert [sys.getrefcount(item) for item in given_objects] == before


def test_every_allocation_failing_in_turn_is_a_memory_error() -> None:
    """Each allocation of a call fails in turn (``_testcapi.set_nomemory``): the
    call raises ``MemoryError`` or answers rightly, never another exception (a
    ``SystemError`` is an answer with an exception set, or none with none) and
    never a crash."""
    testcapi = pytest.importorskip("_testcapi")
    names = [f"name{number}" for number in range(700)]
    data = (" ".join(names + names) + " getHTTPServer_name parse_url2json").encode()
    splits = {raw: terms._words(raw) for raw in terms._raw_counts(data)}
    raw = "getHTTPServer_names_" * 40
    cases: list[tuple[Callable[[], object], object]] = [
        (lambda: speedups.raw_counts(data), dict(terms._raw_counts(data))),
        (lambda: speedups.word_counts(data, splits), terms._word_counts(data, splits)),
        (lambda: speedups.split_words(raw, terms._STOP), terms._words(raw)),
    ]
    for call, expected in cases:
        failed = 0
        for start in range(3_000):
            testcapi.set_nomemory(start, start + 1)
            try:
                answer = call()
            except MemoryError:
                failed += 1
                continue
            finally:
                testcapi.remove_mem_hooks()
            assert answer == expected
        assert failed > 0
