"""Ranking files for a task: the right context first. Pure: no I/O, no git, no clock.

The score of a file estimates the probability that the task's change touches
it. Signals, each measured on real history (``benchmarks/relevance.py``):

* the task's files in play, then its named tests — always first;
* co-change: how often the file changed together with a file in play in the
  history *before* the source revision, recency-decayed (half-life in
  commits), sweeping commits ignored (:mod:`.evidence`: in a small, young
  repository too), chores (``update dev dependencies``:
  :mod:`.chores`) weighed down unless the task is one, smoothed towards how
  often the file changes at all (changelogs rank high for good reason);
* test <-> module naming (``tests/test_termui.py`` <-> ``src/click/termui.py``);
* the task's words (objective, acceptance, criteria, scope, title) against
  each file's contents, path and defined names, and the paths the text names
  (:mod:`.retrieval`); the best content hits then seed co-change and test
  pairing as a file in play does, weighed by their strength; a file that
  defines a name the task spells out (``rebuild_auth``, ``ShellComplete``)
  weighs as one the task names;
* directory proximity to a file in play;
* how often a file changes at all — a small weight that never buys the
  budget on its own.

The signals combine as a noisy OR; files are then ordered by score per
``(min(size, 16 KiB) + 60) ** 0.25`` bytes, so that under a byte budget a few
large, slightly relevant files do not crowd out many small, relevant ones. A
size past 16 KiB counts no more: the prompt keeps the outline of a file ranked
high that does not fit whole, and makes a large one wait when smaller ones
would fit in its place (:mod:`..pack.value`), so a 160 KiB module the task is
about no longer ranks under every 2 KiB file a tenth as relevant. Contents
come as per-blob facts (:mod:`.facts`), never as bodies: ranking itself reads
no file. The same inputs always give the same order.
"""

from __future__ import annotations

import math
import posixpath
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice, repeat
from operator import attrgetter, eq, mul, sub, truediv
from typing import TYPE_CHECKING, Final

import msgspec

from .chores import chore_scale, is_chore
from .evidence import discounted, sweep_limit, trusted_share
from .pairing import paired, paired_with_seeds
from .ranked import TOP_LEVEL, Ranked, Ranking
from .retrieval import Hits, lexical_hits, similar_commits, spelled_names
from .terms import BlobFacts

if TYPE_CHECKING:
    from .index import Served

__all__ = ["TOP_LEVEL", "Candidate", "Ranked", "Ranking", "TaskText", "Weights", "rank"]


class Candidate(msgspec.Struct, frozen=True, gc=False):
    """A file that may be attached: its repository-relative path and size."""

    path: str
    size: int


@dataclass(frozen=True)
class TaskText:
    """What the ranking knows of the task."""

    text: str
    files_in_play: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)


#: Levels left for named tests, below the files in play.
_TEST_LEVELS: Final = 100


@dataclass(frozen=True)
class Weights:
    """The ranking's parameters; the defaults are the measured ones."""

    test_pair: float = 0.2
    lexical: float = 0.3
    mention: float = 0.6
    #: A file defining a name the task spells out (:func:`.retrieval.spelled_names`).
    symbol: float = 0.6
    seed_cochange: float = 0.9
    #: How many of the best content hits seed co-change and test pairing, and how
    #: close to the best one a hit must score to be a seed.
    seeds: int = 3
    seed_floor: float = 0.5
    seed_smoothing: float = 4.0
    #: How much of the prior a seed's co-change is smoothed towards (0: none).
    seed_prior: float = 0.5
    #: With no file in play: the files changed by the past commits whose subjects
    #: best match the task's text (the ``past_commits`` best, recency-decayed with
    #: a half-life in commits), weighed by how well they match.
    past: float = 0.3
    past_commits: int = 20
    past_half_life: float = 500.0
    #: ... each match against the best one or this share of a subject holding every
    #: word of the task, whichever is more (:func:`.retrieval.similar_commits`).
    past_floor: float = 0.3
    #: ... each file of a commit of more files than this lifted by this share of their
    #: count of its match (:func:`.retrieval.similar_commits`'s ``spread``).
    past_spread: int = 5
    directory: float = 0.02
    #: How much "changes often" weighs alone: never enough to buy the budget.
    prior: float = 0.15
    half_life: float = 100.0
    sweep: int = 30
    #: A commit of more than this share of a small repository's files is a sweep too.
    sweep_share: float = 0.5
    #: Fewer commits than this (sweeps aside) are trusted in proportion (:mod:`.evidence`).
    trusted: int = 20
    #: A chore commit's weight in co-change (:mod:`.chores`), unless the task is one.
    chore: float = 0.5
    smoothing: float = 2.0
    size_exponent: float = 0.25
    overhead: int = 60
    #: A file larger than this ranks as if it were this large (0: no cap).
    size_cap: int = 16_384
    level_scale: float = TOP_LEVEL


