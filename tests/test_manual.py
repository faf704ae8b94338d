"""`git hydrate help`: the manual page after any install, with or without man (issue 34).

git answers `git hydrate --help` by running `man git-hydrate`, which finds the page
only where a regular or pipx install put it; an editable install puts it nowhere.
`git hydrate help` renders the page from the code, through `man -l` on a terminal
or as plain text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate.cli import manpage
from git_hydrate.cli.manual import plain_text

from .conftest import ROOT, hydrate
from .wrapper import hydrate_on_path

NEEDS_MAN = pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")


def on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run ``argv`` with its stdout on a pseudo-terminal; its status and what it showed."""
    primary, secondary = os.openpty()
    proc = subprocess.Popen(argv, stdout=secondary, stderr=subprocess.PIPE, env=env, cwd=cwd)
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    shown = re.sub(b".\b", b"", b"".join(chunks)).decode("utf-8", "replace")
    return proc.wait(), shown.replace("\r\n", "\n")


def pager_env(env: dict[str, str]) -> dict[str, str]:
    env = {**env, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80", "LC_ALL": "C.UTF-8"}
    env.pop("MANPATH", None)
    return env


# -- the plain-text rendering ------------------------------------------------------------


def test_plain_text_leaves_no_roff_and_wraps_paragraphs() -> None:
    page = manpage.render()
    text = plain_text(page)
    assert text.startswith("GIT-HYDRATE(1)\n\nNAME\n       git-hydrate - keep tasks")
    assert not re.search(r"\\(f[BIRP]|\(..|\[u|-|&|e)", text)  # no roff escape is left
    assert not [line for line in text.splitlines() if line.startswith(".")]
    for heading in ("SYNOPSIS", "COMMANDS", "OPTIONS", "EXIT STATUS", "SEE ALSO"):
        assert f"\n\n{heading}\n       " in text
    # each command is a term at the section's indent, its text four columns in
    assert "\n       help [OPTIONS] [COMMAND]...\n\n           Show the manual page" in text
    # filled lines stay within 80 columns; only verbatim example lines may run over
    verbatim = {
        plain_text(f".nf\n{line}\n.fi").strip()
        for block in re.findall(r"\n\.nf\n(.*?)\n\.fi", page, re.S)
        for line in block.splitlines()
    }
    long = [line.strip() for line in text.splitlines() if len(line) > 80]
    assert set(long) <= verbatim


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_plain_text_has_the_words_groff_sets_in_the_same_order() -> None:
    page = manpage.render()
    groff = subprocess.run(
        ["groff", "-man", "-Tutf8", "-P-cbu", "-rLL=80n"],
        input=page,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    ).stdout.split()
    ours = plain_text(page).split()
    # groff adds a header (NAME(1) Git Manual NAME(1)) and a footer (source, NAME(1))
    assert groff[:4] == ["GIT-HYDRATE(1)", "Git", "Manual", "GIT-HYDRATE(1)"]
    assert ours[0] == "GIT-HYDRATE(1)" and ours[1] == "NAME"
    assert ours[1:] == groff[4:-3]


# -- the help command --------------------------------------------------------------------


def test_help_prints_the_page_as_plain_text_when_piped(repo: Path) -> None:
    shown = hydrate(repo, "help")
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout == plain_text(manpage.render())
    # outside a repository too: the manual needs none
    assert hydrate(repo.parent, "help").stdout == shown.stdout


def test_help_command_is_the_command_short_help(repo: Path) -> None:
    assert hydrate(repo, "help", "prompt").stdout == hydrate(repo, "prompt", "-h").stdout
    nested = hydrate(repo, "help", "hooks", "install")
    assert nested.returncode == 0
    assert nested.stdout == hydrate(repo, "hooks", "install", "-h").stdout
    typo = hydrate(repo, "help", "promt")
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr == (
        "error: No such command 'promt'. Did you mean 'prompt'? (see: git-hydrate help -h)\n"
    )
    assert "The manual: git hydrate help" in hydrate(repo, "-h").stdout


@NEEDS_MAN
def test_help_on_a_terminal_opens_the_page_with_man(tmp_path: Path, repo: Path) -> None:
    env = pager_env(hydrate_on_path(tmp_path / "bin"))
    status, shown = on_a_terminal(["git", "hydrate", "help"], env, repo)
    assert status == 0
    assert shown.startswith("GIT-HYDRATE(1)") and "Git Manual" in shown.splitlines()[0]
    assert "git hydrate help prompt" in shown


def test_help_on_a_terminal_without_man_pages_plain_text(tmp_path: Path, repo: Path) -> None:
    # a PATH with git and git-hydrate, and no man
    bin_dir = tmp_path / "bin"
    env = pager_env(hydrate_on_path(bin_dir))
    git_binary = shutil.which("git")
    assert git_binary
    (bin_dir / "git").symlink_to(git_binary)
    (bin_dir / "cat").symlink_to(shutil.which("cat") or "/bin/cat")
    env["PATH"] = str(bin_dir)
    status, shown = on_a_terminal(["git-hydrate", "help"], env, repo)
    assert status == 0, shown
    assert shown.startswith("GIT-HYDRATE(1)\n\nNAME\n")


def test_help_on_a_terminal_shows_plain_text_when_man_fails(tmp_path: Path, repo: Path) -> None:
    # a man that cannot show the page (as man-db without groff): exit status 16
    bin_dir = tmp_path / "bin"
    env = pager_env(hydrate_on_path(bin_dir))
    (bin_dir / "man").write_text("#!/bin/sh\necho 'man: cannot format the page' >&2\nexit 16\n")
    (bin_dir / "man").chmod(0o755)
    (bin_dir / "cat").symlink_to(shutil.which("cat") or "/bin/cat")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    status, shown = on_a_terminal(["git-hydrate", "help"], env, repo)
    assert status == 0, shown
    assert shown.startswith("GIT-HYDRATE(1)\n\nNAME\n")
    assert "git hydrate help prompt" in shown


# -- after the quick start's two installs ------------------------------------------------


def _copy_checkout(dest: Path) -> Path:
    """This checkout as it is (uncommitted changes too), without its venvs and caches."""
    shutil.copytree(
        ROOT,
        dest,
        ignore=shutil.ignore_patterns(
            ".venv*", ".git", "__pycache__", "*.egg-info", "build", ".*_cache"
        ),
    )
    return dest


@pytest.mark.slow
def test_the_manual_after_the_quick_starts_two_installs(tmp_path: Path, repo: Path) -> None:
    # README, quick start: `pip install .` into .venv, then `pip install -e '.[test]'` into
    # the same .venv, which replaces the first install (and its share/man page). The
    # extras change nothing here, so the second install is `-e .`: faster, same layout.
    # The pip is this run's own, installing into the venv (`pip --python`): a venv of
    # its own pip would copy pip and setuptools into it twice (`python -m venv` runs
    # ensurepip again on the quick start's second line), 8 of the test's 20 CPU-seconds;
    # what lands in the venv is the same, its scheme being the venv's interpreter's.
    checkout = _copy_checkout(tmp_path / "checkout")
    venv = checkout / ".venv"

    def run(*argv: str | Path) -> None:
        done = subprocess.run(
            [str(a) for a in argv], cwd=checkout, capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr[-2000:]

    def pip_install(*argv: str) -> None:
        run(sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", *argv)

    run(sys.executable, "-m", "venv", "--without-pip", venv)
    pip_install("-q", ".")
    page = venv / "share" / "man" / "man1" / "git-hydrate.1"
    assert page.read_text(encoding="utf-8") == manpage.render()  # where man looks
    pip_install("-q", "-e", ".")

    env = pager_env({**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"})
    env.pop("PYTHONPATH", None)
    shown = subprocess.run(
        ["git", "hydrate", "help"], cwd=repo, capture_output=True, text=True, env=env
    )
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout == plain_text(manpage.render())
    # the editable install runs the copy's code: its page, rendered from that code
    status, on_terminal = on_a_terminal(["git-hydrate", "--help"], env, repo)
    assert status == 0
    assert on_terminal.startswith("GIT-HYDRATE(1)")
    assert "git hydrate help prompt" in on_terminal
    status, on_terminal = on_a_terminal(["git", "hydrate", "help"], env, repo)
    assert status == 0 and on_terminal.startswith("GIT-HYDRATE(1)")
