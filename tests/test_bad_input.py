"""The bad-input matrix: every case gets a clear error, the right exit status, no traceback,
and writes nothing. ``MATRIX`` is the source of the table in ``tests/BAD_INPUT.md``;
``test_matrix_table_is_current`` fails when the two drift apart (regenerate with
``python -m tests.test_bad_input``).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import NamedTuple

import pytest

from git_hydrate import Ledger, SecretDetected, ValidationError
from tests.conftest import git, hydrate

TABLE = Path(__file__).parent / "BAD_INPUT.md"


class Case(NamedTuple):
    what: str
    args: tuple[str, ...]
    exit: int
    says: str


LONG_ID = "A" * 5000
MATRIX: list[Case] = [
    Case("unknown task", ("show", "NOPE-1"), 1, "no task 'NOPE-1'"),
    Case(
        "id with a slash",
        ("task-add", "a/b", "--objective", "o", "--acceptance", "a"),
        1,
        "invalid task id",
    ),
    Case(
        "id starting with '-'",
        ("task-add", "--", "-x", "--objective", "o", "--acceptance", "a"),
        2,
        "",
    ),
    Case(
        "id with '..'",
        ("task-add", "a..b", "--objective", "o", "--acceptance", "a"),
        1,
        "invalid task id",
    ),
    Case(
        "id ending in .lock",
        ("task-add", "a.lock", "--objective", "o", "--acceptance", "a"),
        1,
        "invalid task id",
    ),
    Case(
        "id of 5,000 characters",
        ("task-add", LONG_ID, "--objective", "o", "--acceptance", "a"),
        1,
        "invalid task id",
    ),
    Case(
        "id with a control character",
        ("task-add", "A\x01B", "--objective", "o", "--acceptance", "a"),
        1,
        "invalid task id",
    ),
    Case(
        "id differing only by case",
        ("task-add", "m-1", "--objective", "o", "--acceptance", "a"),
        1,
        "only by case",
    ),
    Case(
        "task that exists",
        ("task-add", "M-1", "--objective", "o", "--acceptance", "a"),
        1,
        "already exists",
    ),
    Case(
        "empty objective",
        ("task-add", "N-1", "--objective", "", "--acceptance", "a"),
        1,
        "objective must not be empty",
    ),
    Case(
        "blank acceptance",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "  "),
        1,
        "acceptance must not be empty",
    ),
    Case("missing --acceptance", ("task-add", "N-1", "--objective", "o"), 2, "--acceptance"),
    Case(
        "unknown kind",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--kind", "chore"),
        2,
        "chore",
    ),
    Case(
        "priority 0",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--priority", "0"),
        2,
        "--priority",
    ),
    Case(
        "priority not a number",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--priority", "high"),
        2,
        "high",
    ),
    Case(
        "negative token budget",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--token-budget", "-1"),
        2,
        "--token-budget",
    ),
    Case(
        "token budget past 2**53 - 1",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--token-budget", "1" * 20),
        2,
        "--token-budget",
    ),
    Case(
        "checkpoint tokens past 2**53 - 1",
        ("checkpoint", "M-1", "--summary", "s", "--tokens", str(2**53)),
        2,
        "9,007,199,254,740,991",
    ),
    Case(
        "title on two lines",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--title", "a\nb"),
        1,
        "one line",
    ),
    Case(
        "empty tag",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--tag", " "),
        1,
        "must not be empty",
    ),
    Case(
        "file-in-play with empty path",
        ("task-add", "N-1", "--objective", "o", "--acceptance", "a", "--file-in-play", ":note"),
        1,
        "empty path",
    ),
    Case(
        "file-in-play outside the repository",
        (
            "task-add",
            "N-1",
            "--objective",
            "o",
            "--acceptance",
            "a",
            "--file-in-play",
            "/etc/passwd",
        ),
        1,
        "'/etc/passwd' is outside the work tree",
    ),
    Case(
        "test above the repository",
        ("task-edit", "M-1", "--test", "src/../../secrets.txt"),
        1,
        "test path 'src/../../secrets.txt' leaves the repository",
    ),
    Case(
        "a file in play inside .git",
        ("task-edit", "M-1", "--file-in-play", ".git/config"),
        1,
        "'.git/config' names a file in .git (in any case), which git never tracks",
    ),
    Case(
        "an empty --parent",
        ("task-edit", "M-1", "--parent", ""),
        2,
        "--no-parent drops the parent",
    ),
    Case(
        "an import prefix no id can begin with",
        ("import", "--prefix", "a/b", "note.txt"),
        2,
        "'a/b' cannot begin a task id",
    ),
    Case(
        "import of JSON nested 1,000 levels deep",
        ("import", "deep.json"),
        1,
        "unreadable JSON: nested deeper than 64 levels",
    ),
    Case("task-edit with nothing to change", ("task-edit", "M-1"), 2, "nothing to change"),
    Case(
        "neither --file nor --text", ("context-add", "M-1"), 2, "exactly one of --file and --text"
    ),
    Case(
        "both --file and --text",
        ("context-add", "M-1", "--file", "note.txt", "--text", "x"),
        2,
        "exactly one of",
    ),
    Case("missing file", ("context-add", "M-1", "--file", "missing.txt"), 1, "no such file"),
    Case("empty --file", ("context-add", "M-1", "--file", ""), 2, "an empty path names no file"),
    Case("empty -o", ("prompt", "M-1", "-o", ""), 2, "'-o' / '--output': an empty path"),
    Case(
        "two dependencies in one --depends-on",
        ("task-edit", "M-1", "--depends-on", "A-1,B-2"),
        2,
        "'A-1,B-2' names 2 tasks: give each its own, --depends-on A-1 --depends-on B-2",
    ),
    Case(
        "a station typed without --set",
        ("status", "M-1", "in-progress"),
        2,
        "to move M-1 to in_progress: git hydrate status M-1 --set in_progress",
    ),
    Case(
        "-o in a missing folder",
        ("prompt", "M-1", "-o", "no/such/out.md"),
        1,
        "cannot write no/such/out.md: No such file or directory",
    ),
    Case("empty --dir", ("add-tree", "M-1", "--dir", ""), 2, "'--dir': an empty path"),
    Case("directory as --file", ("context-add", "M-1", "--file", "adir"), 1, "is a directory"),
    Case("FIFO as --file", ("context-add", "M-1", "--file", "fifo"), 1, "not a regular file"),
    Case(
        "symlink loop as --file",
        ("context-add", "M-1", "--file", "loop"),
        1,
        "looping symbolic link",
    ),
    Case(
        "agent context with no agent named",
        ("agent", "context"),
        2,
        "Choose from: claude, codex, aider",
    ),
    Case(
        "agent file that is a symbolic link",
        ("agent", "install", "codex"),
        1,
        "AGENTS.md is a symbolic link",
    ),
    Case(
        "Claude settings whose hooks are a list",
        ("agent", "install", "claude"),
        1,
        "settings.local.json: hooks is not an object",
    ),
    Case(
        "binary (invalid UTF-8) file",
        ("context-add", "M-1", "--file", "bin.dat"),
        1,
        "not valid UTF-8",
    ),
    Case("file with a NUL byte", ("context-add", "M-1", "--file", "nul.txt"), 1, "NUL byte"),
    Case(
        "file over hydrate.maxBodyBytes",
        ("-C", ".", "context-add", "M-1", "--file", "big.txt"),
        1,
        "over the limit",
    ),
    Case(
        "invalid UTF-8 in --text",
        ("context-add", "M-1", "--text", "caf\udce9"),
        1,
        "not valid Unicode",
    ),
    Case(
        "source label with a newline",
        ("context-add", "M-1", "--text", "x", "--source-label", "a\nb"),
        1,
        "one line",
    ),
    Case(
        "empty source label",
        ("context-add", "M-1", "--text", "x", "--source-label", ""),
        1,
        "must not be empty",
    ),
    Case(
        "source label of 5,000 characters",
        ("context-add", "M-1", "--text", "x", "--source-label", "s" * 5000),
        1,
        "longer than 1024",
    ),
    Case(
        "priority beyond 32 bits",
        ("context-add", "M-1", "--text", "x", "--priority", str(2**40)),
        2,
        "--priority",
    ),
    Case("ttl zero", ("context-add", "M-1", "--text", "x", "--ttl", "0"), 2, "--ttl"),
    Case("ttl negative", ("context-add", "M-1", "--text", "x", "--ttl", "-5"), 2, "--ttl"),
    Case("ttl not a number", ("context-add", "M-1", "--text", "x", "--ttl", "soon"), 2, "soon"),
    Case(
        "ttl of 10^300 seconds",
        ("context-add", "M-1", "--text", "x", "--ttl", "1e300"),
        2,
        "'1e300' is more than 100 years",
    ),
    Case(
        "ttl of 10^14 weeks",
        ("context-add", "M-1", "--text", "x", "--ttl", "99999999999999w"),
        2,
        "--ttl': '99999999999999w' is more than 100 years",
    ),
    Case("ttl infinite", ("context-add", "M-1", "--text", "x", "--ttl", "inf"), 2, "--ttl"),
    Case("ttl NaN", ("context-add", "M-1", "--text", "x", "--ttl", "nan"), 2, "--ttl"),
    Case("ttl of an unknown unit", ("context-add", "M-1", "--text", "x", "--ttl", "3y"), 2, "30m"),
    Case("empty body", ("context-add", "M-1", "--text", ""), 1, "context body is empty"),
    Case("blank body", ("context-add", "M-1", "--text", " \n\t"), 1, "context body is empty"),
    Case("misspelt command", ("shwo", "M-1"), 2, "Did you mean 'show'?"),
    Case("another tool's word for a command", ("board",), 2, "Did you mean 'web'?"),
    Case("misspelt task id", ("show", "M--1"), 1, "did you mean M-1?"),
    Case("task id in the wrong case", ("show", "m-1"), 1, "did you mean M-1?"),
    Case("short id, l for 1", ("show", "M-l"), 1, "did you mean M-1?"),
    Case("short id, _ for -", ("status", "M_1"), 1, "did you mean M-1?"),
    Case("unrelated short id", ("show", "Q-7"), 1, "create it with: git hydrate task-add Q-7"),
    Case("--max-bytes with a bad unit", ("pack", "M-1", "--max-bytes", "8q"), 2, "64k"),
    Case(
        "body with a private key",
        ("context-add", "M-1", "--file", "key.pem"),
        1,
        "private-key on line 1",
    ),
    Case("context-rm of a non-hex hash", ("context-rm", "M-1", "xyz!"), 1, "invalid context hash"),
    Case("context-rm of an unknown hash", ("context-rm", "M-1", "abcdef"), 1, "has no context"),
    Case("--max-bytes 0", ("pack", "M-1", "--max-bytes", "0"), 2, "--max-bytes"),
    Case("--max-bytes negative", ("pack", "M-1", "--max-bytes", "-3"), 2, "--max-bytes"),
    Case("--max-bytes not a number", ("pack", "M-1", "--max-bytes", "lots"), 2, "lots"),
    Case(
        "--max-bytes without its value",
        ("pack", "M-1", "--max-bytes"),
        2,
        "requires an argument. (see: git-hydrate pack -h)",
    ),
    Case(
        "--max-bytes too small",
        ("pack", "M-1", "--max-bytes", "10"),
        1,
        "budget cannot fit mandatory",
    ),
    Case(
        "expand budget too small",
        ("expand", "M-1", "--max-bytes", "10"),
        1,
        "mandatory ticket structure",
    ),
    Case("--now not a date", ("pack", "M-1", "--now", "yesterday"), 2, "ISO 8601"),
    Case(
        "bad hydrate.maxBytes",
        ("-C", "sub", "pack", "M-1"),
        1,
        "hydrate.maxBytes must be a whole number (k, m or g after it allowed: 64k)",
    ),
    Case("unknown command", ("frobnicate",), 2, "No such command"),
    Case("-C to a missing directory", ("-C", "nowhere", "list"), 128, "nowhere"),
]


def _table() -> str:
    lines = [
        "# Bad input matrix",
        "",
        "Generated from `tests/test_bad_input.py` (`python -m tests.test_bad_input`); the test",
        "suite runs every row and fails when this table is out of date. Every row: one line on",
        "stderr, no traceback, nothing written (`git for-each-ref` unchanged).",
        "",
        "| input | command | exit | stderr says |",
        "|---|---|---:|---|",
    ]
    for case in MATRIX:
        args = " ".join(a if len(a) <= 24 else a[:12] + "…" for a in case.args)
        args = "".join(c if c.isprintable() else repr(c)[1:-1] for c in args).replace("|", "\\|")
        lines.append(f"| {case.what} | `{args}` | {case.exit} | {case.says or '(usage)'} |")
    return "\n".join(lines) + "\n"


@pytest.fixture
def arena(repo: Path) -> Path:
    hydrate(repo, "task-add", "M-1", "--objective", "o", "--acceptance", "a")
    (repo / "note.txt").write_text("note\n")
    (repo / "deep.json").write_text("[" * 1000 + "]" * 1000)
    (repo / "adir").mkdir()
    os.mkfifo(repo / "fifo")
    os.symlink("loop", repo / "loop")
    os.symlink("note.txt", repo / "AGENTS.md")
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.local.json").write_text('{"hooks": []}\n')
    (repo / "bin.dat").write_bytes(b"\xff\xfe\x00\x01")
    (repo / "nul.txt").write_bytes(b"text\x00text")
    (repo / "key.pem").write_text("-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEE\n")
    git(repo, "config", "hydrate.maxBodyBytes", "1k")
    (repo / "big.txt").write_text("x" * 2048)
    sub = repo / "sub"
    sub.mkdir()
    return repo


def test_matrix(arena: Path) -> None:
    before = git(arena, "for-each-ref")
    for case in MATRIX:
        env = None
        cwd = arena
        if case.what == "bad hydrate.maxBytes":
            env = {"GIT_CONFIG_PARAMETERS": "'hydrate.maxbytes'='many'"}
        result = hydrate(cwd, *case.args, env=env)
        assert result.returncode == case.exit, (case, result)
        assert "Traceback" not in result.stderr, (case, result)
        assert case.says in result.stderr, (case, result)
        assert len(result.stderr.strip().splitlines()) == 1, (case, result)
        assert result.stdout == "", (case, result)
    assert git(arena, "for-each-ref") == before


def test_matrix_table_is_current() -> None:
    assert TABLE.read_text(encoding="utf-8") == _table()


def test_api_rejects_wrong_types(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("T-1", objective="o", acceptance="a")
        bad_calls = [
            lambda: ledger.add_task(123, objective="o", acceptance="a"),  # type: ignore[arg-type]
            lambda: ledger.add_task("T-2", objective=None, acceptance="a"),  # type: ignore[arg-type]
            lambda: ledger.add_task("T-2", objective="o", acceptance="a", tags="one"),
            lambda: ledger.add_task("T-2", objective="o", acceptance="a", priority=True),
            lambda: ledger.add_context("T-1", 42, "src"),  # type: ignore[arg-type]
            lambda: ledger.add_context("T-1", "x", None),  # type: ignore[arg-type]
            lambda: ledger.add_context("T-1", "x", "src", priority=1.5),  # type: ignore[arg-type]
            lambda: ledger.add_context("T-1", "x", "src", ttl="soon"),  # type: ignore[arg-type]
            lambda: ledger.add_context("T-1", "x", "src", ttl=float("inf")),
            lambda: ledger.add_context("T-1", "x" * (8 * 1024 * 1024 + 1), "src"),
            lambda: ledger.pack("T-1", max_bytes=-1),
            lambda: ledger.pack("T-1", max_bytes="big"),  # type: ignore[arg-type]
            lambda: ledger.edit_task("T-1", colour="red"),
            lambda: ledger.edit_task("T-1", token_budget=2**53),
            lambda: ledger.add_checkpoint("T-1", "s", tokens=10**20),
        ]
        before = git(repo, "for-each-ref")
        for call in bad_calls:
            with pytest.raises(ValidationError):
                call()
        with pytest.raises(SecretDetected):
            ledger.add_context("T-1", "token ghp_" + "Ab1" * 12, "src")
        assert git(repo, "for-each-ref") == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_unreadable_file(arena: Path) -> None:  # pragma: no cover - not run as root
    secret = arena / "closed.txt"
    secret.write_text("x")
    secret.chmod(0)
    result = hydrate(arena, "context-add", "M-1", "--file", "closed.txt")
    secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert result.returncode == 1
    assert "cannot read closed.txt" in result.stderr


if __name__ == "__main__":
    TABLE.write_text(_table(), encoding="utf-8")


def test_a_path_in_the_repository_is_stored_as_git_names_it(repo: Path) -> None:
    """``./src/app.py`` and ``src/lib/../app.py`` name ``src/app.py``: stored so, they
    match the attachment add-tree makes of it."""
    paths = ("--file-in-play", "./src/app.py:the app", "--test", "tests/lib/../t.py")
    made = hydrate(repo, "task-add", "P-1", "--objective", "o", "--acceptance", "a", *paths)
    assert made.returncode == 0, made
    task = json.loads(hydrate(repo, "show", "P-1", "--json").stdout)
    assert task["files"] == [{"path": "src/app.py", "note": "the app"}]
    assert [t["path"] for t in task["tests"]] == ["tests/t.py"]
