"""The sha256 cache's verdicts: kept by blob id under one version of the rules, bounded;
a tree's own kept by its id, used only for the same files, damage a miss."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zlib
from pathlib import Path

import pytest

from git_hydrate.hydrate import cache as cache_module
from git_hydrate.hydrate.cache import Sha256Cache, rules_version
from git_hydrate.store import Repository
from tests.conftest import commit_files, damaged_beside_a_copy, git, hydrate, next_task_runs

SECRET = "API_TOKEN=" + "x9Y8z7W6v5U4t3S2" + "\n"


def _skipped(repo: Path, task: str) -> dict[str, str]:
    hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a")
    done = hydrate(repo, "add-tree", task, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    return {s["path"]: s["reason"] for s in out["skipped"]}


def sealed(lines: bytes) -> bytes:
    """``lines`` as the sha256 cache writes a block of them: after their CRC-32 and
    length (what anyone who can write the file can do)."""
    return b"# %08x %d\n" % (zlib.crc32(lines), len(lines)) + lines


def _forge_text(repo: Path, rules: str) -> None:
    """A cache that calls the secret file text, under the rules version ``rules``
    (and no tree's own verdicts, which would answer first)."""
    shutil.rmtree(repo / ".git" / "hydrate" / "tree-verdicts", ignore_errors=True)
    oid = git(repo, "rev-parse", "HEAD:deploy.env").strip()
    digest = hashlib.sha256(SECRET.encode()).hexdigest()
    path = repo / ".git" / "hydrate" / "sha256-cache"
    header = Sha256Cache.HEADER + f"# rules {rules}\n".encode()
    path.write_bytes(header + sealed(f"{oid} {digest} text\n".encode()))
    path.chmod(0o600)


def test_a_verdict_is_trusted_only_under_the_rules_that_gave_it(repo: Path) -> None:
    """A cached verdict is acted on unchecked, so one from other rules (an older
    scan that missed what today's rules catch) is dropped and the blob scanned."""
    commit_files(repo, {"deploy.env": SECRET, "ok.py": "x = 1\n"})
    assert _skipped(repo, "V-1") == {"deploy.env": "secret"}
    _forge_text(repo, "0" * 32)
    assert _skipped(repo, "V-2") == {"deploy.env": "secret"}
    data = (repo / ".git" / "hydrate" / "sha256-cache").read_bytes()
    assert data.startswith(Sha256Cache.HEADER + f"# rules {rules_version()}\n".encode())
    assert b" secret\n" in data
    # the same forged line under today's version is taken as it says (which is why
    # the file must be this user's alone): the version is what keeps it out above
    _forge_text(repo, rules_version())
    assert "deploy.env" not in _skipped(repo, "V-3")


def test_the_rules_version_follows_the_deciding_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "pkg"
    for name in ("secrets/rules.py", "secrets/plain.py", *cache_module._DECIDING[1:]):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(f"# {name}\n")
    monkeypatch.setattr(cache_module, "_PACKAGE", str(package))
    versions = set()
    for change in ("secrets/rules.py", "secrets/new_rules.py", "pack/seed.py"):
        cache_module.rules_version.cache_clear()
        versions.add(rules_version())
        (package / change).write_text("# a new rule\n")
    cache_module.rules_version.cache_clear()
    versions.add(rules_version())
    assert len(versions) == 4  # a changed module, a new one: each another version
    monkeypatch.undo()
    cache_module.rules_version.cache_clear()


def test_the_cache_is_bounded_keeping_what_the_run_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_module, "MAX_ENTRIES", 3)
    path = str(tmp_path / "sha256-cache")
    first = Sha256Cache(path)
    for n in range(3):
        first.put(f"{n:040x}", f"{n:064x}", "text")
    first.save()
    second = Sha256Cache(path)
    assert second.get(f"{0:040x}") is not None  # used by this run
    second.put(f"{7:040x}", f"{7:064x}", "binary")
    second.save()
    third = Sha256Cache(path)
    kept = [n for n in (0, 1, 2, 7) if third.get(f"{n:040x}") is not None]
    assert kept == [0, 2, 7]  # the oldest unused (1) went first
    assert third.get(f"{7:040x}") == (f"{7:064x}", "binary")


