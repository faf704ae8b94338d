"""Running the real ``git`` binary: the one place a git process is started.

Every git command git-hydrate runs goes through :func:`run_git` (one-shot) or
:func:`git_argv` (long-running readers), so the environment git passes a
subcommand is handled in one place and a failure always becomes
:class:`~git_hydrate.errors.GitFailed` with git's own reason in one line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from typing import Final

from ..errors import GitFailed, NotARepository, NotWritable

__all__ = [
    "REPO_ENV",
    "first_line",
    "format_tz",
    "not_writable",
    "outside_env",
    "parse_tz",
    "run_git",
]

#: Environment variables git sets for a subcommand that point at *its*
#: repository; they must not leak into a ``git -C other`` call.
REPO_ENV: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
)


def outside_env() -> dict[str, str]:
    """The environment for git run on *another* repository than the caller's."""
    return {k: v for k, v in os.environ.items() if k not in REPO_ENV}


def first_line(data: bytes) -> str:
    """git's error as one line: its first message plus indented continuation lines."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    message = lines[0].strip()
    for line in lines[1:]:
        if not line[:1].isspace():
            break
        message += " " + line.strip()
    return message


def reason(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The reason a git process failed, without git's ``fatal:``/``error:`` prefix."""
    lines = [
        line.strip()
        for line in proc.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith(("hint:", "warning:"))
    ]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    message = (fatal or lines or [f"exit status {proc.returncode}"])[0]
    return message.removeprefix("fatal: ").removeprefix("error: ")


def run_git(
    args: list[str],
    *,
    cwd: str | None = None,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    what: str = "",
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``git`` binary and capture its output.

    Raises:
        NotARepository: ``git`` is not installed.
        GitFailed: ``check`` and git exited non-zero (``what`` names the step).
    """
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            check=False,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        raise NotARepository("the git binary was not found on PATH") from None
    if check and proc.returncode != 0:
        step = what or f"git {args[0] if args[0] != '--git-dir' else _command(args)}"
        raise GitFailed(f"{step} failed: {reason(proc)}")
    return proc


def _command(args: list[str]) -> str:
    """The git subcommand in an argument list that starts with global options."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--git-dir", "--work-tree", "-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "command"


def format_tz(offset: int) -> bytes:
    """A UTC offset in seconds as git writes it (``+0100``, ``-0530``)."""
    sign = b"-" if offset < 0 else b"+"
    minutes = abs(offset) // 60
    return b"%s%02d%02d" % (sign, minutes // 60, minutes % 60)


def parse_tz(text: bytes) -> int:
    """``+0130`` as seconds east of UTC (0 when it is not a git offset)."""
    sign = -1 if text.startswith(b"-") else 1
    digits = text.lstrip(b"+-")
    if len(digits) != 4 or not digits.isdigit():
        return 0
    return sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)


def not_writable(exc: OSError, where: str) -> NotWritable:
    """The one-line error for a write the file system refused."""
    path = exc.filename or where
    return NotWritable(f"cannot write to the repository ({path}): {exc.strerror or exc}")
