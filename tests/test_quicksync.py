"""pull, push and sync without click (git_hydrate.quicksync): byte for byte what the full
command line prints and the same exit status, on twin clones and twin remotes; anything
outside the fast path's grammar goes to the full command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger, quick
from git_hydrate.quicksync import parse_sharing

from .conftest import ROOT, Result, git, hydrate


def _world(root: Path) -> Path:
    """A bare remote holding three tasks (one with a body), and ``root/a``, a clone
    that pushed them; ``root/b`` a fresh clone. Returns ``root``."""
    root.mkdir(exist_ok=True)
    bare = root / "remote.git"
    git(root, "init", "-q", "--bare", str(bare))
    git(root, "clone", "-q", str(bare), str(root / "a"))
    with Ledger(root / "a") as ledger:
        for task_id in ("Q-1", "Q-2", "Q-3"):
            ledger.add_task(task_id, objective=f"do {task_id}", acceptance="works")
        ledger.add_context("Q-1", "a body\n" * 10, "notes")
        ledger.push()
        ledger.add_task("Q-4", objective="only here", acceptance="works")
    git(root, "clone", "-q", str(bare), str(root / "b"))
    return root


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, Path]:
    """Two identical worlds: one for the fast path, one for the full command line."""
    one = _world(tmp_path / "one")
    two = tmp_path / "two"
    shutil.copytree(one, two, symlinks=True)
    for clone in ("a", "b"):  # (each twin's clones point at its own remote)
        git(two / clone, "remote", "set-url", "origin", str(two / "remote.git"))
    return one, two


def _fast(cwd: Path, *args: str) -> Result:
    """What ``git_hydrate.quick.main`` does for ``args``, in this process; ``served``
    on the result says whether the fast path answered."""
    from git_hydrate.cli import run

    served = False

    def entry(argv: list[str]) -> int:
        nonlocal served
        code = quick.run_sharing(argv)
        served = code is not None
        return run(argv) if code is None else code

    result = hydrate(cwd, *args, entry=entry)
    result.served = served  # type: ignore[attr-defined]
    return result


def _same(twins: tuple[Path, Path], clone: str, *args: str) -> Result:
    """``args`` through the fast path in one twin and the full command line in the
    other: the same stdout, stderr and exit status, and the fast path answered."""
    fast = _fast(twins[0] / clone, *args)
    full = hydrate(twins[1] / clone, *args)
    assert (fast.stdout, fast.stderr, fast.returncode) == (
        full.stdout,
        full.stderr,
        full.returncode,
    ), (args, fast, full)
    assert fast.served, args  # type: ignore[attr-defined]
    return fast


def test_pull_push_sync_say_what_the_full_command_line_says(twins: tuple[Path, Path]) -> None:
    pulled = _same(twins, "b", "pull")
    assert pulled.returncode == 0 and "3 new here" in pulled.stdout
    assert _same(twins, "b", "pull", "--json").stdout.startswith("{\n")
    assert _same(twins, "a", "push", "--compact", "--json").stdout.startswith('{"counts"')
    assert "up to date" in _same(twins, "a", "sync").stdout
    absent = _same(twins, "b", "pull", "origin", "Q-1", "Q-9")
    assert absent.returncode == 1 and "no such task on origin: Q-9" in absent.stderr
    unknown = _same(twins, "b", "sync", "nowhere")
    assert unknown.returncode == 1 and unknown.stderr.startswith("error: no remote named")
    empty = _same(twins, "b", "push", "")
    assert empty.returncode == 1 and "invalid remote" in empty.stderr
    for twin in twins:  # (both twins' clones hold the same tasks at the same tips)
        assert git(twin / "b", "for-each-ref", "refs/hydrate/") == git(
            twins[0] / "b", "for-each-ref", "refs/hydrate/"
        )


def test_a_remote_s_control_characters_leave_as_the_full_command_line_leaves_them(
    twins: tuple[Path, Path],
) -> None:
    for twin in twins:  # (a hook that declines in colour: click strips it off a pipe)
        hook = twin / "remote.git" / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\nprintf '\\033[31mDenied by policy\\033[0m\\n'\nexit 1\n")
        hook.chmod(0o755)
    refused = _same(twins, "a", "push")
    assert refused.returncode == 1 and "Denied by policy" in refused.stderr
    assert "\x1b" not in refused.stderr
    # (as the report's line shows it, on a terminal too: not left to click's stripping)
    assert "saying: \\x1b[31mDenied by policy\\x1b[0m" in refused.stderr


def test_a_remote_hook_s_lines_are_bounded(twins: tuple[Path, Path]) -> None:
    """A hook that says much is heard in part: three lines, each cut at 200
    characters, and how many more there were."""
    for twin in twins:
        hook = twin / "remote.git" / "hooks" / "pre-receive"
        hook.write_text(
            "#!/bin/sh\necho 'frozen'\n"
            f"echo '{'L' * 3000}'\n"
            'for i in 1 2 3 4 5; do echo "line $i"; done\nexit 1\n'
        )
        hook.chmod(0o755)
    refused = _same(twins, "a", "push")
    said = f"saying: frozen / {'L' * 197}... / line 1 / ... and 4 more lines;"
    assert refused.returncode == 1 and said in refused.stdout and said in refused.stderr
    assert "L" * 198 not in refused.stdout + refused.stderr


def test_directory_and_compact_before_the_command(twins: tuple[Path, Path]) -> None:
    for twin in twins:  # (run from elsewhere: -C names the clone)
        (twin / "elsewhere").mkdir()
    fast = _fast(twins[0] / "elsewhere", "-C", "../b", "--compact", "pull", "--json")
    full = hydrate(twins[1] / "elsewhere", "-C", "../b", "--compact", "pull", "--json")
    assert fast.served and (fast.stdout, fast.stderr) == (full.stdout, full.stderr)  # type: ignore[attr-defined]
    assert fast.stdout.startswith('{"counts":{"created":3')


@pytest.mark.parametrize(
    "args",
    [
        ["pull", "-h"],
        ["push", "--help"],
        ["sync", "origin", "extra"],
        ["pull", "--json", "--json"],
        ["pull", "--", "origin"],
        ["pull", "-x"],
        ["-C", "no-such-directory", "pull"],
        ["-C", "a", "-C", "b", "pull"],
        ["--compact", "--compact", "pull"],
        ["--version", "pull"],
        ["task-add", "pull"],
        ["-C", "pull"],
    ],
)
def test_anything_else_goes_to_the_full_command_line(args: list[str]) -> None:
    assert parse_sharing(args) is None


def test_the_grammar_it_takes(tmp_path: Path) -> None:
    request = parse_sharing(["-C", str(tmp_path), "pull", "--json", "origin", "Q-1", "Q-2"])
    assert request is not None
    assert (request.command, request.directory) == ("pull", str(tmp_path))
    assert request.remote == "origin"
    assert (request.task_ids, request.as_json, request.compact) == (("Q-1", "Q-2"), True, False)
    request = parse_sharing(["--compact", "sync"])
    assert request is not None and (request.remote, request.compact) == (None, True)


def test_a_real_pull_imports_no_click(tmp_path: Path) -> None:
    world = _world(tmp_path)
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write(f'click {\"click\" in sys.modules}\\n'))\n"
        "sys.argv[0] = 'git-hydrate'\n"
        "from git_hydrate.quick import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", probe, "pull"],
        cwd=world / "b",
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pull origin: 3 new here")
    assert proc.stderr.endswith("click False\n")


def test_a_sync_with_nothing_to_do_loads_no_digest_nor_secret_rules(tmp_path: Path) -> None:
    """Nothing fetched to check, nothing to push: neither OpenSSL's digests
    (hashlib, a few ms to start) nor the secret rules are loaded; and no module of
    the sharing path makes dataclasses (each class ~3.8 M instructions to create:
    its results are msgspec Structs)."""
    world = _world(tmp_path)
    assert hydrate(world / "b", "pull").returncode == 0
    probe = (
        "import atexit, sys\n"
        "wanted = {'hashlib', 'git_hydrate.secrets', 'dataclasses'}\n"
        "loaded = lambda: sorted(wanted & set(sys.modules))\n"
        "atexit.register(lambda: sys.stderr.write(f'loaded {loaded()}\\n'))\n"
        "sys.argv[0] = 'git-hydrate'\n"
        "from git_hydrate.quick import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", probe, "sync"],
        cwd=world / "b",
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("sync origin: 3 up to date"), proc.stdout
    assert proc.stderr == "loaded []\n"


def test_quiet_says_nothing_when_all_went_well_and_all_when_not(
    twins: tuple[Path, Path],
) -> None:
    """``-q``, as git's: a script or hook that pulls hears only of what went wrong."""
    pulled = _same(twins, "b", "pull", "-q")
    assert (pulled.stdout, pulled.stderr, pulled.returncode) == ("", "", 0)
    assert _same(twins, "a", "push", "--quiet", "origin", "Q-4").stdout == ""
    assert _same(twins, "a", "sync", "-q").stdout == ""
    # (--json is data, not chatter: -q leaves it as it is)
    assert _same(twins, "b", "pull", "-q", "--json").stdout.startswith("{\n")
    absent = _same(twins, "b", "pull", "-q", "origin", "Q-1", "Q-9")
    assert absent.returncode == 1 and "no such task on origin: Q-9" in absent.stderr
    assert "absent" in absent.stdout  # (a failure is reported whole: the why is there)
    for twin in twins:  # (a warning is something wrong: it is still said)
        git(twin / "b", "init", "-q", "--bare", str(twin / "empty.git"))
    empty = _same(twins, "b", "pull", "-q", "../empty.git")
    assert empty.stdout == "" and empty.stderr.startswith("warning: ")
    assert "lists no refs/hydrate/ refs" in empty.stderr and empty.returncode == 0


