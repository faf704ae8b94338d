"""Shared fixtures: every test runs against real repositories made by `git init`,
isolated from the user's git configuration and identity."""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import settings

#: The project root: subprocesses import git_hydrate from here, not from
#: whatever copy happens to be installed.
ROOT = Path(__file__).resolve().parent.parent
GIT_NAME = "Hydrate Tester"
GIT_EMAIL = "tester@example.com"


def _keep_bytecode() -> None:
    """Compiled modules kept under ``.pytest_cache/pycache`` when the environment
    says not to write them beside the sources (``PYTHONDONTWRITEBYTECODE``).

    Without them every ``git hydrate`` process a test starts compiles the modules
    it imports again (~80 ms of its ~160), and every pytest process rewrites and
    compiles every test module and plugin module again (~5 s). The sources stay
    as clean as the setting asks: the cache is pytest's own, ignored by git.
    """
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    prefix = ROOT / ".pytest_cache" / "pycache"
    try:
        prefix.mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # a checkout that cannot be written: compile as asked
    del os.environ["PYTHONDONTWRITEBYTECODE"]  # for the processes tests start, too
    os.environ["PYTHONPYCACHEPREFIX"] = str(prefix)
    sys.dont_write_bytecode = False
    sys.pycache_prefix = str(prefix)


_keep_bytecode()

#: Where the run's directories go when the machine keeps a file system in memory:
#: the tests make ~110,000 files and ~20,000 directories a run (repositories, their
#: copies, clones), and on a disk's file system each such change waits for its
#: journal (on the development machine's ext4, mounted with ``discard``: ~0.1 ms a
#: directory made, ~0.5 ms a ref written and renamed into place, ~0.6-2 ms a
#: directory removed, against ~0.005-0.04 ms on tmpfs).
MEMORY_TEMPROOT = Path("/dev/shm")
#: Room a run needs there: ~250 MB a run, pytest keeping the last three.
_MEMORY_ROOM = 2 << 30


def _tests_in_memory() -> None:
    """The run's base directory (``pytest-of-USER/pytest-N``, pytest's own, with its
    numbering and retention) under :data:`MEMORY_TEMPROOT` when that is a tmpfs with
    room to spare, unless a base directory was chosen (``PYTEST_DEBUG_TEMPROOT``,
    pytest's variable for it, or ``--basetemp``, which wins over both). Files the
    tests make with :mod:`tempfile` stay in ``TMPDIR``.
    """
    if os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
        room = os.statvfs(MEMORY_TEMPROOT)
        meminfo = Path("/proc/meminfo").read_text()
    except OSError:
        return
    tmpfs = any(line.split()[1:3] == [str(MEMORY_TEMPROOT), "tmpfs"] for line in mounts)
    available = re.search(r"^MemAvailable:\s+(\d+) kB", meminfo, re.M)
    if (
        tmpfs
        and os.access(MEMORY_TEMPROOT, os.W_OK | os.X_OK)
        and room.f_bavail * room.f_frsize >= _MEMORY_ROOM
        and available is not None
        and int(available.group(1)) << 10 >= _MEMORY_ROOM
    ):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(MEMORY_TEMPROOT)


_tests_in_memory()


def pytest_configure(config: pytest.Config) -> None:
    """In an xdist worker (a configuration with ``workerinput``: not the controller,
    not ``-n 0``, whose exit status is the run's, nor a pytest a test starts, which
    inherits ``PYTEST_XDIST_WORKER``): leave by ``os._exit`` at exit, once the
    handlers registered after this one have run (the fork server's stop among them).
    The worker's results are the controller's by then, and finalising its
    interpreter (every module and object of a whole run) was the run's last second
    or so of wall, the controller waiting for it. Not under coverage (which writes
    its data at exit), nor in a process forked from the worker.
    """
    if not hasattr(config, "workerinput"):
        return
    worker = os.getpid()

    def leave() -> None:
        if os.getpid() != worker or "coverage" in sys.modules:
            return
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    atexit.register(leave)


