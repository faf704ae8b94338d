"""How much a history says of which files go together, in a small, young repository. Pure.

A new user's first repository has a handful of files and a few commits, most of
them committed together: its first commit adds every file. Read as co-change,
every file would have changed with every other, and a content hit would lift
them all (the README it was committed with above ``parser.py`` for a ticket
about ``parse()``). A commit that changed most of a small repository's files is
a sweep, as one of more than 30 files is in any repository; and a history of a
few commits is trusted in proportion to their number.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["discounted", "sweep_limit", "trusted_share"]


def sweep_limit(
    paths: Sequence[str], history: Sequence[Sequence[str]], sweep: int, share: float
) -> int:
    """The most files a commit may change and still say which files go together:
    ``sweep``, or ``share`` of the repository's files when that is fewer (its files:
    ``paths``, those ranked, or every file the history names if more). Fewer than
    ``sweep / share`` files make a small repository (``share`` 0: none is)."""
    if share <= 0 or len(paths) * share >= sweep:
        return sweep
    enough = sweep / share
    seen = set(paths)
    for files in history:  # (in a repository of many files, a few commits show it)
        seen.update(files)
        if len(seen) >= enough:
            return sweep
    return min(sweep, int(len(seen) * share))


def trusted_share(history: Sequence[Sequence[str]], sweep: int, trusted: int) -> float:
    """How far the history's co-change can be trusted: 1 from ``trusted`` commits on
    (commits of more than ``sweep`` files aside), in proportion below (``trusted``
    0: always 1). Two commits that changed two files together are little evidence
    that the next change will; and in a young repository each file changed in
    most commits, so each would "change often"."""
    if trusted <= 0:
        return 1.0
    found = 0
    for files in history:
        if 0 < len(files) <= sweep:
            found += 1
            if found >= trusted:
                return 1.0
    return found / trusted


def discounted(share: float, *signals: dict[str, float]) -> tuple[dict[str, float], ...]:
    """Each of ``signals`` (values by path) times ``share`` (the same ones at 1)."""
    if share >= 1.0:
        return signals
    return tuple({path: share * value for path, value in values.items()} for values in signals)
