"""Git hooks: the pre-push artefact producer and installing its shim.

``git push`` runs ``hooks/pre-push``, a short shell shim that hands its
arguments and standard input to ``git hydrate hook pre-push``. Everything the
hook decides happens here:

* :func:`parse_pre_push` reads git's input, one
  ``<local ref> <local oid> <remote ref> <remote oid>`` line per ref;
* :func:`concerned_tasks` finds the tasks a push concerns: task refs being
  pushed, and task ids named (``hydrate.taskPattern``) in the pushed ref names
  and in the messages of the commits being pushed — existing tasks only;
* :func:`pre_push` writes, for each of them, ``<ID>.prompt.md``,
  ``<ID>.packet.json`` and ``manifest.json`` into ``<artefact dir>/<ID>/``.

The artefacts are a pure function of the task's state and the pushed commit:
expiry is judged at that commit's committer time (for a pushed task ref, the
task's tip), never at the wall clock, so the same state gives byte-identical
files. Files are replaced atomically and left untouched when already current.

:func:`install`, :func:`uninstall` and :func:`status` manage the shim in the
hooks directory git uses (``core.hooksPath`` honoured), chaining a hook of
another origin as ``pre-push.legacy`` instead of overwriting it.

Library code: nothing here prints or exits; the CLI renders the results.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from . import __version__
from .errors import Conflict, HydrateError, ValidationError

if TYPE_CHECKING:
    from .ledger import Ledger
    from .store import Repository

__all__ = [
    "ARTEFACT_FORMAT",
    "DEFAULT_TASK_PATTERN",
    "HOOK_MARKER",
    "MAX_COMMITS_SCANNED",
    "RefUpdate",
    "artefact_directory",
    "concerned_tasks",
    "hooks_directory",
    "install",
    "parse_pre_push",
    "pre_push",
    "shim_text",
    "status",
    "strict_setting",
    "task_pattern",
    "uninstall",
    "updates_from_pre_commit",
]

#: Matches ids like ``M-1002`` or ``ABC-12``: capitals (then capitals or
#: digits), a hyphen, digits. Override with ``git config hydrate.taskPattern``.
DEFAULT_TASK_PATTERN: Final = r"\b[A-Z][A-Z0-9]*-[0-9]+\b"
#: The newest commits of each pushed ref whose messages are searched for ids.
MAX_COMMITS_SCANNED: Final = 1000
#: The version of the ``manifest.json`` layout.
ARTEFACT_FORMAT: Final = 1
#: The line that identifies a hook as git-hydrate's own.
HOOK_MARKER: Final = "# git-hydrate-hook: pre-push"

_TASK_REF_PREFIX: Final = "refs/hydrate/tasks/"
_HEX: Final = frozenset("0123456789abcdef")
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
if [ -n "$INSTALL_PYTHON" ] && "$INSTALL_PYTHON" -c 'import git_hydrate' 2>/dev/null; then
    exec "$INSTALL_PYTHON" -m git_hydrate hook pre-push "$@"
fi
echo "warning: git-hydrate is not installed; no prompt artefacts written" >&2
exit 0
"""


def shim_text(python: str = "") -> str:
    """The pre-push shim; ``python`` is the interpreter tried when git-hydrate is off PATH."""
    return _SHIM.format(marker=HOOK_MARKER, python=shlex.quote(python))


# -- reading git's pre-push input ------------------------------------------------


@dataclass(frozen=True)
class RefUpdate:
    """One line of pre-push input: a ref the push creates, moves or deletes."""

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str

    @property
    def is_deletion(self) -> bool:
        """The push deletes ``remote_ref`` (git sends an all-zero local oid)."""
        return _is_zero(self.local_oid)

    @property
    def is_new(self) -> bool:
        """The remote does not have ``remote_ref`` yet (all-zero remote oid)."""
        return _is_zero(self.remote_oid)


def _is_zero(oid: str) -> bool:
    return not oid.strip("0")


def _check_oid(oid: str, line_number: int) -> str:
    if len(oid) not in (40, 64) or not set(oid) <= _HEX:
        raise ValidationError(
            f"pre-push input line {line_number}: {oid!r} is not a 40- or 64-digit object id"
        )
    return oid


