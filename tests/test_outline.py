"""Outlines: golden samples per language, and 'never text the body lacks'.

The samples in tests/outline_samples/ are pinned with their outlines; the
tree-sitter ones need the optional extra git-hydrate[outline] (the test extra
installs it) and are skipped without it.
"""

from __future__ import annotations

import bisect
import glob
import os
import re
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.pack import outline as ol
from git_hydrate.pack import outline_ts
from tests.conftest import examples

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "outline_samples")
_SPLIT = re.compile(r"\r\n|\r|\n")


def unsupported_lines(text: str, body: str) -> list[str]:
    """Outline lines that are neither markers nor a body line (or a prefix of one)."""
    candidates = sorted(set(_SPLIT.split(body)) | {row.rstrip("\r") for row in body.split("\n")})
    bad = []
    for line in text.splitlines():
        if ol.is_marker(line):
            continue
        i = bisect.bisect_left(candidates, line)
        if i == len(candidates) or not candidates[i].startswith(line):
            bad.append(line)
    return bad


def sample_files() -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(SAMPLES, "*")) if not p.endswith(".outline"))


def has_grammar(path: str) -> bool:
    """False only for a tree-sitter language whose grammar is not installed (a path
    of no known language is not skipped: its test fails)."""
    lang = ol.language_for(path)
    return (
        lang in (None, "python", "markdown", "rst", "roff", "asciidoc", "erlang", "protobuf")
        or outline_ts.parser_for(lang) is not None
    )


# ------------------------------------------------------------------ golden


@pytest.mark.parametrize("path", sample_files(), ids=os.path.basename)
def test_golden(path: str) -> None:
    if not has_grammar(path):
        pytest.skip("grammar package not installed")
    with open(path, encoding="utf-8") as f:
        body = f.read()
    with open(path + ".outline", encoding="utf-8") as f:
        expected = f.read()
    got = ol.outline(path, body)
    assert got == expected
    assert unsupported_lines(got, body) == []
    assert ol.outline(path, body) == got  # deterministic


def _outline_of(name: str) -> str:
    path = os.path.join(SAMPLES, name)
    if not has_grammar(path):
        pytest.skip("grammar package not installed")
    with open(path, encoding="utf-8") as f:
        got = ol.outline(path, f.read())
    assert got is not None
    return got


def test_python_shape() -> None:
    got = _outline_of("sample.py").splitlines()
    assert got[0] == '"""Sample module for outlines.'
    assert "MAX_SIZE = 1024" in got
    assert "lower_name = 5" not in got  # not an UPPER_CASE constant
    assert "@dataclass(frozen=True)" in got
    assert "class Point(Base, metaclass=Meta):" in got
    # multi-line signature, kept line by line through the closing ':'
    i = got.index("    async def fetch(")
    assert got[i - 1] == "    @staticmethod"
    assert got[i + 1 : i + 5] == [
        "        url: str,",
        "        *,",
        "        timeout: float = 1.0,  # seconds",
        "    ) -> bytes:",
    ]
    # trailing comment after the header's ':' is cut off (a line prefix)
    assert "def top(sep=':', d={\"a\": (1, 2)}) -> dict[str, int]:" in got
    assert not any("nested" in line for line in got)  # inner defs elided
    assert '        """Euclidean norm.' in got  # docstring first line only
    assert not any("Longer." in line for line in got)


def test_typescript_and_tsx_use_their_own_grammar() -> None:
    ts = _outline_of("sample.ts")
    assert "export interface Options {" in ts
    assert "  @log()" in ts
    tsx = _outline_of("sample.tsx")
    assert "export function Hello({ name }: Props) {" in tsx


_COMMONJS = """\
/**
 * Send a response.
 */
res.send = function send(body) {
  var chunk = body;
  return this;
};

module.exports = function createApplication() {
  return app;
};

exports.short = (x) => x + 1;
res.status = 200;

req.get =
req.header = function header(name) {
  return name;
};

defineGetter(req, 'fresh', function(){
  return false;
});
(function () {
  hidden();
})();
"""

