"""A first task's reading shared with a forked child (issue 33, the cold pass):
every item done once, in order, whatever the child does; and add-tree's
outputs, caches and index byte for byte those of one process."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from git_hydrate.hydrate import forked, reading
from git_hydrate.hydrate.forked import both_ends, can_fork
from tests.conftest import commit_files, git, hydrate

needs_fork = pytest.mark.skipif(not can_fork(), reason="no second process here")


def _run(count: int, remote: object = None) -> tuple[list[tuple[str, int]], int]:
    """Items ``0..count-1`` through :func:`both_ends` (forced to fork): what was
    done, in order, and how many came from the child."""
    done: list[tuple[str, int]] = []

    def own(i: int) -> None:
        done.append(("own", i))

    def default_remote(j: int) -> bytes:
        return str(j * j).encode()

    def merge(j: int, result: bytes) -> None:
        assert result == str(j * j).encode()
        done.append(("merged", j))

    merged = both_ends(count, own, remote or default_remote, merge, minimum=0)  # type: ignore[arg-type]
    return done, merged


@needs_fork
def test_every_item_once_in_order_and_the_child_does_some() -> None:
    done, merged = _run(20_000)
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
    shared = _first_task(repo)
    assert merged and merged[0] > 0  # (the child read some of the blobs)
    monkeypatch.setattr(forked, "MIN_ITEMS", 10**9)
    assert _first_task(alone) == shared
    derived = _derived(repo)
    assert {"blob-facts", "sha256-cache"} <= derived.keys() and len(derived) >= 4
    assert _derived(alone) == derived
    assert "secret" in shared[1]


@needs_fork
@pytest.mark.parametrize("limit", [1 << 20, 2048])
def test_the_memo_holds_what_one_process_would_hold(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int
) -> None:
    """Bodies for the prompt come back from the child when every blob fits the
    memo (all kept, as one process keeps them); when they cannot all fit, the
    memo ends empty, as one process's does once a body does not fit."""
    from git_hydrate import Ledger
    from git_hydrate.pack.memo import BodyMemo

    _tree(repo)
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
    assert (held[0][1] > 0) == (limit == 1 << 20)


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
