"""Outlines of source files: the declarations' header lines, nothing else.

``outline(path, body)`` returns a skeleton of ``body`` made only of text taken
from it (whole lines, or prefixes of lines, indentation kept) plus elision
marker lines (indentation + ``...``, see ``is_marker``).  It is pure and
deterministic.  Python is outlined with the stdlib ``ast``; JavaScript,
TypeScript/TSX, Go, Rust and Java with tree-sitter, when the grammar packages
are installed.  It returns None for an unsupported language, for Python that
does not parse, and for the tree-sitter languages when their packages are
missing.
"""

from __future__ import annotations

import ast
import os
import re
import tokenize
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["ELLIPSIS", "grammars", "is_marker", "language_for", "outline"]

ELLIPSIS = "..."
MAX_LINE = 240  # longer lines are cut to a prefix of this many characters
_LINE_SPLIT = re.compile(r"\r\n|\r|\n")
_CONST_NAME = re.compile(r"_*[A-Z][A-Z0-9_]*\Z")
_SHORT_CONST = 100  # a constant's source line is shown whole up to this length
_WORDY = re.compile(r"\w")


def is_marker(line: str) -> bool:
    """True for an elision marker line (the only lines not taken from the body)."""
    return line.strip() == ELLIPSIS


def _marker(indent: str) -> str:
    step = "\t" if "\t" in indent else "    "
    return indent + step + ELLIPSIS


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _cap(line: str) -> str:
    return line[:MAX_LINE].rstrip()


_EXTENSIONS = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}


def language_for(path: str) -> str | None:
    """The outline language for a path, from its extension; None if unsupported."""
    return _EXTENSIONS.get(os.path.splitext(path)[1].lower())


def outline(path: str, body: str) -> str | None:
    """Outline of ``body`` (the contents of ``path``), or None (see module doc)."""
    lang = language_for(path)
    if lang is None:
        return None
    lines = _python_outline(body) if lang == "python" else _ts_outline(lang, body)
    if lines is None:
        return None
    return "\n".join(lines) + ("\n" if lines else "")


# ====================================================================== Python


class _PyOutliner:
    def __init__(self, body: str) -> None:
        self.lines = _LINE_SPLIT.split(body)
        self.out: list[str] = []

    # -- helpers -----------------------------------------------------------

    def line(self, lineno: int) -> str:
        return self.lines[lineno - 1]

    def emit(self, text: str) -> None:
        self.out.append(_cap(text))

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
            self.out.append(_marker(_indent_of(self.line(stmt.lineno))))
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
                self.out.append(_marker(_indent_of(self.line(stmt.lineno))))
            self.block(members, module_level=False)
        elif not module_level:
            return
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            self.emit(self.line(stmt.lineno))
            if (stmt.end_lineno or stmt.lineno) > stmt.lineno:
                self.out.append(_marker(_indent_of(self.line(stmt.lineno))))
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
        self.out.append(_marker(_indent_of(text)))

    def compound(self, stmt: ast.If | ast.Try | ast.With | ast.AsyncWith) -> None:
        """Module-level if/try/with holding defs: keep its clause lines and the defs."""
        self.emit(self.line(stmt.lineno))
        self.block(stmt.body, module_level=True)
        if isinstance(stmt, ast.If):
            orelse = stmt.orelse
            if not orelse:
                return
            head = orelse[0]
            if isinstance(head, ast.If) and self.line(head.lineno).lstrip().startswith("elif"):
                self.compound(head)
                return
            n = self.find_keyword_line(_end(stmt.body[-1]), head.lineno, "else")
            if n is not None:
                self.emit(self.line(n))
            self.block(orelse, module_level=True)
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


# ================================================================ tree-sitter


@dataclass(frozen=True)
class _Spec:
    module: str  # grammar package's import name
    factory: str  # function in it returning the language capsule
    funcs: frozenset[str]  # header kept up to the body's '{', body elided
    containers: frozenset[str]  # header kept, body's declarations outlined
    whole: frozenset[str]  # kept whole when short (signatures, type declarations)
    wrappers: frozenset[str]  # looked through (export ..., declare ...)
    bodies: frozenset[str]  # inner lists looked through inside a container body
    variables: frozenset[str]  # `const f = () => {}` declarations
    comments: frozenset[str]
    prefix: frozenset[str] = frozenset()  # sibling nodes kept in front (Rust attributes)


_JS_FUNCS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "method_definition",
    }
)
_JS_VARS = frozenset({"lexical_declaration", "variable_declaration"})
_TS_WHOLE = frozenset(
    {
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "function_signature",
        "method_signature",
        "abstract_method_signature",
    }
)

