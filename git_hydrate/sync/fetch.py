"""Fetching a remote's ``refs/hydrate/*`` into its mirror namespace.

Never straight into ``refs/hydrate/`` (a forced fetch would overwrite local,
unpushed work) and never into ``refs/remotes/``: into
``refs/hydrate-remotes/<remote>/``, from which pull merges task by task.
"""

from __future__ import annotations

import os
import re
import time
from typing import Final

from ..errors import Busy, Conflict, GitFailed
from ..store import FetchRace, RefRace, RefUpdate, Repository, lockfiles
from ..store import refs as store_refs
from ..store.credentials import CredentialsRefused
from ..store.packed import packable_name
from ..taskrefs import STALE_LOCK_SECONDS, attempts
from .remotes import Remote

__all__ = ["FETCH_ATTEMPTS", "NOT_FETCHED", "fetch_mirror"]

#: Fetches a pull makes before giving up on a mirror ref other fetches keep
#: moving: fewer than a ref write's attempts, each being a round trip.
FETCH_ATTEMPTS: Final = 16
_OBJECT_ID: Final = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
#: How the reason for a ref the fetch left out (its mirror ref's lock stuck) begins.
NOT_FETCHED: Final = "not fetched: "
#: What git says of a ref's lock file that exists (the path is git's, absolute).
_TAKEN_LOCK: Final = re.compile(r"Unable to create '([^'\n]+\.lock)': File exists")


def fetch_mirror(
    repo: Repository, remote: Remote, stuck: dict[bytes, str] | None = None
) -> dict[bytes, bytes]:
    """Fetch every ``refs/hydrate/*`` of the remote into its mirror; return the mirror.

    Several processes of one clone (agents in worktrees of one repository)
    fetch into the same mirror refs: a fetch that loses the race for one of
    them to another fetch is retried, with the task writes' back-off.

    A lock git found taken on a mirror ref is waited for while a live writer
    may hold it (younger than :data:`STALE_LOCK_SECONDS`, or made by a
    git-hydrate that runs), at most twice that long in all. One left behind (a
    ``git fetch`` killed with its process group), or still held then, is never
    unlocked here (a git that cannot be seen may hold it). With ``stuck`` given,
    the fetch leaves that ref out (a negative refspec) and fetches the rest;
    ``stuck`` gets its name under ``refs/hydrate/`` (the mirror keeps its old
    value) and why, with the command that clears the lock. So with
    ``packed-refs.lock`` left behind, which stops deleting a packed mirror ref:
    the fetch goes on without pruning, and each mirror ref the remote no longer
    has (listed again) is in ``stuck``.

    Raises:
        Busy: every attempt lost such a race, or (without ``stuck``) a lock was
            left behind.
        GitFailed: the fetch failed (git's reason in the message).
    """
    mirror = remote.mirror_prefix
    # Tell the server only about hydrate history: its objects are complete here
    # even in a partial clone, whereas a branch's blobs may be missing and
    # must not be assumed present (bodies can equal files of the project).
    tips = [prefix for prefix in (b"refs/hydrate/", mirror) if repo.has_refs_under(prefix)]
    credential = None
    if mirror not in tips:
        done, credential = _first_fetch(repo, remote, tips, stuck)
        if done:
            fetched = repo.refs_under(mirror)
            if fetched and repo.partial_clone():
                _fetch_missing(repo, remote, fetched, credential)
            return fetched
    _fetch_retried(repo, remote, tips, credential, stuck)
    fetched = repo.refs_under(mirror)
    if fetched and repo.partial_clone():
        _fetch_missing(repo, remote, fetched, credential)
    return fetched