def parse_pre_push(text: str) -> list[RefUpdate]:
    """Parse the standard input git gives a pre-push hook.

    Each non-empty line is ``<local ref> SP <local oid> SP <remote ref> SP
    <remote oid>``; oids have 40 (SHA-1) or 64 (SHA-256) hex digits, all zeros
    for a deletion (local) or a ref the remote lacks (remote).

    Raises:
        ValidationError: a line that does not have that shape.
    """
    updates = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(" ")
        if len(fields) != 4 or not all(fields):
            raise ValidationError(
                f"pre-push input line {number} is not "
                "'<local ref> <local oid> <remote ref> <remote oid>'"
            )
        local_ref, local_oid, remote_ref, remote_oid = fields
        updates.append(
            RefUpdate(
                local_ref,
                _check_oid(local_oid, number),
                remote_ref,
                _check_oid(remote_oid, number),
            )
        )
    return updates


def updates_from_pre_commit(ledger: Ledger, environ: Mapping[str, str]) -> list[RefUpdate]:
    """The ref update the pre-commit framework describes in its environment.

    pre-commit reads git's pre-push input itself and exports one ref range as
    ``PRE_COMMIT_FROM_REF``/``PRE_COMMIT_TO_REF`` (plus ``PRE_COMMIT_LOCAL_BRANCH``
    and ``PRE_COMMIT_REMOTE_BRANCH``); for a new branch it may set only the
    local branch. Returns ``[]`` when none of these are set.
    """
    to_ref = environ.get("PRE_COMMIT_TO_REF", "")
    from_ref = environ.get("PRE_COMMIT_FROM_REF", "")
    local_branch = environ.get("PRE_COMMIT_LOCAL_BRANCH", "")
    remote_branch = environ.get("PRE_COMMIT_REMOTE_BRANCH", "")
    local_oid = _resolve(ledger, to_ref or local_branch)
    if local_oid is None:
        return []
    zero = "0" * len(local_oid)
    remote_oid = _resolve(ledger, from_ref) if from_ref else None
    return [
        RefUpdate(
            local_branch or to_ref,
            local_oid,
            remote_branch or local_branch or to_ref,
            remote_oid or zero,
        )
    ]


def _resolve(ledger: Ledger, name: str) -> str | None:
    if not name:
        return None
    proc = ledger.repo.git(["rev-parse", "--verify", "--quiet", name + "^{object}"], check=False)
    oid = proc.stdout.decode("ascii", "replace").strip()
    return oid if proc.returncode == 0 and oid else None


# -- configuration ----------------------------------------------------------------


def task_pattern(ledger: Ledger) -> re.Pattern[str]:
    """``hydrate.taskPattern`` compiled (default :data:`DEFAULT_TASK_PATTERN`).

    The whole match is the task id, or the first group when the pattern has one.

    Raises:
        ValidationError: the configured pattern is not a valid regular expression.
    """
    raw = ledger.config("hydrate.taskPattern") or DEFAULT_TASK_PATTERN
    try:
        return re.compile(raw)
    except re.error as exc:
        raise ValidationError(
            f"git config hydrate.taskPattern is not a valid regular expression: {exc}"
        ) from None


def strict_setting(ledger: Ledger) -> bool:
    """``hydrate.prePushStrict`` as git reads a boolean (default false).

    Raises:
        ValidationError: the value is not a boolean git understands.
    """
    proc = ledger.repo.git(
        ["config", "--type=bool", "--get", "hydrate.prePushStrict"], check=False
    )
    if proc.returncode == 1:  # not set
        return False
    value = proc.stdout.decode("ascii", "replace").strip()
    if proc.returncode != 0 or value not in ("true", "false"):
        raw = ledger.config("hydrate.prePushStrict")
        raise ValidationError(f"git config hydrate.prePushStrict must be a boolean, not {raw!r}")
    return value == "true"


