"""Bridges into coding agents' sessions: Claude Code, Codex and aider.

``install`` writes, into files each agent already reads, only what is between
git-hydrate's own markers (or its own entries, in JSON); installing again
changes nothing; ``uninstall`` takes it all out again:

* ``claude``: a ``SessionStart`` hook in ``.claude/settings.json`` (merged
  into what is there) whose command, ``git hydrate agent context claude``,
  prints the current task's prompt sized to fit; and, when the ``mcp`` extra
  is installed, the MCP server in ``.mcp.json``.
* ``codex``: a marked block in ``AGENTS.md`` holding the current task's prompt
  within Codex's 32 KiB instruction cap (``project_doc_max_bytes``), counting
  what the rest of the file already uses.
* ``aider``: the prompt written to a file in the work tree's git directory,
  named in ``.aider.conf.yml``'s ``read:`` list.

What each file was before git-hydrate first touched it is kept in the work
tree's git directory (``git rev-parse --git-path hydrate/agents/NAME.json``):
when a file still holds exactly what git-hydrate last wrote, ``uninstall``
puts the original bytes back; when someone edited it since, only git-hydrate's
markers and entries are taken out, and the edits stay. ``refresh`` rewrites
the prompts (the Codex block and the aider file) for the current task.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from .errors import Conflict, HydrateError, ValidationError
from .ledger import Ledger
from .serve.answers import AnswerBudget, fit_prompt, surface_format
from .store import current_umask

__all__ = [
    "AGENTS",
    "BEGIN",
    "CLAUDE_COMMAND",
    "CLAUDE_CONTEXT_BYTES",
    "CODEX_CAP",
    "END",
    "context",
    "install",
    "refresh",
    "status",
    "uninstall",
]

AGENTS: Final = ("claude", "codex", "aider")
#: The markers around git-hydrate's block in Markdown and YAML files.
BEGIN: Final = "git-hydrate:begin"
END: Final = "git-hydrate:end"
#: The command Claude Code runs at session start.
CLAUDE_COMMAND: Final = "git hydrate agent context claude"
#: What the session-start hook prints at most: below the ~20 KB past which Claude
#: Code has been reported to replace a hook's output by a preview.
CLAUDE_CONTEXT_BYTES: Final = 16000
#: Codex reads at most this much of the AGENTS.md files together (project_doc_max_bytes).
CODEX_CAP: Final = 32 * 1024
#: Bytes kept free in AGENTS.md for what Codex adds between files.
_CODEX_MARGIN: Final = 512
_SESSION_MATCHER: Final = "startup|resume|clear|compact"
_MCP_NAME: Final = "git-hydrate"
_MCP_ENTRY: Final = dict(command="git", args=["hydrate", "mcp"])
_YAML_MARK: Final = "  # git-hydrate"
_NO_TASK: Final = (
    "No current git-hydrate task in this work tree: run `git hydrate start ID`, "
    "then `git hydrate agent refresh`."
)


# -- files, their originals, and what was written -----------------------------------


def _top(ledger: Ledger) -> Path:
    if ledger.repo.work_tree is None:
        raise ValidationError("git hydrate agent needs a work tree (this repository is bare)")
    return Path(ledger.repo.work_tree)


def _state_path(ledger: Ledger, agent: str) -> Path:
    return Path(ledger.repo.git_path(f"hydrate/agents/{agent}.json"))


def _load_state(ledger: Ledger, agent: str) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(ledger, agent).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"files": {}, "dirs": []}
    return data if isinstance(data, dict) else {"files": {}, "dirs": []}


def _save_state(ledger: Ledger, agent: str, state: dict[str, Any]) -> None:
    path = _state_path(ledger, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _write(path: Path, data: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        mode = os.stat(path).st_mode & 0o7777 if path.exists() else 0o666 & ~current_umask()
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _edit(
    ledger: Ledger,
    agent: str,
    state: dict[str, Any],
    relative: str,
    change: Callable[[bytes | None], bytes],
) -> str:
    """Apply ``change`` to the file; remember its original the first time. Returns
    ``installed``, ``updated`` or ``unchanged``."""
    path = _top(ledger) / relative
    before = _read(path)
    files = state.setdefault("files", {})
    if relative not in files:
        files[relative] = {
            "original": None if before is None else base64.b64encode(before).decode("ascii"),
            "written": None,
        }
    after = change(before)
    if after == before:
        files[relative]["written"] = _sha(before)
        return "unchanged"
    if not path.parent.exists():
        created = []
        for parent in reversed(path.parents):
            if not parent.exists():
                created.append(str(parent.relative_to(_top(ledger))))
        path.parent.mkdir(parents=True)
        state.setdefault("dirs", []).extend(created)
    _write(path, after)
    files[relative]["written"] = _sha(after)
    return "installed" if before is None else "updated"


# -- the block in Markdown and YAML files --------------------------------------------------


def _unforgeable(text: str) -> str:
    """``text`` with anything that reads as one of the markers broken up."""
    return text.replace(BEGIN, "git-hydrate: begin").replace(END, "git-hydrate: end")


def _with_block(text: str, block: str) -> str:
    """``text`` with the marked block replaced, or appended after one line feed."""
    found = _block_span(text)
    if found is not None:
        return text[: found[0]] + block + text[found[1] :]
    return text + ("\n" if text else "") + block


def _block_span(text: str) -> tuple[int, int] | None:
    """Where the marked block is: from its first line to after its last line."""
    begin = re.search(rf"^.*{re.escape(BEGIN)}.*$", text, re.MULTILINE)
    if begin is None:
        return None
    end = re.compile(rf"^.*{re.escape(END)}.*(\n|\Z)", re.MULTILINE).search(text, begin.end())
    if end is None:
        return None
    return begin.start(), end.end()


def _without_block(text: str) -> str:
    """``text`` without the marked block and the one line feed put before it."""
    found = _block_span(text)
    if found is None:
        return text
    start, stop = found
    if start > 0 and text[start - 1] == "\n":
        start -= 1
    return text[:start] + text[stop:]


# -- the prompts --------------------------------------------------------------------------


def _current_prompt(ledger: Ledger, max_bytes: int) -> str | None:
    """The current task's prompt within ``max_bytes`` (with its omission summary)."""
    found = ledger.current()
    if found is None:
        return None
    budget = AnswerBudget(max_bytes, "bytes", "o200k_base", None)
    return fit_prompt(ledger, str(found["task_id"]), budget)


