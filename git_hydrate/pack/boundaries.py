"""The one rule that keeps untrusted text from reading as the prompt's structure.

The seed's prompt is Markdown: headings, then the untrusted block between its
banner and footer, then the ``## Output contract`` heading. Text that comes
from a repository or a worker (bodies, objectives, checkpoint summaries) is
placed inside that structure, and must not be able to add to it. Rather than
a list of look-alikes, one rule derived from the CommonMark grammar says which
lines could:

A line is **structural** when, read as a reader sees it (:func:`guard_form`:
ANSI/OSC escape sequences, every other invisible character and combining marks
dropped, NFKC, dashes and letters mapped to ASCII — a Latin letter to the one it
is a form of by its Unicode name, and what Unicode's confusables data pairs with
a boundary's letter to that letter (:mod:`.confusables`) — case-folded), it

1. starts a CommonMark leaf block other than a paragraph or indented code,
   after any run of container markers (``>``, ``-``/``+``/``*`` and ``1.``/``1)``
   list markers) and any indentation: an ATX heading (``#`` followed by a space
   or nothing), a setext underline or thematic break (a line of only ``=``,
   ``-``, ``*``, ``_`` and spaces), a code fence (three backticks or tildes),
   or an HTML block (``<`` then a letter, ``/``, ``!`` or ``?``); or
2. spells one of the prompt's own boundaries once everything but its letters is
   set aside: its letters begin with the banner's (``begin untrusted
   context``), the footer's (``end untrusted context``) or the contract
   heading's (``output contract``) — whatever wraps them (``**``, ``>``,
   ``===``, spacing, a list marker); read as they are, or with ``0`` as ``o``
   and ``1`` and ``l`` as ``i`` (UTS #39's digit look-alikes).

Indentation is ignored (inside a list item a heading can sit at any depth), so
the rule marks more than CommonMark strictly needs and never less. A line that
holds an escape sequence is read twice, with the sequence dropped (as a
terminal shows it) and with only its control characters dropped (as a raw
reader sees it); either reading can make it structural.

A structural line gets :data:`NEUTRALISE_MARK` (a backslash) in front of it:
a line that starts with a backslash starts no CommonMark block, so it is
paragraph text wherever it stands, and it no longer reads as the real banner,
footer or heading. No block (fence, HTML) can open inside the untrusted text,
so none can swallow the real footer or the contract after it. The text itself
is never changed otherwise. Pure: no I/O.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from typing import Final

from .confusables import CONFUSABLE_LETTERS

__all__ = [
    "NEUTRALISE_MARK",
    "forget_ahead",
    "guard_form",
    "is_guarded",
    "mark_ahead",
    "marks",
    "neutralise",
    "reads_as_structure",
]

#: The mark put in front of a structural line found inside text.
NEUTRALISE_MARK: Final = "\\"

# -- reading a line as a reader sees it ------------------------------------------

#: Dashes and signs NFKC leaves alone, mapped to "-", and the sharp sign to "#".
_EXTRA_DASHES: Final = "\u2212\u2043\u2796\u23af\u2500\u2501\u2574\u2576\u2578\u257a\u30fc\uff70"
#: Look-alikes of the boundaries' letters that Unicode's confusables data (UTS #39,
#: :mod:`.confusables`) does not pair with them but a reader takes for them.
_MORE_LOOKALIKES: Final = {
    "b": "\u044c",
    "t": "\u0442\u03c4",
    "x": "\u03c7",
}
#: A Latin letter's name: the letter it is a form of (with a mark, a stroke, a small
#: capital, a modifier, turned or open), last before any "WITH ...".
_LATIN_NAME: Final = re.compile(r"(?:.* )?LATIN .*LETTER (?:.* )?([A-Z])(?: WITH .*)?")
#: The digits Unicode deems confusable with letters (UTS #39: "0" with "O", "1" with
#: "l"), and "l", read as letters of the boundaries' words (which hold no "l"), as in
#: "C0NTEXT" or "BEGlN": for part 2 only.
_AS_LETTERS: Final = str.maketrans("01l", "oii")
#: Default-ignorable code points outside category Cf (invisible when rendered).
_IGNORABLE_RANGES: Final = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)
#: The line breaks Python's ``splitlines`` knows (a reader keeps them).
_BREAKS: Final = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


class _Lookalikes(dict[int, "str | None"]):
    """A ``str.translate`` table filled on demand: what each character reads as.

    Invisible characters (format controls such as zero-width and bidi
    characters, C0/C1 controls other than line breaks and tab, other default
    ignorables) and combining marks read as nothing; dashes as ``-``; a Latin
    letter as the ASCII letter it is a form of (by its Unicode name: ``É``,
    ``ᴇ``, ``ɛ``); a character Unicode deems confusable with a boundary's letter
    as that letter; everything else as itself.
    """

    def __init__(self) -> None:
        super().__init__({ord("\u266f"): "#"})
        for ch in _EXTRA_DASHES:
            self[ord(ch)] = "-"
        for table in (CONFUSABLE_LETTERS, _MORE_LOOKALIKES):
            for latin, alikes in table.items():
                for ch in alikes:
                    self[ord(ch)] = latin

    def __missing__(self, code: int) -> str | None:
        ch = chr(code)
        category = unicodedata.category(ch)
        value: str | None = ch
        if category == "Cf" or any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES):
            value = None
        elif category == "Cc":
            value = ch if ch in "\t" + _BREAKS else None
        elif category == "Pd":
            value = "-"
        elif category in ("Mn", "Me"):  # (a mark over a letter: the letter is read)
            value = None
        elif category[0] == "L" and code > 0x7F:
            named = _LATIN_NAME.fullmatch(unicodedata.name(ch, ""))
            value = named.group(1).lower() if named else ch
        self[code] = value
        return value


_LOOKALIKES: Final = _Lookalikes()

#: Terminal escape sequences (ECMA-48): CSI (``ESC [`` or U+009B, parameters,
#: a final byte), OSC, DCS, SOS, PM and APC strings (up to BEL or the string
#: terminator, never past a line break), and two-character escapes.
_ESCAPES: Final = re.compile(
    "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"
    f"|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c{_BREAKS}]*(?:\x07|\x1b\\\\|\x9c)"
    "|\x1b[ -/]*[0-~]"
)
#: Where an escape sequence may start, and its three kinds apart (see
#: :func:`_without_escapes`): a CSI, a string's opener and its end, a short one.
_ESCAPE_AT: Final = re.compile("[\x1b\x9b\x90\x98\x9d\x9e\x9f]")
_CSI: Final = re.compile("(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]")
_STRING_OPENER: Final = re.compile("\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f]")
_STRING_STOP: Final = re.compile(f"[\x07\x1b\x9c{_BREAKS}]")
_SHORT_ESCAPE: Final = re.compile("\x1b[ -/]*[0-~]")
_C1_OPENERS: Final = "\x90\x98\x9d\x9e\x9f"


def _without_escapes(text: str) -> str:
    """``_ESCAPES.sub("", text)`` in one pass. The regular expression alone reads a
    line of thousands of C1 string openers that none ends (``\\x9d`` after
    ``\\x9d``) to its end from each of them: quadratic time. Here each opener's
    string ends where the first character a string cannot hold stands, and an
    opener before a stop already found not to end a string (``hopeless``) fails
    without reading on: the same matches, each character read a bounded number
    of times."""
    pieces: list[str] = []
    kept = at = 0
    hopeless = -1
    while (found := _ESCAPE_AT.search(text, at)) is not None:
        start = found.start()
        end = _string_end(text, start, hopeless) if start >= hopeless else -1
        if end < -1:  # (no string here, and none before -end - 2 can end)
            hopeless, end = -end - 2, -1
        csi = _CSI.match(text, start)
        if csi is not None:
            end = csi.end()
        elif end < 0:
            short = _SHORT_ESCAPE.match(text, start)
            end = -1 if short is None else short.end()
        if end < 0:
            at = start + 1
            continue
        pieces.append(text[kept:start])
        kept = at = end
    pieces.append(text[kept:])
    return "".join(pieces)


def _string_end(text: str, start: int, hopeless: int) -> int:
    """Where the string whose opener is at ``start`` ends (after its terminator);
    ``-1`` when none opens there; ``-stop - 2`` when one opens but the first
    character it cannot hold, at ``stop``, does not end it."""
    opener = _STRING_OPENER.match(text, start)
    if opener is None:
        return -1
    found = _STRING_STOP.search(text, opener.end())
    stop = len(text) if found is None else found.start()
    if text.startswith(("\x07", "\x9c"), stop):
        return stop + 1
    if text.startswith("\x1b\\", stop):
        return stop + 2
    return -stop - 2


def _mapped(text: str) -> str:
    """``text.translate(_LOOKALIKES)``, quicker on long texts: only the characters
    present beyond printable ASCII are looked up, and a few are replaced one
    ``str.replace`` each (a memchr-speed pass)."""
    rest = text.encode("utf-8", "surrogatepass").translate(None, _PRINTABLE_ASCII)
    present = set(rest.decode("utf-8", "surrogatepass"))
    changes = {}
    for ch in present:
        value = _LOOKALIKES[ord(ch)]
        if value != ch:
            changes[ch] = value or ""
    if len(changes) > 8:
        table = {ord(ch): changes.get(ch, ch) or None for ch in present}
        return text.translate(table | _ASCII_IDENTITY)
    for old, new in changes.items():
        text = text.replace(old, new)
    return text


_PRINTABLE_ASCII: Final = bytes(range(0x20, 0x7F))
#: Printable ASCII, each to itself: a translation table holding them never misses.
_ASCII_IDENTITY: Final[dict[int, str | None]] = {code: chr(code) for code in range(0x20, 0x7F)}


def _reader_text(text: str, *, escapes: bool = True) -> str:
    """``text`` as a reader sees it, line breaks kept (``escapes``: escape
    sequences dropped whole, as a terminal shows them; otherwise only their
    control characters, as a raw reader sees them)."""
    if escapes and _has_escape(text):
        # (C1 string openers are rare, and only they cost the regex quadratic time)
        c1 = any(opener in text for opener in _C1_OPENERS)
        text = _without_escapes(text) if c1 else _ESCAPES.sub("", text)
    if text.isascii():
        lower = text.lower()
        return lower if lower.isprintable() else lower.translate(_ASCII_INVISIBLE)
    # Twice: NFKC can produce a dash or a letter the table maps, and the table
    # can leave a sequence that NFKC composes.
    mapped = _mapped(unicodedata.normalize("NFKC", _mapped(text)))
    return _mapped(unicodedata.normalize("NFKC", mapped.casefold()))


#: ASCII controls a reader cannot see (line breaks and tab excepted), deleted.
_ASCII_INVISIBLE: Final[dict[int, None]] = {
    code: None for code in [*range(0x00, 0x20), 0x7F] if chr(code) not in "\t" + _BREAKS
}


def guard_form(line: str) -> str:
    """A line as a reader sees it: escape sequences and invisible characters
    dropped, NFKC (full-width and compatibility forms), look-alike dashes and
    letters mapped to ASCII, case-folded, whitespace runs made one space and
    trimmed."""
    return " ".join(_reader_text(line).split())


# -- the rule --------------------------------------------------------------------

#: One CommonMark container marker (block quote, bullet or ordered list item),
#: after any indentation.
_CONTAINER: Final = re.compile(r"\s*(?:>|[-+*](?=\s|$)|[0-9]{1,9}[.)](?=\s|$))")
#: The start of a CommonMark leaf block that is neither a paragraph nor
#: indented code, after any indentation; but for a setext underline or thematic
#: break (a line of only ``=``, ``-``, ``*``, ``_`` and spaces), which
#: :func:`opens_block` finds by :data:`_RULE_RUN`.
_LEAF: Final = re.compile(r"\s*(?:#+(?:\s|$)|```|~~~|<[a-z/!?])")
#: A run of the characters an underline or a break is made of, and white space.
_RULE_RUN: Final = re.compile(r"[-=*_\s]*")
_SPACES: Final = re.compile(r"\s*")
_NOT_A_LETTER: Final = re.compile(r"[^a-z]+")
#: The letters the prompt's own boundaries begin with.
_BOUNDARY_LETTERS: Final = ("beginuntrustedcontext", "enduntrustedcontext", "outputcontract")
#: What a structural line's reader form starts with, once indentation is set
#: aside (a leaf or container marker; digits for ordered lists).
_OPENERS: Final = frozenset("#=-*_`~<>+0123456789")


def reads_as_structure(form: str) -> bool:
    """Whether a line, given as a reader sees it (lower-case, no line break), is
    structural under the rule in this module's docstring."""
    return opens_block(form) or spells_boundary(form)


