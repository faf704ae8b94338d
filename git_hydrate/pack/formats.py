"""The prompt's formats: how its untrusted block holds the attachments.

Every format renders the same sections in the same order (see
:func:`.render.render_prompt`): the task's own sections, the untrusted block
between the seed's banner and footer, and the ``## Output contract`` last. They
differ in how the block holds each attachment:

* ``seed`` (the default): the seed's layout, byte for byte. Each body stands
  under ``### Context from <source>`` as it is, but for the lines that could
  read as structure, which get a backslash (:mod:`.boundaries`).
* ``markdown``: each body, unchanged, in a fenced code block whose backtick
  fence is longer than any run of backticks that begins a line of the body
  (the only runs that could close it), with the language as its info string:
  nothing in a body can close the fence, so nothing in it parses as a
  heading, a banner or anything else.
* ``xml``: the long-context layout recommended for Claude: ``<documents>``,
  one ``<document index="N">`` per attachment with its ``<source>`` and
  ``<document_content>``, every ``&``, ``<`` and ``>`` of a body or source
  escaped: a body holds no tag, so it cannot close its document.

Text outside the block (objective, acceptance, checkpoint) goes through the
same rule in every format. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .render import (
    UNTRUSTED_BANNER,
    UNTRUSTED_FOOTER,
    assemble,
    code_span,
    context_heading,
    head_sections,
    neutralise,
    one_line,
    outline_heading,
    section_pieces,
)

__all__ = [
    "FORMATS",
    "SEED",
    "Layout",
    "MarkdownLayout",
    "XmlLayout",
    "body_alone",
    "language",
    "layout",
    "render",
]


class Layout:
    """One format of the untrusted block (the ``seed`` one; see the subclasses).

    A section is given as the pieces that join into it (the body is not
    copied when it needs no change); ``opening`` comes before the first
    section, ``separator`` between two, ``closing`` after the last.
    """

    name = "seed"
    opening: str = f"\n\n{UNTRUSTED_BANNER}\n\n"
    separator: str = "\n"
    closing: str = UNTRUSTED_FOOTER

    @property
    def frame(self) -> tuple[str, str, str]:
        """What the block puts before its first section, between two, after the last."""
        return (self.opening, self.separator, self.closing)

    @property
    def block_overhead(self) -> int:
        """Bytes the block costs around its sections (its opening and closing)."""
        return len((self.opening + self.closing).encode("utf-8"))

    def heading(self, source: str, *, outline: bool = False) -> str:
        """The text that opens an attachment's section (its label)."""
        return outline_heading(source) if outline else context_heading(source)

    def section(
        self, index: int, source: str, body: str, *, outline: bool = False
    ) -> tuple[str, ...]:
        """The ``index``-th (from 1) section of the block, as pieces that end with a
        newline: the first holds everything that depends on the source and the
        index, the rest depend on the body alone (so a body's token count can be
        cached by the body)."""
        return section_pieces(self.heading(source, outline=outline), body)

    def first_piece(self, index: int, source: str) -> str | None:
        """The first piece of the ``index``-th section of ``source`` kept whole, when
        it does not depend on the body (``None`` in a format where it does): a body's
        token count, remembered, then gives the section's without the body."""
        return self.heading(source)

    def renumbered(self, section: tuple[str, ...] | bytes, index: int) -> tuple[str, ...] | bytes:
        """A section made as another place's, as the ``index``-th (the same text
        in every format but ``xml``, whose documents are numbered)."""
        return section

    # The ``### Not included`` section (:mod:`.omissions`), the block's last part.
    notice_open: str = "### Not included\n"
    notice_close: str = ""

    def notice_start(self, source: str) -> str:
        """How a line of the section starts: an attachment's source, which the
        tool's own words then follow (they hold no boundary and no markup). The
        source is repository text: it stands in a code span no backtick run in it
        can close, on one line, and a line that spells a boundary is marked."""
        return _marked(f"- {code_span(one_line(source))} ")


def _marked(start: str) -> str:
    """``start`` marked as :func:`.boundaries.neutralise` marks a line that begins
    with it (the words that follow cannot change the verdict)."""
    marked = neutralise(start + "\n")
    return marked[:-1] if marked.endswith("\n") else marked


class MarkdownLayout(Layout):
    """Each body in a fenced code block that nothing inside it can close."""

    name = "markdown"

    def section(
        self, index: int, source: str, body: str, *, outline: bool = False
    ) -> tuple[str, ...]:
        fence = "`" * _fence_length(body)
        # (the heading and the fence's info string, which come from the source,
        # are the first piece; the rest depends on the body alone)
        heading = f"{self.heading(source, outline=outline)}{fence}{language(source)}\n"
        if not body or body.endswith("\n"):
            return (heading, body, f"{fence}\n")
        return (heading, body, "\n", f"{fence}\n")

    def first_piece(self, index: int, source: str) -> str | None:
        return None  # (its fence is longer than every run of backticks in the body)


