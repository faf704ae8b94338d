"""Outlines of JavaScript, TypeScript/TSX, Go, Rust and Java, with tree-sitter.

Each language is outlined when its grammar package (the ``outline`` extra) is
installed; without it :func:`ts_outline` returns ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .outline_lines import cap, indent_of, marker

__all__ = ["parser_for", "ts_outline"]

_WORDY = re.compile(r"\w")

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

    def text(self, row: int, end_col: int | None = None) -> str:
        line = self.raw[row]
        if end_col is not None:
            line = line[:end_col]
        return line.rstrip(b"\r").decode("utf-8", "surrogatepass")

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


def ts_outline(lang: str, body: str) -> list[str] | None:
    parser = parser_for(lang)
    if parser is None:
        return None
    source = body.encode("utf-8", "surrogatepass")
    tree = parser.parse(source)
    o = _TsOutliner(_SPECS[lang], source)
    o.members(tree.root_node.named_children)
    return o.out
