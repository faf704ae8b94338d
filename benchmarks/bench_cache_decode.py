"""Loading the queue cache of many tasks: typed entries against the untyped read.

    python benchmarks/bench_cache_decode.py [--tasks 10000] [--runs 9]

Builds a queue-cache file of ``--tasks`` entries, then times, alternating, the read
before polish4 (msgpack to plain dicts, then each entry's field names checked against
a set) and :func:`git_hydrate.listing.decode_entries` (each entry decoded as
``QueueEntry``, its fields' types checked by msgspec); medians of ``--runs``, wall and
CPU milliseconds per load.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from git_hydrate.dependencies import QueueEntry
from git_hydrate.listing import decode_entries


def _file(tasks: int) -> bytes:
    entry = {
        "title": "Add GET /healthz to the service",
        "status": "open",
        "kind": "code",
        "priority": 2,
        "tags": ["api", "backend"],
        "attachments": 3,
        "assignee": "",
        "parent": "",
        "created_at": "2026-12-05T10:00:00Z",
        "depends_on": ["T-0"],
        "claimed_at": "",
        "taken_from": "",
        "last_checkpoint_at": "",
    }
    return msgspec.msgpack.encode(
        {f"{i:040x}": {"task_id": f"T-{i}", **entry} for i in range(tasks)}
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    data = _file(args.tasks)
    fields = frozenset(QueueEntry.__annotations__)

    def untyped() -> object:
        found = msgspec.msgpack.decode(data, type=dict[str, dict[str, Any]])
        return {k: v for k, v in found.items() if fields <= set(v)}

    def typed() -> object:
        return decode_entries(data, QueueEntry)

    times: dict[str, list[tuple[float, float]]] = {"untyped": [], "typed": []}
    ways: list[tuple[str, Callable[[], object]]] = [("untyped", untyped), ("typed", typed)]
    for run in range(args.runs):
        for name, way in ways if run % 2 == 0 else ways[::-1]:
            start, cpu = time.perf_counter(), time.process_time()
            way()
            times[name].append((time.perf_counter() - start, time.process_time() - cpu))
    for name, runs in times.items():
        wall = statistics.median(w for w, _c in runs) * 1000
        cpu = statistics.median(c for _w, c in runs) * 1000
        print(f"{name:8} {args.tasks} entries: {wall:.1f} ms wall, {cpu:.1f} ms CPU")


if __name__ == "__main__":
    main()