def _hook_base(ledger: Ledger) -> Path:
    """Where git runs hooks, which relative hook and artefact paths are based on.

    githooks(5): the top of the work tree, or the git directory of a bare repository.
    """
    repo = ledger.repo
    if repo.work_tree is not None:
        return Path(repo.work_tree)
    common = Path(repo.common_dir)
    if not repo.is_bare and common.name == ".git":
        return common.parent
    return Path(repo.git_dir)


def artefact_directory(ledger: Ledger) -> Path:
    """``hydrate.artefactDir`` (``~`` expanded; relative to the work tree's top),
    else ``<git dir>/hydrate/artefacts`` so the work tree stays clean."""
    raw = ledger.config("hydrate.artefactDir")
    if not raw:
        return Path(ledger.repo.common_dir) / "hydrate" / "artefacts"
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else _hook_base(ledger) / path


# -- deciding what a push concerns ---------------------------------------------------


@dataclass(frozen=True)
class Concern:
    """Why a push concerns a task: the ref update and the commit it was found in."""

    update: RefUpdate
    #: ``task-ref``, ``ref-name`` or ``commit-message``.
    found_in: str


def _ids_in(text: str, pattern: re.Pattern[str]) -> Iterable[str]:
    for match in pattern.finditer(text):
        value = match.group(1) if pattern.groups else match.group(0)
        if value:
            yield value


