"""A first task's reading shared with a forked child (issue 33, the cold pass):
every item done once, in order, whatever the child does; and add-tree's
outputs, caches and index byte for byte those of one process."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from git_hydrate.hydrate import forked, reading
from git_hydrate.hydrate.forked import both_ends, can_fork
from tests.conftest import commit_files, git, hydrate

needs_fork = pytest.mark.skipif(not can_fork(), reason="no second process here")


@contextlib.contextmanager
def _meeting() -> Iterator[tuple[Callable[[], None], Callable[[], None]]]:
    """``(wait, tell)``: ``wait()`` (here) returns once the forked child called
    ``tell()`` (at most 10 s), which it does in its first item: this process's
    own items then stop short of that one. (A signal: the child holds no pipe.)"""
    parent, told = os.getpid(), []
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})

    def wait() -> None:
        signal.sigtimedwait({signal.SIGUSR1}, 10)

    def tell() -> None:
        if not told:
            told.append(os.kill(parent, signal.SIGUSR1))

    try:
        yield wait, tell
    finally:
        while signal.sigtimedwait({signal.SIGUSR1}, 0) is not None:
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})


def _run(
    count: int, remote: object = None, *, meet: bool = False
) -> tuple[list[tuple[str, int]], int]:
    """Items ``0..count-1`` through :func:`both_ends` (forced to fork): what was
    done, in order, and how many came from the child (``meet``: one at least,
    as this process waits for the child's first)."""
    with _meeting() as (wait, tell):
        return _run_meeting(count, remote, wait if meet else lambda: None, tell)


def _run_meeting(
    count: int, remote: object, wait: Callable[[], None], tell: Callable[[], None]
) -> tuple[list[tuple[str, int]], int]:
    done: list[tuple[str, int]] = []

    def own(i: int) -> None:
        if i == 0:
            wait()
        done.append(("own", i))

    def default_remote(j: int) -> bytes:
        tell()
        return str(j * j).encode()

    def merge(j: int, result: bytes) -> None:
        assert result == str(j * j).encode()
        done.append(("merged", j))

    merged = both_ends(count, own, remote or default_remote, merge, minimum=0)  # type: ignore[arg-type]
    return done, merged


@needs_fork
def test_every_item_once_in_order_and_the_child_does_some() -> None:
    done, merged = _run(20_000, meet=True)
    assert [i for _how, i in done] == list(range(20_000))
    assert merged == sum(how == "merged" for how, _i in done)
    assert merged > 0
    # the child's items are the end of the sequence, past the point they met
    first = next(i for how, i in done if how == "merged")
    assert all(how == "merged" for how, i in done[first:] if i > first + 1)


@needs_fork
def test_a_child_that_fails_leaves_its_items_to_the_parent() -> None:
    def failing(j: int) -> bytes:
        if j == 15_000:
            raise ValueError("boom")
        return str(j * j).encode()

    done, merged = _run(20_000, failing)
    assert [i for _how, i in done] == list(range(20_000))
    assert merged == sum(how == "merged" for how, _i in done)
    assert all(i > 15_000 for how, i in done if how == "merged")
    assert ("own", 15_000) in done  # (computed here: the child never sent it)


@needs_fork
def test_a_child_that_dies_leaves_everything_to_the_parent() -> None:
    def dying(j: int) -> bytes:
        os._exit(3)

    done, merged = _run(5_000, dying)
    assert merged == 0
    assert done == [("own", i) for i in range(5_000)]


@needs_fork
def test_a_child_that_hangs_is_killed_and_its_items_done_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(forked, "PATIENCE", 0.1)  # the child never answers: no need to wait long

    def hanging(j: int) -> bytes:
        threading.Event().wait()  # (never set: as a child stuck on a lock)
        return b""

    done, merged = _run(5_000, hanging)
    assert merged == 0
    assert done == [("own", i) for i in range(5_000)]


def test_no_fork_in_a_process_running_threads() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not can_fork()
        done, merged = _run(3_000)
    finally:
        stop.set()
        thread.join()
    assert merged == 0
    assert done == [("own", i) for i in range(3_000)]


@needs_fork
def test_a_claim_slot_is_never_read_half_written() -> None:
    """The other process reads a slot being written as the old value or the new,
    never as anything else (``struct.pack_into`` zeroes the bytes first: read as 0
    now and then, the run stopped its own part early and waited for the child)."""
    import mmap
    import time

    page = mmap.mmap(-1, mmap.PAGESIZE)
    with forked._slots(page) as slots:
        slots[1] = 100_000
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            for _ in range(40):
                for j in range(99_999, 50_000, -1):
                    slots[1] = j
            os._exit(0)
        seen, reads, until = set(), 0, time.monotonic() + 0.5
        while time.monotonic() < until:
            value = slots[1]
            reads += 1
            if not 50_000 < value <= 100_000:
                seen.add(value)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    page.close()
    assert reads > 10_000 and seen == set()


def test_too_few_items_are_done_here() -> None:
    done: list[int] = []
    merged = both_ends(5, done.append, lambda j: b"", lambda j, r: None)
    assert merged == 0
    assert done == [0, 1, 2, 3, 4]


def _tree(repo: Path) -> None:
    """Files of every kind reading meets: texts (some defining names), a duplicate
    blob at two paths, a binary, a secret, a file modified in the work tree."""
    files = {
        f"src/pkg/mod_{i:03}.py": (
            f"def retry_budget_{i}(session_schema):\n"
            f"    '''The queue worker {i} honours the session schema.'''\n"
            f"    return {i} * session_schema.retry\n"
            + "# filler words token buffer handler\n"
            * (i % 7)
        )
        for i in range(120)
    }
    files["src/pkg/copy_a.py"] = files["src/pkg/copy_b.py"] = "class SharedBody:\n    pass\n"
    files["keys/id_rsa"] = (
        "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n"
    )
    files["docs/guide.md"] = "# Retry budget\n\nThe queue worker retries.\n"
    commit_files(repo, files)
    (repo / "assets").mkdir()
    (repo / "assets" / "blob.bin").write_bytes(bytes(range(256)) * 8)
    git(repo, "add", "assets/blob.bin")
    git(repo, "commit", "-q", "-m", "binary")
    # the same size, other bytes: read through git, never from the work tree
    path = repo / "src" / "pkg" / "mod_005.py"
    path.write_text(path.read_text().replace("queue", "QUEUE"))


@contextlib.contextmanager
def _child_reads_first(met: Path) -> Iterator[None]:
    """add-tree's reading waits (once, 10 s at most) for the forked child to read
    its first blob: the child then reads some, however slowly it starts. (Told
    through a named pipe ``met``, which the child opens: it holds no pipe.)"""
    own, remote = reading._Worktree.own, reading._Worktree.remote
    os.mkfifo(met)
    waiting = [os.open(met, os.O_RDWR | os.O_NONBLOCK)]  # (never at its end)
    told: list[bool] = []

    def own_after(self: reading._Worktree, i: int) -> None:
        if waiting:
            fd = waiting.pop()
            select.select([fd], [], [], 10)
            os.close(fd)
        own(self, i)

    def remote_telling(self: reading._Worktree, j: int) -> bytes:
        if not told:
            told.append(True)
            fd = os.open(met, os.O_WRONLY | os.O_NONBLOCK)
            os.write(fd, b".")
            os.close(fd)
        return remote(self, j)

    reading._Worktree.own, reading._Worktree.remote = own_after, remote_telling  # type: ignore[method-assign]
    try:
        yield
    finally:
        reading._Worktree.own, reading._Worktree.remote = own, remote  # type: ignore[method-assign]
        for fd in waiting:
            os.close(fd)


def _first_task(repo: Path) -> tuple[str, str, str]:
    out = hydrate(
        repo,
        "task-add",
        "T-1",
        "--objective",
        "retry budget of the queue worker",
        "--acceptance",
        "ok",
    )
    assert out.returncode == 0, out
    added = hydrate(repo, "add-tree", "T-1", "--prompt", "--max-bytes", "4096")
    assert added.returncode == 0, added
    prompt = hydrate(repo, "prompt", "T-1", "--max-bytes", "4096")
    assert prompt.returncode == 0, prompt
    return added.stdout, added.stderr, prompt.stdout


def _derived(repo: Path) -> dict[str, bytes]:
    top = repo / ".git" / "hydrate"
    kept = ("blob-facts", "sha256-cache", "rank-index", "tree-verdicts")
    return {
        str(path.relative_to(top)): path.read_bytes()
        for name in kept
        for path in ([top / name] if (top / name).is_file() else sorted((top / name).glob("*")))
    }


@needs_fork
def test_add_tree_shared_with_a_child_is_byte_for_byte_one_process(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    merged: list[int] = []

    def counted(*args: object, **kw: object) -> int:
        merged.append(both_ends(*args, **kw))  # type: ignore[arg-type]
        return merged[-1]

    monkeypatch.setattr(forked, "MIN_ITEMS", 0)
    monkeypatch.setattr(reading, "both_ends", counted)
    with _child_reads_first(tmp_path / "met"):
        shared = _first_task(repo)
    assert merged and merged[0] > 0  # (the child read some of the blobs)
    monkeypatch.setattr(forked, "MIN_ITEMS", 10**9)
    assert _first_task(alone) == shared
    derived = _derived(repo)
    assert {"blob-facts", "sha256-cache"} <= derived.keys() and len(derived) >= 4
    assert _derived(alone) == derived
    assert "secret" in shared[1]


def _small_texts_and_a_big_binary(repo: Path) -> None:
    """400 small texts (with the template's README, 401) and a 200 KB binary:
    the texts fit a 100 KB memo, the binary (never offered to it) does not."""
    files = {f"src/m_{i:03}.py": f"VALUE_{i} = {i}\n" for i in range(400)}
    commit_files(repo, files)
    (repo / "big.bin").write_bytes(b"\0" * 200_000)
    git(repo, "add", "big.bin")
    git(repo, "commit", "-q", "-m", "binary")


@needs_fork
@pytest.mark.parametrize(
    ("build", "limit", "bodies"),
    [(_tree, 1 << 20, 123), (_tree, 2048, 0), (_small_texts_and_a_big_binary, 100_000, 401)],
)
def test_the_memo_holds_what_one_process_would_hold(
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    build: Callable[[Path], None],
    limit: int,
    bodies: int,
) -> None:
    """Bodies for the prompt come back from the child while the texts fit the
    memo (binaries and secrets, never offered to it, do not count); when the
    texts cannot all fit, the memo ends empty, as one process's does once a
    body does not fit."""
    from git_hydrate import Ledger
    from git_hydrate.pack.memo import BodyMemo

    build(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    held = []
    for where, minimum in ((repo, 0), (alone, 10**9)):
        monkeypatch.setattr(forked, "MIN_ITEMS", minimum)
        with Ledger(where) as ledger:
            ledger.add_task("T-1", objective="retry budget", acceptance="ok")
            memo = BodyMemo(limit)
            ledger.add_tree("T-1", memo=memo)
        held.append((memo.limit, memo.size, sorted(memo._bodies.items())))
    assert held[0] == held[1]
    assert len(held[0][2]) == bodies


@needs_fork
def test_marks_found_while_reading_make_the_prompt_it_would_make(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every body fits the memo and the prompt, each process finds the marks
    of the texts it reads (the child sends its own): they are the marks the
    prompt finds, and the prompt is byte for byte the one made without them."""
    import io

    from git_hydrate import Ledger
    from git_hydrate.pack import boundaries
    from git_hydrate.pack.memo import BodyMemo

    _tree(repo)
    # lines a reader sees differently: not "plain" (their marks found line by line)
    odd = "caf\u00e9\r# heading\r\n\x1b[1m## bold\x1b[0m\n\u2028---\n"
    commit_files(repo, {f"notes/odd_{i}.txt": odd * (i + 1) for i in range(3)})
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    prompts = []
    for where, minimum in ((repo, 0), (alone, 10**9)):
        monkeypatch.setattr(forked, "MIN_ITEMS", minimum)
        with Ledger(where) as ledger:
            ledger.add_task("T-1", objective="retry budget", acceptance="ok")
            memo = BodyMemo(1 << 20, prompt_bytes=1 << 20)
            ledger.add_tree("T-1", memo=memo)
            kept = list(memo._bodies.values())
            assert memo.marking and kept and all(marks is not None for _s, _d, marks in kept)
            assert any(marks for _s, _d, marks in kept)
            for _sha, data, marks in kept:
                assert marks == boundaries.marks(data.decode("utf-8"))
            marked, plain = io.BytesIO(), io.BytesIO()
            ledger.write_prompt("T-1", marked, memo=memo, cache=False)
            assert not boundaries._ahead  # (none left behind)
            ledger.write_prompt("T-1", plain, cache=False)
        assert marked.getvalue() == plain.getvalue() and b"\\# heading" in plain.getvalue()
        prompts.append(plain.getvalue())
    assert prompts[0] == prompts[1]


def test_marks_are_found_while_reading_only_for_the_seed_format(repo: Path) -> None:
    """Only the seed format neutralises its bodies: a memo for a markdown or xml
    prompt finds no marks (it would hold every text's until the prompt ends)."""
    from git_hydrate import Ledger
    from git_hydrate.pack.memo import BodyMemo

    with Ledger(repo) as ledger:
        for shape, expected in (("seed", 1 << 20), ("markdown", 0), ("xml", 0)):
            memo = BodyMemo.for_prompt(1 << 20, ledger.budget(1 << 20, format=shape))
            assert (memo.limit, memo.prompt_bytes) == (1 << 20, expected), shape


@needs_fork
def test_the_child_writes_no_file(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child only computes: the secret scan's prefilter, which it uses, is
    compiled (and kept in ``.git/hydrate``) by this process before the fork, not
    by the child too; nothing the child does writes a file."""
    pytest.importorskip("hyperscan")
    from git_hydrate.secrets import prefilter
    from git_hydrate.store.base import RepositoryBase

    _tree(repo)
    writers = tmp_path / "writers"
    replace_file = RepositoryBase.replace_file

    def recorded(self: RepositoryBase, path: str, *args: object, **kw: object) -> None:
        with open(writers, "a") as log:  # (a line per write, from either process)
            log.write(f"{os.getpid()} {os.path.basename(path)}\n")
        replace_file(self, path, *args, **kw)  # type: ignore[arg-type]

    database = prefilter._database

    def built(*args: object) -> object:
        with open(writers, "a") as log:  # (compiled or loaded: once, before the fork)
            log.write(f"{os.getpid()} database\n")
        return database(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(RepositoryBase, "replace_file", recorded)
    monkeypatch.setattr(prefilter, "_database", built)
    monkeypatch.setattr(forked, "MIN_ITEMS", 0)
    prefilter.shared_prefilter.cache_clear()  # (compiled again, as in a new process)
    merged: list[int] = []

    def counted(*args: object, **kw: object) -> int:
        merged.append(both_ends(*args, **kw))  # type: ignore[arg-type]
        return merged[-1]

    monkeypatch.setattr(reading, "both_ends", counted)
    try:
        with _child_reads_first(tmp_path / "met"):
            _first_task(repo)
    finally:
        prefilter.shared_prefilter.cache_clear()
    assert merged and merged[0] > 0  # (the child read, scanned some of the blobs)
    lines = writers.read_text().splitlines()
    assert f"{os.getpid()} secret-prefilter" in lines
    assert lines.count(f"{os.getpid()} database") == 1
    assert {line.split()[0] for line in lines} == {str(os.getpid())}


@needs_fork
def test_damaged_results_are_read_here(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A complete frame whose bytes do not decode: the parent reads that blob
    itself, and add-tree's outputs are those of one process."""
    _tree(repo)
    alone = tmp_path / "alone"
    shutil.copytree(repo, alone, symlinks=True)
    remote = reading._Worktree.remote

    def damaging(self: reading._Worktree, j: int) -> bytes:
        return b"\xc1" if j % 2 else remote(self, j)  # (0xc1: never valid msgpack)

    monkeypatch.setattr(reading._Worktree, "remote", damaging)
    monkeypatch.setattr(forked, "MIN_ITEMS", 0)
    shared = _first_task(repo)
    monkeypatch.setattr(forked, "MIN_ITEMS", 10**9)
    assert _first_task(alone) == shared
    assert _derived(alone) == _derived(repo)


@needs_fork
def test_no_wait_for_a_child_left_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child stuck before it claims an item: this process does them all and
    does not wait for the child's results (there are none to wait for)."""

    def stuck(parent: int, keep: int) -> None:
        threading.Event().wait()

    def no_wait(fd: int) -> bool:
        pytest.fail("waited for a child that took no item")

    monkeypatch.setattr(forked, "_detach", stuck)
    monkeypatch.setattr(forked, "_readable", no_wait)
    done, merged = _run(3_000)
    assert merged == 0
    assert done == [("own", i) for i in range(3_000)]


@needs_fork
def test_a_fork_warning_raised_as_an_error_leaves_no_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python 3.12 warns (DeprecationWarning) after forking a process that runs
    threads; under ``-W error`` that is raised once the child exists: the child
    is ended and reaped, and this process does every item."""
    import warnings

    fork, children = os.fork, []

    def warning_fork() -> int:
        pid = fork()
        if pid:
            children.append(pid)
            warnings.warn("multi-threaded: fork() may deadlock", DeprecationWarning, 2)
        return pid

    monkeypatch.setattr(os, "fork", warning_fork)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            done, merged = _run(3_000)
    finally:
        for pid in children:  # (before the fix: not to leave it to the suite)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
    assert merged == 0
    assert done == [("own", i) for i in range(3_000)]
    assert children
    with pytest.raises(ChildProcessError):  # (reaped: no process left behind)
        os.waitpid(children[0], os.WNOHANG)


@needs_fork
@pytest.mark.parametrize("handler", [signal.SIG_IGN, signal.default_int_handler])
def test_the_child_keeps_an_ignored_interrupt_ignored(handler: object) -> None:
    """A parent that ignores SIGINT has a child that ignores it (an interrupt
    meant for others does not end it); otherwise the child dies of one at once."""
    previous = signal.signal(signal.SIGINT, handler)  # type: ignore[arg-type]
    seen: set[bytes] = set()
    try:
        with _meeting() as (wait, tell):

            def remote(j: int) -> bytes:
                tell()
                return repr(signal.getsignal(signal.SIGINT)).encode()

            merged = both_ends(
                3_000,
                lambda i: wait() if i == 0 else None,
                remote,
                lambda j, result: seen.add(result),
                minimum=0,
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert merged > 0
    expected = signal.SIG_IGN if handler is signal.SIG_IGN else signal.SIG_DFL
    assert seen == {repr(expected).encode()}


#: add-tree in a process of its own, its forked child stuck in its first item
#: once it has told the test and its parent, which waits for that before its
#: own first item (argv: the test's pid, a file for the child's pid).
_STUCK_CHILD = """
import os, signal, sys, threading
from git_hydrate.hydrate import forked, reading
from git_hydrate.cli import run

def own(self, i, own=reading._Worktree.own):
    if i == 0:
        signal.sigtimedwait({signal.SIGUSR1}, 30)
    own(self, i)

def remote(self, j):
    with open(sys.argv[2], "w") as out:
        out.write(str(os.getpid()))
    os.kill(int(sys.argv[1]), signal.SIGUSR1)
    os.kill(os.getppid(), signal.SIGUSR1)
    threading.Event().wait()

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
forked.MIN_ITEMS = 0
reading._Worktree.own, reading._Worktree.remote = own, remote
sys.exit(run(["add-tree", "T-1"]))
"""


@needs_fork
@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfd to wait on")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_child_does_not_outlive_its_parent(repo: Path, tmp_path: Path, sig: int) -> None:
    """add-tree killed while its forked child reads: the child ends with it, and
    whoever reads add-tree's stdout sees its end when add-tree has ended (the
    child held it open, working on, for seconds at 20,000 files)."""
    _tree(repo)
    assert (
        hydrate(repo, "task-add", "T-1", "--objective", "x", "--acceptance", "ok").returncode == 0
    )
    told = tmp_path / "child"
    child = 0
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    parent = subprocess.Popen(
        [sys.executable, "-c", _STUCK_CHILD, str(os.getpid()), str(told)],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert signal.sigtimedwait({signal.SIGUSR1}, 30) is not None, "no child started"
        child = int(told.read_text())
        parent.send_signal(sig)
        parent.wait(10)
        assert parent.stdout is not None
        assert select.select([parent.stdout], [], [], 10)[0], "stdout held open"
        assert parent.stdout.read() == b""
        with contextlib.suppress(ProcessLookupError):  # (gone already)
            ended = os.pidfd_open(child)
            try:
                assert select.select([ended], [], [], 10)[0], "the child outlived its parent"
            finally:
                os.close(ended)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1})
        parent.kill()
        parent.wait()
        if child:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(can_fork(), reason="this process forks: the tests above run here")
def test_the_forking_tests_in_a_process_without_threads() -> None:
    """A pytest-xdist worker runs a thread :mod:`threading` does not list (the
    system does), so it never forks and the tests above skip there (and those
    of ``test_indexer.py``): they run here in a process of their own, ``-n 0``,
    where the reader would fork."""
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        pytest.skip("no second process on this machine")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-rs",
            "-p",
            "no:cacheprovider",
            __file__,
            str(Path(__file__).with_name("test_indexer.py")),  # (the indexer forks too)
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "no second process here" not in out.stdout
    assert " passed" in out.stdout
