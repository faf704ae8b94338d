"""The end of the client's stream waits for the answers to what it asked.

A client that writes its requests and closes its end of standard input (a
script, a pipe: ``printf '...' | git hydrate mcp``) got no answer to the last
ones: the SDK ends the session at the end of its input and cancels the calls
still running. :class:`Draining` holds that end back until every request the
client sent has its answer (or was cancelled by the client), for at most
:data:`LINGER` seconds; :class:`Answering` notes each answer as it is sent.
Only :mod:`.server` uses these, when ``git hydrate mcp`` runs (``anyio``, of
the ``mcp`` extra, is imported then: this module is loaded without it).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Final

__all__ = ["LINGER", "Answering", "Draining", "Pending"]

#: The most seconds the end of input waits for answers still being made (a call
#: through a remote that never answers must not keep the process for ever).
LINGER: Final = 60.0


class Pending:
    """The ids of the requests read that have no answer yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self._settled: Any = None  # (an anyio.Event while the end of input waits)

    def asked(self, message: Any) -> None:
        """Note a message read from the client: a request, or a cancellation."""
        kind = type(message).__name__
        if kind == "JSONRPCRequest":
            self.ids.add(message.id)
        elif kind == "JSONRPCNotification" and message.method == "notifications/cancelled":
            params = message.params or {}
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            # (an id is a string or a whole number: a list or an object names no
            # request, and could not be looked up)
            if isinstance(cancelled, str | int) and not isinstance(cancelled, bool):
                self._answered(cancelled)

    def answered(self, message: Any) -> None:
        """Note a message sent to the client: an answer settles its request."""
        if type(message).__name__ in ("JSONRPCResponse", "JSONRPCError"):
            self._answered(message.id)

    def _answered(self, request_id: Any) -> None:
        self.ids.discard(request_id)
        if not self.ids and self._settled is not None:
            self._settled.set()

    async def settled(self) -> None:
        """Return once every request read has its answer (at most :data:`LINGER` s)."""
        import anyio

        if self.ids:
            self._settled = anyio.Event()
            with anyio.move_on_after(LINGER):
                await self._settled.wait()


class _Wrapped:
    """One of the SDK's streams, closed as it would be."""

    def __init__(self, inner: Any, pending: Pending) -> None:
        self._inner, self._pending = inner, pending

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class Draining(_Wrapped):
    """The SDK's stream of the client's messages, whose end waits for the answers."""

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._pending.settled()
            raise
        self._pending.asked(getattr(item, "message", None))
        return item

    def __aiter__(self) -> Draining:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class Answering(_Wrapped):
    """The SDK's stream of messages to the client, noting each answer sent."""

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._pending.answered(getattr(item, "message", None))