_MOCHA = """\
var assert = require('assert');

describe('res', function(){
  describe('.send()', function(){
    beforeEach(function(){
      setup();
    })

    it('should set Content-Length', function(done){
      request(app).get('/').expect(200, done);
    })

    it.skip('should not set it with Transfer-Encoding', async () => {
      await check();
    })
  })
})

test.each([1, 2])('adds %i', (n) => {
  expect(n).toBe(n);
});
"""


@pytest.mark.parametrize("name", ["lib/response.js", "lib/response.ts"])
def test_javascript_functions_assigned_to_a_name_are_outlined(name: str) -> None:
    """CommonJS (express: `res.send = function send(body) {`) defines its API by
    assignment; the outline of lib/response.js held only its two helpers."""
    if outline_ts.parser_for(ol.language_for(name) or "") is None:
        pytest.skip("grammar not installed")
    got = (ol.outline(name, _COMMONJS) or "").splitlines()
    assert got == [
        " * Send a response.",
        "res.send = function send(body) {",
        "    ...",
        "};",
        "module.exports = function createApplication() {",
        "    ...",
        "};",
        "exports.short = (x) => x + 1;",
        "req.get =",
        "req.header = function header(name) {",
        "    ...",
        "};",
        "defineGetter(req, 'fresh', function(){",
        "    ...",
    ]


@pytest.mark.parametrize("name", ["test/res.send.js", "src/res.test.ts"])
def test_javascript_test_suites_are_outlined_by_their_calls(name: str) -> None:
    """A mocha, jest or vitest file is its describe/it calls: the outline of
    express's test/res.send.js was empty, so a named test was left out whole."""
    if outline_ts.parser_for(ol.language_for(name) or "") is None:
        pytest.skip("grammar not installed")
    got = (ol.outline(name, _MOCHA) or "").splitlines()
    assert got == [
        "describe('res', function(){",
        "  describe('.send()', function(){",
        "    beforeEach(function(){",
        "        ...",
        "    it('should set Content-Length', function(done){",
        "        ...",
        "    it.skip('should not set it with Transfer-Encoding', async () => {",
        "        ...",
        "test.each([1, 2])('adds %i', (n) => {",
        "    ...",
    ]
    assert not unsupported_lines("\n".join(got), _MOCHA)


def test_go_rust_java_headers() -> None:
    go = _outline_of("sample.go")
    assert "func (c *Circle) Area() float64 {" in go
    assert "return math.Pi" not in go
    rs = _outline_of("sample.rs")
    assert "#[derive(Debug, Clone)]" in rs and "impl<T: Clone> Area for Wrapper<T>" in rs
    assert "0.0" not in rs
    java = _outline_of("Sample.java")
    assert "            int n) throws IllegalArgumentException {" in java
    assert "count++;" not in java


GUARDED_HEADER = """\
#ifndef JV_H
#define JV_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct { int kind; } jv;

jv jv_null(void);
static inline int jv_is_valid(jv x) {
  return x.kind != 0;
}

#ifdef __cplusplus
}
#endif

#endif
"""


@pytest.mark.parametrize("path", ["src/jv.h", "src/jv.c", "src/jv.hpp"])
def test_a_c_header_guarded_for_cpp_readers_keeps_its_declarations(path: str) -> None:
    """``#ifdef __cplusplus extern "C" { #endif``, the C library header's idiom
    (jq's jv.h, jq.h): the outline was its include guard's one line (explorer9)."""
    if not has_grammar(path):
        pytest.skip("grammar package not installed")
    got = ol.outline(path, GUARDED_HEADER)
    assert got is not None
    lines = got.splitlines()
    assert "typedef struct { int kind; } jv;" in lines and "jv jv_null(void);" in lines
    assert "static inline int jv_is_valid(jv x) {" in lines
    assert "  return x.kind != 0;" not in lines


