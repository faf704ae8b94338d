"""Rank relevance_replay.py's dumped cases through a word index and from facts alone.

Usage::

    python benchmarks/replay_through_index.py OUT.pickle click,flask,chi \
        [--cache DIR:DIR...]
    python benchmarks/replay_through_index.py --compare A.pickle B.pickle

Each case's files are indexed from their dumped facts (as add-tree's kept index
serves them: ``columns.py``) and the case is ranked both ways, for the objective
and the in-play text; the levels, scores and reasons of every file are dumped.
``--compare`` counts the rankings where the two ways differ within a dump, and
between two dumps (two codes: run this with ``PYTHONPATH`` set to each).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import relevance_replay as rr  # noqa: E402

from git_hydrate.hydrate.history import without_templates  # noqa: E402
from git_hydrate.hydrate.index import Served  # noqa: E402
from git_hydrate.hydrate.indexing import build  # noqa: E402
from git_hydrate.hydrate.rank import Candidate, Weights, rank  # noqa: E402

Ranks = dict[str, tuple[int, float, str]]
#: (relevance_replay.py's dumps name the class of their cases as its ``__main__``'s)
Replay = rr.Replay


def both_ways(r: rr.Replay, objective_only: bool) -> tuple[Ranks, Ranks]:
    """The case ranked from its facts, and through an index built of them."""
    facts = {p: x for p, x in r.facts.items() if p in r.files}
    oids = {p: r.files[p][0] for p in facts}
    index = build(oids, facts)
    text = r.text_objective if objective_only else r.text_in_play
    text = dataclasses.replace(
        text, text=without_templates(text.text, getattr(r, "templates", []))
    )
    candidates = [Candidate(p, size) for p, (_h, _c, size) in r.files.items()]
    subjects = getattr(r, "subjects", [])
    plain = rank(candidates, text, r.history, Weights(), facts=r.facts, subjects=subjects)
    live, unserved = index.serving([c.path for c in candidates], oids)
    rest = {p: r.facts[p] for p in unserved if p in r.facts}
    served = Served(index, live, unserved)
    through = rank(
        candidates, text, r.history, Weights(), facts=rest, subjects=subjects, index=served
    )
    return (
        {p: (x.level, x.score, x.reason) for p, x in plain.items()},
        {p: (x.level, x.score, x.reason) for p, x in through.items()},
    )


def compare(a: dict[str, Any], b: dict[str, Any]) -> None:
    rows = within = between = 0
    for name, got in a.items():
        for i, (commit, objective_only, plain, through) in enumerate(got):
            rows += 1
            within += plain != through
            other = b.get(name)
            if other is not None and other[i][:2] == (commit, objective_only):
                between += other[i][3] != through
    print(
        f"{rows} rankings of {len(a)} repositories: through the index vs from facts "
        f"differ in {within}; between the two dumps (through the index) in {between}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("repos", nargs="?", default="click,flask")
    parser.add_argument("--cache", default="/tmp/replay")
    parser.add_argument("--compare", nargs=2)
    opts = parser.parse_args()
    if opts.compare:
        a, b = (pickle.loads(Path(f).read_bytes()) for f in opts.compare)
        compare(a, b)
        return
    found: dict[str, Any] = {}
    for name in opts.repos.split(","):
        dirs = opts.cache.split(":")
        dump = next(f"{d}/{name}.pickle" for d in dirs if os.path.exists(f"{d}/{name}.pickle"))
        replays = pickle.loads(Path(dump).read_bytes())
        found[name] = [
            (r.commit, objective_only, *both_ways(r, objective_only))
            for r in replays
            for objective_only in (True, False)
        ]
        print(name, len(found[name]), end="; ", flush=True)
    Path(opts.out).write_bytes(pickle.dumps(found))
    print()


if __name__ == "__main__":
    main()
