"""Outlines of source files: the declarations' header lines, nothing else.

``outline(path, body)`` returns a skeleton of ``body`` made only of text taken
from it (whole lines, or prefixes of lines, indentation kept) plus elision
marker lines (indentation + ``...``, see ``is_marker``).  It is pure and
deterministic.  Python is outlined with the stdlib ``ast``; Markdown,
reStructuredText, AsciiDoc and manual pages by their headings
(:mod:`.outline_markup`); Erlang and Protocol Buffers by their lines
(:mod:`.outline_erlang`, :mod:`.outline_proto`);
JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++, Ruby, Kotlin, C#, PHP,
Swift, Scala, Lua, Bash, Julia, OCaml, Haskell and Elixir with tree-sitter,
when the grammar packages are installed (:mod:`.outline_ts`).  It returns
None for an unsupported language, for Python that does not parse, for a document
without headings, for Erlang without a form at column 0, for
the tree-sitter languages when their packages are missing, and for a body over
:data:`OUTLINE_LIMIT` characters (parsing holds the whole tree: ~60-190 bytes of
memory per byte of source).
"""

from __future__ import annotations

import ast
import re
import tokenize
import warnings
from collections.abc import Callable, Sequence

from .grammars import grammars, language_for
from .outline_erlang import erlang_outline
from .outline_lines import ELLIPSIS, LINE_SPLIT, cap, indent_of, is_marker, marker
from .outline_markup import asciidoc_outline, markdown_outline, roff_outline, rst_outline
from .outline_proto import proto_outline
from .outline_ts import ts_outline

__all__ = [
    "ELLIPSIS",
    "OUTLINE_LIMIT",
    "grammars",
    "is_marker",
    "language_for",
    "outline",
    "why_no_outline",
]

#: The longest body outlined, in characters. Parsing holds the whole tree: a
#: 5.6 MB Python file took 1 GB and 5.8 s, a 7 MB C file 416 MB; at this limit
#: ~200 MB at worst, ~80 MB for real code. (add-tree attaches at most 256 KiB
#: files by default: only larger attachments added on purpose meet it.)
OUTLINE_LIMIT = 1 << 20

_CONST_NAME = re.compile(r"_*[A-Z][A-Z0-9_]*\Z")
_WORDY = re.compile(r"\w")
_SHORT_CONST = 100  # a constant's source line is shown whole up to this length


def outline(path: str, body: str) -> str | None:
    """Outline of ``body`` (the contents of ``path``), or None (see module doc)."""
    lang = language_for(path)
    if lang is None or len(body) > OUTLINE_LIMIT:
        return None
    plain = _PLAIN.get(lang)
    lines = plain(body) if plain is not None else ts_outline(lang, body)
    if lines is None:
        return None
    return "\n".join(lines) + ("\n" if lines else "")


def why_no_outline(path: str, length: int = 0) -> str:
    """Why :func:`outline` gave ``None`` for a file at ``path`` (``length``
    characters), as words to follow ``no outline of PATH:``: its language is not
    outlined, it is too long, its Python does not parse, its document has no
    headings, or its grammar is not installed."""
    lang = language_for(path)
    if lang is None:
        return "its language is not one git-hydrate outlines (see git hydrate doctor)"
    if length > OUTLINE_LIMIT:
        return f"it is longer than the {OUTLINE_LIMIT:,} characters git-hydrate outlines"
    return _NOTHING_TO_OUTLINE.get(
        lang, f"the tree-sitter grammar of {lang} is not installed (see git hydrate doctor)"
    )


# ====================================================================== Python


