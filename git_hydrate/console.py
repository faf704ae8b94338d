"""What the command line says and writes that needs no click.

Shared by the click commands (``git_hydrate.cli``) and the prompt cache's
fast path (``git_hydrate.quick``), so that both print the same bytes from the
same code: the byte-size option values, where a prompt is written
(:class:`Deferred`), its summary line, and an ``OSError`` as one line.
Importing this module costs nothing beyond the settings' integer parser.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import sys
from collections import Counter

from .chars import on_one_line
from .errors import EXIT_BROKEN_PIPE
from .pack.budget import human_size, parse_size

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import IO, Any, BinaryIO, Final, NoReturn

__all__ = [
    "Deferred",
    "byte_size",
    "is_terminal",
    "leave",
    "os_error_line",
    "refreshed_line",
    "shown",
    "shown_block",
    "silence_stdout",
    "summary_line",
    "thousands",
    "token_count",
]

#: What a buffered copy moves at a time.
_CHUNK: Final = 1 << 20
#: Refusals of ``copy_file_range``/``sendfile`` that mean "not between these
#: two": try the next way (a file opened to append, another file system, a
#: terminal, a kernel without the call).
_NOT_HERE: Final = frozenset(
    {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EBADF}
)


def byte_size(value: str) -> int:
    """A ``--max-bytes`` value: a positive number of bytes, with git's ``k``/``m``/``g``
    suffixes (``64k``), optionally followed by ``b`` or ``ib`` (``64KiB``), 1024-based
    (see :func:`git_hydrate.pack.budget.parse_size`).

    Raises:
        ValueError: not such a number; the message says so, naming ``value``.
    """
    return parse_size(value, "bytes")


def token_count(value: str, least: int = 1, most: int = 2**63 - 1) -> int:
    """A ``--max-tokens`` value: a number of tokens (``least`` to ``most``), with ``k``/``m``/``g``
    (``16k``: 16,384, 1024-based as in git; see :func:`git_hydrate.pack.budget.parse_size`).

    Raises:
        ValueError: not such a number; the message says so, naming ``value``.
    """
    return parse_size(value, "tokens", least, most)


class Deferred:
    """Where a prompt is written piece by piece: ``output`` (``None`` or ``-``:
    standard output). Nothing is opened before the first write, and the prompt
    is built whole before it is written, so a prompt that fails to build leaves
    no file behind and an existing one as it was. The file is written in place,
    as ``>`` would: through a symlink, keeping its mode and hard links, and
    ``/dev/stdout`` or a pipe work.

    The bytes are written as they are, but to a terminal: there, what a
    repository's text holds must not drive it (an escape sequence that clears
    the screen, sets the title or writes the clipboard), so every character
    :func:`shown_block` escapes is shown as ``\\xNN`` or ``\\uNNNN``."""

    def __init__(self, output: str | None) -> None:
        self.output = None if output == "-" else output
        self._fh: BinaryIO | None = None
        self._terminal: codecs.IncrementalDecoder | None = None

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
                self._fh = _opened(self.output)
            if is_terminal(self._fh):  # (standard output, or -o /dev/tty)
                self._terminal = codecs.getincrementaldecoder("utf-8")("replace")
        return self._fh

    def write(self, data: bytes) -> int:
        fh = self._open()
        if self._terminal is None:
            try:
                fd = fh.fileno()
            except (AttributeError, OSError, ValueError):  # (a stream without a file)
                fh.write(data)
            else:
                fh.flush()
                write_whole(fd, data)
        else:  # (a character may be cut between two writes: the decoder keeps it)
            fh.write(shown_block(self._terminal.decode(data)).encode("utf-8"))
        return len(data)

    def copy_from(self, source: BinaryIO, offset: int, count: int) -> None:
        """Write ``count`` bytes of the file ``source`` from ``offset`` on: by the
        kernel (``copy_file_range`` to a regular file, which some file systems
        answer with a reflink; else ``sendfile``) where the destination takes
        it, otherwise through a buffer (a terminal, a file opened to append, a
        stream without a file descriptor).

        Raises:
            OSError: the destination refused, or ``source`` ended early (then
                part of it may have been written).
        """
        fh = self._open()
        fh.flush()
        try:
            target = fh.fileno() if self._terminal is None else -1
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation too
            target = -1
        done = _kernel_copy(target, source.fileno(), offset, count) if target >= 0 else 0
        source.seek(offset + done)
        while done < count:
            chunk = source.read(min(_CHUNK, count - done))
            if not chunk:
                raise OSError(errno.EIO, f"{count - done} bytes missing at the end of the source")
            self.write(chunk)
            done += len(chunk)

    def close(self) -> None:
        """Flush standard output, or close the file."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        if self._terminal is not None:
            fh.write(shown_block(self._terminal.decode(b"", final=True)).encode("utf-8"))
            self._terminal = None
        if fh is sys.stdout.buffer:
            fh.flush()
        else:
            fh.close()


