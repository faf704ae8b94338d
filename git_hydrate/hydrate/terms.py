"""The words of a task and of a file, as ranking compares them. Pure: no I/O.

Identifiers are split on case and ``_`` (``get_metavarName`` gives
``get_metavarname``, ``get``, ``metavarname``, ``metavar``, ``name``), lower-cased,
lightly stemmed (``completions`` and ``completion`` are one word), and words too
common in code and commit messages to say anything are dropped. A file's
:class:`BlobFacts` hold the counts of its words (code, docstrings, comments)
and the names it defines (``def``, ``class``, ``func``...): computed once per
blob and kept by :mod:`.facts`.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Final

import msgspec

from ..stemming import stem

__all__ = [
    "MAX_TERMS",
    "BlobFacts",
    "blob_facts",
    "compiled_tokeniser",
    "defines_names",
    "forget_splits",
    "path_words",
    "paths_words",
    "symbol_words",
    "tokenize",
]

#: Distinct words kept per file (the most frequent; a 256 KiB file rarely has more).
MAX_TERMS: Final = 4000
#: Names a file defines, kept at most.
_MAX_SYMBOLS: Final = 400

#: Words too common in commit messages, paths and code to say anything.
_STOP: Final = frozenset(
    """
    a an and are as at be been but by can could did do does for from has have if in
    into is it its not of on or so such than that the their them then there these this
    those to was were when where which while who will with would you your we our use
    used uses using add added adds fix fixed fixes fixing make makes made instead also
    now only more less should don can new old via like just all any some one two get
    set sets none true false self file files code change changes changed update updated
    updates updating remove removed removes test tests src lib main docs doc rst txt co
    authored signed off merge pull request branch http https www com github issue
    issues pr return def class import else elif try except raise pass yield lambda
    assert cls args kwargs str int bool dict list tuple def var let const function
    null undefined none
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_RAW: Final = re.compile(r"[A-Za-z0-9_]+")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: A line that defines a name (``def``, ``class``, ``func``...), from its start, after any
#: modifiers (``public final class``, ``override fun``, ``typedef struct``) and skipping a
#: Go method's receiver (``func (s *Server) ServeHTTP``). ``struct`` and ``enum`` (and
#: C++'s and Kotlin's ``enum class``) define their name unless a pointer or a variable
#: follows it: C's ``struct client *c;``, ``struct stat sb;`` and ``struct timeval
#: tv_now(void)`` use a type, ``struct client {`` defines it.
#: The blanks are possessive (``*+``, ``++``): what follows each is a letter or
#: ``*``, so giving a blank back can never match, and trying it at every width
#: was most of the cost (5x). A line whose first letter cannot start a match
#: fails at the lookahead. ``_DEFINES`` is this at the first line,
#: ``_DEFINES_AFTER`` at every other (after its ``\n``, which the regex engine
#: finds without trying each byte, unlike a multi-line ``^``).
_NAME: Final = rb"[A-Za-z_][A-Za-z0-9_]*+"
_DEFINITION: Final = (
    rb"[ \t]*+(?=[acdefimopstu])"
    rb"(?:(?:export|default|pub(?:\([a-z]+\))?|public|private|protected|internal|fileprivate"
    rb"|open|static|final|abstract|sealed|data|override|async|suspend|inline|unsafe|const"
    rb"|extern|partial|declare|typedef)[ \t]++)*+"
    rb"(?:def|defp|defmacrop?|defguardp?|defdelegate|class|func|function|fn|fun"
    rb"|(?:struct|enum(?:[ \t]++(?:class|struct)(?![A-Za-z0-9_]))?+)"
    rb"(?![ \t]++" + _NAME + rb"[ \t]*+(?:[*&]|" + _NAME + rb"[ \t]*+[;,=)\[(]))"
    rb"|interface|trait|type|module|protocol)"
    rb"[ \t]++"
    rb"(?:\([^)\n]*\)[ \t]*+)?\*?(" + _NAME + rb")"
)
_DEFINES: Final = re.compile(_DEFINITION)
#: A module-level binding (JavaScript's and TypeScript's ``export const parse = (``,
#: ``let cache =``, ``declare const __DEV__: boolean``; Go's and Rust's ``const``):
#: at a line's very start, so that a function's own ``const`` is none; a type
#: between the name and its ``=`` may hold ``=>``, and ``==`` is no binding.
_BINDING: Final = (
    rb"(?:export[ \t]++)?(?:declare[ \t]++)?(?:const|let|var)[ \t]++"
    rb"([A-Za-z_][A-Za-z0-9_]*)[ \t]*+(?::(?!:)(?:[^=\n]|=>)*)?(?:=(?![=>])|;|(?=\n)|$)"
)
_BINDS: Final = re.compile(_BINDING)
#: Either, at every line but the first, in one pass: no line holds both (a binding's
#: name is followed by ``:``, ``=``, ``;`` or its end; a definition's keyword, even
#: one that is a ``const``'s name, by a name, ``(`` or ``*``), and neither match
#: takes a line's ``\n``, so each line is tried as by two passes. A binding starts
#: with one of ``cdelv`` (the lookahead: a line that does not fails at once).
_DEFINED_AFTER: Final = re.compile(rb"\n(?:" + _DEFINITION + rb"|(?=[cdelv])" + _BINDING + rb")")
#: Each byte of a raw token (``[A-Za-z0-9_]``) as it is, any other byte a space:
#: ``data.translate(_TOKEN_BYTES).split()`` are the raw tokens of the text, as
#: ``_RAW`` finds them in ``data.decode("utf-8", "replace")`` (a UTF-8 decoder
#: never takes an ASCII byte into another character), in a tenth of the time.
_TOKEN_BYTES: Final = bytes(
    b if chr(b).isascii() and (chr(b).isalnum() or chr(b) == "_") else 0x20 for b in range(256)
)
#: The words of raw tokens met in blobs, cleared when this full: a project's
#: common words come back at once, names met in one file only go.
_SPLIT_LIMIT: Final = 16384