@pytest.mark.parametrize(
    "args", [["pull", "-q", "-q"], ["sync", "--quiet", "-q"], ["push", "-qq"], ["-q", "pull"]]
)
def test_quiet_twice_or_bunched_goes_to_the_full_command_line(args: list[str]) -> None:
    assert parse_sharing(args) is None


def _archive_naming_a_missing_tip(clone: Path, task_id: str) -> None:
    """Push from ``clone`` an archive that names ``task_id`` at a commit nobody has,
    its parent the task's tip (so it "covers" it): a pull keeps the task live and
    says to see doctor."""
    from git_hydrate import codec
    from git_hydrate.model import ArchivedTask, ArchiveIndex

    tip = git(clone, "rev-parse", f"refs/hydrate/tasks/{task_id}").strip()
    entry = ArchivedTask(tip="0" * 40, title="t", status="done", kind="code", priority=2)
    index = codec.encode(ArchiveIndex(tasks={task_id: entry})).decode()
    blob = git(clone, "hash-object", "-w", "--stdin", input=index).strip()
    tree = git(clone, "mktree", input=f"100644 blob {blob}\tindex.json\n").strip()
    commit = git(clone, "commit-tree", tree, "-p", tip, "-m", "archive").strip()
    git(clone, "push", "-q", "-f", "origin", f"{commit}:refs/hydrate/archive")


def test_quiet_still_warns_of_a_task_kept_for_doctor(twins: tuple[Path, Path]) -> None:
    """A pull that keeps a task live because the remote's archive names it wrongly
    goes well (exit 0), but wants the user: ``-q`` says it on stderr, as ``warning:``,
    and so does a pull without it, beside its line in the report."""
    for twin in twins:
        hydrate(twin / "b", "pull")
        _archive_naming_a_missing_tip(twin / "a", "Q-1")
    quiet = _same(twins, "b", "pull", "-q")
    assert (quiet.stdout, quiet.returncode) == ("", 0)
    assert quiet.stderr == (
        "warning: Q-1: the archive names it at 000000000000, which is missing or not a "
        "readable state of it; kept live (see: git hydrate doctor)\n"
    )
    said = _same(twins, "b", "pull")
    assert said.stderr == quiet.stderr and said.returncode == 0
    assert "  kept           Q-1  (the archive names it at 000000000000" in said.stdout
    assert _same(twins, "b", "sync", "-q").stderr == quiet.stderr
    assert _same(twins, "b", "pull", "-q", "--json").stderr == ""
