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
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def environment(code: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"], env[f"GIT_{who}_EMAIL"] = "Bench", "bench@example.com"
    return env


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


def timed_rank(code: Path, repo: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = hydrate(code, repo, "rank", "bd-1")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--named", default="100,1000")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    print(f"{'named':>7} {'arm':>10} {'cpu s':>8} {'wall s':>8} {'cpu ratio':>10}")
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
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
            for round_ in range(opts.runs):
                order = list(arms) if round_ % 2 == 0 else list(reversed(arms))
                for name in order:
                    times[name].append(timed_rank(arms[name], repos[name]))
            medians = {
                name: (statistics.median(c for c, _ in got), statistics.median(w for _, w in got))
                for name, got in times.items()
            }
            for name, (cpu, wall) in medians.items():
                ratio = f"{cpu / medians['reference'][0]:.2f}x" if "reference" in medians else ""
                print(f"{named:>7} {name:>10} {cpu:>8.3f} {wall:>8.3f} {ratio:>10}")


if __name__ == "__main__":
    main()