def test_what_a_run_added_stays_its_own_when_it_saves_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A blob a run added is used by that run, also after a save wrote it: a later
    save of the same run prunes none of them (only what the run did not touch)."""
    monkeypatch.setattr(cache_module, "MAX_ENTRIES", 2)
    path = str(tmp_path / "sha256-cache")
    first = Sha256Cache(path)
    for n in range(2):
        first.put(f"{n:040x}", f"{n:064x}", "text")
    first.save()
    run = Sha256Cache(path)
    assert run.get(f"{0:040x}") is not None  # used
    run.put(f"{7:040x}", f"{7:064x}", "text")
    run.save()  # three: the unused one (1) goes
    run.put(f"{8:040x}", f"{8:064x}", "text")
    run.save()  # three again, each used by this run: none goes
    kept = Sha256Cache(path)
    assert [n for n in (0, 1, 7, 8) if kept.get(f"{n:040x}") is not None] == [0, 7, 8]


def test_a_row_put_is_a_verdict_like_any_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reading's row put as it is (blob id, sha256, class, size) answers, saves,
    and is rewritten when pruning, as a verdict put alone: the same file."""
    monkeypatch.setattr(cache_module, "MAX_ENTRIES", 3)
    rows, alone = str(tmp_path / "rows"), str(tmp_path / "alone")
    for path, by_row in ((rows, True), (alone, False)):
        cache = Sha256Cache(path)
        cache.put(f"{0:040x}", f"{0:064x}", "text")
        for n in (1, 2):
            oid, digest, cls = f"{n:040x}", f"{n:064x}", "binary"
            if by_row:
                cache.put_row((oid, digest, cls, 10 * n))
            else:
                cache.put(oid, digest, cls)
        assert cache.get(f"{1:040x}") == (f"{1:064x}", "binary")
        assert cache.known([f"{2:040x}", f"{9:040x}"]) == [(f"{2:064x}", "binary"), None]
        cache.save()
        # answered as verdicts after saving too (the rows stay, no longer new)
        assert cache.known([f"{2:040x}"]) == [(f"{2:064x}", "binary")]
        again = Sha256Cache(path)
        if by_row:
            again.put_row((f"{7:040x}", f"{7:064x}", "text", 70))
        else:
            again.put(f"{7:040x}", f"{7:064x}", "text")
        again.put_row((f"{1:040x}", f"{1:064x}", "binary", 10))  # (known: used, not new)
        again.save()  # four: the oldest unused (0) goes, the rows are written back
    assert Path(rows).read_bytes() == Path(alone).read_bytes()
    kept = Sha256Cache(rows)
    assert [n for n in (0, 1, 2, 7) if kept.get(f"{n:040x}") is not None] == [1, 2, 7]


def _tree_file(repo: Path) -> Path:
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    return repo / ".git" / "hydrate" / "tree-verdicts" / tree


def _plant(repo: Path, oids: list[str], verdicts: list[tuple[str, str]]) -> None:
    """A tree's verdicts file as :meth:`Sha256Cache.keep_tree` writes it (private)."""
    with Repository(repo) as store:
        Sha256Cache.of(store).keep_tree(_tree_file(repo).name, oids, verdicts)


def test_a_trees_verdicts_are_kept_by_its_id_and_answer_for_the_same_files(
    repo: Path,
) -> None:
    commit_files(repo, {"deploy.env": SECRET, "ok.py": "x = 1\n", "b.py": "y = 2\n"})
    assert _skipped(repo, "T-1") == {"deploy.env": "secret"}
    kept = _tree_file(repo)
    assert kept.stat().st_mode & 0o077 == 0
    bodies = {"README": "hello\n", "b.py": "y = 2\n", "deploy.env": SECRET, "ok.py": "x = 1\n"}
    oids = [git(repo, "rev-parse", f"HEAD:{name}").strip() for name in bodies]
    digests = [hashlib.sha256(body.encode()).hexdigest() for body in bodies.values()]
    with Repository(repo) as store:
        cache = Sha256Cache.of(store)
        assert cache.of_tree(kept.name, oids) == (digests, ["text", "text", "secret", "text"])
        assert cache.of_tree(kept.name, oids[:2]) is None  # (another file set)
        assert cache.of_tree("0" * 40, oids) is None
    # what a new task on the tree acts on: shown by one planted (private) that calls
    # the secret text; a narrowed run asks the whole cache
    _plant(repo, oids, [(digest, "text") for digest in digests])
    assert _skipped(repo, "T-2") == {}
    hydrate(repo, "task-add", "T-3", "--objective", "o", "--acceptance", "a")
    done = hydrate(repo, "add-tree", "T-3", "deploy.env", "b.py", "--json")
    assert [s["reason"] for s in json.loads(done.stdout)["skipped"]] == ["secret"]
    # a view of the whole cache: with that removed, or open to others, it is not used
    for damage in ("removed", "group-writable"):
        _plant(repo, oids, [(digest, "text") for digest in digests])
        whole = repo / ".git" / "hydrate" / "sha256-cache"
        if damage == "removed":
            whole.unlink()
        else:
            whole.chmod(0o664)
        assert _skipped(repo, f"T-4-{damage}") == {"deploy.env": "secret"}
        assert whole.stat().st_mode & 0o077 == 0  # (rewritten, this user's)