def _cochange(
    anchors: set[str],
    history: Sequence[Sequence[str]],
    w: Weights,
    scale: Sequence[float] | None = None,
) -> tuple[dict[str, float], dict[str, str], dict[str, float]]:
    """Smoothed, decayed P(file changes | an anchor changes); for each file the anchor
    it last changed with (for the reason); and how often each file changes at all
    (the prior, a share of the commits read). ``scale``: each commit's weight beside
    its age (:func:`.chores.chore_scale`; ``None``: 1 each)."""
    decay = math.log(2) / w.half_life if w.half_life > 0 else 0.0
    total = hits = 0.0
    often: dict[str, float] = {}
    together: dict[str, float] = {}
    partner: dict[str, str] = {}
    for age, files in enumerate(history):
        if not files or len(files) > w.sweep:
            continue
        weight = math.exp(-decay * age) * (scale[age] if scale else 1.0)
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
        return {}, {}, {}
    prior = {name: count / total for name, count in often.items()}
    if hits <= 0:
        return {}, partner, prior
    a = w.smoothing
    scores = {
        name: (together.get(name, 0.0) + a * prior[name]) / (hits + a)
        for name in often
        if name not in anchors
    }
    return scores, partner, prior


#: A translation catalog: the interface's strings in one language (a data file under a
#: ``locale(s)``, ``i18n``, ``l10n``, ``lang(s)``, ``languages`` or ``translations``
#: folder, or a gettext or XLIFF file). Its co-change partners are the same strings in
#: the other languages: a catalog seed lifts no other catalog (explorer23's finding).
_CATALOG: Final = re.compile(
    r"(?:^|/)(?:locales?|i18n|l10n|langs?|languages|translations)/(?:[^/]+/)*"
    r"[^/]+\.(?:json|ya?ml|toml|properties|strings|arb|ini)$"
    r"|\.(?:po|pot|xlf|xliff)$",
    re.IGNORECASE,
)


def _propagated(
    hits: Hits,
    history: Sequence[Sequence[str]],
    paths: Sequence[str],
    w: Weights,
    scale: Sequence[float] | None = None,
) -> tuple[dict[str, float], dict[str, str]]:
    """Co-change and test pairing propagated from the best content hits (the seeds),
    each weighed by its seed's strength: ``({path: score}, {path: reason})``
    (``scale``: as :func:`_cochange`'s)."""
    scores: dict[str, float] = {}
    reasons: dict[str, str] = {}
    strengths = dict(hits.seeds)
    for seed, cochange in _seeded_cochange(list(strengths), history, w, scale).items():
        strength = strengths[seed]
        catalog = _CATALOG.search(seed) is not None
        for path, value in cochange.items():
            if catalog and _CATALOG.search(path) is not None:
                continue  # (the same strings in another language)
            value = min(1.0, value) * strength * w.seed_cochange
            if value > scores.get(path, 0.0):
                scores[path], reasons[path] = value, f"co-change with {seed} (content hit)"
    for path, (why, seed) in paired_with_seeds(paths, list(strengths)).items():
        value = strengths[seed] * w.test_pair
        if value > scores.get(path, 0.0):
            scores[path], reasons[path] = value, f"{why} (content hit)"
    return scores, reasons


