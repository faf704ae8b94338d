"""The store's contract: what every caller relies on, checked against the real git.

Run on a SHA-1 and a SHA-256 repository alike. Ref changes go through git's
own transactions; a lost race is told from a refusal by the refs themselves.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from git_hydrate import Conflict, GitFailed
from git_hydrate.errors import EXIT_BUG, CorruptData
from git_hydrate.store import MODE_BLOB, MODE_TREE, RefRace, Repository
from tests.conftest import cat_file_batch, fsck, git, hydrate

REF = b"refs/hydrate/tasks/S-1"


@pytest.fixture(params=["sha1", "sha256"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Repository]:
    path = tmp_path / f"repo-{request.param}"
    git(tmp_path, "init", "-q", f"--object-format={request.param}", str(path))
    with Repository(path) as repo:
        yield repo
    fsck(path)


def _commit(repo: Repository, text: bytes, parents: list[bytes] | None = None) -> bytes:
    blob = repo.write_blob(text)
    tree = repo.update_tree(None, {b"a/b.txt": blob})
    return repo.write_commit(tree, parents or [], "hydrate: test\n", when=1_700_000_000)


def test_objects_are_what_git_computes_and_reads(store: Repository) -> None:
    blob = store.write_blob(b"hello\n")
    expected = git(store.common_dir, "hash-object", "--stdin", input="hello\n").strip()
    assert blob.decode() == expected == store.blob_id(b"hello\n").decode()
    assert store.read_blob(blob) == b"hello\n"
    tree = store.update_tree(None, {b"dir/x": blob, b"y": blob})
    assert store.read_tree(tree)[b"y"] == (MODE_BLOB, blob)
    assert store.read_tree(tree)[b"dir"][0] == MODE_TREE
    commit = store.write_commit(tree, [], "hydrate: one\n", when=1_700_000_000)
    assert store.read_commit_tree(commit) == (tree, [])
    info = store.read_commit_info(commit)
    assert info.commit_time == 1_700_000_000 and info.message == "hydrate: one\n"
    assert git(store.common_dir, "cat-file", "-t", commit.decode()).strip() == "commit"


def test_loose_objects_are_written_as_git_writes_them(store: Repository, tmp_path: Path) -> None:
    """At zlib's fastest level, git's own for loose objects when core.looseCompression
    is unset (a task's link shards took 3x the CPU at zlib's default): byte for byte
    what ``git hash-object -w`` writes."""
    body = b"".join(
        b'{"path": "src/m%d.py", "why": "named in the task"}\n' % i for i in range(400)
    )
    ours = store.write_blob(body).decode()
    loose = os.path.join(store.common_dir, "objects", ours[:2], ours[2:])
    with open(loose, "rb") as fh:
        written = fh.read()
    other = tmp_path / "other"
    git(tmp_path, "init", "-q", f"--object-format={store.hash_name}", str(other))
    (tmp_path / "body").write_bytes(body)
    theirs = git(other, "hash-object", "-w", str(tmp_path / "body")).strip()
    assert theirs == ours
    with open(other / ".git" / "objects" / ours[:2] / ours[2:], "rb") as fh:
        assert fh.read() == written


def test_many_blobs_become_one_pack_git_can_read(store: Repository) -> None:
    datas = [b"body %d\n" % i for i in range(100)]
    oids = store.write_blobs(datas)
    assert [store.read_blob(oid) for oid in oids[:3]] == datas[:3]
    packs = list(Path(store.common_dir, "objects", "pack").glob("*.pack"))
    assert len(packs) == 1
    assert dict(store.stream_blobs([o.decode() for o in oids[:5]])) == {
        o.decode(): d for o, d in zip(oids[:5], datas[:5], strict=True)
    }


def test_writing_an_object_that_exists_freshens_it_as_git_does(store: Repository) -> None:
    """gc --prune spares recent objects: one about to be referenced must be recent."""
    old = 946_684_800  # 2000-01-01
    blob = store.write_blob(b"kept alive\n")
    loose = Path(store.common_dir, "objects", blob[:2].decode(), blob[2:].decode())
    os.utime(loose, (old, old))
    assert store.write_blob(b"kept alive\n") == blob
    assert loose.stat().st_mtime > old + 1e6
    os.utime(loose, (old, old))
    store.write_blobs([b"kept alive\n"])
    assert loose.stat().st_mtime > old + 1e6
    # an object only in a pack: its pack is freshened
    datas = [b"packed %d\n" % i for i in range(100)]
    store.write_blobs(datas)
    pack = next(Path(store.common_dir, "objects", "pack").glob("*.pack"))
    os.utime(pack, (old, old))
    store.write_blobs([*datas, *(b"new %d\n" % i for i in range(100))])
    assert pack.stat().st_mtime > old + 1e6


def test_a_missing_object_is_corrupt_data_not_a_crash(store: Repository) -> None:
    missing = b"0" * (64 if store.hash_name == "sha256" else 40)
    with pytest.raises(CorruptData, match="missing"):
        store.read_blob(missing)
    assert store.read_many([missing]) == [None]


def test_compare_and_swap_creates_moves_and_deletes(store: Repository) -> None:
    one = _commit(store, b"1")
    two = _commit(store, b"2", [one])
    store.compare_and_swap(REF, None, one, "hydrate: create")
    assert store.read_ref(REF) == one
    store.compare_and_swap(REF, one, two, "hydrate: move")
    assert store.read_ref(REF) == two
    assert store.refs_under(b"refs/hydrate/tasks/") == {b"S-1": two}
    # git wrote the reflog, with our message
    log = git(store.common_dir, "reflog", "show", "--format=%gs", REF.decode()).split("\n")
    assert log[:2] == ["hydrate: move", "hydrate: create"]
    store.delete_ref(REF, two, "hydrate: delete")
    assert store.read_ref(REF) is None


def test_a_stale_old_value_is_a_race_and_changes_nothing(store: Repository) -> None:
    one = _commit(store, b"1")
    two = _commit(store, b"2", [one])
    store.compare_and_swap(REF, None, one, "m")
    with pytest.raises(RefRace):
        store.compare_and_swap(REF, None, two, "m")  # it exists now
    with pytest.raises(RefRace):
        store.compare_and_swap(REF, two, one, "m")  # it is not at two
    assert store.read_ref(REF) == one


def test_a_held_lock_is_a_race(store: Repository) -> None:
    one = _commit(store, b"1")
    lock = Path(store.ref_lock(REF))
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text("")
    with pytest.raises(RefRace):
        store.compare_and_swap(REF, None, one, "m")
    lock.unlink()
    store.compare_and_swap(REF, None, one, "m")


def test_a_name_clash_is_refused_with_gits_reason(store: Repository) -> None:
    one = _commit(store, b"1")
    store.compare_and_swap(REF + b"/child", None, one, "m")
    with pytest.raises(Conflict, match=r"cannot create refs/hydrate/tasks/S-1: .*exists"):
        store.compare_and_swap(REF, None, one, "m")


def test_a_transaction_is_all_or_nothing(store: Repository) -> None:
    one = _commit(store, b"1")
    two = _commit(store, b"2", [one])
    a, b = b"refs/hydrate/tasks/A-1", b"refs/hydrate/tasks/B-1"
    store.update_refs([(a, None, one), (b, None, one)], "m")
    with pytest.raises(RefRace):
        store.update_refs([(a, one, two), (b, two, one)], "m")  # b is not at two
    assert (store.read_ref(a), store.read_ref(b)) == (one, one)
    store.update_refs([(a, one, two), (b, one, None)], "m")
    assert (store.read_ref(a), store.read_ref(b)) == (two, None)


def test_packed_refs_are_read_and_updated(store: Repository) -> None:
    one = _commit(store, b"1")
    two = _commit(store, b"2", [one])
    store.compare_and_swap(REF, None, one, "m")
    git(store.common_dir, "pack-refs", "--all")
    assert store.read_ref(REF) == one and store.ref_names_under(b"refs/hydrate/") == {b"tasks/S-1"}
    store.compare_and_swap(REF, one, two, "m")
    assert store.read_ref(REF) == two


def test_settings_come_from_one_read_with_git_c(tmp_path: Path) -> None:
    path = tmp_path / "r"
    git(tmp_path, "init", "-q", str(path))
    env = {"GIT_CONFIG_PARAMETERS": "'hydrate.maxbytes=2k'"}
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with Repository(path) as repo:
            assert repo.settings.size("hydrate.maxBytes") == 2048
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_named_commands(store: Repository) -> None:
    one = _commit(store, b"1")
    two = _commit(store, b"2", [one])
    other = _commit(store, b"3", [one])
    assert store.is_ancestor(one, two) and not store.is_ancestor(two, one)
    assert store.merge_bases(two, other) == [one]
    assert store.reachable([two]) == {one, two}
    assert store.rev_parse(two.decode()) == two.decode()
    assert store.rev_parse("no-such-rev") is None
    assert store.commit_time(two.decode()) == 1_700_000_000


def test_rev_parse_answers_as_git_rev_parse_does(store: Repository, tmp_path: Path) -> None:
    """rev_parse asks the open cat-file process (a spec with a path still goes to
    git rev-parse): on every kind of name, the answer is git's own."""
    work = Path(store.common_dir).parent
    git(work, "config", "user.name", "T")
    git(work, "config", "user.email", "t@example.com")
    (work / "sub").mkdir()
    for n in range(3):
        (work / "sub" / "f.txt").write_text(f"{n}\n")
        (work / "a b.txt").write_text(f"space {n}\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"c{n}")
    git(work, "tag", "light")
    git(work, "tag", "-a", "annotated", "-m", "a tag", "HEAD~1")
    git(work, "branch", "side", "HEAD~2")
    head = git(work, "rev-parse", "HEAD").strip()
    specs = [
        "HEAD", "HEAD~1", "HEAD^", "HEAD^^", "side", "light", "annotated", "refs/tags/light",
        head, head[:12], head[:4], "HEAD@{0}", "HEAD@{1}", "side@{0}", "@", "main", "master",
        "no-such-rev", "HEAD~99", "HEAD^{tree}", "-h", "", "HEAD x", "HEAD:sub", "HEAD:sub/f.txt",
        "HEAD:a b.txt", ":/c1", "HEAD:nope", "annotated^{}", "@{u}", "@{push}", "nosuch@{u}",
        "HEAD@{5}", "main@{99999}", "master@{99999}", "@{-1}", "side@{u}",
    ]  # fmt: skip
    for spec in specs:
        for kind in ("commit", "tree", "object"):
            proc = subprocess.run(
                ["git", "rev-parse", "--verify", "--quiet", f"{spec}^{{{kind}}}"],
                cwd=work,
                capture_output=True,
                text=True,
            )
            expected = proc.stdout.strip() if proc.returncode == 0 else None
            assert store.rev_parse(spec, kind) == expected, (spec, kind)
    store.write_blob(b"the cat-file process still answers reads in order\n")
    assert store.read_blob(store.blob_id(b"the cat-file process still answers reads in order\n"))


def test_a_failing_git_command_is_git_failed_not_corrupt_data(store: Repository) -> None:
    with pytest.raises(GitFailed, match=r"git fetch /nonexistent failed: .+"):
        store.fetch("/nonexistent", ["+refs/hydrate/*:refs/hydrate-remotes/x/*"])
    assert not issubclass(GitFailed, CorruptData)


def test_an_unexpected_exception_exits_3_in_one_line(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_hydrate import ledger

    def broken(*args: object, **kwargs: object) -> object:
        raise KeyError("surprise")

    monkeypatch.setattr(ledger.Ledger, "task_ids", broken)
    monkeypatch.setattr(ledger.listing, "list_tasks", broken)
    result = hydrate(repo, "list")
    assert result.returncode == EXIT_BUG == 3
    assert result.stderr.count("\n") == 1
    assert "hit a bug (KeyError: 'surprise' at test_store.py:" in result.stderr
    assert "please report it" in result.stderr and "GIT_HYDRATE_DEBUG=1" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("committer_date", "expected_time", "expected_tz"),
    [
        ("@1700000000 +0200", 1_700_000_000, "+0200"),
        ("1700000000 -0530", 1_700_000_000, "-0530"),
        ("Thu, 07 Apr 2005 22:13:13 +0200", 1_112_904_793, "+0200"),
        ("2005-04-07T22:13:13Z", 1_112_911_993, "+0000"),
        ("2005-04-07T22:13:13+02:00", 1_112_904_793, "+0200"),
    ],
)
def test_commits_take_gits_date_variables(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    committer_date: str,
    expected_time: int,
    expected_tz: str,
) -> None:
    from git_hydrate import Ledger

    path = tmp_path / "dates"
    git(tmp_path, "init", "-q", str(path))
    monkeypatch.setenv("GIT_COMMITTER_DATE", committer_date)
    monkeypatch.setenv("GIT_AUTHOR_DATE", "@1600000000 +0100")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Author Person")
    with Ledger(path) as ledger:
        ledger.add_task("D-1", objective="o", acceptance="a")
        ledger.set_status("D-1", "in_progress")
        ledger.add_checkpoint("D-1", "s", tokens=1)
        checkpoint_at = ledger.status("D-1")["checkpoint"]["at"]  # type: ignore[index]
    shown = git(path, "log", "-1", "--format=%ct %ci|%at %ai|%an", "refs/hydrate/tasks/D-1")
    committer, author, author_name = shown.strip().split("|")
    assert committer.split()[0] == str(expected_time)
    assert committer.endswith(expected_tz)
    assert author.split()[0] == "1600000000" and author.endswith("+0100")
    assert author_name == "Author Person"
    # the checkpoint's time is git's "now" too, so a replay gives the same bytes
    assert datetime.fromisoformat(checkpoint_at).timestamp() == expected_time
    fsck(path)


def test_an_explicit_clock_wins_over_gits_date_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from git_hydrate import Ledger

    path = tmp_path / "clock"
    git(tmp_path, "init", "-q", str(path))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1700000000 +0000")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "@1700000000 +0000")
    with Ledger(path, clock=lambda: 1_500_000_000.0) as ledger:
        ledger.add_task("C-1", objective="o", acceptance="a")
    assert git(path, "log", "-1", "--format=%ct %at", "refs/hydrate/tasks/C-1").split() == [
        "1500000000",
        "1500000000",
    ]


def test_an_unreadable_date_variable_is_refused_like_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "bad"
    git(tmp_path, "init", "-q", str(path))
    monkeypatch.setenv("GIT_COMMITTER_DATE", "not a date")
    res = hydrate(path, "task-add", "B-1", "--objective", "o", "--acceptance", "a")
    assert res.returncode != 0
    assert "invalid date format" in res.stderr
    assert git(path, "for-each-ref", "refs/hydrate") == ""


@pytest.mark.parametrize(
    ("config", "env"),
    [
        ({}, {}),  # the tests' identity, from the user's config
        ({"user.name": "Zoë Ünïcode", "committer.email": "z@example.org"}, {"TZ": "Asia/Kolkata"}),
        ({"committer.name": "Commit Ter"}, {"TZ": "America/St_Johns"}),
        ({"user.name": " Padded. "}, {}),  # git strips the ends: git's answer is taken
        ({"user.email": "<angled@example.com>"}, {}),
        ({"user.name": "In<side>"}, {}),
        ({}, {"GIT_COMMITTER_NAME": "From Env"}),
        ({}, {"GIT_COMMITTER_EMAIL": ""}),  # git refuses: so does the store
    ],
)
def test_the_committer_identity_is_what_git_var_says(
    repo: Path, monkeypatch: pytest.MonkeyPatch, config: dict[str, str], env: dict[str, str]
) -> None:
    """Read from the settings where that is certain (no ``git var`` process), else
    asked of git: either way what ``git var GIT_COMMITTER_IDENT`` says, the time
    zone included."""
    from git_hydrate.errors import NoIdentity

    for key, value in config.items():
        git(repo, "config", key, value)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    proc = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], cwd=repo, capture_output=True)
    with Repository(repo) as store:
        if proc.returncode != 0:
            with pytest.raises(NoIdentity):
                store.identity()
            return
        name_email, _, moment = proc.stdout.strip().rpartition(b">")
        tz = moment.split()[1].decode()
        who = store.identity()
    assert who.name_email == name_email + b">"
    sign = -1 if tz.startswith("-") else 1
    assert who.tz_offset == sign * (int(tz[1:3]) * 3600 + int(tz[3:]) * 60)
    assert who.when is None


