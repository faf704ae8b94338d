"""The entry point's fast path (git_hydrate.quick): a prompt-cache hit answered without
click, msgspec or dulwich, byte for byte what the full command line prints; everything
else falls through to the full command line unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger, quick
from git_hydrate.errors import HydrateError

from .conftest import ROOT, Result, examples, git, hydrate, stocked_repo
from .test_prompt_cache import DAMAGES

#: A moment two hours ago: attachments added then with a one-hour ttl have expired.
PAST = time.time() - 7200


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A task of a few attachments (one expiring in an hour) in ``repo``."""
    return stocked_repo(tmp_path / "repo", "quick-task", _stock)


def _stock(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task("C-1", "Cache the prompt", "hits are identical")
        ledger.add_context("C-1", "first body, kept\n" * 40, "notes/a.md", priority=5)
        ledger.add_context("C-1", "second body\n" * 40, "notes/b.md", ttl=3600)
        ledger.add_context("C-1", "third body, the longest\n" * 200, "notes/c.md")
        ledger.add_context("C-1", "ünïcödé body ✓\n" * 30, "notes/ünï ✓.md")


def cache_dir(repo: Path) -> Path:
    return repo / ".git" / "hydrate" / "prompt-cache"


def through_entry(cwd: Path | str, *args: str, env: dict[str, str] | None = None) -> Result:
    """What ``git_hydrate.quick.main`` does, in this process: the fast path, else the
    full command line. ``served`` on the result says whether the fast path answered."""
    from git_hydrate.cli import run

    served = False

    def entry(argv: list[str]) -> int:
        nonlocal served
        code = quick.serve_hit(argv)
        served = code is not None
        return run(argv) if code is None else code

    result = hydrate(cwd, *args, env=env, entry=entry)
    result.served = served  # type: ignore[attr-defined]
    return result


def same(cwd: Path | str, *args: str, env: dict[str, str] | None = None) -> bool:
    """Run ``args`` through the entry point, then through the full command line, and
    assert the same stdout, stderr and exit status; whether the fast path answered."""
    fast = through_entry(cwd, *args, env=env)
    full = hydrate(cwd, *args, env=env)
    assert (fast.stdout, fast.stderr, fast.returncode) == (
        full.stdout,
        full.stderr,
        full.returncode,
    ), (args, fast, full)
    return bool(fast.served)  # type: ignore[attr-defined]


def fill(repo: Path, *args: str) -> Result:
    """Run ``prompt`` once through the full command line (the entry stored)."""
    result = hydrate(repo, "prompt", "C-1", *args)
    assert result.returncode == 0, result
    return result


# -- what it answers, and what it leaves to the full command line ----------------------


HITS = [
    (),
    ("--max-bytes", "8k"),
    ("--max-bytes=8192",),
    ("--max-bytes", "8K"),
    ("--max-bytes", "8KiB"),
    ("--max-bytes", " 8192 "),  # ByteSize strips blanks
    ("--max-bytes", "3000"),
    ("--max-bytes", "2k", "--no-outline"),
    ("--max-tokens", "300"),
    ("--max-tokens=300", "--encoding", "cl100k_base"),
    ("--encoding=cl100k_base", "--max-tokens", "300", "--max-bytes", "3000"),
]


@pytest.mark.parametrize("budget", HITS, ids=" ".join)
def test_a_hit_is_served_and_identical(task: Path, budget: tuple[str, ...]) -> None:
    assert not same(task, "prompt", "C-1", *budget)  # a miss: built and stored
    assert same(task, "prompt", "C-1", *budget)
    assert same(task, "prompt", *budget, "C-1")  # options before ID


def test_where_it_is_run_from(task: Path, tmp_path: Path) -> None:
    fill(task)
    (task / "sub" / "dir").mkdir(parents=True)
    assert same(task / "sub" / "dir", "prompt", "C-1")
    assert same(tmp_path, "-C", str(task), "prompt", "C-1")
    assert same(tmp_path, "-C", str(task / "sub"), "--compact", "prompt", "C-1")
    assert same(task / ".git", "prompt", "C-1")  # inside the git directory
    # GIT_DIR is honoured without -C, and -C wins over it
    assert same(tmp_path, "prompt", "C-1", env={"GIT_DIR": str(task / ".git")})
    assert same(tmp_path, "-C", str(task), "prompt", "C-1", env={"GIT_DIR": "/nowhere"})
    assert not same(tmp_path, "prompt", "C-1")  # not a repository: the full CLI says so
    assert not same(tmp_path, "-C", str(tmp_path / "none"), "prompt", "C-1")
    (tmp_path / "file").write_text("")
    assert not same(tmp_path, "-C", str(tmp_path / "file"), "prompt", "C-1")


def test_a_linked_worktree_and_a_bare_clone(task: Path, tmp_path: Path) -> None:
    git(task, "worktree", "add", "-q", str(tmp_path / "wt"))
    fill(task)
    assert same(tmp_path / "wt", "prompt", "C-1")
    git(tmp_path, "clone", "-q", "--bare", str(task), "bare.git")
    git(tmp_path / "bare.git", "fetch", "-q", str(task), "refs/hydrate/*:refs/hydrate/*")
    assert not same(tmp_path / "bare.git", "prompt", "C-1")
    assert same(tmp_path / "bare.git", "prompt", "C-1")


def test_the_current_task_is_served_too(task: Path, tmp_path: Path) -> None:
    """``prompt @`` and ``prompt --current`` (what agents are told to run) are hits
    once a task was started here; with none started, the full CLI resolves them."""
    fill(task)
    assert not same(task, "prompt", "@")  # nothing started: the full CLI says so
    git(task, "checkout", "-q", "-b", "fix/C-1-cache")
    assert not same(task, "prompt", "--current")  # the branch names it: the full CLI
    git(task, "checkout", "-q", "-")
    assert hydrate(task, "start", "C-1").returncode == 0
    fill(task)
    assert same(task, "prompt", "@")
    assert same(task, "prompt", "--current")
    fill(task, "--max-bytes", "8k")
    assert same(tmp_path, "-C", str(task), "prompt", "--max-bytes", "8k", "@")
    assert not same(task, "prompt", "--current", "@")  # click: not both
    assert not same(task, "prompt", "--current", "--current")
    # a linked work tree has its own current task
    git(task, "worktree", "add", "-q", str(tmp_path / "wt"))
    assert not same(tmp_path / "wt", "prompt", "@")
    assert hydrate(tmp_path / "wt", "start", "C-1").returncode == 0
    assert same(tmp_path / "wt", "prompt", "@")
    fast, heavy = process(task, "prompt", "--current")
    assert fast.returncode == 0 and heavy == []


def test_output_to_a_file(task: Path, tmp_path: Path) -> None:
    fill(task)
    out = tmp_path / "out.md"
    for spelling in (("-o", str(out)), ("--output", str(out)), (f"--output={out}",)):
        out.write_text("old, longer content that must be replaced\n" * 100)
        assert same(task, "prompt", "C-1", *spelling)
        fast = through_entry(task, "prompt", "C-1", *spelling)
        assert fast.served and fast.stdout == ""  # type: ignore[attr-defined]
        assert out.read_text() == hydrate(task, "prompt", "C-1").stdout
    assert same(task, "prompt", "C-1", "-o", "-")  # standard output
    # written in place, as > does: through a symlink, keeping the mode
    link = tmp_path / "link.md"
    link.symlink_to(out)
    out.chmod(0o640)
    assert same(task, "prompt", "C-1", "-o", str(link))
    assert link.is_symlink() and out.stat().st_mode & 0o777 == 0o640
    assert out.read_text() == hydrate(task, "prompt", "C-1").stdout
    # what click refuses, or an error opening it, the full CLI says
    assert not same(task, "prompt", "C-1", "-o", str(tmp_path))  # a directory
    assert not same(task, "prompt", "C-1", "-o", "")


def test_an_error_writing_is_said_as_the_full_cli_says_it(task: Path, tmp_path: Path) -> None:
    fill(task)
    missing = tmp_path / "no" / "such" / "dir" / "out.md"  # click accepts it; open fails
    fast = through_entry(task, "prompt", "C-1", "-o", str(missing))
    full = hydrate(task, "prompt", "C-1", "-o", str(missing))
    assert fast.served  # type: ignore[attr-defined]
    assert (fast.stdout, fast.stderr, fast.returncode) == (full.stdout, full.stderr, 1)
    assert full.stderr == f"error: cannot write {missing}: No such file or directory\n"


FALL_THROUGH = [
    ("-v",),
    ("-vv",),
    ("--omitted",),
    ("--verbose",),
    ("--now", "2030-01-01T00:00:00Z"),
    ("--no-cache",),
    ("--refresh",),
    ("-h",),
    ("--help",),
    ("--max-bytes", "0"),
    ("--max-bytes", "-5"),
    ("--max-bytes", "lots"),
    ("--max-bytes", "8q"),
    ("--max-bytes",),
    ("--max-bytes", "8k", "--max-bytes", "8k"),  # click: the last wins; left to it
    ("--max-tokens", "0"),
    ("--max-tokens", "3_00"),
    ("--max-tokens", "x"),
    ("--encoding", "p50k_base"),
    ("--encoding", "CL100K_BASE"),
    ("--outline", "--no-outline"),
    ("-q", "--quiet"),  # (click takes a flag twice; the fast path leaves it to click)
    ("-qv",),
    ("-o",),
    ("-ofile",),
    ("-o=file",),
    ("--bogus",),
    ("--",),
    ("extra",),
    ("--max-bytes", "--no-outline"),  # click takes the next argument as the value
]


@pytest.mark.parametrize("extra", FALL_THROUGH, ids=" ".join)
def test_what_it_does_not_understand_falls_through(task: Path, extra: tuple[str, ...]) -> None:
    fill(task)
    fill(task, "--max-bytes", "8k")
    assert not same(task, "prompt", "C-1", *extra)


@pytest.mark.parametrize(
    "args",
    [
        ("prompt",),
        ("prompt", "NOPE-1"),  # no such task
        ("prompt", "bad..id"),
        ("prompt", "-"),
        ("prompt", "@"),
        ("prompt", "--current"),
        ("prompt", "C-1", "--current"),
        ("-C",),
        ("-C", ".", "-C", ".", "prompt", "C-1"),
        ("--compact", "--compact", "prompt", "C-1"),
        ("--version",),
        ("show", "C-1"),
        ("prompts", "C-1"),
        (),
    ],
    ids=" ".join,
)
def test_other_commands_and_ids_fall_through(task: Path, args: tuple[str, ...]) -> None:
    fill(task)
    assert not same(task, *args)


def test_a_miss_falls_through_and_the_cache_is_filled(task: Path) -> None:
    assert not cache_dir(task).exists()
    assert not same(task, "prompt", "C-1")  # no cache at all
    assert same(task, "prompt", "C-1")
    for entry in cache_dir(task).iterdir():
        entry.unlink()
    assert not same(task, "prompt", "C-1")  # an empty cache
    with Ledger(task) as ledger:
        ledger.add_context("C-1", "a new body\n", "notes/d.md")  # a new tip
    assert not same(task, "prompt", "C-1")
    assert same(task, "prompt", "C-1")


def test_a_turned_off_or_unreadable_setting_falls_through(task: Path) -> None:
    fill(task)
    git(task, "config", "hydrate.promptCache", "false")
    assert not same(task, "prompt", "C-1")
    git(task, "config", "hydrate.promptCache", "maybe")
    assert not same(task, "prompt", "C-1")  # the full CLI says what is wrong
    assert "hydrate.promptCache" in hydrate(task, "prompt", "C-1").stderr
    git(task, "config", "hydrate.promptCache", "yes")
    assert same(task, "prompt", "C-1")
    git(task, "config", "hydrate.maxBytes", "lots")
    assert not same(task, "prompt", "C-1")
    git(task, "config", "hydrate.maxBytes", "8k")
    fill(task)
    assert same(task, "prompt", "C-1")  # the setting is the budget, as for the full CLI
    git(task, "config", "hydrate.outline", "false")
    assert not same(task, "prompt", "C-1")  # another budget: a miss, built by the CLI
    fill(task)
    assert same(task, "prompt", "C-1")  # and then a hit (outlines off)
    # outlines on (the default before the setting): the key names the grammars, and
    # the entry stored before the setting changed answers
    assert same(task, "prompt", "C-1", "--outline")


def test_git_s_clock_falls_through(task: Path) -> None:
    fill(task)
    date = {"GIT_COMMITTER_DATE": "@1900000000 +0000"}
    assert not same(task, "prompt", "C-1", env=date)


def test_the_window_of_expiries(repo: Path) -> None:
    with Ledger(repo, clock=lambda: PAST) as ledger:
        ledger.add_task("C-1", "Cache the prompt", "hits are identical")
        ledger.add_context("C-1", "kept body\n" * 20, "notes/a.md")
        ledger.add_context("C-1", "expiring body\n" * 20, "notes/b.md", ttl=3600)
        # built two hours ago: valid until the attachment expired, an hour ago
        result = ledger.prompt("C-1", now=PAST)
    assert "expiring body" in result["prompt"]
    assert not same(repo, "prompt", "C-1")  # outside the window: built again
    assert "expiring body" not in hydrate(repo, "prompt", "C-1").stdout
    assert same(repo, "prompt", "C-1")  # this one holds from the expiry on


def test_packed_refs(task: Path) -> None:
    fill(task)
    git(task, "pack-refs", "--all")
    assert not (task / ".git" / "refs" / "hydrate" / "tasks" / "C-1").exists()
    assert same(task, "prompt", "C-1")


def test_a_ref_that_does_not_read_falls_through(task: Path) -> None:
    fill(task)
    ref = task / ".git" / "refs" / "hydrate" / "tasks" / "C-1"
    ref.write_bytes(b"\xff\xfe not an object id\n")
    assert not same(task, "prompt", "C-1")
    ref.write_bytes(b"ref: refs/hydrate/tasks/C-2\n")  # symbolic: no such task
    assert not same(task, "prompt", "C-1")
    ref.unlink()
    ref.mkdir()  # a directory where the ref would be
    assert not same(task, "prompt", "C-1")


def test_a_reftable_repository_falls_through(task: Path) -> None:
    fill(task)
    git(task, "config", "extensions.refStorage", "reftable")
    assert not same(task, "prompt", "C-1")


@pytest.fixture
def entry(task: Path) -> Iterator[Path]:
    fill(task)
    (path,) = cache_dir(task).iterdir()
    good = path.read_bytes()
    yield path
    path.write_bytes(good)


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_entry_falls_through(task: Path, entry: Path, damage: str) -> None:
    damaged = DAMAGES[damage](entry.read_bytes())
    entry.write_bytes(damaged)
    assert not same(task, "prompt", "C-1")  # rebuilt by both, never printed damaged
    assert entry.read_bytes() != damaged


def test_an_entry_someone_else_could_have_written_falls_through(task: Path, entry: Path) -> None:
    entry.chmod(0o620)
    assert not same(task, "prompt", "C-1")
    entry.chmod(0o600)
    assert same(task, "prompt", "C-1")
    if os.geteuid() == 0:
        os.chown(entry, 4242, -1)
        assert not same(task, "prompt", "C-1")
        os.chown(entry, 0, -1)
    fifo = cache_dir(task) / "planted"
    os.mkfifo(fifo)
    entry.unlink()
    fifo.rename(entry)  # must not hang the reader
    assert not same(task, "prompt", "C-1")


# -- the real entry point ---------------------------------------------------------------


def process(
    cwd: Path, *args: str, full: bool = False, stdout: int | None = subprocess.PIPE
) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    """``args`` run by ``python -m git_hydrate`` (or the full CLI alone), and the
    heavy modules it had imported when it exited."""
    report = cwd.parent / "modules.txt"
    start = "from git_hydrate.cli import main" if full else "from git_hydrate.quick import main"
    code = (
        "import atexit, sys\n"
        "heavy = ('click', 'msgspec', 'dulwich', 'hashlib', 'subprocess', 'typing',"
        " 'dataclasses')\n"
        f"atexit.register(lambda: open({str(report)!r}, 'w').write("
        "' '.join(m for m in sorted(sys.modules) if m.split('.')[0] in heavy)))\n"
        f"{start}\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        check=False,
    )
    return proc, report.read_text().split()


def test_a_hit_imports_nothing_heavy(task: Path, tmp_path: Path) -> None:
    """The point of the fast path: no click, msgspec or dulwich, nor what costs a few
    ms more to import (hashlib's OpenSSL, subprocess, typing, dataclasses)."""
    fill(task)
    fast, heavy = process(task, "prompt", "C-1")
    full, _ = process(task, "prompt", "C-1", full=True)
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, full.stdout, full.stderr)
    assert heavy == []
    fill(task, "--max-bytes", "64k")
    out = tmp_path / "out.md"
    fast, heavy = process(task, "prompt", "C-1", "--max-bytes", "64k", "-o", str(out))
    full, _ = process(task, "prompt", "C-1", "--max-bytes", "64k", full=True)
    assert (fast.returncode, fast.stdout, fast.stderr) == (0, b"", full.stderr)
    assert heavy == [] and out.read_bytes() == full.stdout
    miss, heavy = process(task, "prompt", "C-1", "--max-bytes", "3000")
    assert miss.returncode == 0 and "click" in heavy  # a miss: the full CLI ran


