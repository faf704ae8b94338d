"""Issue 31, import: 1,000 issues of `gh issue list --json` output, then again with 10 changed.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_import.py [--issues N]

Whole processes of `git hydrate import` in a fresh repository: the first run
creates every task, the second (10 issues edited upstream) must update exactly
those 10. Wall and CPU seconds (git's processes included) are printed beside
`git hydrate list --json` of the same tasks, the reference measured in the
same run. Goal: the first import <= 5 s.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from bench_scaling import HYDRATE, make_repo, run


def issues(count: int, changed: int = 0) -> str:
    found = []
    for n in range(1, count + 1):
        body = f"Issue {n}: the retry path in src/mod{n % 50}.py fails.\n\n- [ ] fix it\n"
        if n <= changed:
            body += "\nEdited upstream.\n"
        found.append(
            {
                "number": n,
                "title": f"Issue number {n}",
                "body": body,
                "labels": [{"name": "bug" if n % 3 == 0 else "feature"}],
                "assignees": [],
                "state": "OPEN",
                "url": f"https://github.com/acme/shop/issues/{n}",
                "comments": [],
            }
        )
    return json.dumps(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        make_repo(repo)
        first, second = Path(tmp) / "first.json", Path(tmp) / "second.json"
        first.write_text(issues(args.issues))
        second.write_text(issues(args.issues, changed=10))
        wall, cpu, _out = run([*HYDRATE, "import", str(first)], repo)
        print(f"import of {args.issues} issues: {wall:.2f} s wall, {cpu:.2f} s CPU")
        wall, cpu, out = run([*HYDRATE, "import", "--json", str(second)], repo)
        report = json.loads(out)
        print(
            f"again, 10 edited: {wall:.2f} s wall, {cpu:.2f} s CPU; "
            f"updated {len(report['updated'])}, unchanged {len(report['unchanged'])}"
        )
        wall, cpu, _out = run([*HYDRATE, "list", "--json"], repo)
        print(f"reference list --json: {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
