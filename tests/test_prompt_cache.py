"""The rendered-prompt cache: hits are byte-identical, and nothing that changes the
prompt (a new commit, a budget, an expiry crossed) is ever answered from it."""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.pack import prompt_cache as pc
from git_hydrate.pack.budget import Budget

from .conftest import git, hydrate, hydrate_process, stocked_repo

T0 = 1_800_000_000.0


def cache_dir(repo: Path) -> Path:
    return repo / ".git" / "hydrate" / "prompt-cache"


def blob_file(repo: Path, ledger: Ledger, task_id: str, body_hash: str) -> Path:
    oid = next(e for e in ledger.refs.load(task_id).links if e.sha256 == body_hash).oid
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


@pytest.fixture
def task(tmp_path: Path) -> Path:
    return stocked_repo(tmp_path / "repo", "prompt-cache-task", _stock)


def _stock(repo: Path) -> None:
    with Ledger(repo, clock=lambda: T0) as ledger:
        ledger.add_task("C-1", "Cache the prompt", "hits are identical")
        ledger.add_context("C-1", "first body, kept\n" * 20, "notes/a.md", priority=5)
        ledger.add_context("C-1", "second body\n" * 20, "notes/b.md", ttl=3600)


def test_a_hit_is_byte_identical_and_reads_no_body(task: Path) -> None:
    first = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    assert first.returncode == 0, first
    assert len(os.listdir(cache_dir(task))) == 1
    with Ledger(task) as ledger:
        body = ledger.context_entries("C-1")[0]["hash"]
        path = blob_file(task, ledger, "C-1", body)
    saved = path.read_bytes()
    os.chmod(path, 0o644)
    path.unlink()  # a rebuild would need this body: only a hit can answer now
    try:
        again = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
        assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, first.stderr)
        rebuilt = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z", "--no-cache")
        assert rebuilt.returncode != 0
    finally:
        path.write_bytes(saved)


def test_a_new_commit_a_budget_or_a_crossed_expiry_is_a_miss(task: Path) -> None:
    with Ledger(task, clock=lambda: T0) as ledger:
        before = ledger.prompt("C-1", now=T0)
        assert "second body" in before["prompt"]
        # The expiry of notes/b.md (T0 + 3600) is crossed: the cached prompt no longer holds.
        later = ledger.prompt("C-1", now=T0 + 3600)
        assert "second body" not in later["prompt"]
        assert [o["reason"] for o in later["omitted"]] == ["expired"]
        assert ledger.prompt("C-1", now=T0 + 10)["prompt"] == before["prompt"]
        small = ledger.prompt("C-1", max_bytes=before["prompt_bytes"] - 100, now=T0)
        assert small["prompt"] != before["prompt"] and small["omitted"]
        ledger.add_context("C-1", "third body\n", "notes/c.md", priority=9)
        assert "third body" in ledger.prompt("C-1", now=T0)["prompt"]
        assert ledger.prompt("C-1", now=T0, cache=False) == ledger.prompt("C-1", now=T0)