def test_to_a_pipe_a_file_appended_and_a_reader_that_goes_away(task: Path) -> None:
    with Ledger(task) as ledger:
        ledger.add_context("C-1", "a big body line\n" * 20000, "notes/big.md")
    fill(task, "--max-bytes", "1m")
    args = ("prompt", "C-1", "--max-bytes", "1m")
    full, _ = process(task, *args, full=True)
    assert len(full.stdout) > 256 * 1024  # more than a pipe holds
    fast, _ = process(task, *args)
    assert (fast.stdout, fast.stderr, fast.returncode) == (full.stdout, full.stderr, 0)
    appended = task.parent / "appended.md"
    appended.write_bytes(b"before\n")
    with open(appended, "ab") as fh:  # O_APPEND: neither copy_file_range nor sendfile
        fast, _ = process(task, *args, stdout=fh.fileno())
    assert fast.returncode == 0 and appended.read_bytes() == b"before\n" + full.stdout
    outcomes = []
    for which in (False, True):
        reader = subprocess.Popen(["head", "-c", "10"], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL)  # fmt: skip
        assert reader.stdin is not None
        proc, _ = process(task, *args, full=which, stdout=reader.stdin.fileno())
        reader.stdin.close()
        reader.wait()
        outcomes.append((proc.returncode, proc.stderr))
    # said nothing more, and ended as git does then (tests/test_closed_pipe.py)
    assert outcomes[0] == outcomes[1] == (-signal.SIGPIPE, b"")


