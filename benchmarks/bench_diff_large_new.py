"""``add-diff --worktree`` beside one large intent-to-add file, paired against a reference.

Usage::

    python benchmarks/bench_diff_large_new.py --reference DIR [--mib 300] [--runs 3]

A repository of one committed file, edited, and a new text file of ``--mib`` MiB
made part of the diff with ``git add -N``. Each run is one whole ``git hydrate
add-diff T-1 --worktree`` process of this code and of ``DIR`` (a ``git archive`` of
another commit), alternating; the file is over ``hydrate.maxFileBytes`` (256 KiB),
so it is skipped either way (``too_large``, or ``binary`` past git's
``core.bigFileThreshold`` of 512 MiB): what differs is whether git is asked for
its patch text first. Printed: each arm's median CPU (with git's) and wall.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

from paired import alternate, environment, header, rows, timed

HERE = Path(__file__).resolve().parent.parent


def _repository(root: Path, mib: int) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q")
    (root / "app.py").write_text("a = 1\n")
    git("add", "app.py")
    git("-c", "user.name=B", "-c", "user.email=b@example.com", "commit", "-q", "-m", "base")
    (root / "app.py").write_text("a = 2\n")
    line = b"x" * 79 + b"\n"
    with open(root / "data.txt", "wb") as out:
        for _ in range(mib * 1024 * 1024 // len(line) // 1024):
            out.write(line * 1024)
    git("add", "-N", "data.txt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=Path, required=True)
    parser.add_argument("--mib", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    options = parser.parse_args()
    codes = {"this": HERE, "reference": options.reference.resolve()}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _repository(root, options.mib)
        timed(HERE, root, ["task-add", "T-1", "--objective", "o", "--acceptance", "a"])

        def measure(arm: str, _round: int) -> tuple[float, float]:
            code = codes[arm]
            return timed(
                code, root, ["add-diff", "T-1", "--worktree", "-q"], env=environment(code)
            )

        times = alternate(list(codes), options.runs, measure)
    header("MiB", 6)
    rows(options.mib, 6, times)


if __name__ == "__main__":
    main()
