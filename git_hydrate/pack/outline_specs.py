"""What the tree-sitter outliner (:mod:`.outline_ts`) keeps of each language: the
node kinds of its grammar that are functions, containers, declarations kept whole,
wrappers looked through.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CLOSERS", "SPECS", "Spec"]

#: A declaration's last line kept after its members or its marker.
CLOSERS = frozenset({"}", "};", "},", ");", ")"})


@dataclass(frozen=True)
class Spec:
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
    heads: frozenset[str] = frozenset()  # first line kept, a marker for the rest
    head_wrappers: frozenset[str] = frozenset()  # looked through, their first line kept
    body_kinds: frozenset[str] = frozenset()  # the body's kinds, without a 'body' field
    closers: frozenset[str] = CLOSERS  # a declaration's last line kept when it is one
    loose_close: bool = False  # also any short last line opening with '}' (`} name;`)
    braces: bool = True  # a body on one line is kept whole (False: Ruby's `end`)
    # JavaScript/TypeScript: `obj.name = function (..) {..}` is a function, and a
    # test file's describe/it calls are its outline
    scripts: bool = False


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

SPECS: dict[str, Spec] = {
    "javascript": Spec(
        "tree_sitter_javascript",
        "language",
        funcs=_JS_FUNCS,
        containers=frozenset({"class_declaration", "class"}),
        whole=frozenset(),
        wrappers=frozenset({"export_statement", "expression_statement"}),
        bodies=frozenset(),
        variables=_JS_VARS,
        comments=frozenset({"comment"}),
        prefix=frozenset({"decorator"}),
        scripts=True,
    ),
    "typescript": Spec(
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
        scripts=True,
    ),
    "go": Spec(
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
    "rust": Spec(
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
    "java": Spec(
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
SPECS["tsx"] = Spec(**{**SPECS["typescript"].__dict__, "factory": "language_tsx"})

# ------------------------------------------------------- C, C++, Ruby, Kotlin, C#

_C_FUNCS = frozenset({"function_definition"})
# a declaration whose type has a body (`typedef struct {..} jv;`) is outlined
# as a container: its members, then its last line
_C_CONTAINERS = frozenset(
    {
        "struct_specifier",
        "union_specifier",
        "enum_specifier",
        "type_definition",
        "declaration",
        "field_declaration",
    }
)
_C_WRAPPERS = frozenset(
    {"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"}
)
_C_HEADS = frozenset({"preproc_def", "preproc_function_def"})

SPECS["c"] = Spec(
    "tree_sitter_c",
    "language",
    funcs=_C_FUNCS,
    # (extern "C" { ... }: a C header's guard for C++ readers, found inside #ifdef)
    containers=_C_CONTAINERS | {"linkage_specification"},
    whole=frozenset({"enumerator"}),
    wrappers=_C_WRAPPERS,
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    heads=_C_HEADS,
    loose_close=True,
)
SPECS["cpp"] = Spec(
    "tree_sitter_cpp",
    "language",
    funcs=_C_FUNCS,
    containers=_C_CONTAINERS
    | {"class_specifier", "namespace_definition", "linkage_specification"},
    whole=frozenset(
        {
            "enumerator",
            "access_specifier",
            "alias_declaration",
            "friend_declaration",
            "concept_definition",
        }
    ),
    wrappers=_C_WRAPPERS,
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    heads=_C_HEADS,
    head_wrappers=frozenset({"template_declaration"}),
    loose_close=True,
)
SPECS["ruby"] = Spec(
    "tree_sitter_ruby",
    "language",
    funcs=frozenset({"method", "singleton_method"}),
    containers=frozenset({"class", "module", "singleton_class"}),
    whole=frozenset({"identifier"}),  # `private`, `protected`, `public`
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    heads=frozenset({"call", "assignment"}),  # attr_reader, include, CONSTANT = ...
    closers=CLOSERS | {"end"},
    braces=False,
)
SPECS["kotlin"] = Spec(
    "tree_sitter_kotlin",
    "language",
    funcs=frozenset({"function_declaration", "secondary_constructor", "anonymous_initializer"}),
    containers=frozenset({"class_declaration", "object_declaration", "companion_object"}),
    whole=frozenset({"package_header", "type_alias", "enum_entry"}),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"line_comment", "block_comment"}),
    heads=frozenset({"property_declaration"}),
    body_kinds=frozenset({"class_body", "enum_class_body", "function_body", "block"}),
)
SPECS["csharp"] = Spec(
    "tree_sitter_c_sharp",
    "language",
    funcs=frozenset(
        {
            "method_declaration",
            "constructor_declaration",
            "destructor_declaration",
            "operator_declaration",
            "conversion_operator_declaration",
        }
    ),
    containers=frozenset(
        {
            "namespace_declaration",
            "class_declaration",
            "struct_declaration",
            "interface_declaration",
            "record_declaration",
            "enum_declaration",
        }
    ),
    whole=frozenset(
        {
            "property_declaration",
            "field_declaration",
            "event_field_declaration",
            "event_declaration",
            "delegate_declaration",
            "indexer_declaration",
            "enum_member_declaration",
        }
    ),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    head_wrappers=frozenset({"file_scoped_namespace_declaration"}),
)
