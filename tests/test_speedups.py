"""The tokeniser's hot loop in C (``git_hydrate._speedups``) against its Python twin.

``hydrate/terms.py`` counts a blob's words in C when the extension was built at
install time and in Python otherwise; both must give the same dicts, in the same
order, for any bytes (tests/test_terms.py holds both to the specification of a
blob's facts). CI's install builds the extension and checks that it did.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.hydrate import terms
from tests.conftest import examples

speedups = pytest.importorskip("git_hydrate._speedups", reason="built without a C compiler")

TOKEN_TEXTS = [
    "HTTPServer",
    "parseURL2Json",
    "MAX_NEGATIVE_CACHE_ENTRIES",
    "simplifies",
    "__init__",
    "v1_2",
    "0x1F",
    "agreed",
    "IOError",
    "XMLHttpRequests",
    "a__b_c",
]
TOKENS = [b"get_metavarName", b"HTTPServer", b"__init__", b"_", b"a1", b"9", b"x" * 300]
blobs = st.lists(
    st.one_of(
        st.binary(max_size=10),
        st.sampled_from(TOKENS),
        st.sampled_from([b" ", b"\n", b".(", "é".encode()]),
    ),
    max_size=80,
).map(b"".join)


@settings(max_examples=examples(300))
@given(blobs)
def test_raw_counts_are_pythons_in_the_same_order(data: bytes) -> None:
    compiled = speedups.raw_counts(data)
    assert list(compiled.items()) == list(terms._raw_counts(data).items())
    expected = Counter(raw.decode() for raw in re.findall(rb"[A-Za-z0-9_]+", data))
    assert list(compiled.items()) == list(expected.items())
    assert all(type(key) is str and key.isascii() for key in compiled)


@settings(max_examples=examples(300))
@given(blobs)
def test_word_counts_are_pythons(data: bytes) -> None:
    splits = terms._Splits()
    compiled = speedups.word_counts(data, splits)
    assert compiled == terms._word_counts(data, terms._Splits())
    assert sorted(splits) == sorted(terms._raw_counts(data))  # each token split once


@settings(max_examples=examples(500))
@given(st.text(alphabet="aAbIsSgGdDeE_019zZy", max_size=14) | st.sampled_from(TOKEN_TEXTS))
def test_split_words_are_pythons(raw: str) -> None:
    assert speedups.split_words(raw, terms._STOP) == terms._words(raw)


def test_split_words_of_every_token_of_this_package() -> None:
    """Every raw token of git-hydrate's own sources splits as in Python."""
    tokens: set[str] = set()
    for source in Path(terms.__file__).parent.parent.rglob("*.py"):
        tokens.update(terms._raw_counts(source.read_bytes()))
    assert len(tokens) > 5_000
    assert [speedups.split_words(raw, terms._STOP) for raw in sorted(tokens)] == [
        terms._words(raw) for raw in sorted(tokens)
    ]


def test_split_words_refuses_what_is_no_raw_token() -> None:
    with pytest.raises(ValueError, match="ASCII"):
        speedups.split_words("naïve", terms._STOP)
    with pytest.raises(TypeError):
        speedups.split_words(b"bytes", terms._STOP)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        speedups.split_words("word", ["stop"])  # type: ignore[arg-type]
    assert speedups.split_words("big_thing", frozenset({"thing"})) == ("big_th", "big")


@pytest.mark.parametrize("text", ["a-b-c", "Foo.Bar", "abc def", "x\x00yyy", "abc$", "a-", "-"])
def test_split_words_refuses_ascii_that_is_no_raw_token(text: str) -> None:
    """A byte outside ``[A-Za-z0-9_]`` is refused, as a non-ASCII one is: C's camel
    parts skipped it where Python's words end at it (``Foo.Bar`` gave ``foo.bar``,
    ``foo``, ``bar`` against Python's ``foo``, ``bar``), a wrong answer in silence."""
    with pytest.raises(ValueError, match="raw token"):
        speedups.split_words(text, terms._STOP)


def test_many_distinct_tokens_grow_the_table() -> None:
    """100,000 distinct tokens (the table starts at 1,024 slots), each twice."""
    names = [f"name{number}" for number in range(100_000)]
    data = " ".join(names + names[::-1]).encode()
    counts = speedups.raw_counts(data)
    assert list(counts) == names and set(counts.values()) == {2}
    words = speedups.word_counts(data, {name: (name, "shared") for name in names})
    assert words == {**dict.fromkeys(names, 2), "shared": 200_000}


#: Run with PYTHONHASHSEED=0: 400 tokens whose hashes share their low 10 bits (the
#: table's while it holds them), each twice, among ordinary ones.
_SHARED_LOW_BITS = """
from collections import Counter
from git_hydrate import _speedups
from git_hydrate.hydrate import terms
shared = [token for token in (b"t%x" % n for n in range(10**6)) if hash(token) & 1023 == 0]
data = b" ".join(shared[:400] * 2 + [b"plain%d" % n for n in range(300)])
assert _speedups.raw_counts(data) == Counter(data.decode().split())
assert _speedups.word_counts(data, terms._Splits()) == terms._word_counts(data, terms._Splits())
"""


def test_tokens_whose_hashes_share_low_bits_are_counted_apart() -> None:
    """With a known hash seed, tokens an attacker picks for a linear probe (their
    hashes alike in the bits the table looks at first) are each counted on their
    own: the table probes as a dict does, with every bit of the hash
    (``benchmarks/bench_speedups_flood.py`` times what linear probing made of them)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run([sys.executable, "-c", _SHARED_LOW_BITS], env=env, check=True)


def test_any_buffer_is_read_and_nothing_else() -> None:
    assert speedups.raw_counts(bytearray(b"a b a")) == {"a": 2, "b": 1}
    assert speedups.raw_counts(memoryview(b"x-y")) == {"x": 1, "y": 1}
    assert speedups.raw_counts(b"") == {} and speedups.word_counts(b"...", {}) == {}
    with pytest.raises(TypeError):
        speedups.raw_counts("text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        speedups.word_counts(b"a")  # type: ignore[call-arg]


def test_a_mapping_that_fails_fails_the_call() -> None:
    """A token the mapping lacks raises its ``KeyError``; a value that is not a
    tuple of words is refused: an exception, never a wrong count."""
    with pytest.raises(KeyError, match="missing"):
        speedups.word_counts(b"known missing", {"known": ("known",)})
    with pytest.raises(TypeError, match="tuple"):
        speedups.word_counts(b"token", {"token": ["token"]})
    with pytest.raises(TypeError, match="unhashable"):
        speedups.word_counts(b"token", {"token": (["word"],)})
    counts = speedups.word_counts(b"aa bb", {"aa": ("w",), "bb": ("w",)})
    assert counts == {"w": 2}


def test_nothing_is_kept_between_calls() -> None:
    """Every table, key and count a call makes is freed or returned: memory traced
    over a thousand calls does not grow with them."""
    data = b" ".join(f"token{number} other_{number % 7}".encode() for number in range(2_000))
    splits = terms._Splits()
    speedups.word_counts(data, splits)
    tracemalloc.start()
    try:
        for _ in range(10):
            speedups.word_counts(data, splits)
            speedups.raw_counts(data)
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(1_000):
            speedups.word_counts(data, splits)
            speedups.raw_counts(data)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown
