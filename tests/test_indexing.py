"""Building a tree's word index while its blobs are read (issue 33): the bytes of
the index built from every file's facts in path order, whatever order the files
come in, and whichever way a run learns them (read, from the facts cache, both)."""

from __future__ import annotations

import random
import shutil
import struct
import zlib
from array import array
from pathlib import Path
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger
from git_hydrate.hydrate.index import HEADER, Served, WordIndex
from git_hydrate.hydrate.indexing import IndexBuilder, build
from git_hydrate.hydrate.retrieval import lexical_hits
from git_hydrate.hydrate.terms import (
    BlobFacts,
    blob_facts,
    defines_names,
    path_words,
    paths_words,
    symbol_words,
    words,
)
from tests.conftest import commit_files, examples, git

_WORDS = [
    "retry", "retries", "budget", "Queue", "queue_worker", "WorkerPool", "session",
    "schema", "parse_token", "TokenParser", "the", "value", "x1", "HTTPServer",
    "_private_name", "get_metavarName", "changes", "index", "core",
]  # fmt: skip
_PATHS = [
    "src/pkg/core.py", "src/pkg/retry.py", "tests/test_retry.py", "CHANGES.rst",
    "queue_worker.py", "docs/session-schema.md", "NEWS", "src/WorkerPool.go", "x.py",
    "src/pkg/retry/budget.py", "a-b/c.d.e", ".hidden", "src/pkg/__init__.py",
]  # fmt: skip


def assert_same_answers(
    index: WordIndex, other: WordIndex | None, oids: dict[str, str], facts: dict[str, BlobFacts]
) -> None:
    """``index`` and ``other`` answer alike: the files, and every word's postings
    (the words of the contents, of the paths and of the names defined)."""
    assert other is not None
    assert (index.paths, list(index.path_lengths), list(index.lengths)) == (
        other.paths,
        list(other.path_lengths),
        list(other.lengths),
    )
    assert index.serving(list(oids), oids) == other.serving(list(oids), oids)
    asked = {"absent-word"}
    for path, fact in facts.items():
        asked.update(fact.terms, path_words(path))
        for name in fact.symbols:
            asked.update(symbol_words(name))
    for word in sorted(asked):
        assert index.terms(word) == other.terms(word), word
        assert index.path_words(word) == other.path_words(word), word
        assert index.names(word) == other.names(word), word


