"""The prompt's own account of what it left out: the ``### Not included`` section.

When a walk omits an attachment or keeps only its outline, the prompt says so
*inside* the untrusted block, as its last part, so that a worker (an agent
that can fetch more) knows it did not receive everything and how to get the
rest. Each line names the attachment's source (repository text: the format
keeps it on one line and unable to read as structure, see
:meth:`.formats.Layout.notice_start`), its size, what happened to it and why,
and the command that prints it::

    ### Not included
    Left out or shrunk to fit the budget; the command on each line (or the get_attachment ...
    - `src/big.py` (69 KiB): left out, byte_budget; git hydrate show T-1 --attachment <sha256>

A file the task names (a file in play, a named test) that has no attachment
at all — add-tree skipped it, or never read it — is named there too, after
the attachments, under a line of its own: with add-tree's reason and the
file's size when the task recorded them (:class:`Unattached`), and the
command that prints its blob when the run had it from git::

    Named by the task but not attached; the command on a line, if any, prints it.
    - `big.py` (305 KiB): not attached, too_large; git show <blob id>
    - `new.py` (no such file): not attached, missing

A prompt with nothing omitted, shrunk or unattached has no such section and
renders as the seed specifies. The section names at most :data:`MAX_LISTED` attachments (and
their lines at most a quarter of the room, so a small budget keeps room for
attachments), in packing order, and ends with a count of the rest and the command that
lists every one (``prompt ID -v`` with the options that build this very prompt
again: :meth:`.Budget.options`; ``expand ID ...`` for expand's); where the budget
has no room for that, only the count: one line that counts every omission.
:class:`Notice` keeps its cost exact while the walk decides, without rendering
it again per attachment. Pure: no I/O, no git.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import msgspec

from .budget import human_size
from .entries import Attachment
from .formats import SEED, Layout
from .render import utf8_len

__all__ = ["MAX_LISTED", "WITHHELD", "Missing", "Notice", "Unattached", "flagged"]

#: (``--outline``, or the MCP tool's ``outline: true``: a worker with little room
#: left reads a large file's outline before it reads all of it)
_INTRO: Final = (
    "Left out or shrunk to fit the budget; the command on each line (or the "
    "get_attachment tool) prints it whole, or its outline with --outline (outline: true).\n"
)
#: :data:`_INTRO` when expired attachments are among the lines (some; all).
_EXPIRED_INTROS: Final = (
    "Left out or shrunk to fit the budget, or expired; the command on each line (or the "
    "get_attachment tool) prints it whole, or its outline with --outline (outline: true).\n",
    "Left out because they expired; the command on each line (or the get_attachment tool) "
    "prints it whole.\n",
)
_NAMED_INTRO: Final = (
    "Named by the task but not attached; the command on a line, if any, prints it.\n"
)
#: How an :class:`Unattached` reads that the task does not name: a file add-tree
#: ranked high for it and withheld as a likely secret.
WITHHELD: Final = "ranked high"
_WITHHELD_INTRO: Final = (
    "Ranked high for the task but withheld as likely secrets: they exist, their "
    "content is not given.\n"
)
#: Reasons for which no command is given: nothing worth printing (a binary, an
#: empty file, one not in the tree) or nothing a worker should print (a secret).
_NO_COMMAND: Final = frozenset(
    {"binary", "skipped_ext", "empty", "missing", "symlink", "submodule", "special", "secret"}
)
#: The most attachments the section names one by one; the rest are counted.
MAX_LISTED: Final = 25
#: What happened to an attachment, as its line says it.
OMITTED: Final = "left out"
OUTLINED: Final = "outlined"
#: The fewest bytes a line can take: an empty source, a size under 1 KiB, the
#: shortest reason, a task id of one character (the code span adds more).
_SHORTEST_LINE: Final = len(
    f"- ( bytes): {OMITTED}, expired; git hydrate show X --attachment {'0' * 64}\n"
)


class Missing(msgspec.Struct, frozen=True, gc=False):
    """One attachment the prompt does not hold whole."""

    index: int  # its place in packing order
    hash: str
    source: str
    size: int  # bytes of its whole body
    reason: str  # "byte_budget" or "expired"
    outlined: bool  # kept as its outline

    def words(self, task_id: str) -> str:
        """The line's text after the source."""
        state = OUTLINED if self.outlined else OMITTED
        return (
            f"({human_size(self.size)}): {state}, {self.reason}; "
            f"git hydrate show {task_id} --attachment {self.hash}"
        )


