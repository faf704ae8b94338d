"""The files a ticket's text names: a path, a file name, a module, or a name
written with a ``_`` that is a file's own. Pure: no I/O.

Part of the lexical signals of :mod:`.retrieval` (its *mentions*): a named file
ranks as if the task named it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

__all__ = ["IDENTIFIER", "MENTION", "SPELLED_FILES", "mentions"]

#: A path, a file name or a dotted module as a text writes it (``src/core.py``,
#: ``core.py``, ``click.core``).
MENTION: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+")
#: A module named as Perl, Ruby, Rust and C++ do (``Mojo::URL``, ``Rack::Utils``).
_COLONS_MENTION: Final = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+")
#: What a module's package file is called (``lua/telescope/builtin/init.lua`` is
#: ``telescope.builtin``, ``src/click/__init__.py`` is ``click``).
_PACKAGE_TAILS: Final = (".init", ".__init__", ".index", ".mod")
#: More files than this of one name, or defining a spelled name: it names none of them.
SPELLED_FILES: Final = 3
#: A word of the text as code spells a name (``rebuild_auth``, ``getPager``).
IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def mentions(text: str, paths: Sequence[str]) -> dict[str, str]:
    """Paths the text names: a path's tail (``click/core.py``), a file name
    (``core.py``) or a dotted module (``click.core``, ``Mojo::URL``, Lua's
    ``telescope.builtin`` of ``telescope/builtin/init.lua``); a name in a module
    (``Plug.Test.put_req_cookie``) that names no file names its module's; a
    name written with a ``_`` names the files of that name (:func:`_snake_names`)."""
    named = {m.strip("./").lower() for m in MENTION.findall(text)}
    named.update(m.lower().replace("::", ".") for m in _COLONS_MENTION.findall(text))
    found = _paths_named(named, paths) if named else {}
    for stem, holders in _files_named(_snake_names(text), paths).items():
        for path in holders if len(holders) <= SPELLED_FILES else ():
            found.setdefault(path, stem)
    return found


def _paths_named(named: set[str], paths: Sequence[str]) -> dict[str, str]:
    """:func:`_mentions` of the paths, files and modules ``named`` (lower case)."""
    found: dict[str, str] = {}
    # (each path looks its tails up, not each mention: at 3,000 files, a text naming
    # 2,000 paths took 4 s; the first mention in sorted order that a path matches wins)
    dotted = _by_length(m for m in named if "/" not in m and "." in m)
    packaged = _by_length("." + m for m in named if "/" not in m)
    modules: list[str] = []
    for path in paths:
        lower = path.lower()
        base = posixpath.basename(lower)
        module = posixpath.splitext(lower)[0].replace("/", ".")
        modules.append(module)
        hits = [tail for tail in _tails(lower) if tail in named]
        if base in named and "." in base:
            hits.append(base)
        hits += _ends(module, dotted)
        # (a package's file: ``telescope.builtin`` names ``.../telescope/builtin/init.lua``)
        if module.endswith(_PACKAGE_TAILS):
            hits += [tail[1:] for tail in _ends(_package(module), packaged)]
        if hits:
            found[path] = min(hits)
    unmatched = named.difference(found.values())
    owners = sorted(
        m.rpartition(".")[0]
        for m in unmatched
        if m.count(".") >= 2 and m[0].isalpha() and "/" not in m
    )
    tails = tuple("." + owner for owner in owners)
    for path, module in zip(paths, modules, strict=True) if owners else ():
        package = _package(module)
        if package.endswith(tails) and path not in found:
            found[path] = next(o for o in owners if package.endswith("." + o))
    return found


def _snake_names(text: str) -> set[str]:
    """The names ``text`` writes with a ``_`` inside (``cowboy_req``, ``nvm_get_arch``),
    as written, outside the paths it names (a file in play's ``tests/test_x.py``):
    a file of that very name (``src/cowboy_req.erl``) is named, if at most
    :data:`SPELLED_FILES` are (a ``CamelCase`` word names no file so: ``WebSocket``)."""
    if "_" not in text:
        return set()
    return {w for w in IDENTIFIER.findall(MENTION.sub(" ", text)) if "_" in w.strip("_")}


def _files_named(names: set[str], paths: Sequence[str]) -> dict[str, list[str]]:
    """Per name of ``names``, the ``paths`` whose file is so named, as written, with
    or without an extension: each name found by ``str.find`` in all the paths, one
    a line (a regular expression of them all took 20 times as long)."""
    lines = "\n" + "\n".join(paths) + "\n"
    if not names or lines.count("\n") != len(paths) + 1:
        return {}  # (a path holding a line break: no file named so)
    if len(names) > _FOUND_NAMES:
        return _files_so_named(names, paths)
    found: dict[str, list[str]] = {}
    for name in sorted(names):
        line, counted = -1, 0  # (the lines before each find, counted once in all)
        at = lines.find(name)
        while at >= 0:
            end = lines.index("\n", at)
            rest = lines[at + len(name) : end]
            if lines[at - 1] in "/\n" and (not rest or _extension(rest)):
                line += lines.count("\n", counted, at)
                counted = at
                found.setdefault(name, []).append(paths[line])
                at = end
            at = lines.find(name, at + 1)
    return found


#: More names than this are looked up by file name, not each found in the paths: a
#: pass over all of them per name cost names x paths (a ticket of 3,000 distinct
#: words, at 30,000 files: 2.5 s, and 44 s at 30,000 words; one pass: 0.02 s).
_FOUND_NAMES: Final = 16


def _files_so_named(names: set[str], paths: Sequence[str]) -> dict[str, list[str]]:
    """:func:`_files_named` of many names: each path's file name, whole and without
    its last extension, looked up in them."""
    found: dict[str, list[str]] = {}
    for path in paths:
        base = path.rpartition("/")[2]
        for name in (base, base.rpartition(".")[0]):
            if name in names:
                found.setdefault(name, []).append(path)
    return {name: found[name] for name in sorted(found)}


def _extension(rest: str) -> bool:
    """Whether ``rest``, what follows a name in a path, is its file's extension."""
    return rest[0] == "." and rest.count(".") == 1 and "/" not in rest


def _by_length(texts: Iterable[str]) -> dict[int, set[str]]:
    """``texts`` by their length, for :func:`_ends`."""
    found: dict[int, set[str]] = {}
    for text in texts:
        found.setdefault(len(text), set()).add(text)
    return found


def _ends(text: str, by_length: Mapping[int, set[str]]) -> list[str]:
    """The ones of ``by_length`` that ``text`` (a dotted module) ends with, whole
    parts of it: ``click.core`` ends ``src.click.core``, not ``src.myclick.core``,
    and ``comments.rss`` not ``views.user_comments.rss`` (one that starts with a
    ``.``, a package's, is one already)."""
    return [
        text[-n:]
        for n, ends in by_length.items()
        if n <= len(text)
        and text[-n:] in ends
        and (n == len(text) or text[-n - 1] == "." or text[-n] == ".")
    ]


def _tails(path: str) -> Iterator[str]:
    """``path``, then what follows each of its ``/`` (``a/b/c``: ``a/b/c``, ``b/c``, ``c``)."""
    yield path
    at = path.find("/")
    while at >= 0:
        yield path[at + 1 :]
        at = path.find("/", at + 1)


def _package(module: str) -> str:
    """``lua.telescope.builtin.init`` -> ``.lua.telescope.builtin``: the module a
    package file stands for, after a ``.``."""
    return "." + (module.rpartition(".")[0] if module.endswith(_PACKAGE_TAILS) else module)