def _seeded_cochange(
    seeds: Sequence[str],
    history: Sequence[Sequence[str]],
    w: Weights,
    scale: Sequence[float] | None = None,
) -> dict[str, dict[str, float]]:
    """For each seed (a content hit, not a file the task names), the smoothed, decayed
    P(file changes | the seed changes) of the files that did change with it, all in
    one pass over the history; smoothed towards :attr:`Weights.seed_prior` of the
    prior. A file that never changed with the seed gets nothing from it: how often
    it changes must not buy it a place through a content hit (``scale``: as
    :func:`_cochange`'s)."""
    if not seeds:
        return {}
    decay = math.log(2) / w.half_life if w.half_life > 0 else 0.0
    total = 0.0
    often: dict[str, float] = {}
    hits = dict.fromkeys(seeds, 0.0)
    together: dict[str, dict[str, float]] = {seed: {} for seed in seeds}
    for age, files in enumerate(history):
        if not files or len(files) > w.sweep:
            continue
        weight = math.exp(-decay * age) * (scale[age] if scale else 1.0)
        total += weight
        for name in files:
            often[name] = often.get(name, 0.0) + weight
        for seed in seeds:
            if seed in files:
                hits[seed] += weight
                mine = together[seed]
                for name in files:
                    mine[name] = mine.get(name, 0.0) + weight
    if total <= 0:
        return {}
    a, share = w.seed_smoothing, w.seed_prior
    found: dict[str, dict[str, float]] = {}
    for seed in seeds:
        if hits[seed] <= 0:
            continue
        mine = together[seed]
        found[seed] = {
            name: (count + a * share * often[name] / total) / (hits[seed] + a)
            for name, count in mine.items()
            if name != seed
        }
    return found


def rank(
    candidates: Sequence[Candidate],
    task: TaskText,
    history: Sequence[Sequence[str]],
    weights: Weights | None = None,
    facts: Mapping[str, BlobFacts] | None = None,
    subjects: Sequence[str] = (),
    index: Served | None = None,
) -> Ranking:
    """Every candidate's level (higher packs first), score and reason.

    Args:
        candidates: The files that may be attached.
        task: The task's text, files in play and named tests.
        history: Changed paths per commit, newest first, of the source
            revision and its ancestors only.
        weights: The parameters (default: the measured ones).
        facts: What is known of each path's contents (:mod:`.facts`); a path
            without is ranked by its path's words alone.
        subjects: The subject line of each commit of ``history`` (same order).
        index: A word index (:mod:`.index`): ``facts`` then of the paths it leaves.
    """
    w = weights or Weights()
    paths, sizes = _sorted(candidates)
    limit = sweep_limit(paths, history, w.sweep, w.sweep_share)
    small, w = limit < w.sweep, replace(w, sweep=limit)
    in_play = list(dict.fromkeys(task.files_in_play))
    anchors = set(in_play)
    named = [t for t in dict.fromkeys(task.tests) if t not in anchors]
    # a chore weighs less in co-change, unless the task is one (then they are its kin)
    scale = None if is_chore(task.text) else chore_scale(subjects, len(history), w.chore)
    cochange, partner, prior = _cochange(anchors, history, w, scale)
    pairs = paired(paths, [*in_play, *named])  # (a named test: its module too)
    hits = _lexical(task.text, paths, facts or {}, index, w, {*anchors, *named}, small)
    spelled = spelled_names(task.text, hits.defines) if w.symbol else {}
    propagated, carried = _propagated(hits, history, paths, w, scale)
    trust = trusted_share(history, w.sweep, w.trusted)
    cochange, prior, propagated = discounted(trust, cochange, prior, propagated)
    # with nothing in play, the files past commits like this task changed
    past = {} if in_play else _similar(task.text, subjects, history, w)

    near = _nearness(paths, in_play) if in_play else {}
    # each signal's nonzero values, in the order the noisy OR multiplies them
    table = (
        ("cochange", {path: min(1.0, value) for path, value in cochange.items()}),
        ("test_pair", dict.fromkeys(pairs, w.test_pair)),
        ("mention", dict.fromkeys(hits.mentioned, w.mention)),
        ("symbol", dict.fromkeys(spelled, w.symbol)),
        ("lexical", _times(w.lexical, hits.lexical)),
        ("propagated", propagated),
        ("directory", {path: w.directory * value for path, value in near.items()}),
        ("prior", {path: w.prior * min(1.0, value) for path, value in prior.items()}),
        ("past", {path: w.past * value for path, value in past.items()}),
    )
    # a signal at 0 changes neither the noisy OR nor the reason: only the signals some
    # file has are asked
    active = tuple((name, values) for name, values in table if values)
    why = _Why(partner, pairs, hits, carried, active, spelled)
    return _placed(paths, sizes, set(in_play), named, active, why, near, w)


_path: Final = attrgetter("path")
_size: Final = attrgetter("size")


