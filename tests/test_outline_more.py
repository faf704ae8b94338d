"""Outlines of PHP, Swift, Scala, Lua, Bash, Julia, OCaml, Haskell and Elixir
(tree-sitter, the ``outline`` extra); the samples' goldens are in test_outline.py's
``test_golden``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.pack import outline as ol
from tests.conftest import examples
from tests.test_outline import _outline_of, has_grammar, unsupported_lines


def test_languages_of_the_third_grammars() -> None:
    expected = {
        "a.php": "php",
        "A.swift": "swift",
        "a.scala": "scala",
        "build.sc": "scala",
        "init.lua": "lua",
        "install.sh": "bash",
        "a.bash": "bash",
        "src/HTTP.jl": "julia",
        "lwt.ml": "ocaml",
        "lwt.mli": "ocaml_interface",
        "Data/Aeson.hs": "haskell",
        "lib/plug/conn.ex": "elixir",
        "test/conn_test.exs": "elixir",
    }
    assert {path: ol.language_for(path) for path in expected} == expected
    from git_hydrate.pack import grammars

    for name in ("tree_sitter_php", "tree_sitter_ocaml", "tree_sitter_elixir"):
        assert f";{name}=" in grammars.grammars()  # in the prompt cache's key


def test_php_swift_scala_headers() -> None:
    php = _outline_of("sample.php").splitlines()
    assert "final class Circle implements Shape" in php and "#[Immutable]" in php
    assert "    public function __construct(float $radius)" in php
    assert "    public const UNIT = 1.0;" in php and "    case Red = 'red';" in php
    assert not any("secret_radius" in line or "M_PI" in line for line in php)
    swift = _outline_of("sample.swift").splitlines()
    i = swift.index("    public var name: String {")  # a computed property: its body elided
    assert swift[i + 1 : i + 3] == ["        ...", "    }"]
    assert "    func scaled(by factor: Double," in swift and "    case green(Double)" in swift
    assert "    associatedtype Unit" in swift and "    @discardableResult" in swift
    assert not any("secret" in line or "Double.pi" in line for line in swift)
    scala = _outline_of("sample.scala").splitlines()
    assert "case class Circle(radius: Double) extends Shape {" in scala
    assert "  def area: Double = {" in scala and "  type Radius = Double" in scala
    assert not any("secret" in line for line in scala)


def test_lua_bash_julia_headers() -> None:
    lua = _outline_of("sample.lua").splitlines()
    assert lua[lua.index("function M.new(radius)") + 1 :][:2] == ["    ...", "end"]
    assert "local function area(radius)" in lua and "--- A circle's area." in lua
    assert lua[lua.index("M.perimeter = function(circle)") + 1 :] == ["    ...", "end"]
    assert not any("secret" in line for line in lua)
    sh = _outline_of("sample.sh").splitlines()
    assert "circle_area() {" in sh and "function unit_circle {" in sh
    assert "  shapes_main() {" in sh  # inside the script's `{ ... }`
    assert not any("secret" in line for line in sh)
    jl = _outline_of("sample.jl").splitlines()
    i = jl.index("@inline function scaled(c::Circle,")  # the whole signature, no body
    assert jl[i + 1 : i + 4] == ["                        factor::Real)", "    ...", "end"]
    assert "module Shapes" in jl and "struct Circle" in jl and "macro unit()" in jl
    assert "    area(c::Circle)" in jl  # the docstring's first line
    assert not any("secret" in line for line in jl)


def test_ocaml_haskell_elixir_headers() -> None:
    ml = _outline_of("sample.ml").splitlines()
    assert "module Registry = struct" in ml and "  let add shape =" in ml and "end" in ml
    assert "module type PRINTER = sig" in ml and "  val print : shape -> unit" in ml
    assert "let rec total shapes =" in ml and "exception Invalid of string" in ml
    assert not any("secret_head" in line or "Float.pi" in line for line in ml)
    mli = _outline_of("sample.mli").splitlines()
    assert mli[mli.index("val total :") + 1] == "  shape list -> float"
    hs = _outline_of("sample.hs").splitlines()
    assert "area :: Shape -> Double" in hs and "  areaOf :: a -> Double" in hs
    # a function's equations stand behind its signature; an instance is its first line
    assert not any(line.startswith("area (") or "areaOf _" in line for line in hs)
    assert "instance HasArea Shape where" in hs and "unit = Circle 1" in hs
    assert not any("secret" in line for line in hs)
    ex = _outline_of("sample.ex").splitlines()
    assert "  def new(radius) when radius >= 0 do" in ex and "  @spec new(float) :: t" in ex
    assert "  A circle." in ex and "  Its area." in ex  # a @doc heredoc's first line
    assert "  defmodule Error do" in ex and "  defp secret_helper(x) do" in ex
    assert not any("@doc false" in line or "secret_square" in line for line in ex)
    test = _outline_of("sample_test.exs").splitlines()
    assert '  describe "area/1" do' in test and '    test "of a larger circle" do' in test


def test_erlang_by_its_lines() -> None:
    erl = _outline_of("sample.erl").splitlines()
    i = erl.index("area(#circle{radius=R}) ->")  # the first clause, the rest elided
    assert erl[i - 1 : i + 3] == [
        "-spec area(shape()) -> float().",
        *erl[i : i + 2],
        "-spec total([shape()])",
    ]
    assert erl[i + 1] == "    ..." and "area({square, S}) ->" not in erl
    assert "	%% its name, shown in logs." in erl and "}))." not in erl and "})." in erl
    assert "init([]) -> {ok, #{}}." in erl and "'quoted name'(X) ->" in erl
    assert not any("SecretSquare" in line or "lists:sum" in line for line in erl)
    assert ol.outline("a.erl", "%% nothing but a comment\n") is None
    assert ol.why_no_outline("a.erl").startswith("it has no attribute or function")
    small = "-module(a).\nf() ->\n  ok.\n"
    assert ol.outline("a.erl", small) == small  # never larger than the file


_DEEP = {
    "a.swift": ("class A {\n", "}\n"),
    "a.scala": ("object A {\n", "}\n"),
    "a.ml": ("module A = struct\n", "end\n"),
    "a.jl": ("module A\n", "end\n"),
    "a.ex": ("defmodule A do\n", "end\n"),
    "a.sh": ("{\n", "}\n"),
}


@pytest.mark.parametrize("path", sorted(_DEEP))
def test_deep_nesting_is_outlined_without_recursion_error(path: str) -> None:
    if not has_grammar(path):
        pytest.skip("grammar package not installed")
    opening, closing = _DEEP[path]
    body = opening * 2000 + closing * 2000
    got = ol.outline(path, body)
    assert got is not None and len(got) <= len(body)
    assert unsupported_lines(got, body) == []


_MDOC = """\
.\\" Copyright (c) 2007 Nicholas Marriott
.Dd $Mdocdate$
.Dt TMUX 1
.Sh NAME
.Nm tmux
.Nd terminal multiplexer
.Sh DESCRIPTION
The options are as follows:
.Bl -tag -width "XXXXXXXXXXXX"
.It Fl 2
Force
.Nm
to assume the terminal supports 256 colours.
.It
.It Fl L Ar socket-name
Allow a different socket name to be specified.
.El
.Ss Key bindings
Each key is bound to a command.
"""


def test_manual_pages_are_outlined_by_their_sections_and_items() -> None:
    """A manual page (man or mdoc macros, perhaps a `.in` template) is its title,
    sections and items: htop.1.in (24 KiB, no outline) took 24 of a 32 KiB prompt
    whole; its outline is 2.9 KB."""
    assert ol.language_for("htop.1.in") == "roff" == ol.language_for("doc/fd.1")
    assert ol.language_for("tmux.1") == "roff" == ol.language_for("git.man")
    assert ol.language_for("config.h.in") == "c" and ol.language_for("Makefile.in") is None
    got = (ol.outline("tmux.1", _MDOC) or "").splitlines()
    assert got == [
        "...",
        ".Dt TMUX 1",
        ".Sh NAME",
        "...",
        ".Sh DESCRIPTION",
        "...",
        ".It Fl 2",
        "...",
        ".It Fl L Ar socket-name",
        "...",
        ".Ss Key bindings",
        "...",
    ]
    assert not unsupported_lines("\n".join(got), _MDOC)
    assert ol.outline("notes.7", "plain text, no macro\n") is None
    assert "no headings" in ol.why_no_outline("notes.7")


_ROFF_LINES = [
    '.TH "X" "1"',
    ".SH NAME",
    ".TP",
    ".TP 8",
    '.\\" c',
    ".B \\-x",
    ".IP",
    '.IP "t" 4',
    ".It Fl x",
    ".Ss S",
    "text",
    ".",
    "",
]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.sampled_from(_ROFF_LINES), max_size=40))
def test_manual_page_outlines_come_from_the_body(lines: list[str]) -> None:
    body = "\n".join(lines) + "\n"
    got = ol.outline("gen.1", body) or ""
    assert unsupported_lines(got, body) == []
    assert (ol.outline("gen.1", body) or "") == got


_FUZZ_LINES = {
    "gen.erl": [
        "-module(m).",
        "-record(r, {",
        "\ta = 1,",
        "}).",
        "-spec f(x) ->",
        "\tok.",
        "f(X) ->",
        "f(Y) -> ok.",
        "'q'(X) -> X.",
        "\tX + 1.",
        "%% c.",
        "",
    ],
    "gen.ex": [
        "defmodule M do",
        "def f(x) do",
        "def g(x), do: x",
        '@doc """',
        '"""',
        "@doc false",
        "@spec f(t) :: t",
        "  x + 1",
        "end",
        'describe "x" do',
        "# c",
        "",
    ],
    "gen.ml": [
        "module M = struct",
        "module type S = sig",
        "val f : int -> int",
        "let f x =",
        "  x + 1",
        "type t = A | B",
        "end",
        "(* c *)",
        "",
    ],
    "gen.hs": [
        "module M where",
        "f :: Int -> Int",
        "f 0 = 1",
        "f n = n",
        "class C a where",
        "instance C Int where",
        "  g = 1",
        "data T = A | B",
        "-- | d",
        "",
    ],
    "gen.jl": [
        "module M",
        "function f(x)",
        "    x + 1",
        "end",
        '"""',
        "@inline function g(",
        "    y)",
        "struct S",
        "const C = 1",
        "",
    ],
    "gen.swift": [
        "class C {",
        "var x: Int {",
        "func f() {",
        "  return 1",
        "}",
        "init() {}",
        "/// d",
        "",
    ],
}


@settings(max_examples=examples(100), deadline=None)
@given(
    st.sampled_from(sorted(_FUZZ_LINES)).flatmap(
        lambda path: st.tuples(
            st.just(path), st.lists(st.sampled_from(_FUZZ_LINES[path]), max_size=40)
        )
    )
)
def test_outlines_of_the_third_grammars_come_from_the_body(case: tuple[str, list[str]]) -> None:
    path, lines = case
    if not has_grammar(path):
        return
    body = "\n".join(lines) + "\n"
    got = ol.outline(path, body)
    assert got is not None or path.endswith(".erl")  # (Erlang: None without a form)
    got = got or ""
    assert unsupported_lines(got, body) == []
    assert len(got) <= len(body)  # never larger than the file
    assert (ol.outline(path, body) or "") == got