class _PyOutliner:
    def __init__(self, body: str) -> None:
        self.lines = LINE_SPLIT.split(body)
        self.out: list[str] = []

    # -- helpers -----------------------------------------------------------

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1]

    def emit(self, text: str) -> None:
        self.out.append(cap(text))

    def header_end(self, first: int, last: int) -> tuple[int, int]:
        """(lineno, char end) of the ':' closing the header starting at line ``first``.

        Only lines first..last are read; ``last`` is the line of the first body
        statement, so the colon is always among them.
        """
        text = self.line(first)
        if not any(c in text for c in "'\"#\\"):
            # fast path: no string, comment or continuation on the line, so a
            # plain bracket count is exact
            depth = 0
            for i, c in enumerate(text):
                if c in "([{":
                    depth += 1
                elif c in ")]}":
                    depth -= 1
                elif c == ":" and depth == 0:
                    return first, i + 1
            if depth < 0:
                return first, len(text)  # not a header we understand
        chunk = iter(self.lines[first - 1 : last])

        def readline() -> str:
            return next(chunk, "") + "\n"

        depth = 0
        try:
            for tok in tokenize.generate_tokens(readline):
                if tok.type == tokenize.OP:
                    if tok.string in "([{":
                        depth += 1
                    elif tok.string in ")]}":
                        depth -= 1
                    elif tok.string == ":" and depth == 0:
                        return first + tok.end[0] - 1, tok.end[1]
                elif tok.type == tokenize.ENDMARKER:
                    break
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        return first, len(self.line(first))

    def emit_header(self, node: ast.stmt, body: Sequence[ast.stmt]) -> int:
        """Emit decorators and the header lines of a def/class; return the header's last lineno."""
        for dec in getattr(node, "decorator_list", ()):
            # the '@' is on dec.lineno; a decorator may span lines
            for n in range(dec.lineno, (dec.end_lineno or dec.lineno) + 1):
                self.emit(self.line(n))
        first = node.lineno
        last_line, col = self.header_end(first, body[0].lineno if body else first)
        for n in range(first, last_line):
            self.emit(self.line(n))
        self.emit(self.line(last_line)[:col])
        return last_line

    def docstring_line(self, body: Sequence[ast.stmt], header_last: int) -> None:
        if not body:
            return
        first = body[0]
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            return
        if first.lineno <= header_last:
            return  # docstring on the header line itself
        end = first.end_lineno or first.lineno
        for n in range(first.lineno, end + 1):
            text = self.line(n)
            if _WORDY.search(text):
                self.emit(text)
                return

    @staticmethod
    def has_defs(node: ast.AST) -> bool:
        return any(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            for n in ast.walk(node)
        )

    def find_keyword_line(self, after: int, before: int, keyword: str) -> int | None:
        """Line number of the ``else:``/``finally:`` line between two statements."""
        for n in range(before - 1, after, -1):
            stripped = self.line(n).lstrip()
            if stripped.startswith(keyword) and stripped[len(keyword) :].lstrip().startswith(":"):
                return n
        return None

    # -- statements ----------------------------------------------------------

    def block(self, stmts: Sequence[ast.stmt], module_level: bool) -> None:
        for stmt in stmts:
            self.stmt(stmt, module_level)

    def stmt(self, stmt: ast.stmt, module_level: bool) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            last = self.emit_header(stmt, stmt.body)
            self.docstring_line(stmt.body, last)
            self.out.append(marker(indent_of(self.line(stmt.lineno))))
        elif isinstance(stmt, ast.ClassDef):
            last = self.emit_header(stmt, stmt.body)
            self.docstring_line(stmt.body, last)
            rest = stmt.body
            if rest and _is_docstring(rest[0]):
                rest = rest[1:]
            members = [
                s
                for s in rest
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ]
            if len(members) < len(rest):  # fields, assignments, ... are elided
                self.out.append(marker(indent_of(self.line(stmt.lineno))))
            self.block(members, module_level=False)
        elif not module_level:
            return
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.emit(self.line(stmt.lineno))
            if (stmt.end_lineno or stmt.lineno) > stmt.lineno:
                self.out.append(marker(indent_of(self.line(stmt.lineno))))
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            self.constant(stmt)
        elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.AsyncWith)) and self.has_defs(stmt):
            self.compound(stmt)

    def constant(self, stmt: ast.Assign | ast.AnnAssign) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if not targets or not all(
            isinstance(t, ast.Name) and _CONST_NAME.match(t.id) for t in targets
        ):
            return
        text = self.line(stmt.lineno)
        multi = (stmt.end_lineno or stmt.lineno) > stmt.lineno
        if not multi and len(text) <= _SHORT_CONST:
            self.emit(text)
            return
        value = stmt.value
        if len(text) > _SHORT_CONST and value is not None and value.lineno == stmt.lineno:
            # cut before the value: col_offset is in UTF-8 bytes
            text = text.encode("utf-8")[: value.col_offset].decode("utf-8", "ignore").rstrip()
        self.emit(text)
        self.out.append(marker(indent_of(text)))

    def compound(self, stmt: ast.If | ast.Try | ast.With | ast.AsyncWith) -> None:
        """Module-level if/try/with holding defs: keep its clause lines and the defs."""
        self.emit(self.line(stmt.lineno))
        self.block(stmt.body, module_level=True)
        if isinstance(stmt, ast.If):
            self.elifs(stmt)
        elif isinstance(stmt, ast.Try):
            prev_end = _end(stmt.body[-1])
            for handler in stmt.handlers:
                self.emit(self.line(handler.lineno))
                self.block(handler.body, module_level=True)
                prev_end = _end(handler.body[-1])
            for keyword, part in (("else", stmt.orelse), ("finally", stmt.finalbody)):
                if part:
                    n = self.find_keyword_line(prev_end, part[0].lineno, keyword)
                    if n is not None:
                        self.emit(self.line(n))
                    self.block(part, module_level=True)
                    prev_end = _end(part[-1])

    def elifs(self, stmt: ast.If) -> None:
        """The ``elif`` and ``else`` clauses of a module-level ``if`` (in a loop, not a
        call per clause: generated code may chain thousands of them)."""
        while stmt.orelse:
            head = stmt.orelse[0]
            if not (
                isinstance(head, ast.If) and self.line(head.lineno).lstrip().startswith("elif")
            ):
                n = self.find_keyword_line(_end(stmt.body[-1]), head.lineno, "else")
                if n is not None:
                    self.emit(self.line(n))
                self.block(stmt.orelse, module_level=True)
                return
            stmt = head
            self.emit(self.line(stmt.lineno))
            self.block(stmt.body, module_level=True)


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _python_outline(body: str) -> list[str] | None:
    try:
        with warnings.catch_warnings():  # invalid escapes etc. must not leak out
            warnings.simplefilter("ignore")
            tree = ast.parse(body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    o = _PyOutliner(body)
    o.docstring_line(tree.body, 0)
    o.block(tree.body, module_level=True)
    return o.out


#: The outliners of the languages that need no grammar package, by language.
_PLAIN: dict[str, Callable[[str], list[str] | None]] = {
    "python": _python_outline,
    "markdown": markdown_outline,
    "rst": rst_outline,
    "roff": roff_outline,
    "asciidoc": asciidoc_outline,
    "erlang": erlang_outline,
    "protobuf": proto_outline,
}
_HEADINGS = "it has no headings to outline"
#: Why one of them gave no outline, for :func:`why_no_outline`.
_NOTHING_TO_OUTLINE = {
    "python": "it could not be parsed as Python",
    "markdown": _HEADINGS,
    "rst": _HEADINGS,
    "roff": _HEADINGS,
    "asciidoc": _HEADINGS,
    "erlang": "it has no attribute or function at the start of a line to outline",
    "protobuf": "it declares no service, message or enum to outline",
}
