"""The prompt cache: a hit against `cat` of the same bytes plus start-up, and a rebuild.

    python benchmarks/prompt_cache.py [--dir DIR | --repo CHECKOUT] [--mb 20] [--runs 7]
        [--code NAME=TREE ...] [--python EXE] [--entry module|script] [--sink file|null]
        [--miss-runs N]

Attaches DIR (default: a committed copy of this Python's standard library) or the
checkout CHECKOUT in place (task ``PC<pid>``, ``add-tree`` up to MB megabytes) and
times whole processes, each round in a rotated order, with every code tree
given (``--code before=/tmp/old --code after=.``; default: this checkout) on
``PYTHONPATH``:

- ``prompt ... (hit, NAME)``: a prompt-cache hit through ``python -m git_hydrate``
  (``--entry script``: through the console script pip writes for the tree's
  ``[project.scripts]`` entry, which is what ``git hydrate`` runs);
- ``prompt --no-cache (NAME)``: the prompt built again (with ``--rebuild``);
- ``cat`` of the same prompt bytes, and ``python -c pass`` (interpreter start-up);

writing to a file in /dev/shm (``--sink file``, the default: sendfile and cat both
write real bytes) or to /dev/null (``--sink null``, as earlier runs did). Printed:
medians of wall and CPU (user + system of the process and its children), and
the paired ratio hit / (cat + python -c pass) per round, median and range; the
goal is <= 1.5x.

With ``--miss-runs N``, then N rounds of misses (a budget never asked before,
``--max-bytes 64k`` + round, the prompt built and stored) through the entry
point and through the full command line (``python -c 'from git_hydrate.cli
import main; main()'``) of each tree: the paired difference is what the fast
path adds to a miss (its own lookup before the command line's).

Use ``env -u PYTHONDONTWRITEBYTECODE`` (rewriting bytecode on every run biases
start-up), and read ratios, not absolute times, on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FULL_CLI = "from git_hydrate.cli import main; main()"
#: The console script pip (distlib) writes for ``git-hydrate = "MODULE:FUNCTION"``.
PIP_SCRIPT = """\
# -*- coding: utf-8 -*-
import re
import sys
from {module} import {function}
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit({function}())
"""
Sample = tuple[float, float]


def timed(args: list[str], cwd: str, env: dict[str, str], out: str) -> Sample:
    """Wall and CPU seconds (the process and its children) of one whole process."""
    with open(out, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=sink, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {args}")
    return wall, usage.ru_utime + usage.ru_stime


def environment(tree: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = tree
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMITTER_DATE"):
        env.pop(key, None)
    for key, value in (("NAME", "bench"), ("EMAIL", "bench@example.com")):
        env.setdefault(f"GIT_AUTHOR_{key}", value)
        env.setdefault(f"GIT_COMMITTER_{key}", value)
    return env


def prepare(options: argparse.Namespace, scratch: str, env: dict[str, str]) -> tuple[str, str]:
    """The repository and the task id to prompt."""
    hydrate = [options.python, "-m", "git_hydrate"]
    limit = f"{options.mb}m"
    if options.repo:
        repo, task = str(Path(options.repo).resolve()), f"PC{os.getpid()}"
        subprocess.run(["git", "config", "gc.auto", "0"], cwd=repo, check=True)
    else:
        repo, task = os.path.join(scratch, "r"), "P-1"
        subprocess.run(["git", "init", "-q", repo], check=True)
        # A copy committed in the scratch repository: --dir of a directory that lies
        # inside another work tree (a pyenv checkout, say) takes only its tracked files.
        shutil.copytree(
            options.dir,
            os.path.join(repo, "src"),
            ignore=shutil.ignore_patterns("__pycache__", "site-packages"),
            symlinks=True,
        )
        subprocess.run(["git", "add", "-A"], cwd=repo, env=env, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "src"], cwd=repo, env=env, check=True)
    subprocess.run([*hydrate, "task-add", task, "--objective", "o", "--acceptance", "a"],
                   cwd=repo, env=env, check=True, capture_output=True)  # fmt: skip
    subprocess.run(
        [*hydrate, "add-tree", task, "--max-total-bytes", limit,
         "--max-file-bytes", "1m", "--allow-secrets", "--no-rank"],
        cwd=repo, env=env, check=True, capture_output=True,
    )  # fmt: skip
    return repo, task


def rounds(cases: dict[str, Callable[[], Sample]], count: int) -> dict[str, list[Sample]]:
    """``count`` rounds of every case, each round in a rotated order."""
    names = list(cases)
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for run in range(count):
        shift = run % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(cases[name]())
    return samples


def show(samples: dict[str, list[Sample]]) -> None:
    width = max(map(len, samples)) + 2
    for name, rows in samples.items():
        wall = statistics.median(w for w, _ in rows)
        cpu = statistics.median(c for _, c in rows)
        print(f"  {name:<{width}} wall {wall * 1000:8.1f} ms   CPU {cpu * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--repo", help="a checkout to attach in place (a task is added)")
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--code", action="append", default=[], metavar="NAME=TREE")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--entry", choices=("module", "script"), default="module")
    parser.add_argument("--sink", choices=("file", "null"), default="file")
    parser.add_argument("--rebuild", action="store_true", help="also time prompt --no-cache")
    parser.add_argument("--miss-runs", type=int, default=0)
    options = parser.parse_args()
    trees = dict(item.split("=", 1) for item in options.code) or {"this": str(ROOT)}
    trees = {name: str(Path(tree).resolve()) for name, tree in trees.items()}
    envs = {name: environment(tree) for name, tree in trees.items()}
    first = next(iter(envs.values()))
    for tree in trees.values():  # the bytecode exists before anything is timed
        subprocess.run([options.python, "-m", "compileall", "-q", f"{tree}/git_hydrate"],
                       check=True, env=first)  # fmt: skip
    limit = f"{options.mb}m"
    with tempfile.TemporaryDirectory(prefix="hydrate-pc-") as scratch:
        repo, task = prepare(options, scratch, first)
        starts = {name: entry(options, name, tree, scratch) for name, tree in trees.items()}
        prompts = {name: [*start, "prompt", task, "--max-bytes", limit]
                   for name, start in starts.items()}  # fmt: skip
        saved = os.path.join(scratch, "prompt.md")
        sink = os.devnull
        if options.sink == "file":
            shm = "/dev/shm" if os.path.isdir("/dev/shm") else scratch
            sink = os.path.join(shm, f"hydrate-pc-{os.getpid()}.out")
        try:
            for name, env in envs.items():  # fills each tree's cache entry
                timed(prompts[name], repo, env, saved)
            size = os.path.getsize(saved)
            cases: dict[str, Callable[[], Sample]] = {}
            for name, env in envs.items():
                prompt = prompts[name]
                cases[f"hit ({name})"] = lambda env=env, prompt=prompt: timed(
                    prompt, repo, env, sink
                )
                if options.rebuild:
                    cases[f"prompt --no-cache ({name})"] = lambda env=env, prompt=prompt: timed(
                        [*prompt, "--no-cache"], repo, env, sink
                    )
            cases["cat"] = lambda: timed(["cat", saved], repo, first, sink)
            cases["python -c pass"] = lambda: timed(
                [options.python, "-c", "pass"], repo, first, sink
            )
            samples = rounds(cases, options.runs)
            print(
                f"prompt of {size:,} bytes from {options.repo or options.dir}; "
                f"{options.python}, entry {options.entry}; sink {sink}; "
                f"{options.runs} rounds, medians"
            )
            show(samples)
            print("paired per-round hit / (cat + python -c pass), median [min-max]:")
            for name in envs:
                for index, what in ((0, "wall"), (1, "CPU")):
                    ratios = sorted(
                        h[index] / (c[index] + p[index])
                        for h, c, p in zip(
                            samples[f"hit ({name})"],
                            samples["cat"],
                            samples["python -c pass"],
                            strict=True,
                        )
                    )
                    print(
                        f"  {name:<10} {what:4} {statistics.median(ratios):5.2f}x "
                        f"[{ratios[0]:.2f}-{ratios[-1]:.2f}] (goal <= 1.5x)"
                    )
            if options.miss_runs:
                misses(options, repo, task, envs, starts, sink)
        finally:
            if sink != os.devnull:
                with open(sink, "wb"):
                    pass
                os.unlink(sink)
            if options.repo:
                subprocess.run(["git", "update-ref", "-d", f"refs/hydrate/tasks/{task}"], cwd=repo)


def entry(options: argparse.Namespace, name: str, tree: str, scratch: str) -> list[str]:
    """How a command of the tree ``tree`` starts: ``python -m git_hydrate``, or its
    console script as pip writes it."""
    if options.entry == "module":
        return [options.python, "-m", "git_hydrate"]
    text = Path(tree, "pyproject.toml").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("git-hydrate = "))
    module, function = line.split("=", 1)[1].strip().strip('"').split(":")
    script = Path(scratch, f"git-hydrate-{name}")
    script.write_text(PIP_SCRIPT.format(module=module, function=function), encoding="utf-8")
    return [options.python, str(script)]


def misses(
    options: argparse.Namespace,
    repo: str,
    task: str,
    envs: dict[str, dict[str, str]],
    starts: dict[str, list[str]],
    sink: str,
) -> None:
    """What the entry point adds to a miss: its lookup, before the command line's."""
    budget = iter(range(10**9))
    cases: dict[str, Callable[[], Sample]] = {}
    for name, env in envs.items():
        for how, start in (
            ("entry point", starts[name]),
            ("full CLI", [options.python, "-c", FULL_CLI]),
        ):

            def miss(env: dict[str, str] = env, start: list[str] = start) -> Sample:
                bytes_ = str(65536 + next(budget))  # never asked before: a miss
                return timed([*start, "prompt", task, "--max-bytes", bytes_], repo, env, sink)

            cases[f"miss, {how} ({name})"] = miss
    samples = rounds(cases, options.miss_runs)
    print(f"misses (--max-bytes 64k + n, built and stored); {options.miss_runs} rounds:")
    show(samples)
    for name in envs:
        entry, full = samples[f"miss, entry point ({name})"], samples[f"miss, full CLI ({name})"]
        for index, what in ((0, "wall"), (1, "CPU")):
            added = sorted(e[index] - f[index] for e, f in zip(entry, full, strict=True))
            print(
                f"  {name:<10} entry point - full CLI, {what:4} median "
                f"{statistics.median(added) * 1000:+6.1f} ms "
                f"[{added[0] * 1000:+.1f} .. {added[-1] * 1000:+.1f}]"
            )


if __name__ == "__main__":
    main()
