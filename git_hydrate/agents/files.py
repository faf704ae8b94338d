"""The files a bridge writes: each one's original kept, what was written remembered.

What each file was before git-hydrate first touched it is kept in the work
tree's git directory (``git rev-parse --git-path hydrate/agents/NAME.json``):
when a file still holds exactly what git-hydrate last wrote, :func:`restore`
puts the original bytes back; when someone edited it since, only
git-hydrate's own part is taken out, and the edits stay. A file a bridge
creates in the work tree is listed in ``.git/info/exclude`` (between
git-hydrate's markers) so that ``git status`` stays clean; a file git already
tracks is named in :attr:`Edits.tracked` so that the command can say so.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from ..errors import ValidationError
from ..ledger import Ledger
from ..store import BeyondSymlink, ConfinedTree, current_umask, open_regular
from .formats import BEGIN, END, block_span, with_block, without_block

__all__ = [
    "Edits",
    "UserFile",
    "WorkTreeFile",
    "load_state",
    "read",
    "restore",
    "save_state",
    "state_path",
    "sync_exclude",
    "top",
    "write",
]

#: The comment that opens git-hydrate's block in ``info/exclude``.
_EXCLUDE_HEAD: Final = f"# {BEGIN}: files of git hydrate agent install (uninstall removes them)"


def top(ledger: Ledger) -> Path:
    """The top of the work tree.

    Raises:
        ValidationError: a bare repository.
    """
    if ledger.repo.work_tree is None:
        if not ledger.repo.is_bare:  # (run from inside its git directory, as git sees it)
            raise ValidationError(
                "git hydrate agent needs a work tree; run it from the work tree, not inside "
                "the git directory"
            )
        raise ValidationError("git hydrate agent needs a work tree (this repository is bare)")
    return Path(ledger.repo.work_tree)


def state_path(ledger: Ledger, agent: str) -> Path:
    """Where the bridge of ``agent`` keeps what it wrote."""
    return Path(ledger.repo.git_path(f"hydrate/agents/{agent}.json"))


def load_state(ledger: Ledger, agent: str) -> dict[str, Any]:
    """What the bridge of ``agent`` wrote (empty when it is not installed)."""
    return _state_at(state_path(ledger, agent))


def _state_at(path: Path) -> dict[str, Any]:
    """The bridge state file ``path`` (empty when missing or unreadable)."""
    try:
        with open_regular(str(path)) as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        data = None
    if not isinstance(data, dict):
        data = {}
    # (hand-edited or damaged, it may hold anything: what is not sound is left out,
    # and the files it would name are left alone)
    for key in ("files", "user"):
        found = data.get(key)
        records = found.items() if isinstance(found, dict) else ()
        data[key] = {name: record for name, record in records if _sound(record)}
    for key in ("dirs", "excluded"):
        found = data.get(key)
        data[key] = [p for p in found if isinstance(p, str)] if isinstance(found, list) else []
    return data


def _sound(record: Any) -> bool:
    """Whether ``record`` is a file's record as :class:`Edits` keeps it."""
    if not isinstance(record, dict):
        return False
    original, written = record.get("original"), record.get("written")
    if not isinstance(written, str | None) or not isinstance(original, str | None):
        return False
    if original is not None:
        try:
            base64.b64decode(original, validate=True)
        except ValueError:  # (binascii.Error)
            return False
    return True


