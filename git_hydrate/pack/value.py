"""Value per byte: one large attachment must not evict several that fit.

Packing follows priority, but an attachment whose cost is more than
1/:data:`LARGE_SHARE` of the room (the budget after the mandatory part) is
weighed against what it would displace, in each budget there is: its bytes
against the byte room, its tokens against the token room. When it is large in
either and packing it in its place would leave out :data:`DISPLACED` or more
of the attachments after it that fit whole (in every budget), it waits. The
walk (:mod:`.walk`) then packs it after them if it still fits, else keeps its
outline, whose room it holds while it waits (what the walk keeps after it takes
none of it, and the weighing of a later one does not count it as free), else
(what is kept after it being named by the task) leaves it out; the ``### Not
included`` section says which.
Only ``prompt``'s walk weighs (``pack`` and ``expand`` keep the seed's strict
order), and never an attachment the task names. One with no outline (its
language not outlined, outlines off, a document without headings) does not
wait either: its outline is what stands in for it while smaller ones take its
room, and without one, waiting would leave out a file that ranked above them.
Each decision is said in one line, which ``prompt -v`` prints.

Tokens are the meter's exact counts, asked of ``count``
(:func:`.measure.whole_tokens`): the large attachment's own, which the walk
counts to keep it anyway, and those of the later ones the check reaches, each
once a walk; a later one that cannot fit the byte room is not counted, and the
check stops where a room is spent. Pure: no I/O of its own (``count`` and
``outlined`` may read a body).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from .entries import Attachment
from .measure import Plan, Walked, floor, min_body_bytes, notice_tokens
from .render import one_line

__all__ = ["DISPLACED", "LARGE_SHARE", "in_place", "waits"]

#: An attachment whose cost is more than this share of the room is weighed.
LARGE_SHARE: Final = 4
#: ... and waits when packing it in place would leave out this many (or more)
#: later attachments that fit whole.
DISPLACED: Final = 2
#: How many later attachments the check looks at.
_LOOKAHEAD: Final = 256

#: What a decision to wait promises, and what one that ranks high gets instead: the
#: walk keeps its outline in its place at once and does not try it whole again.
_AFTER: Final = "it is packed after them if it still fits, else outlined"
_IN_PLACE: Final = "it ranks high: its outline is kept in its place"

#: The room in each budget (``None``: no such budget): bytes, tokens.
_Rooms = tuple[int | None, int | None]


def waits(
    plan: Plan,
    walked: Walked,
    at: tuple[Sequence[Attachment], int, Sequence[Attachment]],
    ask: tuple[Callable[[], bool], Callable[[Attachment], int]],
    held: tuple[int, int] = (0, 0),
) -> bool:
    """Whether the attachment at ``index`` of ``entries`` waits (``at``: those,
    it, and the large ones waiting already; see the module's doc); the decision
    is said in ``walked.decisions``. ``ask``: whether it has an outline (asked
    last, of a file that would otherwise wait), and the exact tokens an
    attachment adds kept whole (asked only under a token budget). ``held``: the
    room (bytes, tokens) the outlines of those waiting hold, not free here."""
    entries, index, waiting = at
    outlined, count = ask
    entry = entries[index]
    in_tokens = plan.room_tokens is not None and plan.meter is not None
    if not plan.value_per_byte or entry.named or (plan.room_bytes is None and not in_tokens):
        return False
    source = entry.source
    # (its floor, and the line break a body without one ends with)
    own = (floor(min_body_bytes(entry), source, plan, first=False) + 1, 0)
    free = _free(plan, walked, in_tokens, held)
    if in_tokens:
        own = (own[0], count(entry))
        if free[1] is not None and own[1] > free[1]:
            return False  # (it does not fit whole anyway: nothing to weigh)
    room_tokens = plan.room_tokens if in_tokens else None
    rooms = ((own[0], plan.room_bytes, "bytes"), (own[1], room_tokens, "tokens"))
    large = [
        f"{size:,} {unit}, over 1/{LARGE_SHARE} of the {room:,} {unit} of room"
        for size, room, unit in rooms
        if room is not None and size * LARGE_SHARE > room
    ]
    if not large:
        return False
    displaced = _displaced(plan, [*waiting, *entries[index + 1 :]], own, free, count)
    if displaced < DISPLACED:
        return False
    weighed = f"{one_line(source)} ({'; '.join(large)})"
    if plan.outliner is None or not outlined():
        walked.decisions.append(
            f"value per byte: {weighed} does not wait, though in its place {displaced} "
            "later attachments fit whole: it has no outline to stand in for it"
        )
        return False
    walked.decisions.append(
        f"value per byte: {weighed} waits: in its place {displaced} later attachments "
        f"fit whole; {_AFTER}"
    )
    return True


def in_place(walked: Walked) -> None:
    """The attachment that last waited ranks high, and the walk kept its outline in its
    place: the decision says so, not that it is packed after the later ones."""
    said = walked.decisions[-1] if walked.decisions else ""
    if said.endswith(_AFTER):
        walked.decisions[-1] = said.removesuffix(_AFTER) + _IN_PLACE


def _free(plan: Plan, walked: Walked, in_tokens: bool, held: tuple[int, int]) -> _Rooms:
    """The room left in each budget for one more attachment, beside the kept ones,
    the notice (whichever comes first opens the block) and what is ``held``."""
    layout = plan.layout
    opens = not walked.kept and plan.prompt
    free_bytes = free_tokens = None
    if plan.room_bytes is not None:
        free_bytes = plan.room_bytes - walked.with_one_more() - held[0]
        free_bytes -= layout.block_overhead - len(layout.separator) if opens else 0
    if in_tokens and plan.room_tokens is not None:
        notice = notice_tokens(plan, walked.notice, after_attachments=True)
        free_tokens = plan.room_tokens - walked.used_tokens - notice - held[1]
        free_tokens -= plan.block_tokens - min(len(layout.separator), 1) if opens else 0
    return free_bytes, free_tokens


def _displaced(
    plan: Plan,
    others: Sequence[Attachment],
    cost: tuple[int, int],
    free: _Rooms,
    count: Callable[[Attachment], int],
) -> int:
    """How many of ``others`` (the attachments still to come: those waiting, then
    the next ones; greedily in order, by their floors in bytes and their exact
    tokens) fit whole in the ``free`` rooms but not beside ``cost`` (bytes,
    tokens). (Not how many fewer fit: beside a large one, small ones further
    down can fit where two ranked above them no longer do, and the two are
    still left out for it.)"""

    def fitting(room_bytes: int | None, room_tokens: int | None) -> set[int]:
        fit = set()
        for at, later in enumerate(others[:_LOOKAHEAD]):
            if (room_bytes is not None and room_bytes < 1) or (
                room_tokens is not None and room_tokens < 1
            ):
                break  # (nothing more fits)
            size = tokens = 0
            if room_bytes is not None:
                size = floor(min_body_bytes(later), later.source, plan, first=False) + 1
                if size > room_bytes:
                    continue  # (not counted)
            if room_tokens is not None:
                tokens = count(later)
                if tokens > room_tokens:
                    continue
            room_bytes = None if room_bytes is None else room_bytes - size
            room_tokens = None if room_tokens is None else room_tokens - tokens
            fit.add(at)
        return fit

    free_bytes, free_tokens = free
    beside = (
        None if free_bytes is None else free_bytes - cost[0],
        None if free_tokens is None else free_tokens - cost[1],
    )
    return len(fitting(free_bytes, free_tokens) - fitting(*beside))
