"""Three-way merge of task states: pure functions, no I/O, no git, no clock.

Two clones that changed the same task meet in a merge. Whoever performs it,
and whichever side is called "ours", the result must be the same bytes: two
clones merging the same pair of tips write the same tree, and repeated syncs
among many clones settle on one state. So every rule here is symmetric and
every output is sorted.

The rules (also in the README, "Sharing through remotes"):

* A field changed on one side only takes that side's value.
* A field changed on both sides to different values takes the value of the
  *winning* side — the side whose tip commit is newer (commit time), ties
  broken by the higher commit id — and is reported as a :class:`FieldConflict`.
* Lists of items (tags, scope, acceptance criteria, files, tests) changed on
  both sides merge item by item: an item removed on either side is removed,
  items added on either side are kept (the winning side's order first).
* Checkpoints are a union, deduplicated, in time order.
* Links are keyed by sha256: added on either side → kept; removed on one side
  and unchanged on the other → removed; removed on one side but changed on the
  other → kept (the change wins; reported). A link changed on both sides
  merges field by field with the rule above.
* ``created_at`` keeps the earliest non-empty value.
* The claim (``assignee``, ``claimed_at``, ``taken_from``, ``claimed_via``)
  merges as one value. Changed on both sides: a claim wins over a release; a
  claim a remote accepted (``claimed_via`` set by ``claim --remote``) wins over
  one made in a single clone, whatever their times; then the claim of a side that
  finished the task (``done`` or ``cancelled``) over one of a side that did not
  (an older offline claim would reopen finished work); then the earlier claim
  wins (then the lower holder name). The side whose claim won also decides the
  station, so a task is never left held but open, nor a published claim's
  ``done`` undone by an offline claim. Reported as a ``claim`` conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

import msgspec

from .model import Checkpoint, Link, Task, packing_sorted

__all__ = [
    "FieldConflict",
    "MergeResult",
    "Side",
    "merge_json",
    "merge_states",
]

T = TypeVar("T")

#: Task fields merged as a whole value.
SCALAR_FIELDS: Final = (
    "title",
    "objective",
    "acceptance",
    "kind",
    "priority",
    "token_budget",
    "status",
    "parent",
    "source",
)
#: Task fields merged item by item when both sides changed them.
LIST_FIELDS: Final = ("acceptance_criteria", "scope", "tags", "files", "tests", "depends_on")
#: Task fields that together say who holds a task, merged as one value.
CLAIM_FIELDS: Final = ("assignee", "claimed_at", "taken_from", "claimed_via")
#: Link fields merged one by one (``oid`` and ``size`` follow the body).
LINK_FIELDS: Final = ("source", "priority", "expires", "origin", "path", "score", "reason")


class Side(msgspec.Struct, frozen=True):
    """One side of a merge: a task state and the tip commit it was read from.

    ``time`` and ``commit`` rank the sides for the conflict rule: the newer
    commit wins, equal times fall to the higher commit id (hex).
    """

    task: Task
    links: list[Link]
    time: int = 0
    commit: str = ""

    @property
    def rank(self) -> tuple[int, str]:
        return (self.time, self.commit)


class FieldConflict(msgspec.Struct, frozen=True):
    """A field both sides changed to different values, and what the merge kept."""

    field: str
    values: tuple[Any, Any]
    chosen: Any
    rule: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "values": [msgspec.to_builtins(v) for v in self.values],
            "chosen": msgspec.to_builtins(self.chosen),
            "rule": self.rule,
        }


class MergeResult(msgspec.Struct):
    """The merged state and the conflicts met on the way (sorted by field)."""

    task: Task
    links: list[Link]
    conflicts: list[FieldConflict] = msgspec.field(default_factory=list)


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_NEWER_RULE: Final = "newer side (commit time, then commit id)"


def _sorted_pair(a: T, b: T) -> tuple[T, T]:
    """The two values in a canonical order, so reports do not depend on sides."""
    ka = msgspec.json.encode(msgspec.to_builtins(a), order="sorted")
    kb = msgspec.json.encode(msgspec.to_builtins(b), order="sorted")
    return (a, b) if ka <= kb else (b, a)


def _pick(a: T, b: T, a_wins: bool | None) -> T:
    """The winning side's value; equal ranks (never two real commits) pick by content."""
    if a_wins is None:
        return max(a, b, key=_key)
    return a if a_wins else b


class _Both:
    """Marks that both sides changed a value differently (no one-sided answer)."""


_BOTH: Final = _Both()


def _one_sided(base: T, a: T, b: T) -> T | _Both:
    """The merged value when at most one side changed it, else :data:`_BOTH`."""
    if a == b or b == base:
        return a
    if a == base:
        return b
    return _BOTH


