"""Outlines of JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++, Ruby, Kotlin and
C#, with tree-sitter (each language's node kinds: :mod:`.outline_specs`).

Each language is outlined when its grammar package (the ``outline`` extra) is
installed; without it :func:`ts_outline` returns ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from .outline_lines import cap, indent_of, marker
from .outline_specs import SPECS as _SPECS
from .outline_specs import Spec as _Spec

__all__ = ["parser_for", "ts_outline"]

_WORDY = re.compile(r"\w")

# ================================================================ tree-sitter

_MAX_WHOLE = 25  # longer 'whole' declarations keep first line, marker, last line
_MAX_DEPTH = 48  # declarations nested deeper keep their first line (no RecursionError)
_BLOCKS = frozenset(
    {"statement_block", "block", "constructor_body", "compound_statement", "body_statement"}
)
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
# mocha, jest, vitest, node:test: a group's calls (its tests) are outlined
_TEST_GROUPS = frozenset({"describe", "context", "suite"})


def _last_row(node: Any) -> int:
    """The node's last row: not the next one when it ends with its newline (C's
    preprocessor lines)."""
    end = node.end_point
    row: int = end.row
    return row - 1 if end.column == 0 and row > node.start_point.row else row


def _decode(line: bytes) -> str:
    return line.rstrip(b"\r").decode("utf-8", "surrogatepass")


@cache
def parser_for(lang: str) -> Any | None:
    """A tree-sitter parser of ``lang``, or ``None`` when its grammar is not installed."""
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
        self.depth = 0  # declarations being outlined, one inside the other
        self.rows: dict[int, str] = {}  # the rows decoded (:meth:`text`)
        self.wordy_rows: dict[int, bool] = {}  # the rows with a word (:meth:`lead`)

    def text(self, row: int, end_col: int | None = None) -> str:
        if end_col is not None:
            return _decode(self.raw[row][:end_col])
        # (each row decoded once: minified code's one line leads every declaration
        # on it, and a tentative one's lead is taken back and shown again)
        line = self.rows.get(row)
        if line is None:
            line = self.rows[row] = _decode(self.raw[row])
        return line

    def wordy(self, row: int) -> bool:
        found = self.wordy_rows.get(row)
        if found is None:
            found = row < len(self.raw) and _WORDY.search(self.text(row)) is not None
            self.wordy_rows[row] = found
        return found

    def emit_row(self, row: int, end_col: int | None = None) -> bool:
        if row <= self.last_row:
            return False
        text = cap(self.text(row, end_col))
        if not text.strip():
            return False
        self.out.append(text)
        self.last_row = row
        return True

    def marker(self, row: int) -> None:
        self.out.append(marker(indent_of(self.text(row))))

    def closer(self, node: Any, after_row: int) -> None:
        row = _last_row(node)
        if row <= after_row:
            return
        last = self.text(row).strip()
        loose = self.spec.loose_close and last.startswith("}") and len(last) <= 80
        if last in self.spec.closers or loose:
            self.emit_row(row)

    def body(self, node: Any) -> Any | None:
        """The node's body: its 'body' field, or its first child of a body kind
        (Kotlin's `function_body` looked into for its block)."""
        found = node.child_by_field_name("body")
        if found is None and self.spec.body_kinds:
            found = next((c for c in node.named_children if c.type in self.spec.body_kinds), None)
            if found is not None and found.type == "function_body":
                inner = found.named_children
                found = inner[0] if len(inner) == 1 and inner[0].type == "block" else found
        return found

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
                if r > self.last_row and self.wordy(r) and self.emit_row(r):
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

    def whole(self, node: Any, most: int = _MAX_WHOLE) -> None:
        start, end = node.start_point.row, _last_row(node)
        if end - start + 1 <= most:
            for r in range(start, end + 1):
                self.emit_row(r)
        else:
            self.emit_row(start)
            self.marker(start)
            self.closer(node, start)

    def function(self, node: Any, body: Any | None) -> None:
        # a body on one line is kept whole; in Ruby (no braces) a body on one line
        # after the header's is elided
        one_row: Any = node if not self.spec.braces else body
        if (
            body is None
            or body.type not in _BLOCKS
            or one_row.end_point.row == one_row.start_point.row
        ):
            # no body, an expression body (`x => x + 1`), or a one-line body
            self.whole(node)
            return
        brow = self.header(node, body)
        self.marker(node.start_point.row)
        self.closer(node, brow)

    def container(self, node: Any) -> None:
        body = self.body(node)
        kind = node.child_by_field_name("type")  # C: `typedef struct {..} name;`
        if body is None and kind is not None and kind.type in self.spec.containers:
            body = kind.child_by_field_name("body")
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
            if value.type in _FUNCTION_VALUES:
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

    def assignment(self, node: Any) -> bool:
        """`obj.name = function (..) {..}` (CommonJS, prototypes; `a = b = function`
        too): outline the function."""
        value = node.child_by_field_name("right")
        while value is not None and value.type == "assignment_expression":
            value = value.child_by_field_name("right")
        if value is None or value.type not in _FUNCTION_VALUES:
            return False
        self.function(node, value.child_by_field_name("body"))
        return True

    def call(self, node: Any) -> bool:
        """A named call whose last argument is a function (`it('..', () => {..})`,
        `defineGetter(req, 'fresh', function () {..})`): its first line, the
        function's body elided; a test group's (`describe`) calls outlined."""
        name = _callee(node)
        args = node.child_by_field_name("arguments")
        last = args.named_children[-1] if args is not None and args.named_children else None
        if name is None or last is None or last.type not in _FUNCTION_VALUES:
            return False
        body = last.child_by_field_name("body")
        if name not in _TEST_GROUPS or body is None or body.type not in _BLOCKS:
            self.function(node, body)
            return True
        self.header(node, body)
        self.members(body.named_children)
        return True

    def tentative(self, anchor: Any, outline: Any, node: Any) -> None:
        """The doc comment and ``outline(node)``, or nothing when it outlines nothing."""
        saved = (len(self.out), self.last_row)
        self.lead(anchor)
        if not outline(node):
            del self.out[saved[0] :]
            self.last_row = saved[1]

    def decl(self, node: Any, anchor: Any) -> None:
        self.depth += 1
        try:
            if self.depth <= _MAX_DEPTH:
                self.declaration(node, anchor)
            elif node.type in self.spec.funcs | self.spec.containers | self.spec.whole:
                self.whole(node, most=1)
        finally:
            self.depth -= 1

    def declaration(self, node: Any, anchor: Any) -> None:
        spec = self.spec
        kind = node.type
        if kind in spec.wrappers or kind in spec.head_wrappers:
            if kind in spec.head_wrappers:
                self.lead(anchor)
                self.emit_row(node.start_point.row)
            row = node.start_point.row
            for child in node.named_children:
                # a child on the wrapper's first line shares its doc comment
                self.decl(child, anchor if child.start_point.row == row else child)
            return
        if kind in spec.bodies:
            self.members(node.named_children)
            return
        if kind in spec.funcs:
            self.lead(anchor)
            self.function(node, self.body(node))
        elif kind in spec.containers:
            self.lead(anchor)
            self.container(node)
        elif kind in spec.whole:
            self.lead(anchor)
            self.whole(node)
        elif kind in spec.heads:
            self.lead(anchor)
            self.whole(node, most=1)
        elif kind in spec.variables and node.parent is not None and _top_or_export(node):
            self.tentative(anchor, self.variable, node)
        elif spec.scripts and kind == "assignment_expression":
            self.tentative(anchor, self.assignment, node)
        elif spec.scripts and kind == "call_expression":
            self.tentative(anchor, self.call, node)

    def members(self, nodes: Iterable[Any]) -> None:
        for child in nodes:
            self.decl(child, child)


def _top_or_export(node: Any) -> bool:
    parent = node.parent
    while parent is not None and parent.type in ("export_statement",):
        parent = parent.parent
    return parent is not None and parent.type in ("program", "statement_block", "class_body")


def _callee(call: Any) -> str | None:
    """The name a call starts from: `it`, `it.skip`, `test.each([..])` all give theirs."""
    node = call.child_by_field_name("function")
    for _ in range(8):  # (`describe.skip.each([..])(..)`: a few steps at most)
        if node is None:
            return None
        if node.type == "identifier":
            return str(node.text.decode("utf-8", "replace"))
        field = "function" if node.type == "call_expression" else "object"
        node = node.child_by_field_name(field)
    return None


def ts_outline(lang: str, body: str) -> list[str] | None:
    parser = parser_for(lang)
    if parser is None:
        return None
    source = body.encode("utf-8", "surrogatepass")
    tree = parser.parse(source)
    o = _TsOutliner(_SPECS[lang], source)
    o.members(tree.root_node.named_children)
    if sum(len(line) + 1 for line in o.out) < len(body):
        return o.out
    # never larger than the file: a short one's own lines (its markers would not pay)
    return [cap(line) for line in body.split("\n") if line.strip()]