def _fetch_retried(
    repo: Repository,
    remote: Remote,
    tips: list[bytes],
    credential: bytes | None,
    stuck: dict[bytes, str] | None,
) -> None:
    """``git fetch`` of the remote's ``refs/hydrate/*`` into its mirror, again while
    another fetch of this clone holds a mirror ref, and without a ref whose lock
    was left behind (see :func:`fetch_mirror`)."""
    mirror = remote.mirror_prefix
    lost: FetchRace | None = None
    left_out: list[str] = []  # (negative refspecs: the refs whose mirror lock is stuck)
    stuck_lock = unpruned = ""
    deadline = time.monotonic() + 2 * STALE_LOCK_SECONDS
    races = attempts(FETCH_ATTEMPTS)
    held = False  # (a fetch again for a lock a live writer holds is not one of them)
    while held or next(races, None) is not None:
        held = False
        try:
            repo.fetch(
                remote.target,
                [f"+refs/hydrate/*:{mirror.decode()}*", *left_out],
                negotiation_tips=[f"{prefix.decode()}*" for prefix in tips],
                prune=not unpruned,
                credential=credential,
                what=f"git fetch {remote.display}",
            )
        except FetchRace as exc:
            lost = exc  # another fetch of this clone moved a mirror ref: again
            lock = _taken_lock(exc)
            state = _lock_state(lock, deadline)
            held = state == "held"
            if lock is None or state != "stuck":
                continue
            name = _mirrored(repo, mirror, lock)
            if stuck is None or name is None or name in stuck:
                raise _blocked(lock) from None
            stuck[name] = f"{NOT_FETCHED}the lock of its mirror ref, {_lock_said(lock)}"
            left_out.append("^refs/hydrate/" + os.fsdecode(name))
            stuck_lock = lock
            continue
        except GitFailed as exc:
            if left_out and "invalid refspec" in str(exc):
                # (a git before 2.29 takes no negative refspec: stopped, as it always was)
                raise _blocked(stuck_lock) from None
            lock = _taken_lock(exc)
            if lock is None or stuck is None or "could not delete reference" not in str(exc):
                raise
            state = _lock_state(lock, deadline)
            held = state == "held"
            if state == "stuck":
                unpruned = lock  # (packed-refs.lock: the rest is fetched, nothing pruned)
            continue
        if unpruned and stuck is not None:
            _not_pruned(repo, remote, unpruned, stuck)
        return
    raise _gave_up(lost)


def _gave_up(lost: FetchRace | None) -> Busy:
    """Why a fetch that kept losing races gave up: a lock still there, or others won."""
    lock = _taken_lock(lost)
    if lock is not None and os.path.lexists(lock):
        return _blocked(lock)
    return Busy(f"{lost}; other fetches in this clone kept winning: try again")


def _lock_state(lock: str | None, deadline: float) -> str:
    """What of the lock ``lock`` git found taken: ``gone`` (released, or taken over:
    its git-hydrate maker gone), ``stuck`` (left behind: older than
    :data:`STALE_LOCK_SECONDS` and no git-hydrate that runs made it; or still held at
    ``deadline``, a :func:`time.monotonic` time) or ``held`` (a live writer may hold
    it: it was watched a moment, fetch again)."""
    watched = time.monotonic() + 1.0  # (a live git holds one for milliseconds)
    while lock is not None:
        judged = lockfiles.maker_gone(lock)
        if judged is not None:
            lockfiles.take_over(lock, judged)
            break
        try:
            age = time.time() - os.stat(lock).st_mtime
        except OSError:
            break  # released
        now = time.monotonic()
        if now >= deadline or (age > STALE_LOCK_SECONDS and lockfiles.maker_runs(lock) is None):
            return "stuck"
        if now >= watched:
            return "held"
        time.sleep(0.05)
    return "gone"


def _not_pruned(repo: Repository, remote: Remote, lock: str, stuck: dict[bytes, str]) -> None:
    """Name in ``stuck`` each mirror ref the remote no longer has, which a fetch
    could not delete for the lock ``lock`` (``packed-refs.lock``) left behind: the
    remote is listed again, as :func:`_first_fetch` lists it.

    Raises:
        Busy: the remote cannot be listed (then the pull stops, naming the lock).
    """
    try:
        listing = repo.ls_remote_unattended(
            remote.target, ["refs/hydrate/*"], what=f"git ls-remote {remote.display}"
        )
    except GitFailed:
        raise _blocked(lock) from None
    for name in repo.refs_under(remote.mirror_prefix):
        if b"refs/hydrate/" + name not in listing.refs:
            stuck.setdefault(
                name,
                f"{NOT_FETCHED}gone from {remote.display}, its mirror ref cannot be deleted: "
                + _lock_said(lock),
            )


