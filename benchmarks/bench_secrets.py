"""The secret scanner against detect-secrets on the same ~20 MB of real code.

    python benchmarks/bench_secrets.py [ROOT] [--detect-secrets PYTHON]

ROOT defaults to the installed site-packages (real code, real docs, few real
secrets). With ``--detect-secrets PYTHON`` (an interpreter that has the
detect-secrets package), the same files are scanned by it in the same run.
Prints time, MB/s and how many files each flags.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default=sysconfig.get_paths()["purelib"])
    parser.add_argument("--detect-secrets", metavar="PYTHON")
    parser.add_argument("--mb", type=float, default=20.0)
    args = parser.parse_args()
    files = collect(args.root, int(args.mb * 1e6))
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