def context(ledger: Ledger, agent: str = "claude") -> str:
    """What the session-start hook prints: the current task's prompt within
    :data:`CLAUDE_CONTEXT_BYTES`, or ``""`` without a current task."""
    _check_agent(agent)
    return _current_prompt(ledger, CLAUDE_CONTEXT_BYTES) or ""


def _codex_block(ledger: Ledger, rest: str) -> str:
    head = f"<!-- {BEGIN}: the current task, from `git hydrate agent refresh` -->\n"
    tail = f"<!-- {END} -->\n"
    used = len(rest.encode("utf-8")) + len((head + tail).encode("utf-8")) + 2
    room = CODEX_CAP - _CODEX_MARGIN - used
    if room < 1024:
        body = (
            f"AGENTS.md leaves {max(room, 0)} bytes of Codex's {CODEX_CAP} for the task; "
            "read it with `git hydrate prompt @`."
        )
    else:
        try:
            body = _current_prompt(ledger, room) or _NO_TASK
        except HydrateError as exc:
            body = f"The current task cannot be packed here ({exc}); see `git hydrate prompt @`."
    return head + _unforgeable(body).rstrip("\n") + "\n" + tail


def _aider_prompt(ledger: Ledger) -> str:
    found = ledger.current()
    if found is None:
        return _NO_TASK + "\n"
    return str(ledger.prompt(str(found["task_id"]), format=surface_format(ledger))["prompt"])


def _aider_file(ledger: Ledger) -> Path:
    return Path(ledger.repo.git_path("hydrate/agents/aider-prompt.md"))


# -- installing -----------------------------------------------------------------------------


def _check_agent(agent: str) -> None:
    if agent not in AGENTS:
        raise ValidationError(f"unknown agent {agent!r}; use one of {', '.join(AGENTS)}")


def _json_object(data: bytes | None, name: str) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise Conflict(f"{name} is not valid JSON ({exc}); fix it, then install again") from None
    if not isinstance(value, dict):
        raise Conflict(f"{name} does not hold a JSON object; fix it, then install again")
    return value