def _taken_lock(lost: GitFailed | None) -> str | None:
    """The lock file git found taken (``Unable to create '...lock': File exists``),
    if that is why the fetch failed."""
    found = _TAKEN_LOCK.search(str(lost))
    return found.group(1) if found else None


def _left_behind(lock: str) -> bool:
    """Whether the ref lock ``lock`` git found taken was left behind: older than any
    live writer keeps one, and no git-hydrate that runs made it (a git killed while
    it held it). One whose git-hydrate maker is gone is taken over (removed) at once:
    then, and for a younger one (another fetch may hold it), ``False``: again."""
    judged = lockfiles.maker_gone(lock)
    if judged is not None:
        lockfiles.take_over(lock, judged)
        return False
    try:
        age = time.time() - os.stat(lock).st_mtime
    except OSError:
        return False  # released meanwhile
    return age > STALE_LOCK_SECONDS and lockfiles.maker_runs(lock) is None


def _mirrored(repo: Repository, mirror: bytes, lock: str) -> bytes | None:
    """The name under ``refs/hydrate/`` whose mirror ref ``lock`` locks (``tasks/T-1``);
    ``None`` for another lock (``packed-refs.lock``: no one ref to leave out)."""
    where = os.path.relpath(lock, repo.common_dir).replace(os.sep, "/").encode()
    name = where.removesuffix(b".lock").removeprefix(mirror)
    if not where.endswith(b".lock") or not where.startswith(mirror) or not name:
        return None
    return name if packable_name(b"refs/hydrate/" + name) else None


def _lock_said(lock: str) -> str:
    """What a pull says of the ref lock ``lock`` git found taken, no other fetch of
    this clone known to hold it: how old, who holds it, and what clears it."""
    try:
        seconds = time.time() - os.stat(lock).st_mtime
    except OSError:
        return f"{lock} was taken (gone now): try again"
    pid = lockfiles.maker_runs(lock)
    holder = f"git-hydrate process {pid} holds it" if pid is not None else "no process known"
    return (
        f"{lock} is taken ({seconds:.0f} s old, {holder}); if no git or git-hydrate "
        f"process is fetching in this clone, {lockfiles.clearing(seconds)}"
    )


def _blocked(lock: str) -> Busy:
    """The pull's error when the fetch found the ref lock ``lock`` taken, and no
    other fetch of this clone is known to hold it."""
    return Busy(f"the fetch cannot lock a ref: {_lock_said(lock)}")


