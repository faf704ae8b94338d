"""Replay the relevance cases with two versions' defined names, all else the same.

``relevance_replay.py --dump`` keeps each case's per-blob facts. This reads every
such blob again (the case's parent tree, from the mirror), finds its defined names
with each version's ``defined_names`` (``--code``: a checkout or a ``git archive``
of it, one child process each) and re-ranks the cases with each version's names
swapped into the facts, under this checkout's ranking. A change to what counts as
a definition is so weighed alone, without dumping every case again.

Usage::

    python benchmarks/defined_names_replay.py --code /tmp/main-copy --code . \\
        --cache /tmp/replay --repos tmux,jq,libuv,fmt [--set symbol=0.5]

``--set`` (a ``Weights`` field, as ``relevance_replay.py`` takes it) ranks both
versions' names under other weights.
"""

from __future__ import annotations

import argparse
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

import msgspec  # noqa: E402
import relevance  # noqa: E402
import relevance_replay  # noqa: E402

_CHILD = r"""
import pickle, subprocess, sys
code, source, cases, out = sys.argv[1:5]
sys.path.insert(0, code)
from git_hydrate.hydrate.terms import defined_names
found = {}
for commit, paths in pickle.load(open(cases, "rb")):
    tree = subprocess.run(["git", "--git-dir", source, "ls-tree", "-r", commit + "^"],
                          capture_output=True, check=True).stdout.decode("utf-8", "replace")
    oids = {}
    for line in tree.splitlines():
        meta, path = line.split("\t", 1)
        if path in paths:
            oids[path] = meta.split()[2]
    listed = list(oids)
    data = subprocess.run(["git", "--git-dir", source, "cat-file", "--batch"],
                          input="\n".join(oids[p] for p in listed).encode() + b"\n",
                          capture_output=True, check=True).stdout
    at, names = 0, {}
    for path in listed:
        end = data.index(b"\n", at)
        if data[at:end].endswith(b"missing"):
            at = end + 1
            continue
        size = int(data[at:end].split()[2])
        names[path] = sorted(set(defined_names(data[end + 1 : end + 1 + size])))[:400]
        at = end + 2 + size
    found[commit] = names
pickle.dump(found, open(out, "wb"))
"""


def names_of(code: str, source: str, replays: list[Any]) -> dict[str, dict[str, list[str]]]:
    """Each case's text files' defined names, by ``code``'s ``defined_names``."""
    cases = [(r.commit, {p for p, f in r.facts.items() if f.text}) for r in replays]
    with tempfile.TemporaryDirectory() as scratch:
        given, out = Path(scratch) / "cases", Path(scratch) / "names"
        given.write_bytes(pickle.dumps(cases))
        subprocess.run([sys.executable, "-c", _CHILD, code, source, given, out], check=True)
        found: dict[str, dict[str, list[str]]] = pickle.loads(out.read_bytes())
    return found


def swapped(replays: list[Any], names: dict[str, dict[str, list[str]]]) -> list[Any]:
    """The cases with ``names`` as their files' defined names."""
    out = []
    for r in replays:
        own = names[r.commit]
        facts = {
            p: msgspec.structs.replace(f, symbols=own[p]) if p in own else f
            for p, f in r.facts.items()
        }
        fields = {f: getattr(r, f) for f in r.__dataclass_fields__ if hasattr(r, f)}
        out.append(relevance_replay.Replay(**{**fields, "facts": facts}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", required=True, help="twice: A, then B")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "replay")
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--repos", default="tmux,jq,libuv,fmt")
    parser.add_argument("--set", action="append", default=[], help="a Weights field=value")
    args = parser.parse_args()
    w = relevance_replay.weights(args.set)
    import __main__

    __main__.Replay = relevance_replay.Replay  # type: ignore[attr-defined]  # (--dump's pickles)
    means: dict[tuple[str, bool], list[list[float]]] = {}
    for name in args.repos.split(","):
        replays = pickle.loads((args.cache / f"{name}.pickle").read_bytes())
        source = relevance.locate(name, args.mirror)
        versions = [swapped(replays, names_of(code, source, replays)) for code in args.code]
        line = [f"{name} ({len(replays)})"]
        for objective_only in (True, False):
            a, b = (relevance_replay.score(v, w, objective_only) for v in versions)
            for code, values in zip(args.code, (a, b), strict=True):
                means.setdefault((code, objective_only), []).append(values)
            tasks = " ".join(f"{(y - x) * len(replays):+.1f}" for x, y in zip(a, b, strict=True))
            cells = " ".join(f"{x:.3f}->{y:.3f}" for x, y in zip(a, b, strict=True))
            line.append(f"{'obj' if objective_only else 'play'} {cells} (tasks {tasks})")
        print("  ".join(line), flush=True)
    for objective_only in (True, False):
        cells = []
        for i in range(len(relevance.BUDGETS)):
            a, b = (
                statistics.mean(v[i] for v in means[(code, objective_only)]) for code in args.code
            )
            cells.append(f"{a:.4f}->{b:.4f}")
        print(f"mean {'objective' if objective_only else 'in-play'} 32/64/128K: {' '.join(cells)}")


if __name__ == "__main__":
    main()