def _words(raw: str) -> tuple[str, ...]:
    """``get_metavarName`` -> the whole word and its snake and camel parts, lower-cased
    and stemmed; words under three letters, numbers and stop words dropped."""
    if len(raw) < 3:  # (every word is a part of it)
        return ()
    if raw.isascii():  # (a blob's, a path's or a ticket's raw tokens all are)
        if raw.isalpha():
            if raw.islower():  # most: one part, no split
                return () if raw in _STOP else (stem(raw),)
            return _kept(_letters(raw, []))
        if raw.isdigit():
            return ()
    pieces = [p for p in raw.split("_") if p]
    out = [raw.lower().strip("_")] if len(pieces) > 1 else []
    for piece in pieces:
        if piece.isascii() and piece.isalpha():
            if piece.islower():
                out.append(piece)
            else:
                _letters(piece, out)
            continue
        for word in _WORD.findall(piece):
            parts = _CAMEL.findall(word)
            out.append(word.lower())
            if len(parts) > 1:
                out += map(str.lower, parts)
    return _kept(out)


def _letters(word: str, out: list[str]) -> list[str]:
    """``out`` and the words of ``word``, ASCII letters not all lower case: itself,
    lower-cased, and its camel parts if it has more than one (``HTTPServer``:
    ``httpserver``, ``http``, ``server``; ``Parse``, ``URL``: one part)."""
    out.append(word.lower())
    if not (word.isupper() or word.istitle()):  # (those are one camel part)
        parts = _CAMEL.findall(word)
        if len(parts) > 1:
            out += map(str.lower, parts)
    return out


def _kept(out: list[str]) -> tuple[str, ...]:
    """The words of ``out`` that say something (three letters or more, no stop word,
    not a number), stemmed."""
    return tuple([stem(w) for w in out if len(w) >= 3 and w not in _STOP and not w.isdigit()])


#: The words of one raw token (cached: a query's words recur in every file).
words: Final = lru_cache(maxsize=131072)(_words)