def _sorted(candidates: Sequence[Candidate]) -> tuple[list[str], list[int]]:
    """The candidates' paths, sorted, and their sizes in that order (a path given
    twice: once, with its last size)."""
    ordered = sorted(candidates, key=_path)  # (stable: of equal paths, the last is last)
    paths = list(map(_path, ordered))
    if any(map(eq, paths, islice(paths, 1, None))):
        last = dict(zip(paths, map(_size, ordered), strict=True))
        return list(last), list(last.values())
    return paths, list(map(_size, ordered))


def _times(weight: float, values: Mapping[str, float]) -> dict[str, float]:
    """``{path: weight * value}`` of ``values`` (a step in C per file)."""
    return dict(zip(values, map(mul, repeat(weight), values.values()), strict=True))


def _placed(
    paths: list[str],
    sizes: list[int],
    anchors: set[str],
    named: list[str],
    active: Sequence[tuple[str, Mapping[str, float]]],
    why: _Why,
    near: Mapping[str, float],
    w: Weights,
) -> Ranking:
    """Each file's place from its signals' values (``active``: per signal, by path)."""
    # the signals' noisy OR (the score), taken signal by signal: each file's factors
    # multiply in the table's order, as they would file by file (most files have one
    # or two signals of eight: a file's main one is found when its reason is spelled)
    missed: dict[str, float] = {}
    prior = missed.get
    for _name, values in active:
        if not missed:  # (1.0 times a factor is the factor; a factor of 1.0 changes nothing)
            missed = dict(zip(values, map(sub, repeat(1.0), values.values()), strict=True))
            prior = missed.get
            continue
        for path, value in values.items():
            if value:
                missed[path] = prior(path, 1.0) * (1.0 - value)
    # the level each earns per byte: a few large, slightly relevant files must not crowd
    # out many small, relevant ones (every file at once, each step as a file's formula;
    # in columns: of 30,000 files a task keeps a few hundred)
    overhead, exponent, cap = w.overhead, w.size_exponent, w.size_cap or max(sizes, default=0)
    divisors = {size: (min(size, cap) + overhead) ** exponent for size in set(sizes)}
    scores = array("d", map(sub, repeat(1.0), map(missed.get, paths, repeat(1.0))))
    del missed
    per_byte = map(truediv, scores, map(divisors.__getitem__, sizes))
    highest = TOP_LEVEL - _TEST_LEVELS - 1
    levels = map(min, repeat(highest), map(round, map(mul, per_byte, repeat(w.level_scale))))
    fixed: dict[str, str] = {}  # (the reasons of the files whose level is set)
    found = Ranking(paths, array("q", levels), scores, why, near, fixed)
    for path in anchors:
        if _set(found, path, TOP_LEVEL):
            fixed[path] = "file in play"
    for at, path in enumerate(named):
        if _set(found, path, TOP_LEVEL - 1 - min(at, _TEST_LEVELS - 1)):
            fixed[path] = "named test"
    return found


def _set(found: Ranking, path: str, level: int) -> bool:
    """Set ``path``'s level (and a score of 1), if it is ranked."""
    row = found.row(path)
    if row is None:
        return False
    found.levels[row], found.scores[row] = level, 1.0
    return True


def _nearness(paths: Sequence[str], in_play: Sequence[str]) -> dict[str, float]:
    """Each path's proximity to the nearest file in play: 1 in the same folder,
    halving with each step apart, 0 with no folder in common. By folders: the
    fewest steps from a path's folder up to one some file in play is under, and
    down to that file's, over every folder above the path (not each path against
    each file in play: 3,000 files by 1,000 in play took seconds)."""
    below: dict[tuple[str, ...], int] = {}  # (folder: fewest steps down to one in play)
    for folder in {posixpath.dirname(f) for f in in_play}:
        parts = tuple(folder.split("/")) if folder else ()
        for depth in range(len(parts) + 1):
            above = parts[:depth]
            below[above] = min(below.get(above, len(parts)), len(parts) - depth)
    nearest: dict[str, float] = {}
    for folder in {posixpath.dirname(path) for path in paths}:
        parts = tuple(folder.split("/")) if folder else ()
        steps = [
            len(parts) - depth + below[parts[:depth]]
            for depth in range(1, len(parts) + 1)
            if parts[:depth] in below
        ]
        same = below.get(parts) == 0  # (a file in play in this very folder, the top too)
        nearest[folder] = 1.0 if same else 0.5 ** min(steps) if steps else 0.0
    return {path: nearest[posixpath.dirname(path)] for path in paths}


