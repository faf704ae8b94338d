"""Health checks of stored tasks, and safe removal of what dead writers left behind.

Every problem is reported per task; one damaged task never stops the check of
the others. Nothing here changes a task; ``clear_stale_locks`` removes only
lock files (under ``refs/hydrate/``, ``refs/hydrate-remotes/``, git-hydrate's
own, and the ``.keep`` of a big import's pack) whose git-hydrate maker is gone,
or that are older than a threshold and that no running process holds, and
``clear_stale_temporaries`` only the caches' temporary files whose writer is gone
(see :mod:`git_hydrate.store.tempfiles`).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
from typing import Any, Final

from . import textpolicy
from .archive import ARCHIVE_REF, Archive, read_archive
from .dependencies import blocking_graph, cycles, queue_summaries, shown_cycle, station_of
from .errors import CorruptData, HydrateError
from .features import features
from .store import MODE_BLOB, MODE_TREE, Repository, lockfiles
from .store.tempfiles import find_temporaries, remove_stale_temporaries
from .sync.merging import task_json_problem
from .sync.remotes import overwriting_refspecs
from .sync.removal import REMOVED_REF, read_removed
from .taskrefs import TaskRefs, TaskState, body_path, ref_name
from .treeshape import archive_tree_problems, removal_tree_problems, task_tree_problems

__all__ = [
    "DEFAULT_STALE_SECONDS",
    "archived_problems",
    "check",
    "check_task",
    "clear_stale_locks",
    "clear_stale_temporaries",
    "dependency_notes",
    "find_locks",
    "kept_because",
    "policy_notes",
]

#: A lock older than this, held by no process, is considered left behind.
DEFAULT_STALE_SECONDS: Final = lockfiles.CLEARED_AFTER_SECONDS
#: The dependencies not here that doctor names one by one, per task (the rest: counted).
_NAMED_ABSENT: Final = 10


def check_task(refs: TaskRefs, task_id: str) -> list[str]:
    """The problems of one task (an empty list when it is healthy)."""
    tip = refs.repo.read_ref(ref_name(task_id))
    if tip is None:
        return ["the task ref disappeared during the check"]
    try:
        state = refs.read_state(task_id, tip)
    except CorruptData as exc:
        return [_unreadable(refs, task_id, tip, str(exc).removeprefix(f"task {task_id}: "))]
    refused = task_json_problem(task_id, state)  # (what a pull refuses, push holds back)
    if refused:
        return [f"{refused} (doctor --repair mends it)"]
    return _state_problems(refs.repo, state)


def _state_problems(repo: Repository, state: TaskState, *, shape: bool = True) -> list[str]:
    """The problems of a task's stored state: its tree's shape (unless not ``shape``),
    and each link against the body stored for it (streamed, checked against its sha256)."""
    problems: list[str] = []
    try:
        if state.tree and shape:
            problems += task_tree_problems(repo, state.tree)
        tree = repo.read_tree(state.tree) if state.tree else {}
        bodies = tree.get(b"bodies")
        if bodies is not None and bodies[0] != MODE_TREE:
            bodies = None
        stored: dict[bytes, bytes] = {}
        if bodies is not None:
            for fan, (mode, sub) in repo.read_tree(bodies[1]).items():
                if mode != MODE_TREE:
                    continue  # foreign: reported above
                for name, (kind, oid) in repo.read_tree(sub).items():
                    if kind == MODE_BLOB:
                        stored[b"bodies/" + fan + b"/" + name] = oid
    except CorruptData as exc:
        return [f"tree: {exc}"]
    seen: set[str] = set()
    # (while check() is digesting: the bodies new to this run, in one stream)
    repo.digest_blobs([link.oid.encode() for link in state.links], sys.maxsize)
    for link in state.links:
        short = link.sha256[:12]
        if link.sha256 in seen:
            problems.append(f"context {short} is linked twice")
        seen.add(link.sha256)
        path = body_path(link.sha256)
        in_tree = stored.pop(path, None)
        if in_tree is None:
            problems.append(f"context {short} has no body at {path.decode()}")
        elif in_tree.decode() != link.oid:
            problems.append(f"context {short}: the link's oid differs from the tree's")
        try:
            # streamed, so that a body of any size is checked in a megabyte of memory
            size, sha256, utf8 = repo.blob_digest(link.oid.encode(), limit=sys.maxsize)
        except CorruptData as exc:
            problems.append(f"context {short}: {exc}")
            continue
        if sha256 != link.sha256:
            problems.append(f"context {short}: body does not match its sha256")
        if size != link.size:
            problems.append(f"context {short}: size {size} differs from recorded {link.size}")
        if not utf8:
            problems.append(f"context {short}: body is not UTF-8")
    for path in sorted(stored):
        problems.append(f"unlinked body {path.decode()}")
    return problems


def _unreadable(refs: TaskRefs, task_id: str, tip: bytes, problem: str) -> str:
    """``problem``, and when the task's ref names no object this repository holds, or
    one that is no task's commit, what it holds and the ways out (the reflog keeps its
    earlier tips)."""
    ref = ref_name(task_id)
    name = ref.decode()
    target = refs.repo.symbolic_target(ref)
    if target is not None:
        # (git update-ref without --no-deref would move or delete the target)
        return (
            f"it is a symbolic ref to {target.decode('utf-8', 'replace')}, not a task of its "
            f"own; git update-ref --no-deref -d {name} drops it (what it points at stays)"
        )
    value, kind = refs.repo.typed_refs([name]).get(ref, (tip, "broken"))
    if kind == "missing":
        what = f"its ref points at {value.decode()}, an object this repository lacks"
    elif kind == "broken":
        what = "its ref holds no object id"
    elif kind != "commit" or (problem.startswith("commit ") and " has no " in problem):
        what = problem  # (a ref at a blob or tree, a commit of no task: reset it, or drop it)
    else:
        return problem
    if not refs.repo.has_reflog(ref):
        # (a task a pull or a big import made has no reflog: nothing to reset it from)
        return (
            f"{what}, and it has no reflog to reset it from; git update-ref -d {name} drops "
            "it, and a pull from a remote that has it, or the import it came from, brings "
            "it back"
        )
    return (
        f"{what}; git reflog {name} lists earlier tips to reset it to "
        f"(git update-ref {name} TIP), or git update-ref -d {name} drops it"
    )


def _open_files() -> set[str]:
    """Every file some process has open (Linux /proc; none elsewhere)."""
    found: set[str] = set()
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                found.add(os.readlink(f"{fd_dir}/{fd}"))
            except OSError:
                continue
    return found


def find_locks(common_dir: str, now: float | None = None) -> list[dict[str, Any]]:
    """Every ``*.lock`` file under ``refs/hydrate/`` and ``refs/hydrate-remotes/``
    (a pull's or push's mirror), ``packed-refs.lock``, and git-hydrate's own
    (``hydrate-id-*.lock``, ``hydrate-graph.lock``): path, age in seconds, ``held``
    (open in a process, or made by a git-hydrate process that runs), and ``pid``
    and ``maker`` (``running`` or ``gone``) when git-hydrate made it on this host
    (see :mod:`git_hydrate.store.lockfiles`)."""
    now = time.time() if now is None else now
    bases = [os.path.join(common_dir, "refs", name) for name in ("hydrate", "hydrate-remotes")]
    try:
        own = [n for n in os.listdir(common_dir) if n.startswith("hydrate-")]
    except OSError:
        own = []
    # packed-refs.lock stops every ref change, tasks' too
    walked = [(common_dir, ["packed-refs.lock", *own])]
    walked += [(d, f) for base in bases for d, _s, f in os.walk(base)]
    # a big import's pack keeps a .keep naming its maker until the refs land
    packs = os.path.join(common_dir, "objects", "pack")
    with contextlib.suppress(OSError):
        walked.append((packs, [n for n in os.listdir(packs) if n.endswith(".keep")]))
    opened: set[str] | None = None
    locks = []
    for dirpath, files in walked:
        for name in files:
            path = os.path.join(dirpath, name)
            if not name.endswith(".lock") and not (
                name.endswith(".keep") and lockfiles.maker(path) is not None
            ):
                continue  # (a .keep of git's own, or a user's, is no lock)
            try:
                age = now - os.stat(path).st_mtime
            except OSError:
                continue
            opened = _open_files() if opened is None else opened  # (read once)
            maker = lockfiles.maker(path)
            lock = {"path": path, "age_seconds": round(age, 1), "held": False}
            if maker is not None and maker[1]:
                lock["pid"] = maker[0]
                lock["maker"] = "gone" if lockfiles.maker_gone(path) else "running"
            lock["held"] = lock.get("maker") == "running" or os.path.realpath(path) in opened
            locks.append(lock)
    return sorted(locks, key=lambda lock: str(lock["path"]))


def clear_stale_locks(
    common_dir: str, older_than: float = DEFAULT_STALE_SECONDS, now: float | None = None
) -> list[dict[str, Any]]:
    """Remove the lock files left by writers that are gone (see :func:`kept_because`);
    return what was removed."""
    removed = []
    for lock in find_locks(common_dir, now):
        if kept_because(lock, older_than) is None:
            try:
                os.unlink(lock["path"])
            except FileNotFoundError:
                continue
            removed.append(lock)
    return removed


def kept_because(lock: dict[str, Any], older_than: float) -> str | None:
    """Why ``--clear-stale-locks`` keeps the lock (an entry of :func:`find_locks`);
    ``None``: it removes it (its maker gone, or held by no process and old enough)."""
    if lock.get("maker") == "gone":
        return None
    if lock.get("maker") == "running":
        return f"git-hydrate process {lock['pid']} holds it and runs"
    if lock["held"]:
        return "a running process has it open"
    if lock["age_seconds"] < older_than:
        return (
            f"only {lock['age_seconds']} s old (a writer may hold it; --older-than "
            f"{older_than:g} decides)"
        )
    return None


def clear_stale_temporaries(common_dir: str, now: float | None = None) -> list[Any]:
    """Remove the caches' temporary files left by writers that are gone; return them."""
    return remove_stale_temporaries(os.path.join(common_dir, "hydrate"), now)