def _reference(oids: dict[str, str], facts: dict[str, BlobFacts]) -> bytes:
    """The index as it was built before it was built while reading: every file's
    facts at once, in path order (a plain specification of the layout)."""
    paths = sorted(oids)
    terms: dict[str, list[int]] = {}
    in_paths: dict[str, list[int]] = {}
    names: dict[str, list[tuple[int, str, int]]] = {}
    blobs, path_lengths, lengths = [], [], []
    for position, path in enumerate(paths):
        own = path_words(path)
        path_lengths.append(len(own))
        for word in dict.fromkeys(own):
            in_paths.setdefault(word, []).extend((position, own.count(word)))
        known = facts.get(path)
        blobs.append(oids[path] if known is not None else "")
        lengths.append(known.length if known is not None and known.text else 0)
        if known is None or not known.text:
            continue
        for word, count in known.terms.items():
            terms.setdefault(word, []).extend((position, count))
        for name in known.symbols if defines_names(path) else ():  # (a document's: none)
            split = words(name)
            for word in dict.fromkeys(split):
                names.setdefault(word, []).append((position, name, split.count(word)))

    def buckets(table: dict[str, Any], last_first: bool) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{} for _ in range(max(1, len(table) // 64))]
        for word in reversed(table) if last_first else table:
            value = table[word]
            if last_first:  # (postings: little-endian 32-bit integers)
                value = array("I", value)
                if value.itemsize != 4 or array("I", [1]).tobytes() != b"\1\0\0\0":
                    value.byteswap()
                value = value.tobytes()
            out[zlib.crc32(word.encode("utf-8", "surrogatepass")) % len(out)][word] = value
        return out

    layout = (
        paths,
        blobs,
        path_lengths,
        lengths,
        buckets(terms, True),
        buckets(in_paths, True),
        buckets(names, False),
    )
    return msgspec.msgpack.encode(layout)


def _tables(data: bytes | bytearray | memoryview) -> list[Any]:
    """What an index holds, decoded (the order of words within a bucket aside)."""
    layout = msgspec.msgpack.decode(data)
    out = layout[:4]
    for table in layout[4:]:
        merged: dict[str, Any] = {}
        for bucket in table:
            merged.update(bucket)
        out.append(merged)
    return out


#: what _files draws from, made once (a strategy made anew at each draw cost more
#: than the draw itself)
_SOME_PATHS = st.lists(st.sampled_from(_PATHS), min_size=1, max_size=12, unique=True)
_LINES = st.lists(st.sampled_from(_WORDS), max_size=8)
_TEXT_WORDS = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=6)


@st.composite
def _files(draw: st.DrawFn) -> dict[str, Any]:
    """Files (path -> body, some binary), some without facts, and a task's text."""
    paths = draw(_SOME_PATHS)
    bodies: dict[str, bytes] = {}
    for i, path in enumerate(paths):
        if draw(st.integers(0, 9)) == 0:
            bodies[path] = b"\0" + draw(st.binary(max_size=8))
            continue
        lines = []
        for _ in range(draw(st.integers(0, 5))):
            line = draw(_LINES)
            if line and draw(st.booleans()):
                lines.append(f"def {line[0].lstrip('_') or 'x'}_{i}({' '.join(line)}):")
            else:
                lines.append(" ".join(line))
        bodies[path] = "\n".join(lines).encode()
    unknown = draw(st.sets(st.sampled_from(paths)))
    text = " ".join(draw(_TEXT_WORDS))
    return {"bodies": bodies, "unknown": unknown, "text": text}


def _oid(body: bytes) -> str:
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


@settings(max_examples=examples(200), deadline=None)
@given(_files(), st.randoms(use_true_random=False))
def test_the_index_is_the_reference_in_any_order(case: dict[str, Any], rnd: random.Random) -> None:
    bodies: dict[str, bytes] = case["bodies"]
    oids = {path: _oid(body) for path, body in bodies.items()}
    facts = {p: blob_facts(b) for p, b in bodies.items() if p not in case["unknown"]}
    expected = _reference(oids, facts)
    built = build(oids, facts)
    assert bytes(built.encode()) == expected  # (path order: byte for byte)
    early = IndexBuilder(sorted(oids))
    early.index_paths()  # (the paths' table encoded before any file is fed: the same bytes)
    for path in early.paths:
        if path in facts:
            early.add(path, oids[path], facts[path])
    assert early.position("\0 not a path") is None and not early.contains("\0 not a path")
    assert bytes(early.finish().encode()) == expected
    # a blob at several paths fed once, at its first (as reading feeds it): the later
    # paths wait for their turn, so the bytes are still the reference's
    grouped = IndexBuilder(sorted(oids))
    by_blob: dict[str, list[int]] = {}
    for at, path in enumerate(grouped.paths):
        if path in facts:
            by_blob.setdefault(oids[path], []).append(at)
    for path in grouped.paths:
        positions = by_blob.pop(oids[path], None) if path in facts else None
        if positions is not None:
            grouped.feed(positions, oids[path], facts[path])
    assert bytes(grouped.finish().encode()) == expected
    # the parts it holds (not decoded again) answer as those it encoded
    assert_same_answers(built, WordIndex.decode(expected), oids, facts)
    builder = IndexBuilder(sorted(oids))
    order = list(facts)
    rnd.shuffle(order)
    for path in order:
        builder.add(path, oids[path], facts[path])
        builder.add(path, oids[path], facts[path])  # (a file fed twice counts once)
    index = builder.finish()
    assert _tables(index.encode()) == _tables(expected)
    assert_same_answers(index, WordIndex.decode(bytes(index.encode())), oids, facts)
    paths = sorted(bodies)
    served = Served(index, *index.serving(paths, oids))
    every = {p: blob_facts(b) for p, b in bodies.items()}
    rest = {path: every[path] for path in served.unserved}
    got = lexical_hits(case["text"], paths, rest, index=served)
    want = lexical_hits(case["text"], paths, every)
    assert (got.lexical, got.matched, got.defines, got.seeds) == (
        want.lexical,
        want.matched,
        want.defines,
        want.seeds,
    )


_PIECES = ["src", "pkg", "a-b", "x.y", ".hidden", "Camel", "snake_case", "ü", "__init__", "", "1"]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), max_size=4).map("/".join), max_size=12))
def test_paths_words_are_each_paths_words(paths: list[str]) -> None:
    paths += [path + ".py" for path in paths]
    assert list(paths_words(paths)) == [path_words(path) for path in paths]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True), max_size=20))
