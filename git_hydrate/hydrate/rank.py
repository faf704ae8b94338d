"""Ranking files for a task: the right context first. Pure: no I/O, no git, no clock.

The score of a file estimates the probability that the task's change touches
it. Signals, each measured on real history (``benchmarks/relevance.py``):

* the task's files in play, then its named tests — always first;
* co-change: how often the file changed together with a file in play in the
  history *before* the source revision, recency-decayed (half-life in
  commits), sweeping commits ignored, smoothed towards how often the file
  changes at all (changelogs rank high for good reason);
* test <-> module naming (``tests/test_termui.py`` <-> ``src/click/termui.py``);
* the task's words (objective, acceptance, criteria, scope, title) against
  the path's words (BM25);
* directory proximity to a file in play.

The signals combine as a noisy OR; files are then ordered by score per
``(size + 60) ** 0.25`` bytes, so that under a byte budget a few large,
slightly relevant files do not crowd out many small, relevant ones. Only
paths and sizes are read, never file contents: a task re-ranks without
reading a body. The same inputs always give the same order.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

__all__ = ["TOP_LEVEL", "Candidate", "Ranked", "TaskText", "Weights", "rank"]


@dataclass(frozen=True)
class Candidate:
    """A file that may be attached: its repository-relative path and size."""

    path: str
    size: int


@dataclass(frozen=True)
class TaskText:
    """What the ranking knows of the task."""

    text: str
    files_in_play: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)


#: The level of a file in play; every other file ranks below it.
TOP_LEVEL: Final = 10_000
#: Levels left for named tests, below the files in play.
_TEST_LEVELS: Final = 100


@dataclass(frozen=True)
class Ranked:
    """A file's place: ``level`` from 0 to :data:`TOP_LEVEL` (higher packs first;
    files in play at the top, then named tests, then by relevance per byte);
    ``score`` in [0, 1]; ``reason`` says why in a few words (``file in play``,
    ``co-change with src/x.py``...).

    Levels are a file's own measure, not its position among the others, so
    adding or removing one file does not move every other.
    """

    level: int
    score: float
    reason: str


@dataclass(frozen=True)
class Weights:
    """The ranking's parameters; the defaults are the measured ones."""

    test_pair: float = 0.2
    lexical: float = 0.1
    directory: float = 0.02
    half_life: float = 100.0
    sweep: int = 30
    smoothing: float = 2.0
    size_exponent: float = 0.25
    overhead: int = 60


