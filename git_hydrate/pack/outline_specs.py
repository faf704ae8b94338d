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
    blocks: frozenset[str] = frozenset()  # more kinds of a function's body, elided
    # a function with no body node: its header ends with this child (Julia's signature)
    signature: str = ""
    # calls that declare (Elixir's `def`, `defmodule`): the callee's name -> what it is,
    # "func" (a do block elided), "container" (a do block outlined) or "head" (first line)
    calls: tuple[tuple[str, str], ...] = ()
    body_fields: tuple[str, ...] = ("body",)  # the fields a body may be in
    once: bool = False  # a name's first declaration only (Haskell's equations)
    # statements whose value may be a function of a kind in `lambdas`, outlined as
    # one (Lua's `M.f = function (..) .. end`)
    assigned: frozenset[str] = frozenset()
    lambdas: frozenset[str] = frozenset()


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

# ------------- PHP, Swift, Scala, Lua, Bash, Julia, OCaml, Haskell, Elixir

_END = CLOSERS | {"end"}

SPECS["php"] = Spec(
    "tree_sitter_php",
    "language_php",
    funcs=frozenset({"function_definition", "method_declaration"}),
    containers=frozenset(
        {
            "namespace_definition",
            "class_declaration",
            "interface_declaration",
            "trait_declaration",
            "enum_declaration",
        }
    ),
    whole=frozenset({"const_declaration", "property_declaration", "use_declaration", "enum_case"}),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    prefix=frozenset({"attribute_list"}),
)
SPECS["swift"] = Spec(
    "tree_sitter_swift",
    "language",
    funcs=frozenset(
        {
            "function_declaration",
            "init_declaration",
            "deinit_declaration",
            "subscript_declaration",
            "property_declaration",
        }
    ),
    containers=frozenset({"class_declaration", "protocol_declaration"}),
    whole=frozenset(
        {
            "typealias_declaration",
            "enum_entry",
            "protocol_function_declaration",
            "protocol_property_declaration",
            "associatedtype_declaration",
        }
    ),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment", "multiline_comment"}),
    # (a computed property: its body elided as a function's)
    blocks=frozenset({"function_body", "computed_property"}),
    body_fields=("body", "computed_value"),
)
SPECS["scala"] = Spec(
    "tree_sitter_scala",
    "language",
    funcs=frozenset({"function_definition"}),
    containers=frozenset(
        {"class_definition", "object_definition", "trait_definition", "enum_definition"}
    ),
    whole=frozenset(
        {"package_clause", "function_declaration", "type_definition", "enum_case_definitions"}
    ),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment", "block_comment"}),
    prefix=frozenset({"annotation"}),
    heads=frozenset({"val_definition", "var_definition", "val_declaration", "given_definition"}),
    blocks=frozenset({"indented_block"}),
)
SPECS["lua"] = Spec(
    "tree_sitter_lua",
    "language",
    funcs=frozenset({"function_declaration"}),
    containers=frozenset(),
    whole=frozenset(),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    closers=_END,
    braces=False,
    assigned=frozenset({"variable_declaration", "assignment_statement", "expression_list"}),
    lambdas=frozenset({"function_definition"}),
)
SPECS["bash"] = Spec(
    "tree_sitter_bash",
    "language",
    funcs=frozenset({"function_definition"}),
    containers=frozenset(),
    whole=frozenset(),
    # (a script wrapped whole in `{ ... }` so that it runs only once it is all read)
    wrappers=frozenset({"compound_statement"}),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
)
SPECS["julia"] = Spec(
    "tree_sitter_julia",
    "language",
    funcs=frozenset({"function_definition", "macro_definition"}),
    containers=frozenset(),
    whole=frozenset({"struct_definition", "abstract_definition", "primitive_definition"}),
    # (`@inline function ...`: a macro's argument is looked into)
    wrappers=frozenset({"macrocall_expression", "macro_argument_list"}),
    bodies=frozenset(),
    variables=frozenset(),
    # (a docstring is the string before a definition)
    comments=frozenset({"line_comment", "block_comment", "string_literal"}),
    heads=frozenset({"const_statement", "export_statement"}),
    head_wrappers=frozenset({"module_definition"}),
    closers=_END,
    signature="signature",
)
_OCAML = Spec(
    "tree_sitter_ocaml",
    "language_ocaml",
    funcs=frozenset(),
    containers=frozenset(),
    whole=frozenset(
        {
            "value_specification",
            "type_definition",
            "exception_definition",
            "external",
            "open_module",
            "include_module",
        }
    ),
    wrappers=frozenset({"module_binding"}),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    heads=frozenset({"value_definition", "class_definition", "class_type_definition"}),
    closers=_END,
    head_wrappers=frozenset(
        {"module_definition", "module_type_definition", "structure", "signature"}
    ),
)
SPECS["ocaml"] = _OCAML
SPECS["ocaml_interface"] = Spec(**{**_OCAML.__dict__, "factory": "language_ocaml_interface"})
SPECS["haskell"] = Spec(
    "tree_sitter_haskell",
    "language",
    funcs=frozenset(),
    containers=frozenset({"class"}),
    whole=frozenset(
        {
            "signature",
            "data_type",
            "newtype",
            "type_synonym",
            "type_family",
            "data_family",
            "deriving_instance",
            "foreign_import",
            "pattern_synonym",
        }
    ),
    wrappers=frozenset({"declarations"}),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment", "haddock"}),
    # (an instance's methods are its class's: its first line)
    heads=frozenset({"header", "function", "bind", "instance"}),
    body_kinds=frozenset({"class_declarations"}),
    once=True,
)
SPECS["elixir"] = Spec(
    "tree_sitter_elixir",
    "language",
    funcs=frozenset(),
    containers=frozenset(),
    whole=frozenset(),
    wrappers=frozenset(),
    bodies=frozenset(),
    variables=frozenset(),
    comments=frozenset({"comment"}),
    closers=_END,
    braces=False,
    calls=(
        *((name, "container") for name in ("defmodule", "defprotocol", "defimpl", "describe")),
        *(
            (name, "func")
            for name in (
                "def",
                "defp",
                "defmacro",
                "defmacrop",
                "defguard",
                "defguardp",
                "defn",
                "defnp",
                "test",
                "setup",
            )
        ),
        *(
            (name, "head")
            for name in (
                "defstruct",
                "defexception",
                "defdelegate",
                "defoverridable",
                "use",
                "spec",
                "type",
                "typep",
                "opaque",
                "callback",
                "macrocallback",
                "behaviour",
                "impl",
            )
        ),
    ),
)