def test_c_cpp_ruby_kotlin_csharp_headers() -> None:
    c = _outline_of("sample.c").splitlines()
    assert "#define SQUARE(x) ((x) * (x))" in c  # a function-like macro's line
    assert "#define SWAP(a, b) do { \\" in c and "    int t = (a);        \\" not in c
    assert "typedef struct node {" in c and "} node_t;" in c  # members outlined
    assert "typedef int (*compare_fn)(const void *, const void *);" in c
    assert c[c.index("add(int a, int b)") : c.index("add(int a, int b)") + 4] == [
        "add(int a, int b)",
        "{",
        "    ...",
        "}",
    ]
    # inside #ifdef and #else both
    assert "             int flags) {" in c and "void worker_stub(void) {" in c
    assert not any("sum" in line or "secret_stub" in line for line in c)
    cpp = _outline_of("sample.cpp").splitlines()
    assert cpp[cpp.index("template <typename T>") + 1] == "class Box : public Base {"
    assert " public:" in cpp and "  virtual void reset() = 0;" in cpp
    assert "namespace geometry {" in cpp and 'extern "C" {' in cpp
    assert not any("secret_factor" in line or "area = w" in line for line in cpp)
    rb = _outline_of("sample.rb").splitlines()
    i = rb.index("    def initialize(radius)")
    assert rb[i + 1 : i + 3] == ["        ...", "    end"]  # no braces: bodies end with end
    assert "  class Circle < Base" in rb and "    class << self" in rb
    assert "    attr_reader :radius" in rb and '  VERSION = "1.0"' in rb
    assert not any("Math::PI" in line or "@radius =" in line for line in rb)
    kt = _outline_of("Sample.kt").splitlines()
    assert "data class Circle(val radius: Double) : Shape {" in kt
    assert "    override fun area(): Double {" in kt and "    companion object {" in kt
    assert "object Registry {" in kt and "    fun area(): Double" in kt
    assert not any("PI * r" in line or "shapes.add" in line for line in kt)
    cs = _outline_of("Sample.cs").splitlines()
    assert "    public class Circle : IShape" in cs and "    [Serializable]" in cs
    assert "        public double Radius { get; set; }" in cs
    assert "        public double Area()" in cs and "    public enum Color { Red, Green }" in cs
    assert not any("Math.PI" in line or "this.radius =" in line for line in cs)


def test_languages_of_the_new_grammars() -> None:
    expected = {
        "a.c": "c",
        "a.h": "c",  # C++ headers named .h are read as C: the safe choice
        "a.cc": "cpp",
        "A.CPP": "cpp",
        "a.hpp": "cpp",
        "a.hh": "cpp",
        "a.hxx": "cpp",
        "a.cxx": "cpp",
        "a.rb": "ruby",
        "a.kt": "kotlin",
        "b.kts": "kotlin",
        "a.cs": "csharp",
    }
    assert {path: ol.language_for(path) for path in expected} == expected
    from git_hydrate.pack import grammars

    for name in ("tree_sitter_c", "tree_sitter_cpp", "tree_sitter_ruby", "tree_sitter_kotlin"):
        assert f";{name}=" in grammars.grammars()  # in the prompt cache's key


# --------------------------------------------------------------- edge cases


def test_unsupported_and_unparseable() -> None:
    assert ol.outline("README.md", "# hi\n") == "# hi\n"  # Markdown: by its headings
    assert ol.outline("README.md", "no heading at all\n") is None
    assert ol.outline("notes.rst", "plain text\n") is None
    assert ol.outline("notes.txt", "# hi\n") is None
    assert ol.outline("Makefile", "all:\n") is None
    assert ol.outline("x.py", "def broken(:\n") is None
    assert ol.outline("x.py", "a = 1\0\n") is None
    assert ol.outline("x.py", "") == ""