#: The environment the session started with (before any test's changes): the
#: fork server of `git hydrate` processes (``tests/wrapper.py``) runs in it.
SESSION_ENV = dict(os.environ)

#: Property tests run a fifth of their examples in the default suite; CI's
#: property step runs them all (``pytest -m hypothesis
#: --hypothesis-profile=thorough``, the option overriding what is loaded here).
#: No deadline: an example's time is not what a test judges (on a loaded machine
#: file and git I/O overran hypothesis's 200 ms; timing is for benchmarks/).
settings.register_profile("quick", max_examples=20, deadline=None)
settings.register_profile("thorough", max_examples=100, deadline=None)  # hypothesis's own count
settings.load_profile("quick")


def examples(n: int) -> int:
    """A property test's ``max_examples``: ``n`` under the thorough profile, the
    loaded profile's share of ``n`` (at least 10) otherwise.

    Read when the test module is imported, after ``--hypothesis-profile``
    loaded its profile.
    """
    share = settings.default.max_examples / 100
    return n if share >= 1 else max(10, round(n * share))


#: The template directory of every repository the tests make (``git init``,
#: ``git clone``): git's own without its thirteen ``hooks/*.sample`` files, a
#: third of a small repository's files, which every copy, clone and clean-up
#: of a test repository would otherwise write and delete again.
_GIT_TEMPLATE: list[Path] = []


def _git_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _GIT_TEMPLATE:
        made = tmp_path_factory.mktemp("git-template")
        (made / "hooks").mkdir()
        (made / "branches").mkdir()
        (made / "info").mkdir()
        (made / "info" / "exclude").write_text(
            "# git ls-files --others --exclude-from=.git/info/exclude\n"
        )
        (made / "description").write_text(
            "Unnamed repository; edit this file 'description' to name the repository.\n"
        )
        _GIT_TEMPLATE.append(made)
    return _GIT_TEMPLATE[0]


#: The next number of a directory :func:`fresh_directory` makes, in this process.
_NUMBERS = itertools.count()