def _dump(value: dict[str, Any]) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _claude_settings(data: bytes | None) -> bytes:
    settings = _json_object(data, ".claude/settings.json")
    hooks = settings.setdefault("hooks", {})
    starts = hooks.setdefault("SessionStart", [])
    if not isinstance(hooks, dict) or not isinstance(starts, list):
        raise Conflict(".claude/settings.json: hooks.SessionStart is not a list")
    if any(_is_our_group(group) for group in starts):
        return data if data is not None else _dump(settings)
    starts.append(
        {"matcher": _SESSION_MATCHER, "hooks": [{"type": "command", "command": CLAUDE_COMMAND}]}
    )
    return _dump(settings)


def _is_our_group(group: Any) -> bool:
    return isinstance(group, dict) and any(
        isinstance(hook, dict) and hook.get("command") == CLAUDE_COMMAND
        for hook in group.get("hooks") or []
    )


def _without_claude_hook(data: bytes) -> bytes:
    settings = _json_object(data, ".claude/settings.json")
    hooks = settings.get("hooks")
    if isinstance(hooks, dict) and isinstance(hooks.get("SessionStart"), list):
        kept = [g for g in hooks["SessionStart"] if not _is_our_group(g)]
        if kept:
            hooks["SessionStart"] = kept
        else:
            del hooks["SessionStart"]
        if not hooks:
            del settings["hooks"]
    return _dump(settings) if settings else b""


def _mcp_config(data: bytes | None) -> bytes:
    config = _json_object(data, ".mcp.json")
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise Conflict(".mcp.json: mcpServers is not an object")
    if _MCP_NAME in servers:  # ours already, or someone else's: never clobbered
        return data if data is not None else _dump(config)
    servers[_MCP_NAME] = dict(_MCP_ENTRY)
    return _dump(config)


def _without_mcp_server(data: bytes) -> bytes:
    config = _json_object(data, ".mcp.json")
    servers = config.get("mcpServers")
    if isinstance(servers, dict) and servers.get(_MCP_NAME) == _MCP_ENTRY:
        del servers[_MCP_NAME]
        if not servers:
            del config["mcpServers"]
    return _dump(config) if config else b""


def _aider_config(prompt_file: Path) -> Callable[[bytes | None], bytes]:
    def change(data: bytes | None) -> bytes:
        text = (data or b"").decode("utf-8")
        if f"{prompt_file}{_YAML_MARK}" in text or _block_span(text) is not None:
            return data or b""
        key = re.search(r"^read:[ \t]*(.*)$", text, re.MULTILINE)
        if key is None:
            block = f"# {BEGIN}\nread:\n  - {prompt_file}\n# {END}\n"
            return _with_block(text, block).encode("utf-8")
        if key.group(1).strip() and not key.group(1).strip().startswith("#"):
            raise Conflict(
                ".aider.conf.yml has read: on one line; write it as a list, one "
                "'  - FILE' line each, then install again"
            )
        if key.end() < len(text):  # after the line feed that ends ``read:``
            at, head = key.end() + 1, text[: key.end() + 1]
        else:
            at, head = len(text), text + "\n"
        item = re.compile(r"([ \t]+)- ").match(text, at)
        indent = item.group(1) if item else "  "
        return (head + f"{indent}- {prompt_file}{_YAML_MARK}\n" + text[at:]).encode("utf-8")

    return change


def _without_aider_entry(data: bytes) -> bytes:
    text = _without_block(data.decode("utf-8"))
    lines = text.splitlines(keepends=True)
    return "".join(line for line in lines if not line.rstrip("\n").endswith(_YAML_MARK)).encode(
        "utf-8"
    )


