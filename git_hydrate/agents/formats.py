"""What each host reads, merged and unmerged: pure functions of a file's bytes.

* Claude Code: a ``SessionStart`` command hook in a settings file, and the
  server in ``.mcp.json`` (``mcpServers``);
* Codex: a marked block of Markdown in ``AGENTS.md``, and a marked
  ``[mcp_servers.git-hydrate]`` table in its ``config.toml``;
* aider: an entry of the ``read:`` list of ``.aider.conf.yml``.

Each ``*_with`` function returns the new bytes (the same bytes when git-hydrate's
part is there already; someone else's entry of the same name is never
clobbered); each ``*_without`` takes only git-hydrate's part out.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from typing import Any, Final

from ..codec import check_depth, duplicate_key
from ..errors import Conflict, CorruptData

__all__ = [
    "BEGIN",
    "CLAUDE_COMMAND",
    "CODEX_POINTER",
    "END",
    "MCP_ENTRY",
    "MCP_NAME",
    "aider_with",
    "aider_without",
    "block_span",
    "claude_hook_with",
    "claude_hook_without",
    "codex_pointer_with",
    "codex_toml_with",
    "codex_toml_without",
    "mcp_json_with",
    "mcp_json_without",
    "with_block",
    "without_block",
]

#: The markers around git-hydrate's block in Markdown, YAML and TOML files.
BEGIN: Final = "git-hydrate:begin"
END: Final = "git-hydrate:end"
#: The command Claude Code runs at session start.
CLAUDE_COMMAND: Final = "git hydrate agent context claude"
_SESSION_MATCHER: Final = "startup|resume|clear|compact"
MCP_NAME: Final = "git-hydrate"
MCP_ENTRY: Final = dict(command="git", args=["hydrate", "mcp"])
_YAML_MARK: Final = "  # git-hydrate"
#: What AGENTS.md holds for Codex: the same words whatever the task, so that a
#: tracked AGENTS.md changes once, at install (``prompt --current`` is answered
#: from the prompt cache like ``prompt ID``).
CODEX_POINTER: Final = (
    f"<!-- {BEGIN}: from git hydrate agent install codex; uninstall takes it out -->\n"
    "## The current task\n\n"
    "This work tree's current task, if it has one, is kept by git-hydrate. Before you "
    "start, print its prompt with `git hydrate prompt --current` (nothing to do if it says "
    "there is none) and follow its output contract; record progress with `git hydrate "
    "checkpoint --current --summary TEXT`.\n"
    f"<!-- {END} -->\n"
)


# -- marked blocks ----------------------------------------------------------------------------


#: A line that is a marker: the marker first in a Markdown comment or after a
#: ``#`` (as every block written here begins and ends), not one a line of the
#: user's own text merely names.
_MARKER: Final = r"^[ \t]*(?:<!--|\#)[ \t]*{}(?![\w-]).*$"


def block_span(text: str) -> tuple[int, int] | None:
    """Where the marked block is: from its first line to after its last line. The
    first end marker that has a begin marker above it closes the block, and the
    nearest of those opens it: a begin marker left without its end (half a block
    pasted) never takes the user's lines after it into the block."""
    begins = list(re.finditer(_MARKER.format(re.escape(BEGIN)), text, re.MULTILINE))
    if not begins:
        return None
    ending = re.compile(_MARKER.format(re.escape(END)) + r"(\n|\Z)", re.MULTILINE)
    end = ending.search(text, begins[0].end())
    if end is None:
        return None
    begin = [found for found in begins if found.end() <= end.start()][-1]
    return begin.start(), end.end()


def with_block(text: str, block: str) -> str:
    """``text`` with the marked block replaced, or appended after one line feed."""
    found = block_span(text)
    if found is not None:
        return text[: found[0]] + block + text[found[1] :]
    return text + ("\n" if text else "") + block


def without_block(text: str) -> str:
    """``text`` without the marked block and the line feed :func:`with_block` put
    before it: the one that makes a blank line above the block, or that ended the
    text's last line when nothing follows the block. Any other line feed ends the
    line above, which stays a line of its own."""
    found = block_span(text)
    if found is None:
        return text
    start, stop = found
    blank_above = start == 1 or text[start - 2 : start] == "\n\n"
    if start > 0 and text[start - 1] == "\n" and (blank_above or stop == len(text)):
        start -= 1
    return text[:start] + text[stop:]


def _str(data: bytes) -> str:
    """A host file's text; bytes that are not UTF-8 (a Latin-1 note) are kept as
    they are, to be written back unchanged by :func:`_bytes`."""
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _text_change(change: Callable[[str], str]) -> Callable[[bytes | None], bytes]:
    return lambda data: _bytes(change(_str(data or b"")))


