"""When this clone first saw each claim: the second clock that staleness is judged by.

A claim's dates (``claimed_at``, a checkpoint's ``at``) are the holder's
clock. A holder two hours slow looks two hours older than it is, and could
have its task taken a minute after a checkpoint; one a day fast could not be
taken from for a day. So a pull notes, for every held task it brings, the
moment *this* clone first saw that claim in that state (holder, claim date,
last checkpoint), and staleness counts from that moment when there is one
(:func:`claim_start`).

Derived and disposable, like every cache here: ``<common dir>/hydrate/claims-seen``,
a header line and one line per sighting (``<task id> <state digest> <POSIX
seconds>``), appended in one ``O_APPEND`` write per pull (concurrent pulls
interleave whole lines), rewritten with the newest :data:`MAX_SIGHTINGS` when
it grows past twice that. Written for this user only and trusted only then;
without it, a claim's own dates count, as before.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from typing import Final

from .store import Repository, read_private, write_derived

__all__ = ["MAX_SIGHTINGS", "Sightings", "activity", "claim_start", "epoch"]

#: Sightings kept when the file is rewritten (the newest).
MAX_SIGHTINGS: Final = 4096
_HEADER: Final = b"git-hydrate claims-seen 1\n"


def epoch(iso: str) -> float | None:
    """POSIX seconds of a stored ``2026-11-30T07:14:27Z``, or ``None``."""
    try:
        return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None


def activity(assignee: str, claimed_at: str, last_checkpoint_at: str) -> str:
    """A digest of a claim's state: who holds it, since when, last sign of life."""
    import hashlib  # (OpenSSL's start-up: only where a digest is made)

    stamp = max(claimed_at, last_checkpoint_at)
    data = f"{assignee}\0{stamp}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def claim_start(dated: str, seen: float | None) -> float | None:
    """The moment a claim's age counts from: the later of its own date (``dated``,
    the holder's clock) and the moment this clone first saw it (``seen``), a date
    later than that moment (a clock ahead) counting as that moment; ``None``
    when neither is known."""
    own = epoch(dated) if dated else None
    if seen is None:
        return own
    if own is None or own > seen:
        return seen
    return max(own, seen)


class Sightings:
    """The sightings of one repository: read once, new ones saved in one write."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.path = os.path.join(repo.common_dir, "hydrate", "claims-seen")
        self._known: dict[tuple[str, str], float] | None = None
        self._new: dict[tuple[str, str], float] = {}
        self._lines = 0

    def _load(self) -> dict[tuple[str, str], float]:
        if self._known is None:
            self._known = {}
            data = read_private(self.path)
            if data is not None and data.startswith(_HEADER):
                for line in data[len(_HEADER) :].decode("utf-8", "replace").splitlines():
                    parts = line.split(" ")
                    if len(parts) != 3:
                        continue
                    with contextlib.suppress(ValueError):
                        key, moment = (parts[0], parts[1]), float(parts[2])
                        self._lines += 1
                        if moment < self._known.get(key, moment + 1):
                            self._known[key] = moment  # the first sighting counts
        return self._known

    def seen(self, task_id: str, state: str) -> float | None:
        """When this clone first saw ``task_id`` in the claim state ``state``."""
        key = (task_id, state)
        return self._new.get(key, self._load().get(key))

    def note(self, task_id: str, state: str, moment: float) -> None:
        """Record a sighting at ``moment`` unless one is known already."""
        if self.seen(task_id, state) is None:
            self._new[(task_id, state)] = moment

    def save(self) -> None:
        """Write the new sightings (failing to is no error: it only saves a guess)."""
        if not self._new:
            return
        known = self._load()
        whole = self._lines + len(self._new) > 2 * MAX_SIGHTINGS
        if whole:
            merged = sorted({**known, **self._new}.items(), key=lambda item: item[1])
            entries = merged[-MAX_SIGHTINGS:]
        else:
            entries = list(self._new.items())
        lines = "".join(f"{task} {state} {int(moment)}\n" for (task, state), moment in entries)
        with contextlib.suppress(OSError):
            write_derived(self.repo, self.path, _HEADER, lines.encode(), whole=whole)
        known.update(self._new)
        self._new = {}
