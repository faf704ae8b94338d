"""A ranking's result: every candidate's level and score, held as columns.

:func:`.rank.rank` ranks tens of thousands of files of which a task keeps a few
hundred: each file's level and score are two numbers in ``array`` columns (in
path order), and a file's :class:`Ranked` (with its reason, spelled when
asked) is made when it is looked up. :meth:`Ranking.places` gives add-tree's
``(priority, score, reason)`` of each file the same way, and the files in
packing order from the columns (issue 33: the peak memory of a task).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import neg, sub
from typing import TYPE_CHECKING, Final, Protocol

__all__ = ["TOP_LEVEL", "Places", "Ranked", "Ranking"]

#: The level of a file in play; every other file ranks below it.
TOP_LEVEL: Final = 10_000
#: The decimal digits a score is given to.
SCORE_DIGITS: Final = 4


class _Explains(Protocol):
    """What a reason is spelled from (:class:`.rank._Why`)."""

    def main_reason(self, path: str, near: float = 0.0) -> str: ...


if TYPE_CHECKING:
    _Because = tuple[_Explains, str, float]


class Ranked:
    """A file's place: ``level`` from 0 to :data:`TOP_LEVEL` (higher packs first;
    files in play at the top, then named tests, then by relevance per byte);
    ``score`` in [0, 1]; ``reason`` says why in a few words (``file in play``,
    ``co-change with src/x.py``...).

    Levels are a file's own measure, not its position among the others, so
    adding or removing one file does not move every other.

    The reason is spelled when first asked (``because``: what it is spelled from):
    of tens of thousands of files ranked, only the few hundred kept show theirs.
    Equal, hashed and shown by all three values, as a plain record; called, it
    spells its reason (a place's reason, :data:`.links.Reason`).
    """

    __slots__ = ("_near", "_path", "_reason", "_why", "level", "score")

    def __init__(
        self,
        level: int,
        score: float,
        reason: str = "",
        because: _Because | None = None,
    ) -> None:
        self.level, self.score, self._reason = level, score, reason
        self._why: _Explains | None = None
        self._path, self._near = "", 0.0
        if because is not None:
            self._why, self._path, self._near = because

    @property
    def reason(self) -> str:
        """Why the file ranks where it does."""
        if self._why is not None:
            self._reason, self._why = self._why.main_reason(self._path, self._near), None
        return self._reason

    def explain(self) -> str:
        """:attr:`reason`, as a function (a place's reason, spelled when kept)."""
        return self.reason

    __call__ = explain

    def _values(self) -> tuple[int, float, str]:
        return self.level, self.score, self.reason

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Ranked):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"Ranked(level={self.level!r}, score={self.score!r}, reason={self.reason!r})"


class Ranking(Mapping[str, Ranked]):
    """Every candidate's :class:`Ranked`, by path: ``paths`` sorted, each one's
    level and score in columns, made when looked up (``fixed``: the reasons of the
    files whose place is set, in play or named; ``near``: each file's proximity
    to a file in play). A score is rounded to :data:`SCORE_DIGITS` when looked up
    (``round(x, 4)`` of each of 30,000 files cost 17 ms; a task keeps a few hundred)."""

    def __init__(
        self,
        paths: list[str],
        levels: array[int],
        scores: array[float],
        why: _Explains,
        near: Mapping[str, float],
        fixed: Mapping[str, str],
    ) -> None:
        self.paths, self.levels, self.scores = paths, levels, scores
        self._why, self._near, self._fixed = why, near, fixed

    def row(self, path: str) -> int | None:
        """``path``'s row (``None``: not ranked)."""
        at = bisect_left(self.paths, path)
        return at if at < len(self.paths) and self.paths[at] == path else None

    def at(self, row: int) -> Ranked:
        """The :class:`Ranked` of the file of ``row``."""
        path = self.paths[row]
        fixed = self._fixed.get(path)
        score = round(self.scores[row], SCORE_DIGITS)
        if fixed is not None:
            return Ranked(self.levels[row], score, fixed)
        return Ranked(self.levels[row], score, "", (self._why, path, self._near.get(path, 0.0)))

    def ranked_at(self, rows: Iterable[int]) -> Iterator[Ranked]:
        """:meth:`at` of each of ``rows``, in turn (made as they are asked for)."""
        paths, levels, scores = self.paths, self.levels, self.scores
        fixed, near, why = self._fixed, self._near, self._why
        for row in rows:
            path = paths[row]
            reason, score = fixed.get(path), round(scores[row], SCORE_DIGITS)
            if reason is not None:
                yield Ranked(levels[row], score, reason)
            else:
                yield Ranked(levels[row], score, "", (why, path, near.get(path, 0.0)))

    def __getitem__(self, path: str) -> Ranked:
        row = self.row(path)
        if row is None:
            raise KeyError(path)
        return self.at(row)

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)

    def places(self, top: int, priority: Callable[[int, int], int]) -> Places:
        """Each file's ``(priority, score, reason)`` in the band from ``top`` down:
        ``priority(top, TOP_LEVEL - level)``, made when looked up."""
        below = map(sub, repeat(TOP_LEVEL), self.levels)
        return Places(self, array("q", map(priority, repeat(top), below)))


class Places(Mapping[str, tuple[int, float | None, Callable[[], str]]]):
    """add-tree's place of each file a :class:`Ranking` ranks: its priority (a
    column), score and reason (the file's :class:`Ranked`, which spells it when
    called), made when looked up."""

    def __init__(self, ranking: Ranking, priorities: array[int]) -> None:
        self._ranking, self.priorities = ranking, priorities

    @property
    def paths(self) -> list[str]:
        """The files placed, sorted."""
        return self._ranking.paths

    def at(self, row: int) -> tuple[int, float | None, Callable[[], str]]:
        """The place of the file of ``row``."""
        ranked = self._ranking.at(row)
        return self.priorities[row], ranked.score, ranked

    def places_at(
        self, rows: Sequence[int]
    ) -> Iterator[tuple[int, float | None, Callable[[], str]]]:
        """:meth:`at` of each of ``rows``, in turn (made as they are asked for)."""
        priorities = self.priorities
        for row, ranked in zip(rows, self._ranking.ranked_at(rows), strict=True):
            yield priorities[row], ranked.score, ranked

    def packing_order(self) -> Sequence[int]:
        """The rows by priority (higher first), then path."""
        lower = array("q", map(neg, self.priorities))
        return array("q", sorted(range(len(lower)), key=lower.__getitem__))

    def __getitem__(self, path: str) -> tuple[int, float | None, Callable[[], str]]:
        row = self._ranking.row(path)
        if row is None:
            raise KeyError(path)
        return self.at(row)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ranking.paths)

    def __len__(self) -> int:
        return len(self._ranking.paths)
