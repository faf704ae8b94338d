"""Tasks of many links keep them fanned out in ``links/<a>.json`` (links.json format 2).

Most tests lower the threshold (``FAN_OUT_LINKS``) so that a handful of links
crosses it; one uses the real threshold.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from git_hydrate import CorruptData, Ledger
from git_hydrate import sync as hsync
from git_hydrate.doctor import check_task
from git_hydrate.taskrefs import layout as ledger_module
from git_hydrate.taskrefs import link_shard

from .conftest import fsck, git

REF = "refs/hydrate/tasks/F-1"


@pytest.fixture
def low_threshold(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(ledger_module, "FAN_OUT_LINKS", 5)
    return 5


def paths_at(repo: Path, rev: str = REF) -> list[str]:
    return git(repo, "ls-tree", "-r", "--name-only", rev).split()


def links_json(repo: Path, rev: str = REF) -> dict[str, object]:
    data: dict[str, object] = json.loads(git(repo, "cat-file", "blob", f"{rev}:links.json"))
    return data


def changed_paths(repo: Path, rev: str = REF) -> list[str]:
    return git(repo, "diff-tree", "-r", "--name-only", "--no-commit-id", rev).split()


def new_task(ledger: Ledger, task_id: str = "F-1") -> None:
    ledger.add_task(task_id, objective="many links", acceptance="all read back")


def test_links_fan_out_above_the_threshold_and_back(
    repo: Path, ledger: Ledger, low_threshold: int
) -> None:
    new_task(ledger)
    for i in range(low_threshold):
        ledger.add_context("F-1", f"body {i}\n", f"src/{i}", priority=i % 3)
    assert links_json(repo)["format"] == 1
    assert not any(p.startswith("links/") for p in paths_at(repo))
    expected = ledger.context_entries("F-1")

    added = ledger.add_context("F-1", "one too many\n", "src/x", priority=1)
    stub = links_json(repo)
    assert stub == {"format": 2, "links": []}
    shards = [p for p in paths_at(repo) if p.startswith("links/")]
    assert len(shards) == len({link_shard(e["hash"]) for e in [*expected, added]})
    for shard in shards:
        stored = json.loads(git(repo, "cat-file", "blob", f"{REF}:{shard}"))
        assert stored["format"] == 2
        keys = [(-ln["priority"], ln["sha256"]) for ln in stored["links"]]
        assert keys == sorted(keys)
        assert all(ln["sha256"].startswith(shard[6:-5]) for ln in stored["links"])
    entries = ledger.context_entries("F-1")
    keys = [(-e["priority"], e["hash"]) for e in entries]
    assert keys == sorted(keys) and len(entries) == low_threshold + 1
    assert {e["hash"] for e in entries} == {e["hash"] for e in [*expected, added]}
    packed = ledger.pack("F-1", max_bytes=100000)
    assert len(packed["packet"]["context"]) == low_threshold + 1
    fsck(repo)

    # One more add rewrites one links file (plus the trees above it), nothing else.
    more = ledger.add_context("F-1", "and another\n", "src/y")
    prefix = link_shard(more["hash"])
    assert sorted(changed_paths(repo)) == sorted(
        [f"bodies/{more['hash'][:2]}/{more['hash']}", f"links/{prefix}.json"]
    )
    # Updating a link in place (same body, new priority) touches its file only.
    ledger.add_context("F-1", "and another\n", "src/y", priority=7)
    assert changed_paths(repo) == [f"links/{prefix}.json"]
    assert ledger.context_entries("F-1")[0]["hash"] == more["hash"]

    # Back to the threshold: all links in links.json again, no links/ left.
    for entry in ledger.context_entries("F-1")[: len(entries) + 1 - low_threshold]:
        ledger.remove_context("F-1", entry["hash"])
    assert links_json(repo)["format"] == 1
    assert len(links_json(repo)["links"]) == low_threshold  # type: ignore[arg-type]
    assert not any(p.startswith("links/") for p in paths_at(repo))
    fsck(repo)
    git(repo, "gc", "--prune=now", "--quiet")
    assert len(ledger.context_entries("F-1")) == low_threshold
    assert check_task(ledger.refs, "F-1") == []


def test_a_large_format_1_list_is_read_and_fanned_out_by_the_next_write(
    repo: Path, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_task(ledger)
    ledger.add_contexts("F-1", [(f"b{i}\n", f"s/{i}", 0, None) for i in range(12)])
    assert links_json(repo)["format"] == 1  # written under the real threshold
    monkeypatch.setattr(ledger_module, "FAN_OUT_LINKS", 5)
    assert len(ledger.context_entries("F-1")) == 12  # still read as it is
    ledger.add_context("F-1", "b12\n", "s/12")
    assert links_json(repo)["format"] == 2
    assert len(ledger.context_entries("F-1")) == 13
    fsck(repo)


def test_real_threshold_with_bulk_writes(repo: Path, ledger: Ledger) -> None:
    limit = ledger_module.FAN_OUT_LINKS
    new_task(ledger)
    items = [(f"bulk {i}\n", f"bulk/{i}", i % 4, None) for i in range(limit + 1)]
    ledger.add_contexts("F-1", items[:limit])
    assert links_json(repo)["format"] == 1
    ledger.add_contexts("F-1", items)
    assert links_json(repo)["format"] == 2
    assert len(ledger.context_entries("F-1")) == limit + 1
    assert ledger.list_tasks()[0]["attachments"] == limit + 1
    fsck(repo)


def test_fanned_tasks_merge_to_one_tree(tmp_path: Path, repo: Path, low_threshold: int) -> None:
    with Ledger(repo) as ledger:
        new_task(ledger)
        ledger.add_contexts("F-1", [(f"base {i}\n", f"base/{i}", 0, None) for i in range(8)])
    b = tmp_path / "b"
    git(tmp_path, "clone", "-q", str(repo), str(b))
    with Ledger(b) as lb:
        hsync.pull(lb.refs, str(repo))
        lb.add_context("F-1", "from b\n", "b")
        gone = lb.context_entries("F-1")[-1]["hash"]
        lb.remove_context("F-1", gone)
    with Ledger(repo) as la:
        la.add_context("F-1", "from a\n", "a")
    a_before = Path(shutil.copytree(repo, tmp_path / "a-before"))
    with Ledger(repo) as la, Ledger(b) as lb:
        assert hsync.pull(la.refs, str(b)).outcomes[0].action == "merged"
        assert hsync.pull(lb.refs, str(a_before)).outcomes[0].action == "merged"
        sources = sorted(e["source"] for e in la.context_entries("F-1"))
        assert sources.count("a") == 1 and sources.count("b") == 1 and len(sources) == 9
        assert la.context_entries("F-1") == lb.context_entries("F-1")
    assert git(repo, "rev-parse", f"{REF}^{{tree}}") == git(b, "rev-parse", f"{REF}^{{tree}}")
    assert links_json(repo)["format"] == 2
    fsck(repo)
    fsck(b)


def _replace_in_tip(repo: Path, edit: dict[str, str | None]) -> None:
    """Commit a copy of the F-1 tip whose tree has ``edit`` applied
    (``{path: blob content or None to delete}``), through git's own index."""
    env_index = repo / ".git" / "scratch-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(env_index)}

    def run(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=repo,
            env=env,
            input=data,
            text=True,
            check=True,
            capture_output=True,
        ).stdout

    run("read-tree", REF)
    for path, content in edit.items():
        if content is None:
            run("rm", "-q", "--cached", "-r", path)
        else:
            oid = run("hash-object", "-w", "--stdin", data=content).strip()
            run("update-index", "--add", "--cacheinfo", f"100644,{oid},{path}")
    tree = run("write-tree").strip()
    commit = run("commit-tree", tree, "-p", REF, "-m", "damage").strip()
    run("update-ref", REF, commit)
    env_index.unlink()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("no_dir", "links are in links/, which is missing"),
        ("stub_with_links", "links.json of format 2 holds links"),
        ("wrong_prefix", "holds a link of another prefix"),
        ("odd_name", "unexpected entry links/zz.json"),
        ("newer", "format 3 is newer"),
    ],
)
def test_damaged_fan_out_fails_that_task_only(
    repo: Path, ledger: Ledger, low_threshold: int, damage: str, message: str
) -> None:
    new_task(ledger)
    new_task(ledger, "OK-1")
    ledger.add_contexts("F-1", [(f"x{i}\n", f"s/{i}", 0, None) for i in range(9)])
    shards = [p for p in paths_at(repo) if p.startswith("links/")]
    first = json.loads(git(repo, "cat-file", "blob", f"{REF}:{shards[0]}"))
    if damage == "no_dir":
        _replace_in_tip(repo, {"links": None})
    elif damage == "stub_with_links":
        _replace_in_tip(repo, {"links.json": json.dumps({"format": 2, "links": first["links"]})})
    elif damage == "wrong_prefix":
        _replace_in_tip(repo, {shards[1]: json.dumps(first)})
    elif damage == "odd_name":
        _replace_in_tip(repo, {"links/zz.json": json.dumps({"format": 2, "links": []})})
    else:
        _replace_in_tip(repo, {shards[0]: json.dumps({**first, "format": 3})})
    with pytest.raises(CorruptData, match=message):
        ledger.context_entries("F-1")
    with pytest.raises(CorruptData, match=message):
        ledger.remove_context("F-1", "0000")
    # An add reads only its own links file: damage elsewhere is not its to see,
    # and stays exactly as reported.
    try:
        ledger.add_context("F-1", "more\n", "s")
    except CorruptData as exc:
        assert message in str(exc)
    with pytest.raises(CorruptData, match=message):
        ledger.context_entries("F-1")
    assert ledger.pack("OK-1")["packet"]["context"] == []
    assert check_task(ledger.refs, "OK-1") == []
    assert any(message in problem for problem in check_task(ledger.refs, "F-1"))


