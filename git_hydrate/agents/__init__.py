"""Bridges into coding agents' sessions: Claude Code, Codex and aider.

``install`` writes, into files each agent already reads, only what is between
git-hydrate's own markers (or its own entries, in JSON); installing again
changes nothing; ``uninstall`` takes it all out again. A bridge leaves no trace
in commits: the files it creates are untracked and listed in
``.git/info/exclude``, and where a host reads its instructions only from a
file the team may track, it writes a small block that never changes:

* ``claude``: a ``SessionStart`` hook in ``.claude/settings.local.json``
  (Claude Code's personal project settings, not the team's
  ``.claude/settings.json``) whose command, ``git hydrate agent context
  claude``, prints the current task's prompt sized to fit; and, when the
  ``mcp`` extra is installed, the MCP server in ``.mcp.json`` (left alone when
  git tracks it: the result says how to add the server for oneself).
* ``codex``: a marked block in ``AGENTS.md`` telling Codex to print the
  current task's prompt with ``git hydrate prompt --current``: the same words
  whatever the task; with ``user``, the MCP server in Codex's own
  ``config.toml`` (``$CODEX_HOME``, else ``~/.codex``), outside the repository.
* ``aider``: the prompt in ``.git-hydrate-task.md`` at the top of the work
  tree, named by a relative path in ``.aider.conf.yml``'s ``read:`` list
  (left alone when git tracks it: the result says to start aider with
  ``--read .git-hydrate-task.md``).

:mod:`.files` keeps each file's original bytes and what was written;
:mod:`.formats` merges into and out of each host's formats. ``refresh``
rewrites the aider prompt for the current task.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final

from ..errors import TooSmall, ValidationError
from ..ledger import Ledger
from ..serve.answers import AnswerBudget, fit_prompt, surface_format
from . import formats
from .files import (
    Edits,
    UserFile,
    WorkTreeFile,
    load_state,
    remove_empty_folder,
    restore,
    save_state,
    shared_exclusion_notes,
    state_path,
    sync_exclude,
    top,
)
from .formats import BEGIN, CLAUDE_COMMAND, END

__all__ = [
    "AGENTS",
    "AIDER_PROMPT",
    "BEGIN",
    "CLAUDE_COMMAND",
    "CLAUDE_CONTEXT_BYTES",
    "CLAUDE_SETTINGS",
    "END",
    "MISSING_MCP",
    "codex_config",
    "context",
    "install",
    "install_all",
    "refresh",
    "status",
    "uninstall",
]

AGENTS: Final = ("claude", "codex", "aider")
#: What the session-start hook prints at most: below the ~20 KB past which Claude
#: Code has been reported to replace a hook's output by a preview.
CLAUDE_CONTEXT_BYTES: Final = 16000
#: Claude Code's personal settings of a project (not the team's settings.json).
CLAUDE_SETTINGS: Final = ".claude/settings.local.json"
#: The aider prompt, at the top of the work tree (untracked, excluded).
AIDER_PROMPT: Final = ".git-hydrate-task.md"
#: The one line said when the MCP server cannot be registered for want of the extra.
MISSING_MCP: Final = (
    "the MCP server needs the optional extra git-hydrate[mcp]: pip install "
    "'git-hydrate[mcp]', then install again ({what} not written)"
)
_NO_TASK: Final = (
    "No current git-hydrate task in this work tree: run `git hydrate start ID`, "
    "then `git hydrate agent refresh`."
)

#: The session start's text when the task's fields alone exceed its budget (the id
#: is a checked task id: no text of the task's own stands outside a prompt's block).
_TOO_LARGE: Final = (
    "The current git-hydrate task is {task}. Its prompt does not fit the {size} bytes a "
    "session start holds (the task's own fields are larger): read it with `git hydrate "
    "prompt {task}`, or page through it with the git-hydrate MCP server's get_prompt tool."
)


# -- the prompts --------------------------------------------------------------------------


def _current_prompt(ledger: Ledger, max_bytes: int) -> str | None:
    """The current task's prompt within ``max_bytes`` (with what it left out)."""
    found = ledger.current()
    if found is None:
        return None
    budget = AnswerBudget(max_bytes, "bytes", "o200k_base", None)
    return fit_prompt(ledger, str(found["task_id"]), budget)


