"""The client's lines: a line that is no JSON-RPC message gets the error JSON-RPC 2.0 says.

The SDK's stdio transport drops a line it cannot read as a message (it logs it
at debug level only): a client whose request has a typo waits for an answer
for ever. :class:`Lines` reads standard input for the transport and answers
such a line itself, then goes on: one that is not JSON with a parse error
(-32700, id null), one that is JSON but no JSON-RPC 2.0 message (a batch, a
request without a method, ``"jsonrpc": "1.0"``, params that are no object)
with an invalid request (-32600, with the request's id when it has a usable
one, else null), and so is JSON whose string escapes a lone surrogate
(``"\\ud800"``: no Unicode text; the strict reader takes it for no JSON). JSON
with a number past 4,300 digits, which neither reader converts, is read again
with that number left as it is: a request with one in its params gets invalid
params (-32602) with its id, one whose id is that number an invalid request. A
line with bytes that are no UTF-8, which the SDK reads as U+FFFD (a call would
then store text its client never sent), is an invalid request too. A
blank line is no message, and is skipped. Lines are judged by the SDK's own
reading of a message, so that a line answered here is one it would have
dropped, and only those.
Only :mod:`.server` uses this, when ``git hydrate mcp`` runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from typing import IO, Any, Final

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "PARSE_ERROR", "Lines", "claimed_stdin", "refusal"]

#: JSON-RPC 2.0's codes and messages for a line that is not JSON, and for JSON
#: that is not a request (https://www.jsonrpc.org/specification#error_object).
PARSE_ERROR: Final = (-32700, "Parse error: the line is not JSON")
INVALID_REQUEST: Final = (-32600, "Invalid Request: not a JSON-RPC 2.0 message")
#: JSON-RPC 2.0's code for a request whose params cannot be taken.
INVALID_PARAMS: Final = (-32602, "Invalid params")


@contextlib.contextmanager
def claimed_stdin() -> Iterator[IO[bytes]]:
    """Standard input's stream, on a descriptor of its own; meanwhile descriptor 0
    is the null device, so that git and what it starts read nothing meant for the
    server (as the SDK's transport does when it reads standard input itself)."""
    import fcntl
    import sys

    try:
        wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:  # (no standard input: nothing to read)
        yield sys.stdin.buffer if sys.stdin is not None else io.BytesIO()
        return
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    try:
        # (never closed: a reader's thread may still wait on it as the server ends)
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)