def _three_way(
    name: str,
    base: Any,
    a: Any,
    b: Any,
    a_wins: bool | None,
    conflicts: list[FieldConflict],
) -> Any:
    simple = _one_sided(base, a, b)
    if not isinstance(simple, _Both):
        return simple
    chosen = _pick(a, b, a_wins)
    conflicts.append(FieldConflict(name, _sorted_pair(a, b), chosen, _NEWER_RULE))
    return chosen


def _merge_items(base: list[T], a: list[T], b: list[T], a_wins: bool | None) -> list[T]:
    simple = _one_sided(base, a, b)
    if not isinstance(simple, _Both):
        return list(simple)
    in_base = {_key(x) for x in base}
    removed = (in_base - {_key(x) for x in a}) | (in_base - {_key(x) for x in b})
    first = _pick(a, b, a_wins)
    second = b if first is a else a
    result: list[T] = []
    seen: set[bytes] = set()
    for item in [*first, *second]:
        key = _key(item)
        if key in removed or key in seen:
            continue
        seen.add(key)
        result.append(item)
    return result


def _key(item: Any) -> bytes:
    return msgspec.json.encode(msgspec.to_builtins(item), order="sorted")


def _checkpoint_key(cp: Checkpoint) -> tuple[str, int, str, str, str, str]:
    return (cp.at, cp.tokens, cp.summary, cp.evidence, cp.next_step, cp.author)


def _merge_checkpoints(
    base: list[Checkpoint], a: list[Checkpoint], b: list[Checkpoint]
) -> list[Checkpoint]:
    simple = _one_sided(base, a, b)
    if not isinstance(simple, _Both):
        return list(simple)
    return sorted(set(a) | set(b), key=_checkpoint_key)


def _merge_created(base: str, a: str, b: str) -> str:
    simple = _one_sided(base, a, b)
    if not isinstance(simple, _Both):
        return simple
    present = [v for v in (a, b) if v]
    return min(present) if present else ""


_CLAIM_RULE: Final = (
    "a claim wins over a release; a claim a remote accepted over one it did not; "
    "then a side that finished the task (done or cancelled) over one that did not; "
    "then the earlier (then lower holder)"
)
#: Stations a task ends at (:data:`git_hydrate.lifecycle.FINISHED_STATIONS`).
_FINISHED: Final = frozenset({"done", "cancelled"})

Claim = tuple[str, str, str, str]


def _claim_of(task: Task | None) -> Claim | _Missing:
    if task is None:
        return MISSING
    return (task.assignee, task.claimed_at, task.taken_from, task.claimed_via)


def _claim_dict(claim: Claim) -> dict[str, str]:
    return dict(zip(CLAIM_FIELDS, claim, strict=True))


def _merge_claim(
    base: Task | None, a: Task, b: Task, conflicts: list[FieldConflict]
) -> tuple[Claim, Task | None]:
    """The merged claim, and the side it came from when both sides changed it."""
    ca, cb = _claim_of(a), _claim_of(b)
    assert not isinstance(ca, _Missing) and not isinstance(cb, _Missing)
    simple = _one_sided(_claim_of(base), ca, cb)
    if not isinstance(simple, _Both):
        assert not isinstance(simple, _Missing)  # one side's own claim
        return simple, None

    def rank(claim: Claim, task: Task) -> tuple[bool, bool, bool, str, str, str, str]:
        held, at, taken, via = claim
        # held first, then published through a remote, then the side that finished
        # the work (an older offline claim would reopen it), then earlier, lower name
        return (not held, not via, task.status not in _FINISHED, at, held, taken, via)

    winner = a if rank(ca, a) <= rank(cb, b) else b
    chosen = _claim_of(winner)
    assert not isinstance(chosen, _Missing)
    conflicts.append(
        FieldConflict(
            "claim",
            _sorted_pair(
                dict(zip(CLAIM_FIELDS, ca, strict=True)), dict(zip(CLAIM_FIELDS, cb, strict=True))
            ),
            _claim_dict(chosen),
            _CLAIM_RULE,
        )
    )
    return chosen, winner


def _merge_links(
    base: Iterable[Link],
    a: Iterable[Link],
    b: Iterable[Link],
    a_wins: bool | None,
    conflicts: list[FieldConflict],
) -> list[Link]:
    by_base = {lk.sha256: lk for lk in base}
    by_a = {lk.sha256: lk for lk in a}
    by_b = {lk.sha256: lk for lk in b}
    merged: list[Link] = []
    for digest in sorted(set(by_a) | set(by_b)):
        la, lb, lo = by_a.get(digest), by_b.get(digest), by_base.get(digest)
        if la is None or lb is None:
            present = la if la is not None else lb
            assert present is not None
            if lo is None:
                merged.append(present)  # added on one side
            elif present != lo:
                # Removed on one side, changed on the other: keep the change.
                conflicts.append(
                    FieldConflict(
                        f"links[{digest}]",
                        ("removed", "changed"),
                        "changed",
                        "a change wins over a removal",
                    )
                )
                merged.append(present)
            # else: removed on one side, untouched on the other -> stays removed.
            continue
        if la == lb:
            merged.append(la)
            continue
        values: dict[str, Any] = {}
        for name in LINK_FIELDS:
            values[name] = _three_way(
                f"links[{digest}].{name}",
                getattr(lo, name) if lo is not None else MISSING,
                getattr(la, name),
                getattr(lb, name),
                a_wins,
                conflicts,
            )
        body = la if (la.oid, la.size) <= (lb.oid, lb.size) else lb
        merged.append(msgspec.structs.replace(body, **values))
    return packing_sorted(merged)


