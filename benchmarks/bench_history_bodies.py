"""The history's read with the commits' bodies (template lines) against without.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_history_bodies.py GIT_DIR... [--runs 7]

Each round reads ``git log`` of each repository's ``HEAD`` (at most
:data:`git_hydrate.hydrate.history.MAX_COMMITS` non-merge commits, changed paths) and
parses it, once as the history read before the template lines (``%H %s``, subjects
only) and once as it reads now (``%H %s``, then each body: the lines many repeat are
kept), in alternating order. Printed per repository: the bytes git wrote each way,
median wall and CPU seconds (this process and git) of each, and the paired ratio
(now / before) of each; and how many template lines were found.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from git_hydrate.hydrate.history import MAX_COMMITS, SWEEP, _parse  # noqa: E402
from git_hydrate.store.commands import _changed_paths_args  # noqa: E402


def _before_args(rev: str) -> list[str]:
    args = _changed_paths_args(rev, MAX_COMMITS)
    return [a if not a.startswith("--format=") else "--format=%x00%H %s" for a in args]


def _before_parse(raw: bytes) -> int:
    """The parse of the history read before: subjects and paths, no bodies."""
    kept = 0
    for chunk in raw.decode("utf-8", "surrogateescape").split("\0")[1:]:
        lines = chunk.split("\n")
        changed = [line for line in lines[1:] if line]
        if len(changed) <= SWEEP:
            kept += 1
    return kept


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _one(git_dir: str, now: bool) -> tuple[float, float, int, int]:
    wall, cpu = time.perf_counter(), _cpu()
    args = _changed_paths_args("HEAD", MAX_COMMITS) if now else _before_args("HEAD")
    raw = subprocess.run(
        ["git", "--git-dir", git_dir, *args], capture_output=True, check=True
    ).stdout
    found = len(_parse(raw).templates) if now else (_before_parse(raw) and 0)
    return time.perf_counter() - wall, _cpu() - cpu, len(raw), found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("git_dirs", nargs="+")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    for git_dir in args.git_dirs:
        rows: dict[bool, list[tuple[float, float, int, int]]] = {False: [], True: []}
        for run in range(args.runs):
            for now in (False, True) if run % 2 == 0 else (True, False):
                rows[now].append(_one(git_dir, now))
        name = os.path.basename(os.path.dirname(git_dir.rstrip("/"))) or git_dir
        cells = []
        for i, label in ((0, "wall"), (1, "cpu")):
            before = statistics.median(r[i] for r in rows[False])
            now = statistics.median(r[i] for r in rows[True])
            pairs = zip(rows[False], rows[True], strict=True)
            paired = statistics.median(b[i] / a[i] for a, b in pairs)
            cells.append(f"{label} {before:.3f} -> {now:.3f} s ({paired:.2f}x)")
        print(
            f"{name}: {rows[False][0][2]:,} -> {rows[True][0][2]:,} bytes; "
            + "; ".join(cells)
            + f"; {rows[True][0][3]} template lines"
        )


if __name__ == "__main__":
    main()
