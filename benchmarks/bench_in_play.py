"""What ranking costs when a task names many files: files in play, tests, mentions.

Usage::

    python benchmarks/bench_in_play.py [--files 3000] [--named 100,1000] [--runs 3]
        [--reference DIR]

A repository of ``--files`` small Python files (``src/pkgN/modM.py``, a hundred a
folder) and, per size K of ``--named``, a task imported from one beads issue
whose description names K files of it and K tests (``tests/test_modJ.py``, not
there): K files in play, K named tests, 2K mentions. The task's tree is attached
once (``add-tree``, not timed), then each run is one whole ``git hydrate rank``
process. Ranking compared each file with each file in play (the directory
signal) and each mention (the files the text names): 1,000 of each at 3,000
files took 12 s. With ``--reference`` (a checkout or ``git archive`` of another
commit) the same runs alternate with that code's; printed per size: the medians
of CPU (user + system, the process and its git children) and wall, and their
ratio to the reference.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from paired import Timing, alternate, environment, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent


def hydrate(code: Path, repo: Path, *args: str, stdin: bytes | None = None) -> float:
    """Wall seconds of one whole process (CPU: read around it by the caller)."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=repo,
        env=environment(code),
        input=stdin,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def make_repo(repo: Path, files: int) -> None:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for i in range(files):
        folder = repo / "src" / f"pkg{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(f"def f{i}():\n    return {i}\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    env = environment(ROOT)
    subprocess.run(["git", "commit", "-qm", "files"], cwd=repo, env=env, check=True)


def issue(files: int, named: int) -> bytes:
    """One beads issue naming ``named`` files of the repository and as many tests."""
    lines = "".join(
        f"see src/pkg{(j * 7 % files) // 100}/mod{j * 7 % files}.py and tests/test_mod{j}.py\n"
        for j in range(named)
    )
    return (
        json.dumps({"id": "bd-1", "title": "many files", "description": lines}) + "\n"
    ).encode()


def _rank(arms: dict[str, Path], repos: dict[str, Path], name: str, _round: int) -> Timing:
    """One whole ``git hydrate rank`` of the arm ``name`` on its own copy."""
    return timed(arms[name], repos[name], ["rank", "bd-1"], env=environment(arms[name]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--named", default="100,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    header("named", 7)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        make_repo(base, opts.files)
        for named in (int(n) for n in opts.named.split(",")):
            repos = {}
            for name, code in arms.items():  # (each arm ranks its own copy)
                repos[name] = Path(tmp) / f"{name}-{named}"
                shutil.copytree(base, repos[name], symlinks=True)
                hydrate(code, repos[name], "import", "-q", "--from", "beads",
                        stdin=issue(opts.files, named))  # fmt: skip
                hydrate(code, repos[name], "add-tree", "bd-1")
            rows(named, 7, alternate(list(arms), opts.runs, partial(_rank, arms, repos)))


if __name__ == "__main__":
    main()
