"""The rendered-prompt cache: a prompt already built is printed again, byte for byte.

A prompt is a pure function of the task's tip commit (its fields, links and
bodies never change under one tip), the budget (bytes, tokens, encoding,
outlines), the version of git-hydrate that renders it, and the moment expiry
is judged at — but only through *which* attachments have expired. So each
entry records the window of moments in which that set stays the same: from
the latest expiry at or before the moment it was built, to the earliest one
after it. A lookup at a moment outside the window is a miss.

Derived and disposable, like every cache here: one file per entry in
``<common dir>/hydrate/prompt-cache/`` (a JSON header, the prompt's bytes, the
packet's JSON if it was asked for), written atomically, the oldest removed
beyond :data:`MAX_ENTRIES` or :data:`MAX_TOTAL_BYTES`. A damaged or foreign
file is a miss: the header, the prompt and the packet each carry a CRC-32,
checked before a byte of them is served. ``hydrate.promptCache false`` turns
it off.

Reading an entry needs only the standard library, and :func:`lookup` only
the task's ref and the settings: the command line's fast path
(``git_hydrate.quick``) answers a hit without importing click, msgspec or
dulwich, through the same functions ``prompt`` uses.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import unicodedata
import zlib

from .. import __version__
from ..ids import names_a_task, ref_name
from ..store import Refs, open_regular, private_file
from ..store.tempfiles import remove_stale_temporaries
from .budget import resolve_budget
from .fingerprint import PACKAGE_DIR, packer_fingerprint
from .grammars import grammars
from .refresh_memo import recall

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, BinaryIO, Final, TypeGuard

    from ..store.base import RepositoryBase

__all__ = [
    "CURRENT_TASK",
    "MAX_ENTRIES",
    "MAX_TOTAL_BYTES",
    "CachedPrompt",
    "Entry",
    "PromptCache",
    "lookup",
    "started_task",
]

#: Bumped when what an entry holds or how a prompt is rendered changes.
_FORMAT: Final = 6
#: An entry file starts with this, then the header's length and its CRC-32 (4
#: bytes each, big-endian), the header (compact JSON, UTF-8), the prompt's bytes
#: and the packet's compact JSON (absent from an entry written by a prompt that
#: was printed: ``packet_bytes`` is then -1). The header holds the CRC-32 of the
#: prompt and of the packet. A hit that prints the prompt reads neither the
#: packet nor a decoded copy of the prompt, and needs only the standard library.
_MAGIC: Final = b"GHPCACHE"
_PREFIX_BYTES: Final = len(_MAGIC) + 8
#: How much of a prompt its check reads at a time.
_CHECK_CHUNK: Final = 1 << 20
_INF: Final = float("inf")
#: At most this many prompts are kept, newest first.
MAX_ENTRIES: Final = 64
#: And at most this many bytes of them.
MAX_TOTAL_BYTES: Final = 256 * 1024 * 1024


class CachedPrompt:
    """One stored prompt: the result's fields (sizes, omissions) as they were, the
    prompt's bytes, and the packet's JSON when it was asked for."""

    def __init__(self, fields: dict[str, Any], prompt: bytes, packet: bytes | None) -> None:
        self.fields = fields
        self.prompt = prompt
        self.packet = packet

    def result(self) -> dict[str, Any]:
        """The whole result, as :func:`git_hydrate.pack.stored.prompt` returns it."""
        import msgspec

        if self.packet is None:
            raise ValueError("this entry was read without its packet")
        return {
            **self.fields,
            "prompt": self.prompt.decode("utf-8"),
            "packet": msgspec.json.decode(self.packet),
        }


class Entry:
    """A stored prompt, opened: its header checked (its CRC-32, format, key, the
    window of moments it holds in, who wrote it) and the file exactly as long as
    the header says, so its bytes can be copied from ``file`` (at ``offset``)
    once :meth:`intact` has said they are those written. Close it (or use it as
    a context manager)."""

    def __init__(self, file: BinaryIO, header: dict[str, Any], offset: int) -> None:
        self.file = file
        #: The result's fields (sizes, omissions), as :func:`.stored.prompt` made them.
        self.fields: dict[str, Any] = header["fields"]
        #: Where the prompt starts in ``file``, its length and its CRC-32.
        self.offset = offset
        self.prompt_bytes: int = header["prompt_bytes"]
        self.prompt_crc: int = header["prompt_crc"]
        #: The length of the packet's JSON after it (-1: no packet stored), its CRC-32.
        self.packet_bytes: int = header["packet_bytes"]
        self.packet_crc: int = header["packet_crc"]
        #: With :func:`lookup`'s ``refreshed``: what ``prompt --refresh`` says of each
        #: recorded run first (see :mod:`git_hydrate.pack.refresh_memo`).
        self.refreshed: list[dict[str, Any]] = []
        #: The task's id (:func:`lookup` of ``@``: the current task's).
        self.task_id = ""

    def __enter__(self) -> Entry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.file.close()

    def read(self, *, packet: bool) -> CachedPrompt | None:
        """The prompt (and the packet with ``packet``) read whole; ``None`` when
        the file ended early after all, or what was read is not what was written
        (its CRC-32 differs)."""
        self.file.seek(self.offset)
        prompt = self.file.read(self.prompt_bytes)
        if len(prompt) != self.prompt_bytes or zlib.crc32(prompt) != self.prompt_crc:
            return None
        json_bytes = self.file.read(self.packet_bytes) if packet else None
        if json_bytes is not None and (
            len(json_bytes) != self.packet_bytes or zlib.crc32(json_bytes) != self.packet_crc
        ):
            return None
        return CachedPrompt(self.fields, prompt, json_bytes)

    def intact(self) -> bool:
        """Whether the prompt's bytes in ``file`` are those written (their CRC-32),
        read through once, a piece at a time, before any is copied out: a hit
        found damaged has then printed nothing. (The file is never written in
        place, only replaced, so what was checked is what the open file copies.)"""
        # (one buffer read into again and again: a new one for each piece would cost
        # its pages' faults each time, a fifth of the check's time)
        buffer = memoryview(bytearray(min(self.prompt_bytes, _CHECK_CHUNK)))
        read_into = self.file.readinto  # type: ignore[attr-defined] # (a buffered file)
        crc, left = 0, self.prompt_bytes
        try:
            self.file.seek(self.offset)
            while left:
                got = read_into(buffer[: min(left, len(buffer))])
                if not got:
                    return False  # (ended early after all)
                crc = zlib.crc32(buffer[:got], crc)
                left -= got
        except OSError:
            return False
        return crc == self.prompt_crc


def entry_key(tip: bytes, budget: Iterable[Any], grammars: str | None = None) -> str:
    """The key of a task tip under a budget, for this version's rendering
    (``grammars``: the installed outline grammars, when outlines are on).

    The key is what decides the prompt, as compact JSON; an entry holds it
    whole and is a hit only for exactly that text. No digest is needed, so none
    is computed (``hashlib`` costs the fast path 2.5 ms to import: it loads
    OpenSSL).
    """
    parts = [_FORMAT, __version__, packer_fingerprint(_HERE)]
    # neutralise reads text through Python's Unicode tables
    parts += [unicodedata.unidata_version, tip.decode(), *budget]
    if grammars is not None:
        parts.append(grammars)
    return json.dumps(parts, separators=(",", ":"))


def _file_name(key: str) -> str:
    """Where the entry of ``key`` is kept: two checksums of it (64 bits). Two keys
    that share a name only take each other's place (a miss): the header holds
    the key whole, and nothing else is a hit."""
    data = key.encode()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def _object_id(tip: bytes | None) -> TypeGuard[bytes]:
    """Whether a ref's value names an object: ``None`` (no such ref) and what a
    damaged ref holds are no entry's (whoever reads the task then says what is
    wrong)."""
    return tip is not None and len(tip) in (40, 64) and tip.isascii() and tip.isalnum()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in a prompt-cache header")


def _header(data: bytes) -> dict[str, Any] | None:
    """A header's fields, or ``None`` when they are not what :meth:`PromptCache._write`
    writes (a damaged file is a miss)."""
    try:
        header = json.loads(data, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(header, dict) or not isinstance(header.get("fields"), dict):
        return None
    sizes = [header.get(name) for name in _NUMBERS]
    if not all(type(size) is int for size in sizes) or not isinstance(header.get("key"), str):
        return None
    if header["prompt_bytes"] < 0 or header["packet_bytes"] < -1:
        return None
    if not _summarised(header["fields"]):
        return None
    for end in ("since", "until"):
        moment = header.get(end, "")
        if moment is not None and (type(moment) not in (int, float) or not -_INF < moment < _INF):
            return None  # (NaN too: it compares false)
    return header


#: The header's integers: its format, then the prompt's and the packet's sizes and CRC-32s.
_NUMBERS: Final = ("format", "prompt_bytes", "packet_bytes", "prompt_crc", "packet_crc")


def _summarised(fields: dict[str, Any]) -> bool:
    """Whether ``fields`` hold what every reader of a hit relies on: the figures of the
    prompt's summary line, and its omitted and shrunk attachments as lists."""
    figures = ("prompt_bytes", "kept", "attachments", "needed_bytes")
    if not all(type(fields.get(name)) is int for name in figures):
        return False
    omitted, shrunk = fields.get("omitted"), fields.get("shrunk", [])
    if not isinstance(omitted, list) or not isinstance(shrunk, list | None):
        return False
    return all(isinstance(item, dict) and isinstance(item.get("reason"), str) for item in omitted)


