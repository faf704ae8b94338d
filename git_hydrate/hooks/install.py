"""Installing the pre-push shim: recognised by its marker, chaining a foreign hook.

:func:`install`, :func:`uninstall` and :func:`status` manage the shim in the
hooks directory git uses (``core.hooksPath`` honoured), chaining a hook of
another origin as ``pre-push.legacy`` instead of overwriting it.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..errors import Conflict
from ..ledger import Ledger
from ..store import open_regular
from .prepush import (
    DEFAULT_TASK_PATTERN,
    artefact_directory,
    hook_base,
    strict_setting,
    task_pattern,
    write_atomic,
)

__all__ = [
    "HOOK_MARKER",
    "MSG_HOOK_MARKER",
    "REFRESH_HOOK_MARKER",
    "TRAILER_HOOK_MARKER",
    "hooks_directory",
    "install",
    "msg_hook_installed",
    "msg_shim_text",
    "refresh_shim_text",
    "shim_text",
    "status",
    "trailer_shim_text",
    "uninstall",
    "unmatched_tasks",
]

#: The line that identifies a hook as git-hydrate's own.
HOOK_MARKER: Final = "# git-hydrate-hook: pre-push"

_HOOK_NAME: Final = "pre-push"
_LEGACY_SUFFIX: Final = ".legacy"

_SHIM: Final = """\
#!/bin/sh
# The git-hydrate pre-push hook: writes prompt artefacts for the tasks a push
# concerns. Installed by `git hydrate hooks install`; removed (and any hook it
# replaced restored) by `git hydrate hooks uninstall`.
{marker} v1
INSTALL_PYTHON={python}
hook_dir=$(dirname -- "$0")
if [ -x "$hook_dir/pre-push.legacy" ]; then
    # The hook this one replaced runs first, with the same arguments and
    # input; its failure still stops the push.
    input=$(mktemp "${{TMPDIR:-/tmp}}/git-hydrate-pre-push.XXXXXX") || exit 1
    cat >"$input"
    "$hook_dir/pre-push.legacy" "$@" <"$input"
    status=$?
    exec <"$input"
    rm -f -- "$input"
    [ "$status" -eq 0 ] || exit "$status"
fi
if command -v git-hydrate >/dev/null 2>&1; then
    exec git hydrate hook pre-push "$@"
fi
# -P: git runs hooks from the top of the work tree; none of its files is imported
if [ -n "$INSTALL_PYTHON" ] && "$INSTALL_PYTHON" -P -c 'import git_hydrate' 2>/dev/null; then
    exec "$INSTALL_PYTHON" -P -m git_hydrate hook pre-push "$@"
fi
echo "warning: git-hydrate is not installed; no prompt artefacts written" >&2
exit 0
"""


#: The line that identifies the prepare-commit-msg hook as git-hydrate's own.
TRAILER_HOOK_MARKER: Final = "# git-hydrate-hook: prepare-commit-msg"
_TRAILER_HOOK_NAME: Final = "prepare-commit-msg"
#: The same for the commit-msg hook (trailers for a message written in the editor).
MSG_HOOK_MARKER: Final = "# git-hydrate-hook: commit-msg"
_MSG_HOOK_NAME: Final = "commit-msg"

_TRAILER_SHIM: Final = """\
#!/bin/sh
# The git-hydrate {name} hook: adds Hydrate-Task and Hydrate-Packet
# trailers naming the work tree's current task. Installed by `git hydrate hooks
# install --commit-trailer`; removed (and any hook it replaced restored) by
# `git hydrate hooks uninstall`. It never stops a commit.
{marker} v1
INSTALL_PYTHON={python}
hook_dir=$(dirname -- "$0")
if [ -x "$hook_dir/{name}.legacy" ]; then
    "$hook_dir/{name}.legacy" "$@" || exit $?
fi
if command -v git-hydrate >/dev/null 2>&1; then
    exec git hydrate hook {name} "$@"
