"""add-tree in a blobless partial clone: the blobs it takes, fetched lazily or at once.

Usage::

    python benchmarks/bench_partial_clone.py [--files 300] [--runs 3] [--reference DIR]

Builds an origin of ``--files`` small Python files (``uploadpack.allowFilter``),
then per run makes a fresh ``git clone --filter=blob:none --no-checkout`` of it
(not timed; the clone lacks every blob) and times ``add-tree T`` of a new task
(its ``task-add`` not timed), alternating this code and ``--reference``'s; printed:
medians of CPU (user + system, the process and its git children) and wall, and the
CPU ratio. (Count the fetches with ``GIT_TRACE2_EVENT``: git's housekeeping repacks
the lazy fetches' packs, so the ``*.promisor`` files left do not tell.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from paired import Timing, alternate, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_origin(where: Path, files: int) -> Path:
    origin = where / "origin"
    git(where, "init", "-q", "-b", "main", str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    for n in range(files):
        path = origin / f"pkg{n // 100}" / f"mod{n % 100}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"def fn_{n}(x):\n    '''parser helper {n}'''\n    return x + {n}\n" * 5)
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "files")
    return origin


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path)
    opts = parser.parse_args()
    arms = {"this": ROOT, **({"reference": opts.reference} if opts.reference else {})}
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(scratch)
        origin = make_origin(where, opts.files)

        def measure(arm: str, round_: int) -> Timing:
            clone = where / f"{arm}-{round_}"
            git(where, "clone", "-q", "--filter=blob:none", "--no-checkout",
                f"file://{origin}", clone.name)  # fmt: skip
            for name, value in (("user.name", "b"), ("user.email", "b@b")):
                git(clone, "config", name, value)
            timed(arms[arm], clone, ["task-add", "T-1", "--objective", "o", "--acceptance", "a"])
            return timed(arms[arm], clone, ["add-tree", "T-1", "-q"])

        times = alternate(list(arms), opts.runs, measure)
    header("files", 6)
    rows(opts.files, 6, times)
    return 0


if __name__ == "__main__":
    sys.exit(main())