# -- the grammar: what it takes, click reads the same way ----------------------------


TOKENS = [
    "prompt", "C-1", "X-2", "-C", ".", "--compact", "--max-bytes", "--max-bytes=64k", "8k",
    "0x10", "010", " 7", "1_0", "+5", "-3", "", "--max-tokens", "--max-tokens=9", "5",
    "--encoding", "--encoding=o200k_base", "cl100k_base", "O200K_BASE", "--outline",
    "--no-outline", "-o", "--output", "--output=out.md", "out.md", "-", "--", "-v", "@",
    "16k", "64KiB", "64kb", "64KB", "1mib", "2gb", "0x1kb", "7b", "9ib",
    "--refresh", "--no-cache", "--now", "--current",
]  # fmt: skip


#: What ``prompt`` reads that the fast path reads too (it answers nothing else).
_PROMPT_PARAMS = {
    "task_id", "max_bytes", "max_tokens", "encoding", "outline", "output", "refresh", "quiet",
}  # fmt: skip


#: Each option of ``prompt`` the fast path takes, with its spellings.
_SPELLINGS = [
    ("--max-bytes",), ("--max-tokens",), ("--encoding",), ("-o", "--output"),
    ("--outline", "--no-outline"), ("--refresh",), ("-q", "--quiet"),
]  # fmt: skip
#: Values each valued option takes (the commands also try any token in their place).
_GOOD_VALUES = {
    "--max-bytes": ["8k", "5", "64KiB", "1mib"], "--max-tokens": ["5", "16k"],
    "--encoding": ["o200k_base", "cl100k_base"], "-o": ["out.md", "-"], "--output": ["out.md"],
}  # fmt: skip


