"""A new task whose ticket has hundreds of distinct words, on a hydrated repository.

Usage::

    python benchmarks/bench_long_ticket.py [--keep /tmp/bench-scale] [--size 30000]
        [--words 30,300] [--runs 3] [--reference DIR]

``bench_scale.py``'s "new task" asks with a short ticket; an imported issue with a
long body and a stack trace asks with hundreds of words, and ranking's costs grow
with them (each asked word's postings, the files defining a name the ticket
spells). This runs ``add-tree T --prompt --max-bytes 64k`` for a new task on the
repository ``bench_scale.py --keep DIR`` left hydrated (``DIR/repo-N``; with
``--reference``, that code on ``DIR/repo-N-ref``, the copy bench_scale keeps for
it: two codes' caches would clash), the ticket N words drawn from the repository's
own vocabulary (over 60 kB: imported as a GitHub issue, an argument being at most
128 KiB, with 64 KiB of budget beside it), alternating the arms; printed per
size: medians of CPU (user +
system, the process and its git children) and wall, the CPU ratio, and the median
peak resident set of the ``add-tree`` process (its largest, git's children included).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from paired import Timing, alternate, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent
#: Each arm's peak resident sets (MiB) of the sizes run, in order.
PEAKS: dict[str, list[float]] = {}


def vocabulary(repo: Path, count: int) -> list[str]:
    """At least ``count`` words of the repository's files (as many as they hold), in a
    fixed order: the words of its first 200 files shuffled, then those the next 200
    add, shuffled, and so on (a short ticket's words are the same however long the
    longest asked)."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.split()
    seen: set[str] = set()
    found: list[str] = []
    for start in range(0, len(listed), 200):
        if len(found) >= count:
            break
        words: dict[str, None] = {}
        for name in listed[start : start + 200]:
            text = (repo / name).read_text(errors="replace")
            words.update(
                dict.fromkeys(w for w in text.replace("(", " ").split() if w.isidentifier())
            )
        batch = sorted(words.keys() - seen)
        random.Random(7 + start).shuffle(batch)
        seen.update(batch)
        found += batch
    return found


def run(code: Path, repo: Path, task: str, ticket: str) -> Timing:
    """CPU and wall seconds of the ``add-tree --prompt`` of a new task (its ``task-add``
    not timed)."""
    if len(ticket) < 60_000:
        timed(code, repo, ["task-add", task, "--objective", ticket, "--acceptance", "ok"])
    else:  # (an argument holds at most 128 KiB: a longer ticket is an imported issue)
        issue = [{"number": 1, "title": "A long ticket", "body": ticket, "state": "OPEN"}]
        importing = ["import", "--from", "github", "--prefix", f"{task}-", "-q"]
        timed(code, repo, importing, stdin=json.dumps(issue).encode())
        task = f"{task}-1"
    # (the prompt holds the ticket whole: 64 KiB beside it)
    budget = "64k" if len(ticket) < 60_000 else f"{len(ticket) // 1024 + 64}k"
    args = ["add-tree", task, "--prompt", "--max-bytes", budget, "-q"]
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status:
        sys.exit(f"add-tree failed in {repo} ({status})")
    PEAKS.setdefault(str(code), []).append(usage.ru_maxrss / 1024)
    return usage.ru_utime + usage.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, default=Path("/tmp/bench-scale"))
    parser.add_argument("--size", type=int, default=30000)
    parser.add_argument("--words", default="30,300")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    repos = {"this": (ROOT, opts.keep / f"repo-{opts.size}")}
    if opts.reference:
        repos["reference"] = (opts.reference, opts.keep / f"repo-{opts.size}-ref")
    for _name, (_code, repo) in repos.items():
        if not repo.is_dir():
            sys.exit(f"no {repo}: run bench_scale.py --sizes {opts.size} --keep {opts.keep}")
    sizes = [int(n) for n in opts.words.split(",")]
    words = vocabulary(repos["this"][1], max(sizes))
    stamp = int(time.time())
    header("words", 6)
    for count in sizes:
        ticket = " ".join(words[:count])

        def measure(name: str, round_: int, count: int = count, ticket: str = ticket) -> Timing:
            code, repo = repos[name]
            return run(code, repo, f"LT-{stamp}-{count}-{round_}", ticket)

        PEAKS.clear()
        rows(count, 6, alternate(list(repos), opts.runs, measure))
        for name, (code, _repo) in repos.items():
            print(f"{count:>6} {name:>10} peak {statistics.median(PEAKS[str(code)]):.1f} MiB")


if __name__ == "__main__":
    main()