def fresh_directory(factory: pytest.TempPathFactory, prefix: str) -> Path:
    """A new empty directory ``PREFIX<n>`` under the run's base directory (per xdist
    worker), numbered by a counter of this process.

    ``tmp_path_factory.mktemp`` lists the whole base directory to number each new one:
    with one or two directories a test that made the run's last mktemps cost a few
    milliseconds each, ~4 CPU-seconds a run on two mktemps a test.
    """
    base = factory.getbasetemp()
    while True:
        path = base / f"{prefix}{next(_NUMBERS)}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue  # a name some other fixture's mktemp took
        return path


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest's ``tmp_path`` (the test's name, cut to 30 characters, and a number) made
    by :func:`fresh_directory`. (Kept whatever the test's outcome, pytest's default
    retention; the run's last three base directories are kept.)"""
    return fresh_directory(tmp_path_factory, re.sub(r"[\W]", "_", request.node.name)[:30])


@pytest.fixture(autouse=True)
def isolated_git(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No system git config; a user config of its own holding only a fixed identity; no
    GIT_* leaking in."""
    home = fresh_directory(tmp_path_factory, "home")
    for key in list(os.environ):
        if key.startswith("GIT_") and key != "GIT_EXEC_PATH":
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(_git_template(tmp_path_factory)))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # the identity configured, as a user's is: in GIT_AUTHOR_*/GIT_COMMITTER_* it made
    # every repository that writes ask `git var` for the author too (a git process)
    # and no automatic maintenance: every `commit`, `fetch` and `merge` would start a
    # `git maintenance run --auto` (~2 ms of CPU each) that a test repository never needs
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {GIT_NAME}\n\temail = {GIT_EMAIL}\n[maintenance]\n\tauto = false\n"
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("GIT_HYDRATE_DEBUG", raising=False)
    # a test's directory is outside any repository even when TMPDIR lies inside one
    # (a developer's checkout): git stops looking for one at the run's base directory
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path_factory.getbasetemp()))


#: Seconds between a test server's looks at a ``shutdown()`` (``serve_forever``'s
#: ``poll_interval``): socketserver's default, half a second, was the wait of every
#: test that stops a server it started in a thread.
SHUTDOWN_POLL = 0.01


def git(cwd: Path | str, *args: str, check: bool = True, input: str | None = None) -> str:
    """Run the real git binary; return its stdout."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, input=input, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def git_first_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: Callable[[str, Path], str]
) -> Path:
    """A ``git`` shell script first on PATH, standing in for an older git:
    ``script(real, log)`` is its text, given the real git's path and a log file it
    may write to (returned)."""
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / "old-git"
    bin_dir.mkdir()
    log = bin_dir / "log"
    (bin_dir / "git").write_text(script(real, log))
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{Path(real).parent}")
    return log


def commit_files(repo: Path, files: dict[str, str], message: str = "files") -> str:
    """Write ``files`` (path -> text) into the work tree, commit them all, and return
    the new commit's id."""
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return head_of(repo)


def head_of(repo: Path) -> str:
    """The commit ``HEAD`` names in ``repo`` (a work tree), read as ``git rev-parse
    HEAD`` would: from the branch's loose ref a commit just wrote, else git's answer."""
    dot_git = repo / ".git"
    head = (dot_git / "HEAD").read_text() if dot_git.is_dir() else ""
    if head.startswith("ref: refs/heads/"):
        loose = repo / ".git" / head[5:].strip()
        if loose.is_file():
            return loose.read_text().strip()
    return git(repo, "rev-parse", "HEAD").strip()


#: Templates built in this process (one pytest worker), by name: their directory.
_TEMPLATES: dict[str, Path] = {}
_TEMPLATE_ROOT: list[Path] = []


@pytest.fixture(scope="session", autouse=True)
def _template_root(tmp_path_factory: pytest.TempPathFactory) -> None:
    _TEMPLATE_ROOT[:] = [tmp_path_factory.mktemp("templates")]


def from_template(name: str, build: Callable[[Path], None], dest: Path) -> Path:
    """Copy the template ``name`` to ``dest`` (which must not exist) and return ``dest``.

    ``build(path)`` makes the template once per session (per pytest worker),
    under the tests' git identity; later calls copy it, a few milliseconds
    instead of the git processes that made it. A template may hold anything
    whose copy is as good as a fresh one: no absolute paths (a clone's
    remote, a linked work tree), nothing the test then compares with the
    clock of its own run (the commits are as old as the session).
    """
    made = _TEMPLATES.get(name)
    if made is None:
        made = template_path(name)
        build(made)
        _TEMPLATES[name] = made
    shutil.copytree(made, dest, symlinks=True)
    return dest


def template_path(name: str) -> Path:
    """Where the template ``name`` is (or will be) built: a path its copies may
    hold (a remote's URL) and must replace by their own."""
    return _TEMPLATE_ROOT[0] / name


def one_commit(path: Path) -> None:
    """``git init`` ``path`` with one commit on main (the ``repo`` fixture's template)."""
    git(path.parent, "init", "-q", "-b", "main", str(path))
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "initial")