def policy_notes(refs: TaskRefs, task_id: str) -> list[str]:
    """What of the task breaks the text policy (:mod:`git_hydrate.textpolicy`) other
    than a credential (which ``--allow-secrets`` may have let in): stored before
    git-hydrate held every field, or pulled before it neutralised them."""
    try:
        state = refs.load(task_id)
    except HydrateError:
        return []  # a damaged task: check_task says why
    found: dict[str, str] = {}
    for field in textpolicy.task_fields(state.task, state.links):
        wrong = textpolicy.problem(field.value, field.rule)
        if wrong is not None:
            found.setdefault(field.what, wrong)
    return [
        f"{what} {wrong}: written before git-hydrate checked it; change or release it"
        for what, wrong in found.items()
    ]


def dependency_notes(refs: TaskRefs) -> dict[str, dict[str, list[str]]]:
    """Per task, its dependency ``problems`` (a cycle: it can never be ready) and
    ``notes`` (a dependency this clone does not have: a pull may bring it)."""
    summaries = queue_summaries(refs)
    stations = station_of(refs, summaries)
    graph = {t: list(item["depends_on"]) for t, item in summaries.items() if "error" not in item}
    found: dict[str, dict[str, list[str]]] = {}
    for task_id, cycle in cycles(blocking_graph(summaries)).items():
        found.setdefault(task_id, {}).setdefault("problems", []).append(
            f"dependency cycle {shown_cycle(cycle)}: it can never be ready "
            f"(break it with: git hydrate task-edit {task_id} --depends-on ... or --no-parent)"
        )
    for task_id, item in summaries.items():
        parent = item.get("parent") if "error" not in item else None
        if parent and parent not in summaries:
            said = (
                "archived; its prompt reads the parent's text from the archive"
                if parent in stations
                else "removed or not pulled; its prompt goes without the parent's text"
            )
            found.setdefault(task_id, {}).setdefault("notes", []).append(
                f"part of {parent}, which is not live here ({said}; clear it with: git "
                f"hydrate task-edit {task_id} --no-parent)"
            )
    for task_id, deps in graph.items():
        absent = 0  # (a task of 100,000 such dependencies had 100,000 notes)
        for dep in deps:
            if dep not in stations:
                absent += 1
                if absent > _NAMED_ABSENT:
                    continue
                found.setdefault(task_id, {}).setdefault("notes", []).append(
                    f"depends on {dep}, which is not here (a pull may bring it); "
                    "until it is done here, this task is not ready"
                )
            elif stations[dep] == "cancelled":  # (a cancelled task is never done)
                found.setdefault(task_id, {}).setdefault("notes", []).append(
                    f"depends on {dep}, which is cancelled: this task is not ready while it "
                    f"does (drop it with: git hydrate task-edit {task_id} --depends-on ..., "
                    f"or reopen {dep})"
                )
        if absent > _NAMED_ABSENT:
            found[task_id]["notes"].append(
                f"depends on {absent - _NAMED_ABSENT} more tasks that are not here (git hydrate "
                f"show {task_id} --json names them); until they are done here, this task is "
                "not ready"
            )
    return found


