"""Issue 33's cold pass, paired on ONE checkout: forked reading against one process.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_cold_pair.py REPO
        [--kind scale|mypy] [--runs 3] [--reference CHECKOUT] [--files-to-prompt PATH]
        [--modes fork,inline,serial]

Each round runs, in rotated order, a first task (``.git/hydrate`` removed,
``task-add``, then ``add-tree T --prompt``: ``--max-bytes 65536`` for
``scale``, everything for ``mypy`` as ``bench_scale.py --mypy`` does) with
this code as it is (``fork``), with the word index built in the run itself
(``inline``: :data:`git_hydrate.hydrate.indexer.MIN_FILES` set past any tree),
with this code made to run in one process (``serial``: that and
:data:`git_hydrate.hydrate.forked.MIN_ITEMS` set past any tree),
with ``--reference`` (another checkout's code, ``reference``) and
``files-to-prompt .`` (``ftp``). All modes use the same checkout, so its files
are as warm for each (``bench_scale.py --reference`` copies the repository,
and the fresh copy is warmer). Printed per mode: medians of wall seconds, CPU
seconds (the process and every child it waited for: the forked reader, git),
CPU seconds of the main process alone (the critical path: on an idle 2-core
machine the wall time is about this plus the waits for git), and peak RSS
(the largest of the process and its children; and the main process's own);
then paired ratios against
the last mode given.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OBJECTIVE = "Make the retry budget of the queue worker honour the session schema"
#: Runs the command line, with the forked reader and indexer off for ``serial``
#: (the indexer only for ``inline``), and writes the main process's own CPU
#: seconds and peak RSS to ``$BENCH_SELF`` at exit.
WRAPPER = """
import atexit, os, resource, sys
if os.environ.get("BENCH_MODE") in ("serial", "inline"):
    import git_hydrate.hydrate.indexer as indexer
    indexer.MIN_FILES = 10**9
if os.environ.get("BENCH_MODE") == "serial":
    import git_hydrate.hydrate.forked as forked
    forked.MIN_ITEMS = 10**9
def own():
    r = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_SELF"], "w") as fh:
        fh.write(repr((r.ru_utime + r.ru_stime, r.ru_maxrss / 1024)))
atexit.register(own)
sys.argv = ["git-hydrate", *sys.argv[1:]]
from git_hydrate.quick import main
main()
"""
ARGS = {
    "scale": ["--prompt", "--max-bytes", "65536"],
    "mypy": [
        *("--max-total-bytes", "1000000000", "--max-file-bytes", "1000000000"),
        *("--prompt", "--max-bytes", "1000000000"),
    ],
}
#: wall, CPU, main-process CPU, peak MiB (of any process), main-process peak MiB
Sample = tuple[float, float, float, float, float]


def timed(cmd: list[str], cwd: str, env: dict[str, str]) -> Sample:
    with tempfile.NamedTemporaryFile("r", suffix=".cpu") as own:
        env = dict(env, BENCH_SELF=own.name)
        start = os.times().elapsed
        proc = subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _pid, _status, usage = os.wait4(proc.pid, 0)
        wall = os.times().elapsed - start
        text = own.read()
    main, main_peak = ast.literal_eval(text) if text else (0.0, 0.0)
    return wall, usage.ru_utime + usage.ru_stime, main, usage.ru_maxrss / 1024, main_peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo")
    parser.add_argument("--kind", choices=tuple(ARGS), default="scale")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", help="a checkout of the code before (its root)")
    parser.add_argument("--files-to-prompt", help="files-to-prompt's executable")
    parser.add_argument(
        "--modes", default="fork,inline,serial", help="this code's modes to run (comma-separated)"
    )
    args = parser.parse_args()
    code = {mode: str(ROOT) for mode in args.modes.split(",") if mode}
    if args.reference:
        code["reference"] = str(Path(args.reference).resolve())
    modes = [*code, *(["ftp"] if args.files_to_prompt else [])]
    for root in code.values():
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", f"{root}/git_hydrate"], check=True
        )
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples: dict[str, list[Sample]] = {mode: [] for mode in modes}
    for r in range(args.runs):
        for mode in modes[r % len(modes) :] + modes[: r % len(modes)]:
            env = dict(base, PYTHONPATH=code.get(mode, ""), BENCH_MODE=mode)
            if mode == "ftp":
                samples[mode].append(timed([args.files_to_prompt, "."], args.repo, env))
                continue
            task = f"B{os.getpid()}-{r}-{mode}"
            shutil.rmtree(os.path.join(args.repo, ".git", "hydrate"), ignore_errors=True)
            add = ["task-add", task, "--objective", OBJECTIVE, "--acceptance", "fast"]
            py = [sys.executable, "-m", "git_hydrate"]
            subprocess.run([*py, *add], cwd=args.repo, env=env, check=True, capture_output=True)
            cmd = [sys.executable, "-c", WRAPPER, "add-tree", task, *ARGS[args.kind]]
            samples[mode].append(timed(cmd, args.repo, env))
    print(f"{args.repo} ({args.kind}): medians of {args.runs} rotated rounds")
    for mode, got in samples.items():
        wall, cpu, own, peak, main_peak = (statistics.median(s[i] for s in got) for i in range(5))
        print(
            f"  {mode:<10} {wall:7.3f} s wall {cpu:7.3f} s CPU {own:7.3f} s main-process CPU"
            f" {peak:6.1f} MiB (max {max(s[3] for s in got):.1f}; main process {main_peak:.1f})"
        )
    last = modes[-1]
    for mode in modes[:-1]:
        pairs = list(zip(samples[mode], samples[last], strict=True))
        ratios = [statistics.median(a[i] / b[i] for a, b in pairs if b[i]) for i in (0, 1)]
        line = f"  {mode} / {last} (paired): {ratios[0]:.2f}x wall, {ratios[1]:.2f}x CPU"
        if last != "ftp":
            line += f", {statistics.median(a[2] / b[2] for a, b in pairs):.2f}x main-process CPU"
        print(line)


if __name__ == "__main__":
    main()
