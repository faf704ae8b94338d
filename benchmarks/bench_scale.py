"""Issue 33, "a prompt costs what it packs": add-tree --prompt at 3k, 30k (and 100k) files.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_scale.py [--runs 3]
        [--sizes 3000,30000] [--big] [--keep /tmp/bench-scale] [--profile]
        [--files-to-prompt PATH] [--mypy CHECKOUT]

Generates repositories of 3,000 and 30,000 Python files (``--big``: also
100,000), about 4.5 KB each (134 MB at 30,000, as in the issue), written by
``git fast-import`` and checked out; a few hold a private key (skipped as
``secret``). They are kept under ``--keep`` and reused by later runs (the
generator is deterministic). Then, per repository, in paired rounds whose
order rotates (the host is shared), each a whole process of
``git hydrate add-tree T --prompt --max-bytes 65536`` on a fresh task T
(``task-add`` is run before and not timed):

* **first task**: ``.git/hydrate`` removed first (every derived cache gone, as
  in a fresh clone); goal <= 5 s and <= 80 MiB peak RSS at 30,000 files;
* **new task**: on the repository already hydrated (the caches of the earlier
  runs kept); goal <= 1.0 s at 30,000 files, and <= 3x the same at 3,000;
* **changed tree**: a new task on a commit that differs from the hydrated one
  by 20 files (a new commit each round): work proportional to the change.

Wall seconds, CPU seconds (the process and the git processes it waited for)
and peak RSS (``ru_maxrss`` from ``wait4``) are printed, medians over rounds,
each beside its goal. ``--profile`` runs one first and one new task under
cProfile and prints where the time goes (imports, git processes, hashing,
secret scanning, ranking, writing the links, the prompt and its cache entry).
``--files-to-prompt PATH --mypy CHECKOUT``: the cold one pass on a real
checkout (``.git/hydrate`` removed, ``task-add`` + ``add-tree --prompt``)
against files-to-prompt's default run, paired.

The task sets of 1,000 and 10,000 tasks of the issue (sharing) are measured
by ``benchmarks/bench_sync.py``.
"""

from __future__ import annotations

import argparse
import os
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PROMPT = ("--prompt", "--max-bytes", "65536")
CHANGED = 20
KEY_LINE = "-----BEGIN RSA " + "PRIVATE KEY-----"  # (apart: this file is scanned too)
WORDS = """
    request response handler parser token buffer index config state commit tree blob
    budget context retry cache queue worker session schema record stream socket
""".split()  # noqa: SIM905 - a word list reads better as text


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    e.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code, as an installed copy runs
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        e.pop(key, None)
    e.setdefault("GIT_AUTHOR_NAME", "Bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.com")
    e.setdefault("GIT_COMMITTER_NAME", "Bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.com")
    return e


ENV = env()
Sample = tuple[float, float, int]  # wall s, CPU s, peak RSS KiB