def _lexical(
    text: str,
    paths: Sequence[str],
    facts: Mapping[str, BlobFacts],
    index: Served | None,
    w: Weights,
    named: set[str],
    small: bool = False,
) -> Hits:
    """The content hits of the task's text (:func:`.retrieval.lexical_hits`); a
    file the task names seeds nothing (it is an anchor already); in a ``small``
    repository, its README counts as an aggregate. The files of the title's area
    count as named unless one of them is in play (then it is anchored already; its
    neighbours crowded out the files that changed with it)."""
    seeds, floor = w.seeds, w.seed_floor
    hits = lexical_hits(text, paths, facts, seeds=seeds, floor=floor, index=index, overview=small)
    hits.seeds = [(p, s) for p, s in hits.seeds if p not in named]
    if named.isdisjoint(hits.areas):
        for path, area in hits.areas.items():
            hits.mentioned.setdefault(path, area)
    return hits


def _similar(
    text: str, subjects: Sequence[str], history: Sequence[Sequence[str]], w: Weights
) -> dict[str, float]:
    """The files past commits like the task changed (:func:`.retrieval.similar_commits`)."""
    if not subjects:
        return {}
    return similar_commits(
        text,
        subjects,
        history,
        count=w.past_commits,
        half_life=w.past_half_life,
        floor=w.past_floor,
        spread=w.past_spread,
    )


#: The signals a file's score combines, by name: the main reason is the first of the
#: strongest in this order.
_SIGNALS: Final = (
    "cochange",
    "directory",
    "lexical",
    "mention",
    "past",
    "prior",
    "propagated",
    "symbol",
    "test_pair",
)
_ORDER: Final = {name: i for i, name in enumerate(_SIGNALS)}


def _strongest(parts: Sequence[tuple[str, float]]) -> tuple[str, float]:
    """The main signal among a file's nonzero ``(name, value)`` parts: the strongest,
    the first in :data:`_SIGNALS` of equals (no part: ``cochange`` at 0)."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return _SIGNALS[0], 0.0
    return min(parts, key=lambda part: (-part[1], _ORDER[part[0]]))


@dataclass(frozen=True)
class _Why:
    """What the reasons are taken from."""

    partner: Mapping[str, str]
    pairs: Mapping[str, str]
    hits: Hits
    carried: Mapping[str, str]
    #: Per signal some file has, its nonzero values by path (in the table's order).
    active: Sequence[tuple[str, Mapping[str, float]]] = ()
    #: The files defining a name the task spells out: path -> that name.
    spelled: Mapping[str, str] = field(default_factory=dict)

    def main_reason(self, path: str, near: float = 0.0) -> str:
        """The reason of ``path``'s strongest signal (:func:`_strongest`)."""
        parts = [(name, value) for name, values in self.active if (value := values.get(path))]
        best, value = _strongest(parts)
        return self.reason(best, value, path, near)

    def reason(self, best: str, value: float, path: str, near: float = 0.0) -> str:
        """The main reason a file ranks where it does, in a few words (``near``: its
        proximity to a file in play)."""
        if value <= 0:
            return "no signal"
        if best == "cochange":
            other = self.partner.get(path)
            return f"co-change with {other}" if other else "changes often"
        if best == "test_pair":
            return self.pairs[path]
        if best == "symbol":
            return f"defines {self.spelled[path]} (named in the task)"
        if best == "mention":
            return f"named in the task ('{self.hits.mentioned[path]}')"
        if best == "lexical":
            defines = self.hits.defines.get(path)
            if defines:
                return "defines " + ", ".join(defines[:3])
            matched = self.hits.matched.get(path, [])
            return "matches " + ", ".join(f"'{word}'" for word in matched)
        if best == "propagated" and not any(path == seed for seed, _ in self.hits.seeds):
            return self.carried[path]
        if best == "past":
            return "changed by similar past commits"
        if best == "propagated":  # a content hit itself: its own words say more
            return self.reason("lexical", 1.0, path, near)
        if best == "prior":
            return "changes often"
        return "same directory" if near == 1.0 else "nearby directory"
