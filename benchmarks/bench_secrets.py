"""The secret scanner against detect-secrets, and against itself, on real code.

    python benchmarks/bench_secrets.py [ROOT ...] [--detect-secrets PYTHON]
    python benchmarks/bench_secrets.py [ROOT ...] --against REV [--runs 7]

Each ROOT is a corpus: a git work tree gives every tracked file add-tree would
take (UTF-8 text without NUL, at most 256 KiB, whatever its suffix); any other
directory gives its files with the suffixes in ``SUFFIXES``. The default is the
installed site-packages (real code, real docs, few real secrets). At most
``--mb`` megabytes are taken from each. With ``--detect-secrets PYTHON`` (an
interpreter that has the detect-secrets package), the same files are scanned by
it in the same run. Prints time, MB/s and how many files each flags.

With ``--against REV``, the scanner of commit REV (``git show
REV:git_hydrate/secrets.py``, loaded as a module of its own) is timed against
this checkout's, paired: the runs alternate (rotate) which goes first, and each
figure is the median of CPU seconds (wall beside). In this process: REV's
``scan``, this checkout's plain path (every rule over the whole text, what runs
without ``hyperscan``), its ``scan`` as installed (the Hyperscan prefilter when
present), ``scan_many`` when the module has one, and a probe of what a batched
API would gain (:func:`batched`: one Hyperscan call per batch of texts joined by
newlines, then the prefilter's verdicts per text). Every file's findings must be
the same for all of them; the recall on the corpus of
``tests/test_secret_corpus.py`` is printed for each.

Then whole fresh processes, REV's and this checkout's module each loaded from
its file the same way: the time to the first verdict (importing the module,
loading or compiling what it needs, scanning the first file) and to the last
(every file), without a kept database, with one (``keep_compiled``, a file as
``git_hydrate/hydrate/cache.py`` keeps it; made by a run before the timed ones)
and without ``hyperscan`` (its import blocked: the plain path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from git_hydrate.secrets import scan

ROOT = Path(__file__).resolve().parent.parent

SUFFIXES = (".py", ".md", ".txt", ".toml", ".cfg", ".json", ".yaml", ".yml", ".ini", ".rst")
MAX_FILE = 262144  # hydrate.maxFileBytes' default

DETECT = """
import json, sys, time
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
paths = json.load(open(sys.argv[1]))
start = time.perf_counter()
secrets = SecretsCollection()
with default_settings():
    for path in paths:
        secrets.scan_file(path)
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "files": len(secrets.files)}))
"""

#: A fresh process: argv = files (JSON list of paths), the module's file, the kept
#: database's file (or ""), "plain" to block hyperscan (or ""). The files are
#: read before the clock starts; the module is imported after.
COLD = """
import json, sys, time
from pathlib import Path
paths, module_path, kept, plain = sys.argv[1:5]
texts = [Path(p).read_text(encoding="utf-8") for p in json.load(open(paths))]
if plain:
    sys.modules["hyperscan"] = None  # import hyperscan raises ImportError
c0, w0 = time.process_time(), time.perf_counter()
module = load_module(Path(module_path), "scanner")
if kept:
    def load(key):
        try:
            data = Path(kept).read_bytes()
        except OSError:
            return None
        header = key.encode() + b"\\n"
        return data[len(header):] if data.startswith(header) else None
    def save(key, data):
        Path(kept).write_bytes(key.encode() + b"\\n" + data)
    module.keep_compiled(load, save)
