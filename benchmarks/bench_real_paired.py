"""Paired, alternating whole-process timings of git-hydrate on a real checkout.

Usage::

    python benchmarks/bench_real_paired.py --repo CHECKOUT [--runs 5]
        [--files-to-prompt PATH] [--json OUT]

Each round runs every command once, in a rotated order, so the ratios compare
commands measured under the same load (the host is shared). Every command is a
whole process; its wall time, CPU seconds (user + system of the process and its
children) and peak RSS (``ru_maxrss`` of the direct child, from ``wait4``) are
recorded, and medians of wall and CPU are printed with the ratios of the goals:

* cold one pass (``task-add`` + ``add-tree --prompt``, no sha256 cache) against
  ``files-to-prompt .`` (default) and ``files-to-prompt . --ignore-gitignore``;
* warm ``prompt ID --refresh`` (unchanged tree, prompt cache hit) against both;
* a prompt-cache hit against ``cat`` of the same bytes plus interpreter start-up;
* ``prompt --no-cache`` peak RSS against its output size plus the import floor
  (peak RSS of ``python -m git_hydrate prompt --help``).

The checkout is used in place: tasks ``PR<pid>-*`` are created in it. Peak RSS is
the median over rounds (the maximum in brackets): on a large prompt a cold pass's
new prompt-cache entry can evict the cached one, so one "cache hit" round misses.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIG = "1000000000"
LIMITS = ("--max-total-bytes", BIG, "--max-file-bytes", BIG)
# every regular tracked file read once; submodules (160000) and symlinks (120000)
# are left out, as add-tree leaves them out (`cat` fails on a directory)
CAT_FLOOR = "git ls-files -z --stage | grep -zEv '^(160000|120000) ' | cut -z -f2 | xargs -0 cat"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        e.pop(key, None)
    e.setdefault("GIT_AUTHOR_NAME", "Bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    e.setdefault("GIT_COMMITTER_NAME", "Bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    return e


ENV = env()
PY = sys.executable


def run(cmd: list[str] | str, cwd: Path, out: str = os.devnull) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (process + its children) and peak RSS in KiB."""
    with open(out, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=ENV,
            stdout=sink,
            stderr=subprocess.DEVNULL,
            shell=isinstance(cmd, str),
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"failed ({proc.returncode}): {cmd}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def hyd(*args: str) -> list[str]:
    return [PY, "-m", "git_hydrate", *args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--files-to-prompt", default="files-to-prompt")
    parser.add_argument("--json", help="write every sample here")
    args = parser.parse_args()
    repo = Path(args.repo).resolve()
    ftp = args.files_to_prompt
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "git_hydrate")], check=True, env=ENV)
    subprocess.run(["git", "config", "gc.auto", "0"], cwd=repo, check=True)
    cache = repo / ".git" / "hydrate" / "sha256-cache"
    tag = f"PR{os.getpid()}"
    counter = iter(range(1_000_000))

    # task R: attached once, its prompt cached; the file of its bytes for `cat`
    run(hyd("task-add", f"{tag}-R", "--objective", "bench", "--acceptance", "fast"), repo)
    run(hyd("add-tree", f"{tag}-R", *LIMITS), repo)
    prompt_file = Path(f"/tmp/{tag}.prompt")
    atexit.register(prompt_file.unlink, missing_ok=True)  # also when a command fails
    run(hyd("prompt", f"{tag}-R", "--max-bytes", BIG), repo, str(prompt_file))
    out_bytes = prompt_file.stat().st_size

    def cold() -> tuple[float, float, int]:
        if cache.exists():
            cache.unlink()
        task = f"{tag}-C{next(counter)}"
        a = run(hyd("task-add", task, "--objective", "bench", "--acceptance", "fast"), repo)
        b = run(hyd("add-tree", task, *LIMITS, "--prompt", "--max-bytes", BIG), repo)
        return a[0] + b[0], a[1] + b[1], max(a[2], b[2])

    commands: dict[str, Callable[[], tuple[float, float, int]]] = {
        "cold one pass (task-add + add-tree --prompt)": cold,
        "warm: prompt --refresh": lambda: run(
            hyd("prompt", f"{tag}-R", "--max-bytes", BIG, "--refresh"), repo
        ),
        "prompt --no-cache (built)": lambda: run(
            hyd("prompt", f"{tag}-R", "--max-bytes", BIG, "--no-cache"), repo
        ),
        "prompt (cache hit)": lambda: run(hyd("prompt", f"{tag}-R", "--max-bytes", BIG), repo),
        "files-to-prompt . (default)": lambda: run([ftp, "."], repo),
        "files-to-prompt . --ignore-gitignore (raw)": lambda: run(
            [ftp, ".", "--ignore-gitignore"], repo
        ),
        "cat floor: git ls-files -z | xargs -0 cat": lambda: run(CAT_FLOOR, repo),
        "cat of the prompt's bytes": lambda: run(["cat", str(prompt_file)], repo),
        "interpreter start-up (python -c pass)": lambda: run([PY, "-c", "pass"], repo),
        "import floor (git_hydrate prompt --help)": lambda: run(hyd("prompt", "--help"), repo),
    }
    names = list(commands)
    samples: dict[str, list[tuple[float, float, int]]] = {n: [] for n in names}
    for r in range(args.runs):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            samples[name].append(commands[name]())

    def med(name: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[name])

    print(f"{repo}: prompt of {out_bytes:,} bytes; median of {args.runs} alternating rounds")
    width = max(map(len, names)) + 2
    for name in names:
        top = max(s[2] for s in samples[name]) / 1024
        print(
            f"  {name:<{width}} {med(name, 0):7.3f} s wall {med(name, 1):7.3f} s CPU "
            f"{med(name, 2) / 1024:7.1f} MiB peak RSS (max {top:.1f})"
        )
    c, w, built, hit, d, raw, _cat, catp, start, imp = names

    def ratio(a: str, b: str, i: int) -> float:
        """Median of the per-round ratios (paired); i 0: wall, 1: CPU."""
        pairs = zip(samples[a], samples[b], strict=True)
        return statistics.median(x[i] / y[i] for x, y in pairs)

    def hit_ratio(i: int) -> float:
        rounds = zip(samples[hit], samples[catp], samples[start], strict=True)
        return statistics.median(h[i] / (x[i] + y[i]) for h, x, y in rounds)

    print("paired ratios (median of per-round ratios), wall | CPU:")
    for label, a, b, goal in (
        ("cold / ftp default", c, d, 0.7),
        ("cold / ftp raw", c, raw, 2),
        ("warm / ftp default", w, d, 0.4),
        ("warm / ftp raw", w, raw, 1),
    ):
        print(f"  {label:<20} {ratio(a, b, 0):5.2f}x | {ratio(a, b, 1):5.2f}x (goal <= {goal})")
    print(
        f"  cache hit / (cat + python start-up) {hit_ratio(0):.2f}x | {hit_ratio(1):.2f}x"
        " (goal <= 1.5)"
    )
    # medians: a round may miss the cache (a cold pass's entry can evict R's)
    built_rss = med(built, 2) * 1024
    hit_rss = med(hit, 2) * 1024
    goal = 2 * out_bytes + med(imp, 2) * 1024
    print(
        f"  prompt --no-cache peak RSS {built_rss / 1e6:.1f} MB, cache hit {hit_rss / 1e6:.1f} MB;"
        f" goal 2 x output + import floor = {goal / 1e6:.1f} MB"
        f" -> {built_rss / goal:.2f}x and {hit_rss / goal:.2f}x of it"
    )
    if args.json:
        data = {"out_bytes": out_bytes, "samples": samples}
        Path(args.json).write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