def _stray(name: bytes) -> dict[str, Any]:
    """A ref under the tasks' prefix that names no task: its report, with the
    command that removes it (one that can be typed: its name is UTF-8)."""
    ref = name.decode("utf-8", "backslashreplace")
    typed = ref.isprintable() and ref.encode("utf-8", "backslashreplace") == name
    removes = (
        f"git update-ref --no-deref -d {shlex.quote(ref)}"
        if typed
        else "git update-ref --no-deref -d"
    )
    problem = f"not a valid task id: git-hydrate ignores this ref ({removes} removes it)"
    return {"ref": ref, "ok": False, "problems": [problem]}


def check(refs: TaskRefs) -> dict[str, Any]:
    """Check every live task, the shared refs, the lock files and the remotes'
    fetch refspecs (one that writes into ``refs/hydrate/``); ``ok`` is False on
    any problem. The caches' temporary files are listed (``temporaries``); a
    stale one wastes space but harms nothing, so it is no problem. A body many
    tasks (or archived ones) link is hashed once."""
    with refs.repo.digesting():
        return _check(refs)


def _check(refs: TaskRefs) -> dict[str, Any]:
    tasks = []
    notes = dependency_notes(refs)
    for task_id in refs.task_ids():
        problems = check_task(refs, task_id)
        found = notes.get(task_id, {})
        problems += found.get("problems", [])
        tasks.append(
            {
                "task_id": task_id,
                "ok": not problems,
                "problems": problems,
                "notes": found.get("notes", []) + policy_notes(refs, task_id),
            }
        )
    checked = {task["task_id"] for task in tasks}
    for task_id in refs.task_names():  # (a ref file holding nothing: task_ids skips it)
        if task_id not in checked:
            problem = _unreadable(refs, task_id, b"", "")
            tasks.append({"task_id": task_id, "ok": False, "problems": [problem], "notes": []})
    shared = check_shared_refs(refs) + [_stray(name) for name in refs.stray_ref_names()]
    locks = find_locks(refs.repo.common_dir)
    stale = [lock for lock in locks if not lock["held"]]
    config = overwriting_refspecs(refs)
    return {
        "ok": (
            all(t["ok"] for t in tasks)
            and all(r["ok"] for r in shared)
            and not stale
            and not config
        ),
        "tasks": tasks,
        "refs": shared,
        "locks": locks,
        "config": config,
        "temporaries": find_temporaries(os.path.join(refs.repo.common_dir, "hydrate")),
        "features": features(),
    }


