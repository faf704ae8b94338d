"""Replay benchmarks/relevance.py's cases in process, to compare ranking settings.

``relevance.py`` runs git-hydrate's add-tree for every case, which is what the
figures in RESULTS.md come from. Comparing many settings that way is slow, so
this script hydrates each case once (``--dump``: the attached files' sizes,
hashes and per-blob facts, the history before the commit, the task's text) and
then re-ranks the cases in process under each setting, packing by the same
rule as the packer (priority order, then hash; each attachment kept whole if
its JSON cost still fits). ``--check`` verifies that the in-process order with
the default settings is the one add-tree stored.

Usage::

    python benchmarks/relevance_replay.py --dump --repos click,flask,typer,chi
    python benchmarks/relevance_replay.py --repos click,flask,typer,chi \
        --set lexical=0.4 --set seeds=4
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import relevance  # noqa: E402

from git_hydrate import Ledger  # noqa: E402
from git_hydrate.context_expander import pack_packet  # noqa: E402
from git_hydrate.hydrate.facts import gather  # noqa: E402
from git_hydrate.hydrate.history import read_history, without_templates  # noqa: E402
from git_hydrate.hydrate.placement import task_text  # noqa: E402
from git_hydrate.hydrate.rank import Candidate, TaskText, Weights, rank  # noqa: E402

BUDGETS = relevance.BUDGETS


@dataclasses.dataclass
class Replay:
    """One case, as ranking and the packer see it."""

    commit: str
    message: str
    in_play: str
    changed: list[str]
    text_objective: TaskText
    text_in_play: TaskText
    #: path -> (hash, json cost, size)
    files: dict[str, tuple[str, int, int]]
    facts: dict[str, Any]
    history: list[list[str]]
    stored_objective: dict[str, int]
    stored_in_play: dict[str, int]
    room: dict[int, int]
    #: The subject of each commit of ``history``.
    subjects: list[str] = dataclasses.field(default_factory=list)
    #: The lines ``history``'s messages repeat (a template's), left out of the texts.
    templates: list[str] = dataclasses.field(default_factory=list)


def _costs(task: dict[str, Any], entries: list[dict[str, Any]]) -> tuple[int, dict[str, int]]:
    base = pack_packet(task, [], 10**9, now=1_700_000_000)["packet_bytes"]
    costs = {}
    for e in entries:
        one = pack_packet(task, [{**e, "priority": 0}], 10**9, now=1_700_000_000)
        costs[e["source"]] = one["packet_bytes"] - base
    return base, costs


def dump(name: str, mirror: Path, out: Path) -> None:
    source = relevance.locate(name, mirror)
    pinned = relevance.REPOS[name][1]
    tip = pinned or relevance.git(source, "rev-parse", "HEAD").strip()
    replays: list[Replay] = []
    with tempfile.TemporaryDirectory(prefix=f"replay-{name}-") as scratch:
        workdir = os.path.join(scratch, "repo.git")
        subprocess.run(["git", "clone", "-q", "--bare", "--shared", source, workdir], check=True)
        for index, case in enumerate(relevance.qualifying(workdir, tip)):
            texts, stored = {}, {}
            for objective_only in (True, False):
                task_id = f"R{int(objective_only)}-{index}"
                task, entries, _took = relevance.hydrate_case(
                    workdir, case, task_id, objective_only=objective_only
                )
                with Ledger(workdir) as ledger:
                    model = ledger.refs.load(task_id).task
                    texts[objective_only] = task_text(model)
                    stored[objective_only] = {e["source"]: int(e["priority"]) for e in entries}
                    tree = relevance.git(workdir, "ls-tree", "-r", case.parent)
                    oids = {}
                    for line in tree.splitlines():
                        meta, path = line.split("\t", 1)
                        if path in stored[objective_only]:
                            oids[path] = meta.split()[2]
                    facts = gather(ledger.repo, oids)
                    read = read_history(ledger.repo, case.parent)
                    history, subjects, templates = read.paths, read.subjects, read.templates
            _base, costs = _costs(task, entries)
            files = {e["source"]: (e["hash"], costs[e["source"]], e["size"]) for e in entries}
            replays.append(
                Replay(
                    case.commit,
                    case.message,
                    case.in_play,
                    case.changed,
                    texts[True],
                    texts[False],
                    files,
                    facts,
                    history,
                    stored[True],
                    stored[False],
                    {b: b for b in BUDGETS},
                    subjects,
                    templates,
                )
            )
            print(f"{name}: {index + 1} cases", end="\r", flush=True)
    out.write_bytes(pickle.dumps(replays))
    print(f"{name}: {len(replays)} cases -> {out}")


def order(r: Replay, levels: dict[str, int]) -> list[str]:
    return sorted(r.files, key=lambda p: (-levels.get(p, 0), r.files[p][0]))


def recall(r: Replay, ordered: list[str], wanted: list[str], budget: int) -> float:
    used, kept, seen = 0, set(), set()
    for path in ordered:
        digest, cost, _size = r.files[path]
        if digest in seen:
            continue
        seen.add(digest)
        if used + cost <= budget:
            used += cost
            kept.add(path)
    return sum(1 for p in wanted if p in kept) / len(wanted)


def levels_of(r: Replay, w: Weights, objective_only: bool) -> dict[str, int]:
    text = r.text_objective if objective_only else r.text_in_play
    candidates = [Candidate(p, size) for p, (_h, _c, size) in r.files.items()]
    subjects = getattr(r, "subjects", [])
    # (as placement reads the task: without the lines of the history's templates)
    templates = getattr(r, "templates", [])
    text = dataclasses.replace(text, text=without_templates(text.text, templates))
    found = rank(candidates, text, r.history, w, facts=r.facts, subjects=subjects)
    return {p: f.level for p, f in found.items()}


def score(replays: list[Replay], w: Weights, objective_only: bool) -> list[float]:
    rows = []
    for r in replays:
        levels = levels_of(r, w, objective_only)
        ordered = order(r, levels)
        wanted = r.changed if objective_only else [p for p in r.changed if p != r.in_play]
        rows.append([recall(r, ordered, wanted, b) for b in BUDGETS])
    return [statistics.mean(row[i] for row in rows) for i in range(len(BUDGETS))]


def check(replays: list[Replay]) -> None:
    for r in replays:
        for objective_only, stored in ((True, r.stored_objective), (False, r.stored_in_play)):
            levels = levels_of(r, Weights(), objective_only)
            # identical bodies are attached once, so the two runs may keep another copy
            mine = [p for p in order(r, levels) if p in stored]
            theirs = [p for p in order(r, {p: stored.get(p, 0) for p in r.files}) if p in stored]
            if mine != theirs:
                # add-tree ranks every candidate (those it then skips too): the
                # document frequencies may differ slightly
                print(f"  note: {r.commit[:12]} ranks differently in process", flush=True)


def weights(settings: list[str]) -> Weights:
    changes: dict[str, Any] = {}
    for item in settings:
        key, _, value = item.partition("=")
        kind = type(getattr(Weights(), key))
        changes[key] = kind(value)
    return dataclasses.replace(Weights(), **changes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default="click,flask")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "replay")
    parser.add_argument("--dump", action="store_true", help="hydrate the cases first")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--set", action="append", default=[], help="a Weights field=value")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    w = weights(args.set)
    names = [n for n in args.repos.split(",") if n]
    means = {True: [], False: []}
    for name in names:
        path = args.cache / f"{name}.pickle"
        if args.dump or not path.exists():
            dump(name, args.mirror, path)
        replays = pickle.loads(path.read_bytes())
        if args.check:
            check(replays)
        line = [name]
        for objective_only in (True, False):
            values = score(replays, w, objective_only)
            means[objective_only].append(values[1])
            label = "obj " if objective_only else "play "
            line.append(label + " ".join(f"{v:.3f}" for v in values))
        print("  ".join(line), flush=True)
    for objective_only in (True, False):
        label = "objective" if objective_only else "in-play"
        print(f"mean {label}@64K: {statistics.mean(means[objective_only]):.3f}")


if __name__ == "__main__":
    main()