class Lines:
    """The lines of ``stream`` that are messages, for the SDK's stdio transport
    (as its ``stdin``); every other line answered through :meth:`answer_to`'s stream."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._answers: Any = None  # (the transport's stream to the client)
        self._ready: Any = None  # (an anyio.Event, set once that stream is known)

    def answer_to(self, write_stream: Any) -> None:
        """Send the answers to the lines that are not messages to ``write_stream``."""
        self._answers = write_stream
        if self._ready is not None:
            self._ready.set()

    async def _answer(self, error: Any) -> None:
        import anyio
        from mcp.shared.message import SessionMessage

        if self._answers is None:
            self._ready = anyio.Event()
            await self._ready.wait()
        await self._answers.send(SessionMessage(error))

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        import anyio

        # (the SDK reads with errors="replace": a byte that is no UTF-8 becomes U+FFFD
        # and the call goes on with text the client never sent; kept here as a lone
        # surrogate, such a line is refused by refusal())
        text = io.TextIOWrapper(self._stream, encoding="utf-8", errors="surrogateescape")
        async for line in anyio.wrap_file(text):
            if not line.strip():
                continue
            error = refusal(line)
            if error is None:
                yield line
            else:
                await self._answer(error)


def refusal(line: str) -> Any | None:
    """The JSON-RPC error that answers ``line``; ``None`` if it is a message."""
    import mcp_types as types

    if not line.isascii() and _UNDECODED.search(line):
        return _not_utf8(line)
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # (pydantic's ValidationError)
        errors = exc.errors() if hasattr(exc, "errors") else []
        unread = any(error.get("type") == "json_invalid" for error in errors)
        said = " ".join(str(error.get("msg", "")) for error in errors)
    else:
        if not _bad_id(line):
            return None
        # (a request whose id is null, a fraction, a boolean or an object: the SDK
        # reads it as a notification, which nobody answers)
        error = types.ErrorData(code=INVALID_REQUEST[0], message=_BAD_ID)
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
    request_id = None if unread and not _is_json(line) else _request_id(line)
    code, message = _judged(line, unread, said, request_id)
    if code == PARSE_ERROR[0]:
        request_id = None
    error = types.ErrorData(code=code, message=message)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _not_utf8(line: str) -> Any:
    """The error that answers ``line``, which holds bytes that are no UTF-8 (JSON is
    UTF-8, RFC 8259 8.1): an invalid request with the request's id, or a parse
    error (id null) when the rest is no JSON either."""
    import mcp_types as types

    if _is_json(line):
        code, said, request_id = INVALID_REQUEST[0], "Invalid Request", _request_id(line)
    else:
        code, said, request_id = PARSE_ERROR[0], "Parse error", None
    error = types.ErrorData(code=code, message=f"{said}: {_NOT_UTF8}")
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _judged(line: str, unread: bool, said: str, request_id: str | int | None) -> tuple[int, str]:
    """The code and message that answer ``line``, which the SDK does not read as a
    message (``unread``: not even as JSON; ``said``: why)."""
    deep = "recursion limit" in said
    if unread and _is_json(line):
        # (JSON a strict reader refuses: nested deeper than it reads, a number
        # longer than it reads, or a string escapes a lone surrogate, "\ud800",
        # which is no Unicode text; the request's id lets the client know which)
        if "number out of range" in said:
            if request_id is not None:  # (the long number is in the params)
                return INVALID_PARAMS[0], f"{INVALID_PARAMS[1]}: {_LONG_NUMBER}"
            return INVALID_REQUEST[0], f"Invalid Request: {_LONG_NUMBER}"
        if deep:
            return INVALID_REQUEST[0], "Invalid Request: nested too deeply"
        return INVALID_REQUEST[0], "Invalid Request: a string holds a lone surrogate"
    if unread and deep:
        return PARSE_ERROR[0], "Parse error: nested too deeply"
    return PARSE_ERROR if unread else INVALID_REQUEST


#: Why a line with a number the SDK's reader refuses (past about 4,300 digits) is
#: not read: Python's reader refuses such a whole number too, but the rest of the
#: line, its id included, is JSON.
_LONG_NUMBER: Final = "a number of more than 4,300 digits"


class _TooLong:
    """A whole number longer than Python reads (``sys.get_int_max_str_digits``)."""


def _whole(digits: str) -> int | _TooLong:
    try:
        return int(digits)
    except ValueError:
        return _TooLong()


def _read(line: str) -> Any:
    """``line`` read as JSON, a whole number too long to read kept as a :class:`_TooLong`.

    Raises:
        ValueError, RecursionError: no JSON, or nested too deeply.
    """
    return json.loads(line, parse_int=_whole)


#: The bytes of a line that are no UTF-8, as ``surrogateescape`` reads them.
_UNDECODED: Final = re.compile("[\udc80-\udcff]")
_NOT_UTF8: Final = "the line is not UTF-8"
#: What answers a request whose id JSON-RPC and MCP do not allow.
_BAD_ID: Final = "Invalid Request: an id is a string or a whole number"


def _bad_id(line: str) -> bool:
    """Whether ``line`` (a message the SDK reads) names a method and an id that is
    neither a string nor a whole number (the SDK takes it for a notification)."""
    if '"id"' not in line:
        return False  # (most: a request's id as it should be, or a notification)
    try:
        value = _read(line)
    except (ValueError, RecursionError):
        return False
    if not isinstance(value, dict) or "method" not in value or "id" not in value:
        return False
    found = value["id"]
    return isinstance(found, bool) or not isinstance(found, str | int)


def _is_json(line: str) -> bool:
    """Whether Python's JSON reader, which takes escaped lone surrogates, reads ``line``."""
    try:
        _read(line)
    except (ValueError, RecursionError):  # (too deep for it too)
        return False
    return True


def _request_id(line: str) -> str | int | None:
    """The id of what reads as a request (it names a method), if it is one JSON-RPC
    allows and an answer can write (no lone surrogate); else ``None``. (The id of
    what reads as a response is not sent back: the client would take the error
    for the answer to its own request of that id.)"""
    try:
        value = _read(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "method" not in value:
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    if isinstance(found, str) and not _unicode(found):
        return None  # (a byte that is no UTF-8, a lone surrogate: it cannot be sent back)
    return found


def _unicode(text: str) -> bool:
    """Whether ``text`` is Unicode text (no lone surrogate), as an answer is written."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