def test_a_body_past_the_limit_is_not_parsed() -> None:
    """Parsing holds the whole tree (a 5.6 MB Python file took 1 GB): a body longer
    than OUTLINE_LIMIT characters gets no outline; one at the limit still does."""
    unit = "def f():\n    return 1\n"
    at = unit * (ol.OUTLINE_LIMIT // len(unit))
    at += "#" * (ol.OUTLINE_LIMIT - len(at) - 1) + "\n"
    assert len(at) == ol.OUTLINE_LIMIT and ol.outline("a.py", at)
    assert ol.outline("a.py", at + "\n") is None
    assert ol.outline("a.md", "# Title\n" + "x" * ol.OUTLINE_LIMIT) is None


def test_one_line_bodies_are_kept_whole() -> None:
    if outline_ts.parser_for("typescript") is None:
        pytest.skip("no typescript grammar")
    body = "function f() {}\nclass A { m(): void { return; } }\n"
    assert ol.outline("x.ts", body) == body


def test_python_crlf_and_tabs() -> None:
    body = "class A:\r\n\tdef f(self,\r\n\t      x):\r\n\t\treturn x\r\n"
    got = ol.outline("a.py", body)
    assert got == "class A:\n\tdef f(self,\n\t      x):\n\t\t...\n"
    assert unsupported_lines(got, body) == []


def test_python_long_constant_is_cut_to_a_prefix() -> None:
    body = "TABLE = " + repr(list(range(100))) + "\n"
    got = ol.outline("c.py", body)
    assert got == "TABLE =\n    ...\n"
    assert unsupported_lines(got, body) == []


def test_python_one_line_def_and_lambda_default() -> None:
    body = "def f(key=lambda x: x[0]): return 1  # c\nasync def g(): ...\n"
    assert (
        ol.outline("d.py", body)
        == "def f(key=lambda x: x[0]):\n    ...\nasync def g():\n    ...\n"
    )


# ------------------------------------------------ the property, whole stdlib


def stdlib_py_files() -> list[str]:
    root = sysconfig.get_paths()["stdlib"]
    found = []
    for top, dirs, names in os.walk(root):
        # the third-party packages are not the standard library: not even listed
        dirs[:] = [d for d in dirs if d != "site-packages"]
        found.extend(os.path.join(top, name) for name in names if name.endswith(".py"))
    return sorted(found)


@pytest.mark.parametrize(
    "stride", [24, pytest.param(8, marks=pytest.mark.slow)], ids=["every-24th", "every-8th"]
)
def test_never_text_the_body_lacks_stdlib_sample(stride: int) -> None:
    # every 24th file of the standard library, every 8th in CI's slow step (the
    # whole of it takes half a minute)
    files = stdlib_py_files()[::stride]
    assert len(files) > 60
    outlined = unparseable = 0
    failures: list[tuple[str, list[str]]] = []
    for path in files:
        try:
            with open(path, encoding="utf-8") as f:
                body = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        got = ol.outline(path, body)
        if got is None:
            unparseable += 1  # e.g. lib2to3 test data written for Python 2
            continue
        outlined += 1
        bad = unsupported_lines(got, body)
        if bad:
            failures.append((path, bad[:3]))
    assert failures == []
    assert outlined > 0.95 * (outlined + unparseable)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "def f(a, b=':'):",
                "    return a",
                "class C(B):",
                '    """Doc."""',
                "    x: int = 1",
                "MAX = 3",
                "import os",
                "@deco",
                "if X:",
                "else:",
                "    pass",
                "",
                "# c",
                "  ",
                "\t",
                "async def g(*a, **k) -> None: ...",
                "try:",
                "except E:",
                "    def h(self): pass",
            ]
        ),
        max_size=30,
    )
)
def test_python_outline_lines_come_from_the_body(lines: list[str]) -> None:
    body = "\n".join(lines) + "\n"
    got = ol.outline("gen.py", body)
    if got is not None:
        assert unsupported_lines(got, body) == []
        assert ol.outline("gen.py", body) == got


def test_markdown_and_rst_outlines_are_their_headings() -> None:
    md = "# A\ntext\n```\n# in a fence\n```\nB\n===\nmore\n## C\n"
    assert ol.outline("doc.md", md) == "# A\n...\nB\n===\n...\n## C\n"
    assert unsupported_lines(ol.outline("doc.md", md), md) == []
    rst = "Title\n=====\nbody\n\n----\n\nSub\n---\n"
    assert ol.outline("doc.rst", rst) == "Title\n=====\n...\nSub\n---\n"