#: A blob's word counts, given its raw tokens' words (``_Splits``).
WordCounts = Callable[[bytes, Mapping[str, tuple[str, ...]]], dict[str, int]]
#: The words of an ASCII raw token, given the stop words.
AsciiWords = Callable[[str, frozenset[str]], tuple[str, ...]]


def _compiled() -> tuple[WordCounts, AsciiWords] | None:
    """The tokeniser's hot loops in C (``git_hydrate/_speedups.c``), if a compiler
    built them at install time (CI checks that it did); else None."""
    try:
        from .._speedups import split_words, word_counts
    except ImportError:  # (the same answers in Python, slower)
        return None
    return word_counts, split_words


_COMPILED: Final = _compiled()


def compiled_tokeniser() -> bool:
    """Whether the tokeniser's hot loops run in C (:func:`_compiled`)."""
    return _COMPILED is not None


def _python_ascii_words(raw: str, stop: frozenset[str]) -> tuple[str, ...]:
    """:func:`_words` of an ASCII raw token (``stop`` is :data:`_STOP`)."""
    return _words(raw)


#: :func:`_words` of an ASCII raw token (a blob's, a file name's): in C when built,
#: given :data:`_STOP`; the same tuple either way.
_ascii_words: AsciiWords = _COMPILED[1] if _COMPILED else _python_ascii_words


def tokenize(text: str) -> list[str]:
    """The words of ``text`` that ranking compares."""
    return [word for raw in _RAW.findall(text) for word in words(raw)]


def path_words(path: str) -> list[str]:
    """The words of a path (``src/click/shell_completion.py``: ``click``,
    ``shell_completion``, ``shell``, ``completion``)."""
    base = posixpath.splitext(path)[0]
    return tokenize(base.replace("/", " ").replace("-", " ").replace(".", " "))


def paths_words(paths: Iterable[str]) -> Iterator[list[str]]:
    """:func:`path_words` of each of ``paths``, in order: a folder's words found once,
    a file name's raw tokens split without :func:`words`'s cache (a tree's file
    names, most met once, would stay in it)."""
    folders: dict[str, list[str]] = {}
    names: dict[str, tuple[str, ...]] = {}
    for path in paths:
        head, slash, name = path.rpartition("/")
        own = folders.get(head) if slash else []
        if own is None:
            own = folders[head] = tokenize(head)
        own = own.copy()
        for raw in _RAW.findall(posixpath.splitext(name)[0]):
            split = names.get(raw)
            if split is None:
                if len(names) >= _SPLIT_LIMIT:
                    names.clear()
                split = names[raw] = _ascii_words(raw, _STOP)
            own += split
        yield own


class BlobFacts(msgspec.Struct, array_like=True, frozen=True):
    """What ranking knows of one blob: whether it is text, its size, how many words
    it has, each word's count, and the names it defines (as written)."""

    text: bool
    size: int
    length: int = 0
    terms: dict[str, int] = {}
    symbols: list[str] = []


class _Splits(dict[str, tuple[str, ...]]):
    """The words of raw tokens met in blobs: one not met is split when it is
    asked for (``_split[raw]``, a lookup in C for the others), and the whole
    cleared first if it holds :data:`_SPLIT_LIMIT` already."""

    def __missing__(self, raw: str) -> tuple[str, ...]:
        if len(self) >= _SPLIT_LIMIT:
            self.clear()
        found = self[raw] = _ascii_words(raw, _STOP)
        return found


_split: Final = _Splits()


def symbol_words(name: str) -> tuple[str, ...]:
    """``words(name)`` of a name a blob defines, through the blobs' split cache: a
    defined name is one of its blob's raw tokens, split just before (and kept out
    of :func:`words`'s cache, where the names of a whole tree would stay)."""
    return _split[name] if name.isascii() else words(name)


def forget_splits() -> None:
    """Drop the split words of the raw tokens met in blobs: a first task's index
    is built, and ranking does not ask them (at 30,000 files they were 5 MiB
    held through it); the next blobs tokenised fill the cache again."""
    _split.clear()