def test_an_identity_is_a_tuple_with_named_fields() -> None:
    import copy
    import pickle

    from git_hydrate.store import Identity

    who = Identity(b"A U Thor <a@example.com>", 3600)
    assert who == (b"A U Thor <a@example.com>", 3600, None) and who.when is None
    assert (who.name_email, who.tz_offset) == (b"A U Thor <a@example.com>", 3600)
    assert copy.deepcopy(who) == pickle.loads(pickle.dumps(who)) == who


def test_remembering_answers_as_git_does_and_reads_each_object_once(store: Repository) -> None:
    text, binary = store.write_blob(b"caf\xc3\xa9\n"), store.write_blob(b"\xff\xfe\n")
    commit = _commit(store, b"remembered\n")
    tree = store.read_commit_tree(commit)[0]
    specs = [commit, tree, text, binary, commit + b":a/b.txt", b"0" * len(commit)]
    expected = store.read_many(specs)
    digests = [store.blob_digest(oid, limit) for oid in (text, binary) for limit in (1, 1 << 20)]
    with store.remembering():
        assert store.read_many(specs) == expected  # read ahead, once
        store.close()  # the reader is gone: what follows is answered from memory
        assert store.read_many(specs[:5]) == expected[:5]
        assert store.read_tree(tree) == store.parse_tree(tree, expected[1][1])  # type: ignore[index]
        again = [store.blob_digest(oid, limit) for oid in (text, binary) for limit in (1, 1 << 20)]
        assert again == digests
        assert store._cat_file is None  # no reader was started for any of them
        assert digests[1][1:] == (hashlib.sha256(b"caf\xc3\xa9\n").hexdigest(), True)
        assert digests[0][1] is None and digests[3][2] is False
        with pytest.raises(CorruptData, match="is missing"):
            store.read_raw(b"0" * len(commit))  # a missing object is asked again, not kept
    # outside the block, nothing is kept: reads go to git again
    assert store._memo is None
    assert store.read_many(specs) == expected