def check_shared_refs(refs: TaskRefs) -> list[dict[str, Any]]:
    """The archive and the removal record, where present: readable, known format
    (and each archived task checked: :func:`archived_problems`)."""
    repo, results = refs.repo, []
    for ref, read, shape in (
        (ARCHIVE_REF, lambda tip: read_archive(repo, tip), archive_tree_problems),
        (REMOVED_REF, lambda tip: read_removed(repo, tip), removal_tree_problems),
    ):
        tip = repo.read_ref(ref)
        if tip is None:
            continue
        try:
            read(tip)
            problems: list[str] = shape(repo, repo.read_commit_tree(tip)[0])
            if ref == ARCHIVE_REF:
                problems += archived_problems(refs, read_archive(repo, tip))
        except CorruptData as exc:
            problems = [str(exc)]
        results.append({"ref": ref.decode(), "ok": not problems, "problems": problems})
    return results


def archived_problems(refs: TaskRefs, archive: Archive) -> list[str]:
    """The problems of each archived task, ``task ID: …``: its index entry and its
    tree under ``tasks/`` must agree (the tree is its archived commit's), and that
    commit's state is checked as a live task's is. (Unarchived, a damaged task is
    mended as a live one is: ``doctor --repair``.)"""
    repo, problems = refs.repo, []
    kept = repo.read_tree(archive.tree) if archive.tree is not None else {}
    folder = kept.get(b"tasks")
    trees = repo.read_tree(folder[1]) if folder is not None and folder[0] == MODE_TREE else {}
    for name in sorted(set(trees) - {i.encode("ascii") for i in archive.index.tasks}):
        shown = name.decode("utf-8", "backslashreplace")
        problems.append(f"task {shown}: archived without an entry in index.json")
    for task_id, entry in sorted(archive.index.tasks.items()):
        tip = entry.tip.encode("ascii")
        found = _archived_problems(refs, task_id, tip, trees.get(task_id.encode("ascii")))
        problems += [f"task {task_id}: {problem}" for problem in found]
    return problems


def _archived_problems(
    refs: TaskRefs, task_id: str, tip: bytes, kept: tuple[int, bytes] | None
) -> list[str]:
    try:
        state = refs.read_state(task_id, tip)
    except CorruptData as exc:
        return [str(exc).removeprefix(f"task {task_id}: ")]
    if kept is None:
        return ["in index.json, but the archive has no tasks/ tree of it"]
    if state.tree is not None and kept[1] != state.tree:
        return [f"its tasks/ tree is not that of its archived commit {tip.decode()[:12]}"]
    refused = task_json_problem(task_id, state)
    if refused:  # (what --repair mends in a live task: the archive is rewritten whole)
        return [
            f"{refused} (to mend it: git hydrate unarchive {task_id}, doctor --repair, "
            f"then archive {task_id} again)"
        ]
    # (the shape of its tree: with the archive's, by archive_tree_problems)
    return _state_problems(refs.repo, state, shape=False)