def _holds_at(header: dict[str, Any], moment: float) -> bool:
    """Whether ``moment`` lies in the entry's window: the same attachments expired."""
    since, until = header["since"], header["until"]
    return (since is None or moment >= since) and (until is None or moment < until)


#: Where the package is, whose packer code decides a prompt's bytes (a test
#: points it elsewhere).
_HERE: str = PACKAGE_DIR


class PromptCache:
    """The prompt cache of one repository."""

    def __init__(self, repo: RepositoryBase) -> None:
        self.repo = repo
        self.directory = os.path.join(repo.common_dir, "hydrate", "prompt-cache")

    @classmethod
    def of(cls, repo: RepositoryBase) -> PromptCache | None:
        """The repository's prompt cache, or ``None`` when ``hydrate.promptCache`` is off."""
        return cls(repo) if repo.settings.boolean("hydrate.promptCache") else None

    def find(
        self, tip: bytes | None, budget: Iterable[Any], moment: float, *, packet: bool = True
    ) -> CachedPrompt | None:
        """The prompt of the task at ``tip`` under ``budget``, if stored and valid at
        ``moment`` (``tip`` ``None``: no such task, so none)."""
        if not _object_id(tip):
            return None
        return self.get(self.key(tip, budget), moment, packet=packet)

    @staticmethod
    def key(tip: bytes, budget: Iterable[Any]) -> str:
        """The key of a task tip under a budget, for this version's rendering."""
        if getattr(budget, "outline", False):
            # what outlines come out depends on the installed grammars
            return entry_key(tip, budget, grammars())
        return entry_key(tip, budget)

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, _file_name(key))

    def get(self, key: str, moment: float, *, packet: bool = True) -> CachedPrompt | None:
        """The prompt stored under ``key`` if it holds at ``moment``, else ``None``;
        without ``packet``, the packet is not read (a hit that only prints)."""
        entry = self.open(key, moment, packet=packet)
        if entry is None:
            return None
        with entry:
            try:
                return entry.read(packet=packet)
            except OSError:
                return None

    def open(self, key: str, moment: float, *, packet: bool = False) -> Entry | None:
        """The entry stored under ``key``, opened, if it holds at ``moment`` (and has
        its packet, with ``packet``); else ``None``. Nothing of the prompt is read."""
        try:
            # (a FIFO planted in the cache is refused, not waited on)
            fh = open_regular(self._path(key))
        except OSError:
            return None
        try:
            entry = self._checked(fh, key, moment, packet)
        except OSError:
            entry = None
        if entry is None:
            fh.close()
        return entry

    @staticmethod
    def _checked(fh: BinaryIO, key: str, moment: float, packet: bool) -> Entry | None:
        status = os.fstat(fh.fileno())
        if not stat.S_ISREG(status.st_mode) or not private_file(status):
            return None  # printed unchecked: only what this user wrote
        head = fh.read(_PREFIX_BYTES)
        if len(head) != _PREFIX_BYTES or not head.startswith(_MAGIC):
            return None
        length = int.from_bytes(head[len(_MAGIC) : _PREFIX_BYTES - 4], "big")
        if length > status.st_size - _PREFIX_BYTES:
            return None
        data = fh.read(length)
        if zlib.crc32(data) != int.from_bytes(head[_PREFIX_BYTES - 4 :], "big"):
            return None  # (a damaged size, window or summary figure)
        header = _header(data)
        if header is None or header["format"] != _FORMAT or header["key"] != key:
            return None
        if not _holds_at(header, moment):
            return None
        if packet and header["packet_bytes"] < 0:
            return None  # written without its packet
        offset = _PREFIX_BYTES + length
        prompt_bytes, packet_bytes = header["prompt_bytes"], header["packet_bytes"]
        if status.st_size != offset + prompt_bytes + max(packet_bytes, 0):
            return None  # cut short (or longer than written): damaged
        return Entry(fh, header, offset)

    def put(
        self, key: str, moment: float, expiries: Iterable[float], result: dict[str, Any]
    ) -> None:
        """Store ``result``, valid while no expiry among ``expiries`` is crossed."""
        fields = {k: v for k, v in result.items() if k not in ("prompt", "packet")}
        prompt = result["prompt"].encode("utf-8")
        self._write(key, moment, expiries, fields, [prompt], len(prompt), result["packet"])

    def put_pieces(
        self,
        key: str,
        moment: float,
        expiries: Iterable[float],
        fields: dict[str, Any],
        pieces: list[bytes],
    ) -> None:
        """Store a prompt given as the UTF-8 pieces that join into it, without its
        packet (see :func:`git_hydrate.context_expander.build_prompt`), and
        ``fields``, the rest of its result."""
        self._write(key, moment, expiries, fields, pieces, sum(map(len, pieces)), None)

    def _write(
        self,
        key: str,
        moment: float,
        expiries: Iterable[float],
        fields: dict[str, Any],
        prompt: Sequence[bytes],
        prompt_bytes: int,
        packet: Any,
    ) -> None:
        import msgspec

        times = list(expiries)
        since = max((t for t in times if t <= moment), default=None)
        until = min((t for t in times if t > moment), default=None)
        json_bytes = b"" if packet is None else msgspec.json.encode(packet)
        if prompt_bytes + len(json_bytes) > MAX_TOTAL_BYTES:
            return
        prompt_crc = 0
        for piece in prompt:
            prompt_crc = zlib.crc32(piece, prompt_crc)
        try:
            # msgspec writes what the standard library reads (a tenth of json.dumps'
            # time on a header of a thousand omissions); the expiries are integers.
            header = msgspec.json.encode(
                {
                    "format": _FORMAT,
                    "key": key,
                    "since": since,
                    "until": until,
                    "prompt_bytes": prompt_bytes,
                    "packet_bytes": -1 if packet is None else len(json_bytes),
                    "prompt_crc": prompt_crc,
                    "packet_crc": zlib.crc32(json_bytes),
                    "fields": fields,
                }
            )
            sizes = len(header).to_bytes(4, "big") + zlib.crc32(header).to_bytes(4, "big")
        except (OverflowError, TypeError, ValueError, RecursionError):
            return  # a field JSON cannot hold: the prompt is simply not kept

        def chunks() -> Iterable[bytes]:
            yield _MAGIC + sizes + header
            written = 0
            for chunk in prompt:
                written += len(chunk)
                yield chunk
            if written != prompt_bytes:  # never stored: a hit would print it cut
                raise OSError(f"prompt cache: {written} bytes written, {prompt_bytes} announced")
            yield json_bytes

        # The cache only saves time: failing to write it is not an error.
        try:
            self.repo.replace_file(self._path(key), chunks(), private=True)
        except OSError:
            return
        self._prune()

    def _prune(self) -> None:
        """Remove the oldest entries beyond the count and size limits, and the
        temporary files of writers killed before they renamed theirs into place."""
        try:
            names = [n for n in os.listdir(self.directory) if not n.endswith(".tmp")]
        except OSError:
            return
        remove_stale_temporaries(self.directory)
        found = []
        for name in names:
            with contextlib.suppress(OSError):
                status = os.stat(os.path.join(self.directory, name))
                found.append((status.st_mtime_ns, status.st_size, name))
        found.sort(reverse=True)
        total = 0
        for index, (_mtime, size, name) in enumerate(found):
            total += size
            if index >= MAX_ENTRIES or total > MAX_TOTAL_BYTES:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, name))