def stocked_repo(repo: Path, name: str, stock: Callable[[Path], None]) -> Path:
    """A copy of the template ``name`` at ``repo`` (e.g. ``tmp_path / "repo"``; one
    there already, the ``repo`` fixture's, is replaced): that repository with
    ``stock(path)`` (tasks, attachments, settings) applied once per session. For
    fixtures every test of a file builds the same way. (Given ``tmp_path`` rather
    than the ``repo`` fixture, nothing is copied only to be removed: removing that
    copy took ~17 ms of wall on the development machine, whose file system is
    mounted with ``discard``: ~3.6 ms a directory.)"""

    def build(path: Path) -> None:
        from_template("repo", one_commit, path)
        stock(path)

    if repo.exists():
        shutil.rmtree(repo)
    return from_template(name, build, repo)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A fresh non-bare repository with one commit on main (a copy of a template)."""
    return from_template("repo", one_commit, tmp_path / "repo")


@pytest.fixture
def ledger(repo: Path) -> Iterator[object]:
    from git_hydrate import Ledger

    with Ledger(repo) as led:
        yield led


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[str]) -> None:
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def __repr__(self) -> str:
        return f"<Result {self.returncode} out={self.stdout[:200]!r} err={self.stderr[:200]!r}>"


def hydrate(
    cwd: Path | str,
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    entry: Callable[[list[str]], int] | None = None,
) -> Result:
    """Run the `git-hydrate` command line in this process (``cli.run``), as from ``cwd``.

    The same code path as the installed entry point, with stdin, stdout and
    stderr captured separately and ``env`` applied for the call; about 40
    times faster than a new interpreter. ``entry`` runs instead of ``cli.run``
    (the arguments in, the exit status out). Tests of what only a real process
    shows (signals, hooks run by git, the entry point itself) use
    :func:`hydrate_process`.
    """
    from click.testing import CliRunner

    from git_hydrate.cli import run

    if entry is None:
        entry = run
    data = input.encode() if isinstance(input, str) else input
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    runner = CliRunner()
    try:
        os.environ.update(env or {})
        os.chdir(cwd)
        with runner.isolation(input=data) as streams:
            code = entry(list(args))
            sys.stdout.flush()
            sys.stderr.flush()
            out, err = streams[0].getvalue(), streams[1].getvalue()
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    proc = subprocess.CompletedProcess(
        ["git-hydrate", *args],
        code,
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
    )
    return Result(proc)


def hydrate_process(
    cwd: Path | str,
    *args: str,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
) -> Result:
    """Run `git-hydrate` as a real process (the installed entry point's code),
    forked from a server that imported it (``tests/zygote.py``)."""
    from .wrapper import hydrate_command

    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), full_env.get("PYTHONPATH", "")) if p
    )
    if env:
        full_env.update(env)
    proc = subprocess.run(
        [*hydrate_command(), *args],
        cwd=cwd,
        capture_output=True,
        text=not isinstance(input, bytes),
        input=input,
        env=full_env,
        check=False,
    )
    if isinstance(input, bytes):
        proc = subprocess.CompletedProcess(
            proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
        )
    return Result(proc)


def cat_file_batch(path: Path, specs: list[bytes]) -> list[tuple[bytes, bytes] | None]:
    """What a fresh ``git cat-file --batch`` answers for ``specs`` (one line each; a
    spec holding a line break is asked as an empty line): the oracle of the store's
    object readers."""
    lines = b"".join((b"" if b"\n" in spec else spec) + b"\n" for spec in specs)
    out = subprocess.run(
        ["git", "cat-file", "--batch"], cwd=path, input=lines, capture_output=True, check=True
    ).stdout
    answers: list[tuple[bytes, bytes] | None] = []
    for _spec in specs:
        header, _, out = out.partition(b"\n")
        fields = header.split()
        if fields[-1] in (b"missing", b"ambiguous"):
            answers.append(None)
            continue
        size = int(fields[2])
        answers.append((fields[1], out[:size]))
        out = out[size + 1 :]
    return answers


def on_a_terminal(cwd: Path | str, *args: str) -> bytes:
    """What a `git-hydrate` process writes to standard output when that is a terminal
    (a pseudo-terminal in raw mode: the bytes as the program wrote them)."""
    proc, seen = run_on_a_terminal(cwd, list(args))
    assert proc.returncode == 0, proc.stderr
    return seen


def run_on_a_terminal(
    cwd: Path | str, args: list[str], stream: str = "stdout"
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """A `git-hydrate` process whose ``stream`` (``stdout`` or ``stderr``) is a
    pseudo-terminal in raw mode, the other one a pipe: the process, and the bytes
    the terminal got."""
    import pty
    import tty

    from .wrapper import hydrate_command

    primary, secondary = pty.openpty()
    tty.setraw(secondary)
    chunks: list[bytes] = []

    def drain() -> None:  # a full pty buffer would block the child
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, stream: secondary}
    proc = subprocess.run(
        [*hydrate_command(), *args],
        cwd=cwd,
        env=env,
        check=False,
        timeout=60,
        **streams,
    )
    os.close(secondary)
    reader.join(timeout=10)
    os.close(primary)
    return proc, b"".join(chunks)


def as_sh_reads(command: str, cwd: Path | str) -> list[str]:
    """The words of ``command`` (one line a message suggests) as ``sh`` reads them,
    by running it with ``printf`` in place of its first word: unquoted shell
    syntax in it (``;``, ``&``, ``$(...)``) splits, substitutes or fails here."""
    proc = subprocess.run(
        ["sh", "-c", "printf '%s\\0' " + command.split(" ", 1)[1]],
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0 and not proc.stderr, proc
    return [command.split(" ", 1)[0], *os.fsdecode(proc.stdout).split("\0")[:-1]]


def fsck(path: Path | str) -> None:
    """`git fsck --strict` must be clean."""
    proc = subprocess.run(
        ["git", "fsck", "--strict", "--no-progress"], cwd=path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stderr.lower(), proc.stderr


# -- the prompt's "### Not included" section (issue 27) -----------------------------


@functools.lru_cache(maxsize=256)
def _outline_of(source: str, text: str) -> str | None:
    from git_hydrate.pack.outline import outline

    return outline(source, text)


def outliner(item: Any, read: Callable[[], str]) -> str | None:
    """The packer's outliner for ``build_prompt``, memoised as the command's outline
    cache is: a walk asks for the same outline more than once (each parse of a
    40 KB module costs ~30 ms)."""
    return _outline_of(str(item["source"]), read())


def notice_of(prompt: str, name: str = "seed") -> str:
    """The prompt's ``### Not included`` section (``""`` when it has none): from
    its heading to the footer, as the packer renders it (in the ``xml`` format,
    its ``<not_included>`` element)."""
    from git_hydrate.context_expander import UNTRUSTED_FOOTER

    if name == "xml":
        start, close = prompt.rfind("<not_included>\n"), "</not_included>\n"
        return "" if start == -1 else prompt[start : prompt.rindex(close) + len(close)]
    end = prompt.rindex(UNTRUSTED_FOOTER) if UNTRUSTED_FOOTER in prompt else len(prompt)
    at = prompt.rfind("\n### Not included\n", 0, end)
    if at == -1:
        return ""
    if name == "markdown" and re.search(r"^`{3,}", prompt[at:end], re.M):
        return ""  # (a body's own line, inside its fence: the fence closes after it)
    return prompt[at + 1 : end]


def with_notice(rendered: str, notice: str) -> str:
    """``render_prompt(packet)`` with the section ``notice`` as the block's last
    part, as the packer places it (opening the block when nothing else does)."""
    from git_hydrate.context_expander import OUTPUT_CONTRACT, UNTRUSTED_BANNER, UNTRUSTED_FOOTER

    if not notice:
        return rendered
    if UNTRUSTED_FOOTER in rendered:
        at = rendered.rindex(UNTRUSTED_FOOTER)
        return rendered[:at] + "\n" + notice + rendered[at:]
    at = rendered.rindex("\n\n" + OUTPUT_CONTRACT)
    return (
        rendered[:at] + f"\n\n{UNTRUSTED_BANNER}\n\n" + notice + UNTRUSTED_FOOTER + rendered[at:]
    )


def render_with_notice(packet: dict[str, Any], name: str, notice: str) -> str:
    """The prompt of ``packet`` in the format ``name``, with ``notice`` as the
    block's last part, as the packer places it."""
    from git_hydrate.pack.formats import FORMATS
    from git_hydrate.pack.render import assemble, head_sections

    shape = FORMATS[name]
    parts = [
        shape.section(index, str(c["source"]), str(c["body"]))
        for index, c in enumerate(packet.get("context") or (), start=1)
    ]
    return assemble(head_sections(packet), [*parts, *([(notice,)] if notice else [])], shape.frame)


def without_line_of(notice: str, digest: str) -> str:
    """``notice`` less the line naming ``digest`` (nothing left when it was the only one)."""
    lines = notice.splitlines(keepends=True)
    if len(lines) == 2 and "--attachment" not in notice:  # a notice that only counts
        count, rest_of_line = lines[1][2:].split(" ", 1)
        left = int(count.replace(",", "")) - 1
        if not left:
            return ""
        rest_of_line = rest_of_line.replace("attachments ", "attachment ", 1)
        if left > 1:
            rest_of_line = rest_of_line.replace("attachment ", "attachments ", 1)
        return lines[0] + f"- {left:,} " + rest_of_line
    rest = [line for line in lines[2:] if digest not in line]
    return "".join(lines[:2] + rest) if rest else ""


def names_every_omission(notice: str, omitted: list[dict[str, str]]) -> bool:
    """Whether ``notice`` names each omission, or (a notice that only counts, for a
    budget without room for the list) counts them all; or there is no notice (no room)."""
    if not notice:
        return True
    if "--attachment" not in notice:
        return f"- {len(omitted):,} attachment" in notice
    named = sum(1 for item in omitted if item["hash"] in notice)
    more = re.search(r"^- and ([\d,]+) more not named here", notice, re.M)
    return named + (int(more.group(1).replace(",", "")) if more else 0) == len(omitted)


#: Commit dates fixed, for runs whose commit ids a test compares.
FIXED_DATES: Final = {
    "GIT_COMMITTER_DATE": "1800000000 +0000",
    "GIT_AUTHOR_DATE": "1800000000 +0000",
}


def next_task_runs(where: Path, task_id: str) -> list[object]:
    """A new task ``task_id`` in ``where`` as a user makes it (``task-add``,
    ``add-tree --json``, ``prompt``, ``doctor``; dates fixed): each step's exit
    status, standard output and standard error, then the task's tree."""
    steps = [
        ("task-add", task_id, "--objective", "o", "--acceptance", "a"),
        ("add-tree", task_id, "--json"),
        ("prompt", task_id),
        ("doctor",),
    ]
    runs: list[object] = []
    for step in steps:
        result = hydrate(where, *step, env=FIXED_DATES)
        runs.append((result.returncode, result.stdout, result.stderr))
    runs.append(git(where, "ls-tree", "-r", f"refs/hydrate/tasks/{task_id}"))
    return runs


def damaged_beside_a_copy(
    repo: Path, clean: Path, path: Path, damage: Callable[[bytes], bytes]
) -> bytes:
    """Copy ``repo`` to ``clean`` untouched, then damage its file ``path`` (whose
    bytes, as they were, this returns) by ``damage``, which must change them."""
    shutil.copytree(repo, clean, symlinks=True)
    good = path.read_bytes()
    damaged = damage(good)
    assert damaged != good
    path.write_bytes(damaged)
    return good


@contextlib.contextmanager
def silent_remote() -> Iterator[tuple[str, threading.Event]]:
    """A remote that accepts connections and never answers (a git that reaches it
    waits): its URL, and an event set once something connected."""
    listener = socket.create_server(("127.0.0.1", 0))
    connected = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return
            connected.set()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/x.git", connected
    finally:
        listener.close()
        for conn in held:
            conn.close()


@contextlib.contextmanager
def web_serving(
    repo: Path, host: str = "127.0.0.1", allowed: tuple[str, ...] = ()
) -> Iterator[Any]:
    """``git hydrate web``'s server on ``repo`` (any free port), serving in a thread
    until the block ends; then shut down, closed and its ledger closed."""
    from git_hydrate import Ledger
    from git_hydrate.web.server import make_server

    server = make_server(Ledger(repo), host, 0, allowed)
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        server.app.ledger.close()


def seeded_remote(bare: Path) -> None:
    """Make ``bare`` a bare repository holding one commit on main (the sync tests'
    remote: a template, copied per test)."""
    tmp_path = bare.parent / "sync-remote-seed"
    tmp_path.mkdir()
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "README").write_text("the project\n")
    (seed / "notes.txt").write_text("shared body text\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "initial")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare remote holding one commit on main, over a file path (a copy of a
    template made once; test_sync.py calls it ``remote``)."""
    return from_template("sync-remote", seeded_remote, tmp_path / "remote.git")
