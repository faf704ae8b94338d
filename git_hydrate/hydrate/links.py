"""Turning chosen files into a task's links, in one commit (or none).

Shared by add-tree and add-diff: one link per path, re-hydration replaces
exactly the links it manages (``in_scope``) and leaves every other alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, islice, repeat
from operator import attrgetter, eq, lt, not_, or_
from typing import Any, Final, cast

import msgspec

from .. import textpolicy, validate
from ..errors import ValidationError
from ..model import Link, Task
from ..results import HydrateResult, SkippedDict
from ..settings import Settings
from ..taskrefs import Change, TaskRefs, TaskState, Unchanged, body_path, task_message
from .rules import Skipped

__all__ = [
    "DIFF_TOP",
    "TREE_TOP",
    "Pick",
    "Reason",
    "Selector",
    "commit_links",
    "limit",
    "limits",
    "ranked_priority",
    "spelled",
]

#: The priority of a ranked diff of a file in play (add-diff); less relevant
#: diffs rank down from it. Below a note's default (0), so notes pack first
#: unless their priority says otherwise.
DIFF_TOP: Final = -1
#: The priority of a ranked file in play (add-tree); the other files rank down
#: from it. Below every ranked diff, so a task's changes pack before whole files.
TREE_TOP: Final = -100_000


#: Why a file packs where it does: the words, or a function that spells them (called
#: only for a file that is kept: most ranked files are not).
Reason = str | Callable[[], str]


def spelled(reason: Reason) -> str:
    """The words of ``reason``."""
    return reason if isinstance(reason, str) else reason()


def ranked_priority(top: int, below: int) -> int:
    """The priority of a file ``below`` levels under the top of its band."""
    return max(top - below, -(2**31))


class Pick(msgspec.Struct, frozen=True, gc=False):
    """A file (or a file's diff) chosen to become a link, and where it packs."""

    path: str
    source: str
    oid: str
    sha256: str
    size: int
    priority: int = 0
    score: float | None = None
    reason: str = ""


class Selector:
    """Chooses what becomes a link, in the order offered: text only (and secrets
    when allowed), one link per body, within the total budget, with a label
    that fits on one line.

    Args:
        max_total: The bytes the picks may add up to.
        allow_secrets: Whether content classed ``secret`` may be picked, and
            bodies whose label looks like a credential (a file named after a token).
        labels: The labels that will be offered (scanned at once, not one by one).
    """

    def __init__(self, max_total: int, allow_secrets: bool, labels: Iterable[str] = ()) -> None:
        self.remaining = max_total
        self.attachable = ("text", "secret") if allow_secrets else ("text",)
        self._secret_labels = set() if allow_secrets else textpolicy.secret_values(labels)
        self.picks: list[Pick] = []
        self.skipped: list[Skipped] = []
        #: Each body withheld as a secret, and how many picks were made before it
        #: was offered (its place among the attachments, had it been one).
        self.withheld: dict[str, int] = {}
        self._seen: dict[str, str] = {}

    def offer(
        self,
        path: str,
        source: str,
        digest: str,
        size: int,
        cls: str,
        oid: str | Callable[[], str],
        shown: str = "",
        place: tuple[int, float | None, Reason] = (0, None, ""),
    ) -> None:
        """Pick the body or record why not (under ``shown``, else ``path``); an
        ``oid`` that is a function (writing the blob) is called only for a pick.
        ``place`` is the pick's ``(priority, score, reason)``."""
        if not shown:
            shown = path
        if cls not in self.attachable or source in self._secret_labels:
            why = cls if cls not in self.attachable else "secret"
            self.skipped.append(Skipped(shown, why, size))
            if why == "secret":
                self.withheld[shown] = len(self.picks)
        elif len(source) > validate.MAX_LABEL_CHARS:
            self.skipped.append(Skipped(shown, "bad_path", size))
        elif digest in self._seen:
            self.skipped.append(Skipped(shown, "duplicate", size, same_as=self._seen[digest]))
        elif size > self.remaining:
            self.skipped.append(Skipped(shown, "total_budget", size))
        else:
            found = oid() if callable(oid) else oid
            priority, score, reason = place
            self.picks.append(
                Pick(path, source, found, digest, size, priority, score, spelled(reason))
            )
            self._seen[digest] = source
            self.remaining -= size

    def refuse(
        self,
        paths: Sequence[str],
        sources: Sequence[str],
        digests: Sequence[str],
        sizes: Sequence[int],
        classes: Sequence[str],
    ) -> None:
        """Record why each file — a column each of their paths, labels, digests, sizes
        and classes, in the order offered — is not picked, as :meth:`offer` would
        when none of them fits what is left of the budget (the caller knows that):
        ``total_budget``, unless another reason comes first."""
        refused = list(map(Skipped, paths, repeat("total_budget"), sizes))
        # the files refused for another reason: found a column at a time (most are not)
        rows = range(len(refused))
        other = set(compress(rows, map(not_, map(self.attachable.__contains__, classes))))
        if self._secret_labels:
            other.update(compress(rows, map(self._secret_labels.__contains__, sources)))
        longest = validate.MAX_LABEL_CHARS
        if max(map(len, sources), default=0) > longest:
            other.update(compress(rows, map(lt, repeat(longest), map(len, sources))))
        if not self._seen.keys().isdisjoint(digests):
            other.update(compress(rows, map(self._seen.__contains__, digests)))
        for row in other:
            refused[row] = self._refused(
                paths[row], sources[row], digests[row], sizes[row], classes[row]
            )
        self.skipped += refused

    def _refused(self, path: str, source: str, digest: str, size: int, cls: str) -> Skipped:
        """Why :meth:`offer` would not pick a file that does not fit the budget."""
        if cls not in self.attachable:
            return Skipped(path, cls, size)
        if source in self._secret_labels:
            return Skipped(path, "secret", size)
        if len(source) > validate.MAX_LABEL_CHARS:
            return Skipped(path, "bad_path", size)
        if digest in self._seen:
            return Skipped(path, "duplicate", size, same_as=self._seen[digest])
        return Skipped(path, "total_budget", size)


def limit(settings: Settings, value: int | None, key: str, what: str) -> int:
    """A byte limit: ``value`` when given (positive), else the setting ``key``."""
    if value is None:
        return settings.size(key)
    number = validate.token_count(value, what)
    if number <= 0:
        raise ValidationError(f"{what} must be positive, not {number}")
    return number


def limits(
    settings: Settings, max_file_bytes: int | None, max_total_bytes: int | None
) -> tuple[int, int]:
    """A run's byte limits per file and in all: each as given, else its setting."""
    return (
        limit(settings, max_file_bytes, "hydrate.maxFileBytes", "max file bytes"),
        limit(settings, max_total_bytes, "hydrate.maxTotalBytes", "max total bytes"),
    )


def _links_for(
    picks: list[Pick], kept_sources: dict[str, str], origin: str
) -> tuple[list[Link], list[Skipped]]:
    """The links of ``picks``; a pick whose body another link holds is a duplicate."""
    links: list[Link] = []
    late: list[Skipped] = []
    for pick in picks:
        if pick.sha256 in kept_sources:
            late.append(
                Skipped(pick.path, "duplicate", pick.size, same_as=kept_sources[pick.sha256])
            )
            continue
        links.append(
            Link(
                sha256=pick.sha256,
                oid=pick.oid,
                size=pick.size,
                source=pick.source,
                priority=pick.priority,
                origin=origin,
                path=pick.path,
                score=pick.score,
                reason=pick.reason,
            )
        )
    return links, late


def _body_changes(before: list[Link], after: list[Link]) -> dict[bytes, bytes | None]:
    """The ``bodies/`` tree entries to add and remove between two link lists."""
    before_shas = {link.sha256 for link in before}
    final = {link.sha256: link.oid for link in after}
    bodies: dict[bytes, bytes | None] = {
        body_path(digest): None for digest in before_shas - final.keys()
    }
    for digest, oid in final.items():
        if digest not in before_shas:
            bodies[body_path(digest)] = oid.encode("ascii")
    return bodies


def _same_body(a: Link, b: Link) -> bool:
    """Whether two links of one path differ only in where they pack."""
    return (a.sha256, a.oid, a.size, a.source, a.expires) == (
        b.sha256,
        b.oid,
        b.size,
        b.source,
        b.expires,
    )


def _keep_unmoved(links: list[Link], old: dict[str, Link]) -> list[Link]:
    """``links``, each replaced by its ``old`` link of the same path when only
    its score moved: a score that left the priority where it was is not worth
    a commit."""
    return [
        before
        if (before := old.get(link.path)) is not None
        and _same_body(before, link)
        and before.priority == link.priority
        else link
        for link in links
    ]


def _left_to_later(
    links: list[Link], old: dict[str, Link], later: Callable[[Link], bool]
) -> list[Link]:
    """``links`` as a later run that answers for some of them leaves them: of those,
    the links already there stay as they are (though this run lacks them) and none
    is added (see :func:`commit_links`)."""
    result = [old.get(link.path) if later(link) else link for link in links]
    mine = [link for link in result if link is not None]
    taken = {link.path for link in mine}
    return mine + [link for path, link in old.items() if path not in taken and later(link)]


@dataclass(frozen=True, slots=True)
class _Counts:
    """How the new in-scope links differ from the old ones, path by path."""

    added: int
    updated: int
    unchanged: int
    reranked: int
    removed: list[str]

    @classmethod
    def of(cls, links: list[Link], old: dict[str, Link]) -> _Counts:
        """Compare ``links`` with the ``old`` in-scope links (by path)."""
        added = sum(1 for link in links if link.path not in old)
        unchanged = sum(1 for link in links if old.get(link.path) == link)
        reranked = sum(
            1
            for link in links
            if (before := old.get(link.path)) is not None
            and before != link
            and _same_body(before, link)
        )
        updated = len(links) - added - unchanged - reranked
        new_paths = {link.path for link in links}
        removed = sorted(path for path in old if path not in new_paths)
        return cls(added, updated, unchanged, reranked, removed)

    @property
    def changed(self) -> bool:
        """Whether any link was added, updated, removed or reranked."""
        return bool(self.added or self.updated or self.removed or self.reranked)

    def as_fields(self) -> dict[str, Any]:
        """The counting fields of a :class:`HydrateResult`, in its order."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "reranked": self.reranked,
            "removed": len(self.removed),
            "removed_paths": self.removed,
        }

    def short(self) -> str:
        """The commit subject's ``(+added ~updated -removed)``."""
        return f"(+{self.added} ~{self.updated} -{len(self.removed)})"

    def trailer(self) -> str:
        """The commit's ``counts`` trailer."""
        counts = f"added {self.added}, updated {self.updated}, removed {len(self.removed)}"
        if self.reranked:
            counts += f", reranked {self.reranked}"
        return counts


def _outcome(
    task_id: str, result: dict[str, Any], counts: _Counts, skips: list[Skipped], links: list[Link]
) -> HydrateResult:
    """The result of hydrating ``task_id`` with ``links`` (``changed`` aside)."""
    return cast(
        HydrateResult,
        {
            "task_id": task_id,
            **result,
            **counts.as_fields(),
            "skipped": _skip_dicts(skips),
            "total_bytes": sum(link.size for link in links),
        },
    )


def _skip_dicts(skips: list[Skipped]) -> list[SkippedDict]:
    """Each skip as :meth:`.Skipped.as_dict` gives it, by path, then reason."""
    # by path alone (no key tuple per skip); paths skipped twice: by path, then reason
    by_path = sorted(skips, key=attrgetter("path"))
    paths = list(map(attrgetter("path"), by_path))
    if any(map(eq, paths, islice(paths, 1, None))):
        by_path = sorted(skips, key=attrgetter("path", "reason"))  # (``paths`` holds)
    reasons = map(attrgetter("reason"), by_path)
    found: list[SkippedDict] = [
        {"path": path, "reason": reason, "bytes": size}
        for path, reason, size in zip(
            paths, reasons, map(attrgetter("bytes"), by_path), strict=True
        )
    ]
    # (``as_dict`` itself for a path that is not ASCII, shown escaped, and a duplicate)
    duplicates = map(bool, map(attrgetter("same_as"), by_path))
    unusual = map(or_, map(not_, map(str.isascii, paths)), duplicates)
    for row in compress(range(len(paths)), unusual):
        found[row] = by_path[row].as_dict()
    return found


def commit_links(
    refs: TaskRefs,
    task_id: str,
    picks: list[Pick],
    skipped: list[Skipped],
    *,
    origin: str,
    in_scope: Callable[[Link], bool],
    action: str,
    summary: str,
    trailers: dict[str, str],
    result: dict[str, Any],
    task_update: Callable[[Task, list[Link]], Task] | None = None,
    placed_later: Callable[[Link], bool] | None = None,
) -> HydrateResult:
    """Replace the task's links ``in_scope`` with ``picks``, in one commit (or none).

    ``task_update`` returns the task document to write beside the new links
    (add-tree records what it took); a change there alone is a commit too.
    ``placed_later``: the links a later run of the same refresh answers for (they
    are in its scope too) are left as they are: not changed, removed or added by
    this run; that run sets them, as when the runs were made (else two overlapping
    runs wrote theirs in turn, two commits at every refresh).

    One link per path: a pick replaces the in-scope link of its path; in-scope
    links whose path is not picked are removed; a pick whose body another
    (out-of-scope) link already holds is reported as a duplicate.
    """

    def apply(state: TaskState) -> Change[HydrateResult]:
        old = {link.path: link for link in state.links if in_scope(link)}
        kept = [link for link in state.links if not in_scope(link)]
        links, late = _links_for(picks, {link.sha256: link.source for link in kept}, origin)
        links = _keep_unmoved(links, old)
        if placed_later is not None:
            links = _left_to_later(links, old, placed_later)
        counts = _Counts.of(links, old)
        outcome = _outcome(task_id, result, counts, [*skipped, *late], links)
        final = [*kept, *links]
        task = task_update(state.task, final) if task_update is not None else state.task
        if not counts.changed and task == state.task:
            raise Unchanged({**outcome, "changed": False})
        return Change(
            task=task,
            links=final,
            bodies=_body_changes(state.links, final),
            message=task_message(
                f"{action} {task_id} {summary} {counts.short()}",
                action,
                task_id,
                **trailers,
                counts=counts.trailer(),
            ),
            result={**outcome, "changed": True},
        )

    written = refs.write(task_id, apply)
    tip = refs.tip(task_id)
    written["tip"] = tip.decode("ascii") if tip is not None else None
    return written
