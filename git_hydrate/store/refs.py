"""Refs: read straight from the files backend, changed only by git's own transactions.

Reading ``refs/hydrate/*`` is done without a process (loose ref files, then
``packed-refs``), because listing thousands of tasks must stay cheap. Every
change goes through ``git update-ref --stdin``: git takes its locks, checks
each old value, writes the reflog and applies core.sharedRepository, all or
nothing. When a transaction fails, the refs are read again: a ref that no
longer holds its expected value, or a lock file another writer holds, is a
lost race (:class:`RefRace`, retried by the caller); anything else is git's
refusal, reported with git's reason.
"""

from __future__ import annotations

import errno
import os
import re
import time

from ..errors import Busy, Conflict, CorruptData, NotWritable
from .base import RepositoryBase
from .lockfiles import clearing, maker_gone, maker_runs, take_over
from .packed import has_reflog, write_packed
from .perms import open_regular_fd
from .process import GitRun, bounded_lines, reason

#: A value of a ref file that names an object (SHA-1 or SHA-256).
_OBJECT_ID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from typing import Final

#: A lock file older than this is held by no live writer (git holds one for
#: milliseconds): a change it stops is refused at once, naming it.
_STALE_LOCK_SECONDS: Final = 10.0
#: A name with up to this many spellings is looked up spelling by spelling even
#: in a small directory (4 letters; listing one costs about as much).
_MIN_SPELLINGS: Final = 16

#: Up to this many spellings, packed names are looked up one by one rather
#: than indexed (indexing 10,000 names costs about as much as 4,000 lookups).
_MAX_SPELLINGS: Final = 1024

#: A transaction of at least this many creations or moves (no deletion, no reflog)
#: goes straight into ``packed-refs`` (:mod:`.packed`); fewer are cheaper loose.
PACKED_CREATIONS: Final = 64
#: ``git update-ref --stdin``'s explicit transactions (``start`` ... ``commit``, git
#: 2.27): a git without them says so of the first line, and is remembered.
_TRANSACTION: Final = "update-ref --stdin start"
_NO_START: Final = re.compile(rb"unknown command: start\b")
#: What git says when the reference-transaction hook refused the transaction.
_HOOK_ABORTED: Final = "ref updates aborted by hook"

__all__ = ["PACKED_CREATIONS", "RefRace", "RefUpdate", "Refs"]


def _spellings(name: bytes, limit: int = _MAX_SPELLINGS) -> list[bytes] | None:
    """Every way ``name`` can be spelt with its ASCII letters in either case
    (``name`` itself included), or ``None`` when there are more than ``limit``."""
    letters = [i for i, c in enumerate(name) if 65 <= c <= 90 or 97 <= c <= 122]
    if 1 << len(letters) > limit:
        return None
    spellings = [bytearray(name.lower())]
    for at in letters:
        spellings += [s[:at] + s[at : at + 1].upper() + s[at + 1 :] for s in spellings]
    return [bytes(s) for s in spellings]


#: A loose ref file holds an object id or ``ref: NAME``: far below this.
_REF_FILE_MAX: Final = 4096


def _ref_file(path: str, name: bytes) -> bytes:
    """The stripped content of the loose ref file ``path``. Opened without
    waiting (a FIFO put there answers at once) and read only when it is a
    regular file of at most :data:`_REF_FILE_MAX` bytes.

    Raises:
        CorruptData: something else stands at the ref's path.
    """
    try:
        fd = open_regular_fd(path)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        if os.path.isdir(path):  # (a folder of refs: no ref of this name, as open says)
            raise IsADirectoryError(errno.EISDIR, "is a directory", path) from None
        fd = None
    try:
        if fd is None or os.fstat(fd).st_size > _REF_FILE_MAX:
            raise CorruptData(f"{name.decode()} is not a ref file (not a small regular file)")
        return os.read(fd, _REF_FILE_MAX + 1).strip()
    finally:
        if fd is not None:
            os.close(fd)