def context(ledger: Ledger, agent: str = "claude") -> str:
    """What the session-start hook prints: the current task's prompt within
    :data:`CLAUDE_CONTEXT_BYTES`, or ``""`` without a current task; when the
    task's own fields do not fit there, where to read its prompt (a session that
    is told nothing would not know there is a task)."""
    _check_agent(agent)
    try:
        return _current_prompt(ledger, CLAUDE_CONTEXT_BYTES) or ""
    except TooSmall:
        found = ledger.current()
        if found is None:
            raise
        return _TOO_LARGE.format(task=found["task_id"], size=f"{CLAUDE_CONTEXT_BYTES:,}")


def _aider_prompt(ledger: Ledger) -> bytes:
    found = ledger.current()
    if found is None:
        return (_NO_TASK + "\n").encode("utf-8")
    prompt = ledger.prompt(str(found["task_id"]), format=surface_format(ledger))["prompt"]
    return str(prompt).encode("utf-8")


def codex_config() -> Path:
    """Codex's own configuration file: ``$CODEX_HOME/config.toml``, else ``~/.codex/``'s."""
    home = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
    return Path(home) / "config.toml"


# -- installing -----------------------------------------------------------------------------


def _check_agent(agent: str) -> None:
    if agent not in AGENTS:
        shown = repr(agent) if len(agent) <= 40 else repr(agent[:37]) + "…"
        raise ValidationError(f"unknown agent {shown}; use one of {', '.join(AGENTS)}")


def _has_mcp() -> bool:
    """Whether ``git hydrate mcp`` can run: the SDK imports (not only that it is found)."""
    try:
        importlib.import_module("mcp.server.lowlevel")
    except ImportError:
        return False
    return True


def _install_claude(edits: Edits) -> None:
    edits.edit(CLAUDE_SETTINGS, formats.claude_hook_with(CLAUDE_SETTINGS))
    if not _has_mcp():
        edits.notes.append(MISSING_MCP.format(what=".mcp.json"))
    elif ".mcp.json" not in edits.state["files"] and edits.ledger.repo.tracked([".mcp.json"]):
        edits.notes.append(
            ".mcp.json is tracked, so it is left alone: add the server for yourself with "
            "claude mcp add --scope local git-hydrate -- git hydrate mcp"
        )
    else:
        edits.edit(".mcp.json", formats.mcp_json_with)


def _install_codex(edits: Edits, user: bool) -> None:
    edits.edit("AGENTS.md", formats.codex_pointer_with)
    if not user:
        return
    config = codex_config()
    if _has_mcp():
        edits.edit_user(config, formats.codex_toml_with(str(config)))
    else:
        edits.notes.append(MISSING_MCP.format(what=str(config)))


def _install_aider(edits: Edits) -> None:
    edits.edit(AIDER_PROMPT, lambda _before: _aider_prompt(edits.ledger))
    conf = ".aider.conf.yml"
    if conf not in edits.state["files"] and edits.ledger.repo.tracked([conf]):
        edits.notes.append(
            f"{conf} is tracked, so it is left alone: start aider with --read {AIDER_PROMPT}"
        )
    else:
        edits.edit(conf, formats.aider_with(AIDER_PROMPT))


def install(ledger: Ledger, agent: str, *, user: bool = False) -> dict[str, Any]:
    """Bridge ``agent`` into this work tree; again: nothing changes but the prompt.

    ``user`` (codex): also register the MCP server in Codex's own configuration.
    Returns ``{agent, files: {path: action}, tracked: [path], notes: [line]}``:
    ``tracked`` are the files git tracks that were changed or are git-hydrate's.

    Raises:
        Conflict: a file to merge into is not what its agent reads (bad JSON...).
    """
    return install_all(ledger, [agent], user=user)[0]