def write_whole(fd: int, data: bytes) -> None:
    """Write ``data`` to ``fd``, a write at a time until all of it is written.

    Python's buffered writer hands a large block to one write, and when the
    reader of a pipe goes away while that write waits, it keeps the part the pipe
    took and drops the rest without a word (``show --attachment ID | head`` ended
    0). A short write here is followed by another, which raises
    ``BrokenPipeError`` (the command then ends as git does, status 141)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _opened(output: str) -> BinaryIO:
    """``output`` opened to be written, or an ``OSError`` that says it is the file
    of ``-o`` that cannot be (not a bare "No such file or directory (out.md)", read
    as if a file the command reads were missing)."""
    try:
        return open(output, "wb")  # (closed by Deferred.close())
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OSError(exc.errno, f"cannot write {output}: {why}") from None


def is_terminal(stream: IO[Any]) -> bool:
    """Whether ``stream`` is a terminal (``False`` for one without a file, or closed)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stream without a file, or closed
        return False


def _kernel_copy(target: int, source: int, offset: int, count: int) -> int:
    """How many bytes the kernel copied from ``source`` (at ``offset``) to ``target``
    (at its position): ``copy_file_range`` first to a regular file, then
    ``sendfile``, each until done or until it copies nothing more (the end of
    ``source``, or a file system that answers 0). Fewer than ``count`` (0 when
    neither works between these two): the caller copies the rest itself."""
    ways = [_send]
    if hasattr(os, "copy_file_range") and stat.S_ISREG(os.fstat(target).st_mode):
        ways.insert(0, _copy_range)
    done = 0
    for way in ways:
        try:
            while done < count:
                moved = way(target, source, offset + done, count - done)
                if moved == 0:
                    break
                done += moved
        except OSError as exc:
            if done or exc.errno not in _NOT_HERE:
                raise
        if done == count:
            break
    return done


def _copy_range(target: int, source: int, offset: int, count: int) -> int:
    return os.copy_file_range(source, target, count, offset)


def _send(target: int, source: int, offset: int, count: int) -> int:
    return os.sendfile(target, source, offset, count)


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
        kept += " (1 as an outline)" if len(shrunk) == 1 else f" ({len(shrunk)} as outlines)"
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
        needed = f"{thousands(result['needed_bytes'])} bytes"
        if result.get("needed_tokens") is not None:
            needed += f", {thousands(result['needed_tokens'])} tokens"
        parts.append(f"everything would fit in about {needed}")
    for item in result.get("flagged") or ():
        # a file the task names is never left out, shrunk or missing silently
        parts.append(f"{item['named']} {shown(item['source'])} {_flag(item, result)}")
    label = "warning" if omitted or result.get("flagged") else "prompt"
    return f"{label}: {task_id}: " + "; ".join(parts)


