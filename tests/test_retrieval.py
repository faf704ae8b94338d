"""Retrieval from the objective (issue 27): ranking reads contents through the
per-blob facts cache, finds the file a task describes when path words mislead,
suggests files in play, and a second add-tree on an unchanged tree reads no body."""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger
from git_hydrate.hydrate.facts import FactsCache
from git_hydrate.hydrate.history import read_history, without_templates
from git_hydrate.hydrate.mentions import (
    _COLONS_MENTION,
    _FOUND_NAMES,
    _files_named,
    _files_so_named,
    _package,
)
from git_hydrate.hydrate.mentions import MENTION as _MENTION
from git_hydrate.hydrate.mentions import mentions as _mentions
from git_hydrate.hydrate.rank import Candidate, Ranked, TaskText, Weights, rank
from git_hydrate.hydrate.retrieval import lexical_hits, spelled_names
from git_hydrate.hydrate.terms import blob_facts, tokenize
from git_hydrate.store.confined import ConfinedTree
from git_hydrate.store.objects import Objects
from tests.conftest import commit_files, git, hydrate

OBJECTIVE = "Prompt with hide_input shows the default value"

#: A project whose path words point at the wrong files: the stubs are named after
#: the objective's words, the code that shows the default lives in termui.py.
FILES = {
    "src/pkg/termui.py": (
        '"""Terminal user interface helpers."""\n\n'
        "def prompt(text, default=None, hide_input=False):\n"
        '    """Ask for input; with hide_input the typed text is not echoed and the\n'
        '    default value must not be shown either."""\n'
        "    shown_default = None if hide_input else default\n"
        "    return _build_prompt(text, shown_default)\n\n\n"
        "def _build_prompt(text, default):\n"
        "    return text if default is None else f'{text} [{default}]'\n"
    ),
    "src/pkg/core.py": "class Command:\n    def invoke(self, ctx):\n        return ctx\n" * 3,
    "docs/typing/prompt_value_shows.py": "x: int = 1\n",
    "docs/typing/default_hide_input.py": "y: str = ''\n",
    "tests/test_termui.py": (
        "from pkg.termui import prompt\n\n\ndef test_prompt_hides_default():\n"
        "    assert prompt('Password', default='x', hide_input=True) == 'Password'\n"
    ),
    "tests/test_core.py": "from pkg.core import Command\n\n\ndef test_invoke():\n    ...\n",
}


@pytest.fixture
def project(repo: Path) -> Path:
    commit_files(repo, FILES, "layout")
    for i in range(3):
        commit_files(
            repo,
            {
                "src/pkg/termui.py": FILES["src/pkg/termui.py"] + f"# {i}\n",
                "tests/test_termui.py": FILES["tests/test_termui.py"] + f"# {i}\n",
            },
            f"termui and its test {i}",
        )
    with Ledger(repo) as ledger:
        ledger.add_task("OBJ-1", objective=OBJECTIVE, acceptance="-")
    return repo


def sources(repo: Path, task_id: str) -> list[tuple[str, str]]:
    with Ledger(repo) as ledger:
        return [(e["source"], e["reason"]) for e in ledger.context_entries(task_id)]


def test_terms_split_identifiers_and_stem() -> None:
    assert tokenize("get_metavarName completions") == [
        "get_metavarname",
        "metavarname",
        "metavar",
        "name",
        "completion",
    ]
    facts = blob_facts(b"class ShellComplete:\n    def get_completions(self): ...\n")
    assert facts.text and facts.symbols == ["ShellComplete", "get_completions"]
    assert facts.terms["completion"] == 1 and facts.terms["shellcomplete"] == 1
    assert not blob_facts(b"\x00\x01binary").text


