"""Issue 31, import: 1,000 issues of `gh issue list --json` output, then again with 10 changed.

Usage (from the project root, the package installed)::

    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_import.py [--issues N]
    env -u PYTHONDONTWRITEBYTECODE python benchmarks/bench_import.py \
        --chains 500,1000,3000 --runs 3 --reference /tmp/ref-main

Whole processes of `git hydrate import` in a fresh repository: the first run
creates every task, the second (10 issues edited upstream) must update exactly
those 10. Wall and CPU seconds (git's processes included) are printed beside
`git hydrate list --json` of the same tasks, the reference measured in the
same run. Goal: the first import <= 5 s.

``--chains`` times instead beads JSONL whose issues form one parent -> child
chain of each length given (each issue the child of the one before), imported
into a fresh repository: with ``--reference`` (the project root of another
copy of the code, such as ``git archive main | tar -x -C /tmp/ref-main``)
each run of this code is paired with one of that code, in alternating order,
and the medians and the median ratio are printed. Goal: linear in the chain's
length (it took ~n² while each link was made in a ref transaction of its own).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_scaling import HYDRATE, ROOT, children_cpu, env, make_repo, run


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


def chain(length: int) -> str:
    """beads JSONL: ``bd-0`` <- ``bd-1`` <- ... each issue the child of the one before."""
    lines = []
    for n in range(length):
        issue: dict[str, object] = {"id": f"bd-{n}", "title": f"Link {n}", "description": "d"}
        if n:
            link = {"issue_id": f"bd-{n}", "depends_on_id": f"bd-{n - 1}", "type": "parent-child"}
            issue["dependencies"] = [link]
        lines.append(json.dumps(issue) + "\n")
    return "".join(lines)


def timed_import(code: Path, source: Path, tmp: Path) -> tuple[float, float]:
    """Wall and CPU seconds (git's processes included) of ``git hydrate import``
    run from ``code`` in a fresh repository."""
    repo = Path(tempfile.mkdtemp(dir=tmp))
    make_repo(repo)
    environment = {**env(), "PYTHONPATH": str(code)}
    before, start = children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [*HYDRATE, "import", str(source)], cwd=repo, env=environment, capture_output=True
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"import failed ({code}):\n{proc.stderr.decode()}")
    return wall, children_cpu() - before


def chains(lengths: list[int], runs: int, reference: Path | None) -> None:
    codes = {"this": ROOT} | ({"reference": reference} if reference else {})
    print(f"parent chains, beads, {runs} run(s) each; reference: {reference or 'none'}")
    for length in lengths:
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "chain.jsonl"
            source.write_text(chain(length))
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
            for run_no in range(runs):
                order = list(codes) if run_no % 2 == 0 else list(reversed(codes))
                for name in order:
                    samples[name].append(timed_import(codes[name], source, Path(tmp)))
            for name, got in samples.items():
                wall = statistics.median(w for w, _ in got)
                cpu = statistics.median(c for _, c in got)
                print(f"  chain of {length:>5}, {name:<9}: {wall:7.2f} s wall, {cpu:7.2f} s CPU")
            if reference:
                pairs = list(zip(samples["this"], samples["reference"], strict=True))
                wall = statistics.median(a[0] / b[0] for a, b in pairs)
                cpu = statistics.median(a[1] / b[1] for a, b in pairs)
                print(
                    f"  chain of {length:>5}: this / reference (paired) {wall:.3f}x wall, "
                    f"{cpu:.3f}x CPU"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=1000)
    parser.add_argument("--chains", help="comma-separated chain lengths (parent chains)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--reference", help="the project root of the code to compare with")
    args = parser.parse_args()
    if args.chains:
        reference = Path(args.reference).resolve() if args.reference else None
        if reference is not None and not os.path.isdir(reference / "git_hydrate"):
            raise SystemExit(f"{reference} holds no git_hydrate package")
        chains([int(n) for n in args.chains.split(",")], args.runs, reference)
        return
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