class Unattached(msgspec.Struct, frozen=True, gc=False):
    """A file the task names that has no attachment, and what add-tree recorded
    of it (its skip reason, size and blob; ``""``/``None`` when nothing was)."""

    path: str
    named: str  # "file in play", "named test", or WITHHELD (a secret that ranked high)
    reason: str = ""
    size: int | None = None
    oid: str = ""

    def words(self, task_id: str) -> str:
        """The line's text after the path (the tool's own words: no repository text)."""
        if not self.reason:
            return f"(size unknown): not attached; git hydrate add-tree {task_id} attaches it"
        if self.reason == "missing":
            return "(no such file): not attached, missing"
        # (a sparse file of a partial clone was not fetched: its size is not known)
        size = "size unknown" if self.reason == "sparse" else human_size(self.size or 0)
        said = f"({size}): not attached, {self.reason}"
        if self.reason == "secret":
            return f"{said}; withheld: attaching it is an operator's call (--allow-secrets)"
        if self.oid and self.reason not in _NO_COMMAND:
            return f"{said}; git show {self.oid}"
        return said

    def part(self) -> dict[str, str | int | None]:
        """The result's ``flagged`` entry: ``kept`` is ``unattached``, ``reason`` is
        add-tree's (``None``: not known), ``size`` ``None`` when not known."""
        return {
            "source": self.path,
            "named": self.named,
            "size": self.size,
            "kept": "unattached",
            "reason": self.reason or None,
        }