fi
# -P: git runs hooks from the top of the work tree; none of its files is imported
if [ -n "$INSTALL_PYTHON" ] && "$INSTALL_PYTHON" -P -c 'import git_hydrate' 2>/dev/null; then
    exec "$INSTALL_PYTHON" -P -m git_hydrate hook {name} "$@"
fi
exit 0
"""


#: The line that identifies the post-checkout hook as git-hydrate's own.
REFRESH_HOOK_MARKER: Final = "# git-hydrate-hook: post-checkout"
_REFRESH_HOOK_NAME: Final = "post-checkout"
_REFRESH_SHIM: Final = """\
#!/bin/sh
# The git-hydrate post-checkout hook: rewrites the agents' prompts (git hydrate
# agent refresh) for the work tree's current task after a checkout. Installed by
# `git hydrate hooks install --agent-refresh`; removed (and any hook it replaced
# restored) by `git hydrate hooks uninstall`. A checkout is never reported failed.
{marker} v1
INSTALL_PYTHON={python}
hook_dir=$(dirname -- "$0")
if [ -x "$hook_dir/post-checkout.legacy" ]; then
    "$hook_dir/post-checkout.legacy" "$@" || exit $?
fi
if command -v git-hydrate >/dev/null 2>&1; then
    git hydrate agent refresh --quiet
elif [ -n "$INSTALL_PYTHON" ] && "$INSTALL_PYTHON" -P -c 'import git_hydrate' 2>/dev/null; then
    # -P: git runs hooks from the top of the work tree; none of its files is imported
    "$INSTALL_PYTHON" -P -m git_hydrate agent refresh --quiet
fi
exit 0
"""


def shim_text(python: str = "") -> str:
    """The pre-push shim; ``python`` is the interpreter tried when git-hydrate is off PATH."""
    return _SHIM.format(marker=HOOK_MARKER, python=shlex.quote(python))


def trailer_shim_text(python: str = "") -> str:
    """The prepare-commit-msg shim (``python`` as for :func:`shim_text`)."""
    name, marker = _TRAILER_HOOK_NAME, TRAILER_HOOK_MARKER
    return _TRAILER_SHIM.format(name=name, marker=marker, python=shlex.quote(python))


def msg_shim_text(python: str = "") -> str:
    """The commit-msg shim (``python`` as for :func:`shim_text`)."""
    name, marker = _MSG_HOOK_NAME, MSG_HOOK_MARKER
    return _TRAILER_SHIM.format(name=name, marker=marker, python=shlex.quote(python))


def msg_hook_installed(ledger: Ledger) -> bool:
    """Whether git-hydrate's commit-msg hook is where git runs hooks (then the
    prepare-commit-msg hook leaves a message written in the editor to it)."""
    return _is_ours(hooks_directory(ledger) / _MSG_HOOK_NAME, MSG_HOOK_MARKER)


def refresh_shim_text(python: str = "") -> str:
    """The post-checkout shim that refreshes the agents' prompts."""
    return _REFRESH_SHIM.format(marker=REFRESH_HOOK_MARKER, python=shlex.quote(python))


# -- installing the shim ------------------------------------------------------------------


def hooks_directory(ledger: Ledger) -> Path:
    """The directory git runs hooks from: ``core.hooksPath`` or ``<common dir>/hooks``.

    A relative ``core.hooksPath`` is relative to where hooks run (the top of
    the work tree; the git directory of a bare repository), as git-config(1) says.
    """
    value = ledger.settings.path("core.hooksPath")
    if value:
        path = Path(value)
        return path if path.is_absolute() else hook_base(ledger) / path
    return Path(ledger.repo.common_dir) / "hooks"


def _is_ours(path: Path, marker: str = HOOK_MARKER) -> bool:
    """Whether the hook at ``path`` is a shim of git-hydrate's: a line of its first
    64 KiB is ``marker`` and a version (a foreign hook that only mentions the
    marker, a hook manager's chaining one, say, is not; nor is a FIFO waited on)."""
    try:
        with open_regular(str(path)) as fh:
            head = fh.read(65536)
    except OSError:
        return False
    return re.search(rb"^" + re.escape(marker.encode()) + rb" v[0-9]+$", head, re.M) is not None