def test_read_trees_parses_each_tree_once_and_names_what_is_none(store: Repository) -> None:
    blob = store.write_blob(b"not a tree\n")
    commit = _commit(store, b"trees\n")
    tree = store.read_commit_tree(commit)[0]
    missing = b"0" * len(commit)
    entries = store.parse_tree(tree, store.read_raw(tree)[1])
    assert store.read_trees([tree, blob, missing, commit]) == [entries, None, None, None]
    with store.remembering():
        [first] = store.read_trees([tree])
        store.close()  # kept: answered without a reader
        [again] = store.read_trees([tree])
        assert again is first and first == entries
        assert store.read_tree(tree) == entries
        assert store._cat_file is None


def test_reads_answer_as_cat_file_from_loose_files_packs_and_replace_refs(
    store: Repository, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Loose objects are read without starting git, whatever the spec asks (an id,
    a path, one not there, one through a blob); once an object is not loose (packed),
    or replace refs change what git reads, git answers, and the answers are the same."""
    path = Path(store.git_dir).parent
    first = _commit(store, b"first\n")
    blob = store.write_blob(b"second\n")
    tree = store.update_tree(None, {b"a/b.txt": blob, b"top.txt": blob, b"a/c/d.txt": blob})
    tip = store.write_commit(tree, [first], "hydrate: second\n", when=1_700_000_000)
    specs = [tip, tip + b":a/b.txt", tip + b":a/c", tip + b":top.txt", tip + b":nothing"]
    specs += [tip + b":a/nothing", first + b":a/b.txt", tip + b":top.txt/x", tip + b":a//b.txt"]
    specs += [tree, b"0" * len(tip), tip + b":a/c/d.txt"]
    expected = cat_file_batch(path, specs[:7])
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    with Repository(path) as fresh:
        assert fresh.read_many(specs[:7]) == expected
    # all of it from the loose files (no git process at all: no trace)
    assert not trace.exists() or "cat-file" not in trace.read_text()
    monkeypatch.delenv("GIT_TRACE")
    with Repository(path) as fresh:  # the odd paths and a missing object: git says
        assert fresh.read_many(specs) == cat_file_batch(path, specs)
    git(path, "repack", "-adq")
    git(path, "prune-packed")
    with Repository(path) as fresh:
        assert fresh.read_many(specs) == cat_file_batch(path, specs)
    other = _commit(store, b"replacement\n")
    git(path, "replace", tip.decode(), other.decode())
    with Repository(path) as fresh:
        replaced = fresh.read_many(specs[:4])
    assert replaced == cat_file_batch(path, specs[:4]) and replaced[1] == (
        b"blob",
        b"replacement\n",
    )


def _refusing_hook(repo: Path, lines: str) -> None:
    """A reference-transaction hook that refuses any change under refs/hydrate/,
    printing ``lines`` (shell ``printf`` text) on stderr."""
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(
        "#!/bin/sh\n"
        '[ "$1" = prepared ] || exit 0\n'
        "grep -q refs/hydrate/ || exit 0\n"
        f"printf '{lines}' >&2\n"
        "exit 1\n"
    )
    hook.chmod(0o755)


def test_a_refusing_reference_transaction_hook_is_heard(repo: Path) -> None:
    """What the hook says is why: its lines under the one-line error, neutralised
    and bounded; doctor, which could not help, is not named."""
    _refusing_hook(
        repo,
        "policy: tasks are frozen until Monday\\n"
        "see \\033[31mhttps://wiki.example/freeze\\033[0m\\n"
        + "L" * 3000
        + "".join(f"\\nline {i}" for i in range(20))
        + "\\n",
    )
    res = hydrate(repo, "task-add", "H-1", "--objective", "o", "--acceptance", "a")
    assert res.returncode == 1 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert lines[0] == (
        "error: cannot create refs/hydrate/tasks/H-1: a reference-transaction hook "
        "refused it (ref updates aborted by hook), saying:"
    )
    assert lines[1:3] == [
        "  policy: tasks are frozen until Monday",
        "  see \\x1b[31mhttps://wiki.example/freeze\\x1b[0m",
    ]
    assert lines[3].startswith("  LLLL") and lines[3].endswith("...") and len(lines[3]) < 240
    assert lines[-1] == "  ... and 15 more lines"
    assert len(lines) == 10
    assert "\x1b" not in res.stderr and "doctor" not in res.stderr
    assert git(repo, "for-each-ref", "refs/hydrate/") == ""


def test_a_hook_that_refuses_in_silence_is_named(repo: Path) -> None:
    _refusing_hook(repo, "")
    res = hydrate(repo, "task-add", "H-1", "--objective", "o", "--acceptance", "a")
    assert (res.returncode, res.stderr) == (
        1,
        "error: cannot create refs/hydrate/tasks/H-1: a reference-transaction hook "
        "refused it (ref updates aborted by hook), saying nothing\n",
    )
