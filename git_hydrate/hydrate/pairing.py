"""Test pairing: which file tests which (``tests/test_termui.py`` of
``src/click/termui.py``), by their names alone. Pure: no I/O.

Ranking (:mod:`.rank`) lifts the tests of a file in play and the file a test in
play tests, and does the same, weaker, from the task's best content hits.
"""

from __future__ import annotations

import posixpath
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, repeat
from operator import add, itemgetter
from typing import Final

from .testpaths import tested_module

__all__ = ["may_pair", "paired", "paired_with_seeds"]


#: File names that stand for their directory (a package, a module index).
_PACKAGE_NAMES: Final = ("__init__", "index", "mod")
_PACKAGE_FILES: Final = tuple(f"{name}." for name in _PACKAGE_NAMES)


def _module_stem(path: str) -> tuple[str, str] | None:
    """``src/click/termui.py`` -> ``("termui", ".py")``; a package's ``__init__`` is
    named by its directory; ``None`` for a test."""
    return None if tested_module(path) is not None else _stem(path)


def _stem(path: str) -> tuple[str, str] | None:
    """:func:`_module_stem` of a path known to be no test."""
    stem, ext = posixpath.splitext(posixpath.basename(path))
    if stem in _PACKAGE_NAMES:
        stem = posixpath.basename(posixpath.dirname(path))
    stem = stem.lstrip("_")
    return (stem, ext) if stem else None


def paired_with_seeds(paths: Sequence[str], seeds: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``paired`` with the seeds, in one pass: ``{path: (reason, seed)}``."""
    found: dict[str, tuple[str, str]] = {}
    for path, why in paired(paths, seeds).items():
        seed = why.partition(" of ")[2] or why.partition(" by ")[2]
        if seed in seeds:
            found[path] = (why, seed)
    return found


def paired(paths: Sequence[str], anchors: Sequence[str]) -> dict[str, str]:
    """Files that test a file in play, or that a test in play tests: ``{path: reason}``.
    Names pair whatever their case and ``_`` (Perl's ``t/mojo/byte_stream.t`` tests
    ``lib/Mojo/ByteStream.pm``)."""
    subjects = {_folded(s): f for f in anchors if (s := tested_module(f))}
    stems = {_folded(s): f for f in anchors if (s := _module_stem(f))}
    found: dict[str, str] = {}
    if not subjects and not stems:
        return found
    names = {name for name, _ext in (*subjects, *stems)}
    leading = [_fold(n) for n in _PACKAGE_FILES]
    # (a file whose name holds none of them, and no package's, cannot pair: most
    # files, skipped by one search each without parsing their names)
    alternatives = [*map(re.escape, sorted(names)), *(f"^{re.escape(n)}" for n in leading)]
    holds_one = re.compile("|".join(alternatives)).search
    for path in may_pair(paths, sorted(names), leading, _fold):
        if holds_one(_fold(path.rpartition("/")[2])) is None:
            continue
        subject = tested_module(path)
        if subject is not None:  # (a test: no module's stem)
            tested = stems.get(_folded(subject))
            if tested is not None:
                found[path] = f"test of {tested}"
            continue
        stem = _stem(path)
        tester = subjects.get(_folded(stem)) if stem is not None else None
        if tester is not None:
            found[path] = f"tested by {tester}"
    return found


def _fold(name: str) -> str:
    """A name as test pairing compares it: lower case, without ``_``."""
    return name.lower().replace("_", "")


def _folded(subject: tuple[str, str]) -> tuple[str, str]:
    return _fold(subject[0]), subject[1]


def may_pair(
    paths: Sequence[str],
    inside: list[str],
    leading: Sequence[str],
    fold: Callable[[str], str] | None = None,
) -> Sequence[str]:
    """The ``paths`` whose names (each ``fold``-ed first, if given) may hold one of
    ``inside`` or start with one of ``leading``: some of them, found by ``str.find``
    in all the names, one a line (a name holding a line break, or a word that is
    empty or holds one: all)."""
    bases = list(map(itemgetter(2), map(str.rpartition, paths, repeat("/"))))
    names = "\n".join(bases)
    if fold is not None and names.count("\n") == len(paths) - 1:
        # (all the names at once: a fold that keeps line breaks keeps them one a line)
        names = fold(names)
        bases = names.split("\n")
    words = [*inside, *leading]
    if names.count("\n") != len(paths) - 1 or not all(words) or any("\n" in w for w in words):
        return paths  # (and no path: none)
    found: set[int] = set()
    for word, shift in (*((w, 0) for w in inside), *(("\n" + w, 1) for w in leading)):
        at = names.find(word)
        while at >= 0:
            found.add(at + shift)
            at = names.find(word, at + 1)
    found.update(0 for word in leading if names.startswith(word))
    starts = [0, *accumulate(map(add, map(len, bases), repeat(1)))]
    lines = sorted({bisect_right(starts, at) - 1 for at in found})
    return [paths[line] for line in lines]
