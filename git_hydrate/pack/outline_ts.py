"""Outlines of JavaScript, TypeScript/TSX, Go, Rust, Java, C, C++, Ruby, Kotlin, C#,
PHP, Swift, Scala, Lua, Bash, Julia, OCaml, Haskell and Elixir, with tree-sitter
(each language's node kinds: :mod:`.outline_specs`).

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
_DOCS = frozenset({"doc", "moduledoc", "typedoc"})  # Elixir's documentation attributes
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
        self.blocks = _BLOCKS | spec.blocks
        self.calls = dict(spec.calls)
        self.names: set[tuple[int, bytes]] = set()  # (parent, name) shown (:meth:`shown`)
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
        found = None
        for field in self.spec.body_fields:
            found = found or node.child_by_field_name(field)
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
        if body is None and self.spec.signature and self.signed(node):
            return
        # a body on one line is kept whole; in Ruby (no braces) a body on one line
        # after the header's is elided
        one_row: Any = node if not self.spec.braces else body
        if (
            body is None
            or body.type not in self.blocks
            or one_row.end_point.row == one_row.start_point.row
        ):
            # no body, an expression body (`x => x + 1`), or a one-line body
            self.whole(node)
            return
        brow = self.header(node, body)
        self.marker(node.start_point.row)
        self.closer(node, brow)

    def assigned(self, node: Any) -> bool:
        """`M.f = function (..) .. end` (Lua): outline the function."""
        value = node
        while value.type in self.spec.assigned and value.named_children:
            value = value.named_children[-1]
        if value.type not in self.spec.lambdas:
            return False
        self.function(node, value.child_by_field_name("body"))
        return True

    def signed(self, node: Any) -> bool:
        """A function whose statements follow its signature, no body node around
        them (Julia): the signature's lines, a marker, the last line."""
        sig = next((c for c in node.named_children if c.type == self.spec.signature), None)
        if sig is None or _last_row(node) <= sig.end_point.row:
            return False
        for r in range(node.start_point.row, sig.end_point.row + 1):
            self.emit_row(r)
        self.marker(node.start_point.row)
        self.closer(node, sig.end_point.row)
        return True

    def declaring_call(self, node: Any) -> bool:
        """Elixir's declarations are calls: `defmodule X do` (its do block outlined),
        `def f(x) do` (the block elided), `defstruct`, `use`, `@spec` (kept); a
        `@doc` heredoc gives its first line of text."""
        call = node.child_by_field_name("operand") if node.type == "unary_operator" else node
        target = call.child_by_field_name("target") if call is not None else None
        if call is None or call.type != "call" or target is None or target.type != "identifier":
            return False
        name = target.text.decode("utf-8", "replace")
        role = self.calls.get(name)
        if call is not node:  # a module attribute
            if name in _DOCS:
                return self.doc(node)
            if role != "head":
                return False
            self.whole(node)
            return True
        block = next((c for c in call.named_children if c.type == "do_block"), None)
        if role is None:
            return False
        if role == "head" or block is None or _last_row(node) == node.start_point.row:
            self.whole(node, most=1 if role == "head" else _MAX_WHOLE)
            return True
        brow: int = block.start_point.row
        for r in range(node.start_point.row, brow + 1):
            self.emit_row(r)
        if role == "func":
            self.marker(node.start_point.row)
        else:
            self.members(block.named_children)
        self.closer(node, max(brow, self.last_row - 1))
        return True

    def shown(self, node: Any) -> bool:
        """Whether a sibling of the node declaring its name was shown (Haskell: a
        function's signature, its first equation), recording the node's."""
        name = node.child_by_field_name("name")
        if name is None or node.parent is None:
            return False
        key = (node.parent.id, name.text)
        seen = key in self.names
        self.names.add(key)
        return seen

    def doc(self, node: Any) -> bool:
        start, end = node.start_point.row, _last_row(node)
        if start == end:  # `@doc false` says nothing
            return not self.text(start).rstrip().endswith("false") and self.emit_row(start)
        return any(self.wordy(r) and self.emit_row(r) for r in range(start + 1, end + 1))

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
            if kind in spec.head_wrappers:
                self.closer(node, row)
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
            if spec.once:
                self.shown(node)
            self.lead(anchor)
            self.whole(node)
        elif kind in spec.heads:
            if spec.once and self.shown(node):
                return
            self.lead(anchor)
            self.whole(node, most=1)
        elif kind in spec.variables and node.parent is not None and _top_or_export(node):
            self.tentative(anchor, self.variable, node)
        elif kind in spec.assigned:
            self.tentative(anchor, self.assigned, node)
        elif self.calls and kind in ("call", "unary_operator"):
            self.tentative(anchor, self.declaring_call, node)
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
