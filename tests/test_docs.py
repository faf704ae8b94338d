"""The documentation cannot drift: every shell block runs, every command and option is real
and documented.

Each ``sh`` block of README.md and docs/*.md runs verbatim (bash, stop at the first failing
line) in a scratch repository — one per page, blocks in order — with ``git hydrate`` on
``PATH``. A block preceded by a line ``<!-- not run: why -->`` is an example only (it
needs a network, a model or changes the machine). The scratch repository has
``src/parser.py``, ``tests/test_parser.py``, a README, a commit, a bare ``origin`` remote
and the files the examples name (``notes.txt``, ``edge-notes.txt``).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Final

import click
import pytest

from git_hydrate.cli import ALIASES, COMMANDS, cli
from tests.conftest import ROOT, from_template, git, template_path
from tests.wrapper import hydrate_on_path

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```sh\n(?P<body>.*?)\n```", re.S)


def blocks(page: Path) -> list[tuple[str, bool]]:
    """``(text, runs)`` of each ``sh`` block of a page, in order."""
    text = page.read_text(encoding="utf-8")
    return [
        (m.group("body"), not m.group("before").startswith("<!-- not run"))
        for m in _BLOCK.finditer("\n" + text)
    ]


def scratch(tmp_path: Path, *, with_task: bool) -> Path:
    """The scratch repository ``project`` beside ``other-service`` and ``origin.git``
    under ``tmp_path``, a copy of a template made once; ``with_task``: with the
    task M-1002 the pages' examples work on."""
    name = "docs-scratch-m1002" if with_task else "docs-scratch"
    made = from_template(name, _with_task if with_task else _scratch, tmp_path / "scratch")
    config = made / "project" / ".git" / "config"  # origin: this copy's, not the template's
    config.write_text(config.read_text().replace(str(template_path(name)), str(made)))
    return made / "project"


def _scratch(root: Path) -> None:
    repo = root / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main", str(repo))
    files = {
        "README": "A small project.\n",
        "src/parser.py": "def parse(text):\n    return text.split(',')\n",
        "tests/test_parser.py": "from src.parser import parse\n\n\ndef test_parse():\n"
        "    assert parse('a,b') == ['a', 'b']\n",
        "notes.txt": "Notes from the design review.\n",
        "docs/guide.md": "# Guide\n\nHow to use the parser.\n",
        "edge-notes.txt": "The edge proxy sets X-Request-Id on every response.\n",
    }
    for name, content in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "tag", "v1.2.0")
    other = root / "other-service"  # a second resource, as the examples hydrate
    other.mkdir()
    (other / "api.md").write_text("# The other service's API\n")
    origin = root / "origin.git"
    git(root, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "-u", "origin", "main")