class RefRace(Exception):
    """A ref update lost to a concurrent writer; re-read and retry."""


#: ``(ref, old, new)``: ``old`` ``None`` means the ref must not exist, ``new``
#: ``None`` deletes it.
RefUpdate = tuple[bytes, bytes | None, bytes | None]


class Refs(RepositoryBase):
    """Reading and changing refs (mixed into :class:`~git_hydrate.store.Repository`)."""

    _packed_refs: dict[bytes, bytes] | None = None
    _packed_key: tuple[int, int, int] | None = None
    _packed_folded: dict[bytes, list[bytes]] | None = None
    _packed_folded_of: dict[bytes, bytes] | None = None

    def _packed(self) -> dict[bytes, bytes]:
        """``packed-refs`` as ``{name: oid}``, parsed again only when the file changed."""
        path = os.path.join(self.common_dir, "packed-refs")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._packed_refs, self._packed_key = {}, None
            return self._packed_refs
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._packed_refs is not None and key == self._packed_key:
            return self._packed_refs
        refs: dict[bytes, bytes] = {}
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            data = b""
        for line in data.splitlines():
            if not line or line[:1] in (b"#", b"^"):
                continue
            oid, _, name = line.partition(b" ")
            refs[name] = oid
        self._packed_refs, self._packed_key = refs, key
        return refs

    def forget_packed(self) -> None:
        """Read ``packed-refs`` again next time (this process has just rewritten it)."""
        self._packed_refs, self._packed_key = None, None

    def read_ref(self, name: bytes) -> bytes | None:
        """The commit a ref points at, or ``None`` if it does not exist."""
        path = os.path.join(self.common_dir, os.fsdecode(name))
        try:
            value = _ref_file(path, name)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return self._packed().get(name)
        except OSError as exc:
            raise CorruptData(f"cannot read {name.decode()}: {exc.strerror}") from None
        if value.startswith(b"ref: ") or not value:
            return None
        return value

    def symbolic_target(self, name: bytes) -> bytes | None:
        """The ref a loose symbolic ref ``name`` points at (``ref: TARGET``), or
        ``None`` when ``name`` is no symbolic ref."""
        try:
            value = _ref_file(os.path.join(self.common_dir, os.fsdecode(name)), name)
        except (OSError, CorruptData):
            return None
        return value[5:].strip() if value.startswith(b"ref: ") else None

    def _loose_ref_files(self, prefix: bytes) -> Iterator[tuple[bytes, str]]:
        """``(suffix, path)`` of each loose ref file below ``prefix`` (no lock files)."""
        base = os.path.join(self.common_dir, os.fsdecode(prefix))
        cut = len(os.path.join(base, ""))
        for dirpath, _dirs, files in os.walk(base):
            for filename in files:
                if not filename.endswith(".lock"):
                    full = os.path.join(dirpath, filename)
                    yield os.fsencode(full[cut:]).replace(b"\\", b"/"), full

    def ref_names_under(self, prefix: bytes) -> set[bytes]:
        """The suffixes of the refs below ``prefix``, without reading their values."""
        names = {name for name, _path in self._loose_ref_files(prefix)}
        names.update(name[len(prefix) :] for name in self._packed() if name.startswith(prefix))
        return names

    def has_refs_under(self, prefix: bytes) -> bool:
        """Whether any ref exists below ``prefix``, stopping at the first found
        (a ref list of thousands is not read to learn it is not empty)."""
        for _name, _full in self._loose_ref_files(prefix):
            return True
        return any(name.startswith(prefix) for name in self._packed())

    def refs_under(self, prefix: bytes) -> dict[bytes, bytes]:
        """``{suffix: oid}`` for every ref below ``prefix`` (which ends with ``/``).

        Loose refs are read first and ``packed-refs`` after, as git's files
        backend does: a concurrent ``git pack-refs --prune`` moves a ref from
        loose to packed, never back, so this order cannot miss one.
        """
        loose: dict[bytes, bytes] = {}
        for name, full in self._loose_ref_files(prefix):
            try:
                value = _ref_file(full, prefix + name)
            except OSError:
                continue  # removed meanwhile (pack-refs): it is in packed-refs now
            except CorruptData:
                continue  # (a FIFO or a big file put there: no ref; read_ref says so)
            if value and not value.startswith(b"ref: "):
                loose[name] = value
        found = {
            name[len(prefix) :]: oid
            for name, oid in self._packed().items()
            if name.startswith(prefix)
        }
        found.update(loose)
        return found

    def _packed_by_case(self, prefix: bytes, name: bytes) -> list[bytes]:
        """The packed refs below ``prefix`` named ``name`` but for the case of
        ASCII letters, without the prefix.

        A name of few letters is looked up spelling by spelling; otherwise the
        packed names are indexed by their lower-case form, once per state of
        ``packed-refs``.
        """
        refs = self._packed()
        spellings = _spellings(name)
        if spellings is not None:
            return [spelling for spelling in spellings if prefix + spelling in refs]
        if self._packed_folded is None or self._packed_folded_of is not refs:
            folded: dict[bytes, list[bytes]] = {}
            for full in refs:
                folded.setdefault(full.lower(), []).append(full)
            self._packed_folded, self._packed_folded_of = folded, refs
        same = self._packed_folded.get((prefix + name).lower(), [])
        return [full[len(prefix) :] for full in same if full.startswith(prefix)]

    def names_differing_by_case(self, prefix: bytes, name: str) -> list[str]:
        """The names directly below ``prefix`` (loose or packed, ``name`` itself
        included) that are ``name`` but for the case of ASCII letters, sorted.

        Exact, and without reading any ref: each way ``name`` can be spelt
        (two per letter) is looked up among the loose refs when those lookups
        cost less than listing the directory (judged by its size), else the
        directory is listed (also when a spelling exists, to learn its true
        name on a file system that ignores case); the packed refs are looked
        up the same way, or indexed by case once per state of ``packed-refs``
        for a name of many letters. So a check costs the same at 10 or 10,000
        refs.
        """
        if not name.isascii():
            raise ValueError(f"not an ASCII name: {name!r}")
        wanted = name.lower()
        # Loose first, then packed, as git reads them: a concurrent pack-refs
        # moves a ref from loose to packed, never back, so this order misses none.
        found: set[str] = set()
        base = os.path.join(self.common_dir, os.fsdecode(prefix))
        if not self._spellings_absent(base, name):
            try:
                loose = os.listdir(base)
            except (FileNotFoundError, NotADirectoryError):
                loose = []
            found.update(n for n in loose if n.isascii() and n.lower() == wanted)
        packed = self._packed_by_case(prefix, name.encode("ascii"))
        found.update(other.decode("ascii") for other in packed)
        return sorted(n for n in found if not n.endswith(".lock"))

    @staticmethod
    def _spellings_absent(base: str, name: str) -> bool:
        """Whether no spelling of ``name`` (ASCII letters in either case) exists in
        the directory ``base``, found by looking each up; ``False`` when one does
        or when there are more spellings than listing ``base`` would cost."""
        try:
            size = os.stat(base).st_size
        except (FileNotFoundError, NotADirectoryError):
            return True  # no directory, no loose ref
        except OSError:
            return False  # let the listing say what is wrong
        # A lookup costs about as much as listing 6 entries; a directory holds
        # an entry for every 20-40 bytes of its size, depending on the file system.
        spellings = _spellings(os.fsencode(name), max(_MIN_SPELLINGS, size // 256))
        if spellings is None:
            return False
        for spelling in spellings:
            try:
                os.lstat(os.path.join(base, os.fsdecode(spelling)))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return False
            return False
        return True

    def listed_ref_names(self, prefix: bytes) -> list[bytes]:
        """The full names ``git for-each-ref`` lists below ``prefix`` (the names git accepts)."""
        proc = self.git(["for-each-ref", "--format=%(refname)", prefix.decode()], check=False)
        return proc.stdout.splitlines()

    def typed_refs(self, patterns: Iterable[str]) -> dict[bytes, tuple[bytes, str]]:
        """``{full name: (value, object type)}`` of the refs ``patterns`` name (a
        prefix ending in ``/``, or a full name), read as the files backend holds
        them and typed by one ``git cat-file --batch-check``: a ref at a blob, a
        tree or a tag is told from one at a commit without reading the object; a
        ref at an object this repository lacks is ``missing``, and one whose file
        holds no object id at all (git ignores it as broken) ``broken``."""
        values: dict[bytes, bytes] = {}
        for pattern in patterns:
            name = pattern.encode()
            if name.endswith(b"/"):
                # (a ref file that holds nothing, or a symbolic ref: git ignores it, and a
                # push of the prefix would send its deletion)
                values.update({name + rest: b"" for rest in self.ref_names_under(name)})
                values.update({name + rest: oid for rest, oid in self.refs_under(name).items()})
            else:
                value = self.read_ref(name)
                if value is None and os.path.isfile(os.path.join(self.common_dir, pattern)):
                    value = b""
                if value is not None:
                    values[name] = value
        valid = sorted({v for v in values.values() if _OBJECT_ID.fullmatch(v)})
        kinds: dict[bytes, str] = {}
        if valid:
            proc = self.git(
                ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
                input=b"".join(oid + b"\n" for oid in valid),
                check=False,
            )
            for line in proc.stdout.splitlines():
                oid, _sep, kind = line.partition(b" ")
                if kind and kind != b"missing":
                    kinds[oid] = kind.decode()
        return {
            name: (value, kinds.get(value, "missing" if _OBJECT_ID.fullmatch(value) else "broken"))
            for name, value in values.items()
        }

    # -- changing refs ------------------------------------------------------------

    def update_refs(
        self, updates: Iterable[RefUpdate], message: str, *, reflog: bool = True
    ) -> None:
        """Apply compare-and-swaps as one all-or-nothing ``git update-ref`` transaction.

        ``reflog=False`` writes no new reflog (a cache such as a remote's
        mirror, for which ``git fetch`` writes none either).

        Raises:
            RefRace: a ref no longer held its expected value, or another writer
                holds a lock on it: nothing changed; re-read and retry.
            NotWritable: the repository's refs cannot be written.
            Conflict: git refused for another reason (for example a ref of that
                name cannot exist beside another one), with git's reason.
        """
        planned = list(updates)
        if not reflog and len(planned) >= PACKED_CREATIONS:
            # many refs made or moved: straight into packed-refs (see .packed), when git
            # would agree (each moved one only there, at its old value, without a reflog)
            moves = [(name, old, new) for name, old, new in planned if new is not None]
            if len(moves) == len(planned):
                written = write_packed(self.common_dir, self.settings, moves)
                self.forget_packed()
                if written:
                    return
        # (in a transaction: a git that reads no "commit", its caller killed, aborts;
        # a git before 2.27 knows no "start": its one implicit transaction, as before)
        explicit = not self.lacks(_TRANSACTION)
        lines = [b"start"] if explicit else []
        for name, old, new in planned:
            # (bytes throughout: a name git refuses is git's to refuse, as a Conflict)
            if new is None:
                if old is None:
                    raise ValueError(f"update of {name!r} neither creates nor deletes")
                lines.append(b"delete " + name + b" " + old)
            elif old is None:
                lines.append(b"create " + name + b" " + new)
            else:
                lines.append(b"update " + name + b" " + new + b" " + old)
        lines += [b"commit"] if explicit else []
        subject = message.splitlines()[0] if message else "hydrate"
        proc = self.git(
            ["update-ref", *(["--create-reflog"] if reflog else []), "-m", subject, "--stdin"],
            input=b"\n".join(lines) + b"\n",
            check=False,
            whole=True,
        )
        if proc.returncode == 0:
            return
        if explicit and _NO_START.search(proc.stderr):
            # (git stopped at its first line: nothing was written)
            self._remember_lacking(_TRANSACTION)
            self.update_refs(planned, message, reflog=reflog)
            return
        if reason(proc) == _HOOK_ABORTED:
            # (git runs the hook once it holds the locks at the expected values: no
            # race, no lock to judge; the hook's own words say why)
            raise Conflict(_hook_refusal(planned, proc))
        self._explain_failure(planned, reason(proc))

    def _explain_failure(self, planned: list[RefUpdate], why: str) -> None:
        """Tell a lost race from a refusal by looking at the refs again, not at git's words."""
        for name, old, _new in planned:
            if self.read_ref(name) != old:
                raise RefRace(f"{name.decode(errors='replace')} moved")
        locks = [(name, lock) for name, _old, _new in planned for lock in self.ref_locks(name)]
        now = time.time()
        for name, lock in locks:
            judged = maker_gone(lock)
            if judged is not None:  # (left by a git-hydrate that was killed: again)
                take_over(lock, judged)
                raise RefRace(f"{lock} was left by a command that ended: taken over")
            try:
                age = now - os.stat(lock).st_mtime
            except OSError:
                continue
            if age > _STALE_LOCK_SECONDS and maker_runs(lock) is None:
                # No live writer holds a lock this long: say so now rather than
                # retrying until the attempts run out (a minute or more).
                raise Busy(
                    f"{os.fsdecode(name)} is locked by {lock} ({age:.0f} s old); if no git or "
                    f"git-hydrate process is writing it, {clearing(age)}"
                )
            raise RefRace("a ref is locked by another writer")
        refs_dir = os.path.join(self.common_dir, "refs")
        if not os.access(refs_dir, os.W_OK):
            raise NotWritable(f"cannot write to the repository ({refs_dir}): {why}")
        raise Conflict(f"cannot {_what(planned)}: {why} (see: git hydrate doctor)")

    def ref_lock(self, name: bytes) -> str:
        """The lock file git takes to change ``name``."""
        return os.path.join(self.common_dir, os.fsdecode(name) + ".lock")

    def ref_locks(self, name: bytes) -> list[str]:
        """Every lock file that stops a change of ``name``: its own and ``packed-refs.lock``."""
        return [self.ref_lock(name), os.path.join(self.common_dir, "packed-refs.lock")]

    def has_reflog(self, name: bytes) -> bool:
        """Whether the ref ``name`` has a reflog (a move of it is logged by git)."""
        return has_reflog(self.common_dir, name)

    def compare_and_swap(self, name: bytes, old: bytes | None, new: bytes, message: str) -> None:
        """Move ``name`` from ``old`` (``None``: absent) to ``new``, atomically.

        Raises:
            RefRace: another writer moved the ref first or holds its lock.
        """
        self.update_refs([(name, old, new)], message)

    def delete_ref(self, name: bytes, old: bytes, message: str) -> None:
        """Delete ``name`` if it still points at ``old``; :class:`RefRace` otherwise."""
        self.update_refs([(name, old, None)], message)


def _what(planned: list[RefUpdate]) -> str:
    """``create NAME`` (``update``; ``(and N more)``): the change a refused write meant."""
    name, old, _new = planned[0]
    more = f" (and {len(planned) - 1} more)" if len(planned) > 1 else ""
    return f"{'create' if old is None else 'update'} {name.decode(errors='replace')}{more}"


def _hook_refusal(planned: list[RefUpdate], proc: GitRun) -> str:
    """The error for a transaction this repository's reference-transaction hook
    refused: one line, then what the hook printed (git's own line left out), two
    spaces in, bounded (:func:`.process.bounded_lines`)."""
    said = [
        line.rstrip()
        for line in proc.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and line.strip() != f"fatal: {_HOOK_ABORTED}"
    ]
    head = f"cannot {_what(planned)}: a reference-transaction hook refused it ({_HOOK_ABORTED})"
    if not said:
        return f"{head}, saying nothing"
    return f"{head}, saying:" + "".join(f"\n  {line}" for line in bounded_lines(said))