def _first_fetch(
    repo: Repository, remote: Remote, tips: list[bytes], stuck: dict[bytes, str] | None
) -> tuple[bool, bytes | None]:
    """Fill an empty mirror with many refs for less than ``git fetch`` writes them:
    list the remote's ``refs/hydrate/`` refs, fetch their tips by id (git writes no
    ref) and create the mirror refs in one transaction, packed under git's locks
    (:func:`git_hydrate.store.packed.create_packed`), instead of a loose file per
    ref. Returns whether that was done (else ``git fetch`` must do it), and the
    credential the listing was given (a helper's or git's askpass program's), which
    the fetches after it take instead of asking again.

    Nothing is done so for a remote that wants what only a person can give (the
    listing asks no person: no terminal, no ssh askpass; ``git fetch`` then asks
    once, not the listing and the fetch each), for fewer refs than a packed write
    takes, a name outside what it writes itself, a server that takes no wants by
    id (protocol v0 without
    ``uploadpack.allowTipSHA1InWant``) or that no longer has a listed tip, and a
    mirror ref another fetch created meanwhile. The mirror then holds the
    remote's refs as listed, a moment before the fetch: what a push's leases need
    (a ref moved since is refused there, and the next pull fetches it). A mirror
    ref whose lock was left behind is left out and named in ``stuck``, as
    :func:`fetch_mirror` leaves it out (without ``stuck``, :class:`Busy`).
    """
    where = f"git ls-remote {remote.display}"
    try:
        listing = repo.ls_remote_unattended(remote.target, ["refs/hydrate/*"], what=where)
    except CredentialsRefused:
        raise  # (git fetch would ask whoever just answered again)
    except GitFailed:
        return False, None  # git fetch will say why, as it always did
    credential = listing.credential
    prefix = b"refs/hydrate/"
    refs = {
        name[len(prefix) :]: oid for name, oid in listing.refs.items() if name.startswith(prefix)
    }
    if len(refs) < store_refs.PACKED_CREATIONS or not all(
        map(_OBJECT_ID.fullmatch, refs.values())
    ):
        return False, credential  # (each id goes to git as a line of refspecs: nothing else may)
    if not all(packable_name(remote.mirror_prefix + name) for name in refs):
        return False, credential  # a name the packed write leaves to git: git fetch judges it
    try:
        repo.fetch(
            remote.target,
            [],
            negotiation_tips=[f"{tip.decode()}*" for tip in tips],
            prune=False,
            stdin=b"".join(oid + b"\n" for oid in sorted(set(refs.values()))),
            shared_nothing=not tips,
            credential=credential,
            what=f"git fetch {remote.display} (the listed tips)",
        )
    except GitFailed:
        return False, credential
    return _created(repo, remote, refs, stuck), credential


def _created(
    repo: Repository, remote: Remote, refs: dict[bytes, bytes], stuck: dict[bytes, str] | None
) -> bool:
    """Whether the mirror refs of the listed ``refs`` were created, in one transaction
    (``False``: another fetch filled the mirror meanwhile, or git refuses a name); a
    ref whose lock was left behind is left out into ``stuck`` (see :func:`_unlocked`)."""
    creations: list[RefUpdate] = [
        (remote.mirror_prefix + name, None, oid) for name, oid in refs.items()
    ]
    message = f"hydrate: fetch {remote.display}"
    try:
        try:
            repo.update_refs(creations, message, reflog=False)
        except Busy:
            left = _unlocked(repo, remote, creations, stuck) if stuck is not None else None
            if left is None:
                raise
            if left:
                repo.update_refs(left, message, reflog=False)
    except (RefRace, Conflict):
        return False
    return True


def _unlocked(
    repo: Repository, remote: Remote, creations: list[RefUpdate], stuck: dict[bytes, str]
) -> list[RefUpdate] | None:
    """``creations`` without the mirror refs whose lock was left behind, each named
    in ``stuck`` as :func:`_fetch_retried` names one; ``None`` when no such lock is
    to blame (``packed-refs.lock``, say)."""
    left = []
    prefix = len(remote.mirror_prefix)
    for creation in creations:
        lock = repo.ref_lock(creation[0])
        if os.path.lexists(lock) and _left_behind(lock):
            stuck[creation[0][prefix:]] = (
                f"{NOT_FETCHED}the lock of its mirror ref, {_lock_said(lock)}"
            )
        else:
            left.append(creation)
    return None if len(left) == len(creations) else left


def _fetch_missing(
    repo: Repository, remote: Remote, fetched: dict[bytes, bytes], credential: bytes | None
) -> None:
    """Fetch objects a filtered ``git fetch`` left out of the mirror (partial clones).

    A plain ``git fetch`` after ``setup`` brings the mirror's commits with the
    clone's filter; ours then finds them present and fetches nothing, so the
    bodies it skipped are asked for by id.
    """
    missing = repo.missing_objects(list(fetched.values()), "refs/hydrate/*")
    if missing:
        repo.fetch(
            remote.target,
            [],
            prune=False,
            stdin="\n".join(missing).encode() + b"\n",
            credential=credential,
            what=f"git fetch {remote.display} (bodies missing from a partial clone)",
        )
