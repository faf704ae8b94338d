"""Recall of a commit's files in ``prompt``'s output: whole, and whole or outlined.

``relevance.py`` replays history through ``pack``, which packs whole files in
strict order (no outlines, no value per byte); this replays the same cases
through ``prompt``, so that a change to the prompt's walk can be weighed. Each
case (``relevance.qualifying``: a recent commit C modifying 2-8 text files) gets
a task whose objective is C's message and nothing else, ``add-tree --rev P``
(P: C's parent), then ``prompt`` at 32, 64 and 128 KiB. Recall: the share of
C's changed files the prompt holds whole, and whole or as an outline; and how many
attachments the prompt's ``### Not included`` section names one by one (``--compare``
counts the prompts that leave attachments out and name none of them).

Usage::

    python benchmarks/prompt_recall.py --code /path/to/checkout --repos click,flask \
        --work /tmp/recall --out before.json       # --code: whose git_hydrate to run
    python benchmarks/prompt_recall.py --compare before.json after.json

``--named N`` replays other tasks (``N<N>-i``) that also name the first N of
the commit's changed files in play, so that a change to how the walk treats
files in play can be weighed too; ``--budgets`` (KiB) replaces 32, 64 and 128.

The work directory keeps each repository's clone and its tasks between runs, so
a second run with other code packs the very same hydrated tasks. ``--rerank``
ranks each task's files again with ``--code``'s ranking first (``rank``: the
files the first run attached, each placed as that code's add-tree would place
them, by the history of the commit's parent), so that a change to ranking can
be weighed through the prompt on the same tasks too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

BUDGETS = (32 * 1024, 64 * 1024, 128 * 1024)


def run(
    code: Path,
    repos: list[str],
    work: Path,
    per_repo: int,
    named: int = 0,
    budgets: tuple[int, ...] = BUDGETS,
    rerank: bool = False,
) -> dict[str, Any]:
    sys.path.insert(0, str(code))
    import git_hydrate  # noqa: F401  (the checkout's, before relevance imports its own)

    sys.path.insert(1, str(Path(__file__).resolve().parent))
    import relevance

    from git_hydrate import Ledger

    results: dict[str, Any] = {}
    for name in repos:
        git_dir = relevance.locate(name, Path("/work/.mirror"))
        tip = relevance.REPOS[name][1] or "HEAD"
        clone = work / name
        if not clone.is_dir():
            subprocess.run(["git", "clone", "-q", "--bare", git_dir, str(clone)], check=True)
        for i, case in enumerate(relevance.qualifying(git_dir, tip)[:per_repo]):
            task_id = f"N{named}-{i + 1}" if named else f"R-{i + 1}"
            ref = f"refs/hydrate/tasks/{task_id}"
            known = subprocess.run(
                ["git", "--git-dir", str(clone), "rev-parse", "--verify", "-q", ref],
                capture_output=True,
            )
            if known.returncode != 0 and named:
                _hydrate_named(str(clone), case, task_id, named)
            elif known.returncode != 0:
                relevance.hydrate_case(str(clone), case, task_id, objective_only=True)
            with Ledger(str(clone)) as ledger:
                if rerank:
                    _rank_again(ledger, task_id, case.parent)
                row = {}
                for budget in budgets:
                    got = ledger.prompt(task_id, max_bytes=budget, cache=False)
                    sources = [c["source"] for c in got["packet"]["context"]]
                    whole = {s for s in sources if not s.endswith(" (outline)")}
                    outlined = {s[: -len(" (outline)")] for s in sources} - whole
                    row[budget] = (
                        sum(p in whole for p in case.changed) / len(case.changed),
                        sum(p in whole or p in outlined for p in case.changed) / len(case.changed),
                        *_notice_lines(got["prompt"]),
                    )
                results[f"{name} {case.commit[:12]}"] = row
    return results


def _notice_lines(prompt: str) -> tuple[int, int]:
    """How many attachments the prompt's ``### Not included`` section names one
    by one, and whether it has the section at all (1) or not (0)."""
    _, found, notice = prompt.partition("\n### Not included\n")
    if not found:
        return 0, 0
    notice = notice.split("\n--- END UNTRUSTED CONTEXT ---", 1)[0]
    said = (": left out, ", ": outlined, ")
    return sum(any(s in line for s in said) for line in notice.splitlines()), 1


def _rank_again(ledger: Any, task_id: str, parent: str) -> None:
    """``rank`` the task (the add-tree run it recorded ranks by its own commit)."""
    ranked = ledger.rank(task_id)
    if [run["commit"] for run in ranked["runs"]] != [parent]:
        raise SystemExit(f"{task_id}: ranked by {ranked['runs']}, not by the parent {parent}")


def _hydrate_named(workdir: str, case: Any, task_id: str, named: int) -> None:
    """task-add naming the first ``named`` changed files in play, then add-tree --rev P."""
    from git_hydrate import Ledger

    with Ledger(workdir, clock=lambda: 1_700_000_000.0) as ledger:
        ledger.add_task(
            task_id,
            objective=case.message or "change",
            acceptance="-",
            files=case.changed[:named],
        )
        ledger.add_tree(task_id, rev=case.parent)


def compare(before: dict[str, Any], after: dict[str, Any]) -> None:
    keys = sorted(set(before) & set(after))
    print(f"{len(keys)} cases")
    for budget in sorted(before[keys[0]], key=int):
        for k, label in ((0, "whole"), (1, "whole or outline")):
            b = sum(before[c][budget][k] for c in keys) / len(keys)
            a = sum(after[c][budget][k] for c in keys) / len(keys)
            worse = [c for c in keys if after[c][budget][k] < before[c][budget][k]]
            better = [c for c in keys if after[c][budget][k] > before[c][budget][k]]
            print(
                f"{int(budget) // 1024:>4} KiB {label:<17} {b:.3f} -> {a:.3f}"
                f"  ({len(better)} cases up, {len(worse)} down: {', '.join(worse[:4])})"
            )
        if all(len(rows[c][budget]) > 3 for rows in (before, after) for c in keys):
            counts = [
                (
                    sum(rows[c][budget][3] and not rows[c][budget][2] for c in keys),
                    sum(rows[c][budget][2] for c in keys) / len(keys),
                )
                for rows in (before, after)
            ]
            print(
                f"{int(budget) // 1024:>4} KiB notice names none {counts[0][0]} -> {counts[1][0]}"
                f" prompts; names {counts[0][1]:.2f} -> {counts[1][1]:.2f} a prompt"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path)
    parser.add_argument("--repos", default="click,flask")
    parser.add_argument("--work", type=Path, default=Path("/tmp/prompt-recall"))
    parser.add_argument("--per-repo", type=int, default=10)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path)
    parser.add_argument("--named", type=int, default=0)
    parser.add_argument("--budgets", default="32,64,128", help="KiB, comma-separated")
    parser.add_argument("--rerank", action="store_true", help="rank each task again first")
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        compare(before, after)
        return
    args.work.mkdir(parents=True, exist_ok=True)
    budgets = tuple(int(b) * 1024 for b in args.budgets.split(","))
    results = run(
        args.code,
        args.repos.split(","),
        args.work,
        args.per_repo,
        args.named,
        budgets,
        args.rerank,
    )
    text = json.dumps(results, indent=1)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