def codex_pointer_with(data: bytes | None) -> bytes:
    """AGENTS.md with git-hydrate's pointer block."""
    return _text_change(lambda text: with_block(text, CODEX_POINTER))(data)


def markdown_without(data: bytes) -> bytes:
    return _bytes(without_block(_str(data)))


# -- JSON: Claude Code ----------------------------------------------------------------------


#: A host's JSON or TOML file nested deeper than this is refused before it is read:
#: every Python reads and writes it back (3.12's reader takes 1,000 levels its
#: writer refuses; 3.13's takes 9,000, 3.11's not 1,000), so the limit is the
#: same everywhere and no merge fails half-way.
MAX_DEPTH: Final = 256


def _too_deep(name: str) -> Conflict:
    return Conflict(f"{name} is nested too deeply to read; fix it, then install again")


def _json_object(data: bytes | None, name: str) -> dict[str, Any]:
    if data is None or not data.strip():
        return {}
    try:
        check_depth(data, name, MAX_DEPTH)
        value = json.loads(data)
    except CorruptData:
        raise _too_deep(name) from None
    except ValueError as exc:
        raise Conflict(f"{name} is not valid JSON ({exc}); fix it, then install again") from None
    except RecursionError:  # (check_depth lets none through: belt and braces)
        raise _too_deep(name) from None
    if not isinstance(value, dict):
        raise Conflict(f"{name} does not hold a JSON object; fix it, then install again")
    # (written back, a key twice would keep only its last value: the first "hooks"
    # or "mcpServers" would be gone from the user's file)
    twice = duplicate_key(data)
    if twice is not None:
        raise Conflict(
            f"{name} holds the key {twice!r} twice in one object (a reader keeps only "
            "the last); keep one, then install again"
        )
    return value


def _dump(value: dict[str, Any], name: str) -> bytes:
    try:  # (allow_nan: 1e999 read as infinity is written "Infinity", which is no JSON)
        text = json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise Conflict(
            f"{name} holds a number too large to write back as JSON (1e999, say); fix it, "
            "then install again"
        ) from None
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # (a string escaped a lone surrogate, "\ud800": kept escaped)
        return (json.dumps(value, indent=2, allow_nan=False) + "\n").encode("ascii")


def _is_our_hook(hook: Any) -> bool:
    return isinstance(hook, dict) and hook.get("command") == CLAUDE_COMMAND


def _is_our_group(group: Any) -> bool:
    hooks = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(hooks, list) and any(_is_our_hook(hook) for hook in hooks)


def _without_our_hook(groups: list[Any]) -> list[Any]:
    """``groups`` without git-hydrate's hook: a group keeps the hooks the user
    added beside it (Claude Code's /hooks adds one to the group of its matcher),
    and goes only when nothing else is left in it."""
    kept = []
    for group in groups:
        if _is_our_group(group):
            others = [hook for hook in group["hooks"] if not _is_our_hook(hook)]
            if not others:
                continue
            group = {**group, "hooks": others}
        kept.append(group)
    return kept


def claude_hook_with(name: str) -> Callable[[bytes | None], bytes]:
    """The settings file ``name`` with git-hydrate's ``SessionStart`` hook."""

    def change(data: bytes | None) -> bytes:
        settings = _json_object(data, name)
        hooks = settings.setdefault("hooks", {})
        if not isinstance(hooks, dict):
            raise Conflict(f"{name}: hooks is not an object")
        starts = hooks.setdefault("SessionStart", [])
        if not isinstance(starts, list):
            raise Conflict(f"{name}: hooks.SessionStart is not a list")
        if any(_is_our_group(group) for group in starts):
            return data if data is not None else _dump(settings, name)
        hook = {"type": "command", "command": CLAUDE_COMMAND}
        starts.append({"matcher": _SESSION_MATCHER, "hooks": [hook]})
        return _dump(settings, name)

    return change


def claude_hook_without(data: bytes) -> bytes:
    name = "the settings file"
    settings = _json_object(data, name)
    hooks = settings.get("hooks")
    starts = hooks.get("SessionStart") if isinstance(hooks, dict) else None
    if not isinstance(hooks, dict) or not isinstance(starts, list):
        return data  # (none of ours: the user's bytes stay)
    if not any(_is_our_group(group) for group in starts):
        return data  # (their empty lists included)
    kept = _without_our_hook(starts)
    if kept:
        hooks["SessionStart"] = kept
    else:
        del hooks["SessionStart"]
    if not hooks:
        del settings["hooks"]
    return _dump(settings, name) if settings else b""


