"""Many new refs written straight into packed-refs (issue 33): the same refs as
git's loose writes, under git's locks, and nothing lost to a concurrent writer."""

from __future__ import annotations

import errno
import http.server
import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from git_hydrate.errors import Conflict, GitFailed
from git_hydrate.store import Repository
from git_hydrate.store import packed as packed_module
from git_hydrate.store import refs as refs_module
from git_hydrate.store.packed import create_packed

from .conftest import SHUTDOWN_POLL, from_template, fsck, git, hydrate
from .test_sync import _seeded_remote, clone, make_task
from .wrapper import python_command


def _all_refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname) %(*objectname)")


def _loose_task_refs(repo: Path) -> list[str]:
    base = repo / ".git" / "refs" / "hydrate" / "tasks"
    return sorted(os.listdir(base)) if base.is_dir() else []


def _names(prefix: str, count: int) -> list[bytes]:
    return [f"refs/hydrate/tasks/{prefix}-{i:03d}".encode() for i in range(count)]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return from_template("sync-remote", _seeded_remote, tmp_path / "remote.git")


@pytest.fixture
def commit(repo: Path) -> bytes:
    return git(repo, "rev-parse", "HEAD").strip().encode()


def test_fresh_pull_writes_the_refs_git_writes_packed(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(remote, tmp_path / "a")
    for i in range(4):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    assert hydrate(a, "push").returncode == 0
    loose, packed = clone(remote, tmp_path / "loose"), clone(remote, tmp_path / "packed")
    assert hydrate(loose, "pull").returncode == 0  # 4 creations: git update-ref, loose
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    res = hydrate(packed, "pull")
    assert res.returncode == 0, res
    assert "4 new here" in res.stdout
    assert _loose_task_refs(loose) == ["T-0", "T-1", "T-2", "T-3"]
    assert _loose_task_refs(packed) == []
    assert _all_refs(packed) == _all_refs(loose)
    assert not (packed / ".git" / "logs" / "refs" / "hydrate").exists()  # no reflog, as git
    fsck(packed)
    # git reads and changes them as its own: a task edit, a pull again, pack-refs
    res = hydrate(packed, "task-edit", "T-1", "--title", "edited here")
    assert res.returncode == 0, res
    assert hydrate(packed, "pull").returncode == 0
    before = _all_refs(packed)
    git(packed, "pack-refs", "--all", "--prune")
    assert _all_refs(packed) == before
    fsck(packed)


def _loose_mirror_refs(repo: Path) -> list[str]:
    base = repo / ".git" / "refs" / "hydrate-remotes"
    return sorted(str(Path(d, f).relative_to(base)) for d, _s, fs in os.walk(base) for f in fs)


def test_a_first_pull_fills_the_mirror_packed_with_what_git_fetch_writes(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into an empty mirror, many refs: listed, their tips fetched by id (no ref
    written by git), the mirror created packed: the refs and objects a git fetch
    leaves; later pulls fetch as always, and a remote change still arrives."""
    a = clone(remote, tmp_path / "a")
    for i in range(4):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    assert hydrate(a, "push").returncode == 0
    plain, first = clone(remote, tmp_path / "plain"), clone(remote, tmp_path / "first")
    git(plain, "fetch", "-q", "origin", "+refs/hydrate/*:refs/hydrate-remotes/origin/*")
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    res = hydrate(first, "pull")
    assert res.returncode == 0, res
    assert "4 new here" in res.stdout
    assert _loose_mirror_refs(first) == [] and _loose_task_refs(first) == []
    mirror = "refs/hydrate-remotes/"
    assert git(first, "for-each-ref", mirror) == git(plain, "for-each-ref", mirror)
    fsck(first)
    res = hydrate(a, "task-edit", "T-2", "--title", "moved there")
    assert res.returncode == 0 and hydrate(a, "push").returncode == 0
    res = hydrate(first, "pull")  # the mirror is not empty now: git fetch, as always
    assert res.returncode == 0 and "1 updated" in res.stdout, res
    assert git(first, "rev-parse", "refs/hydrate/tasks/T-2") == git(
        a, "rev-parse", "refs/hydrate/tasks/T-2"
    )
    assert _loose_mirror_refs(first) == ["origin/tasks/T-2"]
    fsck(first)


def test_a_first_fetch_by_id_that_fails_is_a_git_fetch_again(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that takes no wants by id (or no longer has a listed tip): nothing
    is written by that path, and git fetch fills the mirror as before."""
    a = clone(remote, tmp_path / "a")
    for i in range(3):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    assert hydrate(a, "push").returncode == 0
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    fetch = Repository.fetch
    asked: list[bool] = []

    def refusing(self: Repository, target: str, refspecs: list[str], **kw: object) -> None:
        asked.append(kw.get("stdin") is not None)
        if kw.get("stdin") is not None:
            raise GitFailed("git fetch origin failed: Server does not allow request")
        fetch(self, target, refspecs, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Repository, "fetch", refusing)
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull")
    assert res.returncode == 0 and "3 new here" in res.stdout, res
    assert asked == [True, False]
    assert _loose_mirror_refs(b) == [f"origin/tasks/T-{i}" for i in range(3)]
    fsck(b)


def test_a_listed_name_the_packed_write_leaves_to_git_makes_it_a_git_fetch(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One name on the remote that the packed write does not write itself (here not
    ASCII) hands the whole first fetch to git: the pull reports that ref as it
    always did (it had stopped on a bug), and brings the tasks."""
    a = clone(remote, tmp_path / "a")
    for i in range(3):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    assert hydrate(a, "push").returncode == 0
    tip = git(remote, "rev-parse", "refs/hydrate/tasks/T-0").strip()
    git(remote, "update-ref", "refs/hydrate/tasks/\u00e9", tip)
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    b = clone(remote, tmp_path / "b")
    res = hydrate(b, "pull")
    assert res.returncode == 0, res
    assert "3 new here" in res.stdout and "not a valid task id" in res.stdout, res
    assert "\u00e9" in res.stdout
    assert _loose_mirror_refs(b) == sorted(
        [f"origin/tasks/T-{i}" for i in range(3)] + ["origin/tasks/\u00e9"]
    )
    fsck(b)


def test_a_transaction_passes_names_to_git_as_bytes(repo: Path, commit: bytes) -> None:
    """A name that is not ASCII is git's to take (it does) or refuse (a Conflict
    naming it), never a crash while the transaction is written."""
    name = "refs/hydrate/tasks/\u00e9".encode()
    with Repository(repo) as store:
        store.update_refs([(name, None, commit)], "hydrate: test")
        with pytest.raises(Conflict, match="cannot create refs/hydrate/tasks/\u00e9\\.\\."):
            store.update_refs([(name + b"..", None, commit)], "hydrate: test")
    assert git(repo, "rev-parse", name.decode()).strip().encode() == commit


def test_existing_entries_and_peeled_tags_are_kept(repo: Path, commit: bytes) -> None:
    git(repo, "tag", "-a", "-m", "a tag", "v1")
    git(repo, "update-ref", "refs/hydrate/tasks/M-000", commit.decode())
    git(repo, "pack-refs", "--all", "--prune")
    before = _all_refs(repo)
    names = [b"refs/hydrate/tasks/A-1", b"refs/hydrate/tasks/Z-1", b"refs/hydrate-remotes/z/l"]
    with Repository(repo) as store:
        assert create_packed(store.common_dir, store.settings, [(name, commit) for name in names])
        store.forget_packed()
        assert store.read_ref(b"refs/hydrate/tasks/Z-1") == commit
    after = _all_refs(repo)
    assert set(before.splitlines()) < set(after.splitlines())
    assert len(after.splitlines()) == len(before.splitlines()) + 3
    lines = (repo / ".git" / "packed-refs").read_bytes().splitlines()
    assert lines[0] == b"# pack-refs with: peeled sorted "  # (not fully-peeled any more)
    records = [line.split(b" ")[1] for line in lines[1:] if not line.startswith(b"^")]
    assert records == sorted(records)
    assert git(repo, "show-ref", "-d", "v1").count("\n") == 2  # the peeled line is still there
    assert not list((repo / ".git" / "refs" / "hydrate" / "tasks").iterdir())  # no lock left
    fsck(repo)


def test_a_tag_object_added_is_peeled_by_git(repo: Path) -> None:
    """A creation is not read: the header must not promise every ref is peeled."""
    git(repo, "tag", "-a", "-m", "a tag", "v1")
    tag = git(repo, "rev-parse", "v1").strip()
    git(repo, "pack-refs", "--all", "--prune")  # git's header says fully-peeled
    with Repository(repo) as store:
        assert create_packed(
            store.common_dir, store.settings, [(b"refs/hydrate/x/t", tag.encode())]
        )
    peeled = git(repo, "show-ref", "-d", "refs/hydrate/x/t").splitlines()
    assert peeled[-1].split()[0] == git(repo, "rev-parse", "v1^{commit}").strip()
    fsck(repo)


def test_names_outside_its_namespaces_and_odd_files_are_left_to_git(
    repo: Path, commit: bytes
) -> None:
    for name in (b"refs/tags/v9", b"refs/heads/b", b"refs/notes/n", b"refs/zzz/last"):
        _refused(repo, commit, [name])
    packed = repo / ".git" / "packed-refs"
    git(repo, "update-ref", "refs/hydrate/tasks/K-0", commit.decode())
    git(repo, "pack-refs", "--all", "--prune")
    good = packed.read_bytes()
    # files git itself refuses to read ("unexpected line"): a header after the first
    # line, CRLF line ends
    for odd in (good + b"# pack-refs with: peeled\n", good.replace(b"\n", b"\r\n")):
        packed.write_bytes(odd)
        with Repository(repo) as store:
            assert not create_packed(
                store.common_dir, store.settings, [(b"refs/hydrate/tasks/K-1", commit)]
            )
        assert packed.read_bytes() == odd
    packed.write_bytes(good)


def _refused(repo: Path, commit: bytes, names: list[bytes]) -> None:
    """create_packed changes nothing and says so; git's own transaction decides."""
    packed = repo / ".git" / "packed-refs"
    before = (_all_refs(repo), packed.read_bytes() if packed.exists() else b"")
    with Repository(repo) as store:
        assert not create_packed(
            store.common_dir, store.settings, [(name, commit) for name in names]
        )
    assert (_all_refs(repo), packed.read_bytes() if packed.exists() else b"") == before


def test_a_lock_held_by_another_writer_leaves_it_to_git(repo: Path, commit: bytes) -> None:
    names = _names("L", 3)
    tasks = repo / ".git" / "refs" / "hydrate" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "L-001.lock").write_text("")
    _refused(repo, commit, names)
    assert sorted(os.listdir(tasks)) == ["L-001.lock"]  # only the other writer's lock
    (tasks / "L-001.lock").unlink()
    (repo / ".git" / "packed-refs.lock").write_text("")
    _refused(repo, commit, names)
    assert os.listdir(tasks) == []


def test_the_locks_are_links_to_one_file_that_git_honours(
    repo: Path, commit: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``<ref>.lock`` after the first is a hard link to it (no inode per
    ref), and git's own writer of such a ref is kept out while they are held."""
    names = _names("N", 5)
    tasks = repo / ".git" / "refs" / "hydrate" / "tasks"
    seen: list[tuple[set[int], set[int], int]] = []
    write_packed = packed_module._write_packed

    def while_held(
        common: str, creations: list[tuple[bytes, bytes]], lock: str, paths: list[str]
    ) -> bool:
        stats = [os.stat(tasks / f"N-{i:03d}.lock") for i in range(5)]
        late = subprocess.run(
            ["git", "-C", str(repo), "update-ref", "refs/hydrate/tasks/N-003", commit.decode()],
            capture_output=True,
        )
        seen.append(({s.st_ino for s in stats}, {s.st_nlink for s in stats}, late.returncode))
        return write_packed(common, creations, lock, paths)

    monkeypatch.setattr(packed_module, "_write_packed", while_held)
    with Repository(repo) as store:
        assert create_packed(store.common_dir, store.settings, [(n, commit) for n in names])
    [(inodes, links, late)] = seen
    assert len(inodes) == 1 and links == {5}
    assert late != 0  # git's writer found N-003.lock taken
    assert os.listdir(tasks) == []
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/hydrate/tasks/").split() == [
        n.decode() for n in names
    ]
    fsck(repo)


def test_where_links_cannot_be_made_each_lock_is_a_file(
    repo: Path, commit: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without hard links, or a file at its link limit: the lock is
    a file of its own (and the next ones link to it); a lock held is still refused."""
    calls = []

    def refuse_every_other(source: str, target: str) -> None:
        calls.append(target)
        if len(calls) % 2:
            raise OSError(errno.EMLINK, "Too many links", target)
        real_link(source, target)

    real_link = os.link
    monkeypatch.setattr(os, "link", refuse_every_other)
    names = _names("F", 6)
    with Repository(repo) as store:
        assert create_packed(store.common_dir, store.settings, [(n, commit) for n in names])
    assert len(calls) >= 3
    tasks = repo / ".git" / "refs" / "hydrate" / "tasks"
    assert os.listdir(tasks) == []
    assert len(git(repo, "for-each-ref", "refs/hydrate/tasks/").splitlines()) == 6
    (tasks / "G-003.lock").write_text("")
    _refused(repo, commit, _names("G", 6))
    assert os.listdir(tasks) == ["G-003.lock"]


def test_a_ref_in_the_way_leaves_it_to_git(repo: Path, commit: bytes) -> None:
    git(repo, "update-ref", "refs/hydrate/tasks/E-001", commit.decode())
    _refused(repo, commit, _names("E", 3))  # exists, loose
    git(repo, "pack-refs", "--all", "--prune")
    _refused(repo, commit, _names("E", 3))  # exists, packed
    git(repo, "update-ref", "refs/hydrate/tasks/D-000/below", commit.decode())
    _refused(repo, commit, _names("D", 3))  # a ref below a name (loose)
    git(repo, "pack-refs", "--all", "--prune")
    _refused(repo, commit, _names("D", 3))  # the same, packed
    _refused(repo, commit, [b"refs/hydrate/tasks/E-001/x", b"refs/hydrate/tasks/Q"])  # above
    _refused(repo, commit, [b"refs/hydrate/tasks/R", b"refs/hydrate/tasks/R"])  # twice
    _refused(repo, commit, [b"refs/hydrate/tasks/bad..name"])
    _refused(repo, commit, [b"refs/hydrate/tasks/x", b"refs/hydrate/tasks/x/y"])
    git(repo, "update-ref", "refs/hydrate/tasks/F-001", commit.decode())  # (loose)
    # on a file system that folds case the loose F-001 would answer for f-001 too
    _refused(repo, commit, [b"refs/hydrate/tasks/f-000", b"refs/hydrate/tasks/f-001"])


def test_settings_that_change_what_git_writes_leave_it_to_git(repo: Path, commit: bytes) -> None:
    """A reference-transaction hook sees the transaction; logAllRefUpdates=always
    gets reflogs: through ``update_refs``, which then runs git."""
    hook = repo / ".git" / "hooks" / "reference-transaction"
    seen = repo.parent / "seen"
    hook.write_text(f'#!/bin/sh\ncat >> "{seen}"\n')
    hook.chmod(0o755)
    names = _names("H", 3)
    _refused(repo, commit, names)
    with Repository(repo) as store:
        store.update_refs([(name, None, commit) for name in names], "test", reflog=False)
    assert seen.read_text().count("refs/hydrate/tasks/H-") == 3 * 2  # prepared, committed
    hook.unlink()
    git(repo, "config", "core.logAllRefUpdates", "always")
    with Repository(repo) as store:
        update = [(name, None, commit) for name in _names("G", 80)]
        store.update_refs(update, "test", reflog=False)
    assert (repo / ".git" / "logs" / "refs" / "hydrate" / "tasks" / "G-079").is_file()
    git(repo, "config", "--unset", "core.logAllRefUpdates")
    git(repo, "config", "core.sharedRepository", "group")
    _refused(repo, commit, _names("S", 3))
    git(repo, "config", "--unset", "core.sharedRepository")
    git(repo, "pack-refs", "--all")
    packed = repo / ".git" / "packed-refs"
    packed.rename(repo / ".git" / "elsewhere")
    packed.symlink_to(repo / ".git" / "elsewhere")
    _refused(repo, commit, _names("Y", 3))


_WRITER = """
import subprocess, sys
repo, commit, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(*args, stdin=None):
    return subprocess.run(["git", "-C", repo, *args], input=stdin, capture_output=True).returncode
for r in range(rounds):
    # a name of its own, and one the other writer creates in the same round
    for name in (f"refs/hydrate/tasks/W-{r:03d}", f"refs/hydrate/tasks/P{r:03d}-007"):
        ok = run("update-ref", "--stdin", stdin=f"create {name} {commit}\\n".encode()) == 0
        print(name, "ok" if ok else "lost", flush=True)
    run("pack-refs", "--all", "--prune")
"""


def test_concurrent_writers_lose_nothing(repo: Path, commit: bytes) -> None:
    """Batches of packed creations against a process creating refs of its own
    and of the same names, and packing refs: every write that succeeded stays."""
    other = git(repo, "commit-tree", "-m", "theirs", "HEAD^{tree}").strip()
    rounds = 12
    writer = subprocess.Popen(
        [*python_command(), "-c", _WRITER, str(repo), other, str(rounds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    ours: dict[str, bool] = {}
    with Repository(repo) as store:
        for r in range(rounds):
            batch = [(name, None, commit) for name in _names(f"P{r:03d}", 80)]
            try:
                store.update_refs(batch, "test", reflog=False)
                ok = True
            except refs_module.RefRace:
                ok = False
            ours.update({name.decode(): ok for name, _old, _new in batch})
    out, _err = writer.communicate()
    assert writer.returncode == 0
    theirs = {name: state == "ok" for name, state in (line.split() for line in out.splitlines())}
    refs = dict(
        line.split()[::-1]
        for line in git(repo, "for-each-ref", "--format=%(objectname) %(refname)").splitlines()
    )
    for name, ok in theirs.items():
        if ok:
            assert refs.get(name) == other, name
    for name, ok in ours.items():
        if ok:
            assert refs.get(name) == commit.decode(), name
        if name in theirs:
            assert not (ok and theirs[name]), f"{name}: both creations succeeded"
    assert sum(ours.values()) >= 80  # at least one batch went through
    fsck(repo)


class _Refusing(http.server.BaseHTTPRequestHandler):
    """A git server over http that wants credentials and takes none."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="tasks"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_first_pull_asks_for_credentials_once(tmp_path: Path, repo: Path) -> None:
    """Without a credential helper, the listing of a first pull asks git's askpass
    program; the remote refuses the answer, and the pull ends there (a git fetch
    after it would ask the same program again: twice, once per connection)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL,), daemon=True)
    thread.start()
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass"
    askpass.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{asked}"\necho wrong\n')
    askpass.chmod(0o755)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/tasks.git"
        res = hydrate(repo, "pull", url, env={"GIT_ASKPASS": str(askpass)})
    finally:
        server.shutdown()
        server.server_close()
    assert res.returncode != 0 and res.stderr.startswith("error:"), res
    assert len(res.stderr.splitlines()) == 1, res
    prompts = asked.read_text().splitlines()
    assert [p.split(" ", 1)[0] for p in prompts] == ["Username", "Password"], prompts


@pytest.mark.parametrize("listed_after", [1, 1000])
def test_a_push_of_many_refs_reads_them_in_one_listing_with_the_same_report(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listed_after: int
) -> None:
    """Past a few pushed refs, their local values (the report's ``new``, the mirror)
    come from one listing of refs/hydrate/: the same as read one by one."""
    from git_hydrate.sync import pushing

    monkeypatch.setattr(pushing, "_LISTED_AFTER", listed_after)
    a = clone(remote, tmp_path / "a")
    for i in range(3):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    git(a, "pack-refs", "--all")
    make_task(a, "T-9", body="loose\n")  # (one loose, the others packed)
    res = hydrate(a, "push", "--json")
    assert res.returncode == 0, res
    tips = git(
        a, "for-each-ref", "--format=%(refname:strip=3) %(objectname)", "refs/hydrate/tasks"
    )
    expected = dict(line.split() for line in tips.splitlines())
    outcomes = json.loads(res.stdout)["tasks"]
    pushed = {o["task_id"]: o["new"] for o in outcomes if o["action"] == "pushed-new"}
    assert pushed == expected
    mirror = git(a, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hydrate-remotes/")
    there = git(remote, "for-each-ref", "--format=%(refname) %(objectname)", "refs/hydrate/")
    assert mirror.replace("refs/hydrate-remotes/origin/", "refs/hydrate/") == there


def _pushed_remote(remote: Path, tmp_path: Path, count: int = 4) -> None:
    a = clone(remote, tmp_path / "a")
    for i in range(count):
        make_task(a, f"T-{i}", body=f"body {i}\n")
    assert hydrate(a, "push").returncode == 0


def test_a_first_pull_over_ssh_asks_for_a_passphrase_once(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key with a passphrase and no agent: the listing cannot ask for it (no
    terminal, ssh told to run no askpass program), so git fetch asks, once. The
    listing and the fetch by id each asked (two prompts). The ssh here behaves as
    OpenSSH does with SSH_ASKPASS_REQUIRE=force, or fails as it does without a way
    to ask."""
    _pushed_remote(remote, tmp_path)
    asked = tmp_path / "asked"
    askpass = tmp_path / "askpass"
    askpass.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{asked}"\necho secret\n')
    ssh = tmp_path / "ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        'if [ -z "$SSH_ASKPASS" ] || [ "$SSH_ASKPASS_REQUIRE" = never ]; then\n'
        '  echo "git@host: Permission denied (publickey)." >&2; exit 255\n'
        "fi\n"
        '[ "$("$SSH_ASKPASS" "Enter passphrase for key: ")" = secret ] || exit 255\n'
        'for command; do :; done\nexec sh -c "$command"\n'
    )
    for script in (askpass, ssh):
        script.chmod(0o755)
    b = tmp_path / "b"
    git(tmp_path, "init", "-q", str(b))
    git(b, "remote", "add", "origin", f"ssh://git@host{remote}")
    monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
    env = {
        "GIT_SSH_COMMAND": str(ssh),
        "GIT_SSH_VARIANT": "ssh",
        "SSH_ASKPASS": str(askpass),
        "SSH_ASKPASS_REQUIRE": "force",
    }
    res = hydrate(b, "pull", env=env)
    assert res.returncode == 0 and "4 new here" in res.stdout, res
    assert asked.read_text().splitlines() == ["Enter passphrase for key: "]


_AUTHED_SERVER = """
import base64, http.server, os, sys

class Handler(http.server.CGIHTTPRequestHandler):
    def allowed(self):
        if self.headers.get("Authorization") == "Basic " + base64.b64encode(b"u:tok").decode():
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="tasks"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False

    def do_GET(self):
        if self.allowed():
            super().do_GET()

    def do_POST(self):
        if self.allowed():
            super().do_POST()

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def test_a_first_pull_takes_a_token_from_git_askpass_and_asks_once(
    remote: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An askpass program that hands out a token (as CI sets GIT_ASKPASS): the
    listing takes it and gives it to the fetch by id, so the mirror is written
    packed and the program is asked once. The listing asked nothing, failed,
    and the pull fell back to git fetch (loose refs, and the program asked there)."""
    import sys
    import tempfile

    if sys.version_info >= (3, 13):
        pytest.skip("http.server's CGI is gone from Python 3.13")
    _pushed_remote(remote, tmp_path)
    root = Path(tempfile.mkdtemp(prefix="hydrate-auth-"))
    try:
        git(root, "clone", "-q", "--mirror", str(remote), str(root / "tasks.git"))
        script = root / "site" / "cgi-bin" / "git"
        script.parent.mkdir(parents=True)
        script.write_text(
            f"#!/bin/sh\nGIT_PROJECT_ROOT='{root}' GIT_HTTP_EXPORT_ALL=1 "
            "exec git -c safe.directory='*' http-backend\n"
        )
        for path in [root, *root.rglob("*")]:  # (CGI runs as nobody under root)
            path.chmod(0o777 if path.is_dir() or path == script else 0o666)
        server = subprocess.Popen(
            [sys.executable, "-c", _AUTHED_SERVER],
            cwd=root / "site",
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            url = f"http://127.0.0.1:{server.stdout.readline().strip()}/cgi-bin/git/tasks.git"
            asked = tmp_path / "asked"
            askpass = tmp_path / "askpass"
            askpass.write_text(
                f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{asked}"\n'
                'case "$1" in Username*) echo u;; *) echo tok;; esac\n'
            )
            askpass.chmod(0o755)
            b = tmp_path / "b"
            git(tmp_path, "init", "-q", str(b))
            git(b, "remote", "add", "origin", url)
            monkeypatch.setattr(refs_module, "PACKED_CREATIONS", 2)
            res = hydrate(b, "pull", env={"GIT_ASKPASS": str(askpass)})
        finally:
            server.terminate()
            server.wait(timeout=5)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert res.returncode == 0 and "4 new here" in res.stdout, res
    assert _loose_mirror_refs(b) == [], "fell back to git fetch"
    assert len(git(b, "for-each-ref", "refs/hydrate-remotes/").splitlines()) == 4
    prompts = asked.read_text().splitlines()
    assert [p.split(" ", 1)[0] for p in prompts] == ["Username", "Password"], prompts
    fsck(b)