def _flag(item: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """What the summary line says of a file the task names that the prompt does
    not hold whole: ``kept as outline, 69 KiB > budget`` (larger than the whole
    byte budget), ``left out, 25 KiB > room left`` (what ranked above it took the
    rest), ``not attached (too_large, 305 KiB)``."""
    if item["kept"] != "unattached":
        what = "kept as outline" if item["kept"] == "outline" else "left out"
        budget = result.get("max_bytes")
        over = "budget" if budget is not None and item["size"] > budget else "room left"
        return f"{what}, {human_size(item['size'])} > {over}"
    reason = item.get("reason")
    if not reason:
        return "not attached (no add-tree run read it)"
    if reason == "missing" or item.get("size") is None:
        return f"not attached ({reason})"
    return f"not attached ({reason}, {human_size(item['size'])})"


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    # (past U+FFFF in eight digits, as Python writes it: "\\u1fae8" reads as U+1FAE, "8")
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shown(value: Any) -> str:
    """A one-line field (title, id, source label, station...) safe for a terminal.

    Fields can come from a remote: a control character (ESC starting a CSI or
    OSC sequence, another C0 or C1 control, DEL, a bidi or zero-width
    character) would reach the user's terminal and could rewrite what it
    shows. Every character that is not printable is escaped as ``\\xNN`` or
    ``\\uNNNN``; JSON output never goes through here.
    """
    text = str(value)
    if text.isprintable():
        return text
    # the emoji joiner, the soft hyphen and the space separators (a no-break space)
    # are kept, as the text policy keeps them
    return "".join(ch if on_one_line(ch) else _escaped(ch) for ch in text)


def shown_block(value: Any) -> str:
    """Like :func:`shown`, for a text of several lines: line feeds and tabs are kept.
    (Line by line: a line that is all printable, most of them, is kept at C speed.)"""
    text = str(value)
    if text.isprintable():
        return text
    return "\n".join(
        line
        if line.isprintable()
        else "".join(ch if on_one_line(ch) or ch == "\t" else _escaped(ch) for ch in line)
        for line in text.split("\n")
    )


def refreshed_line(task_id: str, done: Mapping[str, Any]) -> str:
    """What ``prompt --refresh`` says of one recorded add-tree run."""
    if "error" in done:
        return f"warning: {shown(task_id)}: not refreshed: {shown(done['error'])}"
    if done.get("recognised"):
        what = f"unchanged {done['unchanged']} (recognised: same commit, nothing listed)"
    else:
        reranked = f"reranked {done['reranked']}, " if done.get("reranked") else ""
        what = (
            f"added {done['added']}, updated {done['updated']}, {reranked}"
            f"unchanged {done['unchanged']}, removed {done['removed']}"
        )
    return f"refreshed {shown(task_id)} from {shown(done['from'])}: {what}"


def os_error_line(exc: OSError) -> str:
    """The one line for an ``OSError`` outside the library's own checks."""
    where = f" ({exc.filename})" if exc.filename else ""
    return f"error: {exc.strerror or exc}{where}"


def leave(status: int) -> NoReturn:
    """Exit with ``status``, as ``git-hydrate`` does (never returns). For
    ``EXIT_BROKEN_PIPE`` — the reader of standard output went away, here or in
    flushing what was still buffered — the process ends as git's does then:
    killed by SIGPIPE, saying nothing (a shell reports 141); where there is no
    SIGPIPE, exit status 141. Called once every ``with`` and ``finally`` has run."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
        status = EXIT_BROKEN_PIPE
    except (OSError, ValueError):
        pass  # (the interpreter's own flush at exit says nothing of these either)
    if status == EXIT_BROKEN_PIPE:
        import signal

        if hasattr(signal, "SIGPIPE"):
            try:
                if sys.stderr is not None:
                    sys.stderr.flush()
            except (OSError, ValueError):
                pass
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(status)


def silence_stdout() -> None:
    """Point standard output at the null device: its reader went away (``| head``),
    and flushing at exit must not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
