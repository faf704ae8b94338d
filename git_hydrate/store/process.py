"""Running the real ``git`` binary: the one place a git process is started.

Every git command git-hydrate runs goes through :func:`run_git` (one-shot) or
:func:`git_argv` (long-running readers), so the environment git passes a
subcommand is handled in one place and a failure always becomes
:class:`~git_hydrate.errors.GitFailed` with git's own reason in one line.

The two commands that open a repository where :mod:`.discover` leaves it to
git (``git rev-parse``, and the settings, ``git config --list``) are started
with ``os.posix_spawnp`` when they run in this directory, rather than through
``subprocess``: importing
subprocess (with ``threading``, ``selectors``, ``locale``...) costs about 5
ms, several times what ``git config`` itself takes, and a prompt-cache hit
needs nothing else. Their child gets what ``subprocess.run(capture_output=True)``
gives it but for one thing: glibc's posix_spawn leaves its two internal
signals (32, 33) ignored in the child, which these two commands, starting no
program, never see. Every other command goes through subprocess.
"""

from __future__ import annotations

import os

from ..errors import GitFailed, NotARepository, NotWritable
from .stopping import (
    in_session,
    refuse_if_stopped,
    session_ends,
    session_runs,
    session_starts,
    stop_process,
)

TYPE_CHECKING = False  # (typing is not imported at run time: see git_hydrate.quick)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from subprocess import Popen
    from typing import IO, Any, Final

__all__ = [
    "REPO_ENV",
    "Background",
    "GitRun",
    "begin_git",
    "first_line",
    "format_tz",
    "nameless_file",
    "not_writable",
    "outside_env",
    "parse_tz",
    "run_git",
]

#: Environment variables git sets for a subcommand that point at *its*
#: repository; they must not leak into a ``git -C other`` call.
REPO_ENV: Final = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
)


def outside_env() -> dict[str, str]:
    """The environment for git run on *another* repository than the caller's."""
    return {k: v for k, v in os.environ.items() if k not in REPO_ENV}


def first_line(data: bytes) -> str:
    """git's error as one line: its first message plus indented continuation lines."""
    lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    message = lines[0].strip()
    for line in lines[1:]:
        if not line[:1].isspace():
            break
        message += " " + line.strip()
    return message