#: Words too common in commit messages and paths to say anything.
_STOP: Final = frozenset(
    """
    a an and are as at be been but by can could did do does for from has have if in
    into is it its not of on or so such than that the their them then there these this
    those to was were when where which while who will with would you your we our use
    used uses using add added adds fix fixed fixes fixing make makes made instead also
    now only more less should don can new old via like just all any some one two get
    set sets none true false self file files code change changes changed update updated
    updates updating remove removed removes test tests src lib main docs doc rst txt co
    authored signed off merge pull request branch http https www com github issue
    issues pr
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_RAW: Final = re.compile(r"[A-Za-z0-9_]+")
_WORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


@lru_cache(maxsize=65536)
def _words(raw: str) -> tuple[str, ...]:
    """``get_metavarName`` -> the whole word and its snake and camel parts, lower-cased."""
    out: list[str] = []
    pieces = [p for p in raw.split("_") if p]
    if len(pieces) > 1:
        out.append(raw.lower().strip("_"))
    for piece in pieces:
        for word in _WORD.findall(piece):
            parts = [p.lower() for p in _CAMEL.findall(word)]
            out.append(word.lower())
            if len(parts) > 1:
                out.extend(parts)
    return tuple(w for w in out if len(w) >= 3 and w not in _STOP and not w.isdigit())


def tokenize(text: str) -> list[str]:
    """The words of ``text`` the lexical signal compares."""
    return [word for raw in _RAW.findall(text) for word in _words(raw)]


def _path_words(path: str) -> list[str]:
    stem = posixpath.splitext(path)[0]
    return tokenize(stem.replace("/", " ").replace("-", " ").replace(".", " "))


def _test_subject(path: str) -> tuple[str, str] | None:
    """``tests/test_termui.py`` -> ``("termui", ".py")``; ``None`` for a file that
    is no test (``x_test.go``, ``x.test.js``, ``x.spec.ts`` are tests too)."""
    stem, ext = posixpath.splitext(posixpath.basename(path))
    if stem.startswith("test_") and len(stem) > 5:
        return stem[5:], ext
    for suffix in ("_test", ".test", ".spec", "_spec"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)], ext
    return None


#: File names that stand for their directory (a package, a module index).
_PACKAGE_NAMES: Final = ("__init__", "index", "mod")
_PACKAGE_FILES: Final = tuple(f"{name}." for name in _PACKAGE_NAMES)


def _module_stem(path: str) -> tuple[str, str] | None:
    """``src/click/termui.py`` -> ``("termui", ".py")``; a package's ``__init__`` is
    named by its directory; ``None`` for a test."""
    if _test_subject(path) is not None:
        return None
    stem, ext = posixpath.splitext(posixpath.basename(path))
    if stem in _PACKAGE_NAMES:
        stem = posixpath.basename(posixpath.dirname(path))
    stem = stem.lstrip("_")
    return (stem, ext) if stem else None


def _proximity(a: str, b: str) -> float:
    """1 for the same directory, halving with each step apart; 0 without a common one."""
    da, db = posixpath.dirname(a), posixpath.dirname(b)
    if da == db:
        return 1.0
    pa, pb = da.split("/") if da else [], db.split("/") if db else []
    common = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        common += 1
    return 0.5 ** ((len(pa) - common) + (len(pb) - common)) if common else 0.0


def _cochange(
    anchors: set[str], history: Sequence[Sequence[str]], w: Weights
) -> tuple[dict[str, float], dict[str, str]]:
    """Smoothed, decayed P(file changes | a file in play changes), and for each file
    the file in play it last changed with (for the reason)."""
    decay = math.log(2) / w.half_life if w.half_life > 0 else 0.0
    total = hits = 0.0
    often: dict[str, float] = {}
    together: dict[str, float] = {}
    partner: dict[str, str] = {}
    for age, files in enumerate(history):
        if not files or len(files) > w.sweep:
            continue
        weight = math.exp(-decay * age)
        total += weight
        touched = sorted(anchors.intersection(files))
        if touched:
            hits += weight
        for name in files:
            often[name] = often.get(name, 0.0) + weight
            if touched:
                together[name] = together.get(name, 0.0) + weight
                partner.setdefault(name, touched[0])
    if total <= 0:
        return {}, {}
    a = w.smoothing
    scores = {
        name: (together.get(name, 0.0) + a * count / total) / (hits + a)
        for name, count in often.items()
        if name not in anchors
    }
    return scores, partner


def _bm25(query: Sequence[str], docs: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """BM25 of ``query`` against each document, scaled so the best is 1."""
    if not query or not docs:
        return {}
    k1, b = 1.2, 0.75
    df: Counter[str] = Counter()
    for words in docs.values():
        df.update(set(words))
    n = len(docs)
    average = sum(len(words) for words in docs.values()) / n or 1.0
    asked = Counter(query)
    scores: dict[str, float] = {}
    for path, words in docs.items():
        tf = Counter(words)
        score = 0.0
        for word, times in asked.items():
            f = tf.get(word, 0)
            if f:
                idf = math.log(1 + (n - df[word] + 0.5) / (df[word] + 0.5))
                norm = f + k1 * (1 - b + b * len(words) / average)
                score += (1 + math.log(times)) * idf * f * (k1 + 1) / norm
        if score > 0:
            scores[path] = score
    top = max(scores.values(), default=0.0)
    return {path: score / top for path, score in scores.items()} if top > 0 else {}


def _test_pairs(paths: Sequence[str], anchors: Sequence[str]) -> dict[str, str]:
    """Files that test a file in play, or that a test in play tests: ``{path: reason}``."""
    subjects = {s: f for f in anchors if (s := _test_subject(f))}
    stems = {s: f for f in anchors if (s := _module_stem(f))}
    found: dict[str, str] = {}
    names = {name for name, _ext in (*subjects, *stems)}
    for path in paths:
        base = path.rpartition("/")[2]
        if not any(name in base for name in names) and not base.startswith(_PACKAGE_FILES):
            continue  # cannot pair: most files, skipped without parsing their names
        subject = _test_subject(path)
        stem = _module_stem(path)
        if subject is not None and subject in stems:
            found[path] = f"test of {stems[subject]}"
        elif stem is not None and stem in subjects:
            found[path] = f"tested by {subjects[stem]}"
    return found


def rank(
    candidates: Sequence[Candidate],
    task: TaskText,
    history: Sequence[Sequence[str]],
    weights: Weights | None = None,
) -> dict[str, Ranked]:
    """Every candidate's level (higher packs first), score and reason.

    Args:
        candidates: The files that may be attached.
        task: The task's text, files in play and named tests.
        history: Changed paths per commit, newest first, of the source
            revision and its ancestors only.
        weights: The parameters (default: the measured ones).
    """
    w = weights or Weights()
    sizes = {c.path: c.size for c in candidates}
    paths = sorted(sizes)
    in_play = list(dict.fromkeys(task.files_in_play))
    named = [t for t in dict.fromkeys(task.tests) if t not in in_play]
    anchors = set(in_play)
    cochange, partner = _cochange(anchors, history, w)
    pairs = _test_pairs(paths, in_play)
    query = tokenize(task.text)
    docs = {path: _path_words(path) * 2 for path in paths}
    lexical = _bm25(query, docs)
    asked = set(query)

    found: dict[str, Ranked] = {}
    for path in paths:
        if path in anchors:
            found[path] = Ranked(TOP_LEVEL, 1.0, "file in play")
            continue
        if path in named:
            level = TOP_LEVEL - 1 - min(named.index(path), _TEST_LEVELS - 1)
            found[path] = Ranked(level, 1.0, "named test")
            continue
        near = max((_proximity(path, f) for f in in_play), default=0.0)
        parts = {
            "cochange": min(1.0, cochange.get(path, 0.0)),
            "test_pair": w.test_pair if path in pairs else 0.0,
            "lexical": w.lexical * lexical.get(path, 0.0),
            "directory": w.directory * near,
        }
        missed = 1.0
        for value in parts.values():
            missed *= 1.0 - value
        score = 1.0 - missed
        best = max(sorted(parts), key=lambda name: parts[name])
        reason = _reason(best, parts[best], path, partner, pairs, docs, asked, near)
        # relevance per byte (1 / 61 ** 0.25 at most): a few large, slightly
        # relevant files must not crowd out many small, relevant ones
        density = score / ((sizes[path] + w.overhead) ** w.size_exponent)
        level = min(TOP_LEVEL - _TEST_LEVELS - 1, round(density * TOP_LEVEL))
        found[path] = Ranked(level, round(score, 4), reason)
    return found


def _reason(
    best: str,
    value: float,
    path: str,
    partner: Mapping[str, str],
    pairs: Mapping[str, str],
    docs: Mapping[str, Sequence[str]],
    asked: set[str],
    near: float,
) -> str:
    """The main reason a file ranks where it does, in a few words."""
    if value <= 0:
        return "no signal"
    if best == "cochange":
        other = partner.get(path)
        return f"co-change with {other}" if other else "changes often"
    if best == "test_pair":
        return pairs[path]
    if best == "lexical":
        words = sorted({word for word in docs[path] if word in asked})[:3]
        return "matches " + ", ".join(f"'{word}'" for word in words)
    return "same directory" if near == 1.0 else "nearby directory"
