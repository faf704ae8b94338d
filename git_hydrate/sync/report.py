"""What a pull, push or sync did: one outcome per task (or shared ref)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

__all__ = ["FAILED_ACTIONS", "WRITE_ACTIONS", "Outcome", "Report"]

#: Pull/push actions that make the command fail (exit status 1): a task the
#: remote refused (``rejected``: a race a sync settles; ``refused``: a hook,
#: hidden refs, anything pulling cannot fix), remote data that failed
#: validation, an ID that does not exist.
FAILED_ACTIONS: Final = frozenset({"skipped", "rejected", "refused", "absent"})
#: Pull actions that move a task ref.
WRITE_ACTIONS: Final = frozenset({"created", "restored", "fast-forward", "merged"})


class Outcome(msgspec.Struct):
    """What happened to one task (or union ref) in a pull or push."""

    name: str
    action: str
    detail: str = ""
    old: str | None = None
    new: str | None = None
    conflicts: list[dict[str, Any]] = msgspec.field(default_factory=list)
    is_task: bool = True
    #: The command went well, but this wants the user (doctor): said as a warning
    #: on stderr beside the report, and under ``-q`` too.
    warning: bool = False

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            ("task_id" if self.is_task else "ref"): self.name,
            "action": self.action,
            "detail": self.detail,
            "old": self.old,
            "new": self.new,
        }
        if self.conflicts:
            data["conflicts"] = self.conflicts
        return data


class Report(msgspec.Struct):
    """The result of ``pull``, ``push`` or ``sync``: outcomes plus up-to-date counts."""

    operation: str
    remote: str
    outcomes: list[Outcome] = msgspec.field(default_factory=list)
    up_to_date: int = 0
    #: The refs counted in ``up_to_date`` (a push's, by name), for ``sync`` to count
    #: a task the pull brought only once.
    up_to_date_refs: list[str] = msgspec.field(default_factory=list)
    rounds: int = 1
    #: What the command has to say once, beside the per-task outcomes (a
    #: remote that lists no tasks, a namespace it hides).
    notes: list[str] = msgspec.field(default_factory=list)

    def warnings(self) -> list[str]:
        """What the command says as ``warning:`` lines: its notes, then each outcome
        that wants the user's action though it is no failure."""
        said = [f"{o.name}: {o.detail}" for o in self.outcomes if o.warning]
        return [*self.notes, *said]

    @property
    def ok(self) -> bool:
        """False when a task was rejected, skipped or absent (the command exits 1)."""
        return not any(o.action in FAILED_ACTIONS for o in self.outcomes)

    def removed_then_restored(self) -> None:
        """One line for a task a pull dropped (removed elsewhere) and then took back
        (changed on the remote since): ``restored``, saying both."""
        back = {o.name for o in self.outcomes if o.action == "restored"}
        dropped = {o.name: o for o in self.outcomes if o.action == "removed" and o.name in back}
        if not dropped:
            return
        self.outcomes = [
            msgspec.structs.replace(o, detail=f"{dropped[o.name].detail}; {o.detail}")
            if o.action == "restored" and o.name in dropped
            else o
            for o in self.outcomes
            if not (o.action == "removed" and o.name in dropped)
        ]

    def failed(self, action: str) -> list[str]:
        return [o.name for o in self.outcomes if o.action == action]

    def counts(self) -> dict[str, int]:
        """How many tasks had each outcome: the shared refs (the removal record, the
        archive) are listed by name, never counted as tasks."""
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            if outcome.is_task:
                counts[outcome.action] = counts.get(outcome.action, 0) + 1
        counts["up-to-date"] = self.up_to_date
        return dict(sorted(counts.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "remote": self.remote,
            "ok": self.ok,
            "rounds": self.rounds,
            "counts": self.counts(),
            "tasks": [o.as_dict() for o in self.outcomes if o.is_task],
            "refs": [o.as_dict() for o in self.outcomes if not o.is_task],
            "notes": list(self.notes),
        }