def test_turned_off_damaged_and_bounded(task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git(task, "config", "hydrate.promptCache", "false")
    assert hydrate(task, "prompt", "C-1").returncode == 0
    assert not cache_dir(task).exists()
    git(task, "config", "--unset", "hydrate.promptCache")
    good = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    (entry,) = cache_dir(task).iterdir()
    entry.write_bytes(b"\x93damaged")
    again = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    assert again.stdout == good.stdout  # rebuilt, and the entry written again
    assert entry.read_bytes() != b"\x93damaged"
    entry.write_bytes(entry.read_bytes()[:-10])  # cut short: a miss, not a short prompt
    cut = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    assert cut.stdout == good.stdout
    monkeypatch.setattr(pc, "MAX_ENTRIES", 3)
    with Ledger(task) as ledger:
        for budget in range(6):
            ledger.prompt("C-1", max_bytes=4000 + budget, now=T0)
    assert len(list(cache_dir(task).iterdir())) == 3


def test_a_change_to_the_rendering_code_is_a_miss(
    task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A development install keeps its version string: the code itself is in the key."""
    from git_hydrate.pack.fingerprint import packer_modules

    code = tmp_path / "package"
    (code / "pack").mkdir(parents=True)
    for name in packer_modules():
        (code / name).write_text("# v1\n")
    monkeypatch.setattr(pc, "_HERE", str(code))
    with Ledger(task) as ledger:
        tip = ledger.refs.tip("C-1")
    assert tip is not None
    budget = (1000, None, "o200k_base", False)
    before = pc.PromptCache.key(tip, budget)
    assert pc.PromptCache.key(tip, budget) == before
    (code / "pack" / "render.py").write_text("# v2, a longer line\n")
    changed = pc.PromptCache.key(tip, budget)
    assert changed != before
    (code / "pack" / "new_module.py").write_text("# a module added to pack/\n")
    assert pc.PromptCache.key(tip, budget) not in (before, changed)


def test_the_installed_grammars_are_in_the_key_of_an_outlined_prompt(
    task: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outlines depend on which tree-sitter grammars import: installing or upgrading one
    must not be answered with prompts (or outlines) made without it."""
    from git_hydrate.pack import grammars, stored
    from git_hydrate.pack.budget import Budget

    with Ledger(task) as ledger:
        tip = ledger.refs.tip("C-1")
    assert tip is not None
    plain = Budget(1000, None, "o200k_base", False)
    shrunk = Budget(1000, None, "o200k_base", True)
    before = (pc.PromptCache.key(tip, plain), pc.PromptCache.key(tip, shrunk))
    assert "tree_sitter=" in grammars.grammars()
    for module in (pc, stored):  # each reads it where it keys a cache
        monkeypatch.setattr(module, "grammars", lambda: "tree_sitter=-")
    after = (pc.PromptCache.key(tip, plain), pc.PromptCache.key(tip, shrunk))
    assert after[0] == before[0] and after[1] != before[1]
    code = "def f():\n" + "    x = 1\n" * 300
    with Ledger(task, clock=lambda: T0) as ledger:
        ledger.add_context("C-1", code, "src/m.py", priority=9)
        assert ledger.prompt("C-1", max_bytes=1500, outline=True, now=T0)["shrunk"]
    header = (task / ".git" / "hydrate" / "outlines").read_bytes().split(b"\n")[0]
    monkeypatch.undo()
    with Ledger(task) as ledger:
        assert ledger.prompt("C-1", max_bytes=1500, outline=True, now=T0)["shrunk"]
    assert (task / ".git" / "hydrate" / "outlines").read_bytes().split(b"\n")[0] != header


def test_a_change_to_the_outliner_starts_the_outline_cache_afresh(
    task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An outline is a function of the blob, the grammars and the outliner's code:
    after an upgrade (or a development install's edit) an outline the old code
    made must not be served (review12: a C header outlined to its include guard
    alone by the code before 77a7d02 stayed so after it)."""
    from git_hydrate.pack import stored
    from git_hydrate.pack.fingerprint import packer_modules

    code = tmp_path / "package"
    (code / "pack").mkdir(parents=True)
    for name in packer_modules():
        (code / name).write_text("# v1\n")
    monkeypatch.setattr(stored, "_CODE", str(code), raising=False)
    body = "def f():\n" + "    x = 1\n" * 300
    with Ledger(task, clock=lambda: T0) as ledger:
        ledger.add_context("C-1", body, "src/m.py", priority=9)
        assert ledger.prompt("C-1", max_bytes=1500, outline=True, now=T0)["shrunk"]
    cache = task / ".git" / "hydrate" / "outlines"
    made = cache.read_bytes()
    assert b"def f():" in made
    # what an older outliner left under the same header
    cache.write_bytes(made.replace(b"def f():", b"def OLD():"))
    with Ledger(task, clock=lambda: T0) as ledger:
        old = ledger.prompt("C-1", max_bytes=1500, outline=True, now=T0, cache=False)
    assert "def OLD():" in old["prompt"]  # (the same code: the cache is trusted)
    (code / "pack" / "outline.py").write_text("# v2, the outliner changed\n")
    with Ledger(task, clock=lambda: T0) as ledger:
        new = ledger.prompt("C-1", max_bytes=1500, outline=True, now=T0, cache=False)
    assert "def OLD():" not in new["prompt"] and "def f():" in new["prompt"]
    assert cache.read_bytes().split(b"\n")[0] != made.split(b"\n")[0]


def test_an_entry_someone_else_could_have_written_is_a_miss(task: Path) -> None:
    """A cached prompt is printed unchecked (no neutralising): in a shared repository
    another member could plant one with forged boundary lines. Only entries this
    user wrote, writable by nobody else, are trusted."""
    git(task, "config", "core.sharedRepository", "group")
    good = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    (entry,) = cache_dir(task).iterdir()
    assert entry.stat().st_mode & 0o777 == 0o600  # private, whatever the sharing
    forged = _resealed(entry.read_bytes().replace(b"first body, kept", b"FORGED BODY,KEPT"))
    entry.write_bytes(forged)
    entry.chmod(0o660)
    again = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    assert again.stdout == good.stdout  # rebuilt, not the planted one
    if os.geteuid() == 0:
        entry.write_bytes(forged)
        entry.chmod(0o600)
        os.chown(entry, 4242, -1)  # another user's
        third = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
        assert third.stdout == good.stdout
    entry.write_bytes(forged)
    entry.chmod(0o600)
    os.chown(entry, os.geteuid(), -1)
    mine = hydrate(task, "prompt", "C-1", "--now", "2030-01-01T00:00:00Z")
    # (a CRC-32 tells damage, not a forger who writes as this user: the owner check
    # is what tells them apart)
    assert "FORGED BODY" in mine.stdout


def _flip(data: bytes, at: int) -> bytes:
    """``data`` with one bit of the byte at ``at`` changed."""
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _prompt_start(data: bytes) -> int:
    """Where an entry's prompt starts: after the magic, two sizes and the header."""
    return 16 + int.from_bytes(data[8:12], "big")


def _resealed(data: bytes) -> bytes:
    """``data``, an entry whose prompt was changed (its length kept), with its
    checksums made right again: what anyone who can write the file can do."""
    start = _prompt_start(data)
    header = json.loads(data[16:start])
    header["prompt_crc"] = zlib.crc32(data[start : start + header["prompt_bytes"]])
    text = json.dumps(header, separators=(",", ":")).encode()
    sizes = len(text).to_bytes(4, "big") + zlib.crc32(text).to_bytes(4, "big")
    return data[:8] + sizes + text + data[start:]


def _one_more(name: bytes) -> Callable[[bytes], bytes]:
    """A damage that adds one to the header's integer field ``name``."""
    pattern = re.compile(b'"%s":([0-9]+)' % name)
    return lambda data: pattern.sub(lambda m: b'"%s":%d' % (name, int(m[1]) + 1), data, 1)


#: Ways an entry can be damaged; each must be a miss (and be written again).
DAMAGES = {
    "empty": lambda data: b"",
    "no length": lambda data: data[:7],
    "cut short": lambda data: data[:-1],
    "longer than written": lambda data: data + b"x",
    "magic": lambda data: b"GHPCACHX" + data[8:],
    "length": lambda data: data[:8] + b"\xff\xff\xff\xff" + data[12:],
    "format": lambda data: data.replace(b'"format":6', b'"format":5', 1),
    "fields": lambda data: data.replace(b'"fields":{', b'"fields":[{', 1),
    "until": lambda data: re.sub(rb'"until":[0-9.e+]+', b'"until":"x"', data, count=1),
    "since NaN": lambda data: data.replace(b'"since":null', b'"since":NaN', 1),
    "since inf": lambda data: data.replace(b'"since":null', b'"since":1e999', 1),
    "since true": lambda data: data.replace(b'"since":null', b'"since":true', 1),
    "no kept": lambda data: data.replace(b'"kept":', b'"kep_":', 1),
    "omitted item": lambda data: data.replace(b'"omitted":[]', b'"omitted":[1]', 1),
    "omitted map": lambda data: data.replace(b'"omitted":[]', b'"omitted":{}', 1),
    # what is served: a byte of the prompt (first, inner, last) or of its summary
    "prompt's first byte": lambda data: _flip(data, _prompt_start(data)),
    "a byte of the prompt": lambda data: data[:-200] + b"Z" + data[-199:],
    "prompt's last byte": lambda data: _flip(data, len(data) - 1),
    "two prompt bytes swapped": lambda data: data[:-3] + data[-2:-1] + data[-3:-2] + data[-1:],
    "kept": _one_more(b"kept"),
    "prompt_crc": _one_more(b"prompt_crc"),
    "header's checksum": lambda data: _flip(data, 15),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_an_entry_that_does_not_read_is_a_miss(task: Path, damage: str) -> None:
    good = hydrate(task, "prompt", "C-1")
    (entry,) = cache_dir(task).iterdir()
    damaged = DAMAGES[damage](entry.read_bytes())
    assert damaged != entry.read_bytes()
    entry.write_bytes(damaged)
    again = hydrate(task, "prompt", "C-1")
    assert (again.returncode, again.stdout, again.stderr) == (0, good.stdout, good.stderr)
    assert entry.read_bytes() != damaged  # written again


def test_a_fifo_in_place_of_an_entry_is_a_miss_and_does_not_hang(task: Path) -> None:
    good = hydrate(task, "prompt", "C-1")
    (entry,) = cache_dir(task).iterdir()
    entry.unlink()
    os.mkfifo(entry)
    again = hydrate(task, "prompt", "C-1")
    assert (again.returncode, again.stdout) == (0, good.stdout)
    assert entry.is_file()


def test_the_key_is_held_whole_and_decides(task: Path) -> None:
    """Two keys that share a file name take each other's place; neither is answered
    with the other's prompt."""
    with Ledger(task) as ledger:
        tip = ledger.refs.tip("C-1")
        assert tip is not None
        store = pc.PromptCache(ledger.repo)
        small = ledger.prompt("C-1", max_bytes=900, now=T0)
        small_key = store.key(tip, Budget(900, None, "o200k_base", True))
        big_key = store.key(tip, Budget(131072, None, "o200k_base", True))
        os.replace(store._path(small_key), store._path(big_key))  # as if their names clashed
        assert store.get(big_key, T0) is None and store.get(small_key, T0) is None
        big = ledger.prompt("C-1", now=T0)
    assert small["omitted"] and not big["omitted"]


def test_a_damaged_packet_is_a_miss(task: Path) -> None:
    """An entry written with its packet (``Ledger.prompt``): a byte of the packet's
    JSON changed is a miss for a reader of the packet, and it is written again."""
    with Ledger(task) as ledger:
        good = ledger.prompt("C-1", now=T0)
    (entry,) = cache_dir(task).iterdir()
    data = entry.read_bytes()
    at = data.rindex(b"second body")  # (in the packet, after the prompt)
    assert at > _prompt_start(data) + good["prompt_bytes"]
    entry.write_bytes(data[:at] + b"SECOND" + data[at + 6 :])
    with Ledger(task) as ledger:
        again = ledger.prompt("C-1", now=T0)
    assert again == good
    assert entry.read_bytes() == data  # written again, as it was


def test_a_damaged_prompt_is_never_printed_by_the_entry_point(task: Path) -> None:
    """The tester's case, through a real process (the fast path, which copies a hit
    with sendfile): a byte near the end of the stored prompt changed is a miss,
    the prompt printed is the one built, and the entry is written again."""
    for _ in range(2):
        good = hydrate_process(task, "prompt", "C-1", "--max-bytes", "2k")
        assert good.returncode == 0, good
    (entry,) = cache_dir(task).iterdir()
    data = entry.read_bytes()
    damaged = data[:-200] + b"Z" + data[-199:]
    assert damaged != data
    entry.write_bytes(damaged)
    again = hydrate_process(task, "prompt", "C-1", "--max-bytes", "2k")
    assert (again.returncode, again.stdout, again.stderr) == (0, good.stdout, good.stderr)
    assert entry.read_bytes() == data
