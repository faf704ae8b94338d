"""Recall when the task names a test: relevance.py's cases whose commit changes one.

For each of ``relevance.qualifying``'s cases (a recent commit C modifying 2-8 text
files) where C changes a test (a path ``rank`` takes for one: ``test_x.py``,
``x.spec.ts``, ``XTest.java``...; with ``--folder-tests``, any file of a test folder,
``tests/commands/seq.rs``), a task gets C's message and names that test
(``--test``), ``add-tree --rev P`` (P: C's parent) ranks the files, and recall is the
share of C's *other* files that ``pack`` keeps whole at 32, 64 and 128 KiB. One line
per repository: its cases and the three recalls; ``--out`` keeps each case's places.

Usage (``--code``: whose git_hydrate to run, a checkout or a ``git archive`` of one)::

    python benchmarks/named_tests.py --code /tmp/before --repos click,chi --out a.json
    python benchmarks/named_tests.py --code . --repos click,chi --out b.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, required=True)
    parser.add_argument("--repos", default="click,flask")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--folder-tests", action="store_true")
    args = parser.parse_args()
    sys.path[:0] = [str(args.code), str(args.code / "benchmarks")]
    import relevance

    from git_hydrate import Ledger
    from git_hydrate.hydrate import testpaths

    # (--folder-tests: a file of a test folder is one too, as imports take it)
    is_test = testpaths.is_test_path if args.folder_tests else testpaths.tested_module

    places: dict[str, list[dict[str, Any]]] = {}
    for name in args.repos.split(","):
        source = relevance.locate(name, args.mirror)
        tip = relevance.REPOS[name][1] or relevance.git(source, "rev-parse", "HEAD").strip()
        with tempfile.TemporaryDirectory(prefix=f"named-tests-{name}-") as scratch:
            work = os.path.join(scratch, "repo.git")
            subprocess.run(["git", "clone", "-q", "--bare", "--shared", source, work], check=True)
            rows = []
            for i, case in enumerate(relevance.qualifying(work, tip)):
                tests = [path for path in case.changed if is_test(path)]
                if not tests:
                    continue
                wanted = [path for path in case.changed if path != tests[0]]
                with Ledger(work, clock=lambda: 1_700_000_000.0) as ledger:
                    task_id = f"NT-{i}"
                    message = case.message or "change"
                    ledger.add_task(task_id, message, "-", tests=[tests[0]])
                    ledger.add_tree(task_id, rev=case.parent)
                    task = dict(ledger.get_task(task_id))
                    entries = [
                        {**e, "body": ledger.read_body(task_id, e["hash"])}
                        for e in ledger.context_entries(task_id)
                    ]
                budgets = relevance.BUDGETS
                rows.append([relevance.recall(task, entries, wanted, b) for b in budgets])
                order = [e["source"] for e in entries]
                places.setdefault(name, []).append(
                    {"commit": case.commit[:12], "test": tests[0], "recall": rows[-1],
                     "places": {p: order.index(p) if p in order else None for p in wanted}}
                )  # fmt: skip
            if rows:
                means = [statistics.mean(row[k] for row in rows) for k in range(3)]
                print(name, len(rows), " ".join(f"{m:.3f}" for m in means), flush=True)
    if args.out:
        args.out.write_text(json.dumps(places, indent=1))


if __name__ == "__main__":
    main()