def test_a_links_dir_smuggled_into_a_format_1_tree_is_never_taken_over(
    repo: Path, ledger: Ledger, low_threshold: int
) -> None:
    new_task(ledger)
    ledger.add_contexts("F-1", [(f"x{i}\n", f"s/{i}", 0, None) for i in range(low_threshold)])
    wanted = ledger.context_entries("F-1")
    own = json.loads(git(repo, "cat-file", "blob", f"{REF}:links.json"))["links"]
    injected = {**own[0], "source": "INJECTED", "priority": 99}
    prefix = link_shard(injected["sha256"])
    _replace_in_tip(repo, {f"links/{prefix}.json": json.dumps({"format": 2, "links": [injected]})})
    assert ledger.context_entries("F-1") == wanted  # format 1: links/ is not read
    # A format-1 write drops it ...
    ledger.edit_task("F-1", title="still format 1")
    assert not any(p.startswith("links/") for p in paths_at(repo))
    # ... and so does fanning out, which writes links/ from the links alone.
    _replace_in_tip(repo, {f"links/{prefix}.json": json.dumps({"format": 2, "links": [injected]})})
    added = ledger.add_context("F-1", "one more\n", "s/x")
    entries = ledger.context_entries("F-1")
    assert links_json(repo)["format"] == 2
    assert [e["source"] for e in entries if e["source"] == "INJECTED"] == []
    assert {e["hash"] for e in entries} == {e["hash"] for e in [*wanted, added]}
    assert check_task(ledger.refs, "F-1") == []
    fsck(repo)


