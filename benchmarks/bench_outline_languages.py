"""What outlining the languages of the third set costs a prompt, and what it keeps.

Usage::

    python benchmarks/bench_outline_languages.py --reference DIR [--runs 5]
        [--repos http-jl,lwt,cowboy,plug] [--max-bytes 65536]

For each repository (``relevance.REPOS``, cloned from ``/work/.mirror`` at its
pinned commit into a temporary directory), a task names its largest file in one
of the languages outlined since the third set (PHP, Swift, Scala, Lua, shell,
Julia, OCaml, Haskell, Elixir, Erlang) in play; ``add-tree`` attaches the tree
once (this code, not timed), then each run is one whole ``git hydrate prompt
--no-cache`` process, alternating with ``--reference`` (a checkout or ``git
archive`` of another commit). Printed per repository: each arm's summary line
(kept as outline, or left out) and the medians of CPU (user + system, with git
children) and wall, with the ratio of CPU to the reference's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from paired import Timing, alternate, environment, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent
NEW = {
    ".php",
    ".swift",
    ".scala",
    ".lua",
    ".sh",
    ".jl",
    ".ml",
    ".mli",
    ".hs",
    ".ex",
    ".exs",
    ".erl",
}


def largest(clone: Path) -> str:
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-l", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout
    sized = []
    for row in listing.splitlines():
        meta, path = row.split("\t", 1)
        if os.path.splitext(path)[1] in NEW and "test" not in path:
            sized.append((int(meta.split()[3]), path))
    return max(sized)[1]


def prepare(name: str, work: Path) -> tuple[Path, str]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import relevance

    clone = work / name
    subprocess.run(
        ["git", "clone", "-q", relevance.locate(name, Path("/work/.mirror")), str(clone)],
        check=True,
    )
    tip = relevance.REPOS[name][1] or "HEAD"
    subprocess.run(["git", "checkout", "-q", tip], cwd=clone, check=True)
    path = largest(clone)
    env = environment(ROOT)
    args = ["task-add", "T-1", "--objective", f"Change {path}", "--acceptance", "tests pass"]
    subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args, "--file-in-play", path],
        cwd=clone,
        env=env,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [sys.executable, "-m", "git_hydrate", "add-tree", "T-1"],
        cwd=clone,
        env=env,
        check=True,
        capture_output=True,
    )
    return clone, path


def summary(code: Path, clone: Path, max_bytes: int) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "git_hydrate", *_args(max_bytes)],
        cwd=clone,
        env=environment(code),
        capture_output=True,
        text=True,
    )
    return done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "(nothing said)"


def _args(max_bytes: int) -> list[str]:
    return ["prompt", "T-1", "--max-bytes", str(max_bytes), "--no-cache", "-o", os.devnull]


def _prompt(arms: dict[str, Path], clone: Path, max_bytes: int, arm: str, _round: int) -> Timing:
    return timed(arms[arm], clone, _args(max_bytes), env=environment(arms[arm]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repos", default="http-jl,lwt,cowboy,plug")
    parser.add_argument("--max-bytes", type=int, default=65536)
    opts = parser.parse_args()
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    with tempfile.TemporaryDirectory() as tmp:
        for name in opts.repos.split(","):
            clone, path = prepare(name, Path(tmp))
            print(f"{name}: {path} in play")
            for arm, code in arms.items():
                print(f"  {arm}: {summary(code, clone, opts.max_bytes)}")
            header("repository", 12)
            measure = partial(_prompt, arms, clone, opts.max_bytes)
            rows(name, 12, alternate(list(arms), opts.runs, measure))


if __name__ == "__main__":
    main()
