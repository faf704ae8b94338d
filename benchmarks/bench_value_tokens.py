"""What weighing large files in tokens costs ``prompt --max-tokens`` on a real repository.

Usage::

    python benchmarks/bench_value_tokens.py --repo DIR [--objective TEXT] [--title TEXT]
        [--max-tokens 8k] [--max-bytes N] [--file-in-play PATH ...] [--runs 5]
        [--reference DIR]

``--repo`` is a clone of a real repository (e.g. nushell, 2,456 files). It is
copied once per arm; in the copy, a task ``VT-1`` with ``--objective`` (and ``--title``) gets
``add-tree`` (not timed). Each run is one whole ``git hydrate prompt VT-1
--max-tokens N --no-cache`` process, with no byte budget: *cold* with the
token-count cache removed before it (every body counted again), *warm* with
the counts of the runs before. With ``--reference`` (a checkout or ``git
archive`` of another commit) the same runs alternate with that code's; printed:
what each arm's prompt holds (its sections, whole or outlined, and its tokens),
then per kind of run the medians of CPU (user + system, the process and its git
children) and wall, and their ratio to the reference. ``--file-in-play`` (repeated)
names files in play (the named files' reserve is then weighed); ``--max-bytes`` adds a
byte budget (``--max-tokens 0``: a byte budget alone).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

from paired import Timing, alternate, environment, header, rows, timed

ROOT = Path(__file__).resolve().parent.parent
OBJECTIVE = (
    "Startup: the --log-level flag and logger setup in main should accept trace and "
    "write to a log file"
)


def hydrate(code: Path, repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=repo,
        env=environment(code),
        check=True,
        capture_output=True,
        text=True,
    )


def forget_counts(repo: Path) -> None:
    for cache in (repo / ".git" / "hydrate").glob("token-counts-*"):
        cache.unlink()


def _prompt(
    arms: dict[str, Path], repos: dict[str, Path], max_tokens: str, cold: bool, name: str, _: int
) -> Timing:
    if cold:
        forget_counts(repos[name])
    args = ["prompt", "VT-1", *budget(max_tokens), "--no-cache"]
    return timed(arms[name], repos[name], args, env=environment(arms[name]))


#: ``--max-bytes N``, when given (a global: the command line sets it once).
MAX_BYTES: list[str] = []


def budget(max_tokens: str) -> list[str]:
    """The budget options of each prompt run."""
    return [*(["--max-tokens", max_tokens] if max_tokens != "0" else []), *MAX_BYTES]


def describe(code: Path, repo: Path, max_tokens: str) -> None:
    """What the arm's prompt holds, and its summary line."""
    out = hydrate(code, repo, "prompt", "VT-1", *budget(max_tokens), "--no-cache", "-v")
    sections = re.findall(r"^### (Context from|Outline of) (\S+)", out.stdout, re.M)
    for kind, source in sections:
        print(f"    {'whole  ' if kind == 'Context from' else 'outline'} {source}")
    print("   ", out.stderr.splitlines()[0])
    for line in out.stderr.splitlines():
        if "value per byte" in line:
            print("   ", line.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--objective", default=OBJECTIVE)
    parser.add_argument("--title", help="the task's title (its words rank files too)")
    parser.add_argument("--max-tokens", default="8k")
    parser.add_argument("--max-bytes")
    parser.add_argument("--file-in-play", action="append", default=[])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference", type=Path, help="another commit's code, alternated")
    opts = parser.parse_args()
    MAX_BYTES[:] = ["--max-bytes", opts.max_bytes] if opts.max_bytes else []
    in_play = [arg for path in opts.file_in_play for arg in ("--file-in-play", path)]
    in_play += ["--title", opts.title] if opts.title else []
    arms = {"this": ROOT} | ({"reference": opts.reference} if opts.reference else {})
    with tempfile.TemporaryDirectory() as tmp:
        repos = {}
        for name, code in arms.items():
            repos[name] = Path(tmp) / name
            subprocess.run(["git", "clone", "-q", str(opts.repo), str(repos[name])], check=True)
            hydrate(code, repos[name], "task-add", "VT-1", "--objective", opts.objective,
                    "--acceptance", "tests pass", *in_play)  # fmt: skip
            hydrate(code, repos[name], "add-tree", "VT-1")
            print(f"{name}:")
            describe(code, repos[name], opts.max_tokens)
        header("run", 5)
        for cold in (True, False):
            measure = partial(_prompt, arms, repos, opts.max_tokens, cold)
            rows("cold" if cold else "warm", 5, alternate(list(arms), opts.runs, measure))
        for repo in repos.values():
            shutil.rmtree(repo, ignore_errors=True)


if __name__ == "__main__":
    main()
