"""The budget walk: keep attachments in packing order while they fit.

Two passes. The first keeps, in order, every attachment that fits whole; one
the task names (a file in play, a named test: :attr:`.Attachment.named`) or that
ranks high (the first 1/:data:`TOP_SHARE` of the order) that does not is kept
as its outline at once; one the task names is kept whole only beside what those
it names after it cost at the least (:func:`_reserved`: each one's outline, or
the whole when smaller), so that it never takes their outlines' room. The
others that do not fit, and a large attachment that would leave out
:data:`DISPLACED` or more later ones that fit whole in its place (value per
byte, :mod:`.value`), wait for the second pass, which tries them in packing
order (whole first for the large ones, then as outlines) in the room left: an
outline of a low-ranked file never pushes out a smaller file that fits whole.
A large one that waits holds its outline's room (:func:`_held`): what comes
after it is kept whole only beside it, and where the notice took that room by
the second pass, what was kept after it is left out again for its outline
(:func:`_make_room`), so that it ends whole or outlined as ``-v`` says.
An outline only takes the room left: nothing kept is left out again for it.
Kept attachments stay in packing order.

Whatever is left out or shrunk is named in the prompt's ``### Not included``
section (:mod:`.omissions`), whose cost the walk carries as it grows: when it
no longer fits beside what is kept, the last kept attachment the task does not
name (nor ranks high) is left out again, and when only such attachments are
left, the notice names fewer and counts the rest; one that ranks high, kept
whole, is left out again only where not even the count fits beside it, and the
list then stays (:mod:`.settle`); what was left out is
tried again at the end, whole and then as outlines, in the room left
(:func:`_refill`). A notice left counting the first one left out, ranked high, or naming
fewer than five, gets the room of files kept whole that rank high, outlined, for its
lines (:func:`.settle.names_first`, up to :data:`NAMING_ROUNDS` times). A body
that cannot fit by its recorded size is never read. Each attachment is
measured once, as the sum of its own parts (:mod:`.measure`); the caller
verifies the token total of the result (:func:`.settle.back_off`). Pure: no I/O, no
git; the clock is a parameter.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import replace
from functools import cache, partial
from typing import Final

from .entries import Attachment, AttachmentLoader, Item
from .grammars import language_for
from .measure import (
    Candidate,
    Plan,
    Shrunk,
    Walked,
    as_timestamp,
    body_of,
    candidate,
    fits,
    floor,
    measured,
    min_body_bytes,
    section_variant,
    whole_tokens,
)
from .omissions import Missing, Notice
from .render import utf8_len
from .settle import names_first, settle
from .value import in_place, waits

__all__ = ["TOP_SHARE", "Plan", "Walked", "as_timestamp", "walk"]

#: The first 1/TOP_SHARE of the packing order (at least the first attachment) rank
#: high: like a file the task names, one that does not fit is outlined in place.
TOP_SHARE: Final = 10
#: How many fewer bytes a section measured at one place can take at another (its
#: number's digits, in a format that numbers sections).
_PLACE_BYTES: Final = 8
#: How many attachments in a row the outline passes may leave out before they
#: leave out the rest untried: the room left is then smaller than outlines here
#: cost, and reading and parsing every file that waits (thousands, with no
#: outline cached yet) would take seconds for nothing. One of a language with no
#: outline (a text file) is not counted; one whose outline fails is (it was
#: parsed: Python that does not parse, thousands of it in a generated tree). The
#: stop depends only on the decisions made before it, so more budget still never
#: keeps less.
OUTLINE_TRIES: Final = 64

#: How often the walk's end makes room for the notice's lines (:func:`.settle.names_first`):
#: the refill may keep the file named (its outline), and the next left out is named next.
NAMING_ROUNDS: Final = 3

#: An attachment the first pass put off: its place, entry, body (when read),
#: and whether it is a large one value per byte made wait.
_Waiting = tuple[int, Attachment, str | None, bool]
#: The room a large attachment that waits holds for its outline, by place
#: (bytes, tokens): no attachment after it is kept whole in it (:func:`_held`).
_Held = dict[int, tuple[int, int]]
#: What each file the task names costs, by place (:func:`_reserved`): its outline
#: with its line in the notice, and the whole file, each in bytes and tokens.
_Reserved = dict[int, tuple[tuple[int, int], tuple[int, int]]]


def walk(
    entries: Sequence[Attachment], plan: Plan, *, now: float, load_body: AttachmentLoader | None
) -> Walked:
    """Keep attachments in packing order while they fit the plan's rooms (see the
    module's doc). When the notice's list does not fit the room, the walk is
    made again with a notice that only counts (its tokens counted by the meter
    when their estimate says it does not fit), and with none if even that does
    not fit (the omissions are still reported beside the prompt)."""
    walked = _walk(entries, plan, now=now, load_body=load_body)
    if not walked.notice_fits and plan.notice is not None:
        counting = plan.notice.counting()
        walked = _walk(entries, replace(plan, notice=counting), now=now, load_body=load_body)
        if not walked.notice_fits and plan.meter is not None and plan.room_tokens is not None:
            # (its tokens were estimated, at half its bytes, where a meter can count)
            exact = replace(plan, notice=plan.notice.counting(), exact_notice=True)
            walked = _walk(entries, exact, now=now, load_body=load_body)
        if not walked.notice_fits:
            walked = _walk(entries, replace(plan, notice=None), now=now, load_body=load_body)
            walked.notice_fits = False
    return walked


def _walk(
    entries: Sequence[Attachment], plan: Plan, *, now: float, load_body: AttachmentLoader | None
) -> Walked:
    walked = Walked(plan, notice=plan.notice)
    settle(plan, walked)  # (files the task names but has no attachment of cost at once)
    if not walked.notice_fits:
        return walked
    waiting: list[_Waiting] = []
    large: list[Attachment] = []  # the waiting ones value per byte put off
    held: _Held = {}  # (their outlines' room, which no later attachment takes)
    top = max(1, len(entries) // TOP_SHARE)
    reserved = _reserved(plan, entries, now, load_body)
    for index, entry in enumerate(entries):
        if entry.expires is not None and entry.expires <= now:
            walked.omit(index, entry, "expired")
        else:
            high = bool(entry.named) or index < top
            _first_pass(
                plan,
                walked,
                (index, entry),
                load_body,
                entries,
                (waiting, large, held),
                high=high,
                reserved=reserved,
            )
        settle(plan, walked)
        if not walked.notice_fits:
            return walked  # (for good: walk() walks again with a smaller notice)
    walked = _second_pass(plan, walked, waiting, load_body)
    if not walked.notice_fits:
        return walked
    if walked.evicted:
        _refill(plan, walked, entries, load_body)
        settle(plan, walked)  # (a line put back can cost more than it did)
    for _round in range(NAMING_ROUNDS):
        named = names_first(plan, walked, max(1, len(entries) // TOP_SHARE), load_body)
        if named is walked:
            break
        walked = named  # (what the outline and the lines left is tried again)
        _refill(plan, walked, entries, load_body)
        settle(plan, walked)
    walked.in_order()
    return walked


def _second_pass(
    plan: Plan, walked: Walked, waiting: Sequence[_Waiting], load_body: AttachmentLoader | None
) -> Walked:
    """The attachments the first pass put off, in packing order: a large one
    whole if it still fits, then each as its outline in the room left; a large
    one whose outline no longer fits takes it from what was kept after it
    (:func:`_make_room`). Returns the walk (another when room was made)."""
    misses = 0  # (left out in a row: past OUTLINE_TRIES, outlines are not tried)
    for index, entry, text, is_large in waiting:
        if is_large and _keep_whole(plan, walked, index, entry, load_body):
            walked.unnote(index)
            misses = 0
            continue
        if plan.outliner is not None and (is_large or misses < OUTLINE_TRIES):
            if _keep_outline(plan, walked, index, entry, text, load_body):
                misses = 0
                continue
            made = _make_room(plan, walked, (index, entry), load_body) if is_large else None
            if made is not None:
                walked, misses = made, 0
                continue
        misses += _missed(walked, index, entry.source)
        walked.omit(index, entry, "byte_budget")
        settle(plan, walked)
        if not walked.notice_fits:
            break
    return walked


def _make_room(
    plan: Plan, walked: Walked, at: tuple[int, Attachment], load_body: AttachmentLoader | None
) -> Walked | None:
    """A large attachment that waited (``at``: its place and entry) and whose
    outline no longer fits (the notice grew since): the attachments kept after
    it in the packing order that the task does not name are left out again,
    the last first, until its outline fits, as value per byte said it would be
    (on a copy of the walk: ``None`` when it does not fit even so). The refill
    tries them again in the room left."""
    index, entry = at
    trial = walked.copy()
    while True:
        after = [place for place, kept in enumerate(trial.kept) if kept.index > index]
        after = [place for place in after if not trial.kept[place].named]
        if not after:
            return None
        trial.drop(after[-1])
        if _keep_outline(plan, trial, index, entry, None, load_body):
            settle(plan, trial)
            return trial if trial.notice_fits else None


def _first_pass(
    plan: Plan,
    walked: Walked,
    at: tuple[int, Attachment],
    load_body: AttachmentLoader | None,
    entries: Sequence[Attachment],
    put_off: tuple[list[_Waiting], list[Attachment], _Held],
    *,
    high: bool,
    reserved: _Reserved,
) -> None:
    """One attachment's first pass (``at``: its place and entry): kept whole,
    outlined in place (named or ranking high), put off to the second pass
    (``put_off``: all that wait, the large ones among them, and the room their
    outlines hold), or left out. ``reserved``: what the files the task names
    cost at the least, by place (a file it names is kept whole only beside
    those after it: :func:`_reserved`); one it does not name is kept whole only
    beside the outlines of the large ones that wait (:func:`_held`)."""
    index, entry = at
    waiting, large, held = put_off
    reserve = _reserve(walked, reserved, index) if entry.named else _held(held)
    body = _whole(plan, walked, (index, entry), load_body, entries, large, reserve)
    if body is _LARGE:
        large.append(entry)
        walked.note(index, entry, "byte_budget", outlined=True)
        if (  # ranks high: its outline, in place (not tried whole again)
            high
            and plan.outliner is not None
            and _keep_outline(plan, walked, index, entry, None, load_body)
        ):
            walked.kept[-1].named = True
            in_place(walked)
            return
        waiting.append((index, entry, None, True))
        held[index] = _outline_room(plan, entry, len(entries) + 1, load_body)
        return
    if body is True:
        walked.kept[-1].high = high
        return
    text = body if isinstance(body, str) else None
    if plan.outliner is None:
        walked.omit(index, entry, "byte_budget")
    elif high:
        if _keep_outline(plan, walked, index, entry, text, load_body):
            walked.kept[-1].named = True  # not left out again to make room for the notice
        else:
            walked.omit(index, entry, "byte_budget")
    else:
        walked.note(index, entry, "byte_budget", outlined=True)
        waiting.append((index, entry, text, False))


#: The attachment is large and would displace several others: it waits.
_LARGE: Final = object()


def _whole(
    plan: Plan,
    walked: Walked,
    at: tuple[int, Attachment],
    load_body: AttachmentLoader | None,
    entries: Sequence[Attachment],
    large_ones: Sequence[Attachment],
    reserve: tuple[int, int] = (0, 0),
) -> str | bool | object | None:
    """Keep an attachment (``at``: its place and entry) whole if it fits beside
    ``reserve`` more (bytes, tokens: ``True``); else its body if it was read, ``None`` if
    it was not (it cannot fit by its size), or :data:`_LARGE` when value per
    byte says it waits."""
    index, entry = at
    # A body costs at least its own bytes in each measured text; when that
    # alone cannot fit, it is not read (unless its outline is wanted).
    if plan.json or plan.prompt:
        least = floor(min_body_bytes(entry), entry.source, plan, first=not walked.kept)
        least += reserve[0]
        if plan.room_bytes is not None and walked.with_one_more() + least > plan.room_bytes:
            return None
    if plan.meter is not None and plan.room_tokens is not None:
        variant = section_variant("full", plan.layout) if plan.prompt else "full.json"
        known = plan.meter.known(entry.cache_key(variant))
        if known is not None and walked.total_tokens() + known + reserve[1] > plan.room_tokens:
            return None

    read = cache(partial(body_of, entry, load_body))  # (read once, whoever asks first)

    @cache
    def as_next() -> Candidate:  # (measured once: to weigh it, then to keep it)
        item = Item(read(), entry.hash, entry.source)
        return candidate(plan, entry, item, "full", len(walked.kept) + 1)

    def outlined() -> bool:
        assert plan.outliner is not None  # (asked only with one)
        return bool(plan.outliner(entry, read))

    def count(later: Attachment) -> int:
        if later is entry:
            return whole_tokens(plan, walked, entry, load_body, as_next)
        return whole_tokens(plan, walked, later, load_body)

    if waits(plan, walked, (entries, index, large_ones), (outlined, count), reserve):
        return _LARGE
    body = read()
    return True if _keep_if_fits(plan, walked, (index, entry), body, reserve, as_next()) else body


def _keep_if_fits(
    plan: Plan,
    walked: Walked,
    at: tuple[int, Attachment],
    body: str,
    reserve: tuple[int, int] = (0, 0),
    known: Candidate | None = None,
) -> bool:
    """Keep the attachment's whole ``body`` (``at``: its place and entry) if its
    measured section fits (beside ``reserve`` more, bytes and tokens; ``known``: its
    :func:`.candidate` as the next kept, when measured already)."""
    index, entry = at
    item = Item(body, entry.hash, entry.source)
    section, cost_json, cost_prompt, tokens = known or candidate(
        plan, entry, item, "full", len(walked.kept) + 1
    )
    size = measured(plan, cost_json, cost_prompt)
    if not fits(plan, walked, size + reserve[0], tokens + reserve[1]):
        return False
    kept = plan.kept((index, entry), item, section, (cost_json, cost_prompt))
    walked.keep(kept, size, tokens, named=bool(entry.named))
    walked.sizes[index] = entry.size if entry.size is not None else utf8_len(body)
    return True


def _keep_whole(
    plan: Plan, walked: Walked, index: int, entry: Attachment, load_body: AttachmentLoader | None
) -> bool:
    """Keep an attachment whole if it fits what is left (the second pass)."""
    least = floor(min_body_bytes(entry), entry.source, plan, first=not walked.kept)
    if plan.room_bytes is not None and walked.with_one_more() + least > plan.room_bytes:
        return False
    body = body_of(entry, load_body)
    return _keep_if_fits(plan, walked, (index, entry), body)


def _missed(walked: Walked, index: int, source: str) -> int:
    """1 for an attachment whose outline did not fit (or was not tried: no room),
    or that has none though its language is outlined (Python that does not parse,
    a page with no heading: parsed for nothing); 0 for one of a language with no
    outline (a text file: nothing parsed, so not a try :data:`OUTLINE_TRIES`
    counts; a row of them does not stop the outlines of the files after it)."""
    none = walked.outline_missed.get(index) == sys.maxsize
    return 0 if none and language_for(source) is None else 1


def _keep_outline(
    plan: Plan,
    walked: Walked,
    index: int,
    entry: Attachment,
    body: str | None,
    load_body: AttachmentLoader | None,
) -> bool:
    """Keep the outline of an attachment that did not fit in full, if it fits
    beside what is kept (nothing kept is left out to make room for it)."""
    assert plan.outliner is not None
    source = entry.source
    if plan.room_bytes is not None:
        # no room even for an outline's heading and one line: not read, not parsed
        least = floor(8, source, plan, first=not walked.kept)
        missed = walked.outline_missed.get(index, 0) - _PLACE_BYTES
        if walked.with_one_more() + max(least, missed) > plan.room_bytes:
            return False

    def read() -> str:
        return body if body is not None else body_of(entry, load_body)

    outline = plan.outliner(entry, read)
    if not outline:
        walked.outline_missed[index] = sys.maxsize
        return False
    digest = hashlib.sha256(outline.encode("utf-8", "surrogatepass")).hexdigest()
    item = Item(outline, digest, f"{source} (outline)")
    walked.note(index, entry, "byte_budget", outlined=True)
    section, cost_json, cost_prompt, tokens = candidate(
        plan, entry, item, "outline", len(walked.kept) + 1
    )
    size = measured(plan, cost_json, cost_prompt)
    if not fits(plan, walked, size, tokens):
        walked.outline_missed[index] = size
        return False
    full = min_body_bytes(entry) if body is None else utf8_len(body)
    shrunk = Shrunk(entry.hash, source, digest, full - utf8_len(outline))
    walked.sizes[index] = full
    kept = plan.kept((index, entry), item, section, (cost_json, cost_prompt), shrunk)
    walked.keep(kept, size, tokens, named=bool(entry.named))
    return True


def _reserved(
    plan: Plan, entries: Sequence[Attachment], now: float, load_body: AttachmentLoader | None
) -> _Reserved:
    """What each file the task names but the first costs at the least, by place,
    in bytes and in tokens (exact, by the plan's meter; 0 without a token budget):
    its outline with its line in the notice (its exact bytes, in tokens at half
    of them as the notice is estimated), or (negated) the whole file when that
    is less. A file it names is kept whole only beside these costs of those after
    it, and what the notice's frame gains for their lines (:func:`_reserve`), so
    that it does not take their room. They do not depend on the budget, nor
    does the frame but through the decisions made before (whether the notice is
    empty, what its introduction says), so more budget never shrinks a file kept
    whole after the same decisions (one without an outline, or expired, reserves
    nothing)."""
    if plan.outliner is None or (plan.room_bytes is None and plan.room_tokens is None):
        return {}
    named = [
        (index, entry)
        for index, entry in enumerate(entries)
        if entry.named and (entry.expires is None or entry.expires > now)
    ]
    reserved: _Reserved = {}
    for index, entry in named[1:]:
        body = body_of(entry, load_body)
        outline = plan.outliner(entry, lambda body=body: body)  # type: ignore[misc]
        if not outline:
            continue
        item = Item(outline, entry.hash, f"{entry.source} (outline)")
        _, cost_json, cost_prompt, tokens = candidate(plan, entry, item, "outline", 2)
        line = _line_bytes(plan.notice, index, entry, body)
        size = measured(plan, cost_json, cost_prompt) + line
        tokens += (line + 1) // 2 if plan.room_tokens is not None else 0  # (as the notice's)
        whole = Item(body, entry.hash, entry.source)
        _, cost_json, cost_prompt, tokens_whole = candidate(plan, entry, whole, "full", 2)
        reserved[index] = ((size, tokens), (measured(plan, cost_json, cost_prompt), tokens_whole))
    return reserved


def _outline_room(
    plan: Plan, entry: Attachment, place: int, load_body: AttachmentLoader | None
) -> tuple[int, int]:
    """What the outline of a large attachment that waits costs (bytes, tokens;
    its section measured at ``place``, the last there can be, so at the most):
    the room it holds. Its line in the notice is already there (it was noted as
    outlined). Without an outline (none waits so), nothing."""
    if plan.outliner is None:
        return 0, 0
    outline = plan.outliner(entry, lambda: body_of(entry, load_body))
    if not outline:
        return 0, 0
    item = Item(outline, entry.hash, f"{entry.source} (outline)")
    _, cost_json, cost_prompt, tokens = candidate(plan, entry, item, "outline", place)
    return measured(plan, cost_json, cost_prompt), tokens


def _held(held: _Held) -> tuple[int, int]:
    """The room the large attachments that wait hold for their outlines (bytes,
    tokens): what :func:`value.waits` promised them, so that what is kept
    after them does not leave one neither whole nor outlined (the second pass
    tries each in its place in the packing order, whole and then outlined)."""
    return sum(room[0] for room in held.values()), sum(room[1] for room in held.values())


def _line_bytes(notice: Notice | None, index: int, entry: Attachment, body: str) -> int:
    """The bytes of the notice's line that would name the file at ``index`` as
    outlined (its size said by its entry or by its body, whichever line is the
    longer); 0 in a notice that only counts (:meth:`.Notice.frame_growth`)."""
    if notice is None or not notice.cap:
        return 0
    sizes = {utf8_len(body), min_body_bytes(entry)}
    return max(
        notice.line_of(Missing(index, entry.hash, entry.source, size, "byte_budget", True))
        for size in sizes
    )


def _reserve(walked: Walked, reserved: _Reserved, index: int) -> tuple[int, int]:
    """What the files the task names after ``index`` cost at the least (bytes,
    tokens): each one whole, or each one's outline where it costs less (its line
    in the notice with it) beside what the notice's frame gains for those lines,
    once: all of it while the notice is empty, else what its introduction gains
    (:meth:`.Notice.frame_growth`; in tokens at half its bytes, as the notice is
    estimated); whichever total is less."""
    if not reserved:  # (a file the task does not name: thousands of them at 30,000 files)
        return 0, 0
    later = [costs for at, costs in reserved.items() if at > index]
    total = [0, 0]
    for budget in (0, 1):
        wholes = sum(whole[budget] for _outline, whole in later)
        least = [min(outline[budget], whole[budget]) for outline, whole in later]
        lines = sum(outline[budget] < whole[budget] for outline, whole in later)
        frame = 0
        if lines and walked.notice is not None:
            frame = max(0, walked.notice.frame_growth(lines))
            frame = frame if budget == 0 else (frame + 1) // 2
        total[budget] = min(wholes, sum(least) + frame)
    return total[0], total[1]


def _refill(
    plan: Plan, walked: Walked, entries: Sequence[Attachment], load_body: AttachmentLoader | None
) -> None:
    """After attachments were left out to make room for the notice, try the left-out
    ones again as the walk tried them: in packing order whole (or, for one the task
    names or that ranks high, as its outline in place), then outlines of the rest
    in the room left. Each kept now also takes its line off the notice."""
    top = max(1, len(entries) // TOP_SHARE)
    later: list[int] = []
    room = _Room(plan, walked)
    for omitted in sorted(walked.omitted, key=lambda o: o.index):
        if omitted.reason != "byte_budget":
            continue
        index = omitted.index
        entry = entries[index]
        high = bool(entry.named) or index < top
        if _refilled(plan, walked, (index, entry), (load_body, room), whole=True, outline=high):
            walked.omitted.remove(omitted)
        elif not high:
            later.append(index)
    misses = 0
    for index in later if plan.outliner is not None else ():
        at = (index, entries[index])
        if misses >= OUTLINE_TRIES:
            break
        if _refilled(plan, walked, at, (load_body, room), whole=False, outline=True):
            walked.omitted[:] = [o for o in walked.omitted if o.index != index]
            misses = 0
        else:
            misses += _missed(walked, index, at[1].source)


class _Room:
    """The bytes a refill has left, kept between the attachments it keeps: one
    that cannot fit even with its line in the notice freed is passed over without
    touching the notice (at 30,000 files, thousands were left out)."""

    def __init__(self, plan: Plan, walked: Walked) -> None:
        self.plan, self.walked = plan, walked
        self.free: int | None = None
        self.changed()

    def changed(self) -> None:
        room = self.plan.room_bytes
        self.free = None if room is None else room - self.walked.with_one_more()

    def has(self, index: int, least: int) -> bool:
        """Whether ``least`` bytes fit once the line naming ``index`` is freed."""
        if self.free is None:
            return True
        notice = self.walked.notice
        freed = notice.line_bytes(index) if notice is not None else 0
        return self.free + freed >= least


def _refilled(
    plan: Plan,
    walked: Walked,
    at: tuple[int, Attachment],
    with_: tuple[AttachmentLoader | None, _Room],
    *,
    whole: bool,
    outline: bool,
) -> bool:
    """Keep a left-out attachment (``at``: its place and entry) whole if ``whole``
    and it fits, else its outline if ``outline``; named again as left out if not
    (``with_``: the loader of bodies, and the room left)."""
    (index, entry), (load_body, room) = at, with_
    outline = outline and plan.outliner is not None
    first = not walked.kept
    if whole:  # (what it costs at the least, less its line in the notice)
        whole = room.has(index, floor(min_body_bytes(entry), entry.source, plan, first=first))
    if outline:  # (the same for an outline, or what it was measured at)
        missed = walked.outline_missed.get(index, 0) - _PLACE_BYTES
        outline = room.has(index, max(floor(8, entry.source, plan, first=first), missed))
    if not whole and not outline:
        return False
    walked.unnote(index)
    if (whole and _keep_whole(plan, walked, index, entry, load_body)) or (
        outline and _keep_outline(plan, walked, index, entry, None, load_body)
    ):
        room.changed()
        return True
    walked.note(index, entry, "byte_budget", outlined=False)
    return False
