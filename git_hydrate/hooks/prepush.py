"""The pre-push artefact producer: which tasks a push concerns, and their prompts.

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

Library code: nothing here prints or exits; the CLI renders the results.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .. import __version__
from ..codec import format_output
from ..current import DEFAULT_TASK_PATTERN, compile_task_pattern
from ..errors import HydrateError, ValidationError
from ..ledger import Ledger
from ..store import Repository, current_umask, open_regular
from ..taskrefs import iso_utc

__all__ = [
    "ARTEFACT_FORMAT",
    "DEFAULT_TASK_PATTERN",
    "MAX_COMMITS_SCANNED",
    "Concern",
    "RefUpdate",
    "artefact_directory",
    "concerned_tasks",
    "hook_base",
    "parse_pre_push",
    "pre_push",
    "strict_setting",
    "task_pattern",
    "updates_from_pre_commit",
    "write_artefacts",
    "write_atomic",
]

#: The newest commits of each pushed ref whose messages are searched for ids.
MAX_COMMITS_SCANNED: Final = 1000
#: The version of the ``manifest.json`` layout (2: the prompt is measured alone,
#: ``prompt_bytes`` replaces ``total_bytes``).
ARTEFACT_FORMAT: Final = 2
#: The fields of a prompt result a hook report carries (for its summary line).
_REPORTED: Final = (
    "prompt_bytes",
    "max_bytes",
    "kept",
    "attachments",
    "needed_bytes",
    "needed_tokens",
    "token_count",
    "max_tokens",
    "token_encoding",
)

_TASK_REF_PREFIX: Final = "refs/hydrate/tasks/"
_HEX: Final = frozenset("0123456789abcdef")


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
    return ledger.repo.rev_parse(name, "object") if name else None


# -- configuration ----------------------------------------------------------------


def task_pattern(ledger: Ledger) -> re.Pattern[str]:
    """``hydrate.taskPattern`` compiled (default :data:`DEFAULT_TASK_PATTERN`).

    The whole match is the task id, or the first group when the pattern has one.

    Raises:
        ValidationError: the configured pattern is not a valid regular expression.
    """
    return compile_task_pattern(ledger.settings)


def strict_setting(ledger: Ledger) -> bool:
    """``hydrate.prePushStrict`` as git reads a boolean (default false).

    Raises:
        ValidationError: the value is not a boolean git understands.
    """
    return ledger.settings.boolean("hydrate.prePushStrict")


def hook_base(ledger: Ledger) -> Path:
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
    else ``<git common dir>/hydrate/artefacts`` (one for every linked work tree), so
    the work tree stays clean."""
    raw = ledger.settings.raw("hydrate.artefactDir")
    if not raw:
        return Path(ledger.repo.common_dir) / "hydrate" / "artefacts"
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else hook_base(ledger) / path


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
    # Commits the remote already has are excluded; for a new ref (or a remote
    # oid this clone lacks), those on any remote-tracking branch.
    attempts = [[update.remote_oid], ["--remotes"]] if not update.is_new else [["--remotes"]]
    for exclude in attempts:
        text = ledger.repo.commit_messages(update.local_oid, exclude, MAX_COMMITS_SCANNED)
        if text is not None:
            return text
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


def write_atomic(path: Path, data: bytes, repo: Repository | None = None) -> bool:
    """Replace ``path`` with ``data`` (temp file + rename); ``False`` if already equal.

    With ``repo``, the file gets the permissions ``core.sharedRepository`` asks for.
    """
    try:
        with open_regular(str(path)) as fh:  # (a FIFO put there is no equal: replaced)
            if fh.read() == data:
                return False
    except OSError:
        pass
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(temp, 0o666 & ~current_umask())  # as open() would have made it
        if repo is not None:
            repo.share(temp)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return True


def _pushed_time(ledger: Ledger, commit: str, tip: str | None) -> int:
    """The pushed commit's committer time, which judges expiry (for what is not a
    commit, a tag of a tree, the task's own time)."""
    when = ledger.repo.commit_time(commit)
    if when is None:
        when = (ledger.repo.commit_time(tip) if tip else None) or 0
    return when


