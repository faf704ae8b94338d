"""Outlines of documents by their headings: Markdown, reStructuredText, AsciiDoc.

A document's outline is its heading lines, as they stand in the body, with an
elision marker (``...``) where text between two headings was left out: enough
for a worker to see what the document covers and ask for the part it needs.
Markdown headings are ATX (``#`` to ``######``) or setext (a line underlined by
``===`` or ``---``), never inside a fenced code block nor in the front matter a
document may open with (YAML between ``---`` lines, TOML between ``+++``
lines, as static site generators read them); reStructuredText
section titles are a line underlined (and perhaps overlined) by one repeated
punctuation character at least as long as the title, or four characters long at
least (docutils reads a shorter underline so, with a warning). A manual page's
(roff: man or mdoc macros) are its title and section macros (``.TH``, ``.SH``,
``.SS``; ``.Dt``, ``.Sh``, ``.Ss``) and its items: a ``.TP`` paragraph's tag line
(an option, a key), an ``.IP`` or ``.It`` line with its tag. AsciiDoc's are its
section titles (``=`` to ``======``, or ``#`` as in Markdown, then a blank and text;
or two lines: a line of text beginning a block over an underline of ``=``, ``-``,
``~``, ``^`` or ``+`` as long as it, one more or less) and its labelled list terms
(a line ending in ``::``, ``:::``, ``::::`` or ``;;``: a manual's options), never
inside a delimited block (a line of four or more ``-``, ``.``, ``=``, ``*``, ``_``,
``+`` or ``/``, or a table's ``|===``, up to the same line; a Markdown fence of three
backticks) nor a ``//`` comment line. A document without a heading has no outline
(``None``). Pure; no extra needed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Final

from .outline_lines import ELLIPSIS, LINE_SPLIT, cap

__all__ = ["asciidoc_outline", "markdown_outline", "roff_outline", "rst_outline", "unfenced"]

_ATX: Final = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SETEXT: Final = re.compile(r" {0,3}(?:=+|-+)[ \t]*")
_FENCE: Final = re.compile(r" {0,3}(`{3,}|~{3,})")
#: A front matter's first line, and the lines that may close it.
_FRONT: Final = {"---": ("---", "..."), "+++": ("+++",)}
#: The line a front matter opens with: a YAML key (``title: Zod``) or a TOML one
#: (``title = "T"``, ``[params]``), or a comment; a page that opens with a thematic
#: break has a blank line or prose after it.
_FRONT_KEY: Final = {
    "---": re.compile(r"[ \t]*(?:#|[\w\"'.-][^:\n]*:(?:[ \t]|$))"),
    "+++": re.compile(r"[ \t]*(?:#|\[|[\w\"'.-][^=\n]*=)"),
}
#: reStructuredText's adornment characters (any printable non-alphanumeric ASCII).
_ADORNMENT: Final = re.compile(r"([!-/:-@\[-`{-~])\1+[ \t]*")
#: An underline shorter than its title still makes a title from this length up.
_SHORT_UNDERLINE: Final = 4
#: A manual page's title and section macros, and an item with its tag on the line.
_ROFF_HEADING: Final = re.compile(r"\.(?:TH|SH|SS|Dt|Sh|Ss|It|IP)(?:[ \t]|$)")
#: A `.TP` paragraph: its tag is the next line that is not a comment.
_ROFF_TAGGED: Final = re.compile(r"\.TP(?:[ \t]|$)")
#: A comment line (``.\"``, ``'\"``, ``.\#``), or an empty request (a lone ``.``).
_ROFF_COMMENT: Final = re.compile(r"[.'][ \t]*\\[\"#]|\.[ \t]*$")
#: AsciiDoc: a section title, a labelled list term ending its line, a delimited
#: block's opening (and closing) line, a Markdown fence, a comment line.
_ADOC_TITLE: Final = re.compile(r"(?:={1,6}|#{1,6})[ \t]+\S")
_ADOC_TERM: Final = re.compile(r"\S.*?(?<!:)(?::{2,4}|;;)[ \t]*")
_ADOC_DELIMITER: Final = re.compile(
    r"(?:(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,})|[|,:!]={3,})[ \t]*"
)
#: (three backticks: a line of four or more opens no fence, as Asciidoctor reads it)
_ADOC_FENCE: Final = re.compile(r"```(?!`)")
#: A two-line title: a line of text (not a block title, ``.Title``; a letter or digit
#: in it) beginning a block, over an underline of one of ``= - ~ ^ +`` as long as it,
#: one more or less (git's manual pages: ``NAME`` over ``----``).
_ADOC_UNDERLINED: Final = re.compile(r"(?!\.|\[.*\]$).*?[^\W_]")
_ADOC_UNDERLINE: Final = re.compile(r"=+|-+|~+|\^+|\++")


def _outlined(lines: list[str], headings: list[tuple[int, int]]) -> list[str] | None:
    """The heading lines (``(first, last)`` line spans, in order) with a marker
    wherever non-blank text between them was left out."""
    if not headings:
        return None
    out: list[str] = []
    at = 0
    for first, last in headings:
        if any(line.strip() for line in lines[at:first]):
            out.append(ELLIPSIS)
        out += [cap(line) for line in lines[first : last + 1]]
        at = last + 1
    if any(line.strip() for line in lines[at:]):
        out.append(ELLIPSIS)
    return out


def unfenced(lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """Each line of a Markdown text (with its index) that is neither in a fenced code
    block nor one of its fences: a fence of three or more backticks or tildes,
    indented three spaces at most, closed by one of the same character at least as
    long with nothing after it."""
    fence: str | None = None
    for index, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence is not None:
            closes = opened is not None and opened.group(1)[0] == fence[0]
            if closes and opened and len(opened.group(1)) >= len(fence):
                fence = None if not line[opened.end() :].strip() else fence
            continue
        if opened:
            fence = opened.group(1)
            continue
        yield index, line


def _front_matter_end(lines: Sequence[str]) -> int:
    """The index of the first line after the front matter ``lines`` open with, 0 if
    none: its closing line is no setext underline, a YAML comment no heading. A
    ``---`` followed by no key opens none (a thematic break, then the page)."""
    opening = lines[0].rstrip() if len(lines) > 1 else ""
    closing = _FRONT.get(opening)
    if closing is None or not _FRONT_KEY[opening].match(lines[1]):
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in closing:
            return index + 1
    return 0


def markdown_outline(body: str) -> list[str] | None:
    """The outline of a Markdown document: its headings (see the module doc)."""
    lines = LINE_SPLIT.split(body)
    start = _front_matter_end(lines)
    headings: list[tuple[int, int]] = []
    for at, line in unfenced(lines[start:]):
        index = start + at
        if _ATX.match(line):
            headings.append((index, index))
        elif (
            at > 0
            and _SETEXT.fullmatch(line)
            and lines[index - 1].strip()
            and not (headings and headings[-1][1] == index - 1)
            and not _ATX.match(lines[index - 1])
        ):
            headings.append((index - 1, index))
    return _outlined(lines, headings)


def rst_outline(body: str) -> list[str] | None:
    """The outline of a reStructuredText document: its section titles."""
    lines = LINE_SPLIT.split(body)
    headings: list[tuple[int, int]] = []
    index = 1
    while index < len(lines):
        title, under = lines[index - 1], lines[index]
        over = lines[index - 2] if index >= 2 else ""
        # an overlined title may be inset; an underlined one starts the line
        overlined = bool(_ADORNMENT.fullmatch(over)) and over.rstrip() == under.rstrip()
        if (
            title.strip()
            and (overlined or not title[:1].isspace())
            and _ADORNMENT.fullmatch(under)
            and len(under.rstrip()) >= min(len(title.rstrip()), _SHORT_UNDERLINE)
            and not _ADORNMENT.fullmatch(title)
        ):
            first = index - 2 if overlined else index - 1
            if headings and first <= headings[-1][1]:
                first = headings[-1][1] + 1
            headings.append((first, index))
            index += 2
            continue
        index += 1
    return _outlined(lines, headings)


def roff_outline(body: str) -> list[str] | None:
    """The outline of a manual page: its title, sections and items (module doc)."""
    lines = LINE_SPLIT.split(body)
    headings: list[tuple[int, int]] = []
    tag_next = False  # after `.TP`: its tag is the next line not a comment
    for index, line in enumerate(lines):
        if tag_next and not _ROFF_COMMENT.match(line):
            headings.append((index, index))  # (`.B \-r, \-\-radius=RADIUS`)
            tag_next = False
        elif _ROFF_HEADING.match(line):
            # (`.IP` and `.It` alone, with no tag, say nothing)
            if line[3:].strip() or line[1:3] not in ("IP", "It"):
                headings.append((index, index))
        elif _ROFF_TAGGED.match(line):
            tag_next = True
    return _outlined(lines, headings)


def asciidoc_outline(body: str) -> list[str] | None:
    """The outline of an AsciiDoc document: its titles and terms (see the module doc)."""
    lines = LINE_SPLIT.split(body)
    headings: list[tuple[int, int]] = []
    block: str | None = None  # (the line that closes the delimited block we are in)
    starts = True  # (the line may begin a block: a two-line title's text)
    underline = -1  # (the underline of the two-line title just kept)
    for index, line in enumerate(lines):
        stripped = line.rstrip()
        begins, starts = starts, not stripped or (stripped[:1] == "[" and stripped[-1:] == "]")
        if block is not None:
            if stripped == block:
                block, starts = None, True
        elif index == underline:
            starts = True
        elif line.startswith("//") and not _ADOC_DELIMITER.fullmatch(line):
            starts = begins  # (a comment line)
        elif _ADOC_TITLE.match(line) or _ADOC_TERM.fullmatch(line):
            headings.append((index, index))
            starts = _ADOC_TITLE.match(line) is not None
        elif begins and _two_line_title(lines, index):
            headings.append((index, index + 1))
            underline = index + 1
        elif _ADOC_DELIMITER.fullmatch(line) or _ADOC_FENCE.match(line):
            block = stripped if not _ADOC_FENCE.match(line) else stripped[:3]
    return _outlined(lines, headings)


def _two_line_title(lines: list[str], index: int) -> bool:
    """Whether ``lines[index]`` is a two-line title's text over its underline."""
    if index + 1 >= len(lines):
        return False
    text, under = lines[index].rstrip(), lines[index + 1].rstrip()
    return (
        _ADOC_UNDERLINE.fullmatch(under) is not None
        and abs(len(text) - len(under)) < 2
        and _ADOC_UNDERLINED.match(text) is not None
    )