def test_objective_only_finds_the_described_file_not_the_path_words(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree("OBJ-1")
    ranked = sources(project, "OBJ-1")
    order = [path for path, _reason in ranked]
    # the module and its test first, before the stubs whose paths hold the words
    assert sorted(order[:2]) == ["src/pkg/termui.py", "tests/test_termui.py"], ranked
    reasons = dict(ranked)
    assert reasons["src/pkg/termui.py"] == "defines prompt, _build_prompt"
    # the test is found by its own words too, else through its module
    assert reasons["tests/test_termui.py"].startswith(("defines", "tested by", "co-change"))


def test_paths_the_objective_names_rank_high(repo: Path) -> None:
    commit_files(repo, FILES, "layout")
    with Ledger(repo) as ledger:
        ledger.add_task("OBJ-2", objective="Speed up core.py when invoking", acceptance="-")
        ledger.add_tree("OBJ-2")
    ranked = dict(sources(repo, "OBJ-2"))
    assert ranked["src/pkg/core.py"] == "named in the task ('core.py')"


def test_the_same_inputs_give_the_same_order(project: Path) -> None:
    facts = {path: blob_facts(text.encode()) for path, text in FILES.items()}
    first = lexical_hits(OBJECTIVE, sorted(FILES), facts)
    again = lexical_hits(OBJECTIVE, sorted(FILES, reverse=True), dict(reversed(facts.items())))
    assert first == again and first.seeds[0][0] == "src/pkg/termui.py"


def _ranked(
    text: str, in_play: list[str], history: list[list[str]], subjects: list[str]
) -> dict[str, Ranked]:
    facts = {path: blob_facts(body.encode()) for path, body in FILES.items()}
    candidates = [Candidate(path, len(body)) for path, body in FILES.items()]
    task = TaskText(text, files_in_play=in_play)
    return rank(candidates, task, history, facts=facts, subjects=subjects)


def test_past_commits_like_the_task_point_at_the_files_they_changed() -> None:
    # the words are in no file: only a past commit's subject matches them
    text = "Windows console flickers when the spinner redraws"
    history = [
        ["src/pkg/core.py", "tests/test_core.py"],
        ["src/pkg/termui.py", "tests/test_termui.py"],
        ["src/pkg/core.py"],
    ]
    subjects = ["Speed up invoke", "Stop the spinner flicker on the Windows console", "tidy"]
    alone = _ranked(text, [], history, subjects)
    assert alone["src/pkg/termui.py"].reason == "changed by similar past commits"
    assert alone["src/pkg/termui.py"].score > alone["src/pkg/core.py"].score
    # without the subjects, or with a file in play, the signal is absent
    assert _ranked(text, [], history, []) == _ranked(text, [], history, [""] * 3)
    named = _ranked(text, ["src/pkg/core.py"], history, subjects)
    assert named["src/pkg/termui.py"].reason != "changed by similar past commits"


def test_a_like_commit_of_many_files_lifts_each_of_them_less() -> None:
    # httpie: "Standalone binary documentation" named no file; a like packaging commit
    # of many files put its 97-byte scripts first, each lifted as much as a file of a
    # like commit of two: the more files a like commit changed, the less each says
    text = "Fix the spinner flicker"
    history = [
        [f"packaging/script{i}.sh" for i in range(12)],
        ["src/pkg/termui.py", "tests/test_termui.py"],
    ]
    subjects = ["Fix the spinner flicker", "Fix the spinner flicker"]
    files = [path for commit in history for path in commit]
    found = rank(
        [Candidate(path, 100) for path in files], TaskText(text), history, subjects=subjects
    )
    assert found["src/pkg/termui.py"].score > 1.5 * found["packaging/script0.sh"].score
    assert found["packaging/script0.sh"].reason == "changed by similar past commits"
    # as before when every commit's files take its whole match
    flat = rank(
        [Candidate(path, 100) for path in files],
        TaskText(text),
        history,
        Weights(past_spread=0),
        subjects=subjects,
    )
    assert flat["packaging/script0.sh"].score == pytest.approx(
        flat["src/pkg/termui.py"].score, abs=0.01
    )


def test_the_history_keeps_each_commit_s_subject(project: Path) -> None:
    with Ledger(project) as ledger:
        head = ledger.repo.rev_parse("HEAD")
        assert head is not None
        read = read_history(ledger.repo, head)
        again = read_history(ledger.repo, head)  # from the cache
    assert read.subjects[:2] == ["termui and its test 2", "termui and its test 1"]
    assert len(read.subjects) == len(read.commits) == len(read.paths)
    assert again == read


def test_changes_often_is_said_and_does_not_outrank_the_described_file() -> None:
    # core.py changes in nearly every commit but never with the file the objective
    # describes: it is not that file's co-change partner, and it ranks below it
    history = [["src/pkg/core.py", "tests/test_core.py"]] * 6 + [["src/pkg/termui.py"]]
    found = _ranked(OBJECTIVE, [], history, ["x"] * 7)
    assert found["src/pkg/core.py"].reason == "changes often"
    assert found["src/pkg/termui.py"].score > found["src/pkg/core.py"].score
    assert found["src/pkg/termui.py"].level > found["src/pkg/core.py"].level


def test_trailers_and_addresses_are_not_the_task_s_words() -> None:
    facts = {
        "AUTHORS.txt": blob_facts(b"Nate Prewitt <nate@example.org>\n"),
        "src/pkg/termui.py": blob_facts(FILES["src/pkg/termui.py"].encode()),
    }
    text = "Hide the prompt input\n\nCo-authored-by: Nate Prewitt <nate@example.org>\n"
    hits = lexical_hits(text, sorted(facts), facts)
    assert "AUTHORS.txt" not in hits.lexical and "src/pkg/termui.py" in hits.lexical
    assert lexical_hits("mail nate@example.org", sorted(facts), facts).lexical == {}


#: What the running test records of the files this process opens (see ``_audit``).
_SEEN: list[list[str]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    """Record every file this process opens while a test listens (an audit hook
    cannot be removed: it records only then)."""
    if _SEEN and event == "open" and isinstance(args[0], str | bytes):
        _SEEN[-1].append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def _reads(repo: Path, run: Callable[[], object]) -> list[str]:
    """Every body ``run`` reads: the work tree files it opens (from the interpreter's
    audit events) and the blobs it asks the object reader for (the real readers run,
    recorded on the way in)."""
    asked: list[str] = []
    monkeypatch = pytest.MonkeyPatch()

    def recording(name: str) -> None:
        real = getattr(Objects, name)

        def read(self: Objects, oids: Any, *args: Any) -> Any:
            asked.extend([oids] if isinstance(oids, bytes | str) else oids)
            return real(self, oids, *args)

        monkeypatch.setattr(Objects, name, read)

    for name in ("stream_blobs", "read_blob", "blob_digest"):
        recording(name)
    opening = ConfinedTree.open_fd

    def open_fd(self: ConfinedTree, path: bytes) -> int:
        # (a work-tree file is opened by its name relative to its folder's
        # descriptor: the audit event names no more than that)
        _SEEN[-1].append(os.fsdecode(os.path.join(self.top, path)))
        return opening(self, path)

    monkeypatch.setattr(ConfinedTree, "open_fd", open_fd)
    _SEEN.append([])
    try:
        run()
    finally:
        opened = _SEEN.pop()
        monkeypatch.undo()
    blobs = set(git(repo, "ls-tree", "-r", "--format=%(objectname)", "HEAD").split())
    top = str(repo.resolve())
    in_work_tree = [  # (the top itself is a folder opened, not a body read)
        f for f in opened if f.startswith(top + "/") and not f.startswith(top + "/.git")
    ]
    return in_work_tree + [os.fsdecode(oid) for oid in asked if os.fsdecode(oid) in blobs]


def test_second_add_tree_on_an_unchanged_tree_reads_no_body(project: Path) -> None:
    def add_tree(task_id: str) -> None:
        with Ledger(project) as ledger:
            ledger.add_task(task_id, objective=OBJECTIVE, acceptance="-")
            ledger.add_tree(task_id)

    first = _reads(project, lambda: add_tree("OBJ-A"))
    assert len(first) >= len(FILES)  # every body, once: the reads are seen
    assert (project / ".git" / "hydrate" / "blob-facts").is_file()
    assert _reads(project, lambda: add_tree("OBJ-B")) == []
    assert sources(project, "OBJ-B") == sources(project, "OBJ-A")
    # a changed file is the one body read
    commit_files(project, {"src/pkg/core.py": "class Command:\n    pass\n"}, "core")
    core = git(project, "rev-parse", "HEAD:src/pkg/core.py").strip()
    third = _reads(project, lambda: add_tree("OBJ-C"))
    assert third and all(what.endswith("core.py") or what == core for what in third), third


def test_a_damaged_facts_cache_is_a_miss_and_is_rewritten(project: Path) -> None:
    with Ledger(project) as ledger:
        ledger.add_tree("OBJ-1")
    cache = project / ".git" / "hydrate" / "blob-facts"
    good = cache.read_bytes()
    damaged = [good[: len(good) // 2], b"# git-hydrate blob-facts 1\n\xc1garbage", b"", b"x"]
    for i, damage in enumerate(damaged):
        cache.write_bytes(damage)
        # (a kept word index would answer without the facts: this is about the facts)
        shutil.rmtree(project / ".git" / "hydrate" / "rank-index")
        assert FactsCache(str(cache)).get("0" * 40) is None
        with Ledger(project) as ledger:
            ledger.add_task(f"OBJ-D{i}", objective=OBJECTIVE, acceptance="-")
            ledger.add_tree(f"OBJ-D{i}")
        assert sources(project, f"OBJ-D{i}") == sources(project, "OBJ-1")
        assert cache.read_bytes() == good  # rebuilt whole


def test_rank_suggest_text_and_json(project: Path) -> None:
    out = hydrate(project, "rank", "OBJ-1", "--suggest")
    assert out.returncode == 0, out
    lines = out.stdout.splitlines()
    assert lines[0].split() == ["src/pkg/termui.py", "1.00", "defines", "prompt,", "_build_prompt"]
    assert out.stderr.startswith("accept: git hydrate task-edit OBJ-1 --file-in-play ")
    as_json = hydrate(project, "rank", "OBJ-1", "--suggest", "--json")
    assert as_json.returncode == 0, as_json
    data = json.loads(as_json.stdout)
    assert sorted(data) == ["commit", "in_play", "suggestions", "task_id", "unread"]
    assert data["task_id"] == "OBJ-1" and data["in_play"] == [] and data["unread"] == 0
    assert data["commit"] == git(project, "rev-parse", "HEAD").strip()
    first = data["suggestions"][0]
    reason = "defines prompt, _build_prompt"
    assert first == {"path": "src/pkg/termui.py", "score": 1.0, "reason": reason}
    # accepted: the file is in play and no longer suggested; nothing else was written
    tip = git(project, "rev-parse", "refs/hydrate/tasks/OBJ-1").strip()
    hydrate(project, "rank", "OBJ-1", "--suggest")
    assert git(project, "rev-parse", "refs/hydrate/tasks/OBJ-1").strip() == tip
    edit = hydrate(project, "task-edit", "OBJ-1", "--file-in-play", "src/pkg/termui.py")
    assert edit.returncode == 0, edit
    again = json.loads(hydrate(project, "rank", "OBJ-1", "--suggest", "--json").stdout)
    assert again["in_play"] == ["src/pkg/termui.py"]
    assert "src/pkg/termui.py" not in [s["path"] for s in again["suggestions"]]


def test_rank_suggest_with_nothing_to_match(repo: Path) -> None:
    commit_files(repo, FILES, "layout")
    with Ledger(repo) as ledger:
        ledger.add_task("OBJ-3", objective="zzzqqq", acceptance="-")
    out = hydrate(repo, "rank", "OBJ-3", "--suggest")
    assert out.returncode == 0 and "no file suggested" in out.stdout
    data = json.loads(hydrate(repo, "rank", "OBJ-3", "--suggest", "--json").stdout)
    assert data["suggestions"] == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rank", "NOPE-1", "--suggest"], "NOPE-1"),
        (["rank", "OBJ-1", "--suggest", "--rev", "no-such-rev"], "no-such-rev"),
        (["rank", "OBJ-1", "--suggest", "--rev", "-x"], "invalid revision"),
        (["rank", "bad id!", "--suggest"], "bad id!"),
    ],
)
def test_rank_suggest_bad_input(project: Path, args: list[str], message: str) -> None:
    out = hydrate(project, *args)
    assert out.returncode != 0 and out.stdout == ""
    assert out.stderr.startswith("error: ") and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_rank_suggest_accept_line_runs_as_printed(repo: Path) -> None:
    """The accept line keeps the files in play (with their notes: --file-in-play
    replaces the list), quotes a path with a space, spells one holding ':' so that
    it reads back whole, and leaves out a named test."""
    commit_files(
        repo,
        {
            "src/parser.py": "def parse(): pass\n",
            "uploader.py": "def upload(): retry()\n",
            "c:olon/upload retry:x.txt": "upload retry notes\n",
            "tests/test_uploader.py": "def test_upload(): pass\n",
        },
        "files",
    )
    hydrate(
        repo,
        *("task-add", "T-2", "--objective", "Fix uploader.py retries; see test_uploader.py"),
        *("--acceptance", "ok", "--file-in-play", "src/parser.py:keep this note"),
        *("--test", "tests/test_uploader.py"),
    )
    out = hydrate(repo, "rank", "T-2", "--suggest")
    assert out.returncode == 0, out
    suggested = [line.split("  ")[0] for line in out.stdout.splitlines()]
    assert {"uploader.py", "c:olon/upload retry:x.txt"} <= set(suggested), suggested
    assert "tests/test_uploader.py" not in suggested
    line = out.stderr.strip().removeprefix("accept: ")
    path = f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"
    env = dict(os.environ, PATH=path)  # (git finds git-hydrate there, as installed)
    run = subprocess.run(["bash", "-c", line], cwd=repo, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run
    files = json.loads(hydrate(repo, "show", "T-2", "--json").stdout)["files"]
    assert files[0] == {"path": "src/parser.py", "note": "keep this note"}
    assert {f["path"] for f in files} == {"src/parser.py", *suggested}


def test_a_name_the_task_spells_out_ranks_the_file_that_defines_it() -> None:
    # auth.py is small and full of the words; sessions.py is large and defines the
    # name the task spells as code does: it is as good as named
    sessions = "class Session:\n" + "    def send(self, request):\n        return request\n" * 40
    sessions += "    def rebuild_auth(self, prepared, response):\n        return prepared\n"
    files = {
        "src/pkg/sessions.py": sessions,
        "src/pkg/auth.py": "# auth: rebuild the auth header\nAUTH = 'auth'\n",
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    candidates = [Candidate(path, len(body)) for path, body in files.items()]
    text = "rebuild_auth keeps the auth header on a redirect"
    found = rank(candidates, TaskText(text), [], facts=facts)
    assert found["src/pkg/sessions.py"].level > found["src/pkg/auth.py"].level
    assert found["src/pkg/sessions.py"].reason == "defines rebuild_auth (named in the task)"
    off = rank(candidates, TaskText(text), [], Weights(symbol=0.0), facts=facts)
    assert off["src/pkg/sessions.py"].level < off["src/pkg/auth.py"].level
    # plain words name no file this way, whatever a file defines
    plain = rank(candidates, TaskText("rebuild auth"), [], facts=facts)
    assert plain["src/pkg/sessions.py"].reason != "defines rebuild_auth (named in the task)"
    hits = lexical_hits("the session and Session", sorted(files), facts)
    assert spelled_names("the session and Session", hits.defines) == {}
    hits = lexical_hits(text, sorted(files), facts)
    assert spelled_names(text, hits.defines) == {"src/pkg/sessions.py": "rebuild_auth"}


def test_rank_suggest_before_the_first_commit_names_no_option_rank_lacks(tmp_path: Path) -> None:
    """add-tree's way out of an unborn HEAD is --worktree, which rank does not take."""
    repo = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(repo))
    assert (
        hydrate(repo, "task-add", "E-1", "--objective", "o", "--acceptance", "a").returncode == 0
    )
    out = hydrate(repo, "rank", "E-1", "--suggest")
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == "error: HEAD names no commit yet; nothing to rank: commit first\n"
    added = hydrate(repo, "add-tree", "E-1")
    assert added.stderr.endswith("commit first, or take the work tree with --worktree\n")


def test_a_past_commit_sharing_one_common_word_lifts_its_files_little(repo: Path) -> None:
    # psf/requests: "Add local TLS server" added 30 small certificate files; a task
    # about retries whose words match no past commit better than by "server" got
    # them packed before the file defining the HTTPAdapter it names
    adapter = (
        "class HTTPAdapter:\n"
        '    """Sends requests; max_retries sets how often a failed connection retries."""\n\n'
        "    def __init__(self, max_retries=0):\n"
        "        self.max_retries = max_retries\n"
    ) + "".join(f"    def send_{i}(self, request):\n        pass\n" for i in range(300))
    commit_files(repo, {"src/pkg/adapters.py": adapter}, "Add the adapter")
    certs = {f"tests/certs/{name}/Makefile": "all:\n\topenssl req\n" for name in "abcdef"}
    commit_files(repo, certs, "Add local TLS server")
    for i in range(8):
        commit_files(repo, {"src/pkg/adapters.py": adapter + f"# {i}\n"}, f"Tidy the adapter {i}")
    objective = (
        "As a user I'd like to pass retries=3 to get() so flaky servers don't break my "
        "script, without mounting an HTTPAdapter myself."
    )
    with Ledger(repo) as ledger:
        ledger.add_task("RT-1", objective=objective, acceptance="get(url, retries=3) retries")
        ledger.add_tree("RT-1")
        entries = ledger.context_entries("RT-1")
    order = [e["source"] for e in entries]
    assert order[0] == "src/pkg/adapters.py", order
    assert entries[0]["reason"] == "defines HTTPAdapter (named in the task)"
    # the certificates' only signal is that one word: they still rank, below it
    reasons = {e["source"]: e["reason"] for e in entries}
    assert reasons["tests/certs/a/Makefile"] == "changed by similar past commits"


def test_names_declared_with_modifiers_or_a_receiver_are_defined() -> None:
    # Java, Swift, Kotlin, PHP, C# and TypeScript put modifiers before the keyword, Go
    # its receiver after it: on main a Java file defined nothing, Go's methods nothing
    sources = {
        "Session.swift": "public final class Session {\n    open func request() {}\n}\n",
        "Empty.swift": "public struct Empty: Codable {}\nprivate protocol Marker {}\n",
        "Element.java": "package org.x;\n\npublic class Element extends Node {\n}\n",
        "State.java": "abstract enum State {\n    private static final class Inner {}\n}\n",
        "server.go": "func (s *Server) ServeHTTP(w Writer, r *Request) {\n}\nfunc plain() {}\n",
        "Adapter.kt": "internal data class Options(val x: Int)\noverride fun fromJson() {}\n",
        "Handler.php": "final class StreamHandler\n{\n    public function write(): void\n",
        "app.ts": "export default async function App() {}\nexport abstract class Base {}\n",
    }
    defined = {name: blob_facts(body.encode()).symbols for name, body in sources.items()}
    assert defined == {
        "Session.swift": ["Session", "request"],
        "Empty.swift": ["Empty", "Marker"],
        "Element.java": ["Element"],
        "State.java": ["Inner", "State"],
        "server.go": ["ServeHTTP", "plain"],
        "Adapter.kt": ["Options", "fromJson"],
        "Handler.php": ["StreamHandler", "write"],
        "app.ts": ["App", "Base"],
    }
    # prose is not a definition: the keyword starts no line, or is no keyword
    assert blob_facts(b"The class of a function is open.\nthe type of x\n").symbols == []


@pytest.mark.parametrize(
    "path",
    [
        "testdata/requires/testdata/TestRequires-enum_ref-err-run.golden",
        "packages/compiler/__tests__/__snapshots__/codegen.spec.ts.snap",
        "doc/telescope.txt",
        "man/man1/task.1",
        "lib/Mojolicious/Guides/Testing.pod",
        "tests/fixtures/enum.expected",
    ],
)
def test_a_golden_file_or_a_manual_defines_no_name(path: str) -> None:
    # go-task: a test's golden file holds the error `enum reference ".X" must resolve to
    # a list`; read as a definition, the 50-byte file "defined reference" and ranked
    # 5th for a ticket about a matrix's ref, above the code that resolves it
    golden = 'enum reference ".NOT_A_LIST" must resolve to a list\n'
    code = "package task\n\n// resolve a ref to its value\nfunc resolveRef(ref string) {}\n"
    files = {path: golden, "variables.go": code + "// the reference of a var\n" * 30}
    facts = {p: blob_facts(body.encode()) for p, body in files.items()}
    assert facts[path].symbols == ["reference"]  # (the facts hold what a line reads as one)
    text = "A matrix row whose ref is a computed list fails to resolve the reference"
    hits = lexical_hits(text, sorted(files), facts)
    assert path not in hits.defines
    found = rank([Candidate(p, len(b)) for p, b in files.items()], TaskText(text), [], facts=facts)
    assert not found[path].reason.startswith("defines")


def test_a_swift_type_the_task_spells_out_ranks_the_file_declaring_it() -> None:
    # Alamofire: "Make `Empty` `Hashable`" and "Relax JSONResponseSerializer ..."; the
    # file declaring `public final class JSONResponseSerializer` defined nothing
    big = "public final class JSONResponseSerializer: ResponseSerializer {\n"
    big += "    public let options: JSONSerialization.ReadingOptions\n" * 60 + "}\n"
    files = {
        "Source/Features/ResponseSerialization.swift": big,
        "Documentation/Usage.md": "Use a serializer to read the JSON of a response.\n" * 3,
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    candidates = [Candidate(path, len(body)) for path, body in files.items()]
    text = "Relax JSONResponseSerializer's Sendable requirement for JSON responses"
    found = rank(candidates, TaskText(text), [], facts=facts)
    swift = found["Source/Features/ResponseSerialization.swift"]
    assert swift.reason == "defines JSONResponseSerializer (named in the task)"
    assert swift.level > found["Documentation/Usage.md"].level


def test_module_level_bindings_and_elixir_private_functions_are_defined() -> None:
    # vite: "convertTargets returns {}" named `export const convertTargets = (` in
    # plugins/css.ts, which defined no such name (44th, outside a 32 KiB prompt);
    # Plug: more than half its functions are `defp`, none of them defined
    sources = {
        "css.ts": "export const convertTargets = (\n  target: string,\n) => {}\n",
        "utils.ts": "export const decodeBase64: (base64: string) => string = (() => {\n"
        "  const inner = 1\n  let local = 2\n})()\nlet cache = new Map()\n"
        "declare const __DEV__: boolean\nconst isEqual = a === b\n",
        "conn.ex": 'defmodule Plug.Conn do\n  defp put_scheme(conn, ["wss"]),\n'
        "  defmacrop wrap(x), do: x\n  defguard is_port(p) when p > 0\n"
        "  defdelegate fetch(conn), to: Other\nend\n",
    }
    defined = {name: blob_facts(body.encode()).symbols for name, body in sources.items()}
    assert defined == {
        "css.ts": ["convertTargets"],
        "utils.ts": ["__DEV__", "cache", "decodeBase64", "isEqual"],
        "conn.ex": ["fetch", "is_port", "put_scheme", "wrap"],
    }
    big = "import x from 'y'\n" + "// lightningcss targets of the build\n" * 200
    files = {
        "packages/vite/src/node/plugins/css.ts": big + sources["css.ts"],
        "docs/config/build-options.md": "The css target of the build for lightningcss.\n" * 4,
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    candidates = [Candidate(path, len(body)) for path, body in files.items()]
    text = "lightningcss gets empty targets: convertTargets returns {} for a false target"
    found = rank(candidates, TaskText(text), [], facts=facts)
    css = found["packages/vite/src/node/plugins/css.ts"]
    assert css.reason == "defines convertTargets (named in the task)"
    assert css.level > found["docs/config/build-options.md"].level


def test_a_name_many_files_define_names_none_of_them() -> None:
    # caddy: every HTTP handler defines ServeHTTP; a ticket spelling it out named all
    # 30 of them ("defines ServeHTTP (named in the task)") above the one it was about
    handlers = {
        f"modules/{name}/{name}.go": f"package {name}\n\nfunc (h *Handler) ServeHTTP() {{}}\n"
        for name in ("encode", "headers", "push", "rewrite", "metrics")
    }
    intercept = "package intercept\n\nfunc (h *Handler) ServeHTTP() {}\n"
    intercept += "type interceptedResponseHandler struct{}\n"
    files = {**handlers, "modules/intercept/intercept.go": intercept}
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    text = "intercept: ServeHTTP drops the status of interceptedResponseHandler"
    hits = lexical_hits(text, sorted(files), facts)
    assert spelled_names(text, hits.defines) == {
        "modules/intercept/intercept.go": "interceptedResponseHandler"
    }
    # a name three files define still names them (two handlers share a helper)
    shared = {path: body + "func newReplacer() {}\n" for path, body in list(handlers.items())[:3]}
    facts = {path: blob_facts(body.encode()) for path, body in shared.items()}
    hits = lexical_hits("newReplacer panics", sorted(shared), facts)
    named = spelled_names("newReplacer panics", hits.defines)
    assert named == dict.fromkeys(shared, "newReplacer")


def test_a_name_written_with_an_underscore_names_the_files_of_that_name() -> None:
    # ninenines/cowboy: "Add max_cookies option to cowboy_req cookie functions" named
    # src/cowboy_req.erl (and its manual page) by the module's name alone, without an
    # extension: neither ranked among the first eight
    files = {
        "src/cowboy_req.erl": "-module(cowboy_req).\nparse_cookies(Req) -> Req.\n",
        "doc/src/manual/cowboy_req.asciidoc": "= cowboy_req(3)\n\nThe Req object.\n",
        "src/cowboy_http.erl": "-module(cowboy_http).\n% cookie cookie cookie max option\n",
        "lib/rack/content_type.rb": "module Rack\n  class ContentType\n  end\nend\n",
        "tests/test_server.py": "def test_cookie(): ...\n",
        "src/server.py": "# the server: cookie options\n",
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    text = "Add max_cookies option to cowboy_req cookie functions; CONTENT_TYPE stays"
    hits = lexical_hits(text, sorted(files), facts)
    assert hits.mentioned == {
        "src/cowboy_req.erl": "cowboy_req",
        "doc/src/manual/cowboy_req.asciidoc": "cowboy_req",
    }
    # the file a path names is named by it, not by its name inside the path
    hits = lexical_hits("In play: tests/test_server.py. A server cookie", sorted(files), facts)
    assert hits.mentioned == {"tests/test_server.py": "tests/test_server.py"}
    # a name more than three files hold names none of them
    many = {f"pkg{i}/cowboy_req.erl": "-module(cowboy_req).\n" for i in range(4)}
    assert lexical_hits("cowboy_req crashes", sorted(many), {}).mentioned == {}


_NAMES = ["cowboy_req", "max_age", "a_b", "cowboy", "req", "x_y"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(["src", "lib", *_NAMES]), max_size=2),
            st.sampled_from(_NAMES),
            st.sampled_from(["", ".", ".erl", ".tar.gz", "_x.py", "/", ".d/f"]),
        ),
        max_size=10,
    ),
    st.sets(st.sampled_from(_NAMES), min_size=1),
)
def test_many_names_find_the_files_so_named_as_each_name_found_does(
    files: list[tuple[list[str], str, str]], names: set[str]
) -> None:
    # a ticket of 3,000 distinct words found each name in all 30,000 paths: 2.5 s
    paths = sorted({"/".join([*folders, name + tail]).strip("/") for folders, name, tail in files})
    assert len(names) <= _FOUND_NAMES  # (each found in the paths)
    assert _files_so_named(names, paths) == _files_named(names, paths)
    many = names | {f"other_{n}" for n in range(_FOUND_NAMES)}
    assert _files_named(many, paths) == _files_named(names, paths)


def test_the_lines_of_a_pull_request_template_are_not_the_task_s_words(repo: Path) -> None:
    # Alamofire's squash messages and tickets hold its PR template's headings: their
    # words put the template and the documentation above the file the task was about
    template = "### Goals :soccer:\n\n### Implementation Details :construction:\n"
    template += "### Testing Details :mag:\n"
    docs = "Goals of the implementation, details of testing and construction.\n" * 4
    session = "final class Session {\n    func retry(request: Request) {}\n}\n"
    files = {
        ".github/PULL_REQUEST_TEMPLATE.md": template,
        "Documentation/AdvancedUsage.md": docs,
        "Source/Core/Session.swift": session,
    }
    commit_files(repo, files, "Add the session")
    for i in range(12):
        body = f"### Goals :soccer:\nTidy number {i}.\n\n### Testing Details :mag:\nNone.\n"
        commit_files(repo, {f"Source/Misc/Tidy{i}.swift": f"// {i}\n"}, f"Tidy {i}\n\n{body}")
    objective = (
        "Retry a failed request in Session\n\n### Goals :soccer:\nA session retries a "
        "failed request.\n\n### Implementation Details :construction:\nA counter.\n\n"
        "### Testing Details :mag:\nNone.\n"
    )
    with Ledger(repo) as ledger:
        head = ledger.repo.rev_parse("HEAD")
        assert head is not None
        templates = read_history(ledger.repo, head).templates
        ledger.add_task("PR-1", objective=objective, acceptance="It retries once")
        ledger.add_tree("PR-1")
        entries = ledger.context_entries("PR-1")
    # a line twelve of thirteen messages repeat is the template's; "None." too
    assert templates == ["### Goals :soccer:", "### Testing Details :mag:", "None."]
    order = [e["source"] for e in entries]
    assert order[0] == "Source/Core/Session.swift", order
    reasons = {e["source"]: e["reason"] for e in entries}
    assert "soccer" not in reasons[".github/PULL_REQUEST_TEMPLATE.md"]


def test_a_text_only_a_template_holds_is_kept_whole() -> None:
    templates = ["### Goals :soccer:", "None."]
    text = "Fix the retry\n### Goals :soccer:\nNone.\n"
    assert without_templates(text, templates) == "Fix the retry\n"
    # nothing would be left: the ticket keeps its words
    assert without_templates("### Goals :soccer:\nNone.", templates) == "### Goals :soccer:\nNone."


def test_a_manual_page_weighs_as_a_changelog_and_seeds_nothing() -> None:
    # fzf's man page documents every option in a ticket's words: it was the best
    # content hit, and the installer, which releases bump with it, followed it as
    # "co-change with man/man1/fzf.1 (content hit)" above the code the ticket is about
    man = ".TH fzf 1\n" + ".B --replace-query\nreplace the query with the current item\n" * 20
    files = {
        "man/man1/fzf.1": man,
        "install": "#!/bin/sh\nversion=0.74.3\n",
        "src/terminal.go": "package fzf\n\n// replaceQuery puts the item in the query\n"
        + "func (t *Terminal) replaceQuery(item string) {}\n" * 40,
        "src/util/chars.go": "package util\n\nfunc CopyRunes(chars []rune) []rune {}\n",
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    candidates = [Candidate(path, len(body)) for path, body in files.items()]
    history = [["man/man1/fzf.1", "install"]] * 4 + [["src/terminal.go", "src/util/chars.go"]]
    text = "replace-query puts the item into the query"
    hits = lexical_hits(text, sorted(files), facts)
    assert "man/man1/fzf.1" not in dict(hits.seeds)
    assert hits.lexical["src/terminal.go"] > hits.lexical["man/man1/fzf.1"]
    found = rank(candidates, TaskText(text), history, facts=facts)
    assert "man/man1/fzf.1" not in found["install"].reason
    assert found["src/terminal.go"].level > found["man/man1/fzf.1"].level
    assert found["src/util/chars.go"].level > found["install"].level


@pytest.mark.parametrize(
    ("text", "path", "mention"),
    [
        ("Fix Mojo::File to no longer follow links", "lib/Mojo/File.pm", "mojo.file"),
        ("Rack::Utils.escape drops a plus", "lib/rack/utils.rb", "rack.utils"),
        ('require("telescope.builtin")', "lua/telescope/builtin/init.lua", "telescope.builtin"),
        ("Support :sign in Plug.Test.put_req_cookie/4", "lib/plug/test.ex", "plug.test"),
        ("Fix Mojo::File::list_tree on links", "lib/Mojo/File.pm", "mojo.file"),
        ("Export it from Data.Aeson.Types", "src/Data/Aeson/Types.hs", "data.aeson.types"),
    ],
)  # fmt: skip
def test_modules_named_as_other_languages_name_them_are_mentions(
    text: str, path: str, mention: str
) -> None:
    """Only ``click.core`` named a module: not Perl's and Ruby's ``Mojo::File``, a Lua
    package's ``init.lua``, nor the module of a name in it, ``Plug.Test.put_req_cookie``
    (helper rank11's finding). A module the text names whole names only itself."""
    paths = [path, "src/Data/Aeson.hs", "lib/plug.ex", "lib/Mojo.pm", "src/os.py", "lib/rack.rb"]
    hits = lexical_hits(text, paths, {})
    assert hits.mentioned == {path: mention}
    assert lexical_hits("os.path.join and 1.2.3", paths, {}).mentioned == {}


def test_a_dotted_mention_names_whole_parts_of_a_module_only() -> None:
    """``click.core`` named ``src/myclick/core.py`` too, and a ticket's
    ``/comments.rss`` lobsters' ``app/views/comments/user_comments.rss.builder``,
    ranked first (explorer21's finding): a mention matches whole parts of a module."""
    paths = ["src/myclick/core.py", "src/click/core.py", "views/user_comments.rss.builder"]
    assert _mentions("see click.core", paths) == {"src/click/core.py": "click.core"}
    assert _mentions("the /comments.rss feed", paths) == {}
    assert _mentions("the user_comments.rss feed", paths) == {
        "views/user_comments.rss.builder": "user_comments.rss"
    }


@pytest.mark.parametrize(
    "log", ["doc/telescope_changelog.txt", "my-app_changelog.md", "NEWS.org", "History.rdoc"]
)
def test_a_project_s_own_changelog_weighs_as_a_changelog(log: str) -> None:
    # nvim-telescope's doc/telescope_changelog.txt holds every feature's words: it was
    # not known for a changelog, and seeded co-change as the best content hit
    entry = "feat(builtin): show_line option for live_grep and grep_string\n"
    files = {
        log: entry * 30,
        "lua/telescope/builtin/__files.lua": "-- live_grep with show_line\n" + "local x = 1\n" * 5,
        "lib/changelog_parser.py": "def parse(): pass\n",
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    hits = lexical_hits("show_line option for live_grep", sorted(files), facts)
    assert log not in dict(hits.seeds)
    assert hits.lexical["lua/telescope/builtin/__files.lua"] > hits.lexical[log]
    parser = lexical_hits("changelog parser parse", sorted(files), facts)
    assert "lib/changelog_parser.py" in dict(parser.seeds)


_NAME_PIECES = st.sampled_from(
    ["change", "CHANGES", "log", "History", "news", "whats", "New", "release", "-", "_",
     "notes", "authors", "contributors", ".", "md", "1", "9", "0", "x", "K", "\u212a",
     "\u017f", "readme", "/", "\n", ".rst", "fzf.1"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_NAME_PIECES, max_size=6).map("".join), max_size=12))
@example(["doc/tmux.1", "src/a.py"])
@example(["src/a.py", "WHATSNEW"])
@example(["src/a.py", "doc/ab.9"])
@example(["src/a.py", "hi\u017ftory"])  # (the long s is an s, ignoring case)
def test_aggregates_of_a_tree_are_those_of_each_name(paths: list[str]) -> None:
    """The aggregates of a whole tree, found from one search over all its names (and
    a cheap test of what such names hold first), are the paths each name's own
    match accepts."""
    from git_hydrate.hydrate.retrieval import _aggregate, _aggregates

    assert _aggregates(paths) == {p for p in paths if _aggregate(p)}


def _mentions_pairwise(text: str, paths: list[str]) -> dict[str, str]:
    """The paths ``text`` names, each path against each mention (the definition the
    lookups of ``mentions.mentions`` must keep; the first mention in order wins)."""
    named = {m.strip("./").lower() for m in _MENTION.findall(text)}
    named.update(m.lower().replace("::", ".") for m in _COLONS_MENTION.findall(text))
    found: dict[str, str] = {}
    for path in paths:
        lower = path.lower()
        base = posixpath.basename(lower)
        module = posixpath.splitext(lower)[0].replace("/", ".")
        tails = (".init", ".__init__", ".index", ".mod")
        package = _package(module) if module.endswith(tails) else ""
        for mention in sorted(named):
            if (
                lower == mention
                or lower.endswith("/" + mention)
                or (mention == base and "." in base)
                or ("/" not in mention and module.endswith(mention) and "." in mention)
                or (package and "/" not in mention and package.endswith("." + mention))
            ):
                found[path] = mention
                break
    unmatched = named.difference(found.values())
    owners = [
        m.rpartition(".")[0]
        for m in unmatched
        if m.count(".") >= 2 and m[0].isalpha() and "/" not in m
    ]
    for path in paths:
        package = _package(posixpath.splitext(path.lower())[0].replace("/", "."))
        for owner in sorted(owners):
            if path not in found and package.endswith("." + owner):
                found[path] = owner
    return found


_WORDS = ["click", "core", "init", "Mojo", "file", "a.b", "index"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4),
                  st.sampled_from([".py", ".lua", ".pm", ""])),
        min_size=1, max_size=8,
    ),
    st.lists(
        st.tuples(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3),
                  st.sampled_from(["/", ".", "::"]), st.sampled_from(["", ".py", ".lua"])),
        max_size=6,
    ),
)  # fmt: skip
@example(
    [(["src", "click", "core"], ".py"), (["lua", "telescope", "builtin", "init"], ".lua")],
    [(["click", "core"], "/", ".py"), (["telescope", "builtin"], ".", "")],
)
def test_each_path_finds_its_first_mention_by_lookups(
    files: list[tuple[list[str], str]], said: list[tuple[list[str], str, str]]
) -> None:
    # each path tried each mention: at 3,000 files, a text naming 2,000 paths took 4 s
    paths = sorted({"/".join(parts) + ext for parts, ext in files})
    text = " and ".join(joint.join(parts) + ext for parts, joint, ext in said)
    assert _mentions(text, paths) == _mentions_pairwise(text, paths)


