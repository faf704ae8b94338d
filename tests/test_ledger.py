"""The Ledger API against real repositories."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from git_hydrate import Conflict, CorruptData, Ledger, NotARepository, NotFound, ValidationError
from git_hydrate.context_expander import dedupe_context, summarize_packet
from tests.conftest import GIT_EMAIL, GIT_NAME, fsck, git


def make_task(ledger: Ledger, task_id: str = "M-1002") -> None:
    ledger.add_task(
        task_id, objective="Add GET /healthz", acceptance="200 with the request id header"
    )


def test_seed_example_runs_with_only_the_import_changed(repo: Path) -> None:
    with Ledger(repo) as ledger:
        ledger.add_task(
            "M-1002",
            objective="Add GET /healthz",
            acceptance="200 with the request id header",
        )
        ledger.add_context(
            "M-1002", "The edge proxy sets X-Request-Id.", "repo/edge-notes", priority=10
        )
        entries = dedupe_context(ledger.context_entries("M-1002"))
        assert (len(entries), entries[0]["source"]) == (1, "repo/edge-notes")

        packet = ledger.pack("M-1002")["packet"]
        count, body_bytes = summarize_packet(packet)
        assert (count, body_bytes) == (1, len("The edge proxy sets X-Request-Id."))


def test_layout_is_visible_to_git(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    body = "The edge proxy sets X-Request-Id on every response."
    digest = hashlib.sha256(body.encode()).hexdigest()
    ledger.add_context("M-1002", body, "repo/edge-notes", priority=10)
    listing = git(repo, "ls-tree", "-r", "--name-only", "refs/hydrate/tasks/M-1002").split()
    assert listing == [f"bodies/{digest[:2]}/{digest}", "links.json", "task.json"]
    assert (
        git(repo, "cat-file", "-p", f"refs/hydrate/tasks/M-1002:bodies/{digest[:2]}/{digest}")
        == body
    )
    links = json.loads(git(repo, "cat-file", "-p", "refs/hydrate/tasks/M-1002:links.json"))
    assert links["format"] == 1
    [link] = links["links"]
    assert link["sha256"] == digest
    assert link["size"] == len(body)
    assert link["oid"] == git(repo, "hash-object", "--stdin", input=body).strip()
    task = json.loads(git(repo, "cat-file", "-p", "refs/hydrate/tasks/M-1002:task.json"))
    assert task["format"] == 1 and task["id"] == "M-1002" and task["status"] == "open"
    # one commit per change, by the configured identity, with a reflog entry
    log = git(repo, "log", "--format=%an <%ae>|%s", "refs/hydrate/tasks/M-1002").splitlines()
    assert log == [
        f"{GIT_NAME} <{GIT_EMAIL}>|hydrate: context-add M-1002 {digest[:12]} from repo/edge-notes",
        f"{GIT_NAME} <{GIT_EMAIL}>|hydrate: task-add M-1002",
    ]
    assert len(git(repo, "reflog", "show", "refs/hydrate/tasks/M-1002").splitlines()) == 2
    assert git(repo, "status", "--porcelain") == ""
    fsck(repo)


def test_identical_bodies_are_one_blob_and_upsert(repo: Path, ledger: Ledger) -> None:
    make_task(ledger, "A-1")
    make_task(ledger, "B-1")
    first = ledger.add_context("A-1", "shared body", "one", priority=1)
    ledger.add_context("B-1", "shared body", "two")
    assert first["created"] is True
    again = ledger.add_context("A-1", "shared body", "renamed", priority=7, ttl=60)
    assert again["created"] is False and again["changed"] is True
    entries = ledger.context_entries("A-1")
    assert len(entries) == 1
    assert entries[0]["source"] == "renamed" and entries[0]["priority"] == 7
    assert entries[0]["expires"] is not None
    oids = {
        git(
            repo, "rev-parse", f"refs/hydrate/tasks/{t}:bodies/{first['hash'][:2]}/{first['hash']}"
        ).strip()
        for t in ("A-1", "B-1")
    }
    assert len(oids) == 1
    # the very same attachment again writes nothing
    tip = git(repo, "rev-parse", "refs/hydrate/tasks/B-1")
    assert ledger.add_context("B-1", "shared body", "two")["changed"] is False
    assert git(repo, "rev-parse", "refs/hydrate/tasks/B-1") == tip
    fsck(repo)


def test_context_entries_are_in_packing_order(ledger: Ledger) -> None:
    make_task(ledger)
    for text, prio in (("low", 0), ("high", 10), ("mid", 5), ("also high", 10)):
        ledger.add_context("M-1002", text, f"src-{text}", priority=prio)
    entries = ledger.context_entries("M-1002")
    keys = [(-e["priority"], e["hash"]) for e in entries]
    assert keys == sorted(keys)
    assert [e["priority"] for e in entries] == [10, 10, 5, 0]


def test_remove_context_drops_link_and_body(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    entry = ledger.add_context("M-1002", "to be removed", "tmp")
    ledger.remove_context("M-1002", entry["hash"][:8])
    assert ledger.context_entries("M-1002") == []
    assert "bodies" not in git(repo, "ls-tree", "--name-only", "refs/hydrate/tasks/M-1002")
    with pytest.raises(NotFound):
        ledger.remove_context("M-1002", entry["hash"])
    fsck(repo)


def test_bodies_survive_gc(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    bodies = [f"body number {i}\n" * (i + 1) for i in range(5)]
    for i, body in enumerate(bodies):
        ledger.add_context("M-1002", body, f"s{i}")
    git(repo, "gc", "--prune=now", "--quiet")
    with Ledger(repo) as fresh:
        for entry in fresh.context_entries("M-1002"):
            assert fresh.read_body("M-1002", entry["hash"]) in bodies
        packet = fresh.pack("M-1002")["packet"]
    assert sorted(c["body"] for c in packet["context"]) == sorted(bodies)
    fsck(repo)


def test_edit_task(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    task = ledger.edit_task("M-1002", priority=1, tags=["api", "urgent"], title="Health check")
    assert (task["priority"], task["tags"], task["title"]) == (
        1,
        ["api", "urgent"],
        "Health check",
    )
    subject = git(repo, "log", "-1", "--format=%s", "refs/hydrate/tasks/M-1002").strip()
    assert subject == "hydrate: task-edit M-1002 (priority, tags, title)"
    tip = git(repo, "rev-parse", "refs/hydrate/tasks/M-1002")
    ledger.edit_task("M-1002", priority=1)
    assert git(repo, "rev-parse", "refs/hydrate/tasks/M-1002") == tip
    with pytest.raises(ValidationError):
        ledger.edit_task("M-1002", status="done")


def test_repeated_list_items_keep_their_first_place(ledger: Ledger) -> None:
    """Tags, scope keys, criteria and dependencies keep each item once, where it came
    first (looked up at once: benchmarks/bench_task_lists.py)."""
    task = ledger.add_task(
        "L-1",
        objective="lists",
        acceptance="each once",
        tags=["b", "a", " b ", "c", "a"],
        scope=["x", "y", "x"],
        acceptance_criteria=["two", "one", "two"],
        depends_on=["D-2", "D-1", "D-2", " D-1"],
    )
    assert task["tags"] == ["b", "a", "c"]
    assert task["scope"] == ["x", "y"]
    assert task["acceptance_criteria"] == ["two", "one"]
    assert task["depends_on"] == ["D-2", "D-1"]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda led: led.add_task("M-1002", objective="again", acceptance="x"), Conflict),
        (lambda led: led.add_task("m-1002", objective="case", acceptance="x"), Conflict),
        (lambda led: led.add_task("bad/id", objective="x", acceptance="x"), ValidationError),
        (lambda led: led.add_task("-lead", objective="x", acceptance="x"), ValidationError),
        (lambda led: led.add_task("a..b", objective="x", acceptance="x"), ValidationError),
        (lambda led: led.add_task("x.lock", objective="x", acceptance="x"), ValidationError),
        (lambda led: led.add_task("N-1", objective="", acceptance="x"), ValidationError),
        (
            lambda led: led.add_task("N-1", objective="x", acceptance="x", kind="chore"),
            ValidationError,
        ),
        (
            lambda led: led.add_task("N-1", objective="x", acceptance="x", priority=4),
            ValidationError,
        ),
        (lambda led: led.add_context("NOPE-1", "body", "src"), NotFound),
        (lambda led: led.add_contexts("NOPE-1", [("body", "src", 0, None)]), NotFound),
        (lambda led: led.add_context("M-1002", b"\xff\xfe", "src"), ValidationError),
        (lambda led: led.add_context("M-1002", "a\0b", "src"), ValidationError),
        (lambda led: led.add_context("M-1002", "body", "two\nlines"), ValidationError),
        (lambda led: led.add_context("M-1002", "body", ""), ValidationError),
        (lambda led: led.add_context("M-1002", "body", "src", ttl=0), ValidationError),
        (lambda led: led.add_context("M-1002", "body", "src", ttl=-5), ValidationError),
        (lambda led: led.add_context("M-1002", "body", "src", priority="high"), ValidationError),
        (lambda led: led.remove_context("M-1002", "zz"), ValidationError),
    ],
)
def test_bad_input_writes_nothing(repo: Path, ledger: Ledger, call: object, error: type) -> None:
    make_task(ledger)
    before = git(repo, "for-each-ref"), git(repo, "count-objects", "-v")
    with pytest.raises(error):
        call(ledger)  # type: ignore[operator]
    # no ref moved, and no object was written (not even an unreachable blob)
    assert (git(repo, "for-each-ref"), git(repo, "count-objects", "-v")) == before


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(NotARepository):
        Ledger(tmp_path)
    with pytest.raises(NotARepository):
        Ledger(tmp_path / "ledger.sqlite")


def test_sha256_repository(tmp_path: Path) -> None:
    path = tmp_path / "s256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(path))
    with Ledger(path) as ledger:
        make_task(ledger)
        entry = ledger.add_context("M-1002", "sha-256 world", "src")
        assert len(entry["oid"]) == 64
        assert entry["oid"] == git(path, "hash-object", "--stdin", input="sha-256 world").strip()
        assert ledger.pack("M-1002")["packet"]["context"][0]["body"] == "sha-256 world"
    fsck(path)
    git(path, "gc", "--prune=now", "--quiet")
    with Ledger(path) as ledger:
        assert ledger.read_body("M-1002", entry["hash"]) == "sha-256 world"


def test_linked_worktree_and_bare_repository_share_tasks(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    with Ledger(wt / ".") as ledger:
        make_task(ledger)
    with Ledger(repo) as ledger:
        assert ledger.task_ids() == ["M-1002"]
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    with Ledger(bare) as ledger:
        make_task(ledger, "B-7")
        ledger.add_context("B-7", "bare body", "src")
        assert ledger.pack("B-7")["packet"]["context"][0]["body"] == "bare body"
    fsck(bare)


def test_newer_format_is_refused(repo: Path, ledger: Ledger) -> None:
    from git_hydrate import CorruptData

    make_task(ledger)
    tree = git(repo, "rev-parse", "refs/hydrate/tasks/M-1002^{tree}").strip()
    task = json.loads(git(repo, "cat-file", "-p", f"{tree}:task.json"))
    task["format"] = 2
    blob = git(repo, "hash-object", "-w", "--stdin", input=json.dumps(task)).strip()
    links = git(repo, "rev-parse", f"{tree}:links.json").strip()
    new_tree = git(
        repo, "mktree", input=f"100644 blob {links}\tlinks.json\n100644 blob {blob}\ttask.json\n"
    ).strip()
    commit = git(
        repo, "commit-tree", new_tree, "-p", "refs/hydrate/tasks/M-1002", "-m", "future"
    ).strip()
    git(repo, "update-ref", "refs/hydrate/tasks/M-1002", commit)
    with pytest.raises(CorruptData, match="format 2 is newer"):
        ledger.get_task("M-1002")
    with pytest.raises(CorruptData):
        ledger.add_context("M-1002", "x", "y")
    assert git(repo, "rev-parse", "refs/hydrate/tasks/M-1002").strip() == commit


def test_bulk_add_is_one_commit_and_one_pack(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    items = [(f"bulk body {i}\n", f"bulk/{i}", i % 5, None) for i in range(300)]
    packs_before = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    counts = ledger.add_contexts("M-1002", items)
    assert counts == {"task_id": "M-1002", "added": 300, "updated": 0, "unchanged": 0}
    packs_after = list((repo / ".git" / "objects" / "pack").glob("*.pack"))
    assert len(packs_after) == len(packs_before) + 1
    assert len(git(repo, "rev-list", "refs/hydrate/tasks/M-1002").split()) == 2
    entries = ledger.context_entries("M-1002")
    assert len(entries) == 300
    keys = [(-e["priority"], e["hash"]) for e in entries]
    assert keys == sorted(keys)
    again = ledger.add_contexts("M-1002", items[:10])
    assert again["unchanged"] == 10
    fsck(repo)
    git(repo, "gc", "--prune=now", "--quiet")
    assert ledger.read_body("M-1002", entries[0]["hash"]).startswith("bulk body")


def test_packed_refs_are_read_and_written(repo: Path) -> None:
    with Ledger(repo) as ledger:
        for i in range(5):
            make_task(ledger, f"P-{i}")
    git(repo, "pack-refs", "--all", "--prune")
    assert not (repo / ".git" / "refs" / "hydrate" / "tasks" / "P-0").exists()
    with Ledger(repo) as ledger:
        assert ledger.task_ids() == [f"P-{i}" for i in range(5)]
        ledger.add_context("P-3", "after packing", "src")
        assert [e["source"] for e in ledger.context_entries("P-3")] == ["src"]
        assert ledger.pack("P-3")["packet"]["context"][0]["body"] == "after packing"
        assert len(ledger.list_tasks()) == 5
    assert git(repo, "rev-parse", "refs/hydrate/tasks/P-3^{tree}").strip()
    fsck(repo)


def test_list_cache_follows_changes_and_survives_damage(repo: Path) -> None:
    cache = repo / ".git" / "hydrate" / "list-cache"
    with Ledger(repo) as ledger:
        make_task(ledger, "C-1")
        make_task(ledger, "C-2")
        first = ledger.list_tasks()
        assert cache.exists()
        ledger.edit_task("C-1", title="Renamed")
        ledger.add_context("C-2", "one more body", "src")
        second = {t["task_id"]: t for t in ledger.list_tasks()}
    assert [t["title"] for t in first] == ["Add GET /healthz", "Add GET /healthz"]
    assert second["C-1"]["title"] == "Renamed"
    assert second["C-2"]["attachments"] == 1
    cache.write_bytes(b"\xc1 not msgpack")
    with Ledger(repo) as ledger:
        assert {t["task_id"]: t for t in ledger.list_tasks()} == second
    # a ref copied under another name is read, not answered from the cache
    git(repo, "update-ref", "refs/hydrate/tasks/C-3", "refs/hydrate/tasks/C-1")
    with Ledger(repo) as ledger:
        listed = {t["task_id"]: t for t in ledger.list_tasks()}
    assert "names task 'C-1'" in listed["C-3"]["error"]
    assert listed["C-1"]["title"] == "Renamed"


def test_object_format_comes_from_git_not_from_words_in_the_config(repo: Path) -> None:
    """A SHA-1 repository whose config merely mentions 'objectformat' and 'sha256'."""
    git(repo, "config", "branch.fix-objectformat-docs.remote", "origin")
    git(repo, "config", "remote.origin.url", "https://example.com/team/sha256-tools.git")
    with Ledger(repo) as ledger:
        make_task(ledger)
        entry = ledger.add_context("M-1002", "still sha-1", "src")
    assert len(entry["oid"]) == 40
    assert len(git(repo, "rev-parse", "refs/hydrate/tasks/M-1002").strip()) == 40
    fsck(repo)
    git(repo, "gc", "--prune=now", "--quiet")


def test_task_id_with_a_trailing_newline_is_refused(repo: Path, ledger: Ledger) -> None:
    with pytest.raises(ValidationError):
        ledger.add_task("abc\n", objective="o", acceptance="a")
    assert git(repo, "for-each-ref", "refs/hydrate") == ""


def test_caches_of_the_wrong_shape_are_ignored(repo: Path) -> None:
    import msgspec

    with Ledger(repo) as ledger:
        make_task(ledger, "W-1")
        tip = git(repo, "rev-parse", "refs/hydrate/tasks/W-1").strip()
        for name in ("list-cache", "status-cache"):
            (repo / ".git" / "hydrate").mkdir(exist_ok=True)
            (repo / ".git" / "hydrate" / name).write_bytes(
                msgspec.msgpack.encode({tip: {"task_id": "W-1"}})
            )
        assert [t["task_id"] for t in ledger.list_tasks()] == ["W-1"]
        assert ledger.list_tasks()[0]["status"] == "open"
        assert ledger.statuses()[0]["status"] == "open"


def test_cache_entries_of_the_wrong_types_are_misses(repo: Path) -> None:
    """A hand-made (or foreign) entry with every field, of the wrong type, is read
    again from the task: no "hit a bug", no value shown from it."""
    import msgspec

    def answers(ledger: Ledger) -> tuple[object, ...]:
        return (
            ledger.list_tasks(),
            ledger.statuses(),
            ledger.ready(tag="x"),
            ledger.ready(),
            ledger.search("healthz"),
            ledger.search("attached", attachments=True),
        )

    hydrate = repo / ".git" / "hydrate"
    with Ledger(repo) as ledger:
        make_task(ledger, "W-1")
        ledger.add_task("W-2", objective="o", acceptance="a", depends_on=["W-1"], tags=["x"])
        ledger.add_context("W-2", "an attached body", "notes")
        expected = answers(ledger)
    fields = ("status", "priority", "tags", "depends_on", "expiries", "terms", "lines", "links")
    for name in ("list-cache", "status-cache", "queue-cache", "search-index-2", "search-bodies"):
        entries = msgspec.msgpack.decode((hydrate / name).read_bytes())
        for field in fields:
            if all(field not in entry for entry in entries.values()):
                continue
            poisoned = {key: {**entry, field: [{"no": 0}]} for key, entry in entries.items()}
            (hydrate / name).write_bytes(msgspec.msgpack.encode(poisoned))
            with Ledger(repo) as ledger:
                assert answers(ledger) == expected, (name, field)


def test_the_cache_keys_what_it_read_by_the_tip_it_read(repo: Path) -> None:
    """A ref moved between listing the refs and reading the task must not poison the cache."""
    with Ledger(repo) as ledger:
        make_task(ledger, "R-1")
        old = git(repo, "rev-parse", "refs/hydrate/tasks/R-1").strip()
        original = ledger.refs.load_many

        def moved_meanwhile(ids, tips=None):  # type: ignore[no-untyped-def]
            with Ledger(repo) as other:
                other.set_status("R-1", "in_progress")
            return original(ids, tips)

        ledger.refs.load_many = moved_meanwhile  # type: ignore[method-assign]
        ledger.list_tasks()
        ledger.statuses()
        ledger.refs.load_many = original  # type: ignore[method-assign]
        git(repo, "update-ref", "refs/hydrate/tasks/R-1", old)
        assert ledger.list_tasks()[0]["status"] == "open"
        assert ledger.statuses()[0]["status"] == "open"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sha256", "A" * 64),
        ("sha256", "g" * 64),
        ("sha256", "a" * 63),
        ("oid", "b" * 41),
        ("oid", "B" * 40),
        ("oid", "\u00e9" * 40),
        ("oid", "b" * 39 + "\n"),
    ],
)
def test_stored_link_ids_must_be_lower_case_hex(field: str, value: str) -> None:
    from git_hydrate import CorruptData, codec

    good = [
        {"sha256": f"{i:064x}", "oid": f"{i:040x}" if i else f"{i:064x}", "size": 1, "source": "s"}
        for i in range(3)
    ]
    decoded = codec.decode_links(json.dumps({"format": 1, "links": good}).encode(), "w")
    assert [link.oid for link in decoded.links] == [g["oid"] for g in good]
    bad = [*good, dict(good[0], **{field: value})]
    with pytest.raises(CorruptData, match=rf"^w: .*links\[3\]\.?{field}"):
        codec.decode_links(json.dumps({"format": 1, "links": bad}).encode(), "w")


def test_prefetched_reads_never_answer_other_reads(repo: Path) -> None:
    from git_hydrate.store import Repository

    oids = [
        git(repo, "hash-object", "-w", "--stdin", input=f"body {i}\n" * (i + 1)).strip().encode()
        for i in range(40)
    ]
    with Repository(repo) as r:
        first = r.prefetch(oids[:10])
        second = r.prefetch(oids[10:20])
        # A read in between takes the prefetched answers off the pipe first.
        assert r.read_blob(oids[30]) == b"body 30\n" * 31
        assert [a[1] if a else None for a in second.collect()] == [
            f"body {i}\n".encode() * (i + 1) for i in range(10, 20)
        ]
        assert first.collect()[0] == (b"blob", b"body 0\n")
        abandoned = r.prefetch([*oids[20:30], b"0" * 40])
        assert r.read_many(oids[:2]) == [(b"blob", b"body 0\n"), (b"blob", b"body 1\n" * 2)]
        assert abandoned.collect()[-1] is None  # missing, and still in its place
    with Repository(repo) as r:
        r.prefetch(oids)  # closed with answers unread: no hang, no error


def test_packing_reads_ahead_in_rounds_and_gives_the_same_prompt(
    repo: Path, ledger: Ledger
) -> None:
    make_task(ledger)
    bodies = [
        (f"{i:04d} " + "x" * (300 + 97 * i) + "\n", f"s/{i}", i % 3, None) for i in range(300)
    ]
    ledger.add_contexts("M-1002", bodies)
    whole = ledger.expand("M-1002", max_bytes=10**8)
    assert len(whole["packet"]["context"]) == 300
    expected = {b: s for b, s, _p, _t in bodies}
    assert {c["body"]: c["source"] for c in whole["packet"]["context"]} == expected
    # The oracle: the pure packer given every body in memory, no loader at all.
    from git_hydrate import context_expander
    from git_hydrate.pack import stored as packing

    task, entries = packing.packing_input(ledger.refs, "M-1002")
    by_hash = {hashlib.sha256(b.encode()).hexdigest(): b for b in expected}
    in_memory = [{**e.as_entry(), "body": by_hash[e.hash]} for e in entries]

    # (outlines on, as the ledger's budget: none of these sources has one)
    def no_outline(_item: object, _read: object) -> None:
        return None

    for budget in (5_000, 70_000, 300_000, 2_000_000):
        packed = ledger.expand("M-1002", max_bytes=budget, now=0)
        assert packed == context_expander.build_packet(
            task,
            in_memory,
            budget,
            files=task["files"],
            tests=task["tests"],
            now=0,
            outline=no_outline,
        )
        assert 0 < len(packed["packet"]["context"]) < 300
        assert ledger.pack("M-1002", max_bytes=budget, now=0) == context_expander.pack_packet(
            task, in_memory, budget, now=0
        )


def test_read_ahead_never_reads_what_the_packer_skips_unread(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    big = "B" * (2 << 20)  # larger than any read-ahead round
    items = []
    for i in range(6):
        items += [(f"small {i}\n", f"s/{i}", 0, None), (big + str(i), f"big/{i}", 0, None)]
    ledger.add_contexts("M-1002", items)
    expired = ledger.add_context("M-1002", "gone " * 100, "old", priority=-1, ttl=1)
    big_oids = {e["oid"] for e in ledger.context_entries("M-1002") if e["size"] > 1 << 20}
    big_oids.add(expired["oid"])
    asked: list[bytes] = []
    read_many, prefetch = ledger.repo.read_many, ledger.repo.prefetch

    def recording_read_many(specs):  # type: ignore[no-untyped-def]
        asked.extend(specs)
        return read_many(specs)

    def recording_prefetch(specs):  # type: ignore[no-untyped-def]
        asked.extend(specs)
        return prefetch(specs)

    ledger.repo.read_many = recording_read_many  # type: ignore[method-assign]
    ledger.repo.prefetch = recording_prefetch  # type: ignore[method-assign]
    later = time.time() + 3600
    result = ledger.expand("M-1002", max_bytes=100_000, now=later)
    assert sorted(c["source"] for c in result["packet"]["context"]) == [f"s/{i}" for i in range(6)]
    assert not big_oids & {s.decode() for s in asked}
    # A damaged body the packer skips unread cannot fail the prompt ...
    path = repo / ".git" / "objects" / expired["oid"][:2] / expired["oid"][2:]
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[:10])
    assert ledger.expand("M-1002", max_bytes=100_000, now=later)["prompt"] == result["prompt"]
    # ... while one it needs is named.
    with pytest.raises(CorruptData, match=expired["hash"][:12]):
        ledger.expand("M-1002", max_bytes=100_000, now=0)


def test_a_damaged_body_in_a_read_ahead_round_stays_quiet_unless_needed(
    repo: Path, ledger: Ledger
) -> None:
    from tests.conftest import hydrate

    make_task(ledger)
    ledger.add_contexts("M-1002", [(f"body {i} " * 300, f"s/{i}", 5, None) for i in range(40)])
    victim = ledger.add_context("M-1002", "victim " * 8000, "victim", priority=1)
    whole = hydrate(repo, "expand", "M-1002", "--max-bytes", "150000")
    path = repo / ".git" / "objects" / victim["oid"][:2] / victim["oid"][2:]
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    # skipped by the packer (no room): same output, and none of git's own lines
    again = hydrate(repo, "expand", "M-1002", "--max-bytes", "150000")
    assert (
        (again.returncode, again.stdout) == (whole.returncode, whole.stdout) == (0, whole.stdout)
    )
    assert again.stderr == whole.stderr
    # needed: one line naming the body, with git's reason
    needed = hydrate(repo, "pack", "M-1002", "--max-bytes", "400000")
    assert needed.returncode == 1
    assert needed.stderr.count("\n") == 1
    assert f"body {victim['hash'][:12]}: git cat-file stopped" in needed.stderr


def test_links_stored_out_of_order_are_read_in_packing_order(repo: Path, ledger: Ledger) -> None:
    make_task(ledger)
    ledger.add_contexts("M-1002", [(f"o{i}\n", f"s/{i}", i % 3, None) for i in range(30)])
    expected = ledger.context_entries("M-1002")
    tip = git(repo, "rev-parse", "refs/hydrate/tasks/M-1002").strip()
    stored = json.loads(git(repo, "cat-file", "blob", f"{tip}:links.json"))
    stored["links"].reverse()
    blob = git(repo, "hash-object", "-w", "--stdin", input=json.dumps(stored)).strip()
    listing = git(repo, "ls-tree", tip).replace(
        git(repo, "rev-parse", f"{tip}:links.json").strip(), blob
    )
    tree = git(repo, "mktree", input=listing).strip()
    commit = git(repo, "commit-tree", tree, "-p", tip, "-m", "reversed").strip()
    git(repo, "update-ref", "refs/hydrate/tasks/M-1002", commit)
    assert ledger.context_entries("M-1002") == expected


def test_a_count_past_64_bits_stored_earlier_does_not_break_the_caches(repo: Path) -> None:
    # counts are refused past 2**53 - 1 now; a task an older version wrote may hold more
    with Ledger(repo) as ledger:
        make_task(ledger, "BIG-1")
        ledger.add_checkpoint("BIG-1", "s", tokens=5)
    task_json = git(repo, "show", "refs/hydrate/tasks/BIG-1:task.json")
    huge = task_json.replace('"tokens":5', '"tokens":100000000000000000000')
    assert huge != task_json
    blob = git(repo, "hash-object", "-w", "--stdin", input=huge).strip()
    old_blob = git(repo, "rev-parse", "refs/hydrate/tasks/BIG-1:task.json").strip()
    listing = git(repo, "ls-tree", "refs/hydrate/tasks/BIG-1")
    tree = git(repo, "mktree", input=listing.replace(old_blob, blob)).strip()
    parent = git(repo, "rev-parse", "refs/hydrate/tasks/BIG-1").strip()
    commit = git(repo, "commit-tree", tree, "-p", parent, "-m", "hydrate: older").strip()
    git(repo, "update-ref", "refs/hydrate/tasks/BIG-1", commit)
    with Ledger(repo) as ledger:
        for _ in range(2):  # cold, then from the cache
            assert ledger.statuses()[0]["metrics"]["reported_tokens"] == 10**20
            assert ledger.list_tasks()[0]["task_id"] == "BIG-1"
