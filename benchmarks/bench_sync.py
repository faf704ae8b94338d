"""Time pull, push and sync of many tasks against plain git on the same refs, in one run.

Usage::

    python benchmarks/bench_sync.py [--tasks 1000] [--repeat 3] [--before CHECKOUT]
        [--only fresh-pull|first-push|moved-pull] [--settle 1.0]

Every figure is a whole ``git-hydrate`` process (``python -m git_hydrate``,
imports included) and its git children, wall and CPU (user + system of the
process and everything it waited for; the system part beside: on this file
system creating a file costs 0.2-1 ms of it, so a run that writes 1,000 loose
refs is dominated by it and swings with what else writes), each started after
``sync`` and ``--settle`` seconds, beside plain git doing the same
transfer of the same refs in the same run, alternating which goes first from
one repeat to the next. The remote is a bare repository reached through
``file://``, so objects travel as a pack (upload-pack / receive-pack), as over
a network; it is ``git gc``'ed first, as a real remote would be.

Scenarios (median of ``--repeat``; each repeat starts from fresh clones):

* ``pull (fresh clone)``: a clone holding no task pulls all N vs ``git fetch
  --no-tags --no-filter --prune origin +refs/hydrate/*:refs/hydrate-remotes/origin/*``
  (the same objects travel; git writes N mirror refs, pull writes them and N tasks).
* ``pull (10 changed)``: a clone holding all N pulls after 10 changed on the remote
  vs the same ``git fetch`` (10 refs to update).
* ``push (first)``: N new tasks to an empty remote
  vs ``git push --porcelain --no-verify <remote> refs/hydrate/*:refs/hydrate/*``.
* ``push (10 changed)``: 10 changed tasks vs the same git push.
* ``sync (10 each side)``: 10 tasks changed here and 10 others on the remote:
  fetch, merge, push vs ``git fetch`` then ``git push`` of the same refs.
* ``sync (no-op)``: nothing changed anywhere vs ``git fetch`` alone.
* ``pull (a fifth moved)`` (``--only moved-pull`` alone): after a fresh pull, N/5 tasks
  changed on the remote; the pull fast-forwards them vs the same ``git fetch``.

The tasks are generated with ``git fast-import`` from one task made through
the library (same trees, same messages, one body each, ids and bodies
distinct), because making 10,000 tasks one library call at a time takes most
of an hour on a loaded 2-core machine; every pull validates them all (the
benchmark fails unless all N are created).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from git_hydrate import Ledger  # noqa: E402

#: The scenarios, each paired with the plain git run it is measured against.
PAIRS = (
    ("pull (fresh clone)", "git fetch (fresh clone)"),
    ("pull (10 changed)", "git fetch (10 changed)"),
    ("push (first)", "git push (first)"),
    ("push (10 changed)", "git push (10 changed)"),
    ("sync (10 each side)", "git fetch+push (10 each side)"),
    ("sync (no-op)", "git fetch (no-op)"),
    ("pull (a fifth moved)", "git fetch (a fifth moved)"),
)
FETCH = [
    *("git", "fetch", "--no-tags", "--no-filter", "--no-write-fetch-head", "--prune", "--quiet"),
    "origin",
    "+refs/hydrate/*:refs/hydrate-remotes/origin/*",
]
PUSH = ["git", "push", "--porcelain", "--no-verify"]
PLACEHOLDER = b"00000"


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, input=stdin
    ).stdout


#: Seconds to let the file system settle (after ``sync``) before each timed run.
SETTLE = 1.0


def measure(
    cwd: Path, commands: list[list[str]], env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Wall, CPU and system CPU seconds (the processes and their children) of whole
    commands in a row, started on a settled file system: the clones made and removed
    just before are written out first (``sync``, then :data:`SETTLE` seconds), or
    their write-back would bill the timed run's own file creations (``git fetch``
    of 1,000 refs: 0.2 s of system CPU settled, up to 0.66 s right after).
    """
    os.sync()
    time.sleep(SETTLE)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    for argv in commands:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} failed: {proc.stdout.decode()}{proc.stderr.decode()}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    system = after.ru_stime - before.ru_stime
    return wall, (after.ru_utime - before.ru_utime) + system, system