def run(cmd: list[str], cwd: Path, extra: dict[str, str] | None = None) -> Sample:
    """Wall seconds, CPU seconds (process + waited-for children), peak RSS in KiB."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env={**ENV, **(extra or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"failed: {cmd}\n{err.decode(errors='replace')[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def git(args: list[str], cwd: Path, data: bytes | None = None, **kw: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**ENV, **kw}, input=data, capture_output=True, check=True
    )
    return out.stdout.decode()


def hyd(*args: str) -> list[str]:
    return [PY, "-m", "git_hydrate", *args]


# -- the repositories ------------------------------------------------------------------


def _path(i: int) -> str:
    return f"pkg{i % 40:02d}/mod{(i // 40) % 25:02d}/file_{i:06d}.py"


def _body(rng: random.Random, pool: list[str], i: int) -> bytes:
    a, b = rng.choice(WORDS), rng.choice(WORDS)
    head = [
        f'"""The {a} {b} of part {i}."""\n',
        f"from pkg{(i + 1) % 40:02d} import {rng.choice(WORDS)}_{(i * 7) % 1000}\n\n",
        f"class {a.title()}{b.title()}{i}:\n",
        f"    def {a}_{b}_{i}(self, {rng.choice(WORDS)}):\n",
    ]
    if i % 997 == 13:  # a few files a secret scan must catch
        head.append(f'KEY = """{KEY_LINE}\n{"Q" * 64}\n"""\n')
    lines = rng.choices(pool, k=rng.randint(50, 150))
    return "".join(head + lines).encode()


def make_repo(path: Path, files: int) -> None:
    """A checkout of ``files`` generated Python files in one commit (deterministic)."""
    rng = random.Random(files)
    pool = [
        "    " * rng.randint(1, 3) + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        for _ in range(4000)
    ]
    pool = [line + "\n" for line in pool]
    tmp = path.with_name(path.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    git(["init", "-q", "-b", "main", str(tmp)], path.parent)
    git(["config", "gc.auto", "0"], tmp)
    stream = bytearray()
    for i in range(files):
        body = _body(rng, pool, i)
        stream += b"blob\nmark :%d\ndata %d\n%s\n" % (i + 1, len(body), body)
    stream += b"commit refs/heads/main\ncommitter Bench <b@example.com> 1700000000 +0000\n"
    stream += b"data 10\ngenerated\n"
    for i in range(files):
        stream += b"M 100644 :%d %s\n" % (i + 1, _path(i).encode())
    git(["fast-import", "--quiet"], tmp, bytes(stream))
    git(["reset", "-q", "--hard", "main"], tmp)
    tmp.rename(path)


def changed_commit(repo: Path, round_no: int) -> str:
    """A commit on top of HEAD with :data:`CHANGED` files rewritten (new each round)."""
    index = str(repo / ".git" / "bench-index")
    git(["read-tree", "main"], repo, GIT_INDEX_FILE=index)
    count = int(git(["ls-files"], repo, GIT_INDEX_FILE=index).count("\n"))
    rng = random.Random(round_no)
    infos = []
    for n in range(CHANGED):
        i = rng.randrange(count)
        body = f"# round {round_no} change {n}\ndef changed_{round_no}_{n}():\n    pass\n"
        oid = git(["hash-object", "-w", "--stdin"], repo, body.encode()).strip()
        infos.append(f"100644 {oid}\t{_path(i)}\n")
    git(["update-index", "--index-info"], repo, "".join(infos).encode(), GIT_INDEX_FILE=index)
    tree = git(["write-tree"], repo, GIT_INDEX_FILE=index).strip()
    os.unlink(index)
    return git(["commit-tree", tree, "-p", "main", "-m", f"round {round_no}"], repo).strip()


# -- the measures ----------------------------------------------------------------------

OBJECTIVE = "Make the retry budget of the queue worker honour the session schema"


class Bench:
    """The fresh-task commands of one repository."""

    def __init__(self, repo: Path, code: Path = ROOT) -> None:
        self.repo = repo
        self.count = 0
        self.rounds = 0
        self.env = {"PYTHONPATH": str(code)}  # (the code measured: this, or a reference)

    def run(self, *args: str) -> Sample:
        return run(hyd(*args), self.repo, self.env)

    def task(self) -> str:
        self.count += 1
        name = f"S{os.getpid()}-{id(self) % 10**6}-{self.count}"
        self.run("task-add", name, "--objective", OBJECTIVE, "--acceptance", "fast")
        return name

    def first(self) -> Sample:
        shutil.rmtree(self.repo / ".git" / "hydrate", ignore_errors=True)
        return self.run("add-tree", self.task(), *PROMPT)

    def new(self) -> Sample:
        return self.run("add-tree", self.task(), *PROMPT)

    def changed(self) -> Sample:
        self.rounds += 1
        commit = changed_commit(self.repo, self.rounds)
        return self.run("add-tree", self.task(), "--rev", commit, *PROMPT)


def rounds(commands: dict[str, Callable[[], Sample]], runs: int) -> dict[str, list[Sample]]:
    names = list(commands)
    samples: dict[str, list[Sample]] = {n: [] for n in names}
    for r in range(runs if names else 0):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(commands[name]())
    return samples


def med(samples: list[Sample], i: int) -> float:
    return statistics.median(s[i] for s in samples)


def paired(a: list[Sample], b: list[Sample], i: int) -> float:
    return statistics.median(x[i] / y[i] for x, y in zip(a, b, strict=True))


def show(name: str, samples: list[Sample], goal: str = "") -> None:
    top = max(s[2] for s in samples) / 1024
    print(
        f"  {name:<44} {med(samples, 0):7.3f} s wall {med(samples, 1):7.3f} s CPU "
        f"{med(samples, 2) / 1024:6.1f} MiB peak (max {top:.1f})  {goal}"
    )


# -- where the time goes ---------------------------------------------------------------

#: (share, functions whose cumulative time is that share), the first that matches.
SHARES = (
    ("imports", ("<frozen importlib._bootstrap>:_find_and_load",)),
    ("listing the source (ls-tree / kept listing)", ("tree.py:_source",)),
    ("path and attribute rules", ("tree.py:_apply_rules",)),
    ("reading, hashing, classifying, scanning", ("reading.py:read_content",)),
    ("  of which the facts of ranking (blob_facts)", ("terms.py:blob_facts",)),
    ("  of which secret scanning", ("secrets.py:scan", "secrets.py:find", "rules.py:classify")),
    ("  of which sha256/blob id", ("{built-in method _hashlib.openssl_sha256}",)),
    ("ranking (place)", ("placement.py:place",)),
    ("  of which loading and saving the facts", ("facts.py:gather",)),
    ("  of which lexical_hits", ("retrieval.py:lexical_hits",)),
    ("writing the links (commit_links)", ("links.py:commit_links",)),
    ("the prompt (pack, render, cache entry)", ("ledger_packing.py:write_prompt",)),
    ("  of which the prompt cache entry", ("prompt_cache.py:_write",)),
)


def profile(bench: Bench, label: str, first: bool) -> None:
    if first:
        shutil.rmtree(bench.repo / ".git" / "hydrate", ignore_errors=True)
    task = bench.task()
    with tempfile.NamedTemporaryFile(suffix=".prof") as out:
        cmd = [PY, "-m", "cProfile", "-o", out.name, "-m", "git_hydrate", "add-tree", task]
        wall, cpu, rss = run([*cmd, *PROMPT], bench.repo)
        stats = pstats.Stats(out.name)
    table: dict[str, float] = {}
    for (file, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        key = f"{Path(file).parent.name}/{Path(file).name}:{func}"
        short = f"{Path(file).name}:{func}"
        for share, names in SHARES:
            if key in names or short in names or f"{file}:{func}" in names or func in names:
                table[share] = max(table.get(share, 0.0), ct)
    total = max(ct for (_cc, _nc, _tt, ct, _c) in stats.stats.values())  # type: ignore[attr-defined]
    print(f"  {label}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss / 1024:.1f} MiB (profiled)")
    for share, _names in SHARES:
        if share in table:
            print(f"    {share:<44} {table[share]:6.2f} s  {100 * table[share] / total:4.0f} %")
    print("    top by own time:")
    for (file, line, func), (_cc, nc, tt, _ct, _callers) in sorted(
        stats.stats.items(),  # type: ignore[attr-defined]
        key=lambda kv: -kv[1][2],
    )[:12]:
        print(f"      {tt:6.2f} s  {nc:>8} calls  {Path(file).name}:{line} {func}")


# -- main ------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sizes", default="3000,30000")
    parser.add_argument("--big", action="store_true", help="also 100,000 files (slow)")
    parser.add_argument("--keep", default="/tmp/bench-scale")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--only", choices=("first", "new", "changed"), action="append")
    parser.add_argument("--files-to-prompt")
    parser.add_argument("--mypy", help="a checkout of python/mypy (or any real repository)")
    parser.add_argument(
        "--reference",
        help="a checkout of the code before (its project root): each command also runs "
        "with it, on a copy of each repository (their caches would clash), paired",
    )
    parser.add_argument("--generate", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        make_repo(Path(args.generate[0]), int(args.generate[1]))
        return
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "git_hydrate")], check=True)
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([100_000] if args.big else [])
    keep = Path(args.keep).resolve()  # (absolute: changed_commit names a file under it)
    keep.mkdir(parents=True, exist_ok=True)
    benches: dict[int, Bench] = {}
    for size in sizes:
        path = keep / f"repo-{size}"
        if not path.exists():
            start = time.perf_counter()
            # in a child: a forked child's peak RSS counts its parent's (the stream)
            cmd = [PY, __file__, "--generate", str(path), str(size)]
            subprocess.run(cmd, check=True, env=ENV)
            print(f"generated {path} in {time.perf_counter() - start:.1f} s")
        benches[size] = Bench(path)
        benches[size].run("add-tree", benches[size].task(), *PROMPT)  # hydrated once
    refs: dict[int, Bench] = {}
    if args.reference:
        for size in sizes:
            copy = keep / f"repo-{size}-ref"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(keep / f"repo-{size}", copy, symlinks=True)
            refs[size] = Bench(copy, Path(args.reference).resolve())
            refs[size].run("add-tree", refs[size].task(), *PROMPT)
    kinds = args.only or ["first", "new", "changed"]
    commands: dict[str, Callable[[], Sample]] = {}
    for size, bench in benches.items():
        for kind in kinds:
            commands[f"{kind} task, {size:,} files"] = getattr(bench, kind)
            if size in refs:
                commands[f"{kind} task, {size:,} files (reference)"] = getattr(refs[size], kind)
    samples = rounds(commands, args.runs)
    print(f"add-tree T --prompt --max-bytes 65536; medians of {args.runs} rotated rounds")
    goals = {
        "first task, 30,000 files": "goal <= 5 s, <= 80 MiB",
        "new task, 30,000 files": "goal <= 1.0 s",
    }
    for name, got in samples.items():
        show(name, got, goals.get(name, ""))
    for name in samples:
        if name.endswith(" (reference)"):
            this, ref = samples[name.removesuffix(" (reference)")], samples[name]
            print(
                f"  {name.removesuffix(' (reference)')}: this / reference (paired)"
                f" {paired(this, ref, 0):.2f}x wall, {paired(this, ref, 1):.2f}x CPU"
            )
    small, large = "new task, 3,000 files", "new task, 30,000 files"
    if small in samples and large in samples:
        print(
            f"  new task 30k / 3k (paired): {paired(samples[large], samples[small], 0):.2f}x"
            f" wall, {paired(samples[large], samples[small], 1):.2f}x CPU (goal <= 3x)"
        )
    if args.profile:
        print("where the time goes (cProfile of the whole process):")
        for size, bench in benches.items():
            profile(bench, f"first task, {size:,} files", True)
            profile(bench, f"new task, {size:,} files", False)
    if args.mypy and args.files_to_prompt:
        reference = Path(args.reference).resolve() if args.reference else None
        mypy(Path(args.mypy).resolve(), args.files_to_prompt, args.runs, reference)


def mypy(repo: Path, ftp: str, runs: int, reference: Path | None = None) -> None:
    """The cold one pass on a real checkout against files-to-prompt's default run;
    the warm pass (``prompt --refresh`` of an unchanged task) on a copy of it, whose
    caches no cold pass removes; with ``reference``, that code's cold pass too (on a
    third copy), paired."""
    bench = Bench(repo)
    warm_repo = repo.with_name(repo.name + "-warm")
    shutil.rmtree(warm_repo, ignore_errors=True)
    shutil.copytree(repo, warm_repo, symlinks=True)
    kept = Bench(warm_repo)
    limits = ("--max-total-bytes", "1000000000", "--max-file-bytes", "1000000000")

    def cold_of(which: Bench) -> Callable[[], Sample]:
        def cold() -> Sample:
            shutil.rmtree(which.repo / ".git" / "hydrate", ignore_errors=True)
            task = which.task()
            return which.run("add-tree", task, *limits, "--prompt", "--max-bytes", "1000000000")

        return cold

    def warm() -> Sample:
        return kept.run("prompt", task, "--max-bytes", "1000000000", "--refresh")

    task = kept.task()
    kept.run("add-tree", task, *limits)
    warm()  # (the first builds the prompt and its cache entry)
    commands = {
        "cold one pass": cold_of(bench),
        "warm prompt --refresh": warm,
        "ftp": lambda: run([ftp, "."], repo),
    }
    if reference is not None:
        ref_repo = repo.with_name(repo.name + "-ref")
        shutil.rmtree(ref_repo, ignore_errors=True)
        shutil.copytree(repo, ref_repo, symlinks=True)
        commands["cold one pass (reference)"] = cold_of(Bench(ref_repo, reference))
    samples = rounds(commands, runs)
    print(f"{repo}: medians of {runs} rotated rounds")
    for name, got in samples.items():
        show(name, got)
    for name, goal in (("cold one pass", 1.0), ("warm prompt --refresh", 0.2)):
        a, b = samples[name], samples["ftp"]
        print(
            f"  {name} / files-to-prompt default: {paired(a, b, 0):.2f}x wall,"
            f" {paired(a, b, 1):.2f}x CPU (goal <= {goal}x)"
        )
    if reference is not None:
        a, b = samples["cold one pass"], samples["cold one pass (reference)"]
        print(
            f"  cold one pass: this / reference (paired) {paired(a, b, 0):.2f}x wall,"
            f" {paired(a, b, 1):.2f}x CPU; the reference / files-to-prompt"
            f" {paired(b, samples['ftp'], 1):.2f}x CPU"
        )


if __name__ == "__main__":
    main()