_SPECS: dict[str, _Spec] = {
    "javascript": _Spec(
        "tree_sitter_javascript",
        "language",
        funcs=_JS_FUNCS,
        containers=frozenset({"class_declaration", "class"}),
        whole=frozenset(),
        wrappers=frozenset({"export_statement"}),
        bodies=frozenset(),
        variables=_JS_VARS,
        comments=frozenset({"comment"}),
        prefix=frozenset({"decorator"}),
    ),
    "typescript": _Spec(
        "tree_sitter_typescript",
        "language_typescript",
        funcs=_JS_FUNCS,
        containers=frozenset(
            {
                "class_declaration",
                "abstract_class_declaration",
                "class",
                "internal_module",
                "module",
            }
        ),
        whole=_TS_WHOLE,
        wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
        bodies=frozenset(),
        variables=_JS_VARS,
        comments=frozenset({"comment"}),
        prefix=frozenset({"decorator"}),
    ),
    "go": _Spec(
        "tree_sitter_go",
        "language",
        funcs=frozenset({"function_declaration", "method_declaration"}),
        containers=frozenset(),
        whole=frozenset({"package_clause", "type_declaration"}),
        wrappers=frozenset(),
        bodies=frozenset(),
        variables=frozenset(),
        comments=frozenset({"comment"}),
    ),
    "rust": _Spec(
        "tree_sitter_rust",
        "language",
        funcs=frozenset({"function_item"}),
        containers=frozenset({"impl_item", "trait_item", "mod_item"}),
        whole=frozenset(
            {
                "struct_item",
                "enum_item",
                "union_item",
                "type_item",
                "function_signature_item",
                "associated_type",
                "const_item",
                "static_item",
            }
        ),
        wrappers=frozenset(),
        bodies=frozenset(),
        variables=frozenset(),
        comments=frozenset({"line_comment", "block_comment"}),
        prefix=frozenset({"attribute_item"}),
    ),
    "java": _Spec(
        "tree_sitter_java",
        "language",
        funcs=frozenset(
            {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
        ),
        containers=frozenset(
            {
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
            }
        ),
        whole=frozenset({"annotation_type_element_declaration", "enum_constant"}),
        wrappers=frozenset(),
        bodies=frozenset({"enum_body_declarations"}),
        variables=frozenset(),
        comments=frozenset({"line_comment", "block_comment"}),
    ),
}
_SPECS["tsx"] = _Spec(**{**_SPECS["typescript"].__dict__, "factory": "language_tsx"})

_MAX_WHOLE = 25  # longer 'whole' declarations keep first line, marker, last line
_CLOSERS = frozenset({"}", "};", "},", ");", ")"})
_BLOCKS = frozenset({"statement_block", "block", "constructor_body"})


@cache
def grammars() -> str:
    """Which tree-sitter grammars this process would use, as a fingerprint (each
    package's location, size and modification time, or its absence), for the
    caches of what outlines produce: installing or upgrading a grammar changes
    outlines, so it changes their keys. Nothing is imported."""
    import importlib.util

    found = []
    for name in sorted({"tree_sitter", *(spec.module for spec in _SPECS.values())}):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = spec.origin if spec is not None else None
        try:
            stat = os.stat(origin) if origin else None
        except OSError:
            stat = None
        found.append(f"{name}={origin}:{stat.st_size}:{stat.st_mtime_ns}" if stat else f"{name}=-")
    return ";".join(found)


@cache
def _parser(lang: str) -> Any | None:
    spec = _SPECS[lang]
    try:
        import importlib

        import tree_sitter

        grammar = importlib.import_module(spec.module)
        return tree_sitter.Parser(tree_sitter.Language(getattr(grammar, spec.factory)()))
    except (ImportError, AttributeError, ValueError):
        return None


class _TsOutliner:
    def __init__(self, spec: _Spec, source: bytes) -> None:
        self.spec = spec
        self.raw = source.split(b"\n")
        self.out: list[str] = []
        self.last_row = -1  # rows at or before this are already shown

    def text(self, row: int, end_col: int | None = None) -> str:
        line = self.raw[row]
        if end_col is not None:
            line = line[:end_col]
        return line.rstrip(b"\r").decode("utf-8", "surrogatepass")

    def emit_row(self, row: int, end_col: int | None = None) -> bool:
        if row <= self.last_row:
            return False
        text = _cap(self.text(row, end_col))
        if not text.strip():
            return False
        self.out.append(text)
        self.last_row = row
        return True

    def marker(self, row: int) -> None:
        self.out.append(_marker(_indent_of(self.text(row))))

    def closer(self, node: Any, after_row: int) -> None:
        row = node.end_point.row
        if row > after_row and self.text(row).strip() in _CLOSERS:
            self.emit_row(row)

    # -- lead: doc comment and attributes before a declaration ------------

    def lead(self, anchor: Any) -> None:
        comments: list[Any] = []
        attrs: list[Any] = []
        row = anchor.start_point.row
        prev = anchor.prev_sibling
        while prev is not None and prev.end_point.row >= row - 1 and prev.end_point.row <= row:
            if prev.type in self.spec.prefix:
                attrs.append(prev)
            elif prev.type in self.spec.comments:
                comments.append(prev)
            else:
                break
            row = prev.start_point.row
            prev = prev.prev_sibling
        # the first wordy line of the comment group, then the attribute lines
        for node in reversed(comments):
            done = False
            for r in range(node.start_point.row, node.end_point.row + 1):
                wordy = r < len(self.raw) and _WORDY.search(self.text(r))
                if wordy and r > self.last_row and self.emit_row(r):
                    done = True
                    break
            if done:
                break
        for node in reversed(attrs):
            for r in range(node.start_point.row, node.end_point.row + 1):
                self.emit_row(r)

    # -- declarations -------------------------------------------------------

    def header(self, node: Any, body: Any) -> int:
        """Emit lines from the node's first row up to the body's opening brace."""
        start: int = node.start_point.row
        brow: int = body.start_point.row
        for r in range(start, brow):
            self.emit_row(r)
        bcol: int = body.start_point.column
        opening = self.raw[brow][bcol : bcol + 1]
        self.emit_row(brow, bcol + 1 if opening in (b"{", b"(") else bcol)
        return brow

    def whole(self, node: Any) -> None:
        start, end = node.start_point.row, node.end_point.row
        if end - start + 1 <= _MAX_WHOLE:
            for r in range(start, end + 1):
                self.emit_row(r)
        else:
            self.emit_row(start)
            self.marker(start)
            self.closer(node, start)

    def function(self, node: Any, body: Any | None) -> None:
        if body is None or body.type not in _BLOCKS or body.end_point.row == body.start_point.row:
            # no body, an expression body (`x => x + 1`), or a one-line body
            self.whole(node)
            return
        brow = self.header(node, body)
        self.marker(node.start_point.row)
        self.closer(node, brow)

    def container(self, node: Any) -> None:
        body = node.child_by_field_name("body")
        if body is None or body.start_point.row == body.end_point.row:
            self.whole(node)
            return
        brow = self.header(node, body)
        self.members(body.named_children)
        self.closer(node, max(brow, self.last_row - 1))

    def variable(self, node: Any) -> bool:
        """`const f = (..) => {..}` / `= function` / `= class`: outline the value."""
        for decl in node.named_children:
            if decl.type != "variable_declarator":
                continue
            value = decl.child_by_field_name("value")
            if value is None:
                continue
            if value.type in (
                "arrow_function",
                "function_expression",
                "function",
                "generator_function",
            ):
                body = value.child_by_field_name("body")
                self.function(node, body)
                return True
            if value.type == "class":
                body = value.child_by_field_name("body")
                if body is not None:
                    brow = self.header(node, body)
                    self.members(body.named_children)
                    self.closer(node, brow)
                    return True
        return False

    def decl(self, node: Any, anchor: Any) -> None:
        spec = self.spec
        kind = node.type
        if kind in spec.wrappers:
            for child in node.named_children:
                self.decl(child, anchor)
            return
        if kind in spec.bodies:
            self.members(node.named_children)
            return
        if kind in spec.funcs:
            self.lead(anchor)
            self.function(node, node.child_by_field_name("body"))
        elif kind in spec.containers:
            self.lead(anchor)
            self.container(node)
        elif kind in spec.whole:
            self.lead(anchor)
            self.whole(node)
        elif kind in spec.variables and node.parent is not None and _top_or_export(node):
            saved = (len(self.out), self.last_row)
            self.lead(anchor)
            if not self.variable(node):
                del self.out[saved[0] :]
                self.last_row = saved[1]

    def members(self, nodes: Iterable[Any]) -> None:
        for child in nodes:
            self.decl(child, child)


def _top_or_export(node: Any) -> bool:
    parent = node.parent
    while parent is not None and parent.type in ("export_statement",):
        parent = parent.parent
    return parent is not None and parent.type in ("program", "statement_block", "class_body")


def _ts_outline(lang: str, body: str) -> list[str] | None:
    parser = _parser(lang)
    if parser is None:
        return None
    source = body.encode("utf-8", "surrogatepass")
    tree = parser.parse(source)
    o = _TsOutliner(_SPECS[lang], source)
    o.members(tree.root_node.named_children)
    return o.out