class GitRun:
    """What a one-shot git process gave: its arguments, exit status and outputs
    (the fields of ``subprocess.CompletedProcess`` that git-hydrate reads)."""

    __slots__ = ("args", "returncode", "stderr", "stdout")

    def __init__(self, args: list[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"GitRun({self.args!r}, returncode={self.returncode})"


def reason(proc: GitRun) -> str:
    """The reason a git process failed, without git's ``fatal:``/``error:`` prefix."""
    lines = [
        line.strip()
        for line in proc.stderr.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.startswith(("hint:", "warning:"))
    ]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    message = (fatal or lines or [f"exit status {proc.returncode}"])[0]
    message = message.removeprefix("fatal: ").removeprefix("error: ")
    if message.startswith("bad object refs/hydrate/"):
        # (a ref of this repository whose file names no object: git stops on it)
        message += ": that ref is damaged here; see: git hydrate doctor"
    return message


def bounded_lines(lines: Sequence[str], most: int = 8, width: int = 200) -> list[str]:
    """Another program's ``lines`` (a hook's) as they are shown: at most ``most``,
    each of at most ``width`` characters (a longer one cut, ending in ``...``), and
    then one that says how many more there were. Not neutralised: the caller shows
    them (:func:`git_hydrate.console.shown`)."""
    kept = [line if len(line) <= width else line[: width - 3] + "..." for line in lines[:most]]
    if len(lines) > most:
        kept.append(f"... and {len(lines) - most} more lines")
    return kept


def run_git(
    args: list[str],
    *,
    cwd: str | None = None,
    input: bytes | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    what: str = "",
    pass_fds: tuple[int, ...] = (),
    new_session: bool = False,
    started: Callable[[], None] | None = None,
    whole: bool = False,
) -> GitRun:
    """Run the real ``git`` binary and capture its output (``pass_fds``: descriptors
    it inherits; ``new_session``: started in a session of its own, without this
    process's controlling terminal, and stopped with all it started if this process
    is interrupted; ``started``: called once git runs; ``whole``: a git that must
    not die half-way, see :func:`_whole`).

    Raises:
        NotARepository: ``git`` is not installed.
        GitFailed: ``check`` and git exited non-zero (``what`` names the step).
    """
    refuse_if_stopped()
    argv, command = ["git", *args], _command(args)
    new_session = new_session or in_session(command)  # (the MCP server's remotes)
    spawn = (
        cwd is None and input is None and not pass_fds and not new_session and command in _SPAWNED
    )
    try:
        ran = _spawned(argv, env) if spawn else None
        if ran is None and whole:
            ran = _whole(argv, cwd, input, env)
        if ran is None and (new_session or started is not None):
            ran = _watched(argv, cwd, input, env, pass_fds, new_session, started)
        if ran is None:
            import subprocess  # (not for the two commands every command runs)

            proc = subprocess.run(
                argv,
                cwd=cwd,
                input=input,
                capture_output=True,
                check=False,
                env=None if env is None else dict(env),
                pass_fds=pass_fds,
                start_new_session=new_session,
            )
            ran = GitRun(argv, proc.returncode, proc.stdout, proc.stderr)
    except FileNotFoundError:
        raise NotARepository("the git binary was not found on PATH") from None
    if check and ran.returncode != 0:
        step = what or f"git {args[0] if args[0] != '--git-dir' else command}"
        raise GitFailed(f"{step} failed: {reason(ran)}")
    return ran


def _popen(
    argv: list[str],
    cwd: str | None,
    input: bytes | None,
    env: Mapping[str, str] | None,
    **options: Any,
) -> Popen[bytes]:
    """git started with its outputs piped (and its input, when there is one)."""
    import subprocess

    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=None if input is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=None if env is None else dict(env),
        **options,
    )


def _whole(
    argv: list[str], cwd: str | None, input: bytes | None, env: Mapping[str, str] | None
) -> GitRun:
    """``subprocess.run(argv, capture_output=True, ...)`` for a git that must not be
    killed half-way: a ref transaction, whose lock files a killed git leaves behind,
    unmarked, for every later write of those refs to stop on. It runs in a session
    of its own, which a signal to this process's group (a runner's SIGKILL of the
    job, Ctrl-C) does not reach; if this process ends or is interrupted meanwhile,
    git is not stopped but let finish: with its input whole it commits, without its
    last line (``commit``) it aborts, in milliseconds either way (see
    :func:`_let_finish`)."""
    proc = _popen(argv, cwd, input, env, start_new_session=True)
    try:
        out, err = proc.communicate(input)
    except BaseException:
        _let_finish(proc)
        raise
    return GitRun(argv, proc.returncode, out, err)


def _let_finish(proc: Popen[bytes]) -> None:
    """An interrupted command's ref transaction: git, its input closed, has
    :data:`_WHOLE_GRACE` to end. One that does not (a reference-transaction hook
    that hangs), or a second interruption meanwhile (Ctrl-C again), is stopped
    with its session as Ctrl-C stopped it before: SIGTERM first, on which git
    removes its lock files (a SIGKILL left them, unmarked), and the hook ends too."""
    import contextlib

    if proc.stdin is not None:
        with contextlib.suppress(OSError):  # (git went first)
            proc.stdin.close()
    try:
        proc.communicate(timeout=_WHOLE_GRACE)
    except BaseException:
        stop_process(proc, True)


#: How long an interrupted command waits for a ref transaction's git to end.
_WHOLE_GRACE: Final = 30.0


def _watched(
    argv: list[str],
    cwd: str | None,
    input: bytes | None,
    env: Mapping[str, str] | None,
    pass_fds: tuple[int, ...],
    new_session: bool,
    started: Callable[[], None] | None,
) -> GitRun:
    """``subprocess.run(argv, capture_output=True, ...)``, calling ``started`` once git
    runs. On any exception meanwhile (Ctrl-C: git in a session of its own does not
    hear it) git is stopped, with every process of its session (a ``git remote-http``
    waiting on a server that never answers would outlive it), and it is raised again.
    Another thread stops such a git with :func:`.stopping.stop_gits`."""
    token = session_starts() if new_session else None
    try:
        proc = _popen(argv, cwd, input, env, pass_fds=pass_fds, start_new_session=new_session)
        previous = _raising_on_termination() if new_session else {}
        try:
            session_runs(token, proc)
            if started is not None:
                started()
            out, err = proc.communicate(input)
            session_runs(token, None)  # (stopped by stop_gits: it raises)
        except BaseException:
            stop_process(proc, new_session)
            raise
        finally:
            _restore(previous)
    finally:
        session_ends(token)
    return GitRun(argv, proc.returncode, out, err)


def _raising_on_termination() -> dict[int, Any]:
    """SIGTERM and SIGHUP made to raise ``SystemExit(128 + signal)`` while git runs
    in a session of its own (``timeout``, a cancelled CI job, a closed terminal
    would end this process and leave git's session running); the handlers they
    had, to restore. Only the main thread may set them: elsewhere, none."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}

    def leave(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:  # (a caller's own handler stays)
            previous[int(signum)] = signal.signal(signum, leave)
    return previous


def _restore(previous: dict[int, Any]) -> None:
    import signal

    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _spawned(argv: list[str], env: Mapping[str, str] | None) -> GitRun | None:
    """``subprocess.run(argv, capture_output=True, env=env)`` by ``os.posix_spawnp``
    (``None`` where that cannot give the same: no ``posix_spawnp``, or standard
    streams closed so that a pipe would land on one of them).

    As subprocess gives it, the child inherits standard input, writes to two
    pipes read until both close, has SIGPIPE and SIGXFSZ back at their default
    (Python ignores them), and is killed if reading is interrupted. Unlike
    subprocess, it also inherits the descriptors this process was given marked
    inheritable (git-hydrate opens none), and glibc leaves its internal signals
    ignored in it (see the module's docstring).
    """
    if not hasattr(os, "posix_spawnp"):
        return None
    import signal

    pipes = os.pipe() + os.pipe()  # out_r, out_w, err_r, err_w (not inherited)
    if min(pipes) < 3:
        for fd in pipes:
            os.close(fd)
        return None
    out_r, out_w, err_r, err_w = pipes
    try:
        pid = os.posix_spawnp(
            argv[0],
            argv,
            os.environ if env is None else env,
            file_actions=[(os.POSIX_SPAWN_DUP2, out_w, 1), (os.POSIX_SPAWN_DUP2, err_w, 2)],
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ),
        )
    except BaseException:
        for fd in pipes:
            os.close(fd)
        raise
    os.close(out_w)
    os.close(err_w)
    try:
        read = _drained(out_r, err_r)
        _pid, status = os.waitpid(pid, 0)
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(out_r)
        os.close(err_r)
    return GitRun(
        argv, os.waitstatus_to_exitcode(status), b"".join(read[out_r]), b"".join(read[err_r])
    )


def _drained(*fds: int) -> dict[int, list[bytes]]:
    """What each pipe of ``fds`` gives until it closes, read as it comes (so that
    neither fills while the other is waited on)."""
    import select

    read: dict[int, list[bytes]] = {fd: [] for fd in fds}
    poller = select.poll()
    for fd in read:
        poller.register(fd, select.POLLIN)
    left = len(read)
    while left:
        for fd, _event in poller.poll():
            data = os.read(fd, 65536)
            if data:
                read[fd].append(data)
            else:
                poller.unregister(fd)
                left -= 1
    return read


#: What :func:`run_git` starts with ``posix_spawnp`` (in this directory, without input).
_SPAWNED: Final = frozenset({"config", "rev-parse"})


def _command(args: list[str]) -> str:
    """The git subcommand in an argument list that starts with global options."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--git-dir", "--work-tree", "-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "command"


def format_tz(offset: int) -> bytes:
    """A UTC offset in seconds as git writes it (``+0100``, ``-0530``)."""
    sign = b"-" if offset < 0 else b"+"
    minutes = abs(offset) // 60
    return b"%s%02d%02d" % (sign, minutes // 60, minutes % 60)


def parse_tz(text: bytes) -> int:
    """``+0130`` as seconds east of UTC (0 when it is not a git offset)."""
    sign = -1 if text.startswith(b"-") else 1
    digits = text.lstrip(b"+-")
    if len(digits) != 4 or not digits.isdigit():
        return 0
    return sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)


def not_writable(exc: OSError, where: str) -> NotWritable:
    """The one-line error for a write the file system refused."""
    path = exc.filename or where
    return NotWritable(f"cannot write to the repository ({path}): {exc.strerror or exc}")


class Background:
    """A git process begun before its output is needed (:func:`begin_git`): it
    writes to a nameless file (:func:`nameless_file`), so git never waits on a
    pipe nobody reads."""

    def __init__(self, proc: Popen[bytes], out: IO[bytes]) -> None:
        self._proc, self._out = proc, out

    def output(self) -> bytes | None:
        """What git wrote, once it has exited; ``None`` if it failed (the caller
        runs the command again then, and says git's reason)."""
        try:
            if self._proc.wait() != 0:
                return None
            self._out.seek(0)
            return self._out.read()
        except OSError:
            return None
        finally:
            self.close()

    def close(self) -> None:
        """Stop git if it still runs, and drop its output."""
        try:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        except OSError:
            pass
        self._out.close()


def nameless_file(name: str) -> IO[bytes]:
    """A nameless read-write file (``name``: what ``/proc`` shows): in memory where the
    system has ``memfd_create`` (Linux: no ``tempfile`` import, ~3 ms of a command's
    start, nor a file made and removed on disk), else a temporary file.

    Raises:
        OSError: neither can be made.
    """
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        try:
            return os.fdopen(memfd(name, os.MFD_CLOEXEC), "w+b")
        except OSError:
            pass
    import tempfile

    return tempfile.TemporaryFile(prefix=name + "-")


def begin_git(
    argv: list[str], cwd: str | None, env: Mapping[str, str] | None
) -> Background | None:
    """``argv`` started now, its output kept in a nameless file; ``None`` when
    git cannot be started (the caller runs the command when it needs it)."""
    import subprocess  # (only where a command is begun early)

    try:
        out = nameless_file("git-hydrate-out")
    except OSError:
        return None
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.DEVNULL,  # (a failure is run again, and said then)
        )
    except OSError:
        out.close()
        return None
    return Background(proc, out)
