"""The secret scan stays linear on the texts its rules once backtracked on.

    python benchmarks/secrets_linear.py [--runs 5] [--limit 20]

The tests pin what ``scan`` finds on these texts (``ONCE_QUADRATIC`` and
``KEY_WORD_LINES`` of ``tests/test_secrets.py``, ``HOSTILE_LINES`` of
``tests/test_secret_corpus.py``); how long it takes is measured here, not
asserted there. Each text is scanned in a fresh process, paired with a benign
text of the same length (``"x = 1\\n"`` repeated) scanned in another, the pair's
order alternating by round; printed per text: the medians of CPU seconds (user +
system) and wall, and the median of the paired CPU ratio hostile / benign. A rule
that backtracks quadratically takes seconds to minutes on these (ratios in the
hundreds); a ratio above ``--limit`` is marked and the exit status is 1.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_secret_corpus import HOSTILE_LINES  # noqa: E402
from tests.test_secrets import KEY_WORD_LINES, ONCE_QUADRATIC  # noqa: E402

SCAN = "import sys\nfrom git_hydrate.secrets import scan\nscan(open(sys.argv[1]).read())\n"


def timed(path: str) -> tuple[float, float]:
    """CPU and wall seconds of a process scanning the text in ``path``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", SCAN, path], check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--limit", type=float, default=20.0)
    options = parser.parse_args()
    texts = [*ONCE_QUADRATIC, *KEY_WORD_LINES, *HOSTILE_LINES]
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        for n, text in enumerate(texts):
            hostile, benign = Path(scratch, f"h{n}"), Path(scratch, f"b{n}")
            hostile.write_text(text)
            benign.write_text(("x = 1\n" * (len(text) // 6 + 1))[: len(text)])
            cpu: dict[str, list[float]] = {"h": [], "b": []}
            wall: dict[str, list[float]] = {"h": [], "b": []}
            ratios = []
            for run in range(options.runs):
                order = [("h", hostile), ("b", benign)][:: 1 if run % 2 else -1]
                for key, path in order:
                    seconds, elapsed = timed(str(path))
                    cpu[key].append(seconds)
                    wall[key].append(elapsed)
                ratios.append(cpu["h"][-1] / max(cpu["b"][-1], 1e-3))
            ratio = statistics.median(ratios)
            worst = max(worst, ratio)
            mark = "  <-- backtracks?" if ratio > options.limit else ""
            print(
                f"{text[:24]!r:30} {len(text):>8,} chars  CPU {statistics.median(cpu['h']):.3f} s"
                f" (benign {statistics.median(cpu['b']):.3f} s)  wall"
                f" {statistics.median(wall['h']):.3f} s  ratio {ratio:.2f}x{mark}"
            )
    print(f"worst paired CPU ratio: {worst:.2f}x (limit {options.limit:g}x)")
    sys.exit(1 if worst > options.limit else 0)


if __name__ == "__main__":
    main()
