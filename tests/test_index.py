"""Ranking's word index (issue 33): lexical scoring through the index gives the same
hits as scoring every file from its facts; the index is kept by tree id, serves a
tree a few files away, and a new task on a known tree reads no facts."""

from __future__ import annotations

import os
import shutil
import struct
import zlib
from operator import itemgetter
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger
from git_hydrate.hydrate import columns
from git_hydrate.hydrate.index import HEADER, Served, WordIndex
from git_hydrate.hydrate.indexing import build as build_index
from git_hydrate.hydrate.kept import MAX_INDEXES, keep, word_index
from git_hydrate.hydrate.retrieval import Hits, lexical_hits, spelled_names
from git_hydrate.hydrate.terms import BlobFacts, blob_facts
from git_hydrate.store import Repository
from tests.conftest import commit_files, examples, git
from tests.test_indexing import assert_same_answers

#: Words of paths, code and tasks: camel and snake case, stems, stop words, repeats.
_WORDS = [
    "retry", "retries", "budget", "Queue", "queue_worker", "WorkerPool", "session",
    "sessions", "schema", "parse_token", "TokenParser", "the", "and", "value", "x1",
    "HTTPServer", "_private_name", "get_metavarName", "changes", "index", "core",
]  # fmt: skip
_DIRS = ["src/pkg", "tests", "docs", "", "src/pkg/retry", "CHANGES"]
_NAMES = [
    "core.py", "retry.py", "test_retry.py", "CHANGES.rst", "queue_worker.py",
    "session-schema.md", "changelog", "NEWS", "WorkerPool.go", "x.py", "fzf.1",
]  # fmt: skip

_words = st.lists(st.sampled_from(_WORDS), max_size=12)


@st.composite
def _body(draw: st.DrawFn) -> bytes:
    """A file: lines of words, some defining a name; sometimes binary."""
    if draw(st.integers(0, 9)) == 0:
        return b"\0binary" + draw(st.binary(max_size=20))
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        words = draw(_words)
        if words and draw(st.booleans()):
            kind = draw(st.sampled_from(["def", "class", "func"]))
            lines.append(f"{kind} {words[0].lstrip('_') or 'x'}_{len(lines)}({' '.join(words)}):")
        else:
            lines.append(" ".join(words))
    return "\n".join(lines).encode()


#: strategies drawn from many times an example, made once (a strategy made anew at
#: each draw cost more than the draw)
_BODIES = _body()
_PATHS = st.lists(
    st.builds(
        lambda d, n: f"{d}/{n}".lstrip("/"), st.sampled_from(_DIRS), st.sampled_from(_NAMES)
    ),
    min_size=1,
    max_size=14,
    unique=True,
)
_FATES = st.sampled_from(["same", "same", "same", "other", "absent", "unknown"])
_EXTRAS = st.lists(st.sampled_from(_NAMES), max_size=3)
_TEXTS = st.lists(st.sampled_from([*_WORDS, "core.py", "pkg.retry"]), max_size=10)


@st.composite
def _case(draw: st.DrawFn) -> dict[str, Any]:
    """Files (path -> body), the candidates asked, what the index was built from
    (some paths at another blob, some absent, some extra), and a task's text."""
    paths = draw(_PATHS)
    bodies = {path: draw(_BODIES) for path in paths}
    candidates = sorted(draw(st.sets(st.sampled_from(paths), min_size=1)))
    indexed: dict[str, bytes | None] = {}
    for path in paths:
        fate = draw(_FATES)
        if fate == "same":
            indexed[path] = bodies[path]
        elif fate == "other":
            indexed[path] = draw(_BODIES)
        elif fate == "unknown":
            indexed[path] = None  # (facts not known when it was built)
    for extra in draw(_EXTRAS):
        indexed.setdefault("extra/" + extra, draw(_BODIES))
    text = " ".join(draw(_TEXTS))
    return {"bodies": bodies, "candidates": candidates, "indexed": indexed, "text": text}


