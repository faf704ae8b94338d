"""The man page is current and complete; git-style ergonomics through the real git binary
(`git hydrate --help` opens it, `git -c hydrate.*` is honoured, shell completion works)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from git_hydrate import errors
from git_hydrate.cli import ALIASES, manpage

from .conftest import ROOT, git, hydrate
from .wrapper import hydrate_on_path

PAGE = ROOT / "man" / "git-hydrate.1"
REGENERATE = "python -m git_hydrate.cli.manpage > man/git-hydrate.1"


def test_committed_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == manpage.render(), (
        f"man/git-hydrate.1 is out of date; regenerate it with: {REGENERATE}"
    )


def test_every_command_and_option_is_documented() -> None:
    page = manpage.render()
    commands = manpage.walk_commands()
    names = {path.removeprefix("git hydrate ") for path, _, _ in commands}
    assert {"task-add", "pack", "hook", "hook pre-push", "hooks install"} <= names
    for path, command, _ctx in commands:
        name = path.removeprefix("git hydrate ")
        entry = re.search(
            rf"^\.PP\n\\fB{re.escape(manpage.escape(name))}\\fR.*?(?=^\.PP\n\\fB(?!\\-)|^\.SH)",
            page,
            re.M | re.S,
        )
        assert entry, f"command {name} is missing from the man page"
        for param in command.params:
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                if param.param_type_name == "option":
                    assert manpage.escape(opt) in entry.group(0), f"{name} {opt} undocumented"
    for alias in ALIASES:
        assert f"Alias: {alias}." in page


def test_global_options_config_keys_and_exit_codes_are_documented() -> None:
    page = manpage.render()
    options = page.split(".SH OPTIONS", 1)[1].split(".SH CONFIGURATION", 1)[0]
    for opt in ("\\-C", "\\-\\-compact", "\\-\\-version", "\\-h", "\\-\\-help"):
        assert opt in options
    for key in manpage.CONFIG_KEYS:
        assert f"\\fB{manpage.escape(key.name)}\\fR" in page
    codes = {code for code, _ in manpage.EXIT_CODES}
    constants = {getattr(errors, name) for name in dir(errors) if name.startswith("EXIT_")}
    assert constants <= codes and {0, 1, 2, 75, 128} <= codes
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "CONFIGURATION"):
        assert f"\n.SH {section}\n" in page
    for section in ("FILES AND STORAGE FORMAT", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
        assert f"\n.SH {section}\n" in page


def test_every_hydrate_setting_the_code_reads_is_documented() -> None:
    used = set()
    for path in (ROOT / "git_hydrate").rglob("*.py"):
        used |= set(re.findall(r"""["'](hydrate\.[A-Za-z]+)["']""", path.read_text()))
    documented = {key.name for key in manpage.CONFIG_KEYS}
    assert used, "no hydrate.* setting found in the code?"
    assert used <= documented, f"add to manpage.CONFIG_KEYS: {sorted(used - documented)}"


#: How the code names what it keeps under ``<git dir>/hydrate/``: a path joined to
#: ``"hydrate"``, a ``hydrate/...`` path given to git, or a cache's name.
_KEPT = (
    r"""["']hydrate["'], f?["']([\w.-]+)""",
    r"""["']hydrate/([\w.-]+)""",
    r"""(?:SummaryCache|DerivedCache\.of)\(\w+\.repo, f?["']([\w-]+)""",
    r"""_INDEX: Final = ["']([\w-]+)""",
)


def test_every_file_kept_under_the_git_dir_is_documented() -> None:
    """FILES names everything git-hydrate keeps under ``.git/hydrate/`` (it once
    left out git-features, claims-seen, current-task and others)."""
    files = manpage.render().split(".SH FILES AND STORAGE FORMAT", 1)[1].split("\n.SH ", 1)[0]
    kept = set()
    for path in (ROOT / "git_hydrate").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for pattern in _KEPT:
            kept.update(re.findall(pattern, text))
    # (f"token-counts-{x}"; not the package's own modules, nor `git hydrate mcp`)
    kept = {name.split("{")[0].rstrip("-") for name in kept if not name.endswith(".py")}
    kept.discard("mcp")
    assert {"git-features", "claims-seen", "current-task", "prompt-cache"} <= kept
    documented = files.replace("\\-", "-")
    missing = sorted(name for name in kept if name not in documented)
    assert not missing, f"add to manpage's FILES: {missing}"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_page_renders_without_warnings() -> None:
    proc = subprocess.run(
        ["groff", "-ww", "-z", "-man", "-Tutf8", str(PAGE)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert proc.returncode == 0
    assert proc.stderr == ""


def test_generator_prints_the_page() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "git_hydrate.cli.manpage"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == PAGE.read_text(encoding="utf-8")


def test_package_installs_the_page_where_man_looks() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["data-files"]["share/man/man1"] == ["man/git-hydrate.1"]


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_git_hydrate_help_opens_the_page_from_a_venv_layout(tmp_path: Path, repo: Path) -> None:
    # What `pip install` makes of a venv: <prefix>/bin/git-hydrate and
    # <prefix>/share/man/man1/git-hydrate.1. man-db finds the page from PATH.
    prefix = tmp_path / "venv"
    env = hydrate_on_path(prefix / "bin")
    (prefix / "share" / "man" / "man1").mkdir(parents=True)
    shutil.copy(PAGE, prefix / "share" / "man" / "man1" / "git-hydrate.1")
    env.pop("MANPATH", None)
    env.update({"MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "80", "LC_ALL": "C.UTF-8"})
    where = subprocess.run(
        ["man", "-w", "git-hydrate"], capture_output=True, text=True, env=env, check=False
    )
    if where.returncode != 0:
        pytest.skip(f"this man does not derive its path from PATH: {where.stderr.strip()}")
    assert Path(where.stdout.strip()) == prefix / "share" / "man" / "man1" / "git-hydrate.1"
    shown = subprocess.run(
        ["git", "hydrate", "--help"], cwd=repo, capture_output=True, text=True, env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert re.sub(".\b", "", shown.stdout).splitlines()[0].startswith("GIT-HYDRATE(1)")
    short = subprocess.run(
        ["git", "hydrate", "-h"], cwd=repo, capture_output=True, text=True, env=env
    )
    assert short.returncode == 0 and short.stderr == ""
    assert short.stdout.startswith("Usage: git hydrate [OPTIONS] COMMAND [ARGS]...")

    # Called directly on a terminal, --help opens the page too; piped, it prints the short help.
    primary, secondary = os.openpty()
    direct = subprocess.Popen(
        ["git-hydrate", "--help"], stdout=secondary, stderr=subprocess.PIPE, env=env, cwd=repo
    )
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
    assert direct.wait() == 0
    assert b"GIT-HYDRATE(1)" in re.sub(b".\b", b"", b"".join(chunks))
    piped = subprocess.run(["git-hydrate", "--help"], capture_output=True, text=True, env=env)
    assert piped.stdout.startswith("Usage: git-hydrate [OPTIONS] COMMAND [ARGS]...")


# -- git config through the real git binary -------------------------------------------


def test_git_dash_c_max_bytes_reaches_pack(repo: Path, tmp_path: Path) -> None:
    from git_hydrate import Ledger

    env = hydrate_on_path(tmp_path / "bin")
    with Ledger(repo) as ledger:
        ledger.add_task("M-1002", objective="Add GET /healthz", acceptance="200")
        ledger.add_context("M-1002", "x" * 3000, "big", priority=1)

    def pack(*config: str) -> dict[str, object]:
        proc = subprocess.run(
            ["git", *config, "hydrate", "--compact", "pack", "M-1002"],
            cwd=repo,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        result: dict[str, object] = json.loads(proc.stdout)
        return result

    default = pack()
    assert default["max_bytes"] == 131072 and default["omitted"] == []
    small = pack("-c", "hydrate.maxBytes=2000")
    assert small["max_bytes"] == 2000
    assert [o["reason"] for o in small["omitted"]] == ["byte_budget"]  # type: ignore[union-attr]
    git(repo, "config", "hydrate.maxBytes", "1500")
    assert pack()["max_bytes"] == 1500
    assert pack("-c", "hydrate.maxBytes=8k")["max_bytes"] == 8192  # -c wins over the file
    bad = subprocess.run(
        ["git", "-c", "hydrate.maxBytes=lots", "hydrate", "pack", "M-1002"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == 1 and bad.stdout == ""
    whole = "a whole number (k, m or g after it allowed: 64k)"
    assert bad.stderr == f"error: git config hydrate.maxBytes must be {whole}, not 'lots'\n"


def test_shell_completion_lists_commands(tmp_path: Path) -> None:
    env = hydrate_on_path(tmp_path / "bin")
    env.update(
        {
            "_GIT_HYDRATE_COMPLETE": "bash_complete",
            "COMP_WORDS": "git-hydrate hoo",
            "COMP_CWORD": "1",
        }
    )
    proc = subprocess.run(["git-hydrate"], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["plain,hook", "plain,hooks"]
    env.update({"COMP_WORDS": "git-hydrate hooks ", "COMP_CWORD": "2"})
    proc = subprocess.run(["git-hydrate"], capture_output=True, text=True, env=env, check=False)
    assert proc.stdout.split() == ["plain,install", "plain,status", "plain,uninstall"]
    env["_GIT_HYDRATE_COMPLETE"] = "bash_source"
    script = subprocess.run(["git-hydrate"], capture_output=True, text=True, env=env, check=False)
    assert "complete " in script.stdout and "_GIT_HYDRATE_COMPLETE" in script.stdout


GIT_BASH_COMPLETION = Path("/usr/share/bash-completion/completions/git")


@pytest.mark.skipif(not GIT_BASH_COMPLETION.is_file(), reason="git's bash completion is absent")
def test_documented_completion_function_completes_git_hydrate(tmp_path: Path, repo: Path) -> None:
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    function = re.search(r"```bash\n(_git_hydrate\(\) \{.*?\n\})\n```", page, re.S)
    assert function, "docs/install.md lost its _git_hydrate completion function"
    script = (
        f"source {GIT_BASH_COMPLETION}\n{function.group(1)}\n"
        'COMP_WORDS=(git hydrate hoo); COMP_CWORD=2; COMP_LINE="git hydrate hoo"\n'
        'COMP_POINT=${#COMP_LINE}; __git_wrap__git_main; echo "${COMPREPLY[*]}"\n'
        'COMP_WORDS=(git hydrate pack --max); COMP_CWORD=3; COMP_LINE="git hydrate pack --max"\n'
        'COMP_POINT=${#COMP_LINE}; __git_wrap__git_main; echo "${COMPREPLY[*]}"\n'
    )
    env = hydrate_on_path(tmp_path / "bin")
    proc = subprocess.run(
        ["bash", "-c", script], cwd=repo, capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["hook hooks", "--max-bytes --max-tokens"]


def test_mcp_help_names_every_tool_the_server_serves() -> None:
    from click.testing import CliRunner

    from git_hydrate.cli import cli
    from git_hydrate.serve import TOOLS

    names = [str(tool["name"]) for tool in TOOLS]
    assert "search_tasks" in names
    shown = CliRunner().invoke(cli, ["mcp", "-h"]).output
    listed = re.search(r"Tools: (.*?);", " ".join(shown.split()))
    assert listed is not None, shown
    assert listed.group(1).split(", ") == names
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert f"Tools: {', '.join(names)};" in page.replace("\\-", "-")


def test_command_list_does_not_import_the_mcp_server() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom git_hydrate.cli import cli\n"
        "out = CliRunner().invoke(cli, ['-h']).output\n"
        "assert 'mcp ' in out, out\nprint('git_hydrate.serve' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "False", proc.stderr


def test_pack_and_expand_help_name_every_key_they_print(repo: Path) -> None:
    from typing import get_type_hints

    from git_hydrate.results import ExpandResult, PackResult

    (repo / "big.py").write_text("x = 1\n" * 4000)
    git(repo, "add", "big.py")
    git(repo, "commit", "-q", "-m", "a file in play too big to attach")
    made = hydrate(repo, "task-add", "K-1", "--objective", "o", "--acceptance", "a",
                   "--file-in-play", "big.py")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert hydrate(repo, "add-tree", "K-1", "--max-file-bytes", "1k").returncode == 0
    for name, declared in (("pack", PackResult), ("expand", ExpandResult)):
        keys = set(get_type_hints(declared))
        done = hydrate(repo, name, "K-1")
        assert done.returncode == 0, done.stderr
        printed = set(json.loads(done.stdout))
        assert "flagged" in printed and printed <= keys, printed - keys
        shown = " ".join(hydrate(repo, name, "-h").stdout.split())
        for key in keys:
            assert re.search(rf"\b{key}\b", shown), f"{name} -h does not name {key}"


def _examples(help_text: str) -> list[str]:
    """The Example(s) blocks of a -h text, each as it is pasted: indentation and all."""
    blocks: list[list[str]] = []
    current: list[str] = []
    indent = -1
    for line in help_text.splitlines():
        depth = len(line) - len(line.lstrip())
        if line.strip() in ("Example:", "Examples:"):
            current, indent = [], depth
            blocks.append(current)
        elif indent >= 0 and line.strip() and depth > indent:
            current.append(line)
        else:
            indent = -1
    return ["\n".join(block) + "\n" for block in blocks if block]


def test_every_help_example_parses_as_pasted() -> None:
    """Each example, pasted from -h into bash as shown (indented), is whole shell: no
    here-document whose indented terminator would never close it."""
    checked = 0
    for path, command, ctx in manpage.walk_commands():
        for block in _examples(command.get_help(ctx)):
            assert not re.search(r"<<-?\s*['\"]?\w", block), f"{path}: a here-document in\n{block}"
            proc = subprocess.run(["bash", "-n"], input=block, capture_output=True, text=True)
            assert proc.returncode == 0 and proc.stderr == "", f"{path}:\n{block}{proc.stderr}"
            checked += 1
    assert checked > 30
