"""What the command line says and writes that needs no click.

Shared by the click commands (``git_hydrate.cli``) and whatever prints a
prompt without loading click (the prompt cache's fast path, issue 19), so
that both print the same bytes from the same code: the byte-size option
values, where a prompt is written (:class:`Deferred`), its summary line, and
an ``OSError`` as one line. Importing this module costs nothing beyond the
settings' integer parser.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any, BinaryIO

from .settings import parse_int

__all__ = [
    "Deferred",
    "byte_size",
    "os_error_line",
    "silence_stdout",
    "summary_line",
    "thousands",
]


def byte_size(value: str) -> int:
    """A ``--max-bytes`` value: a positive number of bytes, with git's ``k``/``m``/``g``
    suffixes (``64k``), read as ``git config --type=int`` reads integers.

    Raises:
        ValueError: not such a number; the message says so, naming ``value``.
    """
    number = parse_int(value.strip())
    if number is None:
        raise ValueError(f"{value!r} is not a number of bytes (such as 20000, 64k, 1m)")
    if number < 1:
        raise ValueError(f"{value!r} must be at least 1")
    return number


class Deferred:
    """Where a prompt is written piece by piece: ``output`` (``None`` or ``-``:
    standard output). Nothing is opened before the first write, and the prompt
    is built whole before it is written, so a prompt that fails to build leaves
    no file behind and an existing one as it was. The file is written in place,
    as ``>`` would: through a symlink, keeping its mode and hard links, and
    ``/dev/stdout`` or a pipe work."""

    def __init__(self, output: str | None) -> None:
        self.output = None if output == "-" else output
        self._fh: BinaryIO | None = None

    def __enter__(self) -> Deferred:
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.close()

    def _open(self) -> BinaryIO:
        if self._fh is None:
            if self.output is None:
                sys.stdout.flush()
                self._fh = sys.stdout.buffer
            else:
                self._fh = open(self.output, "wb")  # noqa: SIM115 (closed by close())
        return self._fh

    def write(self, data: bytes) -> int:
        self._open().write(data)
        return len(data)

    def close(self) -> None:
        """Flush standard output, or close the file."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        if fh is sys.stdout.buffer:
            fh.flush()
        else:
            fh.close()


def thousands(number: int) -> str:
    """``1,234,567``: how the summary and listings show a figure."""
    return f"{number:,}"


def summary_line(task_id: str, result: Mapping[str, Any]) -> str:
    """The one line ``prompt`` and the pre-push hook say about a prompt's budget.

    ``kept N of M attachments``; the prompt's bytes (and tokens) of the budget;
    omitted by reason; shrunk; about how many bytes would hold everything.
    Every figure is one of the result's own fields.
    """
    omitted = result["omitted"]
    shrunk = result.get("shrunk") or []
    kept = f"kept {result['kept']} of {result['attachments']} attachments"
    if shrunk:
        kept += f" ({len(shrunk)} as outlines)"
    used = [f"{thousands(result['prompt_bytes'])}"]
    if result.get("max_bytes") is not None:
        used[0] += f" of {thousands(result['max_bytes'])}"
    used[0] += " bytes"
    if result.get("token_encoding"):
        tokens = f"{thousands(result['token_count'])}"
        if result.get("max_tokens") is not None:
            tokens += f" of {thousands(result['max_tokens'])}"
        used.append(f"{tokens} tokens ({result['token_encoding']})")
    parts = [kept, ", ".join(used)]
    if omitted:
        reasons = Counter(str(item["reason"]) for item in omitted)
        by_reason = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
        parts.append(f"omitted {len(omitted)} ({by_reason})")
    else:
        parts.append("omitted 0")
    parts.append(f"shrunk {len(shrunk)}")
    if shrunk or any(item["reason"] != "expired" for item in omitted):
        parts.append(f"everything would fit in about {thousands(result['needed_bytes'])} bytes")
    label = "warning" if omitted else "prompt"
    return f"{label}: {task_id}: " + "; ".join(parts)


def os_error_line(exc: OSError) -> str:
    """The one line for an ``OSError`` outside the library's own checks."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"error: {exc.strerror or exc}{where}"


def silence_stdout() -> None:
    """Point standard output at the null device: its reader went away (``| head``),
    and flushing at exit must not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