#: Documents, and the texts a program printed (a test's golden or snapshot file, a
#: manual page): the names their examples define (a README's fenced ``def terminate``,
#: an error message's ``enum reference ".X" must resolve``) are none of theirs.
_DOCUMENTS: Final = (
    *(".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".txt", ".rdoc", ".org"),
    *(".pod", ".rd", ".rmd", ".mld", ".tex", ".golden", ".snap", ".out", ".expected"),
    *(".log", *(f".{section}" for section in range(1, 10))),
)


def defines_names(path: str) -> bool:
    """Whether the names ``path``'s contents define are its own: not a document's
    (``README.md``, ``docs/guide.rst``), whose definitions are examples."""
    return not path.lower().endswith(_DOCUMENTS)


def defined_names(data: bytes) -> list[str]:
    """The names ``data`` defines (``def``, ``class``, ``func``...), as written, in
    the order they are defined."""
    found = [at.group(1) for at in (_DEFINES.match(data), _BINDS.match(data)) if at is not None]
    found += [defined or bound for defined, bound in _DEFINED_AFTER.findall(data)]
    return [name.decode("ascii") for name in found]


#: Bytes of a text tokenised at a time: a list of a 200 MB text's raw tokens at once
#: was 2.4 GB (a Python object each); a piece's, a few tens of megabytes.
TOKENISED_AT_ONCE: Final = 8 << 20
#: A byte that is not part of a raw token (a piece ends just before one).
_BETWEEN: Final = re.compile(rb"[^A-Za-z0-9_]")


def _raw_counts(data: bytes) -> Counter[str]:
    """How many times each raw token occurs in ``data``, in order of first
    occurrence; a long text counted a piece at a time, each cut where no token
    runs across (the same counts, in the same order).

    Counted as ``str`` (the translated bytes are ASCII): a dict of ``str`` keys
    only compares them without the generic comparison ``bytes`` keys take."""
    if len(data) <= TOKENISED_AT_ONCE:
        return Counter(data.translate(_TOKEN_BYTES).decode("ascii").split())
    counts: Counter[str] = Counter()
    start = 0
    while start < len(data):
        cut = _BETWEEN.search(data, start + TOKENISED_AT_ONCE)
        end = cut.start() if cut is not None else len(data)
        counts.update(data[start:end].translate(_TOKEN_BYTES).decode("ascii").split())
        start = end
    return counts


def _word_counts(data: bytes, splits: Mapping[str, tuple[str, ...]]) -> dict[str, int]:
    """How many times each word occurs in ``data``: each distinct raw token's words,
    ``splits[raw]``, counted as often as the token occurs (in Python: what
    ``git_hydrate._speedups.word_counts`` does in C when it was built)."""
    raw = _raw_counts(data)
    counts: dict[str, int] = {}
    count = counts.get
    for split, times in zip(map(splits.__getitem__, raw), raw.values(), strict=True):
        for word in split:
            counts[word] = count(word, 0) + times
    return counts


#: A blob's word counts: in C if a compiler built it at install time (CI checks that it
#: did), else :func:`_word_counts`; the same dict either way.
word_counts: WordCounts = _COMPILED[0] if _COMPILED else _word_counts


def blob_facts(data: bytes) -> BlobFacts:
    """The facts of one blob's content (binary: no words).

    The text's raw tokens are found in its bytes and counted, and each distinct
    one is split into words once (the split cache, looked up in C): the words of
    ``data.decode("utf-8", "replace")`` by
    :func:`tokenize`, counted, the :data:`MAX_TERMS` most frequent kept.
    """
    if b"\0" in data[:8192]:
        return BlobFacts(False, len(data))
    counts = word_counts(data, _split)
    length = sum(counts.values())
    if len(counts) > MAX_TERMS:
        counts = dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_TERMS])
    symbols = sorted(set(defined_names(data)))[:_MAX_SYMBOLS]
    return BlobFacts(True, len(data), length, dict(sorted(counts.items())), symbols)
