"""Value per byte: one large attachment must not evict several that fit.

Packing follows priority, but an attachment whose cost is more than
1/:data:`LARGE_SHARE` of the room (the budget after the mandatory part) is
weighed against what it would displace: when packing it in its place would
leave out :data:`DISPLACED` or more of the attachments after it that fit
whole, it waits. The walk (:mod:`.walk`) then packs it after them if it
still fits, else keeps its outline, else leaves it out; the
``### Not included`` section says which. Only ``prompt``'s walk weighs
(``pack`` and ``expand`` keep the seed's strict order), and never an
attachment the task names. One with no outline (its language not outlined,
outlines off, a document without headings) does not wait either: its outline
is what stands in for it while smaller ones take its room, and without one,
waiting would leave out a file that ranked above them. Each decision is said in one line, which
``prompt -v`` prints. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from .entries import Attachment
from .measure import Plan, Walked, floor, min_body_bytes
from .render import one_line

__all__ = ["DISPLACED", "LARGE_SHARE", "waits"]

#: An attachment whose cost is more than this share of the room is weighed.
LARGE_SHARE: Final = 4
#: ... and waits when packing it in place would leave out this many (or more)
#: later attachments that fit whole.
DISPLACED: Final = 2
#: How many later attachments the check looks at.
_LOOKAHEAD: Final = 256


def waits(
    plan: Plan,
    walked: Walked,
    entries: Sequence[Attachment],
    index: int,
    waiting: Sequence[Attachment],
    outlined: Callable[[], bool],
) -> bool:
    """Whether the attachment at ``index`` waits (see the module's doc); the
    decision is said in ``walked.decisions``. ``outlined``: whether it has an
    outline (asked last, of a file that would otherwise wait)."""
    entry = entries[index]
    if not plan.value_per_byte or plan.room_bytes is None or entry.named:
        return False
    source = entry.source
    # (its floor, and the line break a body without one ends with)
    own = floor(min_body_bytes(entry), source, plan, first=False) + 1
    if own * LARGE_SHARE <= plan.room_bytes:
        return False
    displaced = _displaced(plan, walked, [*waiting, *entries[index + 1 :]], own)
    if displaced < DISPLACED:
        return False
    weighed = f"{one_line(source)} ({own:,} bytes, over 1/{LARGE_SHARE} of the "
    weighed += f"{plan.room_bytes:,} bytes of room)"
    if plan.outliner is None or not outlined():
        walked.decisions.append(
            f"value per byte: {weighed} does not wait, though in its place {displaced} "
            "later attachments fit whole: it has no outline to stand in for it"
        )
        return False
    walked.decisions.append(
        f"value per byte: {weighed} waits: in its place {displaced} later attachments "
        "fit whole; it is packed after them if it still fits, else outlined"
    )
    return True


def _displaced(plan: Plan, walked: Walked, others: Sequence[Attachment], cost: int) -> int:
    """How many of ``others`` (the attachments still to come: those waiting, then
    the next ones; by their stored sizes, greedily in order) fit whole in the room
    left but not beside ``cost``. (Not how many fewer fit: beside a large one, small
    ones further down can fit where two ranked above them no longer do, and the two
    are still left out for it.)"""
    assert plan.room_bytes is not None
    free = plan.room_bytes - walked.with_one_more()
    layout = plan.layout
    if not walked.kept and plan.prompt:
        # whichever comes first opens the block
        free -= layout.block_overhead - len(layout.separator)

    def fitting(room: int) -> set[int]:
        fit = set()
        for at, later in enumerate(others[:_LOOKAHEAD]):
            size = floor(min_body_bytes(later), later.source, plan, first=False) + 1
            if size <= room:
                room -= size
                fit.add(at)
        return fit

    return len(fitting(free) - fitting(free - cost))