def install(ledger: Ledger, agent: str) -> dict[str, Any]:
    """Bridge ``agent`` into this work tree; again: nothing changes but the prompts.

    Returns ``{agent, files: {path: action}}``.

    Raises:
        Conflict: a file to merge into is not what its agent reads (bad JSON...).
    """
    _check_agent(agent)
    _top(ledger)
    state = _load_state(ledger, agent)
    actions: dict[str, str] = {}
    if agent == "claude":
        actions[".claude/settings.json"] = _edit(
            ledger, agent, state, ".claude/settings.json", _claude_settings
        )
        if importlib.util.find_spec("mcp") is not None:
            actions[".mcp.json"] = _edit(ledger, agent, state, ".mcp.json", _mcp_config)
    elif agent == "codex":
        actions["AGENTS.md"] = _edit(ledger, agent, state, "AGENTS.md", _codex_change(ledger))
    else:
        prompt_file = _aider_file(ledger)
        prompt_file.parent.mkdir(parents=True, exist_ok=True)
        _write(prompt_file, _aider_prompt(ledger).encode("utf-8"))
        actions[".aider.conf.yml"] = _edit(
            ledger, agent, state, ".aider.conf.yml", _aider_config(prompt_file)
        )
    _save_state(ledger, agent, state)
    return {"agent": agent, "files": actions}


def _codex_change(ledger: Ledger) -> Callable[[bytes | None], bytes]:
    def change(data: bytes | None) -> bytes:
        text = (data or b"").decode("utf-8")
        rest = _without_block(text)
        return _with_block(text, _codex_block(ledger, rest)).encode("utf-8")

    return change


_REMOVERS: Final[dict[str, Callable[[bytes], bytes]]] = {
    ".claude/settings.json": _without_claude_hook,
    ".mcp.json": _without_mcp_server,
    "AGENTS.md": lambda data: _without_block(data.decode("utf-8")).encode("utf-8"),
    ".aider.conf.yml": _without_aider_entry,
}


def uninstall(ledger: Ledger, agent: str) -> dict[str, Any]:
    """Take out everything ``install`` put in for ``agent``.

    A file that still holds exactly what git-hydrate wrote gets its original
    bytes back (or is removed if git-hydrate created it); an edited one loses
    only git-hydrate's block or entries. Returns ``{agent, files: {path: action}}``
    (``restored``, ``removed``, ``cleaned``, ``unchanged``).
    """
    _check_agent(agent)
    top = _top(ledger)
    state = _load_state(ledger, agent)
    actions: dict[str, str] = {}
    for relative, record in state.get("files", {}).items():
        path = top / relative
        now = _read(path)
        original = record.get("original")
        before = None if original is None else base64.b64decode(original)
        if now is None:
            actions[relative] = "unchanged"
            continue
        if _sha(now) == record.get("written"):
            if before is None:
                path.unlink()
                actions[relative] = "removed"
            else:
                if now != before:
                    _write(path, before)
                actions[relative] = "restored"
            continue
        cleaned = _REMOVERS[relative](now)
        if not cleaned and before is None:
            path.unlink()
            actions[relative] = "removed"
        elif cleaned != now:
            _write(path, cleaned)
            actions[relative] = "cleaned"
        else:
            actions[relative] = "unchanged"
    for directory in sorted(state.get("dirs", []), key=len, reverse=True):
        with contextlib.suppress(OSError):
            (top / directory).rmdir()  # only when empty
    if agent == "aider":
        with contextlib.suppress(FileNotFoundError):
            _aider_file(ledger).unlink()
    with contextlib.suppress(FileNotFoundError):
        _state_path(ledger, agent).unlink()
    return {"agent": agent, "files": actions}


def _installed(ledger: Ledger, agent: str) -> bool:
    return _state_path(ledger, agent).exists()


def refresh(ledger: Ledger) -> dict[str, Any]:
    """Rewrite the prompts of the installed agents for the current task.

    Returns ``{task_id, agents: {agent: {path: action}}}``.
    """
    found = ledger.current()
    done: dict[str, Any] = {}
    for agent in ("codex", "aider"):
        if _installed(ledger, agent):
            done[agent] = install(ledger, agent)["files"]
            if agent == "aider":
                done[agent][str(_aider_file(ledger))] = "updated"
    return {"task_id": found["task_id"] if found else None, "agents": done}


def status(ledger: Ledger) -> dict[str, Any]:
    """Which agents are installed here, with the files each one touched.

    Returns ``{current, agents: {agent: {installed, files}}}``.
    """
    found = ledger.current()
    report: dict[str, Any] = {}
    for agent in AGENTS:
        state = _load_state(ledger, agent) if _installed(ledger, agent) else {"files": {}}
        report[agent] = {"installed": _installed(ledger, agent), "files": sorted(state["files"])}
    return {"current": found["task_id"] if found else None, "agents": report}