def _manifest(
    task_id: str,
    tip: str | None,
    concern: Concern,
    when: int,
    result: Mapping[str, Any],
    files: Mapping[str, bytes],
) -> dict[str, Any]:
    """What ``manifest.json`` says of the artefacts ``files`` made from ``result``."""
    reported = {key: result.get(key) for key in _REPORTED if key in result}
    manifest: dict[str, Any] = {
        "format": ARTEFACT_FORMAT,
        "generator": f"git-hydrate {__version__}",
        "task": task_id,
        "task_tip": tip,
        "commit": concern.update.local_oid,
        "ref": concern.update.local_ref,
        "found_in": concern.found_in,
        "now": iso_utc(when),
        **reported,
        "files": [
            {"name": name, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            for name, data in files.items()
        ],
        "omitted": result["omitted"],
    }
    if "shrunk" in result:
        manifest["shrunk"] = result["shrunk"]
    return manifest


def _link_on_the_way(top: Path, target: Path) -> Path | None:
    """The first symbolic link from ``top`` (the work tree's) down to ``target``,
    when ``target`` is below ``top``; ``None`` otherwise (a folder outside the work
    tree is the user's own choice, links and all)."""
    top, target = Path(os.path.abspath(top)), Path(os.path.abspath(target))
    if top not in target.parents:
        return None
    here = top
    for part in target.relative_to(top).parts:
        here = here / part
        if here.is_symlink():
            return here
    return None


def _made_directory(repo: Repository, target: Path) -> Repository | None:
    """Make ``target``; the repository to share what is written there through
    (``core.sharedRepository``) when it is inside the repository (the default),
    so that every member of the group can rewrite it; else ``None``."""
    inside = any(
        os.path.commonpath([os.path.abspath(target), os.path.abspath(d)]) == os.path.abspath(d)
        for d in (repo.git_dir, repo.common_dir)
    )
    shared = repo if inside else None
    if shared is not None:
        shared.make_dirs(str(target))
    else:
        target.mkdir(parents=True, exist_ok=True)
    return shared


def write_artefacts(
    ledger: Ledger, task_id: str, concern: Concern, directory: Path
) -> dict[str, Any]:
    """Write one task's prompt, packet and manifest into ``directory/<task_id>/``.

    The prompt is measured alone, as ``git hydrate prompt`` measures it, with
    the budget the settings give (``hydrate.maxBytes``, ``hydrate.maxTokens``,
    ``hydrate.encoding``, ``hydrate.outline``).

    Returns ``{task, directory, commit, found_in, changed, prompt_bytes,
    max_bytes, kept, attachments, needed_bytes, omitted, files}`` (plus
    ``token_count``, ``max_tokens``, ``token_encoding``, ``needed_tokens``
    with a token budget and ``shrunk`` with outlines).

    Raises:
        HydrateError: the task cannot be read or packed.
        OSError: the files cannot be written.
    """
    tip = ledger.get_task(task_id)["tip"]
    commit = concern.update.local_oid
    when = _pushed_time(ledger, commit, tip)
    result = ledger.prompt(task_id, now=float(when))
    reported: dict[str, Any] = {key: result.get(key) for key in _REPORTED if key in result}
    files = {
        f"{task_id}.prompt.md": result["prompt"].encode("utf-8"),
        f"{task_id}.packet.json": (format_output(result) + "\n").encode("utf-8"),
    }
    manifest = _manifest(task_id, tip, concern, when, result, files)
    target = directory / task_id
    link = _link_on_the_way(hook_base(ledger), target)
    if link is not None:  # (a tracked link in a cloned repository would lead anywhere)
        raise OSError(
            f"{link} is a symbolic link: nothing is written through one in the work tree"
        )
    shared = _made_directory(ledger.repo, target)
    changed = False
    for name, data in files.items():
        changed |= write_atomic(target / name, data, shared)
    # Last, so a manifest always describes files that are already in place.
    changed |= write_atomic(
        target / "manifest.json", (format_output(manifest) + "\n").encode("utf-8"), shared
    )
    return {
        "task": task_id,
        "directory": str(target),
        "commit": commit,
        "found_in": concern.found_in,
        "changed": changed,
        **reported,
        "omitted": result["omitted"],
        "shrunk": result.get("shrunk", []),
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
