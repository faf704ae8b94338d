"""The blob-facts cache's layout: chunks appended, a damaged tail rewritten whole."""

from __future__ import annotations

import zlib
from pathlib import Path

import msgspec
import pytest

from git_hydrate.hydrate import facts as facts_module
from git_hydrate.hydrate.facts import HEADER, FactsCache
from git_hydrate.hydrate.terms import blob_facts


def _oid(n: int) -> str:
    return f"{n:040x}"


def _fill(path: Path, numbers: range) -> None:
    cache = FactsCache(str(path))
    for n in numbers:
        assert cache.get(_oid(n)) is None
        cache.put(_oid(n), blob_facts(f"def name_{n}(): pass\n".encode()))
    cache.save()


def test_a_run_appends_what_it_learned(tmp_path: Path) -> None:
    path = tmp_path / "blob-facts"
    _fill(path, range(3))
    first = path.read_bytes()
    assert first.startswith(HEADER)
    _fill(path, range(3, 5))
    second = path.read_bytes()
    assert second.startswith(first) and len(second) > len(first)  # appended, not rewritten
    again = FactsCache(str(path))
    for n in range(5):
        found = again.get(_oid(n))
        assert found is not None and f"name_{n}" in found.symbols


def test_a_damaged_chunk_ends_the_file_and_the_next_save_rewrites_it(tmp_path: Path) -> None:
    path = tmp_path / "blob-facts"
    _fill(path, range(3))
    whole = path.read_bytes()
    path.write_bytes(whole + b"999 0\n\xc1cut short")
    cache = FactsCache(str(path))
    assert cache.get(_oid(1)) is not None  # the chunks before the damage still count
    cache.put(_oid(9), blob_facts(b"x = 1\n"))
    cache.save()
    data = path.read_bytes()
    assert b"cut short" not in data
    assert all(FactsCache(str(path)).get(_oid(n)) is not None for n in (0, 1, 2, 9))
    for damage in (HEADER + b"12x\n", HEADER + b"5 0\n\xc1\xc1\xc1\xc1\xc1", b"# older 1\n"):
        path.write_bytes(damage)
        assert FactsCache(str(path)).get(_oid(0)) is None


def test_past_the_bound_the_file_is_rewritten_pruned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(facts_module, "MAX_ENTRIES", 4)
    path = tmp_path / "blob-facts"
    _fill(path, range(4))
    _fill(path, range(4, 6))
    cache = FactsCache(str(path))
    kept = [n for n in range(6) if cache.get(_oid(n)) is not None]
    assert kept == [2, 3, 4, 5]  # the oldest unused went first
    frame, _, chunk = path.read_bytes()[len(HEADER) :].partition(b"\n")
    assert frame == b"%d %d" % (len(chunk), zlib.crc32(chunk))  # one chunk: rewritten whole