def _with_task(root: Path) -> None:
    """The scratch with M-1002, made by the command line as a reader would."""
    from_template("docs-scratch", _scratch, root)
    config = root / "project" / ".git" / "config"
    config.write_text(config.read_text().replace(str(template_path("docs-scratch")), str(root)))
    subprocess.run(
        [
            "git",
            "hydrate",
            "task-add",
            "M-1002",
            "--objective",
            "Add GET /healthz",
            "--acceptance",
            "200",
            "--file-in-play",
            "src/parser.py",
        ],
        cwd=root / "project",
        env=hydrate_on_path(root.parent / "docs-bin"),
        check=True,
        capture_output=True,
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_shell_block_runs_verbatim(page: Path, tmp_path: Path) -> None:
    runnable = [body for body, runs in blocks(page) if runs]
    if not runnable:
        pytest.skip(f"{page.name} has no runnable shell block")
    # the pages' examples work on a task M-1002; a page that does not create it finds it
    with_task = "task-add M-1002" not in page.read_text(encoding="utf-8")
    repo = scratch(tmp_path, with_task=with_task)
    env = hydrate_on_path(tmp_path / "bin")
    for body in runnable:
        proc = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", body],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"{page.name}: block failed:\n{body}\n---\n{proc.stderr}"
        assert "Traceback" not in proc.stderr


def _options(command: click.Command) -> set[str]:
    names = set()
    for param in command.params:
        if isinstance(param, click.Option):
            names.update(o for o in [*param.opts, *param.secondary_opts] if o.startswith("--"))
    return names


def _command(name: str) -> click.Command:
    ctx = click.Context(cli)
    found = cli.get_command(ctx, name)
    assert found is not None, name
    return found


def test_blocks_use_only_real_commands_and_options() -> None:
    global_options = _options(cli)
    for page in PAGES:
        for body, _runs in blocks(page):
            for line in body.replace("\\\n", " ").splitlines():
                words = shlex.split(line.split(" #")[0], posix=True) if line.strip() else []
                for index, word in enumerate(words[:-1]):
                    if word == "git" and words[index + 1] == "hydrate" and index + 2 < len(words):
                        rest = [w for w in words[index + 2 :] if not w.startswith("-C")]
                        name = next((w for w in rest if not w.startswith("-")), "")
                        if name not in COMMANDS:
                            continue  # `git hydrate -h` and the like
                        command = _command(name)
                        known = _options(command) | global_options | {"--help"}
                        if isinstance(command, click.Group):
                            known |= {
                                o for sub in command.commands.values() for o in _options(sub)
                            }
                        given = (w.split("=")[0] for w in rest if w.startswith("--") and w != "--")
                        for option in given:
                            assert option in known, f"{page.name}: {name} has no {option}"


def test_every_command_and_option_is_documented() -> None:
    text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    for name in COMMANDS:
        if name in ALIASES:
            continue
        assert f"`{name}" in text or f" {name} " in text, f"command {name} is not documented"
        command = _command(name)
        subs = command.commands.values() if isinstance(command, click.Group) else [command]
        for sub in subs:
            for option in _options(sub):
                assert option in text, f"{name} {option} is not documented in README or docs/"


COMMANDS_PAGE = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")


def _named(option: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def _commands_page_rows(name: str) -> str:
    """The table rows of docs/commands.md that show ``name`` (``task-edit``: task-add's too)."""
    rows = [line for line in COMMANDS_PAGE.splitlines() if line.startswith("| `")]
    names = {name, "task-add"} if name == "task-edit" else {name}
    first = name.split()[0]
    return "\n".join(
        row
        for row in rows
        if any(re.search(rf"(^\| |, )`{re.escape(n)}[ `]", row) for n in names)
        or re.search(rf"`{re.escape(first)}[ `]", row)
    )


def test_commands_page_names_every_option_of_every_command() -> None:
    """README says docs/commands.md lists every option: each in its command's row, or in
    the paragraphs under the table (BUDGET, the global options)."""
    shared = "\n".join(line for line in COMMANDS_PAGE.splitlines() if not line.startswith("|"))
    missing = []
    for name in COMMANDS:
        if name in ALIASES:
            continue
        command = _command(name)
        subs = (
            [(f"{name} {sub}", cmd) for sub, cmd in command.commands.items()]
            if isinstance(command, click.Group)
            else [(name, command)]
        )
        for path, sub in subs:
            rows = _commands_page_rows(path)
            for param in sub.params:
                if not isinstance(param, click.Option):
                    continue
                for option in [*param.opts, *param.secondary_opts]:
                    if option in {"-h", "--help", "--json", "--compact"}:
                        continue
                    if not (_named(option, rows) or _named(option, shared)):
                        missing.append(f"{path} {option}")
    assert not missing, f"docs/commands.md does not name: {', '.join(missing)}"


def test_a_prompt_file_a_page_writes_again_keeps_its_budget() -> None:
    """`prompt --refresh` records no budget: a page that writes FILE again must give the
    same budget, else the second prompt is packed at the default."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8").replace("\\\n", " ")
        budgets: dict[str, set[tuple[str, ...]]] = {}
        for found in re.finditer(r"git hydrate prompt ([^`\n#]*?)-o (\S+?)[`\s]", text):
            given = tuple(re.findall(r"--max-(?:bytes|tokens)[ =]\S+", found.group(1)))
            budgets.setdefault(found.group(2), set()).add(given)
        for output, seen in budgets.items():
            assert len(seen) == 1, f"{page.name}: {output} is written at budgets {sorted(seen)}"


def _every_command() -> list[tuple[str, click.Command]]:
    found = []
    for name in sorted(COMMANDS):
        command = _command(name)
        found.append((name, command))
        if isinstance(command, click.Group):
            found += [(f"{name} {sub}", cmd) for sub, cmd in sorted(command.commands.items())]
    return found


def test_every_usage_line_brackets_an_optional_argument() -> None:
    """``import [OPTIONS] FILE`` read as if FILE were required, though import reads
    standard input without one (explorer15): a metavar given by hand must say
    ``[…]`` for an argument that may be left out, as click's own metavar does."""
    wrong = []
    for name, command in _every_command():
        # (an ID that --current stands in for is required unless --current is given)
        current = "--current" in _options(command)
        for param in command.params:
            if current and param.name == "task_id":
                continue
            if isinstance(param, click.Argument) and not param.required:
                piece = param.make_metavar(click.Context(command))
                if not piece.startswith("["):
                    wrong.append(f"{name}: {piece}")
    assert wrong == []


def _listed_commands(group: click.Group, path: str, columns: int = 80) -> dict[str, str]:
    """What ``git hydrate [GROUP] -h`` says of each command it lists, on a terminal
    ``columns`` wide: ``{name: line}``, ending in ``...`` where cut or wrapped."""
    ctx = click.Context(group, info_name=path, terminal_width=columns - 2)  # (as click leaves)
    formatter = ctx.make_formatter()
    group.format_commands(ctx, formatter)
    said: dict[str, str] = {}
    for line in formatter.getvalue().splitlines():
        name, _, text = line.strip().partition(" ")
        if name in group.list_commands(ctx):
            said[name] = text.strip()
        elif line.startswith("    ") and said:  # (a line too long for its column: wrapped)
            said[list(said)[-1]] += "..."
    return said


def test_every_command_is_listed_whole_in_help() -> None:
    """``git hydrate -h`` cut 28 of its 38 commands' lines short at 80 columns
    (``export  Write the tasks ID...``): each command has a line of its own that fits."""
    groups: list[tuple[str, click.Group]] = [("git-hydrate", cli)]
    groups += [(f"git-hydrate {n}", g) for n, g in _every_command() if isinstance(g, click.Group)]
    cut = []
    for path, group in groups:
        listed = _listed_commands(group, path)
        assert listed, path
        cut += [f"{path} {name}: {text}" for name, text in listed.items() if text.endswith("...")]
    assert not cut, "\n".join(cut)


def test_every_option_s_value_is_named_by_what_it_is() -> None:
    """``--priority INTEGER RANGE`` named click's type, not the value (docs/commands.md
    says ``--priority N``), and one kind of value had three names (``--ttl DURATION``,
    ``--stale-after AGE``, ``doctor --older-than SECONDS``): each value's name is one
    word, and every age or duration is named ``AGE`` or ``DURATION``."""
    from git_hydrate.cli._common import Duration

    wrong = []
    for name, command in _every_command():
        ctx = click.Context(command)
        for param in command.params:
            if not isinstance(param, click.Option) or param.is_flag or param.count:
                continue
            metavar = param.make_metavar(ctx)
            if " " in metavar:
                wrong.append(f"{name} {param.opts[-1]} {metavar}")
            if isinstance(param.type, Duration) and metavar not in ("AGE", "DURATION"):
                wrong.append(f"{name} {param.opts[-1]} {metavar}")
    assert not wrong, ", ".join(wrong)


#: Capitals a command's summary may use that name no value of its own.
_NOT_VALUES: Final = {"JSON", "JSONL", "MCP", "HEAD", "URL", "UTF-8"}


def test_every_value_a_summary_names_is_in_its_usage() -> None:
    """``agent context -h`` said "sized for AGENT's session" over a usage line of
    ``{claude|codex|aider}``: a name in capitals in the opening paragraph of a
    command's help (ID, REMOTE, AGENT) is one its usage line or options show."""
    wrong = []
    for name, command in _every_command():
        if name in ALIASES:
            continue
        ctx = click.Context(command)
        # (from the params alone: collect_usage_pieces would make click keep a help
        # option without -h for the command, for every test after this one)
        shown = " ".join(
            param.make_metavar(ctx)
            for param in command.params
            if not isinstance(param, click.Option) or not (param.is_flag or param.count)
        )
        opening = (command.help or "").split("\n\n")[0]
        capitals = re.findall(r"(?<![\w./-])([A-Z][A-Z0-9-]*[A-Z0-9])(?![\w.-])", opening)
        wrong += [
            f"{name}: {word}" for word in capitals if word not in shown and word not in _NOT_VALUES
        ]
    assert not wrong, ", ".join(wrong)


def _examples(command: click.Command) -> tuple[str, int] | None:
    """The heading of a command's example block and how many of its commands run
    git hydrate (a line ending in ``\\``, ``|`` or ``&&`` goes on to the next), or
    ``None``."""
    import inspect

    text = inspect.cleandoc(command.help or "")
    found = re.search(r"\x08\n(Examples?):\n((?:  .*(?:\n|$))+)", text)
    if found is None:
        return None
    statements = [""]
    for line in found.group(2).splitlines():
        statements[-1] += line
        if not line.rstrip().endswith(("\\", "|", "&&")):
            statements.append("")
    return found.group(1), sum("hydrate" in statement for statement in statements)


def test_every_command_shows_an_example_under_the_right_heading() -> None:
    """Fourteen commands headed several examples "Example:" and eleven "Examples:":
    every command (and the group itself) has an example block, "Example:" over one
    and "Examples:" over more."""
    wrong = []
    for name, command in [("git-hydrate", cli), *_every_command()]:
        if name in ALIASES:
            continue
        found = _examples(command)
        if found is None:
            wrong.append(f"{name}: no example")
        elif (found[0] == "Example") != (found[1] == 1):
            wrong.append(f"{name}: {found[1]} under {found[0]}:")
    assert not wrong, ", ".join(wrong)
