"""A reader that goes away (`| head`): every command ends as git does then,
killed by SIGPIPE (a shell says 141), saying nothing; its work is done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, hydrate

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE here")


def _into_closed_pipe(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``git-hydrate ARGS`` (a new interpreter, the installed entry point's code)
    writing into a real pipe whose reader has already gone."""
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "git_hydrate", *args],
            cwd=cwd,
            stdout=write,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
    finally:
        os.close(write)


@pytest.fixture
def task(repo: Path) -> Path:
    made = hydrate(repo, "task-add", "J-1", "--objective", "o", "--acceptance", "a")
    assert made.returncode == 0, made
    added = hydrate(repo, "add", "J-1", "--text", "".join(f"line {n}\n" for n in range(20000)))
    assert added.returncode == 0, added
    return repo


@pytest.mark.parametrize(
    "args",
    [
        ("prompt", "J-1", "--no-cache"),  # the full command line
        ("prompt", "J-1"),  # (cached by the first, or built: either path)
        ("list",),
        ("show", "J-1", "--json"),
        ("task-edit", "J-1", "--priority", "1"),
        ("-h",),
        ("--version",),
    ],
)
def test_a_closed_pipe_ends_the_process_by_sigpipe(task: Path, args: tuple[str, ...]) -> None:
    ended = _into_closed_pipe(task, *args)
    assert ended.returncode == -signal.SIGPIPE, ended
    assert ended.stderr == b""


def test_the_cached_prompt_too(task: Path) -> None:
    assert hydrate(task, "prompt", "J-1", "-o", os.devnull).returncode == 0  # (now cached)
    ended = _into_closed_pipe(task, "prompt", "J-1")
    assert (ended.returncode, ended.stderr) == (-signal.SIGPIPE, b"")


def test_the_work_is_done(task: Path) -> None:
    ended = _into_closed_pipe(task, "task-edit", "J-1", "--priority", "3")
    assert (ended.returncode, ended.stderr) == (-signal.SIGPIPE, b"")
    assert '"priority": 3' in hydrate(task, "show", "J-1", "--json").stdout


def test_through_git_the_status_is_141(task: Path, tmp_path: Path) -> None:
    """As git reports its own commands killed by SIGPIPE: 141, and no word."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "git-hydrate"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m git_hydrate "$@"\n')
    script.chmod(0o755)
    read, write = os.pipe()
    os.close(read)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    try:
        ended = subprocess.run(
            ["git", "hydrate", "prompt", "J-1", "--no-cache"],
            cwd=task, stdout=write, stderr=subprocess.PIPE, env=env, check=False,
        )  # fmt: skip
    finally:
        os.close(write)
    assert (ended.returncode, ended.stderr) == (141, b"")


def _reader_leaves_early(cwd: Path, *args: str) -> None:
    """``git-hydrate ARGS`` writing into a pipe whose reader takes 10 bytes of its
    output and leaves while more waits: the command ends by SIGPIPE, saying nothing."""
    read, write = os.pipe()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "git_hydrate", *args],
        cwd=cwd,
        stdout=write,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read(10)  # (the output has begun: more than the pipe holds waits)
    _out, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (-signal.SIGPIPE, b"")


def test_a_reader_that_leaves_in_the_middle_of_a_large_json_write_is_seen(task: Path) -> None:
    """review11: `pack J-1 | (read a little; exit)` exited 0: Python's buffered writer
    handed the ~200 KB answer to one write, kept what the pipe took when the reader
    left, and dropped the rest silently. JSON goes out a write at a time now, and
    the short one is followed by one that finds the reader gone: SIGPIPE."""
    _reader_leaves_early(task, "pack", "J-1", "--max-bytes", "1m")


def test_a_reader_that_leaves_in_the_middle_of_an_attachment_is_seen(task: Path) -> None:
    """`show J-1 --attachment ID | head` exited 0 as the JSON answers did (the body
    went to the buffered writer in one write): it goes out a write at a time."""
    listed = json.loads(hydrate(task, "show", "J-1", "--json").stdout)
    _reader_leaves_early(task, "show", "J-1", "--attachment", listed["context"][0]["hash"])


@pytest.mark.parametrize(
    "args",
    [
        ("help",),  # the manual as plain text (~90 KB)
        ("export", "J-1", "J-2", "J-3", "J-4", "J-5", "--format", "json-beads"),
    ],
)
def test_a_reader_that_leaves_in_the_middle_of_one_long_text_is_seen(
    task: Path, args: tuple[str, ...]
) -> None:
    """`help | head` and `export ... | head` exited 0: each text went to click's
    echo in one write (see above); they go out a write at a time now."""
    for n in range(2, 6):  # (four more tasks of a long objective each: the export's bulk)
        long = f"task {n}: " + "a long objective word " * 1000
        made = hydrate(task, "task-add", f"J-{n}", "--objective", long, "--acceptance", "a")
        assert made.returncode == 0, made
    _reader_leaves_early(task, *args)