def test_a_blob_read_again_is_not_tokenised_again_when_its_facts_are_kept(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sha256 cache gone, the blob facts kept: every blob is read, hashed and
    scanned again, but none is tokenised again, and the run ranks the same."""
    from git_hydrate import Ledger
    from git_hydrate.hydrate import reading
    from tests.conftest import commit_files

    commit_files(
        repo, {f"src/mod_{n}.py": f"def retry_budget_{n}():\n    pass\n" for n in range(5)}
    )

    def run(task: str) -> list[tuple[str, int]]:
        with Ledger(repo) as ledger:
            ledger.add_task(task, objective="retry budget 3", acceptance="-")
            ledger.add_tree(task)
            return sorted((e["source"], e["priority"]) for e in ledger.context_entries(task))

    first = run("F-1")
    (repo / ".git" / "hydrate" / "sha256-cache").unlink()

    def no_tokenising(data: bytes) -> object:
        raise AssertionError("a blob whose facts are kept was tokenised again")

    monkeypatch.setattr(reading, "blob_facts", no_tokenising)
    assert run("F-2") == first
    assert (repo / ".git" / "hydrate" / "sha256-cache").exists()  # read again, all of it


def test_a_run_learning_many_blobs_appends_them_a_chunk_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """put_encoded holds about _FLUSH bytes of new facts, never all of them: each
    full chunk is appended at once, the rest by save(); all read back, in order."""
    monkeypatch.setattr(facts_module, "_FLUSH", 200)
    path = tmp_path / "blob-facts"
    cache = FactsCache(str(path))
    learned = {_oid(n): blob_facts(f"def name_{n}(): pass\n".encode()) for n in range(40)}
    for oid, found in learned.items():
        cache.put_encoded(oid, found)
        cache.put_encoded(oid, found)  # (once)
        assert cache.peek(oid) == (
            found if oid in cache._new else None
        )  # (appended: asked no more)
        assert sum(len(raw) for raw in cache._new.values()) < 200 + 100
    assert path.exists()  # (chunks appended while learning)
    cache.save()
    read = FactsCache(str(path))
    assert {oid: read.get(oid) for oid in learned} == learned
    assert list(read._load()) == list(learned)
    data = path.read_bytes()
    assert data.startswith(HEADER) and data.count(b"\n") > 5  # several chunks
    # past the bound, what is left is merged and the file rewritten pruned
    monkeypatch.setattr(facts_module, "MAX_ENTRIES", 50)
    more = FactsCache(str(path))
    for n in range(40, 60):
        more.put_encoded(_oid(n), blob_facts(f"def name_{n}(): pass\n".encode()))
    more.save()
    kept = FactsCache(str(path))._load()
    assert len(kept) == 50 and all(_oid(n) in kept for n in range(40, 60))


def test_a_file_that_is_there_but_not_trusted_is_rewritten_not_appended_to(
    tmp_path: Path,
) -> None:
    """A cache another user could have written (group-writable, as `chmod -R g+w`
    leaves it) is not read; the next save makes it private and whole again, so it
    is read after (appending to it would grow a file nobody reads)."""
    path = tmp_path / "blob-facts"
    _fill(path, range(3))
    path.chmod(0o620)
    assert FactsCache(str(path)).get(_oid(0)) is None  # not trusted: not read
    _fill(path, range(3, 5))
    assert path.stat().st_mode & 0o077 == 0
    read = FactsCache(str(path))
    assert [n for n in range(5) if read.get(_oid(n)) is not None] == [3, 4]


def test_an_append_that_fails_is_not_tried_again_for_every_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk that cannot be appended (a full disk, a file another user made)
    leaves the run's facts to save(), which tries once to rewrite the file: not
    one write and one encoding of everything held for each blob learned after."""
    monkeypatch.setattr(facts_module, "_FLUSH", 200)
    writes: list[bool] = []

    def refused(*args: object, whole: bool) -> None:
        writes.append(whole)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(facts_module, "write_derived", refused)
    cache = FactsCache(str(tmp_path / "blob-facts"))
    for n in range(200):
        cache.put_encoded(_oid(n), blob_facts(f"def name_{n}(): pass\n".encode()))
    cache.save()
    assert writes == [False, True]  # one append tried, then one rewrite


def test_past_the_bound_the_count_is_not_made_for_every_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full cache declines to append; how many it would hold is asked again only
    after another chunk's worth of facts, not for each blob."""
    monkeypatch.setattr(facts_module, "_FLUSH", 200)
    monkeypatch.setattr(facts_module, "MAX_ENTRIES", 0)
    asked: list[int] = []
    held = FactsCache._held

    def counted(self: FactsCache) -> int:
        asked.append(1)
        return held(self)

    monkeypatch.setattr(FactsCache, "_held", counted)
    cache = FactsCache(str(tmp_path / "blob-facts"))
    for n in range(200):
        cache.put_encoded(_oid(n), blob_facts(f"def name_{n}(): pass\n".encode()))
    size = sum(len(raw) for raw in cache._new.values())
    assert 0 < len(asked) <= size // 200 + 1


def test_a_bit_flipped_in_a_chunk_is_damage_not_other_facts(tmp_path: Path) -> None:
    """Each chunk carries a CRC-32: a flipped bit that msgspec would still decode
    (here inside a word) is a damaged chunk, dropped and rewritten, never facts
    that rank otherwise; so is a chunk cut short with another appended after it."""
    path = tmp_path / "blob-facts"
    _fill(path, range(3))
    data = path.read_bytes()
    at = data.index(b"name_1")
    path.write_bytes(data[:at] + b"nbme_1" + data[at + 6 :])
    flipped = FactsCache(str(path))
    assert all(flipped.get(_oid(n)) is None for n in range(3))
    flipped.put(_oid(9), blob_facts(b"x = 1\n"))
    flipped.save()
    assert FactsCache(str(path)).get(_oid(9)) is not None and b"nbme_1" not in path.read_bytes()
    _fill(path, range(3))
    whole = path.read_bytes()
    later = {_oid(10): blob_facts(b"def name_10(): pass\n")}
    appended = facts_module._framed(msgspec.msgpack.encode(later))
    path.write_bytes(whole[:-5] + appended)  # another run's chunk after a cut one
    read = FactsCache(str(path))
    assert read.get(_oid(9)) is not None  # the chunks before the cut one still count
    assert read.get(_oid(0)) is None and read.get(_oid(10)) is None


def test_an_append_cut_short_says_so_and_the_next_run_reads_around_it(tmp_path: Path) -> None:
    """A write the system cuts short (here the file size limit, as a full disk
    would) is not taken as done: the rest is written, and the error that stops it
    is raised. The cut chunk then reads as damaged, the ones before it count, and
    the next save heals the file."""
    import resource
    import signal

    from git_hydrate.store import write_derived

    path = tmp_path / "blob-facts"
    _fill(path, range(3))
    size = path.stat().st_size
    chunk = facts_module._framed(msgspec.msgpack.encode({_oid(7): blob_facts(b"y = 2\n")}))
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, not a killed process
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, limits[1]))
        with pytest.raises(OSError):
            write_derived(None, str(path), HEADER, chunk, whole=False)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, handler)
    assert path.read_bytes()[size:] == chunk[:10]  # the cut, as the system left it
    cache = FactsCache(str(path))
    assert [cache.get(_oid(n)) is not None for n in (0, 1, 2, 7)] == [True, True, True, False]
    cache.put(_oid(8), blob_facts(b"z = 3\n"))
    cache.save()
    healed = FactsCache(str(path))
    assert all(healed.get(_oid(n)) is not None for n in (0, 1, 2, 8))
