"""The facts of a blob, against a plain specification of what they are.

:func:`blob_facts` counts raw tokens found in bytes, splits each distinct one once
and finds defined names with anchored patterns, for speed. The specification
below says the same in the most direct way (decode, find every token in the
text, split each occurrence, count, sort), so any shortcut that changes a
single count or name fails here.
"""

from __future__ import annotations

import re
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.hydrate import terms
from git_hydrate.hydrate.terms import MAX_TERMS, BlobFacts, blob_facts, tokenize, words
from tests.conftest import examples

#: The stop words are data, not the mechanism under test: the module's own list.
STOP = terms._STOP
NAME = r"[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_])"
#: ``struct``/``enum`` (``enum class`` one keyword) define unless a pointer or a variable
#: follows the name (C's ``struct stat sb;``, ``struct tm *localtime(``).
USES_A_TYPE = rf"(?![ \t]+{NAME}[ \t]*(?:[*&]|{NAME}[ \t]*[;,=)\[(]))"
ENUM_CLASS = r"[ \t]+(?:class|struct)(?![A-Za-z0-9_])"
KEYWORDS = (
    "def|defp|defmacrop?|defguardp?|defdelegate|class|func|function|fn|fun"
    f"|(?:struct|enum(?:{ENUM_CLASS}|(?!{ENUM_CLASS}))){USES_A_TYPE}"
    "|interface|trait|type|module|protocol"
)
MODIFIERS = (
    r"export|default|pub(?:\([a-z]+\))?|public|private|protected|internal|fileprivate|open|static"
    r"|final|abstract|sealed|data|override|async|suspend|inline|unsafe|const|extern|partial"
    r"|declare|typedef"
)


def spec_stem(word: str) -> str:
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        return word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def spec_words(raw: str) -> list[str]:
    """A token's words: the whole (if it has ``_`` parts), each part, each part's
    camel-case pieces (if more than one); lower-cased, filtered, stemmed."""
    found: list[str] = []
    parts = [p for p in raw.split("_") if p]
    if len(parts) > 1:
        found.append(raw.lower().strip("_"))
    for part in parts:
        for word in re.findall(r"[A-Za-z][A-Za-z0-9]*", part):
            found.append(word.lower())
            pieces = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", word)
            if len(pieces) > 1:
                found.extend(piece.lower() for piece in pieces)
    return [spec_stem(w) for w in found if len(w) >= 3 and w not in STOP and not w.isdigit()]


def spec_facts(data: bytes) -> BlobFacts:
    if b"\0" in data[:8192]:
        return BlobFacts(False, len(data))
    text = data.decode("utf-8", "replace")
    counts: Counter[str] = Counter()
    for raw in re.findall(r"[A-Za-z0-9_]+", text):
        counts.update(spec_words(raw))
    length = sum(counts.values())
    kept = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS]
    definition = re.compile(
        rf"^[ \t]*(?:(?:{MODIFIERS})[ \t]+)*(?:{KEYWORDS})[ \t]+"
        rf"(?:\([^)\n]*\)[ \t]*)?\*?([A-Za-z_][A-Za-z0-9_]*)",
        re.MULTILINE,
    )
    binding = re.compile(  # (a module-level const/let/var, at the line's very start)
        r"^(?:export[ \t]+)?(?:declare[ \t]+)?(?:const|let|var)[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
        r"[ \t]*(?::(?!:)(?:[^=\n]|=>)*)?(?:=(?![=>])|;|$)",
        re.MULTILINE,
    )
    names = sorted(set(definition.findall(text) + binding.findall(text)))[:400]
    return BlobFacts(True, len(data), length, dict(sorted(kept)), names)


PIECES = [
    "get_metavarName",
    "HTTPServer",
    "__init__",
    "_x",
    "x_",
    "a__b",
    "parseURL2Json",
    "v1_2",
    "123",
    "0x1F",
    "completions",
    "parsing",
    "added",
    "agreed",
    "libraries",
    "class",
    "self",
    "def ",
    "class ",
    "    async def ",
    "export function ",
    "pub(crate) fn ",
    "pub struct ",
    "func (",
    "func (s *Server) ",
    ") ",
    "public ",
    "private static final class ",
    "open class ",
    "override fun ",
    "data class ",
    "export default async function ",
    "public function ",
    "protocol ",
    "static ",
    "type *",
    "module\t",
    "functionName",
    "fnord",
    "\t",
    " ",
    "\n",
    "\r\n",
    "\x00",
    "é",
    "naïve_größe",
    "日本語",
    "\u00a0",
    "ǅ",
    "_",
    ":",
    "(",
    "*",
    "struct ",
    "enum class ",
    "typedef ",
    ";",
]

texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=12)), max_size=60).map(
    "".join
)


def same(data: bytes) -> None:
    """``blob_facts`` is the specification's, counting in C (when built) and in Python."""
    expected = spec_facts(data)
    assert blob_facts(data) == expected
    compiled, split = terms.word_counts, terms._ascii_words
    terms.word_counts, terms._ascii_words = terms._word_counts, terms._python_ascii_words
    terms.forget_splits()  # (the words of tokens split in C before)
    try:
        assert blob_facts(data) == expected
    finally:
        terms.word_counts, terms._ascii_words = compiled, split
        terms.forget_splits()


@settings(max_examples=examples(400))
@given(texts)
def test_facts_are_those_of_the_specification(text: str) -> None:
    same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=examples(200))
@given(st.lists(st.one_of(st.binary(max_size=8), st.sampled_from(PIECES).map(str.encode))))
def test_facts_of_any_bytes_are_those_of_the_specification(chunks: list[bytes]) -> None:
    # invalid UTF-8 (lone continuation bytes, cut sequences) next to tokens
    same(b"".join(chunks))


@settings(max_examples=examples(200))
@given(
    st.lists(st.one_of(st.binary(max_size=8), st.sampled_from(PIECES).map(str.encode))),
    st.integers(1, 12),
)
def test_a_long_text_counted_in_pieces_counts_the_same(chunks: list[bytes], piece: int) -> None:
    """A text longer than a piece is tokenised a piece at a time, each cut where no
    token runs across: the same facts, encoded the same (the order of first
    occurrence kept), as the text tokenised whole."""
    data = b"".join(chunks)
    whole = blob_facts(data)
    saved = terms.TOKENISED_AT_ONCE
    terms.TOKENISED_AT_ONCE = piece  # type: ignore[misc]
    try:
        pieces, order = blob_facts(data), list(terms._raw_counts(data))
    finally:
        terms.TOKENISED_AT_ONCE = saved  # type: ignore[misc]
    assert pieces == whole and pieces == spec_facts(data)
    assert order == [raw.decode("ascii") for raw in Counter(re.findall(rb"[A-Za-z0-9_]+", data))]


def test_more_words_than_kept_keeps_the_most_frequent() -> None:
    words = [
        f"word{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{i // 676}" for i in range(MAX_TERMS + 50)
    ]
    text = " ".join(words) + " " + " ".join(words[:100]) + "\nclass Kept:\n"
    same(text.encode())
    facts = blob_facts(text.encode())
    assert len(facts.terms) == MAX_TERMS and facts.terms[words[0]] == 2


def test_a_nul_late_in_a_text_is_still_counted_and_early_one_is_binary() -> None:
    late = b"class Late:\n" + b"x = 1\n" * 2000 + b"\0 tail_words"
    same(late)
    assert blob_facts(late).symbols == ["Late"]
    assert blob_facts(b"\0class Early:\n") == BlobFacts(False, 14)


def test_query_words_match_file_words() -> None:
    facts = blob_facts(b"def shell_complete(ctx): return ShellCompletions\n")
    assert set(tokenize("shell completion")) <= set(facts.terms)


@settings(max_examples=examples(300))
@given(st.one_of(st.sampled_from(PIECES), st.text(max_size=16)))
def test_words_of_any_string_are_those_of_the_specification(raw: str) -> None:
    assert list(words(raw)) == spec_words(raw)
    ascii_raw = "".join(re.findall(r"[A-Za-z0-9_]+", raw))  # (a blob's raw tokens are)
    assert list(terms._ascii_words(ascii_raw, terms._STOP)) == spec_words(ascii_raw)


STRUCTS = b"""struct client *c;
    struct client *c;
struct stat sb;
static struct timeval tv_now(void) {
struct client {
typedef struct queue {
enum class Color {
enum mode m = MODE_A;
struct session;
const struct options_table_entry *oe = NULL;
"""


def test_a_struct_used_as_a_type_defines_no_name() -> None:
    """tmux's ``struct client *c;`` made ``client`` a name 72 of its 153 ``.c`` files
    defined (explorer22's finding): ``struct``/``enum`` followed by a pointer or a
    variable use a type; ``struct client {``, ``typedef struct queue {`` and a
    forward declaration name it."""
    assert blob_facts(STRUCTS).symbols == ["Color", "client", "queue", "session"]
    same(STRUCTS)
