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
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

from ..errors import CorruptData, NotARepository
from .process import nameless_file

__all__ = ["CatFile", "Prefetch", "digest_of", "stream_objects"]


#: The ``cat-file`` options of :class:`CatFile`: requests as commands, answered
#: only at each ``flush`` (git >= 2.36). git then writes its answers in a few
#: large writes instead of three small ones per object (7,000 objects: about a
#: third less CPU in git and in the reader, measured), and the reader wakes up
#: once a batch rather than once an object.
_COMMANDS: Final = ("--batch-command", "--buffer")
#: What a git without ``--batch-command`` says (a usage error, status 129).
_NO_COMMANDS: Final = b"batch-command"


def _start(
    argv: list[str],
    cwd: str | None,
    env: Mapping[str, str] | None,
    stderr: Any,
    options: tuple[str, ...] = ("--batch",),
) -> subprocess.Popen[bytes]:
    """A ``git cat-file`` process (``--batch`` unless ``options`` say otherwise)
    with pipes for requests and answers."""
    try:
        return subprocess.Popen(
            [*argv, "cat-file", *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        raise NotARepository("the git binary was not found on PATH") from None


#: Objects smaller than this are read with the newline after them in one call and
#: sliced (a pull reads thousands of small ones); larger ones are not copied.
_SMALL: Final = 1 << 16
#: Digest requests sent at once (at most ~20 KiB, under a pipe's buffer: git
#: answers them only at the ``flush`` that ends them).
_DIGEST_BATCH: Final = 256


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


def digest_of(found: tuple[bytes, bytes], limit: int) -> tuple[bytes, int, str | None, bool]:
    """What :meth:`CatFile.digest` answers, of an object already read (``found``)."""
    import hashlib  # (OpenSSL's start-up: only where a digest is made)

    kind, data = found
    if len(data) > limit:
        return kind, len(data), None, False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return kind, len(data), hashlib.sha256(data).hexdigest(), False
    return kind, len(data), hashlib.sha256(data).hexdigest(), True


class CatFile:
    """One long-lived ``git cat-file`` process for reading objects.

    It takes its requests as ``contents <spec>`` commands, each batch ended by
    ``flush`` (``--batch-command --buffer``); a git without them (before 2.36)
    stops at once with a usage error, and the requests sent are then sent
    again to ``git cat-file --batch``, which answers each line as it comes
    (``commands=False`` starts it so; ``on_unsupported`` is told).

    Its standard error goes to a temporary file, not to the user's terminal:
    when git stops (a damaged object), the error raised carries git's reason
    in one line, instead of git's own lines printed beside it.
    """

    #: How far git may run ahead of the reader: the capacity asked for its
    #: output pipe (Linux; elsewhere the system's default, often 64 KiB).
    PIPE_BYTES: Final = 1 << 20

    def __init__(
        self,
        git_dir: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        commands: bool = True,
        on_unsupported: Callable[[], None] | None = None,
    ) -> None:
        self._where = (["git", "--git-dir", git_dir], cwd, env)
        self._commands = commands
        self._on_unsupported = on_unsupported
        #: The specs asked for before git answered any (sent again to ``--batch``
        #: if git turns out not to know ``--batch-command``); ``None`` after.
        self._unanswered: list[bytes] | None = [] if commands else None
        self._errors = nameless_file("git-hydrate-cat-file-errors")  # (closed by close())
        try:
            self._proc = self._spawn()
        except NotARepository:
            self._errors.close()
            raise
        self.broken = False
        self._pending: list[Prefetch] = []

    def _spawn(self) -> subprocess.Popen[bytes]:
        argv, cwd, env = self._where
        options = _COMMANDS if self._commands else ("--batch",)
        proc = _start(argv, cwd, env, self._errors, options)
        set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
        if set_pipe_size is not None and proc.stdout is not None:
            with contextlib.suppress(OSError):  # over the system's limit: keep the default
                fcntl.fcntl(proc.stdout.fileno(), set_pipe_size, self.PIPE_BYTES)
        return proc

    def _lines(self, specs: list[bytes]) -> bytes:
        """The request lines for ``specs`` (a spec holding a line break asks for
        nothing: git answers it as missing, the empty name)."""
        if self._commands:
            lines = [b"contents " + (b"" if b"\n" in spec else spec) + b"\n" for spec in specs]
            return b"".join(lines) + b"flush\n"
        return b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in specs)

    def _write(self, specs: list[bytes]) -> None:
        """Send the requests for ``specs``.

        Raises:
            CorruptData: git has stopped.
        """
        assert self._proc.stdin is not None
        if self._unanswered is not None:
            self._unanswered += specs
        try:
            self._proc.stdin.write(self._lines(specs))
            self._proc.stdin.flush()
        except BrokenPipeError:
            if not self._fall_back():
                raise self.failure() from None

    def _fall_back(self) -> bool:
        """Whether git stopped before any answer because it lacks ``--batch-command``
        (git < 2.36); if so, ``git cat-file --batch`` now has every request sent."""
        if self._unanswered is None or not self._commands:
            return False
        if self._proc.wait() != 129:
            return False
        with contextlib.suppress(OSError, ValueError):
            self._errors.seek(0)
            said = self._errors.read()
            if _NO_COMMANDS not in said:
                return False
            self._errors.seek(0)
            self._errors.truncate()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._commands = False
        if self._on_unsupported is not None:
            self._on_unsupported()
        self._proc = self._spawn()
        asked, self._unanswered = self._unanswered, None
        if asked:
            self._write(asked)
        return True

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
        try:
            self._write(specs)
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
                self._write(batch)
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
        found: dict[bytes, tuple[bytes, int, str | None, bool] | None] = {}
        self.digest_many([spec], limit, found, chunk)
        return found[spec]

    def digest_many(
        self,
        specs: list[bytes],
        limit: int,
        found: dict[bytes, tuple[bytes, int, str | None, bool] | None],
        chunk: int = 1 << 20,
    ) -> None:
        """:meth:`digest` of each spec, into ``found``, in one stream (requests
        sent a few hundred at a time): many small bodies cost git and the reader
        a wake-up each batch, not each body. At the first object over ``limit``
        (left unread: the process is stopped) it returns; the specs after it
        are not in ``found``."""
        assert self._proc.stdout is not None
        self._ready()
        try:
            for start in range(0, len(specs), _DIGEST_BATCH):
                batch = specs[start : start + _DIGEST_BATCH]
                self._write(batch)
                for spec in batch:
                    header = self._header()
                    answer = None if header is None else self._digest_body(*header, limit, chunk)
                    found[spec] = answer
                    if answer is not None and answer[2] is None:
                        self._stop()
                        return
        except BaseException:
            self._stop()
            raise

    def _digest_body(
        self, _oid: bytes, kind: bytes, size: int, limit: int, chunk: int
    ) -> tuple[bytes, int, str | None, bool]:
        """The digest of the answer whose header was just read (see :meth:`digest`)."""
        import hashlib  # (OpenSSL's start-up: only where a digest is made)

        out = self._proc.stdout  # (after the header: a git too old for commands is replaced)
        assert out is not None
        if size > limit:
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

    def _answers(self, count: int) -> list[tuple[bytes, bytes] | None]:
        """``(type, content)`` or ``None`` (missing) of the next ``count`` answers, as
        :meth:`_named_answer` reads one (inlined: a pull of thousands of tasks reads
        tens of thousands of small objects)."""
        assert self._proc.stdout is not None
        readline, read = self._proc.stdout.readline, self._proc.stdout.read
        answers: list[tuple[bytes, bytes] | None] = []
        while len(answers) < count:
            header = readline()
            if not header:
                if not answers and self._fall_back():
                    assert self._proc.stdout is not None
                    readline, read = self._proc.stdout.readline, self._proc.stdout.read
                    continue
                self._proc.wait()  # so that its last words are in the errors file
                raise self.failure()
            parts = header.split()
            if len(parts) != 3 or parts[2] in (b"missing", b"ambiguous"):
                answers.append(None)
                continue
            size = int(parts[2])
            if size < _SMALL:
                data = read(size + 1)  # (and the newline after it: one call, not two)
                ok = len(data) == size + 1
                data = data[:size]
            else:
                data = read(size)  # (never copied: a large blob is held once)
                ok = len(data) == size and len(read(1)) == 1
            if not ok:
                self._proc.wait()
                raise self.failure()
            answers.append((parts[1], data))
        if answers:
            self._unanswered = None
        return answers

    def _header(self) -> tuple[bytes, bytes, int] | None:
        """``(oid, type, size)`` of the next answer, or ``None``: missing (or
        ambiguous; git then repeats the whole request line, spaces and all)."""
        assert self._proc.stdout is not None
        header = self._proc.stdout.readline()
        if not header and self._fall_back():
            assert self._proc.stdout is not None
            header = self._proc.stdout.readline()
        if not header:
            self._proc.wait()  # so that its last words are in the errors file
            raise self.failure()
        self._unanswered = None
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
        """Send one request (a spec holding a line break asks for nothing)."""
        self._write([spec])

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
