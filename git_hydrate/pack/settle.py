"""The notice's settling: what is left out so that the ``### Not included``
section fits beside what the walk keeps (:mod:`.walk`), and the exact token
total the caller verifies after the walk.

While the notice no longer fits, the last kept attachment the task does not
name (nor ranks high) is left out, and the notice names it too; when only
such attachments are left, the notice names fewer and counts the rest; one
that ranks high, kept whole, is left out only where not even the count fits
beside it, and the list then stays (:func:`settle`). At the walk's end, a notice
that counts the first attachment left out, ranked high, gets the room of those kept
whole that rank high, outlined, the lowest ranked first, for its line; one that names
fewer than :data:`NAMES` lines and counts an attachment that ranks high gets the room
of the last one kept whole above it, outlined (:func:`names_first`). :func:`back_off` drops
the last kept attachments until the exact token total fits. Pure: no I/O, no
git.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Final

import msgspec

from .entries import AttachmentLoader, Item
from .measure import (
    Kept,
    Plan,
    Shrunk,
    Walked,
    body_of,
    candidate,
    fits_beside,
    measured,
    min_body_bytes,
)
from .omissions import Missing, Notice
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
    """At the walk's end, room for the notice's lines, on a copy of the walk (the
    last kept attachments that rank low are left out for them as :func:`settle`
    leaves them out; ``walked`` as it was when no way is found, and nothing kept
    above the file to name is left out). When it counts (does not name) the
    first attachment left out and that one ranks high (its place under
    ``top``): the room left names it if it can; else the lowest ranked of those
    kept whole that rank high (not named by the task, not opening the block)
    whose outline frees the room for its line (and its own, when it comes
    first) is outlined, and the notice names as many of the first :data:`NAMES`
    it counted as that room holds; where no one outline does, they are
    outlined one after the other from the lowest ranked until it is named (a
    worker told which file ranked high it lacks beats a kilobyte more of one
    file). Files with no outline are never left out for it: it then stays
    counted. Else (or when that finds no way), when it names fewer than
    :data:`NAMES` and counts one that ranks high: the last kept whole above it
    is outlined if that names the first :data:`NAMES` it counted (five files
    ranked high named beat two kilobytes more of one file)."""
    notice = walked.notice
    if notice is None or not walked.notice or not walked.notice_fits:
        return walked
    lacking = notice.first_left_out()
    if lacking is not None and lacking < top and not notice.line_bytes(lacking):
        named = _name_lacking(plan, walked, top, lacking, load_body)
        if named is not walked:
            return named
    first = notice.first_counted()
    if first is None or first >= top or notice.named() >= NAMES or plan.outliner is None:
        return walked
    above = [at for at in _whole_high(walked, top) if walked.kept[at].index < first]
    outline = _outline_for(plan, walked, above[-1], load_body) if above else None
    if outline is None:
        return walked
    fifth = notice.counted(NAMES)[-1]
    return _named(plan, walked, [outline], (first, fifth, fifth)) or walked


def _name_lacking(
    plan: Plan, walked: Walked, top: int, lacking: int, load_body: AttachmentLoader | None
) -> Walked:
    """:func:`names_first` for the first attachment left out (at ``lacking``),
    which the notice counts."""
    assert walked.notice is not None
    wanted = (lacking, lacking, max(lacking, walked.notice.counted(NAMES)[-1]))
    least = _least_gain(plan, walked, lacking)
    if least is None:
        return walked
    if least <= 0:  # (the room left, and the attachments ranked low left out)
        trial = _named(plan, walked, [None], wanted)
        if trial is not None:
            return trial
    outlines: list[Kept | None] = []
    for at in reversed(_whole_high(walked, top)) if plan.outliner is not None else ():
        outline = _outline_for(plan, walked, at, load_body)
        gain = 0 if outline is None else walked.kept[at].size - outline.size
        if outline is None or gain <= _line(walked, outline, lacking):
            continue  # (none, or its own line takes what it frees)
        outlines.append(outline)
        if gain - _line(walked, outline, lacking) >= least:
            trial = _named(plan, walked, [outline], wanted)
            if trial is not None:
                return trial
    return _named(plan, walked, outlines, wanted) or walked


def _whole_high(walked: Walked, top: int) -> list[int]:
    """The places among the kept of the attachments kept whole that rank high
    (under ``top``), the task does not name, and that do not open the block."""
    return [
        at
        for at, kept in enumerate(walked.kept)
        if kept.index < top and kept.shrunk is None and not kept.named and not kept.opens
    ]


def _least_gain(plan: Plan, walked: Walked, index: int) -> int | None:
    """The fewest bytes an outline must free so that the notice names the
    attachment at ``index``: what naming it adds to the notice, less the room
    left and the attachments :func:`settle` would leave out for it (0 without a
    byte budget: every outline is tried); ``None`` when the notice's lines
    cannot name it (:attr:`.Notice.max_listed_bytes`)."""
    assert walked.notice is not None
    notice = walked.notice.copy()
    notice.name_through(index)
    if not notice.line_bytes(index):
        return None
    if plan.room_bytes is None:
        return 0
    growth = notice.cost(after_attachments=True) - walked.notice_bytes()
    low = sum(kept.size for kept in walked.kept if not kept.named and not kept.high)
    return growth - (plan.room_bytes - walked.total_bytes()) - low


def _line(walked: Walked, outline: Kept, lacking: int) -> int:
    """The bytes of the line that names ``outline`` as outlined, when it comes
    before the one at ``lacking`` in the notice (0 after it)."""
    if outline.index > lacking or walked.notice is None:
        return 0
    entry = outline.entry
    size = walked.sizes.get(outline.index, min_body_bytes(entry))
    said = Missing(outline.index, entry.hash, entry.source, size, "byte_budget", True)
    return walked.notice.line_of(said)


def _named(
    plan: Plan,
    walked: Walked,
    outlines: Sequence[Kept | None],
    wanted: tuple[int, int, int],
) -> Walked | None:
    """A copy of ``walked`` with ``outlines`` (of attachments kept whole, the
    lowest ranked first; ``None``: none) put in place one after the other until
    the notice, settled after each and naming up to the last of ``wanted``
    (places in packing order: above which nothing kept may be left out, the
    one to name, the last to name), names the one to name; ``None`` when it
    never does."""
    trial = walked.copy()
    notice = trial.notice
    assert notice is not None
    above = {kept.index for kept in walked.kept if kept.index < wanted[0]}
    for outline in outlines:
        if outline is not None:
            at = next(
                (at for at, kept in enumerate(trial.kept) if kept.index == outline.index), -1
            )
            if at < 0:
                return None  # (left out for the notice: only where not even its count fits)
            gone = trial.swap(at, msgspec.structs.replace(outline))
            trial.note(gone.index, gone.entry, "byte_budget", outlined=True)
        notice.name_through(wanted[-1])
        settle(plan, trial)
        if not trial.notice_fits:
            return None
        if notice.line_bytes(wanted[1]) and above <= {kept.index for kept in trial.kept}:
            return trial
    return None


def _outline_for(
    plan: Plan, walked: Walked, at: int, load_body: AttachmentLoader | None
) -> Kept | None:
    """The attachment kept whole at ``at`` as its outline, measured in its place
    and named as outlined in place (not left out again for the notice), when it
    has one smaller than the whole; else ``None``."""
    assert plan.outliner is not None
    kept = walked.kept[at]
    entry = kept.entry
    outline = plan.outliner(entry, lambda: body_of(entry, load_body))
    if not outline:
        return None
    digest = hashlib.sha256(outline.encode("utf-8", "surrogatepass")).hexdigest()
    item = Item(outline, digest, f"{entry.source} (outline)")
    section, cost_json, cost_prompt, tokens = candidate(
        plan, entry, item, "outline", max(kept.place, 2)
    )
    size = measured(plan, cost_json, cost_prompt)
    if size >= kept.size or (plan.meter is not None and tokens >= kept.tokens):
        return None
    full = walked.sizes.get(kept.index, min_body_bytes(entry))
    shrunk = Shrunk(entry.hash, entry.source, digest, full - utf8_len(outline))
    new = plan.kept((kept.index, entry), item, section, (cost_json, cost_prompt), shrunk)
    new.size, new.tokens, new.named, new.place = size, tokens, True, kept.place
    return new


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
