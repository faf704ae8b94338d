"""The notice's settling: what is left out so that the ``### Not included``
section fits beside what the walk keeps (:mod:`.walk`), and the exact token
total the caller verifies after the walk.

While the notice no longer fits, the last kept attachment the task does not
name (nor ranks high) is left out, and the notice names it too; when only
such attachments are left, the notice names fewer and counts the rest; one
that ranks high, kept whole, is left out only where not even the count fits
beside it, and the list then stays (:func:`settle`). :func:`back_off` drops
the last kept attachments until the exact token total fits. Pure: no I/O, no
git.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .measure import Plan, Walked, fits_beside
from .omissions import Notice
from .render import utf8_len

__all__ = ["LINE_BYTES", "back_off", "settle"]

#: What a line of the notice costs besides its source (an upper bound): leaving
#: out a file smaller than its own line gains nothing.
LINE_BYTES: Final = 200
#: What counting one more omission can add to the notice (a digit, an "s").
_COUNT_BYTES: Final = 8


def settle(plan: Plan, walked: Walked) -> None:
    """After the notice grew: while it no longer fits beside what is kept, leave
    out the last kept attachment (one the task does not name, if any, and whose
    leaving frees more than the notice's line for it costs), which the notice
    then names too. When nothing is left to drop and it still does not fit, the
    notice is left out (the omissions are still reported)."""
    if walked.notice is None or not walked.notice or not walked.notice_fits:
        return
    notice = walked.notice
    while (plan.room_bytes is not None and walked.total_bytes() > plan.room_bytes) or (
        plan.room_tokens is not None and walked.total_tokens() > plan.room_tokens
    ):
        at = _last_to_drop(walked, gain=True)
        if at is None:
            # one that ranks high goes only where not even the count fits beside it
            # (then the list stays); else the notice names fewer
            at = _last_to_drop(walked, gain=True, high=True)
            if (at is None or fits_beside(plan, walked, notice.count_only())) and (
                notice.unlist_last()
            ):
                continue
            if at is None:
                walked.notice_fits = False  # (for good: the notice only grows)
                return
        walked.drop(at)


def _last_to_drop(walked: Walked, *, gain: bool, high: bool = False) -> int | None:
    """The place of the last kept attachment the task does not name (nor ranks
    high: one kept whole only with ``high``, one outlined in place never); with
    ``gain``, only one whose leaving frees more than its line in the notice
    costs (``None`` when there is none: the notice then names fewer); without,
    the last kept when all are named."""
    # (a notice that names no more only counts the next one: leaving out any
    # attachment but the smallest frees room)
    lists = walked.notice is not None and walked.notice.would_list()
    for allowed in (False, True) if not gain else (high,):
        for at in range(len(walked.kept) - 1, -1, -1):
            kept = walked.kept[at]
            line = LINE_BYTES + utf8_len(kept.item.source) if lists else _COUNT_BYTES
            if not kept.named and (allowed or not kept.high) and (not gain or kept.size > line):
                return at
    return None if gain or not walked.kept else len(walked.kept) - 1


def back_off(
    walked: Walked,
    max_tokens: int | None,
    total_tokens: Callable[[Walked], int],
    notice: Notice | None = None,
) -> int | None:
    """The exact token total, after dropping the last kept attachments until it fits.

    The walk's sum of parts is at most a token or so per attachment off the
    whole (almost always over), so this rarely drops anything; each step
    recounts the whole once, and there are at most as many steps as kept
    attachments. ``notice``: the prompt's notice as the walk began it; when
    the walk's notice did not fit, the one that only counts is tried, exactly,
    so that nothing is left out unsaid when it fits alone (:func:`_mention`).
    """
    if max_tokens is None:
        return None
    total = total_tokens(walked)
    while total > max_tokens and walked.kept:
        total = _drop_last(walked, total_tokens)
    if total > max_tokens and walked.notice:
        walked.notice_fits = False  # the notice alone does not fit: left out
        total = total_tokens(walked)
    if notice is not None and not walked.notice_fits:
        total = _mention(walked, max_tokens, total_tokens, notice.counting())
    return total


def _drop_last(walked: Walked, total_tokens: Callable[[Walked], int]) -> int:
    """Leave out the last kept attachment (one the task does not name, if any); the
    exact total after."""
    at = _last_to_drop(walked, gain=False)
    walked.drop(len(walked.kept) - 1 if at is None else at)
    walked.in_order()
    return total_tokens(walked)


def _mention(
    walked: Walked, max_tokens: int, total_tokens: Callable[[Walked], int], counting: Notice
) -> int:
    """When the count-only ``counting`` notice fits the budget alone (its tokens
    counted exactly, as it would be with every kept attachment left out too), make
    it the prompt's and leave out the last kept attachments until the whole fits
    (bytes too); the exact total (the prompt's as it stands when it does not fit)."""
    room = walked.plan.room_bytes

    def over(state: Walked, total: int) -> bool:
        return total > max_tokens or (room is not None and state.total_bytes() > room)

    for item in walked.missing(every_kept=True):
        counting.add(item)
    alone = Walked(walked.plan, notice=counting)
    if not counting or over(alone, total_tokens(alone)):
        return total_tokens(walked)
    walked.notice = counting.counting()
    for item in walked.missing():
        walked.notice.add(item)
    walked.notice_fits = True
    total = total_tokens(walked)
    while over(walked, total) and walked.kept:
        total = _drop_last(walked, total_tokens)
    return total