def test_a_catalog_seed_lifts_no_other_language_s_catalog() -> None:
    """rubygems.org's ``config/locales/en.yml`` holds every string of the interface, the
    error a ticket quotes among them: it was the best content hit, and every commit
    that touches it touches the other languages' catalogs, which ranked 1st to 8th
    as "co-change with config/locales/en.yml (content hit)" above the code the
    ticket is about (explorer23's finding). Its partners in code still follow it."""
    message = "This gem name is too close to an existing gem name\n"
    files = {
        "config/locales/en.yml": "en:\n  gem_typo:\n    too_close: " + message * 30,
        "config/locales/ja.yml": "ja:\n  welcome: " + "irasshaimase\n" * 30,
        "config/locales/de.yml": "de:\n  welcome: " + "willkommen\n" * 30,
        "po/fr.po": 'msgid "welcome"\nmsgstr "bienvenue"\n' * 30,
        "app/models/gem_typo.rb": "class GemTypo\n  def protected_typo?\n  end\nend\n",
        "lib/other.rb": "class Other\nend\n",
    }
    facts = {path: blob_facts(body.encode()) for path, body in files.items()}
    candidates = [Candidate(path, len(body)) for path, body in files.items()]
    catalogs = ["config/locales/en.yml", "config/locales/ja.yml", "config/locales/de.yml"]
    history = [[f"app/models/m{i}.rb", f"test/m{i}_test.rb"] for i in range(30)]
    history += [[*catalogs, "po/fr.po", f"app/views/v{i}.erb"] for i in range(8)]
    history += [["config/locales/en.yml", "app/models/gem_typo.rb"]] * 2
    text = "Pushing a gem says: this gem name is too close to an existing gem name"
    hits = lexical_hits(text, sorted(files), facts)
    assert dict(hits.seeds).keys() >= {"config/locales/en.yml"}
    found = rank(candidates, TaskText(text), history, facts=facts)
    for other in ("config/locales/ja.yml", "config/locales/de.yml", "po/fr.po"):
        assert "co-change with config/locales/en.yml" not in found[other].reason, other
    assert found["app/models/gem_typo.rb"].reason == (
        "co-change with config/locales/en.yml (content hit)"
    )
    assert found["app/models/gem_typo.rb"].level > found["config/locales/ja.yml"].level