def install_all(
    ledger: Ledger, agents: Iterable[str], *, user: bool = False
) -> list[dict[str, Any]]:
    """:func:`install` of each of ``agents``, every change of every one worked out
    before any is written: a file one agent cannot merge into leaves every file
    as it was, whichever agent comes first."""
    planned = [_planned(ledger, agent, user) for agent in agents]
    results = []
    for agent, edits in planned:
        edits.write()
        sync_exclude(ledger, edits.state["excluded"], [])
        edits.notes += shared_exclusion_notes(ledger, edits.state["excluded"])
        save_state(ledger, agent, edits.state)
        results.append(
            {
                "agent": agent,
                "files": edits.actions,
                "tracked": edits.tracked,
                "notes": edits.notes,
            }
        )
    return results


def _planned(ledger: Ledger, agent: str, user: bool) -> tuple[str, Edits]:
    """The edits of ``agent``'s install, worked out, none written."""
    _check_agent(agent)
    edits = Edits(ledger, agent)
    if agent == "claude":
        _install_claude(edits)
    elif agent == "codex":
        _install_codex(edits, user)
    else:
        _install_aider(edits)
    return agent, edits


_REMOVERS: Final[dict[str, Callable[[bytes], bytes]]] = {
    CLAUDE_SETTINGS: formats.claude_hook_without,
    ".claude/settings.json": formats.claude_hook_without,  # (installs before issue 28)
    ".mcp.json": formats.mcp_json_without,
    "AGENTS.md": formats.markdown_without,
    ".aider.conf.yml": formats.aider_without,
    AIDER_PROMPT: lambda _data: b"",
}


def uninstall(ledger: Ledger, agent: str) -> dict[str, Any]:
    """Take out everything ``install`` put in for ``agent``.

    A file that still holds exactly what git-hydrate wrote gets its original
    bytes back (or is removed if git-hydrate created it); an edited one loses
    only git-hydrate's block or entries. Returns ``{agent, files: {path: action}}``
    (``restored``, ``removed``, ``cleaned``, ``unchanged``).
    """
    _check_agent(agent)
    top(ledger)
    files = ledger.repo.work_tree_files
    assert files is not None  # (there is a work tree: top() said so)
    state = load_state(ledger, agent)
    # (only the files this bridge writes: a damaged state may name any)
    state["files"] = {k: v for k, v in state["files"].items() if k in _REMOVERS}
    places = {relative: WorkTreeFile(files, relative) for relative in state["files"]}
    for place in places.values():
        place.check()  # (a symbolic link refused before anything is changed)
    actions: dict[str, str] = {}
    for relative, record in state["files"].items():
        actions[relative] = restore(places[relative], record, _REMOVERS[relative])
    for path, record in state["user"].items():
        actions[path] = restore(UserFile(Path(path)), record, formats.codex_toml_without)
    for directory in sorted(state["dirs"], key=len, reverse=True):
        remove_empty_folder(files, directory)  # (only when empty)
    sync_exclude(ledger, [], state["excluded"])
    if agent == "aider":  # where installs before issue 28 kept the prompt
        with contextlib.suppress(FileNotFoundError):
            Path(ledger.repo.git_path("hydrate/agents/aider-prompt.md")).unlink()
    with contextlib.suppress(FileNotFoundError):
        state_path(ledger, agent).unlink()
    return {"agent": agent, "files": actions}


def _installed(ledger: Ledger, agent: str) -> bool:
    return state_path(ledger, agent).exists()


def refresh(ledger: Ledger) -> dict[str, Any]:
    """Rewrite the prompts of the installed agents for the current task (aider's;
    Codex's block, the same whatever the task, is brought up to date).

    Returns ``{task_id, agents: {agent: {path: action}}}``.
    """
    found = ledger.current()
    done: dict[str, Any] = {}
    for agent in ("codex", "aider"):
        if _installed(ledger, agent):
            done[agent] = install(ledger, agent)["files"]
    return {"task_id": found["task_id"] if found else None, "agents": done}


def status(ledger: Ledger) -> dict[str, Any]:
    """Which agents are installed here, with the files each one touched.

    Returns ``{current, agents: {agent: {installed, files}}}``.
    """
    found = ledger.current()
    report: dict[str, Any] = {}
    for agent in AGENTS:
        state = load_state(ledger, agent)
        files = sorted(state["files"]) + sorted(state["user"])
        report[agent] = {"installed": _installed(ledger, agent), "files": files}
    return {"current": found["task_id"] if found else None, "agents": report}