#: what _commands draws from, made once (a strategy made anew at each draw cost more
#: than the draw itself)
_BEFORE = st.permutations([["-C", "."], ["--compact"]])
_TASK_NAMES = st.sampled_from(["C-1", "X-2", "@", "--current"])
_SOME_OPTIONS = st.lists(st.sampled_from(_SPELLINGS), unique=True)
_SPELLING = {spellings: st.sampled_from(spellings) for spellings in _SPELLINGS}
_VALUE = {
    spelling: st.sampled_from(_GOOD_VALUES.get(spelling) or TOKENS) | st.sampled_from(TOKENS)
    for spellings in _SPELLINGS
    for spelling in spellings
}
_EXTRA = st.lists(st.sampled_from(TOKENS), max_size=1)


@st.composite
def _commands(draw: st.DrawFn) -> list[str]:
    """A command line of the fast path's grammar: ``-C .`` and ``--compact`` in
    either order, ``prompt``, then the task (an id, ``@`` or ``--current``) among
    any of its options in any order and spelling, each value any token (a valid
    one, or one click refuses or reads differently), now and then one token more."""
    before = draw(_BEFORE)
    args = [arg for words in before[: draw(st.integers(0, 2))] for arg in words]
    options = [[draw(_TASK_NAMES)]]
    for spellings in draw(_SOME_OPTIONS):
        spelling = draw(_SPELLING[spellings])
        value = draw(_VALUE[spelling])
        if spelling not in _GOOD_VALUES:
            options.append([spelling])
        elif spelling.startswith("--") and draw(st.booleans()):
            options.append([f"{spelling}={value}"])
        else:
            options.append([spelling, value])
    ordered = draw(st.permutations(options))
    extra = draw(_EXTRA)
    at = draw(st.integers(0, len(ordered)))
    return [*args, "prompt", *[arg for words in ordered[:at] for arg in words], *extra,
            *[arg for words in ordered[at:] for arg in words]]  # fmt: skip


