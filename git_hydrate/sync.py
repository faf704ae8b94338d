"""Sharing tasks through the team's git remotes: pull, push, sync, setup, removal.

The network goes through the ``git`` binary only (the user's credentials, ssh
configuration, proxies, protocol v2). The rules, each one a way not to lose
somebody's work (see DESIGN.md, "Sharing through remotes"):

* Fetch into a mirror namespace, ``refs/hydrate-remotes/<remote>/``, never
  straight into ``refs/hydrate/`` and never into ``refs/remotes/``; then merge
  task by task: absent here → create, behind → fast-forward, ahead → nothing,
  diverged → a merge commit with both parents whose tree is the merged state
  (:mod:`git_hydrate.merge`). Every write is a compare-and-swap.
* Fetch with ``--no-filter`` so partial clones get the bodies.
* Push without force and read the per-ref results (``--porcelain``).
* Config gets at most one wildcard fetch refspec (``setup``); never
  ``remote.<name>.push``.

Removal: ``refs/hydrate/removed`` is one ref whose commits keep every removed
tip reachable (as a parent) and whose ``removed.json`` says which task was
removed at which tip. A task whose tip is reachable from it is not brought back
by a pull, and a clone that holds such a task without newer changes drops it.
``refs/hydrate/archive`` (and ``removed``) travel with push and pull and merge
as union refs: path by path, JSON index files key by key.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import msgspec

from . import codec, merge, validate
from .errors import Busy, Conflict, CorruptData, HydrateError, NotFound, ValidationError
from .ledger import (
    TASK_REF_PREFIX,
    Ledger,
    TaskState,
    body_path,
    iso_utc,
    link_tree_changes,
    ref_name,
)
from .model import TASK_ID_RE
from .store import MODE_TREE, RefRace

__all__ = [
    "ARCHIVE_REF",
    "MIRROR_PREFIX",
    "REMOVED_REF",
    "Outcome",
    "Remote",
    "Report",
    "pull",
    "push",
    "remove_task",
    "resolve_remote",
    "setup",
    "sync",
]

MIRROR_PREFIX: Final = "refs/hydrate-remotes/"
ARCHIVE_REF: Final = b"refs/hydrate/archive"
REMOVED_REF: Final = b"refs/hydrate/removed"
#: Refs that are not tasks but travel with them and merge as unions.
UNION_REFS: Final = (REMOVED_REF, ARCHIVE_REF)
_REMOVED_FILE: Final = b"removed.json"
#: How many pull-and-push rounds ``sync`` makes before reporting what is still rejected.
MAX_SYNC_ROUNDS: Final = 3
#: Compare-and-swap attempts per ref before giving up with :class:`Busy`.
MAX_ATTEMPTS: Final = 16
#: Virtual merge bases are built at most this deep (criss-cross histories).
MAX_BASE_DEPTH: Final = 3

#: Pull/push actions that make the command fail (exit status 1): a task the
#: remote refused, remote data that failed validation, an ID that does not exist.
FAILED_ACTIONS: Final = frozenset({"skipped", "rejected", "absent"})


@dataclass(frozen=True)
class Remote:
    """Where to sync: a configured remote name or a URL.

    ``target`` is what ``git`` is given; ``display`` is safe to print and to
    put in commit messages (no credentials); ``mirror`` names the mirror
    namespace ``refs/hydrate-remotes/<mirror>/``.
    """

    target: str
    display: str
    mirror: str
    is_url: bool

    @property
    def mirror_prefix(self) -> bytes:
        return f"{MIRROR_PREFIX}{self.mirror}/".encode()


@dataclass
class Outcome:
    """What happened to one task (or union ref) in a pull or push."""

    name: str
    action: str
    detail: str = ""
    old: str | None = None
    new: str | None = None
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    is_task: bool = True

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            ("task_id" if self.is_task else "ref"): self.name,
            "action": self.action,
            "detail": self.detail,
            "old": self.old,
            "new": self.new,
        }
        if self.conflicts:
            data["conflicts"] = self.conflicts
        return data


@dataclass
class Report:
    """The result of ``pull``, ``push`` or ``sync``: outcomes plus up-to-date counts."""

    operation: str
    remote: str
    outcomes: list[Outcome] = field(default_factory=list)
    up_to_date: int = 0
    rounds: int = 1

    @property
    def ok(self) -> bool:
        """False when a task was rejected, skipped or absent (the command exits 1)."""
        return not any(o.action in FAILED_ACTIONS for o in self.outcomes)

    def failed(self, action: str) -> list[str]:
        return [o.name for o in self.outcomes if o.action == action]

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.action] = counts.get(outcome.action, 0) + 1
        counts["up-to-date"] = self.up_to_date
        return dict(sorted(counts.items()))

    def as_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "remote": self.remote,
            "ok": self.ok,
            "rounds": self.rounds,
            "counts": self.counts(),
            "tasks": [o.as_dict() for o in self.outcomes if o.is_task],
            "refs": [o.as_dict() for o in self.outcomes if not o.is_task],
        }


# -- remotes ------------------------------------------------------------------


def _remote_names(ledger: Ledger) -> list[str]:
    proc = ledger.repo.git(["remote"], check=False)
    return proc.stdout.decode("utf-8", "replace").split()


def _strip_credentials(url: str) -> str:
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.scheme and "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))
    return url


def _mirror_for_url(display: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", display).strip("-")[-40:].strip("-")
    digest = hashlib.sha256(display.encode("utf-8")).hexdigest()[:10]
    return f"url-{slug}-{digest}" if slug else f"url-{digest}"


def resolve_remote(ledger: Ledger, remote: str | None = None) -> Remote:
    """The remote to use: the given name or URL, else the current branch's, else origin.

    Raises:
        ValidationError: no remote given and none can be chosen, or an unknown name.
    """
    names = _remote_names(ledger)
    if remote is None:
        branch = ledger.repo.git(["symbolic-ref", "-q", "--short", "HEAD"], check=False)
        current = branch.stdout.decode("utf-8", "replace").strip()
        if current:
            proc = ledger.repo.git(["config", "--get", f"branch.{current}.remote"], check=False)
            configured = proc.stdout.decode("utf-8", "replace").strip()
            if configured and configured != "." and configured in names:
                remote = configured
        if remote is None:
            if "origin" not in names:
                raise ValidationError(
                    "no remote to sync with: the current branch has none and there is no "
                    "'origin'; name one (git hydrate pull REMOTE) or add one with git remote add"
                )
            remote = "origin"
    if not remote or remote.startswith("-") or "\n" in remote or "\0" in remote:
        raise ValidationError(f"invalid remote {remote!r}")
    if remote in names:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", remote) or ".." in remote:
            raise ValidationError(f"remote name {remote!r} cannot name a mirror ref")
        # "a/b" must not land inside the mirror of a remote named "a" (whose
        # fetch --prune would delete it).
        mirror = remote.replace("/", "%2F")
        return Remote(target=remote, display=remote, mirror=mirror, is_url=False)
    if ":" in remote or "/" in remote or remote in (".", ".."):
        display = _strip_credentials(remote)
        return Remote(target=remote, display=display, mirror=_mirror_for_url(display), is_url=True)
    known = ", ".join(names) if names else "none"
    hint = "; or give a URL"
    if names and TASK_ID_RE.match(remote):
        hint += f"; to name tasks, give the remote first: git hydrate pull {names[0]} {remote}"
    raise ValidationError(f"no remote named {remote!r} (configured remotes: {known}){hint}")


# -- git plumbing helpers -----------------------------------------------------


def _git_failure(what: str, proc: Any) -> HydrateError:
    lines = [
        line.strip()
        for line in proc.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith(("hint:", "warning:"))
    ]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    message = (fatal or lines or [f"exit status {proc.returncode}"])[0]
    for prefix in ("fatal: ", "error: "):
        if message.startswith(prefix):
            message = message[len(prefix) :]
    return HydrateError(f"{what} failed: {message}")


def _fetch(ledger: Ledger, remote: Remote) -> dict[bytes, bytes]:
    """Fetch every ``refs/hydrate/*`` of the remote into its mirror; return the mirror."""
    repo = ledger.repo
    mirror = remote.mirror_prefix
    # Tell the server only about hydrate history: its objects are complete here
    # even in a partial clone, whereas a branch's blobs may be missing and
    # must not be assumed present (bodies can equal files of the project).
    tips = [b"refs/hydrate/", mirror]
    has_tips = any(repo.refs_under(prefix) for prefix in tips)
    args: list[str] = []
    if not has_tips:
        args += ["-c", "fetch.negotiationAlgorithm=noop"]
    args += [
        "fetch",
        "--no-filter",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--prune",
        "--quiet",
    ]
    if has_tips:
        for prefix in tips:
            if repo.refs_under(prefix):
                args.append(f"--negotiation-tip={prefix.decode()}*")
    args += [remote.target, f"+refs/hydrate/*:{mirror.decode()}*"]
    proc = repo.git(args, check=False)
    if proc.returncode != 0:
        raise _git_failure(f"git fetch {remote.display}", proc)
    fetched = repo.refs_under(mirror)
    if fetched and _is_partial(ledger):
        _fetch_missing(ledger, remote, fetched)
    return fetched


def _is_partial(ledger: Ledger) -> bool:
    values = ledger.repo.config_values("extensions.partialclone")
    values.update(ledger.repo.config_values("remote."))
    return any(
        key == "extensions.partialclone" or (key.endswith(".promisor") and value == "true")
        for key, value in values.items()
    )


def _fetch_missing(ledger: Ledger, remote: Remote, fetched: dict[bytes, bytes]) -> None:
    """Fetch objects a filtered ``git fetch`` left out of the mirror (partial clones).

    A plain ``git fetch`` after ``setup`` brings the mirror's commits with the
    clone's filter; ours then finds them present and fetches nothing, so the
    bodies it skipped are asked for by id.
    """
    repo = ledger.repo
    heads = [oid.decode() for oid in fetched.values()]
    proc = repo.git(
        ["rev-list", "--objects", "--missing=print", "--stdin", "--not", "--glob=refs/hydrate/*"],
        input="\n".join(heads).encode() + b"\n",
        check=False,
    )
    missing = [line[1:].decode() for line in proc.stdout.splitlines() if line.startswith(b"?")]
    if not missing:
        return
    again = repo.git(
        [
            "fetch",
            "--no-filter",
            "--no-tags",
            "--no-write-fetch-head",
            "--no-recurse-submodules",
            "--quiet",
            "--stdin",
            remote.target,
        ],
        input="\n".join(missing).encode() + b"\n",
        check=False,
    )
    if again.returncode != 0:
        raise _git_failure(
            f"git fetch {remote.display} (bodies missing from a partial clone)", again
        )


def _merge_bases(ledger: Ledger, a: bytes, b: bytes) -> list[bytes]:
    proc = ledger.repo.git(["merge-base", "--all", a.decode(), b.decode()], check=False)
    return sorted(proc.stdout.split()) if proc.returncode == 0 else []


def _is_ancestor(ledger: Ledger, ancestor: bytes, descendant: bytes) -> bool:
    if ancestor == descendant:
        return True
    proc = ledger.repo.git(
        ["merge-base", "--is-ancestor", ancestor.decode(), descendant.decode()], check=False
    )
    return proc.returncode == 0


def _reachable(ledger: Ledger, tips: Iterable[bytes]) -> set[bytes]:
    """Every commit reachable from ``tips`` (one ``git rev-list``)."""
    heads = [t.decode() for t in tips]
    if not heads:
        return set()
    proc = ledger.repo.git(["rev-list", "--stdin"], input="\n".join(heads).encode() + b"\n")
    return set(proc.stdout.split())


def _commit_rank(ledger: Ledger, oid: bytes) -> tuple[int, str]:
    commit: Any = ledger.repo.read_commit(oid)
    return (int(commit.commit_time), oid.decode())


# -- validation and merging of task states -------------------------------------


def _validate_remote(ledger: Ledger, task_id: str, tip: bytes) -> TaskState:
    """Decode a fetched task tip and check every body against its link.

    Raises:
        CorruptData: unknown format, bad JSON, wrong id, a body missing,
            or a body that does not match its sha256 or size.
    """
    state = ledger.read_state(task_id, tip)
    assert state.tree is not None
    repo = ledger.repo
    seen: set[str] = set()
    for link in state.links:
        if link.sha256 in seen:
            raise CorruptData(f"task {task_id}: link {link.sha256[:12]} appears twice")
        seen.add(link.sha256)
        path = body_path(link.sha256)
        entry = _tree_lookup(ledger, state.tree, path)
        if entry is None or entry != link.oid.encode():
            raise CorruptData(f"task {task_id}: body {link.sha256[:12]} is not in its tree")
        try:
            data = repo.read_blob(entry)
        except CorruptData:
            raise CorruptData(
                f"task {task_id}: body {link.sha256[:12]} is missing (blob absent)"
            ) from None
        ledger._check_body(task_id, link, data, check_size=True)
    return state


def _tree_lookup(ledger: Ledger, tree: bytes, path: bytes) -> bytes | None:
    parts = path.split(b"/")
    current = tree
    for index, part in enumerate(parts):
        entry = ledger.repo.read_tree(current).get(part)
        if entry is None:
            return None
        mode, oid = entry
        if index < len(parts) - 1:
            if mode != MODE_TREE:
                return None
            current = oid
        else:
            return oid
    return None


def _side(ledger: Ledger, task_id: str, oid: bytes, state: TaskState | None = None) -> merge.Side:
    state = state if state is not None else ledger.read_state(task_id, oid)
    time_, commit = _commit_rank(ledger, oid)
    return merge.Side(task=state.task, links=state.links, time=time_, commit=commit)


def _virtual_base(
    ledger: Ledger, task_id: str, bases: list[bytes], depth: int = 0
) -> merge.Side | None:
    """The merge base as a state; several bases (criss-cross) are merged first."""
    if not bases or depth > MAX_BASE_DEPTH:
        return None
    try:
        result = _side(ledger, task_id, bases[0])
        for other in bases[1:]:
            inner = _virtual_base(
                ledger, task_id, _merge_bases(ledger, bases[0], other), depth + 1
            )
            other_side = _side(ledger, task_id, other)
            merged = merge.merge_states(inner, result, other_side)
            result = merge.Side(
                task=merged.task,
                links=merged.links,
                time=max(result.time, other_side.time),
                commit=max(result.commit, other_side.commit),
            )
    except CorruptData:
        return None
    return result


def _merge_message(subject: str, action: str, trailers: list[tuple[str, str]], body: str) -> str:
    lines = [f"hydrate: {subject}", ""]
    if body:
        lines += [body, ""]
    lines += [f"Hydrate-{key}: {value}" for key, value in trailers]
    return "\n".join(lines) + "\n"


def _write_merged_task(ledger: Ledger, result: merge.MergeResult) -> bytes:
    repo = ledger.repo
    entries = link_tree_changes(repo, list(result.links), None)
    entries[b"task.json"] = repo.write_blob(codec.encode(result.task))
    for link in result.links:
        entries[body_path(link.sha256)] = link.oid.encode()
    # Built from nothing, so the tree depends on the merged state only.
    return repo.update_tree(None, entries)


def _merge_task(
    ledger: Ledger, task_id: str, local: bytes, remote_tip: bytes, theirs: TaskState, where: str
) -> tuple[bytes, merge.MergeResult]:
    ours = _side(ledger, task_id, local)
    other = _side(ledger, task_id, remote_tip, theirs)
    base = _virtual_base(ledger, task_id, _merge_bases(ledger, local, remote_tip))
    result = merge.merge_states(base, ours, other)
    tree = _write_merged_task(ledger, result)
    names = [c.field for c in result.conflicts]
    body = ""
    if names:
        body = "Changed on both sides; kept the newer side's value:\n" + "\n".join(
            f"- {name}" for name in names
        )
    trailers = [("Action", "merge"), ("Task", task_id), ("Remote", where)]
    trailers += [("Conflict", name) for name in names]
    subject = f"merge {task_id} from {where}"
    if names:
        subject += f" ({len(names)} conflict{'s' if len(names) != 1 else ''})"
    message = _merge_message(subject, "merge", trailers, body)
    commit = ledger.repo.write_commit(tree, [local, remote_tip], message, when=ledger._clock())
    return commit, result


# -- removal record --------------------------------------------------------------


def _read_removed(ledger: Ledger, tip: bytes | None) -> dict[str, Any]:
    if tip is None:
        return {}
    tree, _ = ledger.repo.read_commit_tree(tip)
    entry = ledger.repo.read_tree(tree).get(_REMOVED_FILE)
    if entry is None:
        return {}
    try:
        data = msgspec.json.decode(ledger.repo.read_blob(entry[1]))
    except msgspec.DecodeError as exc:
        raise CorruptData(f"{REMOVED_REF.decode()}: removed.json: {exc}") from None
    removed = data.get("removed") if isinstance(data, dict) else None
    if not isinstance(removed, dict):
        raise CorruptData(f"{REMOVED_REF.decode()}: removed.json has no 'removed' object")
    return removed


def _record_removal(ledger: Ledger, task_id: str, tip: bytes) -> None:
    repo = ledger.repo
    ident = repo.identity().name_email.decode("utf-8", "replace")
    for attempt in range(MAX_ATTEMPTS):
        current = repo.read_ref(REMOVED_REF)
        removed = dict(_read_removed(ledger, current))
        removed[task_id] = {"tip": tip.decode(), "at": iso_utc(ledger._clock()), "by": ident}
        blob = repo.write_blob(codec.encode({"format": 1, "removed": removed}))
        tree = repo.write_tree({_REMOVED_FILE: (0o100644, blob)})
        message = _merge_message(
            f"task-rm {task_id}",
            "task-rm",
            [("Action", "task-rm"), ("Task", task_id), ("Tip", tip.decode())],
            "",
        )
        parents = [current, tip] if current is not None else [tip]
        commit = repo.write_commit(tree, parents, message, when=ledger._clock())
        try:
            repo.compare_and_swap(REMOVED_REF, current, commit, message.splitlines()[0])
            return
        except RefRace:
            time.sleep(0.002 * (attempt + 1))
    raise Busy(f"{REMOVED_REF.decode()} kept changing under this write; try again")


# -- union refs (archive, removal record) ----------------------------------------


def _flatten(ledger: Ledger, tree: bytes | None, prefix: bytes = b"") -> dict[bytes, bytes]:
    if tree is None:
        return {}
    out: dict[bytes, bytes] = {}
    for name, (mode, oid) in ledger.repo.read_tree(tree).items():
        if mode == MODE_TREE:
            out.update(_flatten(ledger, oid, prefix + name + b"/"))
        else:
            out[prefix + name] = oid
    return out


def _merge_union_trees(
    ledger: Ledger, base: bytes | None, a: bytes, b: bytes, a_wins: bool
) -> bytes:
    repo = ledger.repo
    fb, fa, fbb = _flatten(ledger, base), _flatten(ledger, a), _flatten(ledger, b)
    merged: dict[bytes, bytes | None] = {}
    for path in sorted(set(fa) | set(fbb)):
        va, vb, vo = fa.get(path), fbb.get(path), fb.get(path)
        if va == vb:
            chosen = va
        elif va == vo:
            chosen = vb
        elif vb == vo:
            chosen = va
        elif va is None or vb is None:
            chosen = va if va is not None else vb  # a change wins over a removal
        elif path.endswith(b".json"):
            decoded = [
                msgspec.json.decode(repo.read_blob(v)) if v is not None else merge.MISSING
                for v in (vo, va, vb)
            ]
            value = merge.merge_json(decoded[0], decoded[1], decoded[2], a_wins)
            chosen = repo.write_blob(codec.encode(value))
        else:
            chosen = va if a_wins else vb
        if chosen is not None:
            merged[path] = chosen
    return repo.update_tree(None, merged)


def _pull_union_ref(ledger: Ledger, ref: bytes, remote_tip: bytes, where: str) -> Outcome | None:
    repo = ledger.repo
    name = ref.decode()
    for attempt in range(MAX_ATTEMPTS):
        local = repo.read_ref(ref)
        if local == remote_tip:
            return None
        try:
            repo.read_commit_tree(remote_tip)
            if ref == REMOVED_REF:
                _read_removed(ledger, remote_tip)
            elif ref == ARCHIVE_REF:
                from .lifecycle import _read_archive

                _read_archive(ledger, remote_tip)  # refuse a damaged remote archive
        except CorruptData as exc:
            return Outcome(name, "skipped", f"remote data invalid: {exc}", is_task=False)
        if local is None:
            new, action = remote_tip, "created"
        else:
            bases = _merge_bases(ledger, local, remote_tip)
            if remote_tip in bases:
                return None  # ahead
            if local in bases:
                new, action = remote_tip, "fast-forward"
            else:
                a_wins = _commit_rank(ledger, local) > _commit_rank(ledger, remote_tip)
                base_tree = repo.read_commit_tree(bases[0])[0] if bases else None
                try:
                    tree = _merge_union_trees(
                        ledger,
                        base_tree,
                        repo.read_commit_tree(local)[0],
                        repo.read_commit_tree(remote_tip)[0],
                        a_wins,
                    )
                except (CorruptData, msgspec.DecodeError) as exc:
                    return Outcome(name, "skipped", f"cannot merge: {exc}", is_task=False)
                message = _merge_message(
                    f"merge {name} from {where}",
                    "merge",
                    [("Action", "merge"), ("Ref", name), ("Remote", where)],
                    "",
                )
                new = repo.write_commit(tree, [local, remote_tip], message, when=ledger._clock())
                action = "merged"
        try:
            repo.compare_and_swap(ref, local, new, f"hydrate: pull {name} from {where}")
        except RefRace:
            time.sleep(0.002 * (attempt + 1))
            continue
        return Outcome(
            name,
            action,
            old=local.decode() if local else None,
            new=new.decode(),
            is_task=False,
        )
    raise Busy(f"{name} kept changing under this pull; try again")


# -- pull -------------------------------------------------------------------------


class _Covered:
    """Commits reachable from the removal record and the archive, computed once."""

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._sets: dict[bytes, set[bytes]] = {}

    def of(self, ref: bytes) -> set[bytes]:
        if ref not in self._sets:
            tip = self._ledger.repo.read_ref(ref)
            self._sets[ref] = _reachable(self._ledger, [tip]) if tip is not None else set()
        return self._sets[ref]

    def any(self, oid: bytes) -> bool:
        return any(oid in self.of(ref) for ref in UNION_REFS)


#: Pull actions that move a task ref.
WRITE_ACTIONS: Final = frozenset({"created", "restored", "fast-forward", "merged"})


def _plan_task(
    ledger: Ledger,
    task_id: str,
    remote_tip: bytes,
    where: str,
    covered: _Covered,
    removed_index: dict[str, Any],
    folded_ids: dict[str, str],
) -> Outcome | None:
    """Decide (and prepare, for a merge) what pulling ``remote_tip`` does; move no ref.

    For the actions in :data:`WRITE_ACTIONS` the outcome's ``old``/``new``
    are the compare-and-swap to apply; ``None`` means up to date.
    """
    local = ledger.repo.read_ref(ref_name(task_id))
    if local == remote_tip:
        return None
    note = ""
    bases: list[bytes] = []
    if local is None:
        if covered.any(remote_tip):
            return Outcome(
                task_id,
                "not-restored",
                f"removed or archived here; {where} has no newer change",
                new=remote_tip.decode(),
            )
        other = folded_ids.get(task_id.casefold())
        if other is not None and other != task_id:
            return Outcome(
                task_id,
                "skipped",
                f"differs from local task {other!r} only by case",
                new=remote_tip.decode(),
            )
        if task_id in removed_index:
            note = f"removed here, but changed on {where} since; restored"
    else:
        bases = _merge_bases(ledger, local, remote_tip)
        if remote_tip in bases:
            return Outcome(
                task_id,
                "ahead",
                "local changes not on the remote yet; push them",
                old=local.decode(),
            )
        if covered.any(remote_tip):
            # The remote still has a copy removed (or archived) here, unchanged
            # since; the local task of that id is a new one. Merging would bring
            # the removed content back, so it is left out, and push replaces
            # the remote copy (under a lease on exactly that copy).
            return Outcome(
                task_id,
                "replaces-removed",
                f"{where} still has the copy removed here; push replaces it",
                old=local.decode(),
                new=remote_tip.decode(),
            )
    try:
        theirs = _validate_remote(ledger, task_id, remote_tip)
    except CorruptData as exc:
        return Outcome(
            task_id,
            "skipped",
            f"remote data invalid: {exc}",
            old=local.decode() if local else None,
            new=remote_tip.decode(),
        )
    conflicts: list[dict[str, Any]] = []
    if local is None:
        new, action = remote_tip, ("restored" if note else "created")
        folded_ids[task_id.casefold()] = task_id
    elif local in bases:
        new, action = remote_tip, "fast-forward"
    else:
        try:
            new, result = _merge_task(ledger, task_id, local, remote_tip, theirs, where)
        except CorruptData as exc:
            return Outcome(task_id, "skipped", f"cannot merge: {exc}", old=local.decode())
        action = "merged"
        conflicts = [c.as_dict() for c in result.conflicts]
        if conflicts:
            note = "changed on both sides: " + ", ".join(c["field"] for c in conflicts)
    return Outcome(
        task_id,
        action,
        note,
        old=local.decode() if local else None,
        new=new.decode(),
        conflicts=conflicts,
    )


def _pull_task(
    ledger: Ledger,
    task_id: str,
    remote_tip: bytes,
    where: str,
    covered: _Covered,
    removed_index: dict[str, Any],
    folded_ids: dict[str, str],
) -> Outcome | None:
    """Plan and apply one task's pull with its own compare-and-swap, retrying races."""
    for attempt in range(MAX_ATTEMPTS):
        outcome = _plan_task(
            ledger, task_id, remote_tip, where, covered, removed_index, folded_ids
        )
        if outcome is None or outcome.action not in WRITE_ACTIONS:
            return outcome
        assert outcome.new is not None
        old = outcome.old.encode() if outcome.old else None
        try:
            ledger.repo.compare_and_swap(
                ref_name(task_id),
                old,
                outcome.new.encode(),
                f"hydrate: pull {task_id} from {where}",
            )
        except RefRace:
            time.sleep(0.002 * (attempt + 1))
            continue
        except Conflict as exc:
            # the ref cannot be made here (a stray ref in the way): this task only
            return Outcome(task_id, "skipped", str(exc), new=outcome.new)
        return outcome
    raise Busy(f"task {task_id} kept changing under this pull; try again")


def _apply_batch(ledger: Ledger, outcomes: list[Outcome], where: str) -> bool:
    """Move every planned ref in one ``git update-ref --stdin`` transaction.

    All or nothing, each update checked against the old value it was planned
    from, with reflog entries. ``False`` when any ref moved meanwhile (the
    caller then goes task by task). One transaction instead of a locked,
    fsync'ed write per task makes a first pull of many tasks several times
    faster.
    """
    lines = []
    for outcome in outcomes:
        assert outcome.new is not None
        ref = ref_name(outcome.name).decode()
        if outcome.old is None:
            lines.append(f"create {ref} {outcome.new}")
        else:
            lines.append(f"update {ref} {outcome.new} {outcome.old}")
    proc = ledger.repo.git(
        ["update-ref", "--create-reflog", "-m", f"hydrate: pull from {where}", "--stdin"],
        input=("\n".join(lines) + "\n").encode(),
        check=False,
    )
    return proc.returncode == 0


def _drop_removed(
    ledger: Ledger,
    local_tasks: dict[str, bytes],
    remote_tasks: dict[str, bytes],
    covered: _Covered,
    removed_index: dict[str, Any],
    where: str,
) -> list[Outcome]:
    """Drop local tasks the shared removal record covers (no newer local change)."""
    outcomes: list[Outcome] = []
    if not removed_index:
        return outcomes
    removed_set = covered.of(REMOVED_REF)
    for task_id, tip in sorted(local_tasks.items()):
        if task_id not in removed_index:
            continue
        if tip in removed_set:
            try:
                ledger.repo.delete_ref(
                    ref_name(task_id), tip, f"hydrate: pull removal of {task_id}"
                )
            except RefRace:
                continue  # changed meanwhile: it stays
            by = (
                removed_index[task_id].get("by", "")
                if isinstance(removed_index[task_id], dict)
                else ""
            )
            outcomes.append(
                Outcome(task_id, "removed", f"removed by {by}".strip(), old=tip.decode())
            )
        elif task_id not in remote_tasks:
            outcomes.append(
                Outcome(
                    task_id,
                    "kept",
                    f"removed on {where}, but changed here since; push to bring it back there",
                    old=tip.decode(),
                )
            )
    return outcomes


def _drop_archived(
    ledger: Ledger, local_tasks: dict[str, bytes], covered: _Covered
) -> list[Outcome]:
    """Drop live tasks that were archived elsewhere and not changed here since.

    Archiving folds a finished task into ``refs/hydrate/archive`` so that it
    stops costing every clone a ref; once the archive has travelled, a clone
    whose copy of the task is an ancestor of the archived one lets it go too
    (``show``/``log``/``unarchive`` still reach it through the archive).
    """
    from .lifecycle import _read_archive

    try:
        _tip, _tree, index = _read_archive(ledger)
    except CorruptData:
        return []  # a damaged local archive frees nothing; doctor reports it
    if not index.tasks:
        return []
    archived = covered.of(ARCHIVE_REF)
    outcomes: list[Outcome] = []
    for task_id, tip in sorted(local_tasks.items()):
        if task_id not in index.tasks or tip not in archived:
            continue
        try:
            ledger.repo.delete_ref(ref_name(task_id), tip, f"hydrate: pull archive of {task_id}")
        except RefRace:
            continue  # changed meanwhile: it stays live
        outcomes.append(Outcome(task_id, "archived", "archived elsewhere", old=tip.decode()))
    return outcomes


def _local_tasks(ledger: Ledger) -> dict[str, bytes]:
    return ledger.task_tips()  # never a stray ref that is not a task id


def _check_ids(ids: Iterable[str]) -> list[str]:
    wanted = []
    for task_id in ids:
        if not isinstance(task_id, str) or not TASK_ID_RE.match(task_id):
            raise ValidationError(f"invalid task id {task_id!r}")
        wanted.append(task_id)
    return sorted(set(wanted))


def _pull(ledger: Ledger, remote: Remote, ids: list[str], report: Report) -> None:
    mirror = _fetch(ledger, remote)
    where = remote.display
    for ref in UNION_REFS:
        tip = mirror.get(ref[len(b"refs/hydrate/") :])
        if tip is not None:
            outcome = _pull_union_ref(ledger, ref, tip, where)
            if outcome is not None:
                report.outcomes.append(outcome)
    remote_tasks: dict[str, bytes] = {}
    for name, oid in mirror.items():
        if name.startswith(b"tasks/"):
            remote_tasks[name[len(b"tasks/") :].decode("utf-8", "backslashreplace")] = oid
    if ids:
        for task_id in ids:
            if task_id not in remote_tasks:
                report.outcomes.append(Outcome(task_id, "absent", f"not on {where}"))
        remote_tasks = {k: v for k, v in remote_tasks.items() if k in ids}
    covered = _Covered(ledger)
    removed_index = _read_removed(ledger, ledger.repo.read_ref(REMOVED_REF))
    local = _local_tasks(ledger)
    if ids:
        local = {k: v for k, v in local.items() if k in ids}
    report.outcomes += _drop_removed(ledger, local, remote_tasks, covered, removed_index, where)
    report.outcomes += _drop_archived(ledger, _local_tasks(ledger) if not ids else local, covered)
    folded = {task_id.casefold(): task_id for task_id in _local_tasks(ledger)}
    planned: list[Outcome] = []
    for task_id, tip in sorted(remote_tasks.items()):
        if not validate.is_task_id(task_id):
            # Someone else's stray ref: reported, never taken, and no failure of
            # this pull (nothing here could fix it).
            planned.append(
                Outcome(
                    f"refs/hydrate/tasks/{task_id}",
                    "ignored",
                    "not a valid task id",
                    new=tip.decode(),
                    is_task=False,
                )
            )
            continue
        outcome = _plan_task(ledger, task_id, tip, where, covered, removed_index, folded)
        if outcome is None:
            report.up_to_date += 1
        else:
            planned.append(outcome)
    writes = [o for o in planned if o.action in WRITE_ACTIONS]
    if writes and not _apply_batch(ledger, writes, where):
        # Something moved meanwhile: task by task, each with its own retries.
        for index, outcome in enumerate(planned):
            if outcome.action in WRITE_ACTIONS:
                tip = remote_tasks[outcome.name]
                redone = _pull_task(
                    ledger, outcome.name, tip, where, covered, removed_index, folded
                )
                planned[index] = redone or Outcome(outcome.name, "up-to-date")
        report.up_to_date += sum(o.action == "up-to-date" for o in planned)
        planned = [o for o in planned if o.action != "up-to-date"]
    report.outcomes += planned


def pull(ledger: Ledger, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Fetch the remote's tasks into the mirror and merge them task by task.

    Args:
        ledger: The local ledger.
        remote: A remote name or URL; ``None`` picks the current branch's
            remote, else ``origin``.
        ids: Only these tasks (default: all).

    Returns:
        A :class:`Report`; ``report.ok`` is False when a task was skipped
        because the remote's data failed validation.
    """
    wanted = _check_ids(ids)
    where = resolve_remote(ledger, remote)
    report = Report("pull", where.display)
    _pull(ledger, where, wanted, report)
    return report


# -- push -------------------------------------------------------------------------

_PUSH_ACTIONS: Final = {
    "*": "pushed-new",
    " ": "pushed",
    "+": "forced",
    "-": "deleted-remote",
    "=": "up-to-date",
    "!": "rejected",
}


def _run_push(
    ledger: Ledger, remote: Remote, refspecs: list[str], extra: Iterable[str] = ()
) -> list[tuple[str, str, str]]:
    """Run ``git push --porcelain``; return ``(flag, destination ref, summary)`` per ref."""
    proc = ledger.repo.git(
        ["push", "--porcelain", "--no-verify", *extra, remote.target, *refspecs], check=False
    )
    results = []
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1 and ":" in parts[1]:
            results.append((parts[0], parts[1].rpartition(":")[2], parts[2]))
    if proc.returncode != 0 and not results:
        raise _git_failure(f"git push {remote.display}", proc)
    return results


def _rejection_hint(summary: str, where: str) -> str:
    if "fetch first" in summary or "non-fast-forward" in summary or "stale info" in summary:
        return f"{summary}; {where} has changes you do not have: run git hydrate sync {where}"
    return f"{summary}; the remote refused it"


def _push(
    ledger: Ledger, remote: Remote, ids: list[str] | None, union: bool, report: Report
) -> None:
    repo = ledger.repo
    refspecs: list[str] = []
    if ids is None:
        if repo.refs_under(TASK_REF_PREFIX):
            refspecs.append("refs/hydrate/tasks/*:refs/hydrate/tasks/*")
            # Never publish a ref that is not a task id: a negative refspec (git
            # 2.29+) for each one git would push. for-each-ref lists only the
            # names git accepts (a broken name, it skips, and refuses in a refspec).
            strays = set(ledger.stray_task_ref_names())
            if strays:
                listed = repo.git(
                    ["for-each-ref", "--format=%(refname)", TASK_REF_PREFIX.decode()], check=False
                )
                for listed_name in listed.stdout.splitlines():
                    if listed_name in strays:
                        refspecs.append("^" + os.fsdecode(listed_name))
    else:
        for task_id in ids:
            if repo.read_ref(ref_name(task_id)) is None:
                report.outcomes.append(Outcome(task_id, "absent", "no such task here"))
            else:
                refspecs.append(f"{ref_name(task_id).decode()}:{ref_name(task_id).decode()}")
    leases: list[str] = []
    if union:
        for ref in UNION_REFS:
            if repo.read_ref(ref) is not None:
                refspecs.append(f"{ref.decode()}:{ref.decode()}")
        # Tasks archived here that the remote still has as live refs: delete
        # them there, but only while the remote's tip is still the one our
        # archive holds (the lease), so nobody's newer work is lost.
        covered = _Covered(ledger)
        archived = covered.of(ARCHIVE_REF)
        prefix = remote.mirror_prefix + b"tasks/"
        for suffix, tip in sorted(repo.refs_under(prefix).items()):
            task_ref = TASK_REF_PREFIX + suffix
            local_tip = repo.read_ref(task_ref)
            if local_tip is None:
                if tip in archived:
                    refspecs.append(f":{task_ref.decode()}")
                    leases.append(f"--force-with-lease={task_ref.decode()}:{tip.decode()}")
            elif (
                covered.any(tip) and local_tip != tip and not _is_ancestor(ledger, tip, local_tip)
            ):
                # A new task with the id of one removed here: replace the
                # remote's old copy, but only if it is still exactly that copy.
                leases.append(f"--force-with-lease={task_ref.decode()}:{tip.decode()}")
    if not refspecs:
        return
    # What the remote held, as far as the last fetch knows (git push updates no
    # mirror of ours): the "old" side of each pushed ref in the report.
    mirror = repo.refs_under(remote.mirror_prefix)
    for flag, dest, summary in _run_push(ledger, remote, refspecs, leases):
        action = _PUSH_ACTIONS.get(flag, "unknown")
        is_task = dest.startswith(TASK_REF_PREFIX.decode())
        name = dest[len(TASK_REF_PREFIX) :] if is_task else dest
        if action == "up-to-date":
            report.up_to_date += 1
            continue
        detail = _rejection_hint(summary, remote.display) if action == "rejected" else ""
        local = repo.read_ref(dest.encode()) if action in ("pushed", "pushed-new") else None
        before = (
            mirror.get(dest.encode()[len(b"refs/hydrate/") :]) if action != "pushed-new" else None
        )
        report.outcomes.append(
            Outcome(
                name,
                action,
                detail,
                old=before.decode() if before else None,
                new=local.decode() if local else None,
                is_task=is_task,
            )
        )


def push(ledger: Ledger, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Push task refs (all, or ``ids``) without force, reading the per-ref results.

    Without ``ids`` the removal record and the archive travel too. A rejected
    task (the remote has changes this clone lacks) is reported by id with
    ``action == "rejected"``; every other ref still goes through.
    """
    wanted = _check_ids(ids)
    where = resolve_remote(ledger, remote)
    report = Report("push", where.display)
    _push(ledger, where, wanted or None, not wanted, report)
    return report


# -- sync -------------------------------------------------------------------------


def sync(ledger: Ledger, remote: str | None = None, ids: Iterable[str] = ()) -> Report:
    """Pull, then push; when a push is rejected (someone pushed meanwhile), pull and retry.

    At most :data:`MAX_SYNC_ROUNDS` rounds; what is still rejected after them
    is reported (``report.ok`` is False).
    """
    wanted = _check_ids(ids)
    where = resolve_remote(ledger, remote)
    report = Report("sync", where.display)
    _pull(ledger, where, wanted, report)
    rounds = 1
    while True:
        pushed = Report("push", where.display)
        _push(ledger, where, wanted or None, not wanted, pushed)
        rejected = pushed.failed("rejected")
        # A task whose remote data was skipped stays rejected: no point pulling again.
        if not set(rejected) - set(report.failed("skipped")) or rounds >= MAX_SYNC_ROUNDS:
            break
        report.outcomes += [o for o in pushed.outcomes if o.action != "rejected"]
        rounds += 1
        _pull(ledger, where, wanted, report)
    report.outcomes += pushed.outcomes
    # "ahead" only says a push is due, and the push came right after.
    report.outcomes = [o for o in report.outcomes if o.action != "ahead"]
    report.up_to_date = pushed.up_to_date
    report.rounds = rounds
    return report


# -- setup ------------------------------------------------------------------------


def setup(ledger: Ledger, remote: str | None = None) -> dict[str, Any]:
    """Add the wildcard fetch refspec of the mirror to ``remote.<name>.fetch``.

    A plain ``git fetch`` then keeps the mirror current. Nothing else in the
    remote's configuration is touched; ``remote.<name>.push`` never.
    """
    where = resolve_remote(ledger, remote)
    if where.is_url:
        raise ValidationError("setup needs a configured remote name, not a URL")
    refspec = f"+refs/hydrate/*:{where.mirror_prefix.decode()}*"
    key = f"remote.{where.target}.fetch"
    proc = ledger.repo.git(["config", "--get-all", key], check=False)
    existing = proc.stdout.decode("utf-8", "replace").splitlines()
    added = refspec not in existing
    if added:
        ledger.repo.git(["config", "--add", key, refspec])
    return {"remote": where.display, "key": key, "refspec": refspec, "added": added}


# -- removal ----------------------------------------------------------------------


def remove_task(ledger: Ledger, task_id: str, remote: str | None = None) -> dict[str, Any]:
    """Remove a task here (and on ``remote`` when given), keeping its history reachable.

    The tip is recorded in ``refs/hydrate/removed`` first, then the task's ref
    is deleted with a compare-and-swap. With ``remote``, the remote's copy
    must not hold changes this clone lacks (else :class:`Conflict`, nothing
    removed); it is then deleted with ``--force-with-lease`` and the removal
    record is pushed.
    """
    _check_ids([task_id])
    repo = ledger.repo
    ref = ref_name(task_id)
    tip = repo.read_ref(ref)
    here = tip is not None
    if tip is None and remote is None:
        raise NotFound(f"no task {task_id!r} here")
    where: Remote | None = None
    remote_tip: bytes | None = None
    if remote is not None:
        where = resolve_remote(ledger, remote)
        mirror = _fetch(ledger, where)
        remote_tip = mirror.get(b"tasks/" + task_id.encode())
        if tip is None and remote_tip is None:
            raise NotFound(f"no task {task_id!r} here or on {where.display}")
        if (
            tip is not None
            and remote_tip is not None
            and not _is_ancestor(ledger, remote_tip, tip)
        ):
            raise Conflict(
                f"task {task_id} has changes on {where.display} that you have not pulled; "
                f"run git hydrate pull {where.display} {task_id} first"
            )
    if tip is None:
        # Only on the remote: the record keeps the tip we delete there.
        assert remote_tip is not None
        tip = remote_tip
        _record_removal(ledger, task_id, tip)
    else:
        for _attempt in range(MAX_ATTEMPTS):
            _record_removal(ledger, task_id, tip)
            try:
                repo.delete_ref(ref, tip, f"hydrate: task-rm {task_id}")
                break
            except RefRace:
                new_tip = repo.read_ref(ref)
                if new_tip is None:
                    break
                tip = new_tip
        else:
            raise Busy(f"task {task_id} kept changing under this removal; try again")
    result: dict[str, Any] = {
        "task_id": task_id,
        "removed_tip": tip.decode(),
        "local": here,
        "remote": None,
    }
    if where is not None:
        refspecs = [f"{REMOVED_REF.decode()}:{REMOVED_REF.decode()}"]
        extra: list[str] = []
        if remote_tip is not None:
            refspecs.insert(0, f":{ref.decode()}")
            extra = [f"--force-with-lease={ref.decode()}:{remote_tip.decode()}"]
        remote_result = {"remote": where.display, "deleted": False, "detail": ""}
        details = []
        for flag, dest, summary in _run_push(ledger, where, refspecs, extra):
            if dest == ref.decode():
                remote_result["deleted"] = flag == "-"
                if flag == "!":
                    details.append(f"not deleted there ({summary}); run git hydrate sync")
            elif flag == "!":
                details.append(
                    f"removal record not pushed ({summary}); run git hydrate sync {where.display}"
                )
        if remote_tip is None:
            details.append(f"not on {where.display}")
        remote_result["detail"] = "; ".join(details)
        result["remote"] = remote_result
    return result