def _short_ref(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/tags/", "refs/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def _pushed_messages(ledger: Ledger, update: RefUpdate) -> str:
    """The messages of the commits ``update`` sends (newest first, bounded)."""
    base = [
        "-c",
        "log.showSignature=false",
        "log",
        "--no-color",
        "-z",
        "--format=%B",
        f"--max-count={MAX_COMMITS_SCANNED}",
        update.local_oid,
        "--not",
    ]
    # Commits the remote already has are excluded; for a new ref (or a remote
    # oid this clone lacks), those on any remote-tracking branch.
    attempts = [[update.remote_oid], ["--remotes"]] if not update.is_new else [["--remotes"]]
    for exclude in attempts:
        proc = ledger.repo.git(base + exclude, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode("utf-8", "replace")
    return ""


def concerned_tasks(
    ledger: Ledger,
    updates: Iterable[RefUpdate],
    pattern: re.Pattern[str] | None = None,
) -> dict[str, Concern]:
    """The existing tasks a push concerns, each with the first update naming it.

    In order of precedence: task refs being pushed (``refs/hydrate/tasks/<id>``),
    ids in the pushed ref names, ids in the messages of the pushed commits.
    Deletions concern nothing.
    """
    if pattern is None:
        pattern = task_pattern(ledger)
    live = set(ledger.task_ids())
    found: dict[str, Concern] = {}
    if not live:  # the common case in a repository without tasks: no git log at all
        return found
    ordinary = []
    for update in updates:
        if update.is_deletion:
            continue
        task_ref = next(
            (r for r in (update.local_ref, update.remote_ref) if r.startswith(_TASK_REF_PREFIX)),
            None,
        )
        if task_ref is not None:
            task_id = task_ref[len(_TASK_REF_PREFIX) :]
            if task_id in live:
                found.setdefault(task_id, Concern(update, "task-ref"))
            continue
        ordinary.append(update)
    for update in ordinary:
        names = f"{_short_ref(update.local_ref)}\n{_short_ref(update.remote_ref)}"
        for task_id in _ids_in(names, pattern):
            if task_id in live:
                found.setdefault(task_id, Concern(update, "ref-name"))
    for update in ordinary:
        for task_id in _ids_in(_pushed_messages(ledger, update), pattern):
            if task_id in live:
                found.setdefault(task_id, Concern(update, "commit-message"))
    return found


# -- writing the artefacts -------------------------------------------------------------


def _commit_time(ledger: Ledger, oid: str) -> int | None:
    proc = ledger.repo.git(["log", "-1", "--no-walk", "--format=%ct", oid], check=False)
    text = proc.stdout.decode("ascii", "replace").strip()
    return int(text) if proc.returncode == 0 and text.isdigit() else None


def _write_atomic(path: Path, data: bytes, repo: Repository | None = None) -> bool:
    """Replace ``path`` with ``data`` (temp file + rename); ``False`` if already equal.

    With ``repo``, the file gets the permissions ``core.sharedRepository`` asks for.
    """
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        from .store import current_umask

        os.chmod(temp, 0o666 & ~current_umask())  # as open() would have made it
        if repo is not None:
            repo.share(temp)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return True


def write_artefacts(
    ledger: Ledger, task_id: str, concern: Concern, directory: Path
) -> dict[str, Any]:
    """Write one task's prompt, packet and manifest into ``directory/<task_id>/``.

    Returns ``{task, directory, commit, found_in, changed, total_bytes,
    omitted, files}``.

    Raises:
        HydrateError: the task cannot be read or packed.
        OSError: the files cannot be written.
    """
    from .codec import format_output
    from .ledger import iso_utc

    tip = ledger.get_task(task_id)["tip"]
    commit = concern.update.local_oid
    when = _commit_time(ledger, commit)
    if when is None:  # not a commit (a tag of a tree?): the task's own time
        when = _commit_time(ledger, tip) or 0
    result = ledger.expand(task_id, now=float(when))
    files = {
        f"{task_id}.prompt.md": result["prompt"].encode("utf-8"),
        f"{task_id}.packet.json": (format_output(result) + "\n").encode("utf-8"),
    }
    manifest = {
        "format": ARTEFACT_FORMAT,
        "generator": f"git-hydrate {__version__}",
        "task": task_id,
        "task_tip": tip,
        "commit": commit,
        "ref": concern.update.local_ref,
        "found_in": concern.found_in,
        "now": iso_utc(when),
        "max_bytes": result["max_bytes"],
        "total_bytes": result["total_bytes"],
        "files": [
            {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in files.items()
        ],
        "omitted": result["omitted"],
    }
    target = directory / task_id
    # Inside the repository (the default), what git-hydrate creates is shared the
    # way core.sharedRepository asks, so every member of the group can rewrite it.
    repo = ledger.repo
    inside = any(
        os.path.commonpath([os.path.abspath(target), os.path.abspath(d)]) == os.path.abspath(d)
        for d in (repo.git_dir, repo.common_dir)
    )
    shared = repo if inside else None
    if shared is not None:
        shared.make_dirs(str(target))
    else:
        target.mkdir(parents=True, exist_ok=True)
    changed = False
    for name, data in files.items():
        changed |= _write_atomic(target / name, data, shared)
    # Last, so a manifest always describes files that are already in place.
    changed |= _write_atomic(
        target / "manifest.json", (format_output(manifest) + "\n").encode("utf-8"), shared
    )
    return {
        "task": task_id,
        "directory": str(target),
        "commit": commit,
        "found_in": concern.found_in,
        "changed": changed,
        "total_bytes": result["total_bytes"],
        "omitted": result["omitted"],
        "files": manifest["files"],
    }


def pre_push(ledger: Ledger, updates: Iterable[RefUpdate]) -> dict[str, Any]:
    """Write the artefacts of every task the push concerns.

    Never raises for one task's trouble: each task's outcome is reported, and
    the caller decides whether the push goes on.

    Returns ``{directory, tasks: [...], problems: [...]}``: ``tasks`` holds
    :func:`write_artefacts` results; ``problems`` one line per task that could
    not be packed or written, or that has omissions (``{task, reason}``).

    Raises:
        ValidationError: ``hydrate.taskPattern`` or ``hydrate.artefactDir`` is unusable.
    """
    pattern = task_pattern(ledger)
    directory = artefact_directory(ledger)
    concerns = concerned_tasks(ledger, updates, pattern)
    written: list[dict[str, Any]] = []
    problems: list[dict[str, str]] = []
    for task_id in sorted(concerns):
        try:
            outcome = write_artefacts(ledger, task_id, concerns[task_id], directory)
        except HydrateError as exc:
            problems.append({"task": task_id, "reason": f"cannot be packed: {exc}"})
            continue
        except OSError as exc:
            problems.append({"task": task_id, "reason": f"artefacts not written: {exc}"})
            continue
        written.append(outcome)
        if outcome["omitted"]:
            reasons = sorted({item["reason"] for item in outcome["omitted"]})
            problems.append(
                {
                    "task": task_id,
                    "reason": f"{len(outcome['omitted'])} attachment(s) omitted "
                    f"({', '.join(reasons)})",
                }
            )
    return {"directory": str(directory), "tasks": written, "problems": problems}


# -- installing the shim ------------------------------------------------------------------


def hooks_directory(ledger: Ledger) -> Path:
    """The directory git runs hooks from: ``core.hooksPath`` or ``<common dir>/hooks``.

    A relative ``core.hooksPath`` is relative to where hooks run (the top of
    the work tree; the git directory of a bare repository), as git-config(1) says.
    """
    proc = ledger.repo.git(["config", "--path", "--get", "core.hooksPath"], check=False)
    value = proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")
    if proc.returncode == 0 and value:
        path = Path(value)
        return path if path.is_absolute() else _hook_base(ledger) / path
    return Path(ledger.repo.common_dir) / "hooks"


def _is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    return HOOK_MARKER.encode() in head


def _hooks_path_setting(ledger: Ledger) -> str | None:
    proc = ledger.repo.git(["config", "--get", "core.hooksPath"], check=False)
    value = proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")
    return value if proc.returncode == 0 and value else None


def _install_python(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("INSTALL_PYTHON="):
            try:
                words = shlex.split(line[len("INSTALL_PYTHON=") :])
            except ValueError:
                return None
            return words[0] if words else None
    return None


def install(ledger: Ledger, *, python: str | None = None) -> dict[str, Any]:
    """Install the pre-push shim; chain a pre-push hook of another origin.

    A foreign ``pre-push`` is moved to ``pre-push.legacy``, which the shim runs
    first. Installing again only refreshes the shim.

    Args:
        python: The interpreter the shim falls back to when ``git-hydrate`` is
            not on ``PATH`` (default: the running one).

    Returns ``{hook, action, legacy}``: ``action`` is ``installed``,
    ``updated`` or ``unchanged``; ``legacy`` the chained hook's path or ``None``.

    Raises:
        Conflict: both ``pre-push`` and ``pre-push.legacy`` exist and neither is ours.
    """
    directory = hooks_directory(ledger)
    hook = directory / _HOOK_NAME
    legacy = directory / (_HOOK_NAME + _LEGACY_SUFFIX)
    content = shim_text(sys.executable if python is None else python).encode("utf-8")
    ours = _is_ours(hook)
    if os.path.lexists(hook) and not ours:
        if os.path.lexists(legacy):
            raise Conflict(
                f"{hook} and {legacy} both exist and neither is git-hydrate's; "
                "move one of them away, then install again"
            )
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
        _write_atomic(hook, content)
    os.chmod(hook, 0o755)
    return {
        "hook": str(hook),
        "action": action,
        "legacy": str(legacy) if os.path.lexists(legacy) else None,
    }


def uninstall(ledger: Ledger) -> dict[str, Any]:
    """Remove the shim and put back the hook it chained, if any.

    Returns ``{hook, action, restored}``: ``action`` is ``removed`` or
    ``not-installed`` (a foreign hook is never touched).
    """
    directory = hooks_directory(ledger)
    hook = directory / _HOOK_NAME
    legacy = directory / (_HOOK_NAME + _LEGACY_SUFFIX)
    if not _is_ours(hook):
        return {"hook": str(hook), "action": "not-installed", "restored": None}
    os.unlink(hook)
    restored = None
    if os.path.lexists(legacy):
        os.replace(legacy, hook)
        restored = str(hook)
    return {"hook": str(hook), "action": "removed", "restored": restored}


def status(ledger: Ledger) -> dict[str, Any]:
    """Where the hook is, whether it is ours and current, and the settings it uses.

    Returns ``{hooks_dir, hooks_path, hook, installed, current, foreign,
    legacy, python, artefact_dir, strict, task_pattern}``: ``current`` says the
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
        "task_pattern": ledger.config("hydrate.taskPattern") or DEFAULT_TASK_PATTERN,
    }
