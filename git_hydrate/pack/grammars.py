"""What outlines cover, found without importing the outliner: the language of a
path, and which tree-sitter grammars are installed.

Light on purpose: outlines are on by default, the prompt cache's key then
names the installed grammars, and the command line's fast path computes that
key before anything else is imported (:mod:`git_hydrate.quick`); the packer
asks a path's language of every attachment that does not fit, and imports the
outliner only for one it can outline.
"""

from __future__ import annotations

import os
from functools import cache

from .fingerprint import installed_fingerprint

__all__ = ["GRAMMAR_MODULES", "built_in_outlines", "grammars", "language_for"]

#: Each tree-sitter language's grammar package (its import name); the outliner's
#: own table (:mod:`.outline_ts`) names the same packages.
GRAMMAR_MODULES = {  # (not typing.Final: the fast path imports no typing)
    "javascript": "tree_sitter_javascript",
    "typescript": "tree_sitter_typescript",
    "tsx": "tree_sitter_typescript",
    "go": "tree_sitter_go",
    "rust": "tree_sitter_rust",
    "java": "tree_sitter_java",
    "c": "tree_sitter_c",
    "cpp": "tree_sitter_cpp",
    "ruby": "tree_sitter_ruby",
    "kotlin": "tree_sitter_kotlin",
    "csharp": "tree_sitter_c_sharp",
    "php": "tree_sitter_php",
    "swift": "tree_sitter_swift",
    "scala": "tree_sitter_scala",
    "lua": "tree_sitter_lua",
    "bash": "tree_sitter_bash",
    "julia": "tree_sitter_julia",
    "ocaml": "tree_sitter_ocaml",
    "ocaml_interface": "tree_sitter_ocaml",
    "haskell": "tree_sitter_haskell",
    "elixir": "tree_sitter_elixir",
}


@cache
def grammars() -> str:
    """Which tree-sitter grammars this process would use, as a fingerprint (each
    package's location, size and modification time, or its absence), for the
    caches of what outlines produce: installing or upgrading a grammar changes
    outlines, so it changes their keys. Nothing is imported."""
    return installed_fingerprint({"tree_sitter", *GRAMMAR_MODULES.values()})


_EXTENSIONS = {  # (a path's extension, lower-cased: its outline language)
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
    ".c": "c",
    ".h": "c",  # (C++ headers named .h are mostly C as far as declarations go)
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".rb": "ruby",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".cs": "csharp",
    ".php": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".lua": "lua",
    ".sh": "bash",
    ".bash": "bash",
    ".jl": "julia",
    ".ml": "ocaml",
    ".mli": "ocaml_interface",
    ".hs": "haskell",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".proto": "protobuf",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".adoc": "asciidoc",
    ".asciidoc": "asciidoc",
    # manual pages (roff): sections 1 to 9, and ``.man``
    **{f".{section}": "roff" for section in range(1, 10)},
    ".man": "roff",
}


def built_in_outlines() -> list[str]:
    """The outline languages that need no grammar package (Python, Markdown...), sorted."""
    return sorted(set(_EXTENSIONS.values()) - GRAMMAR_MODULES.keys())


def language_for(path: str) -> str | None:
    """The outline language for a path, from its extension; None if unsupported. A
    template's ``.in`` (autoconf, meson: ``htop.1.in``, ``config.h.in``) is looked
    through."""
    stem, extension = os.path.splitext(path)
    if extension.lower() == ".in":
        extension = os.path.splitext(stem)[1]
    return _EXTENSIONS.get(extension.lower())
