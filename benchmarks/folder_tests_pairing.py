"""Should a test only its folder names (``tests/json.rs``, ``__tests__/button.js``) pair
with the module of its stem, as a test named ``test_x``/``x.test.js`` does?

    python benchmarks/folder_tests_pairing.py [--mirror /work/.mirror] OWNER+NAME...

For each of a repository's last 3,000 first-parent commits that change 2-8 files, and
each test among them, the files test pairing would lift if a task named that test: by
its name (``pairing.paired``, what ranking does), or, for a test only its folder calls
one, by its stem (the module of the same name and extension, no file under a test
folder). Precision: the share of lifted files the same commit changed. The repository's
files are those of its HEAD (an approximation: files come and go).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from git_hydrate.hydrate.pairing import _fold, _stem, paired
from git_hydrate.hydrate.testpaths import is_test_path, tested_module


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "-c", "core.quotePath=false", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def measure(git_dir: Path) -> dict[str, list[int]]:
    files = _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    modules: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in files:
        stem = _stem(path)
        if stem is not None and not is_test_path(path):
            modules[(_fold(stem[0]), stem[1])].append(path)
    log = _git(git_dir, "log", "--first-parent", "--no-merges", "-n", "3000",
               "--name-only", "--format=tformat:@@")  # fmt: skip
    counts = {"by name": [0, 0, 0], "by folder": [0, 0, 0]}  # tests, lifted, changed
    for block in log.split("@@")[1:]:
        changed = {p for p in block.splitlines() if p}
        if not 2 <= len(changed) <= 8:
            continue
        for test in sorted(changed):
            if tested_module(test) is not None:
                kind, lifted = "by name", set(paired(files, [test]))
            elif is_test_path(test) and (stem := _stem(test)) is not None:
                kind, lifted = "by folder", set(modules.get((_fold(stem[0]), stem[1]), []))
            else:
                continue
            counts[kind][0] += 1
            counts[kind][1] += len(lifted)
            counts[kind][2] += len(lifted & changed)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("repos", nargs="+")
    args = parser.parse_args()
    total = {"by name": [0, 0, 0], "by folder": [0, 0, 0]}
    for name in args.repos:
        counts = measure(args.mirror / name / "repo")
        parts = []
        for kind, (tests, lifted, right) in counts.items():
            for i, n in enumerate((tests, lifted, right)):
                total[kind][i] += n
            parts.append(f"{kind}: {tests} tests, {lifted} lifted, {right} changed")
        print(f"{name}: " + "; ".join(parts), flush=True)
    for kind, (tests, lifted, right) in total.items():
        share = right / lifted if lifted else 0.0
        print(f"all, {kind}: {tests} tests, {lifted} lifted, {right} changed ({share:.1%})")


if __name__ == "__main__":
    main()
