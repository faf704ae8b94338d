"""Creating (or moving) many refs at once straight into ``packed-refs``, under git's
own locks.

``git update-ref`` (and ``git fetch``) write every new ref as a loose file:
at thousands of refs that costs a pull as much as the rest of its work, and
every later command reads those files one by one. ``git clone`` writes
``packed-refs`` directly because nobody else can be writing yet; a pull
cannot assume that, so this module takes the locks git's files backend takes
for a transaction: first ``<ref>.lock`` for every ref it creates (what a
concurrent loose write of that ref must take too; hard links to one file, so
that taking them allocates no inode per ref), then ``packed-refs.lock``
(what ``git pack-refs`` and every packed deletion take). Under them it checks
what git checks (no such ref, loose or packed; no ref in the way of its name
or below it), then renames a rewritten ``packed-refs`` into place: all the
refs appear at once, or none does. A ref moved this way (:func:`write_packed`)
must be in ``packed-refs`` alone (no loose file, no reflog, which git would
append to) at the value the caller read: else git moves it.

Each lock names this process (:mod:`.lockfiles`): one left by a command that
was killed is taken over at once. An interrupt (Ctrl-C, SIGTERM, SIGHUP) does
not fall between a lock's making and its record for the clean-up: the locks
are made with the ending signals deferred, and removed as the command unwinds.

Whatever this cannot do exactly as git would — a lock another writer holds, a
ref that exists, a setting that changes how git writes refs (a
``reference-transaction`` hook, ``core.logAllRefUpdates=always``,
``core.sharedRepository``, ``core.fsync``, ``core.hooksPath``; a symlinked
``packed-refs``), a name it does not vouch for — is left to ``git update-ref``:
:func:`create_packed` returns ``False`` having changed nothing.
"""

from __future__ import annotations

import contextlib
import os
import re

from .lockfiles import create, deferred, guarded, maker_gone, take_over

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from typing import Final

    from ..settings import Settings

__all__ = ["create_packed", "has_reflog", "packable_name", "write_packed"]

#: The first line of a ``packed-refs`` this module creates: ``peeled`` (a ref under
#: refs/tags/ that peels has its ``^`` line: none is written here) but not
#: ``fully-peeled``, which would say that of every ref: git peels the ones added here
#: itself when asked (a creation is not read, so whether it is a tag is not known).
_HEADER: Final = b"# pack-refs with: peeled sorted \n"
#: Names this module writes itself, in git-hydrate's own namespaces (not refs/tags/,
#: whose peeled lines it does not write, nor refs/heads/, refs/remotes/ or
#: refs/notes/, where git keeps reflogs); every other name is left to git.
_PART: Final = rb"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"
_SAFE_NAME: Final = re.compile(rb"refs/hydrate(?:-remotes)?(?:/%s)+" % _PART)
_OID: Final = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
#: Settings under which git writes refs differently from what this module does.
_GIT_ONLY_SETTINGS: Final = ("core.sharedRepository", "core.fsync", "core.hooksPath")


def create_packed(common: str, settings: Settings, creations: list[tuple[bytes, bytes]]) -> bool:
    """Create every ``(name, oid)`` (none may exist) in the ``packed-refs`` of the
    git directory ``common``, as one transaction under git's locks; ``False``:
    nothing changed, use git instead.

    No reflog is written (as ``git update-ref`` without ``--create-reflog``
    for a name outside ``refs/heads/``, ``refs/remotes/``, ``refs/notes/``).
    """
    return write_packed(common, settings, [(name, None, oid) for name, oid in creations])


def write_packed(
    common: str, settings: Settings, updates: list[tuple[bytes, bytes | None, bytes]]
) -> bool:
    """Move every ``(name, old, new)`` from ``old`` (``None``: absent) to ``new`` in
    the ``packed-refs`` of the git directory ``common``, as one transaction under
    git's locks; ``False``: nothing changed, use git instead (a ref to move that is
    loose, has a reflog or no longer holds ``old`` included). No reflog is written.
    """
    if not _may_write(common, settings, updates):
        return False
    held: list[str] = []
    with guarded():  # (an ending signal unwinds: the locks are removed)
        try:
            return _create_locked(common, updates, held)
        finally:
            with deferred():
                for lock in held:
                    with contextlib.suppress(OSError):
                        os.unlink(lock)


