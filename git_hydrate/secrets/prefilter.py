"""The one-pass prefilter (optional ``hyperscan``): the rules run only where they can match.

One Hyperscan database holds every rule's anchors (:mod:`.anchors`) and
triggers; one pass over a text finds the lines each rule must run on, and most
texts have none. Its findings are the plain path's (:mod:`.plain`). The
compiled database can be kept between processes (:func:`keep_database`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable
from typing import Any

from .anchors import ANCHORS, CONNECTION_PASSWORD, DOTTED_I, FOLDED_ANCHORS, LONG_S
from .findings import Finding, findings
from .rules import FOLDED, FOLDED_INDICES, FOLDED_TRIGGERS, RULES, rule_pattern

__all__ = [
    "Prefilter",
    "Store",
    "collect",
    "keep_database",
    "scan_prefiltered",
    "shared_prefilter",
    "verdicts",
]


class Prefilter:
    """One Hyperscan database of every rule's anchors and triggers (optional extra).

    Expression ids: first :data:`FOLDED_ANCHORS` (caseless, "$" at each line's
    end), then for each other rule in order its anchors and its triggers (each
    reported once).
    """

    def __init__(self, hyperscan: Any, store: Store | None = None) -> None:
        expressions = [expression.encode() for expression, _rules in FOLDED_ANCHORS]
        flags = [hyperscan.HS_FLAG_CASELESS | hyperscan.HS_FLAG_MULTILINE] * len(expressions)
        #: for each set of folded anchors found on a line (a bit each), the rules to
        #: run: (name, index in RULES, anchored)
        self.folded_rules = [
            [
                (RULES[index][0], index, anchored)
                for index, anchored in FOLDED_INDICES
                if any(
                    mask & (1 << bit) and RULES[index][0] in names
                    for bit, (_e, names) in enumerate(FOLDED_ANCHORS)
                )
            ]
            for mask in range(1 << len(FOLDED_ANCHORS))
        ]
        #: per expression id past the folded anchors: (index in self.rules, is an anchor)
        self.owners: list[tuple[int, bool]] = [(-1, False)] * len(expressions)
        #: (rule name, index in RULES, gated by triggers, anchored to lines) of the others
        self.rules: list[tuple[str, int, bool, bool]] = []
        for rule, (name, _p, triggers) in enumerate(RULES):
            if name in FOLDED:
                continue
            index = len(self.rules)
            lined = name in ANCHORS
            anchors = ANCHORS.get(name) or ()
            # A rule run by lines needs no gate: each of its matches holds one of
            # its triggers (the plain path's premise), and one of its anchors.
            gated = bool(triggers) and not lined
            self.rules.append((name, rule, gated, lined))
            for anchor in anchors or map(re.escape, triggers if lined else ()):
                expressions.append(anchor.encode())
                flags.append(0)
                self.owners.append((index, True))
            for trigger in triggers if gated else ():
                expressions.append(re.escape(trigger).encode())
                flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
                self.owners.append((index, False))
        #: rules that run on every text: neither triggers nor anchors
        self.always = [
            index
            for index, (_n, _p, gated, lined) in enumerate(self.rules)
            if not (gated or lined)
        ]
        self.database = _database(hyperscan, expressions, flags, store)
        #: the scratch spaces not in use: one, so that a second thread scanning
        #: meanwhile takes the plain path (popped and put back: atomic, and cheaper
        #: than a lock)
        self.scratches = [self.database.scratch]


#: Where compiled prefilters are kept between processes: ``load(key)`` gives the
#: bytes stored under ``key`` (or ``None``), ``save(key, data)`` stores them.
Store = tuple[Callable[[str], "bytes | None"], Callable[[str, bytes], None]]
_store: Store | None = None


def keep_database(load: Callable[[str], bytes | None], save: Callable[[str, bytes], None]) -> None:
    """Keep the compiled database between processes through ``load`` and ``save``
    (see :data:`Store`). Call before the first :func:`shared_prefilter`."""
    global _store
    _store = (load, save)


def _database(
    hyperscan: Any, expressions: list[bytes], flags: list[int], store: Store | None
) -> Any:
    """The compiled database of ``expressions``, ready to scan.

    Compiling takes ~40 ms: a database compiled by an earlier process for the
    same expressions, library and machine is loaded from ``store`` instead
    (~0.1 ms), and one compiled here is saved there.
    """
    import hashlib  # (here: a process without the prefilter needs none)

    key = hashlib.sha256(
        repr((expressions, flags, _library_version(hyperscan), _machine())).encode()
    ).hexdigest()
    database = _load_compiled(hyperscan, store, key)
    if database is None:
        database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=expressions,
            ids=list(range(len(expressions))),
            elements=len(expressions),
            flags=flags,
        )
        if store is not None:
            with contextlib.suppress(Exception):  # only saves time
                store[1](key, hyperscan.dumpb(database))
    return database


def _machine() -> str:
    """``platform.machine()``, without importing ``platform`` (~1.5 ms) where
    ``os.uname()``, which it reads, is there."""
    if hasattr(os, "uname"):
        return os.uname().machine
    import platform

    return platform.machine()


def _library_version(hyperscan: Any) -> str:
    try:
        return str(hyperscan.__version__)
    except AttributeError:
        return "?"


def _load_compiled(hyperscan: Any, store: Store | None, key: str) -> Any:
    """The database stored under ``key``, ready to scan; ``None`` if there is none
    or it does not load (another build of the library, a damaged file)."""
    if store is None:
        return None
    try:
        data = store[0](key)
        if not data:
            return None
        database = hyperscan.loadb(data, hyperscan.HS_MODE_BLOCK)
        database.scratch = hyperscan.Scratch(database)
        return database
    except Exception:  # anything wrong with it: compile instead
        return None


@functools.cache
def shared_prefilter() -> Prefilter | None:
    """The Hyperscan prefilter, or None without the optional ``hyperscan`` package."""
    try:
        import hyperscan
    except Exception:  # absent, or broken (a library of another build): the plain path
        return None
    try:
        return Prefilter(hyperscan, _store)
    except Exception:  # a build of the library that cannot compile these: the plain path
        return None


def collect(expression: int, _start: int, end: int, _flags: int, events: Any) -> None:
    events.append((end, expression))


def scan_prefiltered(prefilter: Prefilter, text: str, limit: int) -> list[Finding] | None:
    """:func:`scan_plain`'s findings, each rule run only on the lines where one
    pass over the text found its anchors; None if the pass could not run.
    """
    scratches = prefilter.scratches
    try:
        scratch = scratches.pop()
    except IndexError:  # another thread is scanning: the plain path decides
        return None
    events: list[tuple[int, int]] = []
    try:
        # One "?" for each other character: offsets in the bytes are the text's.
        # (Positional arguments: keywords cost a third of the call.)
        prefilter.database.scan(text.encode("ascii", "replace"), collect, 0, events, scratch)
    except Exception:  # hyperscan.error: the plain path decides
        return None
    finally:
        scratches.append(scratch)
    if events or prefilter.always or (not text.isascii() and LONG_S in text):
        return verdicts(prefilter, text, events, limit)
    return []  # most texts: nothing to run a rule on


def verdicts(
    prefilter: Prefilter, text: str, events: list[tuple[int, int]], limit: int
) -> list[Finding] | None:
    """The findings in ``text``, given the (end, expression) of what the
    prefilter's pass found in it; None if that is not what it compiles."""
    events.sort()
    nfolded = len(FOLDED_ANCHORS)
    owners = prefilter.owners
    folded: list[tuple[int, int]] = []
    anchors: dict[int, list[int]] = {}
    triggered: set[int] = set()
    for end, expression in events:
        if not 0 <= expression < len(owners) or not 0 < end <= len(text):
            return None  # not what this prefilter compiles: the plain path decides
        # the last character of what was found: on the line of the match
        if expression < nfolded:
            folded.append((end - 1, 1 << expression))
            continue
        rule, anchor = owners[expression]
        if anchor:
            anchors.setdefault(rule, []).append(end - 1)
        else:
            triggered.add(rule)
    hits = _folded_hits(prefilter, text, folded)
    size = len(text)
    rules = prefilter.rules
    for index in sorted({*anchors, *triggered, *prefilter.always}):
        name, rule, gated, lined = rules[index]
        if gated and index not in triggered:
            continue
        pattern = rule_pattern(rule)
        if not lined:
            for match in pattern.finditer(text):
                hits.append((match.start(), name))
                if len(hits) >= limit * 4:
                    break
            continue
        done = -1
        for position in anchors.get(index, ()):
            if position < done:
                continue
            end = text.find("\n", position)
            # the window takes the newline, so that a lookahead sees what it saw
            done = end = size if end == -1 else end + 1
            start = text.rfind("\n", 0, position) + 1
            for match in pattern.finditer(text, start, end):
                hits.append((match.start(), name))
                if len(hits) >= limit * 4:
                    break
            else:
                continue
            break
    return findings(text, hits, limit)


