"""The area a ticket's title names by convention: ``fastcgi: fix HTTPoxy``,
``fix(etag): match If-None-Match``. Pure: no I/O.

Projects from the Linux kernel and git to Go's and Conventional Commits' users
start a subject with the part of the tree it changes: a package, a folder or a
file's stem, before a ``:`` or in the type's parentheses. In 73 repositories'
replayed commits (``benchmarks/relevance_replay.py``), of the titles whose area
is a folder of the tree, 120 of 123 changed a file in it; of those whose area
is a file's stem, 38 of 49 changed that file. The type words (``fix``, ``docs``)
name no area, nor does a release's title (``chore(main): release 2.4.0``, as
release tools write it: the branch in the parentheses, the version after).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

__all__ = ["area_files"]

#: ``area: ...``, ``type(area): ...`` or ``type(area)!: ...`` at a title's start.
_TITLE_AREA: Final = re.compile(r"[ \t]*([A-Za-z][\w.-]*(?:/[\w.-]+)*)(?:\(([^)\n]*)\))?!?:[ \t]")
#: Conventional Commits' types and their kin: what kind of change, not where.
_TYPES: Final = frozenset(
    {"feat", "fix", "chore", "docs", "doc", "build", "ci", "test", "tests", "refactor",
     "perf", "style", "revert", "deps", "release", "bump", "wip", "fixup", "typo", "dx",
     "types", "security", "merge"}
)  # fmt: skip
#: A release's subject (``release 2.4.0``, ``Release v2``): it changes versions and
#: changelogs, not the files of the area it names (``main`` of every ``main.go``).
_RELEASE: Final = re.compile(r"release[ \t]+v?[0-9]", re.IGNORECASE)
#: An area naming more files than this names none of them (a whole package's 150 files).
AREA_FILES: Final = 12
#: A title's first areas looked for (each is a pass over every path: a title of
#: 20,000 names in its parentheses took 34 s at 30,000 paths).
AREA_NAMES: Final = 16


def _areas(text: str) -> list[str]:
    """The areas the first line of ``text`` names: the prefix before ``:`` and each
    name in a type's parentheses (``fix(client,server):``), not a type word; the
    first :data:`AREA_NAMES` of them, each once."""
    found = _TITLE_AREA.match(text)
    if found is None or _RELEASE.match(text, found.end()):
        return []
    names = [found.group(1), *re.split(r"[,\s]+", found.group(2) or "")]
    areas = dict.fromkeys(n.strip("/") for n in names if n and n.lower() not in _TYPES)
    return list(areas)[:AREA_NAMES]


def area_files(text: str, paths: Sequence[str]) -> dict[str, str]:
    """The files the title's area names, as written, ``{path: area}``: those under
    a folder of that name or path (``etag`` of ``src/middleware/etag/index.ts``),
    if at most :data:`AREA_FILES` (``unix`` of libuv's ``src/unix/``, 54 files: none);
    with no such folder, the files of that stem (``walk`` of ``src/walk.rs``) outside
    the hidden folders (a workflow named after a package is not the package)."""
    found: dict[str, str] = {}
    areas = _areas(text)
    # (each area looked for in all the paths at once first: most name no folder)
    lines = "\n/" + "\n/".join(paths) + "\n" if areas else ""
    for area in areas:
        inner = "/" + area + "/"
        under = [p for p in paths if inner in "/" + p] if inner in lines else []
        if not under and "/" not in area and "." not in area:
            under = [p for p in _of_stem(area, lines, paths) if "/." not in "/" + p]
        for path in under if len(under) <= AREA_FILES else ():
            found.setdefault(path, area)
    return found


def _of_stem(stem: str, lines: str, paths: Sequence[str]) -> list[str]:
    """The ``paths`` whose file's name is ``stem`` up to its first ``.``, found by
    ``str.find`` in ``lines`` (each path after ``\n/``, in order)."""
    if lines.count("\n") != len(paths) + 1:  # (a path holding a line break: each looked at)
        return [p for p in paths if p.rpartition("/")[2].partition(".")[0] == stem]
    found: list[str] = []
    line, counted = -1, 0  # (the line breaks before each find, counted once in all)
    at = lines.find("/" + stem)
    while at >= 0:
        end = at + 1 + len(stem)
        stop = lines.index("\n", end)
        if lines[end] in ".\n" and "/" not in lines[end:stop]:
            line += lines.count("\n", counted, at)
            counted = at
            found.append(paths[line])
        at = lines.find("/" + stem, end)
    return found