def mcp_json_with(data: bytes | None) -> bytes:
    """``.mcp.json`` with the server ``git-hydrate``."""
    config = _json_object(data, ".mcp.json")
    servers = config.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise Conflict(".mcp.json: mcpServers is not an object")
    if MCP_NAME in servers:  # ours already, or someone else's: never clobbered
        return data if data is not None else _dump(config, ".mcp.json")
    servers[MCP_NAME] = dict(MCP_ENTRY)
    return _dump(config, ".mcp.json")


def mcp_json_without(data: bytes) -> bytes:
    config = _json_object(data, ".mcp.json")
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or servers.get(MCP_NAME) != MCP_ENTRY:
        return data  # (none of ours: the user's bytes stay)
    del servers[MCP_NAME]
    if not servers:
        del config["mcpServers"]
    return _dump(config, ".mcp.json") if config else b""


# -- TOML: Codex's config.toml ----------------------------------------------------------------


def _toml(text: str, name: str) -> dict[str, Any]:
    try:
        check_depth(_bytes(text), name, MAX_DEPTH)  # (counts TOML's brackets too)
        return tomllib.loads(text)
    except CorruptData:
        raise _too_deep(name) from None
    except tomllib.TOMLDecodeError as exc:
        raise Conflict(f"{name} is not valid TOML ({exc}); fix it, then install again") from None
    except RecursionError:  # (tomllib recurses; check_depth lets none through)
        raise _too_deep(name) from None


def codex_toml_with(name: str) -> Callable[[bytes | None], bytes]:
    """Codex's ``config.toml`` (shown as ``name``) with ``[mcp_servers.git-hydrate]``."""

    def change(data: bytes | None) -> bytes:
        text = _str(data or b"")
        if block_span(text) is not None:
            return data or b""
        servers = _toml(text, name).get("mcp_servers", {})
        if isinstance(servers, dict) and MCP_NAME in servers:
            return data or b""  # someone's own entry of that name: never clobbered
        args = ", ".join(json.dumps(arg) for arg in MCP_ENTRY["args"])
        block = (
            f"# {BEGIN}: from git hydrate agent install codex --user\n"
            f"[mcp_servers.{MCP_NAME}]\n"
            f"command = {json.dumps(MCP_ENTRY['command'])}\n"
            f"args = [{args}]\n"
            f"# {END}\n"
        )
        new = with_block(text if not text or text.endswith("\n") else text + "\n", block)
        _toml(new, name)  # (mcp_servers written inline, say: refused, not broken)
        return _bytes(new)

    return change


def codex_toml_without(data: bytes) -> bytes:
    return _bytes(without_block(_str(data)))


# -- YAML: aider ------------------------------------------------------------------------------


#: The first item of a YAML block list, past blank and comment lines: its indent.
_FIRST_ITEM: Final = re.compile(r"(?:[ \t]*(?:#[^\n]*)?\n)*([ \t]*)- ")
#: The top-level key ``read`` as YAML may write it (quoted, or with a space before
#: its colon), and the rest of its line.
_READ_KEY: Final = re.compile(r"""^(?:read|"read"|'read')[ \t]*:(?![^ \t\r\n])[ \t]*(.*)$""", re.M)


def aider_with(prompt_file: str) -> Callable[[bytes | None], bytes]:
    """``.aider.conf.yml`` whose ``read:`` list names ``prompt_file``."""

    def change(data: bytes | None) -> bytes:
        text = _str(data or b"")
        if f"{prompt_file}{_YAML_MARK}" in text or block_span(text) is not None:
            return data or b""
        keys = list(_READ_KEY.finditer(text))
        if len(keys) > 1:  # (aider's YAML reader keeps the last: a list in the first is lost)
            raise Conflict(
                ".aider.conf.yml has read: twice (aider reads only the last); keep one "
                "list, then install again"
            )
        key = keys[0] if keys else None
        if key is None:
            block = f"# {BEGIN}\nread:\n  - {prompt_file}\n# {END}\n"
            return _bytes(with_block(text, block))
        if key.group(1).strip() and not key.group(1).strip().startswith("#"):
            raise Conflict(
                ".aider.conf.yml has read: on one line; write it as a list, one "
                "'  - FILE' line each, then install again"
            )
        if key.end() < len(text):  # after the line feed that ends ``read:``
            at, head = key.end() + 1, text[: key.end() + 1]
        else:
            at, head = len(text), text + "\n"
        # (the list's own indent, which may be none: "read:" then "- FILE" lines)
        item = _FIRST_ITEM.match(text, at)
        indent = item.group(1) if item else "  "
        return _bytes(head + f"{indent}- {prompt_file}{_YAML_MARK}\n" + text[at:])

    return change


def aider_without(data: bytes) -> bytes:
    text = without_block(_str(data))
    lines = text.splitlines(keepends=True)
    return _bytes("".join(line for line in lines if not line.rstrip("\n").endswith(_YAML_MARK)))