def test_an_asciidoc_outline_is_its_titles_and_terms() -> None:
    """AsciiDoc (ccache's 87 KiB ``doc/manual.adoc``, cowboy's guide and manual) had
    no outline: a file ranked high that did not fit was left out whole. Its outline is
    its section titles and its labelled list terms (a manual's options), never a line
    inside a delimited block (listing, literal, example, comment, a Markdown fence)."""
    adoc = (
        "= ccache(1)\n:doctype: manpage\n\n== Name\n\nccache - a compiler cache\n\n"
        "== Options\n\n*--dry-run*::\n\n    Do not write.\n\n"
        "-------------------------------------------------------------------------------\n"
        "== not a title\nstd::\n"
        "-------------------------------------------------------------------------------\n"
        "====\nAn example.\n====\n\n////\n== commented out\n////\n"
        "```\n== in a fence\n```\n"
        "// == a comment line\n=== Sub section\nCPU;;\n  The processor.\n## Markdown style\n"
    )
    assert ol.language_for("doc/manual.adoc") == "asciidoc" == ol.language_for("a.asciidoc")
    assert ol.outline("doc/manual.adoc", adoc) == (
        "= ccache(1)\n...\n== Name\n...\n== Options\n*--dry-run*::\n...\n"
        "=== Sub section\nCPU;;\n...\n## Markdown style\n"
    )
    assert unsupported_lines(ol.outline("doc/manual.adoc", adoc), adoc) == []
    # a delimiter line of four or more, closed by the same line; a title needs its text
    assert ol.outline("x.adoc", "Just prose.\n\n====\n") is None
    assert ol.why_no_outline("x.adoc") == "it has no headings to outline"


def test_an_asciidoc_two_line_title_opens_no_block() -> None:
    """git's own manual pages (``Documentation/git-add.adoc``) underline their titles
    (``NAME`` over ``----``, the page's name over ``=====``): each underline was read as
    a delimited block's opening line, never closed, and the page had no outline. A line
    of text beginning a block, over a line of one of ``= - ~ ^ +`` as long as it (one
    more or less), is a title, as Asciidoctor reads it; a listing after a ``+`` or a
    paragraph line of another length is still a block. And a line of four backticks
    opens no fence (Asciidoctor's rule): it swallowed the rest of the document."""
    adoc = (
        "git-frob(1)\n===========\n\nNAME\n----\ngit-frob - Frob the index\n\n"
        "OPTIONS\n-------\n`-n`::\n`--dry-run`::\n\tFrob nothing.\n\n"
        "EXAMPLES\n--------\n* Frob all:\n+\n------------\n$ git frob .\nNOT A TITLE\n"
        "-----------\n------------\n\n[[HOOKS]]\nHOOKS\n~~~~~\ntext\n\n"
        "A paragraph line\n----\nlisting\n----\n\n````\nfour\n````\n\nSEE ALSO\n^^^^^^^\n"
    )
    assert ol.outline("Documentation/git-frob.adoc", adoc) == (
        "git-frob(1)\n===========\nNAME\n----\n...\nOPTIONS\n-------\n`-n`::\n"
        "`--dry-run`::\n...\nEXAMPLES\n--------\n...\nHOOKS\n~~~~~\n...\n"
        "SEE ALSO\n^^^^^^^\n"
    )
    assert unsupported_lines(ol.outline("x.adoc", adoc), adoc) == []