def _oid(body: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


def _served(bodies: dict[str, bytes], paths: list[str]) -> tuple[dict[str, BlobFacts], Served]:
    """Each file's facts, and a word index built of them serving ``paths``."""
    oids = {path: _oid(data) for path, data in bodies.items()}
    facts = {path: blob_facts(data) for path, data in bodies.items()}
    index = build_index(oids, facts)
    return facts, Served(index, *index.serving(paths, oids))


def _assert_same(a: Hits, b: Hits) -> None:
    # exactly: a last-bit difference breaks ties between equal files differently
    assert a.lexical == b.lexical
    assert a.seeds == b.seeds
    assert a.matched == b.matched
    assert a.defines == b.defines
    assert a.mentioned == b.mentioned


def test_equal_files_tie_the_same_way_through_the_index() -> None:
    """Three files with the same body whose paths hold the asked words in other
    orders: the index gathers a file's words in another order than its facts, and
    a score summed in that order differed in its last bit, so the seeds differed."""
    body = b"retry budget alpha delta parse budget"
    bodies = {
        "parse/delta_alpha.py": body,
        "delta/parse_alpha.py": body,
        "alpha/delta_parse.py": body,
        "src/gamma_budget.py": b"retry token budget parse beta",
        "src/budget_beta.py": b"delta token token token token",
        "src/budget_parse.py": b"parse parse omega beta beta",
    }
    paths = list(bodies)
    facts, served = _served(bodies, paths)
    for text in ("gamma delta alpha beta omega parse", "parse alpha delta", "omega beta"):
        expected = lexical_hits(text, paths, facts)
        _assert_same(expected, lexical_hits(text, paths, {}, index=served))


def test_a_documents_examples_define_nothing_with_or_without_the_index() -> None:
    """elixir-plug/plug: the README's fenced ``def terminate`` example made it a
    definer of ``terminate``, suggested beside the module that defines it."""
    bodies = {
        "README.md": b"# Adapter\n\n```elixir\ndefmodule MyPlug do\n  def terminate(conn) do\n"
        b"    conn\n  end\nend\n```\n\nCall terminate to stop the conn.\n",
        "docs/guide.rst": b".. code-block:: python\n\n    def terminate(conn): ...\n",
        "lib/plug/adapter.ex": b"defmodule Plug.Adapter do\n  def terminate(c), do: c\nend\n",
    }
    paths = sorted(bodies)
    facts, served = _served(bodies, paths)
    text = "terminate the conn: the adapter's terminate_conn"
    expected = lexical_hits(text, paths, facts)
    assert dict(expected.defines) == {"lib/plug/adapter.ex": ["terminate"]}
    _assert_same(expected, lexical_hits(text, paths, {}, index=served))
    # (the document is still found by its words; it only defines nothing)
    assert "README.md" in expected.lexical
    spelled = lexical_hits("fix Plug.Adapter terminate_x and MyPlug", paths, facts)
    assert "README.md" not in spelled_names("MyPlug", spelled.defines)


@pytest.mark.parametrize("block", [1, 2, 4])
def test_rows_scored_a_block_at_a_time_score_as_every_file(
    monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """The files an index serves are scored a block of rows at a time (4,096 of
    30,000): blocks of a few rows, the last one short, give the same hits."""
    monkeypatch.setattr(columns, "_BLOCK", block)
    bodies = {
        f"src/{name}_{i}.py": f"def {name}_{i}(): retry {name} budget\n# queue x{i}".encode()
        for i, name in enumerate(["retry", "queue", "session", "schema", "budget", "token"])
    }
    bodies["docs/plain.md"] = b"nothing asked here"
    bodies["CHANGES.rst"] = b"retry queue budget session"
    paths = sorted(bodies)
    facts, served = _served(bodies, paths)
    for text in ("retry the queue budget", "session schema token", "plain"):
        expected = lexical_hits(text, paths, facts)
        _assert_same(expected, lexical_hits(text, paths, {}, index=served))


@settings(max_examples=examples(300), deadline=None)
@given(_case(), st.integers(1, 4), st.sampled_from([0.0, 0.5, 0.9]))
def test_scoring_through_the_index_equals_scoring_every_file(
    case: dict[str, Any], seeds: int, floor: float
) -> None:
    bodies: dict[str, bytes] = case["bodies"]
    paths: list[str] = case["candidates"]
    oids = {path: _oid(bodies[path]) for path in paths}
    facts = {path: blob_facts(bodies[path]) for path in paths}
    built_oids = {p: _oid(b) for p, b in case["indexed"].items() if b is not None}
    built_oids.update({p: "f" * 40 for p, b in case["indexed"].items() if b is None})
    built_facts = {p: blob_facts(b) for p, b in case["indexed"].items() if b is not None}
    index = WordIndex.decode(build_index(built_oids, built_facts).encode())
    assert index is not None
    live, unserved = index.serving(paths, oids)
    rest = {path: facts[path] for path in unserved}
    expected = lexical_hits(case["text"], paths, facts, seeds=seeds, floor=floor)
    got = lexical_hits(
        case["text"], paths, rest, seeds=seeds, floor=floor, index=Served(index, live, unserved)
    )
    _assert_same(expected, got)
    # the files that define a name the text spells, found from the names' postings,
    # are those every file asked in turn gives
    spelled = spelled_names(case["text"], got.defines)
    assert spelled == spelled_names(case["text"], dict(got.defines))
    assert spelled == spelled_names(case["text"], expected.defines)
    # what it served is what it was built from, blob for blob
    served = {index.paths[i] for i, flag in enumerate(live) if flag}
    assert served == {p for p in paths if case["indexed"].get(p) == bodies[p]}


@pytest.mark.parametrize("rare", [1, 2, 7, 9])
def test_words_few_files_hold_score_as_every_file_scored(rare: int) -> None:
    """A word held by few of the rows is summed in only where it is held (a pass over
    every row per word cost seconds for a ticket of hundreds of words): the same
    scores, to the last bit, as scoring each file from its facts."""
    bodies = {
        f"src/m{n:02}.py": (
            f"retry = {n}\n" + "budget_queue = 1\n" * (n % 3) + "token schema\n" * (n < rare)
        ).encode()
        + b"session\n" * (n % 5 == 0)
        for n in range(60)
    }
    paths = list(bodies)
    facts, served = _served(bodies, paths)
    text = "retry the token schema of the budget queue session"
    _assert_same(lexical_hits(text, paths, facts), lexical_hits(text, paths, {}, index=served))


@pytest.mark.parametrize("sparse", [1, 8, 10**6])
def test_columns_of_the_rows_holding_a_word_or_of_every_row_score_the_same(
    monkeypatch: pytest.MonkeyPatch, sparse: int
) -> None:
    """A word's column holds only the rows that hold it, unless many do (one in
    ``_SPARSE``): then a count per row. Every word either way, or the threshold
    between them, gives the same hits to the last bit, its counts from contents,
    path and names summed (a ticket of 3,000 words at 30,000 files took 13 s and
    800 MiB with a count per row for every word)."""
    monkeypatch.setattr(columns, "_SPARSE", sparse)
    bodies = {
        f"src/{'retry' if n % 4 else 'queue'}/m{n:02}.py": (
            f"def retry_budget_{n}(): ...\n" * (n % 3)
            + "retry token\n" * (n % 2)
            + f"schema_{n % 7} session\n" * (n < 5)
            + "queue\n" * (n % 11 == 0)
            + "common\n"
        ).encode()
        for n in range(40)
    }
    bodies["docs/plain.md"] = b"nothing asked here but common"
    paths = sorted(bodies)
    facts, served = _served(bodies, paths)
    for text in (
        "retry the token budget of the queue",
        "schema_3 session retry_budget_7 RetryBudget",
        "plain queue",
        "retry",
        "common retry budget",
    ):
        _assert_same(lexical_hits(text, paths, facts), lexical_hits(text, paths, {}, index=served))


def test_the_files_defining_a_spelled_name_are_found_from_the_postings() -> None:
    """``spelled_names`` asks the index's postings of names which files define a
    name the text spells (asking each file in turn cost 2 s at 30,000 files): the
    same files, the same first names, as the facts give."""
    bodies = {
        f"src/mod_{n}.py": b"class RetryBudget%d:\n    def retry_budget_%d(self): ...\n" % (n, n)
        for n in range(5)
    }
    bodies["src/plain.py"] = b"retry = budget = 1\n"
    paths = list(bodies)
    facts, served = _served(bodies, paths)
    text = "retry_budget_0 fails, and RetryBudget3; retry budget"
    got = lexical_hits(text, paths, {}, index=served)
    expected = lexical_hits(text, paths, facts)
    spelled = spelled_names(text, got.defines)
    assert spelled == spelled_names(text, expected.defines)
    assert spelled == spelled_names(text, dict(got.defines))
    assert spelled == {"src/mod_0.py": "retry_budget_0", "src/mod_3.py": "RetryBudget3"}


def test_names_postings_out_of_file_order_find_the_same_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file's defined names are found by its first posting of each word: postings
    kept out of file order are put in it first (the same hits as in order)."""
    bodies = {
        f"src/mod_{n}.py": b"class RetryBudget%d:\n    def retry_budget_%d(self): ...\n" % (n, n)
        for n in range(4)
    }
    bodies["src/plain.py"] = b"retry = budget = 1\n"
    paths = list(bodies)
    facts, served = _served(bodies, paths)
    text = "retry budget"
    expected = lexical_hits(text, paths, facts)
    in_order = WordIndex.names
    by_name = lambda self, word: sorted(in_order(self, word), key=itemgetter(1))  # noqa: E731
    monkeypatch.setattr(WordIndex, "names", by_name)
    got = lexical_hits(text, paths, {}, index=served)
    _assert_same(expected, got)
    assert got.defines["src/mod_2.py"] == ["RetryBudget2", "retry_budget_2"]


def test_damaged_or_foreign_bytes_are_no_index() -> None:
    index = build_index({"a.py": "1" * 40}, {"a.py": BlobFacts(True, 3, 1, {"retry": 1})})
    data = index.encode()
    assert WordIndex.decode(data) is not None
    for damaged in (data[: len(data) // 2], b"", b"\xc1", b"\x96" + data[1:]):
        assert WordIndex.decode(damaged) is None
    # postings that name no file are no postings: an index of two files, cut to one
    two = build_index(
        {"a.py": "1" * 40, "b.py": "2" * 40},
        {"a.py": BlobFacts(True, 1), "b.py": BlobFacts(True, 3, 1, {"retry": 1}, ["retry"])},
    )
    assert list(two.terms("retry")) == [1, 1] and two.names("retry") == [(1, "retry", 1)]
    layout = msgspec.msgpack.decode(two.encode())
    for column in range(4):
        layout[column] = layout[column][:1]
    cut = WordIndex.decode(msgspec.msgpack.encode(layout))
    assert cut is not None and list(cut.terms("retry")) == [] and cut.names("retry") == []


def test_serving_some_of_its_files_leaves_it_serving_the_rest() -> None:
    """Asked for fewer files than it holds, all served, an index still knows the
    blob of each file it was not asked for: a second caller gets them served."""
    oids = {"a.py": "1" * 40, "b.py": "2" * 40, "c.py": "3" * 40}
    facts = {path: BlobFacts(True, 3, 1, {"retry": 1}) for path in oids}
    index = build_index(oids, facts)
    first = {"a.py": oids["a.py"]}
    live, unserved = index.serving(first, first)
    assert (list(live), unserved) == ([1, 0, 0], [])
    live, unserved = index.serving(oids, oids)
    assert (list(live), unserved) == ([1, 1, 1], [])


FILES = {
    "src/pkg/retry.py": "def retry_budget(queue):\n    return queue.budget\n",
    "src/pkg/session.py": "class SessionSchema:\n    schema = 'session'\n",
    "src/pkg/core.py": "class Command:\n    def invoke(self, ctx):\n        return ctx\n",
    "tests/test_retry.py": "from pkg.retry import retry_budget\n\ndef test_budget(): ...\n",
    "CHANGES.rst": "retry budget, session schema, queue worker\n" * 3,
    "logo.png": "\0png",
}
OBJECTIVE = "Make the retry budget of the queue worker honour the session schema"


def _entries(repo: Path, task_id: str) -> list[tuple[str, int, str]]:
    with Ledger(repo) as ledger:
        return [(e["source"], e["priority"], e["reason"]) for e in ledger.context_entries(task_id)]


def _add_tree(repo: Path, task_id: str, *args: str) -> list[tuple[str, int, str]]:
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective=OBJECTIVE, acceptance="-")
        ledger.add_tree(task_id, *args)
    return _entries(repo, task_id)


def test_a_new_task_on_a_known_tree_ranks_from_the_index_alone(repo: Path) -> None:
    commit_files(repo, FILES, "files")
    first = _add_tree(repo, "IX-1")
    kept = repo / ".git" / "hydrate" / "rank-index"
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert [p.name for p in kept.iterdir()] == [tree]
    assert (kept / tree).read_bytes().startswith(HEADER)
    assert (kept / tree).stat().st_mode & 0o077 == 0  # private
    # the facts of every blob gone: the index answers, and nothing reads them again
    (repo / ".git" / "hydrate" / "blob-facts").unlink()
    assert _add_tree(repo, "IX-2") == first
    assert not (repo / ".git" / "hydrate" / "blob-facts").exists()


def test_a_tree_a_few_files_away_is_served_by_the_kept_index(repo: Path) -> None:
    commit_files(repo, {**FILES, **{f"src/more/m{i}.py": f"x{i} = {i}\n" for i in range(20)}})
    _add_tree(repo, "IX-1")
    kept = repo / ".git" / "hydrate" / "rank-index"
    before = {p.name for p in kept.iterdir()}
    commit_files(repo, {"src/pkg/core.py": "def worker_queue_retry():\n    pass\n"}, "core")
    near = _add_tree(repo, "IX-2")
    assert {p.name for p in kept.iterdir()} == before  # served, not built again
    shutil.rmtree(kept)
    assert _add_tree(repo, "IX-3") == near  # the same ranking, built from the facts


def test_a_damaged_foreign_or_missing_index_is_a_miss(repo: Path) -> None:
    commit_files(repo, FILES, "files")
    first = _add_tree(repo, "IX-1")
    kept = repo / ".git" / "hydrate" / "rank-index"
    (path,) = kept.iterdir()
    good = path.read_bytes()
    flipped = [bytearray(good) for _ in range(3)]
    for k, at in enumerate((len(HEADER) + 12, len(good) // 2, len(good) - 1)):
        flipped[k][at] ^= 1  # one bit: it may still decode, to other postings
    damages = [good[: len(good) // 2], b"# git-hydrate rank-index 0\n", b"", *map(bytes, flipped)]
    for i, damage in enumerate(damages):
        path.write_bytes(damage)
        assert _add_tree(repo, f"IX-D{i}") == first
        assert path.read_bytes() == good  # built again
    os.chmod(path, 0o644)  # another user could have written it: not trusted
    r = Repository(str(repo))
    oids = {"a.py": "0" * 40}
    assert word_index(r, path.name, ["a.py"], oids) is None
    assert _add_tree(repo, "IX-F") == first


def test_a_trailer_that_does_not_lay_out_the_body_is_a_miss(repo: Path) -> None:
    """A kept file whose CRC holds but whose trailer misplaces its parts (a column's
    end, a table's start, the body's end, a count of tables) is no index."""
    r = Repository(str(repo))
    oids = {f"src/f{i}.py": f"{i:040x}" for i in range(70)}
    facts = {path: BlobFacts(True, 9, 2, {"retry": 1, f"w{i}": 1}) for i, path in enumerate(oids)}
    tree = "cd" * 20
    keep(r, tree, build_index(oids, facts))
    path = Path(r.common_dir) / "hydrate" / "rank-index" / tree
    good = path.read_bytes()
    (length,) = struct.unpack("<Q", good[-8:])
    body = good[len(HEADER) + 9 : -8 - length]
    head, spans = msgspec.msgpack.decode(good[-8 - length : -8])
    assert word_index(r, tree, list(oids), oids) is not None
    moved = [
        ([head[0], head[1] + 1, *head[2:]], spans),
        (head, [[spans[0][0] + 1, *spans[0][1:]], *spans[1:]]),
        (head, [*spans[:2], [*spans[2][:-1], spans[2][-1] - 1]]),
        (head, spans[:2]),
        (head[:4], spans),
    ]
    for trailer in map(msgspec.msgpack.encode, moved):
        rest = body + trailer + struct.pack("<Q", len(trailer))
        path.write_bytes(HEADER + b"%08x\n" % zlib.crc32(rest) + rest)
        os.chmod(path, 0o600)
        assert word_index(r, tree, list(oids), oids) is None, trailer


def test_kept_indexes_are_bounded(repo: Path) -> None:
    r = Repository(str(repo))
    index = build_index({"a.py": "1" * 40}, {"a.py": BlobFacts(True, 3, 1, {"retry": 1})})
    trees = [f"{i:040x}" for i in range(MAX_INDEXES + 3)]
    for when, tree in enumerate(trees):
        keep(r, tree, index)
        os.utime(Path(r.common_dir) / "hydrate" / "rank-index" / tree, ns=(when, when))
    kept = sorted(p.name for p in (Path(r.common_dir) / "hydrate" / "rank-index").iterdir())
    assert len(kept) == MAX_INDEXES
    assert kept == sorted(trees[-MAX_INDEXES:])
    served = word_index(r, trees[0], ["a.py"], {"a.py": "1" * 40})
    assert served is not None and served.unserved == []  # (the one used last serves it)


def test_a_kept_index_answers_from_its_file_as_the_held_one(repo: Path) -> None:
    r = Repository(str(repo))
    oids = {f"src/m{i}/f{i}.py": f"{i:040x}" for i in range(40)}
    facts = {
        path: BlobFacts(
            True, 99, 3 * i + 1, {f"w{(i * 7 + k) % 300}": k + 1 for k in range(12)}, [f"Name{i}"]
        )
        for i, path in enumerate(oids)
    }
    held = build_index(oids, facts)
    tree = "ab" * 20
    keep(r, tree, held)
    served = word_index(r, tree, list(oids), oids)
    assert served is not None and served.unserved == []
    kept = served.postings
    assert bytes(kept.encode()) == bytes(held.encode())
    assert_same_answers(kept, WordIndex.decode(bytes(held.encode())), oids, facts)
    # the file replaced meanwhile (another run keeps the tree again): still the one read
    other = build_index({"a.py": "1" * 40}, {"a.py": BlobFacts(True, 3, 1, {"w1": 1})})
    keep(r, tree, other)
    for word in [f"w{k}" for k in range(300)] + ["name0", "name39", "m5", "absent"]:
        assert kept.terms(word) == held.terms(word)
        assert kept.path_words(word) == held.path_words(word)
        assert kept.names(word) == held.names(word)
    seventh = sorted(oids).index("src/m7/f7.py")
    assert kept.terms("w3") and kept.names("name7") == [(seventh, "Name7", 1)]