def hydrate(*args: str) -> list[str]:
    return [sys.executable, "-m", "git_hydrate", *args]


def _template(root: Path) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """One task made by the library: ``(message, {path: content})`` per commit, oldest first."""
    repo = root / "template"
    git(root, "init", "-q", str(repo))
    with Ledger(repo) as ledger:
        ledger.add_task("T-00000", objective="objective 00000", acceptance="done")
        ledger.add_context("T-00000", "context body 00000\n" * 20, "bench")
    commits = git(repo, "rev-list", "--reverse", "refs/hydrate/tasks/T-00000").split()
    history = []
    for commit in commits:
        message = git(repo, "cat-file", "commit", commit.decode()).split(b"\n\n", 1)[1]
        files = {}
        for line in git(repo, "ls-tree", "-r", "-z", commit.decode()).split(b"\0"):
            if line:
                path = line.split(b"\t", 1)[1]
                files[path] = git(repo, "cat-file", "blob", f"{commit.decode()}:{path.decode()}")
        history.append((message, files))
    return history


def _blob_ids(body: bytes) -> tuple[bytes, bytes]:
    sha = hashlib.sha256(body).hexdigest().encode()
    oid = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest().encode()
    return sha, oid


def generate(root: Path, repo: Path, count: int, start: int = 0) -> None:
    """Write tasks ``T-<start>`` … into ``repo`` with one ``git fast-import``."""
    history = _template(root)
    body = next(c for p, c in history[-1][1].items() if p.startswith(b"bodies/"))
    old_sha, old_oid = _blob_ids(body)
    assert PLACEHOLDER not in old_sha + old_oid, "template hashes hold the placeholder"
    stream = bytearray()
    when = int(time.time())
    for i in range(start, start + count):
        number = b"%05d" % i
        new_sha, new_oid = _blob_ids(body.replace(PLACEHOLDER, number))
        pairs = ((old_sha, new_sha), (old_sha[:12], new_sha[:12]), (old_oid, new_oid))
        sub = functools.partial(_substitute, [*pairs, (PLACEHOLDER, number)])
        ref = b"refs/hydrate/tasks/T-" + number
        for message, files in history:
            stream += b"commit %s\n" % ref
            stream += b"committer Bench <bench@example.com> %d +0000\n" % when
            msg = sub(message)
            stream += b"data %d\n%s\n" % (len(msg), msg)
            stream += b"deleteall\n"
            for path, content in files.items():
                data = sub(content)
                if path.startswith(b"bodies/"):
                    path = b"bodies/%s/%s" % (new_sha[:2], new_sha)
                stream += b"M 100644 inline %s\ndata %d\n%s\n" % (path, len(data), data)
    git(repo, "fast-import", "--quiet", "--force", stdin=bytes(stream))


def _substitute(pairs: list[tuple[bytes, bytes]], data: bytes) -> bytes:
    for old, new in pairs:
        data = data.replace(old, new)
    return data


def _edit(repo: Path, first: int, count: int, title: str) -> None:
    with Ledger(repo) as ledger:
        for i in range(first, first + count):
            ledger.edit_task(f"T-{i:05d}", title=f"{title} {i}")