def test_a_defined_names_words_are_its_words(names: list[str]) -> None:
    blob_facts(" ".join(names[::2]).encode())  # (some split just before, some not)
    assert [symbol_words(name) for name in names] == [words(name) for name in names]
    assert symbol_words("größe") == words("größe")


FILES = {
    "src/pkg/retry.py": "def retry_budget(queue):\n    return queue.budget\n",
    "src/pkg/session.py": "class SessionSchema:\n    schema = 'session'\n",
    "src/pkg/core.py": "class Command:\n    def invoke(self, ctx):\n        return ctx\n",
    "tests/test_retry.py": "from pkg.retry import retry_budget\n\ndef test_budget(): ...\n",
    "docs/copy.py": "def retry_budget(queue):\n    return queue.budget\n",  # (a blob twice)
    "CHANGES.rst": "retry budget, session schema, queue worker\n" * 3,
    "src/pkg/data.txt": "\0bin",  # (binary by its content)
}


def _run(repo: Path, task_id: str) -> tuple[list[Any], bytes]:
    """add-tree on a new task: its links, and the index kept of HEAD's tree."""
    with Ledger(repo) as ledger:
        ledger.add_task(task_id, objective="retry budget of the queue worker", acceptance="-")
        ledger.add_tree(task_id)
        links = [
            (e["source"], e["priority"], e["reason"]) for e in ledger.context_entries(task_id)
        ]
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    kept = (repo / ".git" / "hydrate" / "rank-index" / tree).read_bytes()
    assert kept.startswith(HEADER)
    (trailer,) = struct.unpack("<Q", kept[-8:])  # (the body, without its trailer)
    return links, kept[len(HEADER) + 9 : -8 - trailer]


def test_a_first_run_keeps_the_index_of_every_blobs_facts(repo: Path) -> None:
    commit_files(repo, FILES, "files")
    listed = git(repo, "ls-tree", "-r", "HEAD").splitlines()
    oids = {line.split("\t")[1]: line.split()[2] for line in listed}
    facts = {path: blob_facts((repo / path).read_bytes()) for path in oids}
    expected = _reference(oids, facts)
    links, index = _run(repo, "IB-1")
    assert index == expected
    hydrate = repo / ".git" / "hydrate"
    kept_facts = (hydrate / "blob-facts").read_bytes()
    # the index again from the facts cache alone (blobs known, index gone)
    shutil.rmtree(hydrate / "rank-index")
    assert _run(repo, "IB-2") == (links, expected)
    # blobs read again, their facts from the cache (not computed, not kept twice)
    (hydrate / "sha256-cache").unlink()
    shutil.rmtree(hydrate / "rank-index")
    assert _run(repo, "IB-3") == (links, expected)
    assert (hydrate / "blob-facts").read_bytes() == kept_facts
    # a file changed in the work tree is read through git, after the others: out
    # of path order, the same index but for the order of words within a bucket
    shutil.rmtree(hydrate)
    (repo / "src" / "pkg" / "core.py").write_text("changed = 1\n")
    again, index = _run(repo, "IB-4")
    assert again == links and _tables(index) == _tables(expected)


def test_an_index_that_cannot_be_kept_ranks_the_same(repo: Path) -> None:
    commit_files(repo, FILES, "files")
    links, _ = _run(repo, "IK-1")
    hydrate = repo / ".git" / "hydrate"
    shutil.rmtree(hydrate)
    hydrate.mkdir()
    (hydrate / "rank-index").write_text("a file where the folder would be\n")
    with Ledger(repo) as ledger:
        ledger.add_task("IK-2", objective="retry budget of the queue worker", acceptance="-")
        ledger.add_tree("IK-2")
        again = [(e["source"], e["priority"], e["reason"]) for e in ledger.context_entries("IK-2")]
    assert again == links
    assert (hydrate / "rank-index").read_text() == "a file where the folder would be\n"
    assert not [p for p in hydrate.iterdir() if p.name.endswith(".tmp")]