def test_a_protobuf_outline_is_its_declarations() -> None:
    """Protocol Buffers had no outline: Signal-Server's ``account.proto`` (18 KiB, the
    file a ticket adding gRPC endpoints changes) was named or left out. Its outline
    keeps the file's syntax, package and imports, each service, rpc, message, enum and
    oneof line and the braces that close them; fields and options are elided (a
    marker for each run), comments too (no marker)."""
    proto = (
        'syntax = "proto3";\n\noption java_multiple_files = true;\n\n'
        "package org.signal.chat.account;\n\n"
        'import "org/signal/chat/common.proto";\n\n'
        "// Provides methods for working with Signal accounts.\n"
        "service Accounts {\n  option (require.auth) = AUTH_ONLY_AUTHENTICATED;\n\n"
        "  // Returns basic identifiers.\n"
        "  rpc GetAccountIdentity(GetAccountIdentityRequest)"
        " returns (GetAccountIdentityResponse) {}\n"
        "  rpc Stream(stream Req)\n      returns (stream Resp) {\n"
        '    option (google.api.http) = { get: "/v1/x" };\n  }\n}\n\n'
        "message GetAccountIdentityRequest {\n}\n\n"
        "message Response {\n  message Nested {\n    string name = 1;\n  }\n"
        "  oneof response {\n    Nested nested = 1;\n    Error error = 2;\n  }\n}\n\n"
        "enum Kind {\n  KIND_UNSPECIFIED = 0;\n}\n"
    )
    assert ol.language_for("service/src/main/proto/account.proto") == "protobuf"
    assert ol.outline("account.proto", proto) == (
        'syntax = "proto3";\n...\npackage org.signal.chat.account;\n'
        'import "org/signal/chat/common.proto";\nservice Accounts {\n    ...\n'
        "  rpc GetAccountIdentity(GetAccountIdentityRequest)"
        " returns (GetAccountIdentityResponse) {}\n"
        "  rpc Stream(stream Req)\n      ...\n  }\n}\n"
        "message GetAccountIdentityRequest {\n}\n"
        "message Response {\n  message Nested {\n      ...\n  }\n"
        "  oneof response {\n      ...\n  }\n}\n"
        "enum Kind {\n    ...\n}\n"
    )
    assert unsupported_lines(ol.outline("account.proto", proto), proto) == []
    assert ol.outline("empty.proto", 'syntax = "proto3";\n// nothing yet\n') is None
    assert ol.why_no_outline("x.proto") == ("it declares no service, message or enum to outline")


def test_a_protobuf_outline_reads_no_comment_as_code() -> None:
    """A closing brace with a comment after it (``}  // Request``) was no closing line:
    the outline left it out and the next message read as nested in the last one. A
    declaration in a block comment (a message commented out) was kept, its brace
    never closed."""
    proto = (
        'syntax = "proto3";\n\n/*\nmessage Legacy {\n  int32 old = 1;\n}\n*/\n\n'
        "message Request {\n  int32 id = 1;\n}  // Request\n\n"
        "message Response {  /* the answer */\n  int32 id = 1;\n}\n"
    )
    assert ol.outline("x.proto", proto) == (
        'syntax = "proto3";\nmessage Request {\n    ...\n}  // Request\n'
        "message Response {  /* the answer */\n    ...\n}\n"
    )
    assert unsupported_lines(ol.outline("x.proto", proto), proto) == []


def test_an_rst_underline_shorter_than_its_title_from_four_characters() -> None:
    """docutils takes an underline shorter than its title for one (with a warning)
    from four characters up (django-extensions' ``reset_schema`` over ``========``);
    a shorter one is text."""
    rst = "reset_schema\n========\n\nbody\n\nSome text\n---\n\nUsage\n-----\n"
    assert ol.outline("docs/reset_schema.rst", rst) == (
        "reset_schema\n========\n...\nUsage\n-----\n"
    )


def test_a_markdown_front_matter_holds_no_heading() -> None:
    """A static site's page opens with front matter: its last line over the closing
    ``---`` is no setext heading, a ``#`` comment in it no ATX one (go-task's and
    zod's docs outlined as ``description: "..."`` over ``---``)."""
    md = '---\ntitle: Zod\n# a YAML comment\ndescription: "Internals"\n---\n\n# Guide\ntext\n'
    assert ol.outline("docs/zod.mdx", md) == "...\n# Guide\n...\n"
    assert ol.outline("index.md", "---\nlayout: home\n---\nHello.\n") is None
    toml = '+++\ntitle = "T"\n# comment\n+++\nSub\n---\n'
    assert ol.outline("page.md", toml) == "...\nSub\n---\n"
    # no closing line: a thematic break, then a setext heading, as before
    assert ol.outline("doc.md", "---\nTitle\n===\nbody\n") == "...\nTitle\n===\n...\n"
    # a page opening with a thematic break (a blank line, or prose, after it): no front
    # matter, though another break comes later
    ruled = "---\n\n# One\ntext\n\n---\n\n## Two\ntext\n"
    assert ol.outline("ruled.md", ruled) == "...\n# One\n...\n## Two\n...\n"
    prose = "---\nSome words, no key.\n\n# One\n---\n"
    assert ol.outline("prose.md", prose) == "...\n# One\n...\n"