class Run:
    """One repeat: fresh repositories, every scenario once, ours and git's in turn."""

    def __init__(self, root: Path, tasks: int, flip: bool, before: Path | None) -> None:
        self.root, self.tasks, self.flip = root, tasks, flip
        self.figures: dict[str, tuple[float, float, float]] = {}
        self.remote = root / "remote.git"
        self.url = self.remote.as_uri()
        self.a, self.b, self.c, self.d = root / "a", root / "b", root / "c", root / "d"
        #: ``--before``: another checkout's code, run in clone d on the scenarios
        #: that leave the remote as they found it (first push, fresh pull, no-op sync).
        self.before = None if before is None else {**os.environ, "PYTHONPATH": str(before)}

    def pair(
        self, ours: str, argv: list[str], theirs: str, plain: list[list[str]], *, old: bool = False
    ) -> None:
        """``ours`` in clone b, plain git's commands in its twin c (and with ``old``,
        ``--before``'s code in clone d), in this repeat's order."""
        steps = [(ours, self.b, [argv], None), (theirs, self.c, plain, None)]
        if old and self.before is not None:
            steps.append((f"{ours} before", self.d, [argv], self.before))
        for name, cwd, commands, env in reversed(steps) if self.flip else steps:
            self.figures[name] = measure(cwd, commands, env)

    def setup(self) -> None:
        git(self.root, "init", "-q", "--bare", str(self.remote))
        git(self.root, "clone", "-q", self.url, str(self.a))
        git(self.a, "commit", "-q", "--allow-empty", "-m", "init")
        git(self.a, "push", "-q", "origin", "HEAD")
        generate(self.root, self.a, self.tasks)
        git(self.a, "gc", "-q")
        for clone in (self.b, self.c, self.d):
            git(self.root, "clone", "-q", self.url, str(clone))

    def first_push(self) -> None:
        """b and c get a's tasks (fetched, not timed), then each pushes them to an empty remote."""
        for clone in (self.b, self.c, self.d):
            git(clone, "fetch", "-q", str(self.a), "+refs/hydrate/*:refs/hydrate/*")
            git(clone, "gc", "-q")
        ours, theirs, old = (self.root / f"first-{n}.git" for n in "bcd")
        for bare in (ours, theirs, old):
            git(self.root, "init", "-q", "--bare", str(bare))
        # (each clone pushes to its own empty remote, named the same in all three)
        for clone, bare in ((self.b, ours), (self.c, theirs), (self.d, old)):
            git(clone, "remote", "add", "first", bare.as_uri())
        self.pair(
            "push (first)",
            hydrate("push", "first"),
            "git push (first)",
            [[*PUSH, "first", "refs/hydrate/*:refs/hydrate/*"]],
            old=True,
        )
        if _tips(ours) != _tips(theirs):
            raise SystemExit("push (first) did not publish the tasks git did")

    def fresh_pull(self) -> None:
        """The remote gets the tasks; b and c are fresh clones again; b pulls, c fetches."""
        git(self.a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
        git(self.remote, "gc", "-q")
        for clone in (self.b, self.c, self.d):
            shutil.rmtree(clone)
            git(self.root, "clone", "-q", self.url, str(clone))
        self.pair(
            "pull (fresh clone)", hydrate("pull"), "git fetch (fresh clone)", [FETCH], old=True
        )
        with Ledger(self.b) as ledger:
            got = len(ledger.task_ids())
        if got != self.tasks:
            raise SystemExit(f"the pull created {got} tasks of {self.tasks}")
        git(self.c, "fetch", "-q", "origin", "+refs/hydrate/*:refs/hydrate/*")

    def changes(self) -> None:
        """No-op sync; then 10 changed there, 10 here, and 10 on each side."""
        twin = self.root / "twin.git"  # c's remote: a copy of b's
        self.pair("sync (no-op)", hydrate("sync"), "git fetch (no-op)", [FETCH], old=True)
        _edit(self.a, 0, 10, "there")
        git(self.a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
        self.pair("pull (10 changed)", hydrate("pull"), "git fetch (10 changed)", [FETCH])
        git(self.c, "fetch", "-q", "origin", "+refs/hydrate/*:refs/hydrate/*")
        git(self.root, "clone", "-q", "--bare", self.url, str(twin))
        git(self.c, "remote", "set-url", "origin", twin.as_uri())
        for clone in (self.b, self.c):
            _edit(clone, 10, 10, "here")
        push = [*PUSH, "origin", "refs/hydrate/*:refs/hydrate/*"]
        self.pair("push (10 changed)", hydrate("push"), "git push (10 changed)", [push])
        _edit(self.a, 20, 10, "there")
        git(
            self.a, "push", "-q", "origin", "refs/hydrate/tasks/T-0002*:refs/hydrate/tasks/T-0002*"
        )
        git(twin, "fetch", "-q", self.url, "+refs/hydrate/*:refs/hydrate/*")
        for clone in (self.b, self.c):
            _edit(clone, 30, 10, "both")
        some = "refs/hydrate/tasks/T-0003*:refs/hydrate/tasks/T-0003*"
        self.pair(
            "sync (10 each side)",
            hydrate("sync"),
            "git fetch+push (10 each side)",
            [FETCH, [*PUSH, "origin", some]],
        )
        if _tips(self.remote) != _tips(self.b / ".git"):
            raise SystemExit("after sync, the remote does not hold what b holds")

    def moved(self) -> None:
        """A fifth of the tasks changed on the remote: b pulls (fast-forwards), c fetches."""
        _edit(self.a, 0, self.tasks // 5, "moved")
        git(self.a, "push", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
        self.pair(
            "pull (a fifth moved)", hydrate("pull"), "git fetch (a fifth moved)", [FETCH], old=True
        )


def _tips(repo: Path) -> bytes:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hydrate/tasks/")


def one_run(
    root: Path, tasks: int, flip: bool, before: Path | None, only: str | None = None
) -> dict[str, tuple[float, float, float]]:
    run = Run(root, tasks, flip, before)
    run.setup()
    if only in (None, "first-push"):
        run.first_push()
    if only in (None, "fresh-pull", "moved-pull"):
        run.fresh_pull()
    if only == "moved-pull":
        run.moved()
    if only is None:
        run.changes()
    return run.figures


def main() -> None:
    global SETTLE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of earlier code, also timed on first push, fresh pull and no-op sync",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=SETTLE,
        help="seconds to wait after sync before each timed run (default %(default)s)",
    )
    parser.add_argument(
        "--only",
        choices=("fresh-pull", "first-push", "moved-pull"),
        help="time this scenario alone (and its git pair), not all of them",
    )
    args = parser.parse_args()
    SETTLE = args.settle
    with tempfile.TemporaryDirectory() as home:
        os.environ.update(
            HOME=home,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_AUTHOR_NAME="Bench",
            GIT_AUTHOR_EMAIL="bench@example.com",
            GIT_COMMITTER_NAME="Bench",
            GIT_COMMITTER_EMAIL="bench@example.com",
            PYTHONPATH=str(ROOT),
        )
        # as installed: byte-compiled once, not compiled again by every process
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([*hydrate("--version")], check=True, capture_output=True)
        if args.before is not None:
            env = {**os.environ, "PYTHONPATH": str(args.before)}
            subprocess.run([*hydrate("--version")], check=True, capture_output=True, env=env)
        runs = []
        for index in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                flip = bool(index % 2)
                runs.append(one_run(Path(tmp), args.tasks, flip, args.before, args.only))
    print(
        f"{args.tasks} tasks, median of {args.repeat} runs (git {_git_version()}, "
        f"load average {os.getloadavg()[0]:.1f}, settled {SETTLE:g} s before each run):"
    )
    print(f"  {'':<32} {'wall':>8} {'cpu':>8} {'sys':>8}")
    for ours, theirs in PAIRS:
        if ours not in runs[0]:
            continue
        for name in (ours, theirs):
            wall, cpu, system = (statistics.median(run[name][i] for run in runs) for i in range(3))
            print(f"  {name:<32} {wall:7.3f}s {cpu:7.3f}s {system:7.3f}s")
        ratio_wall = statistics.median(run[ours][0] / run[theirs][0] for run in runs)
        ratio_cpu = statistics.median(run[ours][1] / run[theirs][1] for run in runs)
        print(f"  {'  ratio (median of pairs)':<32} {ratio_wall:7.2f}x {ratio_cpu:7.2f}x")
        old = f"{ours} before"
        if old in runs[0]:
            wall, cpu, system = (statistics.median(run[old][i] for run in runs) for i in range(3))
            print(f"  {old:<32} {wall:7.3f}s {cpu:7.3f}s {system:7.3f}s")
            ratio_wall = statistics.median(run[ours][0] / run[old][0] for run in runs)
            ratio_cpu = statistics.median(run[ours][1] / run[old][1] for run in runs)
            print(f"  {'  now / before':<32} {ratio_wall:7.2f}x {ratio_cpu:7.2f}x")


def _git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    return out.split()[-1] if out else "?"


if __name__ == "__main__":
    main()
