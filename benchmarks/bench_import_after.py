"""Issue 33 item 4: a big import, and the first command after it (git's housekeeping).

Usage (from the project root)::

    git -C /work/main archive main | tar -x -C /tmp/ref-main
    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_import_after.py \\
        --issues 1000,10000 --runs 3 --reference /tmp/ref-main

For each size, each run imports the same `gh issue list --json` output (see
bench_import.py) into a fresh repository with this code and with the reference
code, in alternating order, and then times, in copies of the imported
repository, the commands that come next: `git gc --auto` (what a `git fetch`
runs after its work, so every pull), `git hydrate pull origin` (a remote holding
one other task) and `git hydrate list`. With ``--update``, the timed import is
a second one, of the same issues each changed upstream (every task updated by a
three-way merge), after an untimed first import by the same code. Before each
timed step any background `git gc` started by the one before has ended. Printed:
the medians of wall and CPU seconds (git's processes included; a detached gc's
background work is not), what the import left (`git count-objects -v`, reflogs
and loose ref files under refs/hydrate), whether `git fsck --strict` is clean,
and the paired ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_import import issues
from bench_scaling import HYDRATE, ROOT, children_cpu, env, make_repo

STEPS = ("import", "gc --auto", "pull", "list")


def timed(cmd: list[str], cwd: Path, code: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``cmd`` run with ``code`` on PYTHONPATH."""
    environment = {**env(), "PYTHONPATH": str(code)}
    before, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=environment, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd} failed ({code}):\n{proc.stderr.decode()}")
    return wall, children_cpu() - before


def settle(repo: Path) -> None:
    """Wait until no background ``git gc`` works in ``repo``."""
    time.sleep(0.5)
    for _ in range(600):
        if not (repo / ".git" / "gc.pid").exists():
            return
        time.sleep(0.5)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env(), capture_output=True, text=True, check=False
    ).stdout


def left(repo: Path) -> dict[str, str]:
    """What an import left in ``repo``."""
    counts = dict(
        line.split(": ") for line in git(repo, "count-objects", "-v").splitlines() if ": " in line
    )
    hydrate = repo / ".git" / "logs" / "refs" / "hydrate"
    refs = repo / ".git" / "refs" / "hydrate"
    fsck = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling"], cwd=repo, capture_output=True, text=True
    )
    return {
        "loose": counts["count"],
        "in-pack": counts["in-pack"],
        "packs": counts["packs"],
        "reflogs": str(sum(len(files) for _d, _s, files in os.walk(hydrate))),
        "loose refs": str(sum(len(files) for _d, _s, files in os.walk(refs))),
        "fsck": "clean" if fsck.returncode == 0 and "error" not in fsck.stderr else "ERRORS",
    }


def one_run(
    code: Path, source: Path, remote: Path, tmp: Path, changed: Path | None = None
) -> tuple[dict, dict]:
    repo = Path(tempfile.mkdtemp(dir=tmp))
    make_repo(repo)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=repo, check=True)
    if changed is not None:  # (the first import untimed, its housekeeping done)
        timed([*HYDRATE, "import", str(source)], repo, code)
        subprocess.run(["git", "gc", "-q"], cwd=repo, env=env(), check=True)
        source = changed
    got = {"import": timed([*HYDRATE, "import", str(source)], repo, code)}
    settle(repo)
    facts = left(repo)
    for step, cmd in (
        ("gc --auto", ["git", "gc", "--auto"]),
        ("pull", [*HYDRATE, "pull", "origin"]),
        ("list", [*HYDRATE, "list"]),
    ):
        copy = Path(tempfile.mkdtemp(dir=tmp)) / "repo"
        shutil.copytree(repo, copy, symlinks=True)
        got[step] = timed(cmd, copy, code)
        settle(copy)
        shutil.rmtree(copy.parent)
    shutil.rmtree(repo)
    return got, facts


def make_remote(tmp: Path) -> Path:
    """A bare remote holding one task (made with this code)."""
    remote, seed = tmp / "remote.git", tmp / "seed"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    make_repo(seed)
    timed([*HYDRATE, "task-add", "R-1", "--objective", "o", "--acceptance", "a"], seed, ROOT)
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=seed, check=True)
    timed([*HYDRATE, "push", "origin"], seed, ROOT)
    return remote


def report(size: int, samples: dict[str, list[dict]], facts: dict[str, dict]) -> None:
    for name, runs in samples.items():
        shown = ", ".join(f"{k} {v}" for k, v in facts[name].items())
        print(f"  {size:>6} issues, {name}: {shown}")
        for step in STEPS:
            wall = statistics.median(r[step][0] for r in runs)
            cpu = statistics.median(r[step][1] for r in runs)
            print(f"    {step:<10} {wall:7.3f} s wall {cpu:7.3f} s CPU")
    if "reference" in samples:
        pairs = list(zip(samples["this"], samples["reference"], strict=True))
        for step in STEPS:
            wall = statistics.median(a[step][0] / b[step][0] for a, b in pairs)
            cpu = statistics.median(a[step][1] / b[step][1] for a, b in pairs)
            print(
                f"  {size:>6} {step:<10} this / reference (paired): {wall:.3f}x wall, "
                f"{cpu:.3f}x CPU"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", default="1000,10000", help="comma-separated sizes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", help="the project root of the code to compare with")
    parser.add_argument(
        "--update", action="store_true", help="time a re-import of every issue changed"
    )
    args = parser.parse_args()
    reference = Path(args.reference).resolve() if args.reference else None
    if reference is not None and not (reference / "git_hydrate").is_dir():
        raise SystemExit(f"{reference} holds no git_hydrate package")
    codes = {"this": ROOT} | ({"reference": reference} if reference else {})
    print(f"load at start: {os.getloadavg()[0]:.2f}; reference: {reference or 'none'}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        remote = make_remote(tmp)
        for size in (int(n) for n in args.issues.split(",")):
            source = tmp / f"issues-{size}.json"
            source.write_text(issues(size))
            changed = tmp / f"changed-{size}.json" if args.update else None
            if changed is not None:
                changed.write_text(issues(size, changed=size))
            samples: dict[str, list[dict]] = {name: [] for name in codes}
            facts: dict[str, dict] = {}
            for run_no in range(args.runs):
                order = list(codes) if run_no % 2 == 0 else list(reversed(codes))
                for name in order:
                    got, facts[name] = one_run(codes[name], source, remote, tmp, changed)
                    samples[name].append(got)
            report(size, samples, facts)
            print(f"  load after {size}: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