def lookup(
    directory: str | None,
    task_id: str,
    budget_args: Sequence[Any],
    moment: float | None = None,
    *,
    refreshed: bool = False,
) -> Entry | None:
    """The stored prompt ``git hydrate [-C directory] prompt task_id`` prints, opened
    and checked (:meth:`Entry.intact`); ``None`` when there is none to print: not a
    task id, the cache turned off, no such task, nothing stored, damaged, or not
    valid at ``moment`` (``None``: git's idea of now). ``budget_args`` are the
    options given, as :func:`resolve_budget` takes them (with outlines on, the key
    names the installed grammars, found without importing them: :mod:`.grammars`).
    With ``refreshed``, the prompt ``prompt --refresh`` prints: ``None`` unless the
    refresh memo says that refreshing would recognise every recorded run at this
    tip again (the entry's ``refreshed`` then holds what the refresh says of each).

    Only the refs and the settings are read (no object, no ``cat-file``), so the
    command line's fast path (``git_hydrate.quick``) and ``prompt`` itself ask
    the same question the same way.

    Raises:
        HydrateError: the repository, a setting or the task's ref cannot be read.
        OSError: the file system refused a read.
    """
    current = task_id == CURRENT_TASK
    if not current and not names_a_task(task_id.encode("utf-8", "surrogateescape")):
        return None
    with Refs(directory) as repo:
        store = PromptCache.of(repo)
        if store is None:
            return None
        if current:
            task_id = started_task(repo.git_dir) or ""
            if not task_id:
                return None  # (none started: the branch may name one, the full CLI says)
        tip = repo.read_ref(ref_name(task_id))
        if not _object_id(tip):
            return None
        budget = resolve_budget(repo.settings, *budget_args)
        said = recall(repo, task_id, tip) if refreshed else []
        if said is None:
            return None
        entry = store.open(store.key(tip, budget), repo.git_now() if moment is None else moment)
        if entry is not None and not entry.intact():
            entry.close()
            return None  # damaged: the prompt is built, and stored, again
        if entry is not None:
            entry.refreshed = said
            entry.task_id = task_id
        return entry


#: The id that stands for the work tree's current task (``git_hydrate.current.CURRENT``).
CURRENT_TASK: Final = "@"


def started_task(git_dir: str) -> str | None:
    """The task ``git hydrate start`` recorded for the work tree whose git directory is
    ``git_dir`` (``hydrate/current-task``, as ``git_hydrate.current`` reads it), or
    ``None``."""
    try:
        with open_regular(os.path.join(git_dir, "hydrate", "current-task")) as fh:
            value = fh.read().decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value if names_a_task(value.encode("utf-8", "surrogateescape")) else None