#: A run of backticks that begins a line, after nothing but blanks: the only run
#: that could close a backtick fence (CommonMark, 4.5: a closing fence is a line
#: of at least as many backticks, indented at most three spaces; tildes never
#: close a backtick fence, and neither does a run inside a line). Blanks of any
#: width count, and a carriage return ends a line as a line feed does: a stricter
#: reader's line is never missed.
_CLOSER: Final = re.compile(r"(?:\A|(?<=[\n\r]))[ \t]*(`{3,})")


def _fence_length(body: str) -> int:
    """The length of a backtick fence no line of ``body`` can close: longer than
    every run of backticks that begins a line (after blanks), and at least three,
    CommonMark's shortest. One pass over the body."""
    return max((len(run) + 1 for run in _CLOSER.findall(body)), default=3)


class XmlLayout(Layout):
    """The documents layout: every body and source escaped inside its tags."""

    name = "xml"
    opening = f"\n\n{UNTRUSTED_BANNER}\n\n<documents>\n"
    separator = ""
    closing = f"</documents>\n{UNTRUSTED_FOOTER}"

    def heading(self, source: str, *, outline: bool = False) -> str:
        label = f"{source} (outline, not the whole file)" if outline else source
        return f"<source>{_escaped(one_line(label))}</source>\n"

    def section(
        self, index: int, source: str, body: str, *, outline: bool = False
    ) -> tuple[str, ...]:
        text = _escaped(body)
        return (
            f'<document index="{index}">\n{self.heading(source, outline=outline)}',
            "<document_content>\n",
            text if not text or text.endswith("\n") else text + "\n",
            "</document_content>\n</document>\n",
        )

    def first_piece(self, index: int, source: str) -> str | None:
        return f'<document index="{index}">\n{self.heading(source)}'

    def renumbered(self, section: tuple[str, ...] | bytes, index: int) -> tuple[str, ...] | bytes:
        if isinstance(section, bytes):
            tail = section.partition(b">\n")[2]
            return b'<document index="%d">\n' % index + tail
        text = section[0].partition(">\n")[2]
        return (f'<document index="{index}">\n{text}', *section[1:])

    notice_open = "<not_included>\n"
    notice_close = "</not_included>\n"

    def notice_start(self, source: str) -> str:
        return _marked(f"- {_escaped(one_line(source))} ")


_ESCAPES: Final = {ord("&"): "&amp;", ord("<"): "&lt;", ord(">"): "&gt;"}


def _escaped(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` as XML character entities."""
    if "&" not in text and "<" not in text and ">" not in text:
        return text
    return text.translate(_ESCAPES)


def body_alone(shape: str, source: str, body: str) -> str:
    """``body`` of the attachment ``source`` as the format ``shape`` holds it in a
    prompt, without its section's heading: neutralised (``seed``), in a fence
    nothing in it can close, byte for byte (``markdown``), escaped in its
    content tags (``xml``); ending with a newline."""
    ending = "" if not body or body.endswith("\n") else "\n"
    if shape == "markdown":
        fence = "`" * _fence_length(body)
        return f"{fence}{language(source)}\n{body}{ending}{fence}\n"
    if shape == "xml":
        text = _escaped(body)
        return f"<document_content>\n{text}{ending}</document_content>\n"
    text = neutralise(body)
    return text if not text or text.endswith("\n") else text + "\n"


#: The languages a fence names, by a source's file extension (the info string
#: is never taken from the label itself: a label is repository text).
_LANGUAGES: Final = {
    "c": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cs": "csharp",
    "css": "css",
    "go": "go",
    "h": "c",
    "hpp": "cpp",
    "html": "html",
    "java": "java",
    "js": "javascript",
    "json": "json",
    "jsx": "jsx",
    "kt": "kotlin",
    "md": "markdown",
    "php": "php",
    "py": "python",
    "pyi": "python",
    "rb": "ruby",
    "rs": "rust",
    "rst": "rst",
    "sh": "bash",
    "sql": "sql",
    "swift": "swift",
    "toml": "toml",
    "ts": "typescript",
    "tsx": "tsx",
    "txt": "text",
    "xml": "xml",
    "yaml": "yaml",
    "yml": "yaml",
}


def language(source: str) -> str:
    """The info string of a source's fence: its language, known by its extension, or ''."""
    name = source.rsplit("/", 1)[-1]
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        return ""
    return _LANGUAGES.get(extension.lower(), "")


SEED: Final = Layout()
#: Every format, by name (``prompt --format``, ``hydrate.promptFormat``).
FORMATS: Final = {"seed": SEED, "markdown": MarkdownLayout(), "xml": XmlLayout()}


def layout(name: str) -> Layout:
    """The format called ``name`` (one of :data:`FORMATS`)."""
    return FORMATS[name]


def render(packet: Mapping[str, Any], shape: Layout = SEED) -> str:
    """:func:`.render.render_prompt` in any format: the packet as one deterministic text."""
    parts = [
        shape.section(index, str(c["source"]), str(c["body"]))
        for index, c in enumerate(packet.get("context") or (), start=1)
    ]
    return assemble(head_sections(packet), parts, shape.frame)