def test_a_fanned_task_archives_reads_and_comes_back_whole(
    repo: Path, ledger: Ledger, low_threshold: int
) -> None:
    new_task(ledger)
    ledger.add_contexts("F-1", [(f"a{i}\n", f"s/{i}", i % 2, None) for i in range(9)])
    before = ledger.context_entries("F-1")
    ledger.set_status("F-1", "cancelled")
    packed = ledger.pack("F-1", max_bytes=100_000, now=0)
    ledger.archive(["F-1"])
    assert git(repo, "for-each-ref", REF) == ""
    assert ledger.context_entries("F-1") == before  # read from the archive
    ledger.unarchive("F-1")
    assert links_json(repo)["format"] == 2
    assert ledger.context_entries("F-1") == before
    assert ledger.pack("F-1", max_bytes=100_000, now=0) == packed
    ledger.add_context("F-1", "after\n", "s/after")
    assert len(ledger.context_entries("F-1")) == 10
    fsck(repo)


def test_doctor_repair_writes_a_fanned_links_file_with_a_key_twice_once(
    repo: Path, ledger: Ledger, low_threshold: int
) -> None:
    """A ``links/<a>.json`` with a key twice (a pull refuses it) is written again by
    ``doctor --repair`` as every command reads it; the other files stay as they are."""
    new_task(ledger)
    ledger.add_contexts("F-1", [(f"x{i}\n", f"s/{i}", 0, None) for i in range(9)])
    shards = [p for p in paths_at(repo) if p.startswith("links/")]
    raw = git(repo, "cat-file", "blob", f"{REF}:{shards[0]}")
    source = json.loads(raw)["links"][0]["source"]
    twice = raw.replace(f'"source":"{source}"', f'"source":"decoy","source":"{source}"', 1)
    assert twice != raw
    _replace_in_tip(repo, {shards[0]: twice})
    before = {p: git(repo, "rev-parse", f"{REF}:{p}") for p in shards[1:]}
    assert "appears twice" in check_task(ledger.refs, "F-1")[0]
    [mended] = ledger.repair()
    assert (mended["task_id"], mended["ok"]) == ("F-1", True)
    assert check_task(ledger.refs, "F-1") == []
    assert git(repo, "cat-file", "blob", f"{REF}:{shards[0]}") == raw
    assert {p: git(repo, "rev-parse", f"{REF}:{p}") for p in shards[1:]} == before
    assert changed_paths(repo) == [shards[0]]
    fsck(repo)