module.scan(texts[0])
c1, w1 = time.process_time(), time.perf_counter()
for text in texts[1:]:
    module.scan(text)
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"first": [c1 - c0, w1 - w0], "all": [c2 - c0, w2 - w0]}))
"""


def collect(root: str, limit_bytes: int) -> list[tuple[str, str]]:
    """(path, text) of the corpus at ``root`` (see the module's docstring)."""
    if os.path.exists(os.path.join(root, ".git")):
        names = subprocess.run(
            ["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True
        ).stdout.split(b"\0")
        paths = [os.path.join(root, os.fsdecode(name)) for name in names if name]
    else:
        paths = [
            os.path.join(dirpath, name)
            for dirpath, _dirs, files in sorted(os.walk(root))
            for name in sorted(files)
            if name.endswith(SUFFIXES)
        ]
    found: list[tuple[str, str]] = []
    total = 0
    for path in paths:
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        try:
            data = Path(path).read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not data or len(data) > MAX_FILE or b"\0" in data:
            continue
        found.append((path, text))
        total += len(data)
        if total >= limit_bytes:
            break
    return found


def load_revision(revision: str) -> ModuleType:
    """The scanner as of ``revision``, as a module of its own: ``git_hydrate/secrets.py``,
    or the package ``git_hydrate/secrets/`` it became."""
    target = Path(tempfile.mkdtemp()) / f"secrets_{revision}"
    shown = subprocess.run(
        ["git", "show", f"{revision}:git_hydrate/secrets.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if shown.returncode == 0:
        path = target.with_suffix(".py")
        path.write_text(shown.stdout)
        return load_scanner(path)
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{revision}:git_hydrate/secrets"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    target.mkdir()
    for name in names:
        source = subprocess.run(
            ["git", "show", f"{revision}:git_hydrate/secrets/{name}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        (target / name).write_text(source)
    return load_scanner(target / "__init__.py")


def load_module(path: Path, name: str) -> ModuleType:
    """The module at ``path`` under ``name`` (a package's ``__init__.py`` with its
    modules beside it). The fresh processes of :data:`COLD` run this source too."""
    import importlib.util

    package = [str(path.parent)] if path.name == "__init__.py" else None
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=package)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (a package's relative imports find it there)
    spec.loader.exec_module(module)
    return module


def load_scanner(path: Path) -> ModuleType:
    """The scanner at ``path`` under a name of its own."""
    return load_module(path, f"scanner_{len(sys.modules)}")


def paired(
    jobs: dict[str, Callable[[], tuple[float, float]]], runs: int
) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) seconds of each job, ``runs`` rounds in a rotated order."""
    cpu: dict[str, list[float]] = {name: [] for name in jobs}
    wall: dict[str, list[float]] = {name: [] for name in jobs}
    order = list(jobs)
    for run in range(runs):
        shift = run % len(order)
        for name in order[shift:] + order[:shift]:
            c, w = jobs[name]()
            cpu[name].append(c)
            wall[name].append(w)
    return {name: (statistics.median(cpu[name]), statistics.median(wall[name])) for name in jobs}


def timed(function: Callable[[], object], passes: int = 1) -> Callable[[], tuple[float, float]]:
    """A job timing ``function``: (CPU, wall) seconds, divided by its ``passes``."""

    def job() -> tuple[float, float]:
        c0, w0 = time.process_time(), time.perf_counter()
        function()
        return (time.process_time() - c0) / passes, (time.perf_counter() - w0) / passes

    return job


def batched(texts: list[str], count: int, size: int = 1 << 62) -> list[Any]:
    """What a batched ``scan_many`` would do: one Hyperscan call per batch of
    ``count`` texts or ``size`` characters, joined by newlines (no anchor matches
    one), each event mapped back to its text, then the prefilter's verdicts on the
    texts with events (and those holding ſ), as ``scan`` gives them. (A real one
    would drop the triggers' SINGLEMATCH flag: with it, only the first text of a
    batch holding a trigger is told. The corpora here have no finding it changes.)"""
    import bisect

    from git_hydrate.secrets.anchors import LONG_S
    from git_hydrate.secrets.prefilter import collect, shared_prefilter, verdicts

    prefilter = shared_prefilter()
    assert prefilter is not None
    found: list[Any] = []
    at = 0
    while at < len(texts):
        end, chars = at, 0
        while end < len(texts) and end - at < count and (end == at or chars < size):
            chars += len(texts[end]) + 1
            end += 1
        batch = texts[at:end]
        at = end
        starts, offset = [], 0
        for text in batch:
            starts.append(offset)
            offset += len(text) + 1
        events: list[tuple[int, int]] = []
        data = b"\n".join([text.encode("ascii", "replace") for text in batch])
        scratch = prefilter.scratches.pop()
        try:
            prefilter.database.scan(data, collect, 0, events, scratch)
        finally:
            prefilter.scratches.append(scratch)
        by_text: dict[int, list[tuple[int, int]]] = {}
        for event_end, expression in events:
            index = bisect.bisect_right(starts, event_end - 1) - 1
            by_text.setdefault(index, []).append((event_end - starts[index], expression))
        for index, text in enumerate(batch):
            if index in by_text or (not text.isascii() and LONG_S in text):
                found.append(verdicts(prefilter, text, by_text.get(index, []), 20))
            else:
                found.append([])
    return found


def compare(files: list[tuple[str, str]], old: ModuleType, revision: str, runs: int) -> None:
    """Paired runs of REV's scanner and this one's, in this process and in fresh ones."""
    from git_hydrate import secrets
    from git_hydrate.secrets import plain
    from git_hydrate.secrets import prefilter as prefilters
    from tests.test_secret_corpus import CORPUS

    texts = [text for _path, text in files]
    size = sum(len(text.encode()) for text in texts) / 1e6
    scanners: dict[str, Callable[[list[str]], list[Any]]] = {
        f"{revision} (before)": lambda ts: [old.scan(t) for t in ts],
        "plain path": lambda ts: [plain.scan_plain(t, 20) for t in ts],
        "scan (as installed)": lambda ts: [secrets.scan(t) for t in ts],
    }
    if hasattr(secrets, "scan_many"):
        scanners["scan_many"] = lambda ts: list(secrets.scan_many(ts))
    if prefilters.shared_prefilter() is not None:
        scanners["batched, 64 texts (probe)"] = lambda ts: batched(ts, 64)
        scanners["batched, 4 MB (probe)"] = lambda ts: batched(ts, 1 << 30, 4 << 20)
    prefilter = prefilters.shared_prefilter()
    print(f"{len(files)} files, {size:.1f} MB; hyperscan prefilter: {prefilter is not None}")
    verdicts = {name: scanner(texts) for name, scanner in scanners.items()}
    first = next(iter(verdicts.values()))
    differ = [
        files[i][0] for i in range(len(texts)) if any(v[i] != first[i] for v in verdicts.values())
    ]
    print(f"files whose findings differ between the scanners: {len(differ)} {differ[:5]}")
    print(f"files flagged: {sum(1 for found in first if found)} (the same for all)")
    for name, scanner in scanners.items():
        caught = sum(1 for found in scanner([text for _c, text in CORPUS]) if found)
        print(f"recall on the test corpus, {name}: {caught}/{len(CORPUS)}")
    # a small corpus is scanned several times over: each measure covers ~20 MB
    passes = max(1, round(20 / size))
    warm = paired(
        {
            name: timed(lambda s=scanner: [s(texts) for _pass in range(passes)], passes)
            for name, scanner in scanners.items()
        },
        runs,
    )
    cold = cold_processes(files, old, revision, runs)
    rows = [(name, c, w) for name, (c, w) in warm.items()]
    rows += [(f"{name}, all", *times["all"]) for name, times in cold.items()]
    base = rows[0][1]
    print(f"{'scanner':<40} {'CPU s':>7} {'wall s':>7} {'MB/s CPU':>9} {'wall':>6} {'vs REV':>7}")
    for name, c, w in rows:
        print(f"{name:<40} {c:7.3f} {w:7.3f} {size / c:9.0f} {size / w:6.0f} {c / base:6.2f}x")
    print(f"{'fresh process, to the first verdict':<40} {'CPU ms':>7} {'wall ms':>7}")
    for name, times in cold.items():
        c, w = times["first"]
        print(f"{name:<40} {c * 1e3:7.1f} {w * 1e3:7.1f}")


def _cold_source() -> str:
    """:data:`COLD` with what it runs of this module (the module may not import)."""
    import inspect

    header = "from __future__ import annotations\nimport sys\nfrom pathlib import Path\n"
    return header + inspect.getsource(load_module) + COLD


def cold_processes(
    files: list[tuple[str, str]], old: ModuleType, revision: str, runs: int
) -> dict[str, dict[str, tuple[float, float]]]:
    """Median (CPU, wall) of fresh processes to the first verdict and to the last."""
    scratch = Path(tempfile.mkdtemp())
    paths = scratch / "paths.json"
    paths.write_text(json.dumps([path for path, _text in files]))
    modules = {
        revision: Path(old.__file__ or ""),
        "this": ROOT / "git_hydrate" / "secrets" / "__init__.py",
    }
    configs: dict[str, list[str]] = {}
    for label, module in modules.items():
        configs[f"{label}, cold process"] = [str(module), "", ""]
        if "def keep_compiled" in module.read_text():
            configs[f"{label}, cold, kept database"] = [str(module), str(scratch / label), ""]
        configs[f"{label}, cold, no hyperscan"] = [str(module), "", "plain"]
    results: dict[str, dict[str, list[tuple[float, float]]]] = {n: {} for n in configs}

    def process(name: str) -> None:
        out = subprocess.run(
            [sys.executable, "-c", _cold_source(), str(paths), *configs[name]],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        for key, value in json.loads(out.stdout).items():
            results[name].setdefault(key, []).append(tuple(value))

    for name in configs:  # bytecode written, kept databases made: not timed
        process(name)
    for name in configs:
        results[name].clear()
    order = list(configs)
    for run in range(runs):
        shift = run % len(order)
        for name in order[shift:] + order[:shift]:
            process(name)
    return {
        name: {
            key: (
                statistics.median(c for c, _w in values),
                statistics.median(w for _c, w in values),
            )
            for key, values in times.items()
        }
        for name, times in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="*", default=[sysconfig.get_paths()["purelib"]])
    parser.add_argument("--detect-secrets", metavar="PYTHON")
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--against", metavar="REV", help="time REV's scanner against this one")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    old = load_revision(args.against) if args.against else None
    for root in args.roots:
        files = collect(root, int(args.mb * 1e6))
        print(f"== {root}")
        if old is not None:
            compare(files, old, args.against, args.runs)
            continue
        report(root, files, args.detect_secrets)


def report(root: str, files: list[tuple[str, str]], detect_secrets: str | None) -> None:
    size = sum(len(text.encode()) for _path, text in files) / 1e6
    start = time.perf_counter()
    flagged = [path for path, text in files if scan(text)]
    elapsed = time.perf_counter() - start
    print(f"{len(files)} files, {size:.1f} MB from {root}")
    print(
        f"git-hydrate rules: {elapsed:.2f} s ({size / elapsed:.0f} MB/s), "
        f"{len(flagged)} files flagged"
    )
    for path in flagged:
        print(f"  {os.path.relpath(path, root)}: {', '.join(map(str, scan(dict(files)[path])))}")
    if detect_secrets:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump([path for path, _text in files], fh)
        out = subprocess.run(
            [detect_secrets, "-c", DETECT, fh.name], capture_output=True, text=True, check=True
        )
        os.unlink(fh.name)
        result = json.loads(out.stdout)
        print(
            f"detect-secrets:    {result['seconds']:.2f} s "
            f"({size / result['seconds']:.1f} MB/s), {result['files']} files flagged"
        )


if __name__ == "__main__":
    main()