def _folded_hits(
    prefilter: Prefilter, text: str, folded: list[tuple[int, int]]
) -> list[tuple[int, str]]:
    """What :func:`scan_lines` finds with the folded rules, each run on the lines
    where the prefilter found its anchors (``folded``: (position, bit), in order).

    Their matches lie within a line and hold their anchors, and those of
    env-secret, json-secret and key-material are ASCII, so they are on lines the
    rules run on here, which but for a line of a key named iv alone (checked) are
    among those scan_lines runs on. In text with İ, scan_lines takes every match
    over the whole text instead: here every match in each line, and no check. In
    text with ſ, a case-blind "password" may hold it where Hyperscan sees a "?":
    connection-string-password then runs as scan_lines runs it, on the lines
    holding a match of it (only those can give one).
    """
    ascii = text.isascii()
    every = not ascii and DOTTED_I in text
    long_s = not ascii and LONG_S in text
    hits: list[tuple[int, str]] = []
    size = len(text)
    at, count = 0, len(folded)
    only_iv = 1 << (len(FOLDED_ANCHORS) - 1)
    while at < count:
        position = folded[at][0]
        end = text.find("\n", position)
        end = size if end == -1 else end
        start = text.rfind("\n", 0, position) + 1
        mask = 0
        while at < count and folded[at][0] < end:
            mask |= folded[at][1]
            at += 1
        if mask == only_iv and not every and not _triggered_line(text, start, end):
            continue
        for name, rule, anchored in prefilter.folded_rules[mask]:
            if long_s and rule == CONNECTION_PASSWORD:
                continue
            pattern = rule_pattern(rule)
            if every:
                hits += [(match.start(), name) for match in pattern.finditer(text, start, end)]
                continue
            find = pattern.match if anchored else pattern.search
            match = find(text, start, end)
            if match is not None:
                hits.append((match.start(), name))
    if long_s:
        name = RULES[CONNECTION_PASSWORD][0]
        pattern = rule_pattern(CONNECTION_PASSWORD)
        if every:
            return hits + [(match.start(), name) for match in pattern.finditer(text)]
        done = -1
        for match in pattern.finditer(text):
            if match.start() < done:
                continue  # on a line already run
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.start())
            done = end = size if end == -1 else end
            first = pattern.search(text, start, end) if _triggered_line(text, start, end) else None
            if first is not None:
                hits.append((first.start(), name))
    return hits


def _triggered_line(text: str, start: int, end: int) -> bool:
    """Whether :func:`scan_lines` runs the folded rules on the line
    ``text[start:end]``: its leftmost trigger (lower-cased) has "=" or ":" after it
    (in text whose lower case is as long)."""
    line = text[start:end].lower()
    found = min((i for i in map(line.find, FOLDED_TRIGGERS) if i != -1), default=-1)
    return found != -1 and (line.find("=", found) != -1 or line.find(":", found) != -1)