@pytest.mark.parametrize("damage", ["flip", "cut", "version", "group-writable", "other-blobs"])
def test_a_damaged_or_foreign_trees_verdicts_are_a_miss_and_rewritten(
    repo: Path, damage: str
) -> None:
    commit_files(repo, {"deploy.env": SECRET, "ok.py": "x = 1\n"})
    assert _skipped(repo, "D-1") == {"deploy.env": "secret"}
    kept = _tree_file(repo)
    good = kept.read_bytes()
    oids = [git(repo, "rev-parse", f"HEAD:{name}").strip() for name in ("README", "deploy.env")]
    oids.append(git(repo, "rev-parse", "HEAD:ok.py").strip())
    text = [(letter * 64, "text") for letter in "abc"]  # (what a miss must not act on)
    if damage in ("flip", "cut", "version", "group-writable"):
        _plant(repo, oids, text)
        data = kept.read_bytes()
        if damage == "flip":
            data = data[:-3] + bytes([data[-3] ^ 1]) + data[-2:]
        elif damage == "cut":
            data = data[:-5]
        elif damage == "version":
            data = data.replace(b"# rules ", b"# rules 0", 1)
        kept.write_bytes(data)
        kept.chmod(0o660 if damage == "group-writable" else 0o600)
    else:
        _plant(repo, [*oids[:2], "f" * 40], text)
    assert _skipped(repo, "D-2") == {"deploy.env": "secret"}
    assert kept.read_bytes() == good  # (checked again, and kept anew)
    assert os.stat(kept).st_mode & 0o077 == 0


def _swap_digests(data: bytes, first: str, second: str) -> bytes:
    """``data`` with the sha256 of the blob ``first`` in the line of ``second``, and back."""
    lines = {
        oid: re.search(rb"^%s ([0-9a-f]{64}) " % oid.encode(), data, re.M)
        for oid in (first, second)
    }
    a, b = (match[1] if match else b"" for match in lines.values())
    assert a and b and a != b
    return data.replace(a, b"\0" * 64).replace(b, a).replace(b"\0" * 64, b)


#: Ways the sha256 cache is damaged (the blob ids of a.txt and b.txt given): each line
#: in a block that does not check is a miss, its blob read again.
CACHE_DAMAGES = {
    "two digests swapped": _swap_digests,
    "a byte of a digest": lambda data, a, b: re.sub(
        rb"(?m)^(%s [0-9a-f]{10})([0-9a-f])" % a.encode(),
        lambda m: m[1] + (b"0" if m[2] != b"0" else b"1"),
        data,
    ),
    "a class": lambda data, a, b: re.sub(
        rb"(?m)^(%s [0-9a-f]{64}) text$" % a.encode(), rb"\1 empty", data
    ),
    "a block's check": lambda data, a, b: re.sub(rb"(?m)^# ([0-9a-f]{8})", b"# 00000000", data),
    "cut short": lambda data, a, b: data[:-1],
    "a line more": lambda data, a, b: data + b"%s %s text\n" % (a.encode(), b"0" * 64),
}


#: One moment for every commit: two runs that record the same make the same commits.


@pytest.mark.parametrize("damage", list(CACHE_DAMAGES))
def test_a_damaged_sha256_cache_commits_nothing_wrong(
    repo: Path, tmp_path: Path, damage: str
) -> None:
    """The next task's add-tree on a damaged sha256 cache records, prints and commits
    exactly what it would have on the cache undamaged (not a sha256 that is another
    body's: ``doctor`` stays clean), and the cache is written again."""
    commit_files(repo, {"a.txt": "alpha body\n", "b.txt": "beta body\n"})
    oids = [git(repo, "rev-parse", f"HEAD:{name}").strip() for name in ("a.txt", "b.txt")]
    assert _skipped(repo, "H-1") == {}
    # (the tree's own verdicts would answer first: as for another tree of these blobs)
    shutil.rmtree(repo / ".git" / "hydrate" / "tree-verdicts")
    clean, cache = tmp_path / "clean", repo / ".git" / "hydrate" / "sha256-cache"
    good = damaged_beside_a_copy(
        repo, clean, cache, lambda data: CACHE_DAMAGES[damage](data, *oids)
    )
    runs = [next_task_runs(where, "H-2") for where in (repo, clean)]
    assert runs[0] == runs[1]
    assert runs[0][3][0] == 0 and "alpha body" in runs[0][2][1]
    assert cache.read_bytes() == good  # the blobs read again, the cache written whole


def test_a_block_cut_short_costs_its_own_lines_only(tmp_path: Path) -> None:
    """A run killed while appending leaves a block cut short: the blocks after it
    (appended by later runs) still count, and the file is written again whole."""
    path = tmp_path / "sha256-cache"
    lines = [f"{n:040x} {n:064x} text\n".encode() for n in range(4)]
    header = Sha256Cache(str(path)).header
    path.write_bytes(header + sealed(lines[0] + lines[1])[:-7] + sealed(lines[2] + lines[3]))
    path.chmod(0o600)
    cache = Sha256Cache(str(path))
    assert [n for n in range(4) if cache.get(f"{n:040x}") is not None] == [2, 3]
    cache.save()  # (nothing new: written again for the damage alone)
    assert path.read_bytes() == header + sealed(lines[2] + lines[3])
