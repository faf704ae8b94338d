"""Paired cost of ``git_hydrate._speedups.split_words`` for two builds of git-hydrate,
over every distinct raw token of a repository's HEAD.

Each run is a fresh process that imports one version's ``git_hydrate`` (``--code``:
a checkout or a ``git archive`` of it, with its ``_speedups`` built in place), finds
the distinct raw tokens of the HEAD's blobs (ASCII, as the blobs' tokeniser gives
them) and splits them all ``--passes`` times, CPU beside wall; the two versions
alternate, run after run.

Usage::

    python benchmarks/bench_split_words.py --code /tmp/main-copy --code /tmp/this-copy \
        --repo /work/.mirror/python+mypy/repo --runs 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from git_hydrate import _speedups
from git_hydrate.hydrate import terms
assert _speedups.__file__.startswith(sys.argv[1]), _speedups.__file__
repo, passes = sys.argv[2], int(sys.argv[3])
listing = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "HEAD"],
                         capture_output=True, check=True).stdout.decode()
oids = [line.split()[2] for line in listing.splitlines() if line.split()[1] == "blob"]
out = subprocess.run(["git", "--git-dir", repo, "cat-file", "--batch"],
                     input="\n".join(oids).encode() + b"\n", capture_output=True).stdout
tokens, at = set(), 0
while at < len(out):
    head_end = out.index(b"\n", at)
    size = int(out[at:head_end].split()[2])
    data = out[head_end + 1 : head_end + 1 + size]
    if b"\0" not in data[:8192]:
        tokens.update(_speedups.raw_counts(data))
    at = head_end + 2 + size
tokens = sorted(tokens)
split, stop = _speedups.split_words, terms._STOP
wall, cpu = time.perf_counter(), time.process_time()
for _ in range(passes):
    for raw in tokens:
        split(raw, stop)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "tokens": len(tokens)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", required=True, help="twice: A, then B")
    parser.add_argument("--repo", required=True, help="a git directory")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--passes", type=int, default=5, help="splits of each token a run")
    args = parser.parse_args()
    samples: dict[str, list[dict[str, float]]] = {code: [] for code in args.code}
    for _ in range(args.runs):
        for code in args.code:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, code, args.repo, str(args.passes)],
                capture_output=True,
                check=True,
            )
            samples[code].append(json.loads(done.stdout))
    first = samples[args.code[0]]
    for code, runs in samples.items():
        cpu = [run["cpu"] for run in runs]
        wall = [run["wall"] for run in runs]
        paired = statistics.median(b["cpu"] / a["cpu"] for a, b in zip(first, runs, strict=True))
        print(
            f"{code}: {runs[0]['tokens']} tokens x {args.passes},"
            f" CPU median {statistics.median(cpu):.3f} s"
            f" (best {min(cpu):.3f}), wall median {statistics.median(wall):.3f} s,"
            f" CPU paired {paired:.3f}x"
        )


if __name__ == "__main__":
    main()