@dataclass
class Notice:
    """The ``### Not included`` section a walk is building, and what it costs.

    Attachments are added in the order the walk decides (a kept one can be left
    out again after later ones were named); the section names the first of them
    *in packing order*, as many as :attr:`cap` and :attr:`max_listed_bytes` allow,
    and counts the rest: a line is never named while one ranked above it is only
    counted. Its cost is kept as a running sum of the named lines' bytes; an
    attachment added (or removed) above the last named one renames the list from
    its place on, at most :attr:`cap` lines.
    """

    task_id: str
    layout: Layout = SEED
    #: How many attachments it names one by one (0: it only counts them, for a
    #: budget with no room for more).
    cap: int = MAX_LISTED
    #: The most bytes the named lines may take (``None``: no limit besides ``cap``),
    #: so that on a small budget the list leaves room for the attachments.
    max_listed_bytes: int | None = None
    items: dict[int, Missing] = field(default_factory=dict)
    #: The files the task names that have no attachment (named after the rest).
    unattached: tuple[Unattached, ...] = ()
    #: The command that lists every omission of this very prompt: ``prompt``
    #: (with ``-v``), or ``expand`` (its result's ``omitted`` and ``shrunk``:
    #: expand measures the packet too, so prompt would list others).
    command: str = "prompt"
    #: The options after the task id that build it again (:meth:`.Budget.options`).
    rebuild: str = ""
    #: The places of :attr:`items`, sorted: packing order.
    _order: list[int] = field(default_factory=list)
    #: The lines named one by one (and their bytes): those of ``_order``'s first ones.
    _listed: list[tuple[str, int, bool]] = field(default_factory=list)
    _listed_bytes: int = 0
    #: How many of the named ones were left out because they expired.
    _listed_expired: int = 0
    #: Each attachment's line, its bytes, and whether it expired, once made.
    _lines: dict[int, tuple[str, int, bool]] = field(default_factory=dict)
    #: The section's own bytes, and the state they were measured in.
    _own: int = 0
    _cost_key: tuple[int, int, tuple[int, int], bool] = (-1, -1, (-1, 0), False)
    #: The section's tokens as last counted, and the state they were counted in.
    _tokens: int = 0
    _tokens_key: tuple[int, int, tuple[int, int], bool] = (-1, -1, (-1, 0), False)

    def __bool__(self) -> bool:
        # (a notice that names nothing one by one leaves the withheld secrets unsaid)
        return bool(self.items or (self.unattached if self.cap else self._named_files()))

    def _named_files(self) -> list[Unattached]:
        """The files the task names that have no attachment (not the withheld ones)."""
        return [file for file in self.unattached if file.named != WITHHELD]

    def counting(self) -> Notice:
        """An empty notice like this one that names none of its attachments (nor
        the files the task names that have none): one line counts them all."""
        return Notice(
            self.task_id,
            self.layout,
            cap=0,
            unattached=self.unattached,
            command=self.command,
            rebuild=self.rebuild,
        )

    def count_only(self) -> Notice:
        """This notice as it reads naming none of its attachments: one line counts
        them all (to measure it; it shares this one's state, read only)."""
        return replace(self, cap=0, _listed=[], _listed_bytes=0, _listed_expired=0)

    def add(self, missing: Missing) -> None:
        """Say ``missing`` in the section (replacing what it said of that attachment)."""
        index, order = missing.index, self._order
        if index in self.items:
            self._lines.pop(index, None)  # (its line may read otherwise now)
            at = bisect_left(order, index)
        elif not order or order[-1] < index:
            at = len(order)  # (the walk's common case: after every other one)
            order.append(index)
        else:
            at = bisect_left(order, index)
            order.insert(at, index)
        self.items[index] = missing
        if at <= len(self._listed):  # (after the first counted one, nothing changes)
            self._rename(at)

    def without(self, index: int) -> Notice:
        """A copy of this notice that no longer names the attachment at ``index``
        (to measure it before deciding)."""
        copy = self.copy()
        copy.remove(index)
        return copy

    def copy(self) -> Notice:
        """A copy of this notice that changes on its own."""
        return replace(
            self,
            items=dict(self.items),
            _order=list(self._order),
            _listed=list(self._listed),
            _lines=dict(self._lines),
        )

    def named(self) -> int:
        """How many attachments it names one by one."""
        return len(self._listed)

    def first_counted(self) -> int | None:
        """The place of the first attachment it counts instead of naming (``None``:
        it names every one)."""
        counted = self.counted(1)
        return counted[0] if counted else None

    def counted(self, most: int) -> list[int]:
        """The places of the first ``most`` attachments it counts instead of naming."""
        at = len(self._listed)
        return self._order[at : at + most]

    def first_left_out(self) -> int | None:
        """The place of the first attachment it says was left out (not outlined:
        the worker has nothing of it), named or counted; ``None``: none was."""
        items = self.items
        return next((index for index in self._order if not items[index].outlined), None)

    def name_through(self, index: int) -> None:
        """Name the attachments one by one from now on up to the one at ``index``
        (a list :meth:`unlist_last` shortened), at most :data:`MAX_LISTED`, as many
        as :attr:`max_listed_bytes` allows."""
        self.cap = min(bisect_left(self._order, index) + 1, MAX_LISTED)
        self._rename(len(self._listed))

    def would_list(self) -> bool:
        """Whether one more attachment could be named one by one (else it is counted)."""
        if len(self._listed) >= self.cap:
            return False
        limit = self.max_listed_bytes
        return limit is None or self._listed_bytes + _SHORTEST_LINE <= limit

    def line_bytes(self, index: int) -> int:
        """The bytes of the line that names the attachment at ``index`` (0: none does)."""
        at = bisect_left(self._order, index)
        if at < len(self._listed) and self._order[at] == index:
            return self._listed[at][1]
        return 0

    def line_of(self, missing: Missing) -> int:
        """The bytes of the line that would name ``missing`` one by one."""
        return utf8_len(self._line(missing))

    def frame_growth(self, more: int) -> int:
        """The most bytes the section gains, besides the lines that name them, when
        ``more`` attachments left out or outlined to fit the budget are added after
        every one it holds: all of its frame while it is empty (heading,
        introduction, the separator before it); else what its introduction gains
        (the one of expired attachments becomes the longer one of both); in a
        notice that only counts, what its count line gains (no line names them)."""
        layout = self.layout
        if not self.cap:
            rest = len(self.items) + more
            grown = len(layout.notice_open) + utf8_len(self._count_line(rest))
            grown += utf8_len(layout.notice_close) + len(layout.separator)
            return grown - self.cost(after_attachments=True)
        if not self:
            return sum(map(len, (layout.notice_open, _INTRO, layout.separator))) + utf8_len(
                layout.notice_close
            )
        if not self._listed:  # (it names none: the files the task names have none,
            # or its lines fill their room and the next is counted, a digit at most)
            return 0 if self.items else len(_INTRO)
        if self._expired_listed() == 2:
            return len(_EXPIRED_INTROS[0]) - len(_EXPIRED_INTROS[1])
        return 0

    def remove(self, index: int) -> None:
        """Stop naming the attachment at ``index`` (it was kept whole after all);
        the next one in packing order that was counted may be named instead."""
        if self.items.pop(index, None) is None:
            return
        at = bisect_left(self._order, index)
        del self._order[at]
        self._lines.pop(index, None)
        if at <= len(self._listed):
            self._rename(at)

    def unlist_last(self) -> bool:
        """Name one attachment fewer (the last in packing order; it is counted
        instead), and no more from now on: for a notice that no longer fits beside
        what the task names. ``False`` when it names none."""
        if not self._listed:
            return False
        self._unlist()
        self.cap = len(self._listed)
        return True

    def _unlist(self) -> None:
        _text, size, expired = self._listed.pop()
        self._listed_bytes -= size
        self._listed_expired -= expired

    def _rename(self, at: int) -> None:
        """Name the attachments again from the ``at``-th in packing order on: the
        first ones whose lines fit the cap and :attr:`max_listed_bytes`, stopping
        at the first that does not (a later, shorter one is counted with it)."""
        listed = self._listed
        while len(listed) > at:
            self._unlist()
        order, limit = self._order, self.max_listed_bytes
        while len(listed) < min(self.cap, len(order)):
            index = order[len(listed)]
            if limit is not None:
                least = _SHORTEST_LINE + len(self.items[index].source)
                if self._listed_bytes + least > limit:
                    return  # (no line is shorter: none is made to be measured)
            line = self._lines.get(index)
            if line is None:
                missing = self.items[index]
                text = self._line(missing)
                line = self._lines[index] = (text, utf8_len(text), missing.reason == "expired")
            if limit is not None and self._listed_bytes + line[1] > limit:
                return
            listed.append(line)
            self._listed_bytes += line[1]
            self._listed_expired += line[2]

    def _line(self, missing: Missing) -> str:
        return f"{self.layout.notice_start(missing.source)}{missing.words(self.task_id)}\n"

    def _more_line(self) -> str:
        rest = len(self.items) - len(self._listed)
        if not self.cap:
            return self._count_line(rest)
        if rest <= 0:
            return ""
        if not self._listed:
            return self._more_line_of(rest)
        return f"- and {rest:,} more not named here: {self.lister()} lists every one\n"

    def _count_line(self, rest: int) -> str:
        """The one line of a notice that names none: every omission counted (the
        files the task names that have no attachment too)."""
        files = len(self._named_files())
        if not files:
            return self._more_line_of(rest)
        said = f"{files:,} file{'s' if files > 1 else ''} the task names not attached"
        if not rest:
            return f"- {said}: {self.lister()} lists {'them' if files > 1 else 'it'}\n"
        return (
            f"- {rest:,} attachment{'s' if rest > 1 else ''} left out or shrunk and {said}: "
            f"{self.lister()} lists every one\n"
        )

    def _more_line_of(self, rest: int) -> str:
        if rest <= 0:
            return ""
        return (
            f"- {rest:,} attachment{'s' if rest > 1 else ''} left out or shrunk to fit: "
            f"{self.lister()} lists every one\n"
        )

    def lister(self) -> str:
        """The command that lists every omission of this prompt, as the section
        spells it: ``git hydrate prompt T-1 --max-bytes 16000 --format markdown -v``."""
        verbose = " -v" if self.command == "prompt" else ""
        return f"git hydrate {self.command} {self.task_id}{self.rebuild}{verbose}"

    def _frame(self) -> tuple[str, str]:
        # (the intro speaks of "the command on each line": a notice that names
        # none, whatever its cap, only counts, and its room goes to attachments)
        layout = self.layout
        expired = self._expired_listed()
        intro = (_EXPIRED_INTROS[expired - 1] if expired else _INTRO) if self._listed else ""
        return layout.notice_open + intro, self._named_part() + layout.notice_close

    def _expired_listed(self) -> int:
        """Whether the attachments named one by one were left out because they
        expired (the intro then says so: not to fit the budget): 0 none, 1 some,
        2 all of them."""
        expired = self._listed_expired
        return 0 if not expired else 2 if expired == len(self._listed) else 1

    def _named_part(self) -> str:
        """The lines of the files the task names that have no attachment (none
        once the notice names nothing one by one: its count line counts them)."""
        if not self.unattached or not self.cap:
            return ""
        start = self.layout.notice_start
        named = self._named_files()
        withheld = [u for u in self.unattached if u.named == WITHHELD]
        said = ""
        for intro, files in ((_NAMED_INTRO, named), (_WITHHELD_INTRO, withheld)):
            if files:
                said += intro + "".join(f"{start(u.path)}{u.words(self.task_id)}\n" for u in files)
        return said

    def section(self) -> str:
        """The section's text (``""`` when nothing is missing); ends with a newline."""
        if not self:
            return ""
        opening, closing = self._frame()
        lines = [line for line, _size, _expired in self._listed]
        return opening + "".join(lines) + self._more_line() + closing

    def _state(self) -> tuple[int, int, tuple[int, int], bool]:
        """What the section's text depends on, as its cost and tokens are kept by."""
        listed = (self._listed_bytes, self._expired_listed())
        return (len(self.items), len(self._listed), listed, self.cap > 0)

    def tokens(self, count: Callable[[str], int]) -> int:
        """The section's own tokens by ``count`` (a meter's), counted again only
        once the section changed."""
        key = self._state()
        if key != self._tokens_key:
            self._tokens_key, self._tokens = key, count(self.section())
        return self._tokens

    def cost(self, *, after_attachments: bool) -> int:
        """Bytes the section adds to the prompt: its text and the separator before
        it, or the whole untrusted block when no attachment opened it."""
        if not self:
            return 0
        key = self._state()
        if key != self._cost_key:
            # (the opening holds only ASCII: its length is its bytes; the closing
            # names the files the task names that have no attachment)
            opening, closing = self._frame()
            more = utf8_len(self._more_line())
            self._cost_key, self._own = (
                key,
                len(opening) + self._listed_bytes + more + utf8_len(closing),
            )
        own = self._own
        layout = self.layout
        return own + (len(layout.separator) if after_attachments else layout.block_overhead)


def flagged(
    missing: Sequence[Missing],
    entries: Sequence[Attachment],
    unattached: Sequence[Unattached] = (),
) -> list[dict[str, str | int | None]]:
    """The attachments the task names (:attr:`.Attachment.named`: ``file in play``
    or ``named test``) that the prompt does not hold whole, then the files it names
    that have no attachment: the summary line flags each, so a named file is never
    left out or shrunk silently."""
    out: list[dict[str, str | int | None]] = []
    for item in missing:
        role = entries[item.index].named if item.index < len(entries) else None
        if role:
            out.append(
                {
                    "source": item.source,
                    "named": role,
                    "size": item.size,
                    "kept": "outline" if item.outlined else "omitted",
                }
            )
    return out + [file.part() for file in unattached]