def opens_block(form: str) -> bool:
    """Part 1 of the rule: a line (as a reader sees it) that starts a CommonMark
    block other than a paragraph or indented code, inside any containers."""
    pos = 0
    # Where the line's last run of underline characters and spaces begins, found
    # once from the end: read from each container marker on, a line of thousands
    # ("- - - … x") cost a pass over the rest of it each, quadratic time.
    rule_from = len(form) - _run_end(_RULE_RUN, form[::-1], 0)
    while _LEAF.match(form, pos) is None:
        first = _run_end(_SPACES, form, pos)
        if first < len(form) and form[first] in "-=*_" and first >= rule_from:
            return True
        container = _CONTAINER.match(form, pos)
        if container is None:
            return False
        pos = container.end()
    return True


def _run_end(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run that ``run`` (a pattern that also matches nothing) finds at
    ``pos`` ends."""
    found = run.match(text, pos)
    return pos if found is None else found.end()


def _readings(form: str) -> tuple[str, ...]:
    """``form`` as it is, and with digits that read as letters read so (when any)."""
    alike = form.translate(_AS_LETTERS)
    return (form,) if alike == form else (form, alike)


def spells_boundary(form: str) -> bool:
    """Part 2 of the rule: a line whose letters begin with a boundary's, read as
    they are or with the digits that read as letters counted as them (not only:
    ``1.`` before a boundary is a list item's marker)."""
    return any(
        _NOT_A_LETTER.sub("", text).startswith(_BOUNDARY_LETTERS) for text in _readings(form)
    )


def is_guarded(line: str) -> bool:
    """Whether :func:`neutralise` marks ``line`` (one line, any line break)."""
    line = line.rstrip(_BREAKS)
    forms = [_reader_text(line)]
    if _has_escape(line):
        forms.append(_reader_text(line, escapes=False))
    return any(reads_as_structure(form) for form in forms)


def neutralise(text: str) -> str:
    """Mark every structural line of ``text`` (see the module docstring) with
    :data:`NEUTRALISE_MARK`; leave every other byte as it is. Every line break
    Python recognises counts, not only ``\\n``."""
    if not text:
        return text  # (no line: the advice measures 3,661 bodies not read, each as "")
    starts = _ahead.pop(text, None) if _ahead else None
    return _mark_at(text, marks(text) if starts is None else starts)


def marks(text: str) -> list[int]:
    """Where :func:`neutralise` puts its marks in ``text``: the offsets of the
    lines it marks, ascending."""
    data = text.encode("utf-8", "surrogatepass")
    quiet = _plain(data)
    if quiet is not None:
        # Every line ends with "\n" and nothing in the text reads as anything
        # but itself (lower-cased), or as one ASCII letter (``quiet``: put in its
        # place, one character for one, so offsets hold): the lines that start
        # with an opener are read for part 1, the few that hold a boundary's
        # letters for part 2.
        if quiet:
            for ch, letter in quiet.items():
                text = text.replace(ch, letter)
            data = text.encode("utf-8", "surrogatepass")
        starts = _plain_openings(text)
        if _may_spell_boundary(data):
            starts = sorted({*starts, *_plain_spellings(text)})
        return starts
    lines = text.splitlines(keepends=True)
    marked = _marked_lines(text, lines)
    if not marked:
        return marked
    offsets = list(itertools.accumulate(map(len, lines), initial=0))
    return [offsets[index] for index in marked]


#: :func:`marks` found before the text is rendered, by the text (see :func:`mark_ahead`).
_ahead: dict[str, list[int]] = {}


def mark_ahead(text: str, starts: list[int]) -> None:
    """Take ``starts`` as ``marks(text)`` (found already, where it cost no wait:
    while add-tree read the body, maybe in another process) for the next
    :func:`neutralise` of ``text``; :func:`forget_ahead` drops what no
    neutralise took."""
    _ahead[text] = starts


def forget_ahead() -> None:
    """Drop the marks :func:`mark_ahead` kept that no :func:`neutralise` took."""
    _ahead.clear()


#: A line of a plain text (after its "\n") whose first character after blanks
#: is one of :data:`_OPENERS`; the regex engine skips to each "\n" itself, so a
#: text of megabytes is not cut into lines to find the few that may open a block.
_OPENER_AFTER: Final = re.compile(r"\n[ \t]*+[-#=*_`~<>+0-9]")
#: The same at the text's first line.
_OPENER_FIRST: Final = re.compile(r"[ \t]*+[-#=*_`~<>+0-9]")


def _plain_openings(text: str) -> list[int]:
    """Where the lines of a plain ``text`` that open a block start (offsets)."""
    starts = [0] if _OPENER_FIRST.match(text) else []
    starts += [found.start() + 1 for found in _OPENER_AFTER.finditer(text)]
    marked = []
    for start in starts:
        end = text.find("\n", start)
        if _plain_line_opens_block(text[start:] if end < 0 else text[start:end]):
            marked.append(start)
    return marked


def _plain_spellings(text: str) -> list[int]:
    """Where the lines of a plain ``text`` that spell a boundary start (offsets)."""
    marked = []
    start = 0
    for line in text.split("\n"):
        if spells_boundary(line.lower()):
            marked.append(start)
        start += len(line) + 1
    return marked


def _mark_at(text: str, starts: list[int]) -> str:
    """``text`` with :data:`NEUTRALISE_MARK` put before each offset of ``starts``
    (ascending); ``text`` itself when there is none."""
    if not starts:
        return text
    pieces: list[str] = []
    last = 0
    for start in starts:
        pieces += (text[last:start], NEUTRALISE_MARK)
        last = start
    pieces.append(text[last:])
    return "".join(pieces)


def _plain_line_opens_block(line: str) -> bool:
    """:func:`opens_block` of a line that reads as itself, lower-cased, whose
    first character after indentation is an opener; the common kinds in code
    (a ``#`` comment, a ``_`` name, ``===``) decided without a regular expression."""
    start = line.lstrip(" \t")
    first = start[0]
    if first == "#":
        rest = start.lstrip("#")
        return not rest or rest[0] in " \t\r"
    if first in "_=":
        return not start.strip("-=*_ \t\r")
    if first in "`~":
        return start.startswith(("```", "~~~"))
    if first == "<":
        return start[1:2].lower() in _HTML_SECOND
    return opens_block(line.lower())


#: What follows "<" at the start of an HTML block (after lower-casing).
_HTML_SECOND: Final = frozenset("abcdefghijklmnopqrstuvwxyz/!?")


def _marked_lines(text: str, lines: list[str]) -> list[int]:
    """The indexes of the lines of ``text`` (``text.splitlines(keepends=True)``) that
    :func:`neutralise` marks, each read as a reader sees it."""
    # The whole text read at once, then cut into lines: one pass instead of one
    # per line. Dropped characters can join a "\r" and a "\n" into one break;
    # then each line is read on its own.
    reader = _reader_text(text)
    forms = reader.splitlines()
    if len(forms) != len(lines):
        forms = [_reader_text(line) for line in lines]
    # Part 2 is read line by line only when the text's letters hold a boundary's
    # core somewhere (line breaks kept: a core never spans two lines).
    # (its bytes swept: what is not ASCII goes, line breaks beyond it too, which
    # can only join two lines' letters: a line more read, never one less)
    spelled = _may_spell_boundary(reader.encode("utf-8", "surrogatepass"))
    marked = []
    for index, (line, form) in enumerate(zip(lines, forms, strict=True)):
        if _has_escape(line):
            if is_guarded(line):
                marked.append(index)
        elif (form.lstrip()[:1] in _OPENERS and opens_block(form)) or (
            spelled and spells_boundary(form)
        ):
            marked.append(index)
    return marked


def _has_escape(line: str) -> bool:
    """Whether ``line`` may hold a terminal escape sequence (then it has two readings)."""
    return "\x1b" in line or (not line.isascii() and not _ESCAPE_STARTS.isdisjoint(line))


#: The characters that start an escape sequence.
_ESCAPE_STARTS: Final = frozenset("\x1b\x90\x98\x9b\x9d\x9e\x9f")


# -- the quick path --------------------------------------------------------------

#: Bytes that read as themselves, lower-cased: printable ASCII, tab and "\n"
#: ("\r" too, when it only ends lines).
_SELF_READING: Final = bytes(range(0x20, 0x7F)) + b"\t\n\r"
#: The quick path's sweep: ASCII letters lower-cased, everything else but "\n" goes.
_LETTER_SWEEP: Final = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz"
)
_NOT_LETTER_OR_NEWLINE: Final = bytes(
    code for code in range(256) if not (0x61 <= code <= 0x7A or 0x41 <= code <= 0x5A or code == 10)
)
#: The letters a boundary line's letters hold, whichever it is; and what they are
#: when a "0" stands for an "o" (the sweep drops it; "1" and "l" stand for an "i",
#: which no core holds).
_BOUNDARY_CORES: Final = (
    b"untrustedcontext",
    b"untrustedcntext",
    b"utputcontract",
    b"utputcntract",
)


def _plain(data: bytes) -> dict[str, str] | None:
    """Whether the quick path reads ``text`` right: its lines are split by "\\n"
    (a "\\r" only before one) and every character beyond ASCII is :func:`_inert`
    or reads as one ASCII letter (:func:`_quiet`); those, with their letters
    (``None``: the quick path does not read it right)."""
    rest = data.translate(None, _SELF_READING)
    quiet: dict[str, str] = {}
    if rest:
        if rest.isascii() or any(byte < 0x80 for byte in rest):
            return None
        for ch in set(rest.decode("utf-8", "surrogatepass")):
            letter = _quiet(ch)
            if letter is not None:
                quiet[ch] = letter
            elif not _inert(ch):
                return None
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None
    return quiet


@functools.lru_cache(maxsize=4096)
def _quiet(ch: str) -> str | None:
    """The ASCII letter a character beyond ASCII reads as, alone and beside its
    neighbours (a letter, not a mark: NFKC joins it to nothing before it), or
    ``None``."""
    if unicodedata.combining(ch) or unicodedata.category(ch)[0] != "L":
        return None
    form = _reader_text(ch)
    return form if len(form) == 1 and "a" <= form <= "z" else None


@functools.lru_cache(maxsize=4096)
def _inert(ch: str) -> bool:
    """Whether a character beyond ASCII reads as something other than ASCII and
    white space, alone and beside its neighbours: then the rule never sees it
    as an opener, a space or a letter of a boundary, in either reading."""
    if unicodedata.combining(ch) or unicodedata.category(ch)[0] in "MCZ":
        return False
    form = _reader_text(ch)
    return bool(form) and form.isprintable() and not any(c.isascii() or c.isspace() for c in form)


def _may_spell_boundary(data: bytes) -> bool:
    """Whether some "\\n"-separated line of ``data`` (which reads as itself) may
    spell a boundary: its letters, lower-cased, hold a boundary's core."""
    letters = data.translate(_LETTER_SWEEP, _NOT_LETTER_OR_NEWLINE)
    return any(core in letters for core in _BOUNDARY_CORES)