def _create_locked(
    common: str, updates: list[tuple[bytes, bytes | None, bytes]], held: list[str]
) -> bool:
    """:func:`write_packed`'s work, each lock it takes added to ``held``."""
    # (the names are ASCII, checked by _may_write: a path is the name after common/)
    base = os.path.join(common, "")
    paths = [base + name.decode("ascii") for name, _old, _new in updates]
    try:
        for directory in {path.rpartition("/")[0] for path in paths}:
            os.makedirs(directory, exist_ok=True)
    except OSError:
        return False  # a ref file where a directory must be: git will say so
    # (no ending between a lock's making and `held`, nor the rename and the pop)
    with deferred():
        if not _take_all([path + ".lock" for path in paths], held):
            return False  # another writer is changing one: git will say how
        packed_lock = _take(os.path.join(common, "packed-refs.lock"))
        if packed_lock is None:
            return False
        held.append(packed_lock)
        if not _write_packed(common, updates, packed_lock, paths):
            return False
        held.pop()  # packed-refs.lock: renamed into packed-refs
    return True


def _may_write(
    common: str, settings: Settings, updates: list[tuple[bytes, bytes | None, bytes]]
) -> bool:
    """Whether these updates are ones this module writes exactly as git would."""
    if any(settings.has(key) for key in _GIT_ONLY_SETTINGS):
        return False
    if (settings.raw("core.logAllRefUpdates") or "").lower() == "always":
        return False
    if os.path.lexists(os.path.join(common, "hooks", "reference-transaction")):
        return False
    if os.path.islink(os.path.join(common, "packed-refs")):
        return False  # git rewrites the file it points at; leave that to git
    names = [name for name, _old, _new in updates]
    if len(set(names)) != len(names):
        return False
    return all(
        packable_name(name) and _OID.fullmatch(new) and (old is None or _OID.fullmatch(old))
        for name, old, new in updates
    )


def has_reflog(common: str, name: bytes) -> bool:
    """Whether the ref ``name`` of the git directory ``common`` has a reflog (git
    appends to it whatever ``core.logAllRefUpdates`` says)."""
    return os.path.lexists(os.path.join(common, "logs", os.fsdecode(name)))


def packable_name(name: bytes) -> bool:
    """Whether ``name`` is one this module writes itself (see ``_SAFE_NAME``)."""
    # (a part ending in ".lock" is exactly a ".lock/" in the name and a slash)
    return bool(_SAFE_NAME.fullmatch(name)) and b".lock/" not in name + b"/"


def _take_all(locks: list[str], held: list[str]) -> bool:
    """Take every lock file of ``locks`` (each taken one added to ``held``);
    ``False`` at the first that exists or cannot be made.

    After the first, each lock is a hard link to a lock already taken: the same
    exclusion for git (its ``open(O_CREAT | O_EXCL)`` of a taken name fails
    whatever that name is), without a new inode per ref, whose allocation is
    most of what creating a file costs when the file system is busy (10,000
    locks: 0.1 s of CPU linked against 1.5-4 s created, measured). Where a
    link cannot be made (no hard links here, a file's link limit, another
    file system), that lock is a file of its own, and the next ones link to it.
    """
    base: str | None = None
    for path in locks:
        if base is not None:
            try:
                _link(base, path)
            except FileExistsError:
                return False  # held by another writer
            except OSError:
                base = None  # (ENOTDIR, a ref file in the way, is found again below)
            else:
                held.append(path)
                continue
        if _take(path) is None:
            return False
        held.append(path)
        base = path
    return True


def _link(base: str, path: str) -> None:
    """Link the lock ``path`` to ``base``, taking over a lock whose maker is gone
    (a command killed while it held it: see :mod:`.lockfiles`)."""
    try:
        os.link(base, path)
    except FileExistsError:
        judged = maker_gone(path)
        if judged is None:
            raise
        take_over(path, judged)
        os.link(base, path)


