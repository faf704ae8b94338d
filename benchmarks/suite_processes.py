"""Where a test suite's CPU and processes go, per test: a pytest plugin, and its report.

    PYTHONPATH=benchmarks PROCMETER_OUT=run.jsonl TMPDIR=<own, outside any repository> \
        python -m pytest -q -n 0 -p suite_processes --deselect tests/test_web_browser.py
    python benchmarks/suite_processes.py run.jsonl [TOP]

Per test (setup and teardown included): ``time.process_time()`` and the CPU of the
children reaped (``RUSAGE_CHILDREN``), and every process started through
``subprocess.Popen`` or ``os.posix_spawnp`` counted by kind (a git subcommand, ``python
-m ...``) and by the code that started it (the first frames of ``git_hydrate`` and of
the test); ``os.waitpid`` is answered through ``os.wait4`` to add each child's own CPU
to its kind. Not part of the suite. The browser tests hang under it (Playwright's
child watcher), hence the ``--deselect``; a process reaped late counts against the
test that reaps it.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import traceback

OUT = os.environ.get("PROCMETER_OUT", "procmeter.jsonl")
_pid_kind: dict[int, tuple[str, str]] = {}
_current: dict = {}
_real_waitpid = os.waitpid
_real_spawnp = os.posix_spawnp
_real_popen_init = subprocess.Popen.__init__
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _kind(argv) -> str:
    argv = (
        [os.fsdecode(a) for a in argv]
        if not isinstance(argv, (str, bytes))
        else [os.fsdecode(argv)]
    )
    name = os.path.basename(argv[0])
    if name == "git":
        skip = False
        for a in argv[1:]:
            if skip:
                skip = False
            elif a in ("--git-dir", "--work-tree", "-c", "-C"):
                skip = True
            elif not a.startswith("-"):
                return "git " + a
        return "git ?"
    if name.startswith("python") and "-m" in argv:
        return "python -m " + argv[argv.index("-m") + 1]
    return name


def _where() -> str:
    """The innermost git_hydrate frame outside store/process & catfile, plus the store frame."""
    frames = traceback.extract_stack()[:-3]
    store = other = test = None
    for f in reversed(frames):
        fn = f.filename
        if "/git_hydrate/" in fn:
            rel = fn.split("/git_hydrate/", 1)[1]
            if rel.startswith("store/"):
                if store is None and not rel.startswith(("store/process.py",)):
                    store = f"{rel}:{f.name}"
            elif other is None:
                other = f"{rel}:{f.name}"
        elif "/tests/" in fn and test is None:
            test = "tests/" + fn.split("/tests/", 1)[1] + ":" + f.name
        if other and store:
            break
    if store or other:
        return f"{store or '-'} <- {other or test or '-'}"
    return f"test {test or '-'}"


def _record(pid: int, argv) -> None:
    kind = _kind(argv)
    where = _where()
    _pid_kind[pid] = (kind, where)
    if _current:
        c = _current.setdefault("started", {})
        k = f"{kind} | {where}"
        c[k] = c.get(k, 0) + 1


def _popen_init(self, args, *a, **kw):
    _real_popen_init(self, args, *a, **kw)
    with contextlib.suppress(Exception):
        _record(self.pid, args if not isinstance(args, str) else args.split())


def _spawnp(path, argv, *a, **kw):
    pid = _real_spawnp(path, argv, *a, **kw)
    _record(pid, argv)
    return pid


def _waitpid(pid, options):
    if pid <= 0:
        return _real_waitpid(pid, options)
    got, status, ru = os.wait4(pid, options)
    if got and _current is not None:
        kind = _pid_kind.pop(got, ("?", "?"))[0]
        cpu = ru.ru_utime + ru.ru_stime
        d = _current.setdefault("cpu_by_kind", {})
        d[kind] = d.get(kind, 0.0) + cpu
    return got, status


subprocess.Popen.__init__ = _popen_init
os.posix_spawnp = _spawnp
os.waitpid = _waitpid


def _children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


import pytest  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current.clear()
    t0, c0, w0 = time.process_time(), _children(), time.perf_counter()
    yield
    rec = {
        "test": item.nodeid,
        "self": time.process_time() - t0,
        "children": _children() - c0,
        "wall": time.perf_counter() - w0,
        **_current,
    }
    with open(OUT, "a") as fh:
        fh.write(json.dumps(rec) + "\n")


def report(path: str, top: int = 30) -> None:
    """Totals, processes by kind and by calling code, files by CPU."""
    import collections

    with open(path) as fh:
        recs = [json.loads(line) for line in fh]
    own = sum(r["self"] for r in recs)
    children = sum(r["children"] for r in recs)
    print(f"tests {len(recs)}  self {own:.1f}  children {children:.1f} CPU-s", end="")
    print(f"  {1000 * (own + children) / len(recs):.0f} ms a test")
    kinds: collections.Counter[str] = collections.Counter()
    where: collections.Counter[str] = collections.Counter()
    cpu: collections.Counter[str] = collections.Counter()
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0])
    for r in recs:
        git = 0
        for key, n in r.get("started", {}).items():
            kinds[key.split(" | ", 1)[0]] += n
            where[key] += n
            git += n if key.startswith("git ") else 0
        for key, seconds in r.get("cpu_by_kind", {}).items():
            cpu[key] += seconds
        row = files[r["test"].split("::")[0]]
        row[0] += 1
        row[1] += r["self"] + r["children"]
        row[2] += git
    print("\nprocesses by kind: count, CPU-s, ms each")
    for kind, n in kinds.most_common(top):
        print(f"{n:7d} {cpu[kind]:7.1f} {1000 * cpu[kind] / n:6.1f}  {kind}")
    print("\nby kind and calling code")
    for key, n in where.most_common(top):
        print(f"{n:7d}  {key}")
    print("\nfiles: tests, CPU-s, git processes")
    for name, (n, seconds, git) in sorted(files.items(), key=lambda x: -x[1][1])[:top]:
        print(f"{n:5.0f} {seconds:7.1f} {git:6.0f}  {name}")


if __name__ == "__main__":
    report(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
