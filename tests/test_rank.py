"""Ranking: the task's files first, the history before the source revision only,
explicit priorities win, re-ranking moves priorities only, reasons are shown."""

from __future__ import annotations

import json
import random
import re
from operator import eq, gt
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger
from git_hydrate.hydrate.history import read_history
from git_hydrate.hydrate.links import DIFF_TOP, TREE_TOP
from git_hydrate.hydrate.rank import TOP_LEVEL, Candidate, TaskText, Weights, _nearness, rank
from git_hydrate.hydrate.testpaths import tested_module as subject_of
from tests.conftest import commit_files, examples, git, hydrate

TASK = "R-1"


@pytest.fixture
def project(repo: Path) -> Path:
    """A small project whose history couples parser.py with lexer.py."""
    commit_files(
        repo,
        {
            "src/pkg/parser.py": "def parse(): ...\n",
            "src/pkg/lexer.py": "def lex(): ...\n",
            "src/pkg/render.py": "def render(): ...\n" * 40,
            "tests/test_parser.py": "def test_parse(): ...\n",
            "docs/usage.md": "# Usage\n" * 30,
            "CHANGES.md": "# Changes\n",
            "zz_big_unrelated.txt": "x" * 9000,
        },
        "initial layout",
    )
    for i in range(3):
        commit_files(
            repo,
            {"src/pkg/parser.py": f"def parse(): ...  # {i}\n", "src/pkg/lexer.py": f"# {i}\n"},
            f"parser and lexer change together {i}",
        )
    commit_files(repo, {"docs/usage.md": "# Usage v2\n" * 30}, "docs only")
    with Ledger(repo) as ledger:
        ledger.add_task(
            TASK,
            objective="Make the parser accept trailing commas",
            acceptance="parse() accepts them",
            files=["src/pkg/parser.py"],
            tests=["tests/test_parser.py"],
        )
    return repo


def order(repo: Path) -> list[tuple[str, int, str]]:
    with Ledger(repo) as ledger:
        return [(e["source"], e["priority"], e["reason"]) for e in ledger.context_entries(TASK)]


def test_files_in_play_and_tests_pack_first_then_by_relevance(project: Path) -> None:
    with Ledger(project) as ledger:
        result = ledger.add_tree(TASK)
        assert result["added"] == 8  # and the README of the first commit
        entries = ledger.context_entries(TASK)
    sources = [e["source"] for e in entries]
    assert sources[:3] == ["src/pkg/parser.py", "tests/test_parser.py", "src/pkg/lexer.py"]
    # the big file that nothing points at packs last; "changes often" alone is weak
    assert sources[-1] == "zz_big_unrelated.txt"
    assert {e["reason"] for e in entries if e["source"] == "README"} == {"changes often"}
    assert entries[0]["priority"] == TREE_TOP and entries[0]["reason"] == "file in play"
    assert entries[1]["reason"] == "named test"
    assert entries[2]["reason"] == "co-change with src/pkg/parser.py"
    assert all(e["score"] is not None for e in entries)
    # under a budget that holds only a few files, those are the task's own
    with Ledger(project) as ledger:
        packed = ledger.pack(TASK, max_bytes=1200)
    kept = [c["source"] for c in packed["packet"]["context"]]
    assert kept[:2] == ["src/pkg/parser.py", "tests/test_parser.py"]


