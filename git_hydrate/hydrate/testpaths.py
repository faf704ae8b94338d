"""Which paths are tests: by name, as ranking pairs a test with its module, or by
folder, as a task's "Tests to write or update" takes them. Pure: no I/O.

Two questions, two rules. Whether a path the task names is a test (imports): its
folder says so too, fixtures and helpers being the tests' side of the work. Which
module a test tests (ranking): its name only; the files of the stem of a test only
its folder names (``tests/json.rs``, ``__tests__/button.js``, and
``__tests__/fixtures/package.json``) were what its commit changed 4% of the time in
ten repositories' history, against 33% for tests named so
(``benchmarks/folder_tests_pairing.py``).
"""

from __future__ import annotations

import posixpath
from typing import Final

__all__ = ["TEST_FOLDERS", "is_test_path", "tested_module"]

#: How Java, Kotlin and Groovy name a class's tests (case matters).
_CAMEL_TEST_SUFFIXES: Final = ("Tests", "Test", "Spec")

#: Folders whose files are tests (``tests/unit/cache.py``, jest's ``__tests__/``,
#: rspec's ``spec/``), whatever their names; not ``specs/``, spec-kit's designs.
TEST_FOLDERS: Final = frozenset({"test", "tests", "__tests__", "spec"})
#: What a test folder also holds that is no test: its documents (``tests/README.md``).
_DOCUMENTS: Final = (".md", ".markdown", ".rst", ".txt", ".adoc")


#: A test folder inside a test folder, whose files test the module of their name
#: (Clojure's older layout: ``test/leiningen/test/compile.clj`` of
#: ``src/leiningen/compile.clj``); not a package's file (``__init__``, ``index``),
#: nor a crate's or package's ``crates/core/tests/json.rs``: the files of such a
#: folder are mostly named after what they exercise, not after one module.
_NESTED: Final = frozenset({"test", "tests"})
_PACKAGE_NAMES: Final = frozenset({"__init__", "index", "mod"})

#: A test's extension that is not its subject's: Elixir's test scripts (``.exs``
#: beside ``.ex``), Perl's tests (``t/mojo/url.t`` of ``lib/Mojo/URL.pm``).
_TESTED_EXTENSIONS: Final = {".exs": ".ex", ".t": ".pm"}


def tested_module(path: str) -> tuple[str, str] | None:
    """``tests/test_termui.py`` -> ``("termui", ".py")``; ``None`` for a file that
    is no test (``x_test.go``, ``x.test.js``, ``x.spec.ts``, ``x_tests.py``, rack's
    ``spec_x.rb``, Java's and Kotlin's ``XTest``, ``XTests``, ``XSpec`` are tests too;
    so are Elixir's ``x_test.exs``, of ``x.ex``, every Perl ``x.t``, of ``X.pm``, R's
    ``tests/testthat/test-x.R``, Erlang's ``x_SUITE.erl``, Scala's ``XSuite`` in a
    test folder, Nim's ``tests/tx.nim`` and
    any ``x`` in a nested ``test`` folder, Clojure's ``test/ns/test/x.clj``)."""
    stem, ext = posixpath.splitext(posixpath.basename(path))
    if ext in _TESTED_EXTENSIONS:
        if ext == ".t" and stem:
            return stem, _TESTED_EXTENSIONS[ext]
        ext = _TESTED_EXTENSIONS[ext]
    for prefix in ("test_", "spec_"):
        if stem.startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix) :], ext
    if stem.startswith("test-") and len(stem) > 5 and _in_test_folder(path):
        return stem[5:], ext  # (R's tests/testthat/test-x.R; testthat's R/test-that.R: none)
    if ext == ".nim" and stem[:1] == "t" and len(stem) > 1 and _in_test_folder(path):
        return stem[1:], ext  # (Nim's tests/tlockfile.nim of src/nimblepkg/lockfile.nim)
    for suffix in ("_test", ".test", ".spec", "_spec", "_tests", "_SUITE"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)], ext
    for suffix in _CAMEL_TEST_SUFFIXES:  # (GsonTest, not Contest nor Latest)
        if stem.endswith(suffix) and len(stem) > len(suffix) and stem[-len(suffix) - 1] != "_":
            return stem[: -len(suffix)], ext
    if stem.endswith("Suite") and len(stem) > 5 and _in_test_folder(path):
        return stem[:-5], ext  # (munit's src/test/scala/JsonSuite.scala; not a CipherSuite.kt)
    outer, _, inner = path.rpartition("/")[0].rpartition("/")
    if inner in _NESTED and _in_test_folder(outer + "/") and stem not in _PACKAGE_NAMES:
        return None if path.lower().endswith(_DOCUMENTS) else (stem, ext)
    return None


def _in_test_folder(path: str) -> bool:
    return not TEST_FOLDERS.isdisjoint(path.split("/")[:-1])


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a test: named as one (:func:`tested_module`) or, not a
    document, under a test folder; not any path holding ``test`` (``src/latest.py``,
    ``src/pytest_plugin.py``), nor spec-kit's ``specs/001-x/plan.md``."""
    if tested_module(path) is not None:
        return True
    return _in_test_folder(path) and not path.lower().endswith(_DOCUMENTS)