def _hooks_path_setting(ledger: Ledger) -> str | None:
    return ledger.settings.raw("core.hooksPath") or None


def _install_python(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("INSTALL_PYTHON="):
            try:
                words = shlex.split(line[len("INSTALL_PYTHON=") :])
            except ValueError:
                return None
            return words[0] if words else None
    return None


def install(
    ledger: Ledger,
    *,
    python: str | None = None,
    commit_trailer: bool = False,
    agent_refresh: bool = False,
) -> dict[str, Any]:
    """Install the pre-push shim; chain a pre-push hook of another origin.

    A foreign ``pre-push`` is moved to ``pre-push.legacy``, which the shim runs
    first. Installing again only refreshes the shim. With ``commit_trailer``,
    the prepare-commit-msg and commit-msg shims are installed the same way.

    Args:
        python: The interpreter the shim falls back to when ``git-hydrate`` is
            not on ``PATH`` (default: the running one).

    Returns ``{hook, action, legacy, commit_trailer, commit_msg, agent_refresh, notes}``
    (``notes``: a line for each hook git status would list): ``action`` is
    ``installed``, ``updated`` or ``unchanged``; ``legacy`` the chained hook's
    path or ``None``; ``commit_trailer`` the same three for the
    prepare-commit-msg hook (``commit_msg``: for the commit-msg hook), or ``None``
    when it was not asked for; with
    ``agent_refresh``, ``agent_refresh`` the same for the post-checkout hook
    that runs ``git hydrate agent refresh``.

    Raises:
        Conflict: both the hook and its ``.legacy`` exist and neither is ours.
    """
    directory = hooks_directory(ledger)
    interpreter = sys.executable if python is None else python
    plan = [(_HOOK_NAME, HOOK_MARKER, shim_text(interpreter))]
    if commit_trailer:
        plan.append((_TRAILER_HOOK_NAME, TRAILER_HOOK_MARKER, trailer_shim_text(interpreter)))
        plan.append((_MSG_HOOK_NAME, MSG_HOOK_MARKER, msg_shim_text(interpreter)))
    if agent_refresh:
        plan.append((_REFRESH_HOOK_NAME, REFRESH_HOOK_MARKER, refresh_shim_text(interpreter)))
    shared = _shared_hooks(ledger, directory, [name for name, _, _ in plan])
    if shared is not None:
        raise Conflict(shared)
    for name, marker, _ in plan:  # refuse before anything is moved
        hook, legacy = directory / name, directory / (name + _LEGACY_SUFFIX)
        if os.path.lexists(hook) and not _is_ours(hook, marker) and os.path.lexists(legacy):
            raise Conflict(
                f"{hook} and {legacy} both exist and neither is git-hydrate's; "
                "move one of them away, then install again"
            )
    results = {step[0]: _install_one(directory, *step) for step in plan}
    return {
        **results[_HOOK_NAME],
        "commit_trailer": results.get(_TRAILER_HOOK_NAME),
        "commit_msg": results.get(_MSG_HOOK_NAME),
        "agent_refresh": results.get(_REFRESH_HOOK_NAME),
        "notes": [
            *_shown_in_status(ledger, directory, [name for name, _, _ in plan]),
            *_unmatched_note(ledger),
        ],
    }


def unmatched_tasks(ledger: Ledger) -> list[str]:
    """The live tasks whose ids ``hydrate.taskPattern`` does not find in their own
    text: no branch name or commit message can name them to the pre-push hook
    (the default pattern wants a dash: `M-1002`, not `F1`)."""
    pattern = task_pattern(ledger)
    group = 1 if pattern.groups else 0
    return [
        task_id
        for task_id in ledger.task_ids()
        if not any(m.group(group) == task_id for m in pattern.finditer(task_id))
    ]


def _unmatched_note(ledger: Ledger) -> list[str]:
    unmatched = unmatched_tasks(ledger)
    if not unmatched:
        return []
    raw = ledger.settings.text("hydrate.taskPattern") or DEFAULT_TASK_PATTERN
    shown_ids = ", ".join(unmatched[:5]) + (", ..." if len(unmatched) > 5 else "")
    count = f"{len(unmatched)} task{'s' if len(unmatched) != 1 else ''}"
    return [
        f"the task pattern (git config hydrate.taskPattern, {shlex.quote(raw)}) finds no id "
        f"of {count} ({shown_ids}) in a branch name or commit message: a push concerns "
        "them only when it pushes their refs"
    ]


def _in_work_tree(ledger: Ledger, directory: Path) -> Path | None:
    """``directory`` relative to the top of the work tree; ``None`` outside it, or
    in the git directory (the usual ``.git/hooks``: git neither tracks nor lists it)."""
    top = ledger.repo.work_tree
    if top is None:
        return None
    where = directory.resolve()
    if where.is_relative_to(Path(ledger.repo.common_dir).resolve()):
        return None
    try:
        return where.relative_to(Path(top).resolve())
    except ValueError:
        return None


def _shown_in_status(ledger: Ledger, directory: Path, names: list[str]) -> list[str]:
    """A line for each hook written into the work tree where git status lists it (an
    untracked directory no ignore rule covers): a `git add -A` would share it."""
    inside = _in_work_tree(ledger, directory)
    if inside is None:
        return []
    paths = [(inside / name).as_posix() for name in names]
    proc = ledger.repo.git(["check-ignore", "--no-index", "--", *paths], check=False)
    ignored = set(proc.stdout.decode("utf-8", "surrogateescape").splitlines())
    return [
        f"{path} is in the work tree and no ignore rule covers it: git status lists it, and "
        "it names this machine's Python; list it in .git/info/exclude"
        for path in paths
        if path not in ignored
    ]


def _shared_hooks(ledger: Ledger, directory: Path, names: list[str]) -> str | None:
    """Why the hooks ``names`` must not be written in ``directory`` (``None``: they
    may): a hooks directory the repository tracks (core.hooksPath in the work tree)
    is the team's. A tracked hook (or the ``.legacy`` file it would become) would be
    rewritten for this machine; a new one would wait in ``git status`` to be shared,
    naming this machine's Python."""
    inside = _in_work_tree(ledger, directory)
    if inside is None:
        return None
    paths = [(inside / name).as_posix() for name in names]
    paths += [path + _LEGACY_SUFFIX for path in paths]
    tracked = ledger.repo.tracked(paths)
    way = 'have it run git hydrate hook {name} "$@" instead'
    for path in paths:
        if path in tracked:
            return (
                f"{path} is tracked by git (core.hooksPath is in the work tree): git-hydrate "
                "does not replace a hook the repository shares; "
                + way.format(name=path.rpartition("/")[2].removesuffix(_LEGACY_SUFFIX))
            )
    folder = inside.as_posix()
    spec = ":(top)" if folder == "." else f":(top,literal){folder}"
    if ledger.repo.git(["ls-files", "-z", "--", spec]).stdout:
        return (
            f"{folder} is tracked by git (core.hooksPath is in the work tree): git-hydrate "
            "writes no hook there for this machine alone; add a tracked "
            f'{paths[0]} that runs git hydrate hook {names[0]} "$@" instead'
        )
    return None


def _install_one(directory: Path, name: str, marker: str, text: str) -> dict[str, Any]:
    hook = directory / name
    legacy = directory / (name + _LEGACY_SUFFIX)
    content = text.encode("utf-8")
    ours = _is_ours(hook, marker)
    if os.path.lexists(hook) and not ours:
        os.replace(hook, legacy)
        action = "installed"
    elif ours:
        try:
            same = hook.read_bytes() == content
        except OSError:
            same = False
        action = "unchanged" if same else "updated"
    else:
        action = "installed"
    directory.mkdir(parents=True, exist_ok=True)
    if action != "unchanged":
        write_atomic(hook, content)
    os.chmod(hook, 0o755)
    return {
        "hook": str(hook),
        "action": action,
        "legacy": str(legacy) if os.path.lexists(legacy) else None,
    }


def uninstall(ledger: Ledger) -> dict[str, Any]:
    """Remove the shims and put back the hooks they chained, if any.

    Returns ``{hook, action, restored, commit_trailer, commit_msg, agent_refresh}``
    for the pre-push hook (the others: the same for the prepare-commit-msg,
    commit-msg and post-checkout hooks): ``action``
    is ``removed`` or ``not-installed`` (a foreign hook is never touched).
    """
    directory = hooks_directory(ledger)
    result = _uninstall_one(directory, _HOOK_NAME, HOOK_MARKER)
    return {
        **result,
        "commit_trailer": _uninstall_one(directory, _TRAILER_HOOK_NAME, TRAILER_HOOK_MARKER),
        "commit_msg": _uninstall_one(directory, _MSG_HOOK_NAME, MSG_HOOK_MARKER),
        "agent_refresh": _uninstall_one(directory, _REFRESH_HOOK_NAME, REFRESH_HOOK_MARKER),
    }


def _uninstall_one(directory: Path, name: str, marker: str) -> dict[str, Any]:
    hook = directory / name
    legacy = directory / (name + _LEGACY_SUFFIX)
    if not _is_ours(hook, marker):
        return {"hook": str(hook), "action": "not-installed", "restored": None}
    os.unlink(hook)
    restored = None
    if os.path.lexists(legacy):
        os.replace(legacy, hook)
        restored = str(hook)
    return {"hook": str(hook), "action": "removed", "restored": restored}


def status(ledger: Ledger) -> dict[str, Any]:
    """Where the hook is, whether it is ours and current, and the settings it uses.

    Returns ``{hooks_dir, hooks_path, hook, installed, current, foreign, legacy,
    python, artefact_dir, strict, task_pattern, unmatched_tasks, commit_trailer,
    commit_msg, agent_refresh}`` (the last three: ``{hook, installed, current}``;
    ``unmatched_tasks``: :func:`unmatched_tasks`): ``current`` says the
    installed shim is this version's; ``python`` is the interpreter it falls
    back to when ``git-hydrate`` is not on ``PATH``.
    """
    directory = hooks_directory(ledger)
    hook = directory / _HOOK_NAME
    legacy = directory / (_HOOK_NAME + _LEGACY_SUFFIX)
    ours = _is_ours(hook)
    current = False
    python = None
    if ours:
        try:
            text = hook.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        python = _install_python(text)
        current = text == shim_text(python or "") and os.access(hook, os.X_OK)
    return {
        "hooks_dir": str(directory),
        "hooks_path": _hooks_path_setting(ledger),
        "hook": str(hook),
        "installed": ours,
        "current": current,
        "foreign": os.path.lexists(hook) and not ours,
        "legacy": str(legacy) if os.path.lexists(legacy) else None,
        "python": python,
        "artefact_dir": str(artefact_directory(ledger)),
        "strict": strict_setting(ledger),
        "task_pattern": ledger.settings.text("hydrate.taskPattern") or DEFAULT_TASK_PATTERN,
        "unmatched_tasks": unmatched_tasks(ledger),
        "commit_trailer": _shim_status(
            directory / _TRAILER_HOOK_NAME, TRAILER_HOOK_MARKER, trailer_shim_text
        ),
        "commit_msg": _shim_status(directory / _MSG_HOOK_NAME, MSG_HOOK_MARKER, msg_shim_text),
        "agent_refresh": _shim_status(
            directory / _REFRESH_HOOK_NAME, REFRESH_HOOK_MARKER, refresh_shim_text
        ),
    }


def _shim_status(hook: Path, marker: str, text_of: Callable[[str], str]) -> dict[str, Any]:
    """``{hook, installed, current}`` of one of the optional shims."""
    ours = _is_ours(hook, marker)
    current = False
    if ours:
        try:
            text = hook.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        current = text == text_of(_install_python(text) or "") and os.access(hook, os.X_OK)
    return {"hook": str(hook), "installed": ours, "current": current}