def test_a_note_at_its_default_priority_packs_before_ranked_files(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree(TASK)
        ledger.add_context(TASK, "The parser is hand-written.", "notes")
        ledger.add_diff(TASK, "HEAD~2..HEAD")
        entries = ledger.context_entries(TASK)
    assert entries[0]["source"] == "notes" and entries[0]["priority"] == 0
    diffs = [e for e in entries if e["source"].startswith("diff:")]
    assert diffs and all(DIFF_TOP >= e["priority"] > TREE_TOP for e in diffs)
    assert entries[1]["source"] == "diff:HEAD~2..HEAD:src/pkg/parser.py"
    assert entries[1]["reason"] == "file in play"


def test_explicit_priority_wins_and_no_rank_is_flat(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree(TASK, ["docs"], priority=7)
        ledger.add_tree(TASK, ["src"], ranked=False)
        by_source = {e["source"]: e for e in ledger.context_entries(TASK)}
    assert by_source["docs/usage.md"]["priority"] == 7
    assert by_source["docs/usage.md"]["score"] is None
    assert by_source["src/pkg/lexer.py"]["priority"] == 0
    assert by_source["src/pkg/lexer.py"]["reason"] == ""


def test_files_in_play_are_attached_outside_the_pathspec_or_reported(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.edit_task(TASK, files=["src/pkg/parser.py", "src/pkg/gone.py"])
        result = ledger.add_tree(TASK, ["docs"])
        sources = {e["source"] for e in ledger.context_entries(TASK)}
        assert {"src/pkg/parser.py", "tests/test_parser.py", "docs/usage.md"} <= sources
        assert {"path": "src/pkg/gone.py", "reason": "missing", "bytes": 0} in result["skipped"]
        # re-running with the same pathspec changes nothing (the anchors are its own)
        again = ledger.add_tree(TASK, ["docs"])
    assert again["changed"] is False and again["unchanged"] == 3


def test_the_history_never_reaches_past_the_source_revision(project: Path) -> None:
    source = git(project, "rev-parse", "HEAD").strip()
    # after the source revision, render.py starts changing with the parser
    for i in range(5):
        commit_files(
            project,
            {"src/pkg/parser.py": f"def parse(): pass  # {i}\n", "src/pkg/render.py": f"# {i}\n"},
            f"later {i}",
        )
    with Ledger(project) as ledger:
        history = read_history(ledger.repo, source)
        for old in history.commits:
            assert git(project, "merge-base", "--is-ancestor", old, source, check=False) == ""
        assert len(history.commits) == 6  # the fixture's first commit and five here
        ledger.add_tree(TASK, rev=source)
        then = {e["source"]: e for e in ledger.context_entries(TASK)}
        ledger.add_tree(TASK)  # HEAD: now render.py did change with the parser
        now = {e["source"]: e for e in ledger.context_entries(TASK)}
    assert then["src/pkg/lexer.py"]["reason"] == "co-change with src/pkg/parser.py"
    assert then["src/pkg/render.py"]["score"] < then["src/pkg/lexer.py"]["score"]
    assert now["src/pkg/render.py"]["score"] > then["src/pkg/render.py"]["score"]


def test_a_history_begun_early_is_the_one_read_when_needed(project: Path) -> None:
    """add-tree begins the source's ``git log`` before it reads the blobs: what it
    gives is what reading the log when needed gives; a log that fails (a commit
    git does not have) is read again when needed, and fails as it always did."""
    from git_hydrate import GitFailed
    from git_hydrate.hydrate.history import begin_history

    head = git(project, "rev-parse", "HEAD").strip()
    with Ledger(project) as ledger:
        begun = begin_history(ledger.repo, head)
        assert begun is not None
        early = read_history(ledger.repo, head, begun)
        cached = project / ".git" / "hydrate" / "history" / head
        assert cached.is_file()
        assert begin_history(ledger.repo, head) is None  # (cached now: nothing begun)
        cached.unlink()
        assert read_history(ledger.repo, head) == early
        missing = "0" * 40
        begun = begin_history(ledger.repo, missing)
        assert begun is not None and begun.output() is None
        with pytest.raises(GitFailed):
            read_history(ledger.repo, missing, begin_history(ledger.repo, missing))


def test_ranking_is_deterministic_across_clones(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(project), str(other))
    git(other, "fetch", "-q", "origin", "refs/hydrate/*:refs/hydrate/*")
    for path in (project, other):
        with Ledger(path, clock=lambda: 1_700_000_000) as ledger:
            ledger.add_tree(TASK, rev="main" if path == project else "origin/main")
    assert order(project) == order(other)


def test_rank_recomputes_priorities_only_in_one_commit(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree(TASK)
        before = {e["source"]: e for e in ledger.context_entries(TASK)}
        tip = git(project, "rev-parse", f"refs/hydrate/tasks/{TASK}").strip()
        ledger.edit_task(TASK, files=["src/pkg/render.py"], tests=[])
        result = ledger.rank(TASK)
        assert result["changed"] and result["reranked"] > 0 and result["missing"] == []
        after = {e["source"]: e for e in ledger.context_entries(TASK)}
        assert ledger.rank(TASK)["changed"] is False
    assert after["src/pkg/render.py"]["reason"] == "file in play"
    assert after["src/pkg/render.py"]["priority"] == TREE_TOP
    for source, entry in after.items():
        assert (entry["hash"], entry["oid"], entry["size"]) == (
            before[source]["hash"],
            before[source]["oid"],
            before[source]["size"],
        )
    log = git(project, "log", "--format=%s", f"{tip}..refs/hydrate/tasks/{TASK}").split("\n")
    assert [line for line in log if line.startswith("hydrate: rank")] == [
        f"hydrate: rank {TASK} ({result['reranked']} reranked)"
    ]


def test_reasons_are_shown_and_the_cli_ranks(project: Path) -> None:
    assert hydrate(project, "add-tree", TASK).returncode == 0
    shown = hydrate(project, "show", TASK)
    assert "src/pkg/parser.py  (file in play)" in shown.stdout
    assert "(co-change with src/pkg/parser.py)" in shown.stdout
    data = json.loads(hydrate(project, "show", TASK, "--json").stdout)
    assert data["context"][0]["reason"] == "file in play"
    assert 0 < data["context"][2]["score"] <= 1
    hydrate(project, "task-edit", TASK, "--file-in-play", "src/pkg/new.py")
    ranked = hydrate(project, "rank", TASK)
    assert ranked.returncode == 0, ranked
    assert "not attached: src/pkg/new.py (run: git hydrate add-tree R-1)" in ranked.stdout
    bad = hydrate(project, "rank", TASK, "--rev", "nope")
    assert bad.returncode == 1 and bad.stderr == (
        "error: 'nope' does not name a commit in this repository\n"
    )


def test_a_deepened_shallow_clone_reads_its_history_anew(project: Path, tmp_path: Path) -> None:
    """A shallow clone's history of HEAD is one commit at depth 2 (the second is the
    cut, left out); once deepened, the same commit has its whole history, read anew
    (the cache is named by the cut), so a task ranks as in a full clone."""
    for i in range(3):
        commit_files(project, {f"src/pkg/more_{i}.py": f"x = {i}\n"}, f"more {i}")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{project}", str(shallow))
    head = git(shallow, "rev-parse", "HEAD").strip()
    with Ledger(shallow) as ledger:
        assert len(read_history(ledger.repo, head).commits) == 1
    git(shallow, "fetch", "-q", "--unshallow")
    with Ledger(shallow) as ledger, Ledger(project) as full:
        deep = read_history(ledger.repo, head)
        assert deep == read_history(full.repo, head) and len(deep.commits) > 1


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b/c", "b/d", "tests"]), st.integers(1, 5000)),
        min_size=1,
        max_size=12,
    ),
    st.integers(0, 2**32),
)
def test_rank_is_a_pure_function_of_its_inputs(files: list[tuple[str, int]], seed: int) -> None:
    candidates = [Candidate(f"{d}/f{i}.py", size) for i, (d, size) in enumerate(files)]
    history = [[c.path for c in candidates[: i + 1]] for i in range(len(candidates))]
    task = TaskText("change f0", files_in_play=[candidates[0].path])
    first = rank(candidates, task, history)
    shuffled = candidates[:]
    random.Random(seed).shuffle(shuffled)
    assert rank(shuffled, task, history) == first
    assert all(0 <= r.level <= TOP_LEVEL for r in first.values())
    assert first[candidates[0].path].level == TOP_LEVEL
    assert all(r.level < TOP_LEVEL for p, r in first.items() if p != candidates[0].path)


def test_a_path_given_twice_ranks_once_with_its_last_size() -> None:
    once = [Candidate("src/a.py", 50_000), Candidate("src/b.py", 100), Candidate("c.md", 9)]
    twice = [Candidate("src/a.py", 7), *once, Candidate("c.md", 3), Candidate("c.md", 9)]
    task = TaskText("change a", files_in_play=["src/b.py"])
    history = [["src/a.py", "src/b.py"], ["c.md"]]
    found = rank(twice, task, history)
    assert list(found) == ["c.md", "src/a.py", "src/b.py"]
    assert found == rank(once, task, history)
    # (the size counts: the large file ranks below its small twin)
    assert (
        rank([once[0]], task, history)["src/a.py"].level
        < rank([Candidate("src/a.py", 7)], task, history)["src/a.py"].level
    )


def test_a_file_past_16_kib_ranks_as_if_it_were_16_kib() -> None:
    """The prompt outlines a file ranked high that does not fit whole, and makes a
    large one wait where smaller ones fit: past 16 KiB, size no longer sinks a file.
    A 200 KB module that changed with the file in play every time ranks above a
    2 KB one that did once (zod's 86 KiB core/compile.ts, rank --suggest's first,
    ranked 34th and was in no prompt); below the cap, size still counts."""
    filler = [Candidate(f"lib/f{i}.py", 100) for i in range(60)]
    big, small = "src/big.py", "src/small.py"
    candidates = [Candidate("src/a.py", 100), Candidate(big, 200_000), Candidate(small, 2_000)]
    candidates += filler
    history = [*[["src/a.py", big]] * 3, ["src/a.py", small], *[[f.path] for f in filler[:30]]]
    task = TaskText("change a", files_in_play=["src/a.py"])
    found = rank(candidates, task, history)
    assert found[big].level > found[small].level
    # (16 KiB of it rank as the whole does; smaller, it ranks higher still)
    for size, compared in ((16_384, eq), (8_000, gt)):
        resized = [Candidate(big, size) if c.path == big else c for c in candidates]
        assert compared(rank(resized, task, history)[big].level, found[big].level)
    uncapped = rank(candidates, task, history, Weights(size_cap=0))
    assert uncapped[small].level > uncapped[big].level


def test_test_and_module_naming_pair_up() -> None:
    candidates = [
        Candidate("src/click/termui.py", 100),
        Candidate("tests/test_termui.py", 100),
        Candidate("docs/termui.rst", 100),
        Candidate("web/widget.js", 100),
        Candidate("web/widget.test.js", 100),
    ]
    ranks = rank(candidates, TaskText("x", files_in_play=["src/click/termui.py"]), [])
    assert ranks["tests/test_termui.py"].reason == "test of src/click/termui.py"
    assert ranks["docs/termui.rst"].reason != "test of src/click/termui.py"
    ranks = rank(candidates, TaskText("x", files_in_play=["web/widget.test.js"]), [])
    assert ranks["web/widget.js"].reason == "tested by web/widget.test.js"


def test_a_named_test_pulls_in_the_module_it_tests() -> None:
    # vite: a ticket naming its test (`--test .../__tests__/pluginContainer.spec.ts`)
    # left the module under test, server/pluginContainer.ts, 88th of 2,360: a test in
    # play paired with its module, a named test with none
    test = "packages/vite/src/node/server/__tests__/pluginContainer.spec.ts"
    source = "packages/vite/src/node/server/pluginContainer.ts"
    candidates = [Candidate(source, 100), Candidate(test, 100), Candidate("src/other.ts", 100)]
    ranks = rank(candidates, TaskText("x", tests=[test]), [])
    assert ranks[test].reason == "named test"
    assert ranks[source].reason == f"tested by {test}"
    assert ranks[source].level > ranks["src/other.ts"].level


@pytest.mark.parametrize(
    "test", ["crates/core/tests/json.rs", "web/__tests__/json.js", "tests/unit/json.py"]
)
def test_a_test_only_its_folder_names_pairs_with_nothing(test: str) -> None:
    """Imports file ``tests/json.rs`` among a task's tests (its folder says so), but
    ranking pairs by name only: the files of such a test's stem are mostly namesakes
    (4% changed with it in ten repositories' history, against 33% for ``test_x``:
    benchmarks/folder_tests_pairing.py)."""
    stem = test.rpartition("/")[2].partition(".")[0]
    ext = test.rpartition(".")[2]
    source = f"src/{stem}.{ext}"
    candidates = [Candidate(source, 100), Candidate(test, 100)]
    ranks = rank(candidates, TaskText("x", tests=[test]), [])
    assert ranks[test].reason == "named test"
    assert ranks[source].reason == "no signal"
    ranks = rank(candidates, TaskText("x", files_in_play=[source]), [])
    assert not ranks[test].reason.startswith("test of")


@pytest.mark.parametrize(
    ("source", "test"),
    [
        ("gson/src/main/java/g/Gson.java", "gson/src/test/java/g/GsonTest.java"),
        ("moshi/src/main/java/m/Moshi.kt", "moshi/src/test/java/m/MoshiTests.kt"),
        ("src/main/groovy/Parser.groovy", "src/test/groovy/ParserSpec.groovy"),
        ("lib/rack/request.rb", "test/spec_request.rb"),
        ("mkdocs/config/base.py", "mkdocs/tests/base_tests.py"),
        ("lib/plug/conn.ex", "test/plug/conn_test.exs"),
        ("lib/Mojo/ByteStream.pm", "t/mojo/bytestream.t"),
        ("lib/Mojo/BaseUtil.pm", "t/mojo/base_util.t"),
        ("R/expect-setequal.R", "tests/testthat/test-expect-setequal.R"),
        ("src/cowboy_http2.erl", "test/cowboy_http2_SUITE.erl"),
        ("src/leiningen/compile.clj", "test/leiningen/test/compile.clj"),
        ("src/nimblepkg/lockfile.nim", "tests/tlockfile.nim"),
        ("core/src/main/scala/circe/Json.scala", "tests/src/test/scala/circe/JsonSuite.scala"),
    ],
)  # fmt: skip
def test_tests_of_other_ecosystems_pair_with_their_sources(source: str, test: str) -> None:
    """Only test_x, x_test, x.test and x.spec paired: Java's and Kotlin's XTest(s), a
    Spock XSpec, rack's spec_x and mkdocs' x_tests did not (helper rank4's finding);
    nor Elixir's x_test.exs (not x.ex's extension) or Perl's t/x.t (helper rank11's);
    nor R's tests/testthat/test-x.R, Erlang's x_SUITE.erl, Nim's tests/tx.nim or
    Clojure's older test/ns/test/x.clj (helper rank12's); nor Scala's XSuite (rank13's)."""
    others = [Candidate("src/Contest.java", 100), Candidate("src/Latest.java", 100)]
    candidates = [Candidate(source, 100), Candidate(test, 100), *others]
    ranks = rank(candidates, TaskText("x", files_in_play=[source]), [])
    assert ranks[test].reason == f"test of {source}"
    assert ranks[source].reason != f"tested by {test}"
    ranks = rank(candidates, TaskText("x", files_in_play=[test]), [])
    assert ranks[source].reason == f"tested by {test}"
    assert not ranks["src/Contest.java"].reason.startswith(("test of", "tested by"))


@pytest.mark.parametrize(
    "path",
    ["src/test-helpers.js", "R/test-that.R", "test/__init__.py", "test/conftest.py",
     "src/Suite.erl", "test/leiningen/test/index.clj", "pkg/tests/README.md",
     "src/tables.nim", "crates/core/tests/json.rs", "okhttp/src/main/kotlin/CipherSuite.kt"],
)  # fmt: skip
def test_names_like_a_tests_that_are_no_tests(path: str) -> None:
    """``test-`` names a test only in a test folder (testthat's own R/test-that.R is
    a module); a package file in a nested test folder, a test folder at the top or
    one of a crate (not inside a test folder),
    names no module by its name alone."""
    assert subject_of(path) is None


def test_prompt_v_says_why_each_omitted_file_ranked_where_it_did(project: Path) -> None:
    assert hydrate(project, "add-tree", TASK).returncode == 0
    result = hydrate(project, "prompt", TASK, "--max-bytes", "1500", "-v")
    assert result.returncode == 0, result
    lines = result.stderr.splitlines()
    assert any(
        # (docs/usage.md changed with parser.py only in the first commit, which added
        # every file: a sweep in a repository this small)
        line.endswith("docs/usage.md (byte_budget; ranked: changes often)")
        for line in lines
    ), lines


def test_the_main_reason_is_the_first_strongest_signal_by_name() -> None:
    from git_hydrate.hydrate.rank import _SIGNALS

    assert list(_SIGNALS) == sorted(_SIGNALS)
    # every signal rank() weighs is named (a reason can only name what it knows)
    source = Path(rank.__code__.co_filename).read_text(encoding="utf-8")
    table = source.split("table = (", 1)[1].split("\n    )\n", 1)[0]
    weighed = re.findall(r'^\s+\("(\w+)", ', table, re.M)
    assert sorted(weighed) == list(_SIGNALS)


def _proximity_pairwise(path: str, in_play: list[str]) -> float:
    """The directory signal as it was defined, every file in play against ``path``:
    1 in the same folder, halving with each step apart, 0 with no folder in common."""
    best = 0.0
    for other in in_play:
        a, b = path.rpartition("/")[0], other.rpartition("/")[0]
        if a == b:
            return 1.0
        pa, pb = a.split("/") if a else [], b.split("/") if b else []
        common = next(
            (i for i, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y),
            min(len(pa), len(pb)),
        )
        if common:
            best = max(best, 0.5 ** (len(pa) + len(pb) - 2 * common))
    return best


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "a b"]), max_size=4), max_size=12),
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "a b"]), max_size=4), max_size=5),
)
def test_the_nearest_file_in_play_is_found_by_folders(
    folders: list[list[str]], in_play_folders: list[list[str]]
) -> None:
    # each path against each file in play took 10 s at 3,000 files and 1,000 in play
    paths = [f"{'/'.join(parts)}/f{i}.py".lstrip("/") for i, parts in enumerate(folders)]
    in_play = [f"{'/'.join(parts)}/p{i}.py".lstrip("/") for i, parts in enumerate(in_play_folders)]
    near = _nearness(paths, in_play)
    assert near == {path: _proximity_pairwise(path, in_play) for path in paths}


def test_many_named_tests_keep_their_order_below_the_files_in_play() -> None:
    tests = [f"tests/test_m{i:03d}.py" for i in range(150)]
    candidates = [Candidate(path, 100) for path in [*tests, "src/a.py"]]
    task = TaskText("x", files_in_play=["src/a.py", tests[5]], tests=tests[::-1])
    ranks = rank(candidates, task, [])
    assert ranks["src/a.py"].level == ranks[tests[5]].level == TOP_LEVEL
    named = [t for t in tests[::-1] if t != tests[5]]
    assert [ranks[t].level for t in named] == [
        TOP_LEVEL - 1 - min(at, 99) for at in range(len(named))
    ]
    assert all(ranks[t].reason == "named test" for t in named)
