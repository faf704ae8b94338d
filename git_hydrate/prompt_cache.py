"""The rendered-prompt cache: a prompt already built is printed again, byte for byte.

A prompt is a pure function of the task's tip commit (its fields, links and
bodies never change under one tip), the budget (bytes, tokens, encoding,
outlines), the version of git-hydrate that renders it, and the moment expiry
is judged at — but only through *which* attachments have expired. So each
entry records the window of moments in which that set stays the same: from
the latest expiry at or before the moment it was built, to the earliest one
after it. A lookup at a moment outside the window is a miss.

Derived and disposable, like every cache here: one msgpack file per entry in
``<common dir>/hydrate/prompt-cache/``, written atomically, the oldest removed
beyond :data:`MAX_ENTRIES` or :data:`MAX_TOTAL_BYTES`. A damaged or foreign
file is a miss. ``hydrate.promptCache false`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import unicodedata
from collections.abc import Iterable
from typing import Any, Final

import msgspec

from . import __version__
from .fingerprint import PACKAGE_DIR, code_fingerprint
from .store import Repository, private_file

__all__ = ["MAX_ENTRIES", "MAX_TOTAL_BYTES", "CachedPrompt", "PromptCache"]

#: Bumped when what an entry holds or how a prompt is rendered changes.
_FORMAT: Final = 4
#: An entry file starts with this, then the header's length (4 bytes, big-endian),
#: the header (msgpack), the prompt's bytes and the packet's compact JSON (absent
#: from an entry written by a prompt that was printed: ``packet_bytes`` is then
#: -1). A hit that prints the prompt reads neither the packet nor a decoded copy.
_MAGIC: Final = b"GHPCACHE"
#: At most this many prompts are kept, newest first.
MAX_ENTRIES: Final = 64
#: And at most this many bytes of them.
MAX_TOTAL_BYTES: Final = 256 * 1024 * 1024


class _Header(msgspec.Struct, array_like=True):
    format: int
    key: str
    since: float | None  # the latest expiry at or before the moment of building
    until: float | None  # the earliest expiry after it
    fields: dict[str, Any]
    prompt_bytes: int
    packet_bytes: int  # -1: no packet stored


_decoder = msgspec.msgpack.Decoder(_Header)
_encoder = msgspec.msgpack.Encoder()


class CachedPrompt:
    """One stored prompt: the result's fields (sizes, omissions) as they were, the
    prompt's bytes, and the packet's JSON when it was asked for."""

    def __init__(self, fields: dict[str, Any], prompt: bytes, packet: bytes | None) -> None:
        self.fields = fields
        self.prompt = prompt
        self.packet = packet

    def result(self) -> dict[str, Any]:
        """The whole result, as :func:`git_hydrate.packing.prompt` returns it."""
        if self.packet is None:
            raise ValueError("this entry was read without its packet")
        return {
            **self.fields,
            "prompt": self.prompt.decode("utf-8"),
            "packet": msgspec.json.decode(self.packet),
        }


#: The modules whose code decides a prompt's bytes.
_RENDERING_MODULES: Final = (
    "rendering.py",
    "context_expander.py",
    "packing.py",
    "tokens.py",
    "outline.py",
    "budgeting.py",
    "tasks.py",
    "codec.py",
    "model.py",
)
#: Where they are (a test points it elsewhere).
_HERE: str = PACKAGE_DIR


class PromptCache:
    """The prompt cache of one repository."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.directory = os.path.join(repo.common_dir, "hydrate", "prompt-cache")

    @classmethod
    def of(cls, repo: Repository) -> PromptCache | None:
        """The repository's prompt cache, or ``None`` when ``hydrate.promptCache`` is off."""
        return cls(repo) if repo.settings.boolean("hydrate.promptCache") else None

    def find(
        self, tip: bytes | None, budget: Iterable[Any], moment: float, *, packet: bool = True
    ) -> CachedPrompt | None:
        """The prompt of the task at ``tip`` under ``budget``, if stored and valid at
        ``moment`` (``tip`` ``None``: no such task, so none)."""
        return None if tip is None else self.get(self.key(tip, budget), moment, packet=packet)

    @staticmethod
    def key(tip: bytes, budget: Iterable[Any]) -> str:
        """The key of a task tip under a budget, for this version's rendering."""
        parts = [_FORMAT, __version__, code_fingerprint(_RENDERING_MODULES, _HERE)]
        # neutralise reads text through Python's Unicode tables
        parts += [unicodedata.unidata_version, tip.decode(), *budget]
        if getattr(budget, "outline", False):
            from .outline import grammars  # what outlines come out depends on them

            parts.append(grammars())
        return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:40])

    def get(self, key: str, moment: float, *, packet: bool = True) -> CachedPrompt | None:
        """The prompt stored under ``key`` if it holds at ``moment``, else ``None``;
        without ``packet``, the packet is not read (a hit that only prints)."""
        try:
            with open(self._path(key), "rb") as fh:
                if not private_file(os.fstat(fh.fileno())):
                    return None  # printed unchecked: only what this user wrote
                head = fh.read(len(_MAGIC) + 4)
                if len(head) != len(_MAGIC) + 4 or not head.startswith(_MAGIC):
                    return None
                header = _decoder.decode(fh.read(int.from_bytes(head[len(_MAGIC) :], "big")))
                if header.format != _FORMAT or header.key != key:
                    return None
                if header.since is not None and moment < header.since:
                    return None
                if header.until is not None and moment >= header.until:
                    return None
                if packet and header.packet_bytes < 0:
                    return None  # written without its packet
                prompt = fh.read(header.prompt_bytes)
                json = fh.read(header.packet_bytes) if packet else None
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None
        if len(prompt) != header.prompt_bytes or (
            json is not None and len(json) != header.packet_bytes
        ):
            return None  # cut short
        return CachedPrompt(header.fields, prompt, json)

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
        prompt: Iterable[bytes],
        prompt_bytes: int,
        packet: Any,
    ) -> None:
        times = list(expiries)
        since = max((t for t in times if t <= moment), default=None)
        until = min((t for t in times if t > moment), default=None)
        json = b"" if packet is None else msgspec.json.encode(packet)
        if prompt_bytes + len(json) > MAX_TOTAL_BYTES:
            return
        try:
            header = _encoder.encode(
                _Header(
                    _FORMAT,
                    key,
                    since,
                    until,
                    fields,
                    prompt_bytes,
                    -1 if packet is None else len(json),
                )
            )
        except (OverflowError, TypeError):
            return  # a figure msgpack cannot hold: the prompt is simply not kept

        def chunks() -> Iterable[bytes]:
            yield _MAGIC + len(header).to_bytes(4, "big") + header
            written = 0
            for chunk in prompt:
                written += len(chunk)
                yield chunk
            if written != prompt_bytes:  # never stored: a hit would print it cut
                raise OSError(f"prompt cache: {written} bytes written, {prompt_bytes} announced")
            yield json

        # The cache only saves time: failing to write it is not an error.
        try:
            self.repo.replace_file(self._path(key), chunks(), private=True)
        except OSError:
            return
        self._prune()

    def _prune(self) -> None:
        """Remove the oldest entries beyond the count and size limits."""
        try:
            names = [n for n in os.listdir(self.directory) if not n.endswith(".tmp")]
        except OSError:
            return
        found = []
        for name in names:
            with contextlib.suppress(OSError):
                stat = os.stat(os.path.join(self.directory, name))
                found.append((stat.st_mtime_ns, stat.st_size, name))
        found.sort(reverse=True)
        total = 0
        for index, (_mtime, size, name) in enumerate(found):
            total += size
            if index >= MAX_ENTRIES or total > MAX_TOTAL_BYTES:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, name))
