"""``add-tree --worktree`` paired against a reference checkout, on ONE repository.

Usage (from the project root)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_worktree_pair.py REPO
        --reference CHECKOUT [--runs 7] [--modify 10]

Once, every ``--modify``-th tracked file of REPO gets a line appended (so that a
tenth of the tree is read from disk, the rest known by its index blob and read
from the work tree's copy when it holds that blob). Then each round runs, in
alternating order, for this code and for ``--reference`` (another checkout's
code): ``cold`` (``.git/hydrate`` removed, ``task-add``, ``add-tree T
--worktree --prompt --max-bytes 65536``) and ``again`` (the same ``add-tree``
once more: every file listed and looked at, the modified ones read again).
Whole processes; printed: medians of wall and CPU seconds (the process and
every child it waited for), then the paired ratios this / reference.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADD = ["--worktree", "--prompt", "--max-bytes", "65536"]
#: wall seconds, CPU seconds (with children)
Sample = tuple[float, float]


def timed(cmd: list[str], cwd: str, env: dict[str, str]) -> Sample:
    start = os.times().elapsed
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{cmd} failed ({status})")
    return os.times().elapsed - start, usage.ru_utime + usage.ru_stime


def modify(repo: str, every: int) -> int:
    """Append a line to every ``every``-th tracked file (once: a marker file says so)."""
    marker = os.path.join(repo, ".git", "bench-worktree-modified")
    paths = subprocess.run(
        ["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.split(b"\0")
    chosen = [p for i, p in enumerate(filter(None, paths)) if i % every == 0]
    if not os.path.exists(marker):
        for path in chosen:
            with open(os.path.join(os.fsencode(repo), path), "ab") as fh:
                fh.write(b"# changed in the work tree\n")
        Path(marker).write_text("done\n")
    return len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--reference", required=True, help="a checkout of the code before")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--modify", type=int, default=10)
    args = parser.parse_args()
    changed = modify(args.repo, args.modify)
    code = {"this": str(ROOT), "reference": str(Path(args.reference).resolve())}
    for root in code.values():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", f"{root}/git_hydrate"], check=True
        )
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    py = [sys.executable, "-m", "git_hydrate"]
    samples: dict[tuple[str, str], list[Sample]] = {}
    modes = list(code)
    for r in range(args.runs):
        for mode in modes[r % 2 :] + modes[: r % 2]:
            env = dict(base, PYTHONPATH=code[mode])
            task = f"W{os.getpid()}-{r}-{mode}"
            shutil.rmtree(os.path.join(args.repo, ".git", "hydrate"), ignore_errors=True)
            add = ["task-add", task, "--objective", "Make the retry budget honour the schema"]
            subprocess.run(
                [*py, *add, "--acceptance", "fast"],
                cwd=args.repo,
                env=env,
                check=True,
                capture_output=True,
            )
            for kind in ("cold", "again"):
                sample = timed([*py, "add-tree", task, *ADD], args.repo, env)
                samples.setdefault((mode, kind), []).append(sample)
    print(f"{args.repo}: add-tree --worktree, {changed:,} files modified, medians of {args.runs}")
    for (mode, kind), got in samples.items():
        wall, cpu = (statistics.median(s[i] for s in got) for i in range(2))
        print(f"  {kind:<6} {mode:<10} {wall:7.3f} s wall {cpu:7.3f} s CPU")
    for kind in ("cold", "again"):
        pairs = list(zip(samples["this", kind], samples["reference", kind], strict=True))
        ratio = [statistics.median(a[i] / b[i] for a, b in pairs) for i in range(2)]
        print(f"  {kind}: this / reference (paired) {ratio[0]:.2f}x wall, {ratio[1]:.2f}x CPU")


if __name__ == "__main__":
    main()
