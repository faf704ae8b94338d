"""The secret scanner against detect-secrets, and against itself, on ~20 MB of real code.

    python benchmarks/bench_secrets.py [ROOT] [--detect-secrets PYTHON]
    python benchmarks/bench_secrets.py [ROOT] --against 77ce9b2 [--runs 7]

ROOT defaults to the installed site-packages (real code, real docs, few real
secrets). With ``--detect-secrets PYTHON`` (an interpreter that has the
detect-secrets package), the same files are scanned by it in the same run.
Prints time, MB/s and how many files each flags.

With ``--against REV``, the scanner of commit REV (``git show
REV:git_hydrate/secrets.py``, loaded as a module of its own) is timed against
this checkout's, paired: the runs alternate which goes first, and each figure is
the median of CPU seconds (wall beside). This checkout's scanner is timed twice:
its plain path (every rule over the whole text) and ``scan`` as installed (the
Hyperscan prefilter when the optional ``hyperscan`` package is present). Every
file's findings must be the same for all three, and the recall on the corpus of
``tests/test_secret_corpus.py`` is printed for each.
"""

from __future__ import annotations

import argparse
import importlib.util
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

SUFFIXES = (".py", ".md", ".txt", ".toml", ".cfg", ".json", ".yaml", ".yml", ".ini", ".rst")

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


COLD = """
import importlib.util, json, sys, time
from pathlib import Path
if sys.argv[2]:
    spec = importlib.util.spec_from_file_location("old_secrets", sys.argv[2])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scan = module.scan
else:
    from git_hydrate.secrets import scan
texts = [Path(p).read_text(encoding="utf-8") for p in json.load(open(sys.argv[1]))]
c0, w0 = time.process_time(), time.perf_counter()
for text in texts:
    scan(text)
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))
"""


def collect(root: str, limit_bytes: int) -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    total = 0
    for dirpath, _dirs, names in sorted(os.walk(root)):
        for name in sorted(names):
            if not name.endswith(SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            try:
                text = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) > 262144:
                continue
            files.append((path, text))
            total += len(text.encode())
            if total >= limit_bytes:
                return files
    return files


def load_revision(revision: str) -> ModuleType:
    """``git_hydrate/secrets.py`` as of ``revision``, as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:git_hydrate/secrets.py"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / f"secrets_{revision}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compare(files: list[tuple[str, str]], revision: str, runs: int) -> None:
    """Paired runs of REV's scanner and this one's (plain, and as installed)."""
    from git_hydrate import secrets

    old = load_revision(revision)
    texts = [text for _path, text in files]
    size = sum(len(text.encode()) for text in texts) / 1e6
    scanners: dict[str, Callable[[str], Any]] = {
        f"{revision} (before)": old.scan,
        "plain path": lambda text: secrets._scan_plain(text, 20),
        "scan (as installed)": secrets.scan,
    }
    prefilter = secrets._prefilter()
    print(f"{len(files)} files, {size:.1f} MB; hyperscan prefilter: {prefilter is not None}")
    verdicts = {name: [scanner(text) for text in texts] for name, scanner in scanners.items()}
    first = next(iter(verdicts.values()))
    differ = [
        files[i][0] for i in range(len(texts)) if any(v[i] != first[i] for v in verdicts.values())
    ]
    print(f"files whose findings differ between the three: {len(differ)} {differ[:5]}")
    flagged = sum(1 for found in first if found)
    print(f"files flagged: {flagged} (the same for all three)")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.test_secret_corpus import CORPUS

    for name, scanner in scanners.items():
        caught = sum(1 for _category, text in CORPUS if scanner(text))
        print(f"recall on the test corpus, {name}: {caught}/{len(CORPUS)}")
    cpu: dict[str, list[float]] = {name: [] for name in scanners}
    wall: dict[str, list[float]] = {name: [] for name in scanners}
    order = list(scanners)
    for run in range(runs):
        for name in order if run % 2 == 0 else order[::-1]:
            scanner = scanners[name]
            c0, w0 = time.process_time(), time.perf_counter()
            for text in texts:
                scanner(text)
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    # A fresh process each: this one's scan builds its prefilter after a megabyte.
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as paths:
        json.dump([path for path, _text in files], paths)
    old_path = Path(old.__file__ or "")
    cold = {f"{revision}, cold process": str(old_path), "scan, cold process": ""}
    for run in range(runs):
        for name in list(cold) if run % 2 == 0 else list(cold)[::-1]:
            out = subprocess.run(
                [sys.executable, "-c", COLD, paths.name, cold[name]],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parent.parent,
            )
            seconds = json.loads(out.stdout)
            cpu.setdefault(name, []).append(seconds["cpu"])
            wall.setdefault(name, []).append(seconds["wall"])
    os.unlink(paths.name)
    order += list(cold)
    base = statistics.median(cpu[order[0]])
    print(f"{'scanner':<24} {'CPU s':>7} {'wall s':>7} {'MB/s (CPU)':>11} {'vs before':>10}")
    for name in order:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        print(f"{name:<24} {c:7.3f} {w:7.3f} {size / c:11.0f} {c / base:9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["purelib"])
    parser.add_argument("--detect-secrets", metavar="PYTHON")
    parser.add_argument("--mb", type=float, default=20.0)
    parser.add_argument("--against", metavar="REV", help="time REV's scanner against this one")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    files = collect(args.root, int(args.mb * 1e6))
    if args.against:
        compare(files, args.against, args.runs)
        return
    size = sum(len(text.encode()) for _path, text in files) / 1e6
    start = time.perf_counter()
    flagged = [path for path, text in files if scan(text)]
    elapsed = time.perf_counter() - start
    print(f"{len(files)} files, {size:.1f} MB from {args.root}")
    print(
        f"git-hydrate rules: {elapsed:.2f} s ({size / elapsed:.0f} MB/s), "
        f"{len(flagged)} files flagged"
    )
    for path in flagged:
        print(
            f"  {os.path.relpath(path, args.root)}: {', '.join(map(str, scan(dict(files)[path])))}"
        )
    if args.detect_secrets:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump([path for path, _text in files], fh)
        out = subprocess.run(
            [args.detect_secrets, "-c", DETECT, fh.name],
            capture_output=True,
            text=True,
            check=True,
        )
        os.unlink(fh.name)
        result = json.loads(out.stdout)
        print(
            f"detect-secrets:    {result['seconds']:.2f} s "
            f"({size / result['seconds']:.1f} MB/s), {result['files']} files flagged"
        )


if __name__ == "__main__":
    main()
