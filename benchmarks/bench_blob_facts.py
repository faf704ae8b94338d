"""Paired cost of ``blob_facts`` (a blob's words and defined names) for two versions
of git-hydrate, over every blob of a repository's HEAD.

Each run is a fresh process that imports one version's ``git_hydrate`` (``--code``:
a checkout or a ``git archive`` of it), reads the blobs once from ``git cat-file
--batch`` and times ``blob_facts`` over all of them, CPU beside wall; the two
versions alternate, run after run. It also prints how many names each version finds.

Usage::

    python benchmarks/bench_blob_facts.py --code /tmp/main-copy --code . \
        --repo /work/.mirror/vitejs+vite/repo --runs 7
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
from git_hydrate.hydrate.terms import blob_facts
repo = sys.argv[2]
listing = subprocess.run(["git", "--git-dir", repo, "ls-tree", "-r", "HEAD"],
                         capture_output=True, check=True).stdout.decode()
oids = [line.split()[2] for line in listing.splitlines() if line.split()[1] == "blob"]
out = subprocess.run(["git", "--git-dir", repo, "cat-file", "--batch"],
                     input="\n".join(oids).encode() + b"\n", capture_output=True).stdout
blobs, at = [], 0
while at < len(out):
    head_end = out.index(b"\n", at)
    size = int(out[at:head_end].split()[2])
    blobs.append(out[head_end + 1 : head_end + 1 + size])
    at = head_end + 2 + size
wall, cpu = time.perf_counter(), time.process_time()
names = sum(len(blob_facts(data).symbols) for data in blobs)
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "blobs": len(blobs), "bytes": sum(map(len, blobs)), "names": names}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", required=True, help="twice: A, then B")
    parser.add_argument("--repo", required=True, help="a git directory")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    samples: dict[str, list[dict[str, float]]] = {code: [] for code in args.code}
    for _ in range(args.runs):
        for code in args.code:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, code, args.repo], capture_output=True, check=True
            )
            samples[code].append(json.loads(done.stdout))
    first = samples[args.code[0]]
    for code, runs in samples.items():
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        ratio = statistics.median(r["cpu"] / f["cpu"] for r, f in zip(runs, first, strict=True))
        print(
            f"{code}: {runs[0]['blobs']} blobs, {runs[0]['bytes']:,} bytes, "
            f"{runs[0]['names']:,} names; wall {wall:.3f} s, CPU {cpu:.3f} s "
            f"(paired CPU {ratio:.3f}x the first)"
        )


if __name__ == "__main__":
    main()