@settings(max_examples=examples(400), deadline=None)
@given(st.one_of(st.lists(st.sampled_from(TOKENS), max_size=9), _commands()))
@example(["prompt", "C-1", "--refresh"])
@example(["--compact", "prompt", "--refresh", "C-1", "--output=out.md", "--no-outline"])
@example(["-C", ".", "prompt", "--max-tokens=9", "--current", "--refresh"])
def test_what_the_fast_path_takes_click_reads_the_same(args: list[str]) -> None:
    """Every option the fast path parses (``-C``, ``--compact``, each of ``prompt``'s
    it takes, ``--refresh`` and ``--current`` included) is read as click reads it,
    in any order and spelling; anything it does not take, it refuses (``None``)."""
    request = quick.parse(args)
    if request is None:
        return
    from click.core import ParameterSource

    from git_hydrate.cli import cli

    ctx = cli.make_context("git-hydrate", list(args))
    protected = getattr(ctx, "_protected_args", None)
    protected = ctx.protected_args if protected is None else protected
    name, command, rest = cli.resolve_command(ctx, [*protected, *ctx.args])
    assert name == "prompt" and command is not None
    try:
        sub = command.make_context(name, rest, parent=ctx)
    except HydrateError:
        # click resolves @ as it parses (the work tree's current task; none here),
        # the fast path when it looks the prompt up: both read @ as the task id
        assert request.task_id == "@"
        return
    params = sub.params
    if request.task_id == "@":  # (a current task found: click gives its id)
        params = {**params, "task_id": "@"}
    assert (ctx.params["directory"], params["task_id"]) == (request.directory, request.task_id)
    assert (params["max_bytes"], params["max_tokens"]) == (request.max_bytes, request.max_tokens)
    assert (params["encoding"], params["outline"]) == (request.encoding, request.outline)
    assert params["output"] == request.output
    assert params["refresh"] == request.refresh
    assert params["quiet"] == request.quiet
    assert ctx.params["compact"] == ("--compact" in args[: args.index("prompt")])
    # any other option of prompt (-v, --no-cache, --now, one added later) was not given
    given = {name for name in params if sub.get_parameter_source(name) != ParameterSource.DEFAULT}
    assert given <= _PROMPT_PARAMS, sorted(given)


def test_quiet_says_the_summary_only_when_it_is_a_warning(task: Path) -> None:
    """prompt -q, for scripts and hooks (as push -q and add-tree -q): the prompt,
    and on stderr nothing when everything fit, the summary when it is a warning;
    served from the cache as the full command line says it."""
    loud = fill(task)
    assert loud.stderr.startswith("prompt: C-1: kept 4 of 4")
    assert same(task, "prompt", "C-1", "-q")
    quiet = through_entry(task, "prompt", "--quiet", "C-1")
    assert (quiet.stdout, quiet.stderr) == (loud.stdout, "")
    fill(task, "--max-bytes", "3000")
    assert same(task, "prompt", "C-1", "--max-bytes", "3000", "-q")
    tight = through_entry(task, "prompt", "C-1", "--max-bytes", "3000", "-q")
    assert tight.stderr.startswith("warning: C-1: kept ") and tight.stderr.count("\n") == 1
    both = hydrate(task, "prompt", "C-1", "-q", "-v")
    assert both.returncode == 2 and both.stderr.startswith("error: give -q or -v, not both")
