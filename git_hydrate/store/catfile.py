"""The one ``git cat-file --batch`` reader: pipelined reads, read-ahead, streams.

One long-lived process per repository answers every object read (task
states, bodies, trees); :meth:`CatFile.send` lets git work on the next reads
while the caller processes the current ones, and :func:`stream_objects`
streams many blobs (add-tree's first read of a tree) with a feeding thread so
neither pipe can fill up.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from ..errors import CorruptData, NotARepository

__all__ = ["CatFile", "Prefetch", "stream_objects"]


def _start(
    argv: list[str], cwd: str | None, env: Mapping[str, str] | None, stderr: Any
) -> subprocess.Popen[bytes]:
    """A ``git cat-file --batch`` process with pipes for requests and answers."""
    try:
        return subprocess.Popen(
            [*argv, "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        raise NotARepository("the git binary was not found on PATH") from None


class Prefetch:
    """Reads sent to ``git cat-file`` whose answers are collected later
    (:meth:`Repository.prefetch`), so that git works while the caller does."""

    def __init__(self, owner: CatFile, count: int) -> None:
        self._owner = owner
        self.count = count
        self.answers: list[tuple[bytes, bytes] | None] | None = None
        #: Why the answers could not be read (the process died on one of them).
        self.error: CorruptData | None = None

    def collect(self) -> list[tuple[bytes, bytes] | None]:
        """The answers, in the order of the specs sent (waiting for git if need be).

        Raises:
            CorruptData: git stopped while answering this prefetch or an earlier one.
        """
        if self.answers is None and self.error is None:
            self._owner.settle()
        if self.answers is None:
            raise self.error or self._owner.failure()
        return self.answers


class CatFile:
    """One long-lived ``git cat-file --batch`` process for reading objects.

    Its standard error goes to a temporary file, not to the user's terminal:
    when git stops (a damaged object), the error raised carries git's reason
    in one line, instead of git's own lines printed beside it.
    """

    #: How far git may run ahead of the reader: the capacity asked for its
    #: output pipe (Linux; elsewhere the system's default, often 64 KiB).
    PIPE_BYTES: Final = 1 << 20

    def __init__(self, git_dir: str, cwd: str | None, env: Mapping[str, str] | None) -> None:
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        try:
            self._proc = _start(["git", "--git-dir", git_dir], cwd, env, self._errors)
        except NotARepository:
            self._errors.close()
            raise
        self.broken = False
        self._pending: list[Prefetch] = []
        set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
        if set_pipe_size is not None and self._proc.stdout is not None:
            with contextlib.suppress(OSError):  # over the system's limit: keep the default
                fcntl.fcntl(self._proc.stdout.fileno(), set_pipe_size, self.PIPE_BYTES)

    def failure(self) -> CorruptData:
        """The error to raise once git has stopped: its last line on stderr, if any."""
        reason = ""
        with contextlib.suppress(OSError, ValueError):
            self._errors.seek(0)
            lines = self._errors.read()[-4096:].decode("utf-8", "replace").strip().splitlines()
            reason = lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else ""
        return CorruptData(
            f"git cat-file stopped: {reason}" if reason else "git cat-file stopped unexpectedly"
        )

    def _stop(self) -> None:
        self.broken = True
        self._proc.kill()

    def send(self, specs: list[bytes]) -> Prefetch:
        """Ask for ``specs`` now; read the answers with :meth:`Prefetch.collect`.

        The requests of one prefetch must fit the input pipe (a few hundred
        object ids), since git stops reading them while its output is full;
        a second prefetch first collects the answers of the one before.
        """
        assert self._proc.stdin is not None
        # One prefetch outstanding at most: requests of several could fill the
        # input pipe while git waits for its full output pipe to be read.
        self.settle()
        if self.broken:
            raise self.failure()
        request = b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in specs)
        try:
            self._proc.stdin.write(request)
            self._proc.stdin.flush()
        except BrokenPipeError:
            self._stop()
            raise self.failure() from None
        except BaseException:
            self._stop()
            raise
        pending = Prefetch(self, len(specs))
        self._pending.append(pending)
        return pending

    def settle(self) -> None:
        """Read the answers of every prefetch sent, in order, into each one.

        When git stops on one of them, the error is kept in that prefetch and
        the ones after it (:meth:`Prefetch.collect` raises it), not raised
        here: the read that happens to come next is not what failed.
        """
        try:
            while self._pending:
                pending = self._pending[0]
                pending.answers = self._answers(pending.count)
                self._pending.pop(0)
        except CorruptData as exc:
            self._stop()
            for pending in self._pending:
                pending.error = exc
            self._pending.clear()
        except BaseException:
            self._stop()
            self._pending.clear()
            raise

    def get(self, spec: bytes) -> tuple[bytes, bytes] | None:
        return self.get_many([spec])[0]

    def get_many(self, specs: list[bytes], chunk: int = 64) -> list[tuple[bytes, bytes] | None]:
        """Like :meth:`get` for many objects, pipelined in chunks.

        A chunk's requests (at most ~5 KB, under any pipe buffer) are all
        written before its answers are read, so neither side can block the
        other. Anything going wrong mid-chunk (even an interrupt) leaves
        answers unread, so the process is then stopped for good rather than
        answer later requests with earlier objects. (The caller settles
        earlier prefetches first, see :meth:`Repository.read_many`.)
        """
        assert self._proc.stdin is not None
        self._ready()
        results: list[tuple[bytes, bytes] | None] = []
        try:
            for start in range(0, len(specs), chunk):
                batch = specs[start : start + chunk]
                request = b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in batch)
                try:
                    self._proc.stdin.write(request)
                    self._proc.stdin.flush()
                except BrokenPipeError:
                    raise self.failure() from None
                results += self._answers(len(batch))
        except BaseException:
            self._stop()
            raise
        return results

    def digest(
        self, spec: bytes, limit: int, chunk: int = 1 << 20
    ) -> tuple[bytes, int, str | None, bool] | None:
        """``(type, size, sha256 hex, is UTF-8)`` of an object, read ``chunk``
        bytes at a time (never whole in memory); ``None`` when it is missing.

        An object over ``limit`` bytes is not read: its sha256 is ``None`` and
        this process, whose answer is left unread, is stopped (the next read
        starts another).
        """
        assert self._proc.stdout is not None
        self._ready()
        out = self._proc.stdout
        try:
            self._request(spec)
            header = self._header()
            if header is None:
                return None
            _oid, kind, size = header
            if size > limit:
                self._stop()
                return kind, size, None, False
            sha256 = hashlib.sha256()
            decoder = codecs.getincrementaldecoder("utf-8")()
            utf8 = True
            left = size
            while left:
                data = out.read(min(chunk, left))
                if not data:
                    self._proc.wait()
                    raise self.failure()
                sha256.update(data)
                if utf8:
                    try:
                        decoder.decode(data)
                    except UnicodeDecodeError:
                        utf8 = False
                left -= len(data)
            out.read(1)
            if utf8:
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    utf8 = False
            return kind, size, sha256.hexdigest(), utf8
        except BaseException:
            self._stop()
            raise

    def _answers(self, count: int) -> list[tuple[bytes, bytes] | None]:
        """``(type, content)`` or ``None`` (missing) of the next ``count`` answers, as
        :meth:`_named_answer` reads one (inlined: a pull of thousands of tasks reads
        tens of thousands of small objects)."""
        assert self._proc.stdout is not None
        readline, read = self._proc.stdout.readline, self._proc.stdout.read
        answers: list[tuple[bytes, bytes] | None] = []
        for _ in range(count):
            header = readline()
            if not header:
                self._proc.wait()  # so that its last words are in the errors file
                raise self.failure()
            parts = header.split()
            if len(parts) != 3 or parts[2] in (b"missing", b"ambiguous"):
                answers.append(None)
                continue
            size = int(parts[2])
            data = read(size)
            read(1)
            if len(data) != size:
                self._proc.wait()
                raise self.failure()
            answers.append((parts[1], data))
        return answers

    def _header(self) -> tuple[bytes, bytes, int] | None:
        """``(oid, type, size)`` of the next answer, or ``None``: missing (or
        ambiguous; git then repeats the whole request line, spaces and all)."""
        assert self._proc.stdout is not None
        header = self._proc.stdout.readline()
        if not header:
            self._proc.wait()  # so that its last words are in the errors file
            raise self.failure()
        parts = header.split()
        if len(parts) != 3 or parts[-1] in (b"missing", b"ambiguous"):
            return None
        return parts[0], parts[1], int(parts[2])

    def _named_answer(self) -> tuple[bytes, bytes, bytes] | None:
        """``(oid, type, content)`` of the next answer, or ``None`` (missing)."""
        assert self._proc.stdout is not None
        header = self._header()
        if header is None:
            return None
        oid, kind, size = header
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)
        if len(data) != size:
            self._proc.wait()
            raise self.failure()
        return oid, kind, data

    def _ready(self) -> None:
        """Settle earlier prefetches (their answers come first on the pipe); raise
        the failure if git has stopped."""
        if self.broken:
            raise self.failure()
        self.settle()
        if self.broken:
            raise self.failure()

    def _request(self, spec: bytes) -> None:
        """Send one request line (a spec holding a line break asks for nothing)."""
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write((b"" if b"\n" in spec else spec) + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise self.failure() from None

    def resolve(self, spec: bytes) -> tuple[bytes, bytes] | None:
        """``(oid, type)`` of the object ``spec`` names (any revision git's object
        name syntax takes, as ``git rev-parse`` would read it), or ``None``."""
        self._ready()
        try:
            self._request(spec)
            found = self._named_answer()
        except BaseException:
            self._stop()
            raise
        return None if found is None else (found[0], found[1])

    def close(self) -> None:
        self.broken = True  # a prefetch collected after this says so, clearly
        self._pending.clear()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a killed process: nothing to flush to
                    stream.close()
        self._proc.wait()
        self._errors.close()


def stream_objects(
    argv: list[str],
    cwd: str | None,
    env: Mapping[str, str] | None,
    oids: list[str],
    kind: bytes = b"blob",
) -> Iterator[tuple[str, bytes]]:
    """Stream the contents of ``oids`` (objects of ``kind``) through one cat-file process.

    A thread feeds the requests while the answers are read, so any number of
    objects flows without either pipe filling up; one process for all of
    them is several times faster than reading them one by one.

    Args:
        argv: The ``git`` command prefix (``["git", "--git-dir", ...]``).

    Raises:
        CorruptData: an object is missing, of another kind, or cut short.
    """
    if not oids:
        return
    proc = _start(argv, cwd, env, subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        try:
            stdin.write(b"".join(oid.encode("ascii") + b"\n" for oid in oids))
            stdin.close()
        except OSError:  # the reader stopped early
            pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = proc.stdout
    try:
        for oid in oids:
            header = out.readline()
            fields = header.split()
            if len(fields) != 3 or fields[1] != kind:
                raise CorruptData(
                    f"{kind.decode()} {oid} is missing or not a {kind.decode()} "
                    f"({header.strip()!r})"
                )
            size = int(fields[2])
            data = out.read(size)
            out.read(1)  # the newline after each object
            if len(data) != size:
                raise CorruptData(f"{kind.decode()} {oid} was cut short by git cat-file")
            yield oid, data
    finally:
        out.close()
        writer.join()
        proc.wait()
