"""A body many tasks link is digested once a run (doctor, a push's checks), and
every link is still checked against it (git_hydrate.store.digests)."""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.store import catfile, objects

from .conftest import git, hydrate
from .test_sync import clone

BODIES = ["shared notes one\n", "shared notes two\n", "naïve third\n"]


def digested(monkeypatch: pytest.MonkeyPatch) -> Counter[bytes]:
    """The blobs digested from now on, each as often as it is streamed or hashed."""
    seen: Counter[bytes] = Counter()
    single, many, of = (
        catfile.CatFile.digest,
        getattr(catfile.CatFile, "digest_many", None),
        objects.digest_of,
    )

    def digest(self: catfile.CatFile, spec: bytes, limit: int, chunk: int = 1 << 20):  # type: ignore[no-untyped-def]
        seen[spec] += 1
        return single(self, spec, limit, chunk)

    def digest_many(self: catfile.CatFile, specs, limit, found, chunk=1 << 20):  # type: ignore[no-untyped-def]
        before = set(found)
        assert many is not None
        many(self, specs, limit, found, chunk)
        seen.update(spec for spec in found if spec not in before)

    def digest_of(found: tuple[bytes, bytes], limit: int):  # type: ignore[no-untyped-def]
        import hashlib

        seen[hashlib.sha1(b"blob %d\0" % len(found[1]) + found[1]).hexdigest().encode()] += 1
        return of(found, limit)

    monkeypatch.setattr(catfile.CatFile, "digest", digest)
    if many is not None:
        monkeypatch.setattr(catfile.CatFile, "digest_many", digest_many)
    monkeypatch.setattr(objects, "digest_of", digest_of)
    return seen


def tasks_sharing_bodies(repo: Path, count: int) -> None:
    with Ledger(repo) as ledger:
        for n in range(1, count + 1):
            ledger.add_task(f"S-{n}", objective=f"do {n}", acceptance="works")
            for index, body in enumerate(BODIES):
                ledger.add_context(f"S-{n}", body, f"notes {index}")


def bump_first_size(repo: Path, task: str) -> None:
    """Make the task's first link record a size its (shared, sound) body has not."""
    ref = f"refs/hydrate/tasks/{task}"
    links = json.loads(git(repo, "show", f"{ref}:links.json"))
    links["links"][0]["size"] += 1
    oid = git(repo, "hash-object", "-w", "--stdin", input=json.dumps(links)).strip()
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "tmp-index")}
    subprocess.run(["git", "read-tree", ref], cwd=repo, env=env, check=True)
    info = f"100644,{oid},links.json"
    subprocess.run(["git", "update-index", "--cacheinfo", info], cwd=repo, env=env, check=True)
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    git(repo, "update-ref", ref, git(repo, "commit-tree", tree, "-p", ref, "-m", "d").strip())


def test_doctor_digests_each_body_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks_sharing_bodies(repo, 4)
    bump_first_size(repo, "S-3")
    seen = digested(monkeypatch)
    report = json.loads(hydrate(repo, "--compact", "doctor", "--json").stdout)
    problems = {task["task_id"]: task["problems"] for task in report["tasks"]}
    assert [task for task, found in problems.items() if found] == ["S-3"]
    assert len(problems["S-3"]) == 1 and "differs from recorded" in problems["S-3"][0]
    assert len(seen) == len(BODIES)
    assert set(seen.values()) == {1}  # (before: once per link, 4 times each)


def test_push_checks_each_body_once(
    origin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = clone(origin, tmp_path / "a")
    tasks_sharing_bodies(a, 4)
    bump_first_size(a, "S-2")
    seen = digested(monkeypatch)
    pushed = hydrate(a, "push", "origin")
    assert pushed.returncode == 1
    lines = pushed.stdout.splitlines()
    assert lines[0] == "push origin: 3 pushed (new), 1 SKIPPED, 0 up to date"
    assert lines[1].startswith("  SKIPPED        S-2  (damaged, a pull would refuse it: body ")
    assert lines[1].endswith(" does not match its size; see: git hydrate doctor)")
    assert len(seen) == len(BODIES)
    assert set(seen.values()) == {1}  # (before: once per link, 4 times each)
