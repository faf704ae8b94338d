"""Which files of the pinned repositories say in their first lines that they are generated.

For each repository of ``relevance.REPOS`` (its mirror under ``/work/.mirror``, at its
pinned commit or HEAD), every file the path rules let through (``path_rule``: no
skipped folder, extension or generated name, at most 256 KiB) has its first 4 KiB
judged by ``hydrate.generated.says_generated``. Prints the count per repository that
has one, the total, and with ``--list`` each file marked (to read them: a marked file
that a person wrote is a false positive).

Usage::

    python benchmarks/generated_headers.py [--list] [--repos testthat,syn]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import relevance  # noqa: E402

from git_hydrate.hydrate.generated import HEAD_CHARS, says_generated  # noqa: E402
from git_hydrate.hydrate.rules import DEFAULT_MAX_FILE_BYTES, FileEntry, path_rule  # noqa: E402


def blobs(git_dir: str, tip: str) -> list[tuple[str, str]]:
    """``(path, blob id)`` of each file of ``tip`` the path rules let through."""
    listing = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "-l", tip],
        capture_output=True,
        check=True,
    ).stdout
    found = []
    for record in filter(None, listing.split(b"\0")):
        meta, raw = record.split(b"\t", 1)
        mode, kind, oid, size = meta.split()
        if kind != b"blob" or mode == b"120000" or not size.isdigit():
            continue
        path = raw.decode("utf-8", "surrogateescape")
        if path_rule(FileEntry(path, int(size)), DEFAULT_MAX_FILE_BYTES) is None:
            found.append((path, oid.decode("ascii")))
    return found


def marked(git_dir: str, files: list[tuple[str, str]]) -> tuple[list[str], int]:
    """The paths of ``files`` whose first lines say they are generated, and how many
    of ``files`` are text (no NUL byte in their first 4 KiB)."""
    batch = "".join(f"{oid}\n" for _path, oid in files).encode("ascii")
    out = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"], input=batch, capture_output=True
    ).stdout
    found, at, texts = [], 0, 0
    for path, _oid in files:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if header[-1] == b"missing":
            at = end + 1
            continue
        size = int(header[2])
        data = out[end + 1 : end + 1 + min(size, 4 * HEAD_CHARS)]
        at = end + 1 + size + 1
        if b"\0" in data:
            continue
        texts += 1
        if says_generated(data.decode("utf-8", "replace")):
            found.append(path)
    return found, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default=",".join(relevance.REPOS))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--list", action="store_true", help="print each file marked")
    args = parser.parse_args()
    total = files = 0
    for name in filter(None, args.repos.split(",")):
        slug, pinned = relevance.REPOS[name]
        git_dir = args.mirror / slug.replace("/", "+") / "repo"
        if not git_dir.is_dir():
            print(f"{name}: no mirror", file=sys.stderr)
            continue
        listed = blobs(str(git_dir), pinned or "HEAD")
        found, texts = marked(str(git_dir), listed)
        files += texts
        total += len(found)
        if found:
            print(f"{name}: {len(found)} of {texts} text files")
        for path in found if args.list else ():
            print(f"  {path}")
    print(f"{total} of {files} text files say they are generated")


if __name__ == "__main__":
    main()
