"""What a repository's text can do to the terminal that shows it: nothing.

Bodies reach standard output as their bytes when it is a pipe or a file
(``show --attachment``, ``prompt``, ``agent context``); on a terminal every
control character but the line feed and the tab is shown escaped, as task
fields already are, so an escape sequence in a body cannot clear the screen,
set the title or write the clipboard (OSC 52).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import git, hydrate, on_a_terminal

#: A screen clear, a title (OSC 0, ended by BEL), an OSC 52 clipboard write, a
#: carriage return, a tab and an 8-bit CSI (U+009B).
HOSTILE = "a\x1b[2J\x1b]0;title\x07\n\x1b]52;c;cm0gLXJmIH4=\x07\tb\rc\u009b31m\n"
SHOWN = "a\\x1b[2J\\x1b]0;title\\x07\n\\x1b]52;c;cm0gLXJmIH4=\\x07\tb\\x0dc\\x9b31m\n"


@pytest.fixture
def task(repo: Path) -> tuple[Path, str]:
    (repo / "esc.txt").write_text(HOSTILE, encoding="utf-8")
    git(repo, "add", "esc.txt")
    git(repo, "commit", "-q", "-m", "esc")
    added = hydrate(repo, "task-add", "E-1", "--objective", "o", "--acceptance", "a")
    assert added.returncode == 0, added
    attached = hydrate(repo, "add", "E-1", "--file", "esc.txt")
    assert attached.returncode == 0, attached
    entries = hydrate(repo, "show", "E-1", "--json")
    (entry,) = json.loads(entries.stdout)["context"]
    return repo, str(entry["hash"])


@pytest.mark.parametrize("shape", ["seed", "markdown", "xml"])
def test_show_attachment_piped_is_the_body_byte_for_byte(
    task: tuple[Path, str], shape: str
) -> None:
    """Found by a tester: ``click.echo`` stripped the CSI sequences of a body written
    to a pipe (the OSC stayed), so the output was not the body the help promises."""
    repo, digest = task
    shown = hydrate(repo, "show", "E-1", "--attachment", digest[:8], "--format", shape)
    assert shown.returncode == 0, shown
    assert HOSTILE in shown.stdout  # (nothing in it is structure, nor <, > or &)
    if shape == "markdown":
        assert f"```text\n{HOSTILE}```\n" in shown.stdout


def test_bodies_on_a_terminal_cannot_drive_it(task: tuple[Path, str]) -> None:
    repo, digest = task
    for args in (
        ("show", "E-1", "--attachment", digest, "--format", "markdown"),
        ("prompt", "E-1", "--format", "markdown"),
        ("prompt", "E-1"),  # built, then again from the prompt cache (copied)
        ("prompt", "E-1"),
        ("prompt", "E-1", "-o", "/dev/stdout"),  # (a path that is the terminal: explorer8)
        ("prompt", "E-1", "--format", "markdown", "--no-cache", "-o", "/dev/stdout"),
    ):
        out = on_a_terminal(repo, *args).decode("utf-8")
        assert SHOWN in out, (args, out)
        assert not {"\x1b", "\x07", "\r", "\u009b"} & set(out), args
    # piped, the same prompt is the bytes
    assert HOSTILE in hydrate(repo, "prompt", "E-1", "--format", "markdown").stdout


def test_agent_context_piped_is_the_prompt_byte_for_byte(task: tuple[Path, str]) -> None:
    repo, _digest = task
    assert hydrate(repo, "start", "E-1").returncode == 0
    context = hydrate(repo, "agent", "context", "claude")
    assert context.returncode == 0, context
    assert HOSTILE in context.stdout
    assert "\\x1b" in on_a_terminal(repo, "agent", "context", "claude").decode("utf-8")


def test_json_writes_terminal_controls_and_bidi_as_escapes(task: tuple[Path, str]) -> None:
    """JSON allows a C1 control (U+009B, an 8-bit CSI) or a bidi override raw in a
    string: `expand --json` on a terminal passed them through (explorer9). On a
    terminal they are written as \\uXXXX now: the same JSON value."""
    repo, _digest = task
    with open(repo / "esc.txt", "a", encoding="utf-8") as fh:
        fh.write("\u202eright to left\u2028\n")
    assert hydrate(repo, "add", "E-1", "--file", "esc.txt").returncode == 0
    out = on_a_terminal(repo, "expand", "E-1", "--max-bytes", "100000").decode("utf-8")
    assert not {"\u009b", "\u202e", "\u2028"} & set(out)
    assert "\\u009b" in out and "\\u202e" in out and "\\u2028" in out
    bodies = [c["body"] for c in json.loads(out)["packet"]["context"]]
    assert any("\u009b31m" in body and "\u202eright to left\u2028" in body for body in bodies)
    piped = hydrate(repo, "expand", "E-1", "--max-bytes", "100000").stdout
    assert json.loads(piped) == json.loads(out) and "\u202e" in piped  # (raw: as before)