def test_the_light_grammar_table_names_the_outliners_packages() -> None:
    """The prompt cache keys outlines by :mod:`grammars` without importing the
    outliner: its table must name every package the outliner imports."""
    from git_hydrate.pack import grammars

    assert {
        lang: spec.module for lang, spec in outline_ts._SPECS.items()
    } == grammars.GRAMMAR_MODULES


_DEEP = {
    "a.java": ("class A {\n", "}\n"),
    "a.c": ("struct s {\n", "};\n"),
    "a.cpp": ("namespace n {\n", "}\n"),
    "a.rb": ("module M\n", "end\n"),
    "a.kt": ("class A {\n", "}\n"),
    "a.cs": ("class A {\n", "}\n"),
}


@pytest.mark.parametrize("path", sorted(_DEEP))
def test_deep_nesting_is_outlined_without_recursion_error(path: str) -> None:
    if not has_grammar(path):
        pytest.skip("grammar package not installed")
    opening, closing = _DEEP[path]
    body = opening * 3000 + closing * 3000
    got = ol.outline(path, body)
    assert got is not None and 0 < len(got) < len(body)
    assert unsupported_lines(got, body) == []


def test_a_python_elif_chain_thousands_long_is_outlined() -> None:
    """Generated code (a dispatch table as ``if``/``elif``): an elif chain longer
    than Python's recursion limit is outlined, each branch's def kept."""
    n = 1500
    define = "    def f{}():\n        x = {} * 2\n        return x + 1\n"
    body = 'import os\nif os.name == "0":\n' + define.format(0, 0)
    body += "".join(f'elif os.name == "{i}":\n' + define.format(i, i) for i in range(1, n))
    body += "else:\n    def z(): pass\n" + "".join(
        f"def g{i}():\n    return {i}\n" for i in range(50)
    )
    got = ol.outline("gen.py", body)
    assert got is not None and 0 < len(got) < len(body)
    assert unsupported_lines(got, body) == []
    assert f'elif os.name == "{n - 1}":' in got and "else:" in got and "def z():" in got


_FUZZ_LINES = {
    "gen.c": [
        "#define F(x) \\",
        "  ((x) + 1)",
        "#ifdef X",
        "#endif",
        "struct s {",
        "typedef struct {",
        "} t;",
        "};",
        "int f(int a) {",
        "  return a;",
        "}",
        "/* c */",
        "{{",
        "",
        "\t",
        "\x00\x7f",
    ],
    "gen.rb": [
        "module M",
        "class C < B",
        "def f(a)",
        "def self.g = 1",
        "  x = 1",
        "end",
        "class << self",
        "attr_reader :x",
        "private",
        "get '/' do",
        "# c",
        "",
        "\x00",
        "=begin",
    ],
    "gen.kt": [
        "class C(val a: Int) {",
        "object O {",
        "fun f(): Int {",
        "  return 1",
        "}",
        "val x = 1",
        "companion object {",
        "init {",
        "/** d */",
        "",
        "fun g() = 2",
    ],
    "gen.cs": [
        "namespace N {",
        "namespace N;",
        "class C {",
        "void M() {",
        "  x = 1;",
        "}",
        "int P { get; set; }",
        "[A]",
        "enum E { A }",
        "/// d",
        "",
    ],
    "gen.cpp": [
        "namespace n {",
        "template <class T>",
        "class C {",
        " public:",
        "  int f() {",
        "    return 1;",
        "}",
        "};",
        'extern "C" {',
        "#if X",
        "#endif",
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
def test_c_ruby_kotlin_csharp_outlines_come_from_the_body(case: tuple[str, list[str]]) -> None:
    path, lines = case
    if not has_grammar(path):
        return
    body = "\n".join(lines) + "\n"
    got = ol.outline(path, body)
    assert got is not None
    assert unsupported_lines(got, body) == []
    assert len(got) <= len(body)  # never larger than the file
    assert ol.outline(path, body) == got
