"""The notice's settling: what is left out so that the ``### Not included``
section fits beside what the walk keeps (:mod:`.walk`), and the exact token
total the caller verifies after the walk.

While the notice no longer fits, the last kept attachment the task does not
name (nor ranks high) is left out, and the notice names it too; when only
such attachments are left, the notice names fewer and counts the rest; one
that ranks high, kept whole, is left out only where not even the count fits
beside it, and the list then stays (:func:`settle`). At the walk's end, a notice
that names fewer than :data:`NAMES` lines and counts a left-out attachment that ranks
high gets the room of the last one kept whole above it, outlined, for its lines
(:func:`names_first`). :func:`back_off` drops
the last kept attachments until the exact token total fits. Pure: no I/O, no
git.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Final

from .entries import AttachmentLoader, Item
from .measure import (
    Plan,
    Shrunk,
    Walked,
    body_of,
    candidate,
    fits_beside,
    measured,
    min_body_bytes,
)
from .omissions import Notice
from .render import utf8_len

__all__ = ["LINE_BYTES", "NAMES", "back_off", "names_first", "settle"]

#: How many left-out attachments that rank high the notice names before the
#: last one kept whole above them is outlined for their lines (:func:`names_first`).
NAMES: Final = 5

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


def names_first(
    plan: Plan, walked: Walked, top: int, load_body: AttachmentLoader | None
) -> Walked:
    """At the walk's end, when the notice names fewer than :data:`NAMES` lines and
    counts a left-out attachment that ranks high (its place under ``top``): the
    last attachment kept whole that ranks high (above it, not named by the task,
    not opening the block) is tried as its outline, the room it frees going to
    the notice's lines (the last kept ones that rank low are left out for them
    as :func:`settle` leaves them out). Kept only when the notice then names the
    first :data:`NAMES` of those it counted (all, when fewer), nothing ranked
    above them left out: a worker told where five files ranked high are beats
    two kilobytes more of one file; else ``walked`` as it was."""
    notice = walked.notice
    first = None if notice is None else notice.first_counted()
    if notice is None or first is None or first >= top or notice.named() >= NAMES:
        return walked
    if plan.outliner is None or not walked.notice_fits:
        return walked
    eligible = [
        at
        for at, kept in enumerate(walked.kept)
        if kept.index < first and kept.shrunk is None and not kept.named and not kept.opens
    ]
    if not eligible or walked.kept[eligible[-1]].index >= top:
        return walked
    trial = walked.copy()
    if not _outline_kept(plan, trial, eligible[-1], load_body):
        return walked
    assert trial.notice is not None
    before = notice.named() + 1  # (the lines above the first counted, the outline's too)
    trial.notice.name_up_to(before + NAMES)
    settle(plan, trial)
    above = {kept.index for kept in walked.kept if kept.index < first}
    wanted = min(NAMES, len(trial.notice.items) - before)
    if (
        trial.notice_fits
        and trial.notice.named() - before >= wanted
        and above <= {kept.index for kept in trial.kept}
    ):
        return trial
    return walked


def _outline_kept(plan: Plan, walked: Walked, at: int, load_body: AttachmentLoader | None) -> bool:
    """Put the outline of the attachment kept whole at ``at`` in its place, and
    name it in the notice as outlined, when it has one smaller than the whole."""
    assert plan.outliner is not None
    kept = walked.kept[at]
    entry = kept.entry
    outline = plan.outliner(entry, lambda: body_of(entry, load_body))
    if not outline:
        return False
    digest = hashlib.sha256(outline.encode("utf-8", "surrogatepass")).hexdigest()
    item = Item(outline, digest, f"{entry.source} (outline)")
    section, cost_json, cost_prompt, tokens = candidate(
        plan, entry, item, "outline", max(kept.place, 2)
    )
    size = measured(plan, cost_json, cost_prompt)
    if size >= kept.size or (plan.meter is not None and tokens >= kept.tokens):
        return False
    full = walked.sizes.get(kept.index, min_body_bytes(entry))
    shrunk = Shrunk(entry.hash, entry.source, digest, full - utf8_len(outline))
    new = plan.kept((kept.index, entry), item, section, (cost_json, cost_prompt), shrunk)
    # (as one outlined in place: not left out again for the notice)
    new.size, new.tokens, new.named, new.place = size, tokens, True, kept.place
    walked.swap(at, new)
    walked.note(kept.index, entry, "byte_budget", outlined=True)
    return True


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
