"""A blob an attacker writes for ``git_hydrate._speedups``' token table when the hash
seed is known (``PYTHONHASHSEED=0``), counted by two builds of git-hydrate.

The blob holds ``--tokens`` distinct tokens whose hashes share their low ``--bits``
bits, each ``--repeats`` times (found once by trying ``t0``, ``t1``... and kept in
``--cache``); beside it, as many ordinary tokens as often. Each run is a fresh
process that imports one version's ``git_hydrate`` (``--code``: a checkout or a
``git archive`` of it, with its ``_speedups`` built in place) and times
``raw_counts`` of both blobs, CPU beside wall, best of three; the two versions
alternate, run after run. A table probed linearly queues such tokens in one run
of slots (CPU quadratic in their number); a dict's probe does not.

Usage::

    python benchmarks/bench_speedups_flood.py --code /tmp/main-copy --code /tmp/this-copy \
        --bits 14 --tokens 4000 --repeats 100 --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_FIND = r"""
import sys
bits, want = int(sys.argv[1]), int(sys.argv[2])
mask, found, n = (1 << bits) - 1, [], 0
while len(found) < want:
    token = b"t%x" % n
    if hash(token) & mask == 0:
        found.append(token)
    n += 1
sys.stdout.buffer.write(b" ".join(found))
"""

_CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from git_hydrate import _speedups
assert _speedups.__file__.startswith(sys.argv[1]), _speedups.__file__
colliding = open(sys.argv[2], "rb").read().split()
repeats = int(sys.argv[3])
plain = [b"t%x" % n for n in range(len(colliding))]
answer = {}
for name, tokens in (("colliding", colliding), ("plain", plain)):
    data = b" ".join(tokens * repeats)
    best = (1e9, 1e9)
    for _ in range(3):
        wall, cpu = time.perf_counter(), time.process_time()
        _speedups.raw_counts(data)
        best = min(best, (time.process_time() - cpu, time.perf_counter() - wall))
    answer[name] = {"cpu": best[0], "wall": best[1], "bytes": len(data)}
print(json.dumps(answer))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", required=True, help="twice: A, then B")
    parser.add_argument("--bits", type=int, default=14)
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", default="/tmp/bench_speedups_flood.tokens")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    cache = f"{args.cache}.{args.bits}.{args.tokens}"
    if not os.path.exists(cache):
        found = subprocess.run(
            [sys.executable, "-c", _FIND, str(args.bits), str(args.tokens)],
            env=env,
            capture_output=True,
            check=True,
        ).stdout
        with open(cache, "wb") as out:
            out.write(found)
    for _ in range(args.runs):
        for code in args.code:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD, code, cache, str(args.repeats)],
                env=env,
                capture_output=True,
                check=True,
            )
            answer = json.loads(done.stdout)
            print(
                f"{code}: "
                + ", ".join(
                    f"{name} {run['bytes']} bytes {run['cpu']:.4f} s CPU {run['wall']:.4f} s wall"
                    for name, run in answer.items()
                )
            )


if __name__ == "__main__":
    main()