def _take(path: str) -> str | None:
    """Create the lock file ``path``, naming this process (``None``: it exists, or
    cannot be made here); one whose maker is gone is taken over."""
    for _attempt in range(2):
        try:
            create(path)
        except FileExistsError:
            judged = maker_gone(path)
            if judged is None:
                return None  # held by another writer
            take_over(path, judged)
        except OSError:
            return None  # a ref file where a directory must be, say
        else:
            return path
    return None


def _write_packed(
    common: str, updates: list[tuple[bytes, bytes | None, bytes]], lock: str, paths: list[str]
) -> bool:
    """Under every lock: check that no ref is in the way, then rename the new
    ``packed-refs`` (written into ``lock``) into place; ``False``: something is.

    ``paths``: each ref's loose file. A loose ref of that name, or a directory
    of refs below it, is looked for in one listing of each directory, not a
    ``stat`` per ref (1,000 refs of one directory: one ``getdents`` call or a few).
    Names are compared case-folded: on a file system that folds case (macOS, Windows)
    a loose ``A-1`` is in the way of ``a-1`` (elsewhere such a pair only sends the
    write to git, which is never wrong)."""
    listed: dict[str, set[str]] = {}
    for path in paths:
        directory, _slash, base = path.rpartition("/")
        entries = listed.get(directory)
        if entries is None:
            try:
                entries = listed[directory] = {n.casefold() for n in os.listdir(directory)}
            except OSError:
                return False
        if base.casefold() in entries:
            return False
    path = os.path.join(common, "packed-refs")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        data = b""
    header, records = _parse(data)
    if records is None:
        return False  # not a packed-refs this module understands: git will
    for name, old, _new in updates:
        if records.get(name) != (None if old is None else b"%s %s\n" % (old, name)):
            return False  # made meanwhile, moved meanwhile, or peeled: git will say
        if old is not None and has_reflog(common, name):
            return False  # git would log the move: leave it to git
    records.update({name: b"%s %s\n" % (new, name) for name, _old, new in updates})
    if _in_the_way(records):
        return False
    content = header + b"".join(records[name] for name in sorted(records))
    try:
        with open(lock, "wb") as fh:
            fh.write(content)
        os.replace(lock, path)
    except OSError:
        return False
    return True


def _parse(data: bytes) -> tuple[bytes, dict[bytes, bytes] | None]:
    """``(header, {name: its lines})`` of a ``packed-refs`` file (peeled lines
    kept with their ref); the header says the records are sorted, as they will be."""
    # (git has written a header since 1.x; without one nothing is known to be peeled)
    header = _HEADER if not data else b"# pack-refs with: sorted \n"
    records: dict[bytes, bytes] = {}
    last: bytes | None = None
    for number, line in enumerate(data.splitlines(keepends=True)):
        if not line.endswith(b"\n") or b"\r" in line:
            return header, None  # (git reads such a file as damaged: so it is left to git)
        if line.startswith(b"# pack-refs with:"):
            if number:
                return header, None  # a header only as the first line, as git reads it
            traits = line[len(b"# pack-refs with:") :].split()
            # the refs added are not peeled: "fully-peeled" would no longer hold
            traits = [t for t in traits if t != b"fully-peeled"]
            if b"sorted" not in traits:
                traits.append(b"sorted")
            header = b"# pack-refs with: " + b" ".join(traits) + b" \n"
        elif line.startswith(b"^"):
            if last is None:
                return header, None
            records[last] += line
        else:
            oid, sep, name = line[:-1].partition(b" ")
            if not sep or not _OID.fullmatch(oid) or not name:
                return header, None
            records[name] = line
            last = name
    return header, records


def _in_the_way(names: dict[bytes, bytes]) -> bool:
    """Whether one of ``names`` is a directory of another (``a/b`` beside ``a/b/c``).

    The directories the names imply are few (``refs/hydrate/tasks`` and those
    above it, for thousands of refs): they are gathered once and looked up, not
    each name's parents and children searched for among the others. (A clash
    between refs already packed is found too: git is then left to say it.)"""
    implied: set[bytes] = set()
    for directory in {name.rpartition(b"/")[0] for name in names}:
        while directory and directory not in implied:
            implied.add(directory)
            directory = directory.rpartition(b"/")[0]
    return any(directory in names for directory in implied)
