"""The ``### Not included`` notice's command lists the omissions of the very prompt
it sits in: it spells the budget and format the prompt was built with."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from git_hydrate.pack import tokens
from tests.conftest import commit_files, git, hydrate

needs_tokens = pytest.mark.skipif(
    tokens._toktok_counter() is None and tokens._pure_counter() is None,
    reason="needs git-hydrate[tokens]",
)

#: The command a notice's count line (or named-files line) gives.
LISTER = re.compile(r"(git hydrate (?:prompt|expand) .*?) lists (?:every one|them|it)$", re.M)


def python_module(name: str, functions: int) -> str:
    return "".join(
        f"def {name}_{i}(value):\n    '''Doc {i}.'''\n" + "    value += 1\n" * 12
        for i in range(functions)
    )


@pytest.fixture
def notes(repo: Path) -> Path:
    files = {f"notes/n{i:02}.txt": f"note number {i}\n" * (1 + i % 7) for i in range(60)}
    files |= {f"src/m{i}.py": python_module(f"m{i}", 8) for i in range(4)}
    commit_files(repo, files)
    hydrate(repo, "task-add", "L-1", "--objective", "notes", "--acceptance", "ok",
            "--file-in-play", "src/m0.py", "--file-in-play", "gone.py")  # fmt: skip
    assert hydrate(repo, "add-tree", "L-1").returncode == 0
    return repo


def listed(stderr: str) -> list[str]:
    """The lines ``prompt -v`` lists (omitted, shrunk, unattached), without the summary."""
    return [line for line in stderr.splitlines() if line.startswith("  ")]


def lister_of(prompt: str) -> list[str]:
    """The arguments of the command the prompt's notice gives (one, whichever line)."""
    commands = set(LISTER.findall(prompt))
    assert len(commands) == 1, commands
    words = shlex.split(commands.pop())
    assert words[:2] == ["git", "hydrate"]
    return words[2:]


@pytest.mark.parametrize(
    "options",
    [
        ["--max-bytes", "8000"],  # names some, counts the rest
        ["--max-bytes", "2600", "--format", "markdown"],
        ["--max-bytes", "3000", "--no-outline", "--format", "xml"],
        ["--max-bytes", "900"],  # only counts
        pytest.param(["--max-tokens", "900", "--encoding", "cl100k_base"], marks=needs_tokens),
        pytest.param(["--max-bytes", "4000", "--max-tokens", "1500"], marks=needs_tokens),
    ],
)
def test_the_notices_command_lists_this_prompts_omissions(notes: Path, options: list[str]) -> None:
    built = hydrate(notes, "prompt", "L-1", *options, "-v")
    assert built.returncode == 0, built.stderr
    args = lister_of(built.stdout)
    assert args == ["prompt", "L-1", *options, "-v"]
    assert listed(built.stderr)  # (something was left out)
    again = hydrate(notes, *args)
    assert again.returncode == 0, again.stderr
    assert again.stdout == built.stdout
    assert listed(again.stderr) == listed(built.stderr)


def test_a_setting_changes_what_the_command_spells(notes: Path) -> None:
    """A budget from the settings is spelled too: the command builds the same prompt
    wherever the settings differ from the built-in defaults."""
    git(notes, "config", "hydrate.maxBytes", "2000")
    built = hydrate(notes, "prompt", "L-1", "-v")
    args = lister_of(built.stdout)
    assert args == ["prompt", "L-1", "--max-bytes", "2000", "-v"]
    assert listed(hydrate(notes, *args).stderr) == listed(built.stderr)


@pytest.mark.parametrize(
    ("setting", "value", "options"),
    [
        ("hydrate.promptFormat", "xml", ["--max-bytes", "3000", "--format", "seed"]),
        ("hydrate.outline", "false", ["--max-bytes", "3000", "--outline"]),
    ],
)
def test_a_flag_back_to_the_built_in_default_is_spelled_against_a_setting(
    notes: Path, setting: str, value: str, options: list[str]
) -> None:
    """A flag that sets a part back to its built-in default, against a setting that
    says otherwise, is spelled: left out, the setting would build another prompt."""
    git(notes, "config", setting, value)
    built = hydrate(notes, "prompt", "L-1", *options, "-v")
    assert built.returncode == 0, built.stderr
    args = lister_of(built.stdout)
    assert args == ["prompt", "L-1", *options, "-v"]
    again = hydrate(notes, *args)
    assert again.stdout == built.stdout
    assert listed(again.stderr) == listed(built.stderr)


def test_the_expand_notices_command_is_expand_with_its_budget(notes: Path) -> None:
    """expand measures the packet too: its notice points at expand, whose result
    lists its own omissions (``omitted``, ``shrunk``)."""
    built = hydrate(notes, "expand", "L-1", "--max-bytes", "4000", "--format", "markdown")
    assert built.returncode == 0, built.stderr
    first = json.loads(built.stdout)
    args = lister_of(first["prompt"])
    assert args == ["expand", "L-1", "--max-bytes", "4000", "--format", "markdown"]
    again = json.loads(hydrate(notes, *args).stdout)
    assert first["omitted"] and again["omitted"] == first["omitted"]
    assert again.get("shrunk") == first.get("shrunk")


def test_the_options_spell_what_differs_from_the_built_in_defaults() -> None:
    from git_hydrate.pack.budget import Budget

    assert Budget(131072, None, "o200k_base", True, "seed").options() == ""
    assert Budget(16000, None, "o200k_base", True, "markdown").options() == (
        " --max-bytes 16000 --format markdown"
    )
    # (a token budget alone drops the default byte budget: it is spelled beside one)
    assert Budget(131072, 900, "cl100k_base", False, "xml").options() == (
        " --max-bytes 131072 --max-tokens 900 --encoding cl100k_base --no-outline --format xml"
    )
    assert Budget(None, 900, "o200k_base", True, "seed").options() == " --max-tokens 900"
    settled = Budget(2000, None, "o200k_base", False, "xml")
    assert Budget(2000, None, "o200k_base", False, "xml").options(settled) == (
        " --max-bytes 2000 --no-outline --format xml"
    )
    assert Budget(131072, None, "o200k_base", True, "seed").options(settled) == (
        " --max-bytes 131072 --outline --format seed"
    )