def save_state(ledger: Ledger, agent: str, state: dict[str, Any]) -> None:
    path = state_path(ledger, agent)
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def write(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` at once, keeping its mode."""
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


class UserFile:
    """A file outside the work tree (the user's own), read and written by its path."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def check(self) -> None:
        """Nothing to refuse: the user's files are where the user put them."""

    def read(self) -> bytes | None:
        return read(self.path)

    def write(self, data: bytes) -> None:
        """Write ``data`` where the path leads: through a symbolic link to its target
        (a ``config.toml`` kept in a dotfiles repository stays a link to it)."""
        target = Path(os.path.realpath(self.path))
        target.parent.mkdir(parents=True, exist_ok=True)
        write(target, data)

    def unlink(self) -> None:
        """Remove what :meth:`write` wrote: through a symbolic link, its target
        (the link is the user's own, as it was before install)."""
        os.unlink(os.path.realpath(self.path))


class WorkTreeFile:
    """A file of the work tree (``relative``: its path from the top), never read,
    written nor removed through a symbolic link: neither the file itself nor a
    folder on its way from the top may be one (a cloned repository's
    ``AGENTS.md -> ~/.ssh/id_ed25519`` or ``.claude -> ../elsewhere`` would
    otherwise have the bridge copy that file in, or write out of the work tree).
    Each folder is opened without following a link (:class:`ConfinedTree`), so a
    link swapped in after :meth:`check` is refused as well."""

    def __init__(self, files: ConfinedTree, relative: str) -> None:
        self.files, self.relative = files, relative
        self.raw = os.fsencode(relative)

    def _refused(self, folder: bool) -> ValidationError:
        where = self.relative
        if folder:  # (which folder: said, once refused, from the path as it is now)
            top, parts = Path(os.fsdecode(self.files.top)), self.relative.split("/")
            where = os.path.dirname(self.relative)
            for i in range(1, len(parts)):
                if (top / "/".join(parts[:i])).is_symlink():
                    where = "/".join(parts[:i])
                    break
            where += f" (a folder of {self.relative})"
        return ValidationError(
            f"{where} is a symbolic link; git hydrate agent reads and writes no work-tree "
            "file through one (nothing written)"
        )

    def _status(self) -> os.stat_result | None:
        try:
            info = self.files.lstat(self.raw)
        except BeyondSymlink:
            raise self._refused(True) from None
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(info.st_mode):
            raise self._refused(False)
        return info

    def check(self) -> None:
        """Refuse the file if it, or a folder on its way, is a symbolic link.

        Raises:
            ValidationError: it is.
        """
        self._status()

    def read(self) -> bytes | None:
        """The file's bytes (``None``: missing).

        Raises:
            ValidationError: it, or a folder on its way, is a symbolic link.
        """
        if self._status() is None:
            return None
        try:
            fd = self.files.open_fd(self.raw)
        except BeyondSymlink:
            raise self._refused(True) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._refused(False) from None
            raise
        with open(fd, "rb") as fh:
            return fh.read()

    def write(self, data: bytes) -> None:
        """Replace the file by ``data`` at once (its mode kept), its folders made.

        Raises:
            ValidationError: it, or a folder on its way, is a symbolic link.
        """
        folder, _, name = self.raw.rpartition(b"/")
        try:
            parent = self.files.folder_fd(folder, make=True)
        except BeyondSymlink:
            raise self._refused(True) from None
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            raise self._refused(False)
        mode = info.st_mode & 0o7777 if info is not None else 0o666 & ~current_umask()
        temp = b".%s.%s.tmp" % (name, os.urandom(6).hex().encode("ascii"))
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temp, flags, 0o600, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                os.fchmod(fh.fileno(), mode)
            # (a rename replaces a link put there meanwhile; it never writes through it)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=parent)
            raise

    def unlink(self) -> None:
        """Remove the file (a link there: the link alone, never what it names)."""
        folder, _, name = self.raw.rpartition(b"/")
        try:
            os.unlink(name, dir_fd=self.files.folder_fd(folder))
        except BeyondSymlink:
            raise self._refused(True) from None


def remove_empty_folder(files: ConfinedTree, relative: str) -> None:
    """Remove the work tree's folder ``relative`` if it is empty (never through a
    symbolic link; nothing said when it is not there, not empty, or a link)."""
    folder, _, name = os.fsencode(relative).rpartition(b"/")
    with contextlib.suppress(OSError):
        os.rmdir(name, dir_fd=files.folder_fd(folder))


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _original(before: bytes | None) -> str | None:
    return None if before is None else base64.b64encode(before).decode("ascii")


class Edits:
    """The changes one install makes for one agent: ``actions`` by path, the
    ``tracked`` files among them, and ``notes`` to say. Each change is worked out
    first and written by :meth:`write`, once every one was: a file an agent would
    not read (bad JSON...), or a symbolic link where a file is read or written,
    stops the install before anything is written."""

    def __init__(self, ledger: Ledger, agent: str) -> None:
        self.ledger = ledger
        self.top = top(ledger)
        files = ledger.repo.work_tree_files
        assert files is not None  # (there is a work tree: top() said so)
        self.files = files
        self.state = load_state(ledger, agent)
        self.actions: dict[str, str] = {}
        self.tracked: list[str] = []
        self.notes: list[str] = []
        self._writes: list[tuple[WorkTreeFile | UserFile, bytes]] = []

    def write(self) -> None:
        """Write the changes worked out (their folders made first)."""
        for place, data in self._writes:
            place.write(data)
        self._writes.clear()

    def edit(self, relative: str, change: Callable[[bytes | None], bytes]) -> str:
        """Apply ``change`` to the work tree's file ``relative`` (written by
        :meth:`write`); remember its original the first time; a file created here
        is excluded. Returns the action.

        Raises:
            ValidationError: the file, or a folder on its way, is a symbolic link.
        """
        place = WorkTreeFile(self.files, relative)
        path = self.top / relative
        before = place.read()
        files = self.state["files"]
        if relative not in files:
            files[relative] = {"original": _original(before), "written": None}
        after = change(before)
        if after == before:
            files[relative]["written"] = _sha(before)
            return self._done(relative, "unchanged")
        if not path.parent.exists():
            for parent in reversed(path.parents):
                made = str(parent.relative_to(self.top)) if parent.is_relative_to(self.top) else ""
                if made and not parent.exists() and made not in self.state["dirs"]:
                    self.state["dirs"].append(made)
        created = before is None and files[relative]["original"] is None
        if created and relative not in self.state["excluded"]:
            self.state["excluded"].append(relative)
        self._writes.append((place, after))
        files[relative]["written"] = _sha(after)
        return self._done(relative, "installed" if before is None else "updated")

    def _done(self, relative: str, action: str) -> str:
        self.actions[relative] = action
        if relative not in self.state["excluded"] and self.ledger.repo.tracked([relative]):
            self.tracked.append(relative)
        return action

    def edit_user(self, path: Path, change: Callable[[bytes | None], bytes]) -> str:
        """Apply ``change`` to a file outside the repository (the user's own)."""
        place = UserFile(path)
        before = place.read()
        users = self.state["user"]
        key = str(path)
        if key not in users:
            users[key] = {"original": _original(before), "written": None}
        after = change(before)
        action = "unchanged"
        if after != before:
            self._writes.append((place, after))
            action = "installed" if before is None else "updated"
        users[key]["written"] = _sha(after)
        self.actions[key] = action
        return action


def restore(
    place: WorkTreeFile | UserFile, record: dict[str, Any], remover: Callable[[bytes], bytes]
) -> str:
    """Take git-hydrate's part out of ``place``: its original bytes when nobody edited
    it since, else only what ``remover`` takes out. Returns the action."""
    now = place.read()
    original = record.get("original")
    before = None if original is None else base64.b64decode(original)
    if now is None:
        return "unchanged"
    if _sha(now) == record.get("written"):
        if before is None:
            place.unlink()
            return "removed"
        if now != before:
            place.write(before)
        return "restored"
    cleaned = remover(now)
    if not cleaned and before is None:
        place.unlink()
        return "removed"
    if cleaned != now:
        place.write(cleaned)
        return "cleaned"
    return "unchanged"


def _excluded_elsewhere(ledger: Ledger) -> set[str]:
    """The paths the bridges of the repository's other work trees listed in
    ``info/exclude``, which all its work trees share (each keeps its own state)."""
    repo = ledger.repo
    common = Path(repo.common_dir)
    mine = Path(repo.git_dir).resolve()
    folders = [common, *sorted(common.joinpath("worktrees").glob("*"))]
    found: set[str] = set()
    for folder in folders:
        if folder.resolve() == mine:
            continue
        for state in sorted(folder.joinpath("hydrate", "agents").glob("*.json")):
            listed = _state_at(state)["excluded"]
            if isinstance(listed, list):
                found.update(p for p in listed if isinstance(p, str))
    return found


def other_work_trees(ledger: Ledger) -> list[Path]:
    """The repository's other work trees (its main one and its linked ones), as
    their ``gitdir`` files and the main one's place say; those gone are left out."""
    repo = ledger.repo
    common = Path(repo.common_dir).resolve()
    mine = Path(repo.git_dir).resolve()
    found: list[Path] = []
    if common != mine and common.name == ".git":  # (a linked work tree: the main one)
        found.append(common.parent)
    for folder in sorted(common.joinpath("worktrees").glob("*")):
        if folder.resolve() == mine:
            continue
        with contextlib.suppress(OSError):
            top = Path(folder.joinpath("gitdir").read_text().strip()).parent
            if top.is_dir():
                found.append(top)
    return found


def shared_exclusion_notes(ledger: Ledger, paths: list[str]) -> list[str]:
    """What listing ``paths`` in ``info/exclude`` does to the repository's other
    work trees, which share it: each hides them too (named where one holds a file
    of that name already), until the bridge is uninstalled here."""
    others = other_work_trees(ledger) if paths else []
    if not others:
        return []
    notes = []
    for tree in others:
        hidden = [p for p in paths if tree.joinpath(p).exists() and not ledger.repo.tracked([p])]
        if hidden:
            notes.append(
                f"{', '.join(hidden)} in {tree} {_is_are(hidden)} hidden from git status too: "
                "info/exclude is shared by every work tree of this repository"
            )
    if not notes:
        notes.append(
            f"info/exclude is shared by every work tree of this repository: {', '.join(paths)} "
            f"{_is_are(paths)} hidden from git status in {len(others)} other work tree(s) "
            "too, until the bridge is uninstalled here"
        )
    return notes


def _is_are(paths: list[str]) -> str:
    return "is" if len(paths) == 1 else "are"


def sync_exclude(ledger: Ledger, add: list[str], drop: list[str]) -> None:
    """List ``add`` in ``info/exclude`` (paths from the top), and no longer ``drop``
    (but those another work tree's bridge still lists there)."""
    if drop:
        kept = _excluded_elsewhere(ledger)
        drop = [p for p in drop if p not in kept]
    path = Path(ledger.repo.git_path("info/exclude"))
    data = read(path)
    text = (data or b"").decode("utf-8", "surrogateescape")
    found = block_span(text)
    listed: list[str] = []
    if found is not None:
        inside = text[found[0] : found[1]].splitlines()[1:-1]
        listed = [line[1:] for line in inside if line.startswith("/")]
    wanted = [p for p in dict.fromkeys([*listed, *add]) if p not in drop]
    if wanted == listed:
        return
    if wanted:
        lines = "".join(f"/{p}\n" for p in wanted)  # (the bridges' own plain names)
        block = f"{_EXCLUDE_HEAD}\n{lines}# {END}\n"
        text = with_block(text, block)
    else:
        text = without_block(text)
    path.parent.mkdir(parents=True, exist_ok=True)
    write(path, text.encode("utf-8", "surrogateescape"))
