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
own vocabulary, alternating the arms; printed per size: medians of CPU (user +
system, the process and its git children) and wall, and the CPU ratio.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

from paired import Timing, alternate, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent


def vocabulary(repo: Path) -> list[str]:
    """Words of the repository's first files, in a fixed order."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.split()
    words: dict[str, None] = {}
    for name in listed[:200]:
        text = (repo / name).read_text(errors="replace")
        words.update(dict.fromkeys(w for w in text.replace("(", " ").split() if w.isidentifier()))
    found = sorted(words)
    random.Random(7).shuffle(found)
    return found


def run(code: Path, repo: Path, task: str, ticket: str) -> Timing:
    """CPU and wall seconds of the ``add-tree --prompt`` of a new task (its ``task-add``
    not timed)."""
    add = ["task-add", task, "--objective", ticket, "--acceptance", "ok"]
    timed(code, repo, add)
    return timed(code, repo, ["add-tree", task, "--prompt", "--max-bytes", "64k", "-q"])


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
    words = vocabulary(repos["this"][1])
    stamp = int(time.time())
    header("words", 6)
    for count in (int(n) for n in opts.words.split(",")):
        ticket = " ".join(words[:count])

        def measure(name: str, round_: int, count: int = count, ticket: str = ticket) -> Timing:
            code, repo = repos[name]
            return run(code, repo, f"LT-{stamp}-{count}-{round_}", ticket)

        rows(count, 6, alternate(list(repos), opts.runs, measure))


if __name__ == "__main__":
    main()