def merge_states(base: Side | None, a: Side, b: Side) -> MergeResult:
    """Merge two task states that share ``base`` (``None``: no common history).

    Symmetric: ``merge_states(o, a, b)`` and ``merge_states(o, b, a)`` return
    equal tasks, equal links and equal conflicts. ``a`` and ``b`` must be the
    same task id.
    """
    a_wins = None if a.rank == b.rank else a.rank > b.rank
    conflicts: list[FieldConflict] = []
    base_task = base.task if base is not None else None

    def base_of(name: str) -> Any:
        return getattr(base_task, name) if base_task is not None else MISSING

    values: dict[str, Any] = {}
    claim, claim_side = _merge_claim(base_task, a.task, b.task, conflicts)
    values.update(zip(CLAIM_FIELDS, claim, strict=True))
    values.update(_merge_scalars(base_of, a.task, b.task, a_wins, claim_side, conflicts))
    for name in LIST_FIELDS:
        base_list = base_of(name)
        values[name] = _merge_items(
            [] if base_list is MISSING else base_list,
            getattr(a.task, name),
            getattr(b.task, name),
            a_wins,
        )
    values["checkpoints"] = _merge_checkpoints(
        base_task.checkpoints if base_task is not None else [],
        a.task.checkpoints,
        b.task.checkpoints,
    )
    values["created_at"] = _merge_created(
        base_task.created_at if base_task is not None else "",
        a.task.created_at,
        b.task.created_at,
    )
    values["format"] = max(a.task.format, b.task.format)
    # Fields a newer model adds merge as whole values, so the result never
    # depends on which side is "ours".
    for name in a.task.__struct_fields__:
        if name not in values and name != "id":
            values[name] = _three_way(
                name,
                base_of(name),
                getattr(a.task, name),
                getattr(b.task, name),
                a_wins,
                conflicts,
            )
    task = msgspec.structs.replace(a.task, **values)
    links = _merge_links(
        base.links if base is not None else (), a.links, b.links, a_wins, conflicts
    )
    conflicts.sort(key=lambda c: c.field)
    return MergeResult(task=task, links=links, conflicts=conflicts)


def _merge_scalars(
    base_of: Callable[[str], Any],
    a: Task,
    b: Task,
    a_wins: bool | None,
    claim_side: Task | None,
    conflicts: list[FieldConflict],
) -> dict[str, Any]:
    """The merged :data:`SCALAR_FIELDS`, three-way, but for a station that travels
    with the claim that won (``claim_side``)."""
    values: dict[str, Any] = {}
    for name in SCALAR_FIELDS:
        if name == "status" and claim_side is not None and a.status != b.status:
            values[name] = claim_side.status  # a claim and its station travel together
            conflicts.append(
                FieldConflict(
                    name,
                    _sorted_pair(a.status, b.status),
                    claim_side.status,
                    "the station of the side whose claim won",
                )
            )
            continue
        values[name] = _three_way(
            name, base_of(name), getattr(a, name), getattr(b, name), a_wins, conflicts
        )
    return values


def merge_json(base: Any, a: Any, b: Any, a_wins: bool) -> Any:
    """Three-way merge of JSON values (index files of union refs such as the archive).

    Objects merge key by key (a key removed on one side and unchanged on the
    other is removed; a change wins over a removal); any other value changed
    on both sides takes the winning side's. :data:`MISSING` stands for an
    absent value. Symmetric when ``a_wins`` is decided symmetrically.
    """
    simple = _one_sided(base, a, b)
    if not isinstance(simple, _Both):
        return simple
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        base_map: Mapping[str, Any] = base if isinstance(base, Mapping) else {}
        out: dict[str, Any] = {}
        for key in sorted(set(a) | set(b)):
            value = merge_json(
                base_map.get(key, MISSING), a.get(key, MISSING), b.get(key, MISSING), a_wins
            )
            if value is not MISSING:
                out[key] = value
        return out
    if a is MISSING:
        return b
    if b is MISSING:
        return a
    return a if a_wins else b


def canonical(result: MergeResult) -> tuple[bytes, bytes]:
    """The merged task and links as bytes, for comparing results in tests."""
    return (_key(result.task), b"".join(_key(lk) for lk in result.links))
