"""Large bodies from remotes: checked as a stream, refused past hydrate.maxBodyBytes.

A pulled body is checked against its sha256, size and UTF-8 without being held
in memory (``git cat-file --batch`` read in 1 MiB chunks), by ``pull`` and by
``doctor``; a body over ``hydrate.maxBodyBytes`` from a remote is refused,
naming the task and the body, and the rest of the pull goes on.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from git_hydrate import Ledger
from git_hydrate.errors import CorruptData

from .conftest import ROOT, fsck, git, hydrate, hydrate_process
from .test_sync import clone, make_task

LINE = "a compressible line of a large body\n"


def _hash_object(repo: Path, data: bytes) -> str:
    return (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"], cwd=repo, input=data, capture_output=True
        )
        .stdout.decode()
        .strip()
    )


def test_blob_digest_streams_across_chunks_and_stops_at_the_limit(repo: Path) -> None:
    chunk = 1 << 20
    # a two-byte character straddling the first chunk boundary is valid UTF-8
    straddling = b"a" * (chunk - 1) + "é".encode() + b"b" * 10
    late_bad = b"a" * (chunk + 5) + b"\xff" + b"b"
    with Ledger(repo) as ledger:
        store = ledger.refs.repo
        for data, utf8 in ((straddling, True), (late_bad, False), (b"", True)):
            oid = _hash_object(repo, data).encode()
            assert store.blob_digest(oid, 1 << 30) == (
                len(data),
                hashlib.sha256(data).hexdigest(),
                utf8,
            )
        big = _hash_object(repo, straddling).encode()
        assert store.blob_digest(big, chunk) == (len(straddling), None, False)
        # the next read, after one left unread, still answers right
        small = _hash_object(repo, b"small\n").encode()
        assert store.read_blob(small) == b"small\n"
        assert store.blob_digest(small, 10)[1] == hashlib.sha256(b"small\n").hexdigest()
        with pytest.raises(CorruptData, match="missing"):
            store.blob_digest(b"0" * 40, 10)
        tree = git(repo, "rev-parse", "HEAD^{tree}").strip().encode()
        with pytest.raises(CorruptData, match="not a blob"):
            store.blob_digest(tree, 1 << 20)


def _pull_json(repo: Path) -> tuple[int, dict[str, tuple[str, str]]]:
    result = hydrate(repo, "pull", "--json")
    report = json.loads(result.stdout)
    return result.returncode, {t["task_id"]: (t["action"], t["detail"]) for t in report["tasks"]}


def test_a_remote_body_over_the_limit_is_refused_named_and_the_rest_pulls(
    remote: Path, tmp_path: Path
) -> None:
    a = clone(remote, tmp_path / "a")
    big = LINE * (2_400_000 // len(LINE))
    make_task(a, "BIG-1", body=big)
    make_task(a, "T-2", body="small\n")
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    git(b, "config", "hydrate.maxBodyBytes", "1m")
    code, tasks = _pull_json(b)
    assert code == 1
    assert tasks["T-2"][0] == "created"
    action, detail = tasks["BIG-1"]
    digest = hashlib.sha256(big.encode()).hexdigest()
    assert action == "skipped"
    assert f"task BIG-1: body {digest[:12]} is {len(big)} bytes" in detail
    assert "over hydrate.maxBodyBytes (1048576)" in detail
    assert git(b, "for-each-ref", "refs/hydrate/tasks/BIG-1") == ""
    git(b, "config", "hydrate.maxBodyBytes", "8m")
    code, tasks = _pull_json(b)
    assert code == 0 and tasks["BIG-1"][0] == "created"
    fsck(b)


def test_a_body_larger_than_its_link_says_is_refused_unread(remote: Path, tmp_path: Path) -> None:
    """A forged link records 6 bytes for a body of 3 MB: the size git reports decides."""
    a = clone(remote, tmp_path / "a")
    make_task(a, "BIG-1", body="small\n")
    ref = "refs/hydrate/tasks/BIG-1"
    links = json.loads(git(a, "cat-file", "-p", f"{ref}:links.json"))
    link = links["links"][0]
    path = f"bodies/{link['sha256'][:2]}/{link['sha256']}"
    link["oid"] = _hash_object(a, (LINE * (3_000_000 // len(LINE))).encode())
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "index"))

    def plumb(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=a, env=env, capture_output=True, text=True, check=True
        ).stdout.strip()

    plumb("read-tree", f"{ref}^{{tree}}")
    links_oid = _hash_object(a, json.dumps(links, separators=(",", ":")).encode())
    plumb("update-index", "--cacheinfo", f"100644,{links_oid},links.json")
    plumb("update-index", "--cacheinfo", f"100644,{link['oid']},{path}")
    forged = plumb("commit-tree", plumb("write-tree"), "-p", ref, "-m", "forged")
    git(a, "update-ref", ref, forged)
    make_task(a, "T-2")
    pushed = hydrate(a, "push")  # sends T-2 only: a pull would refuse BIG-1
    assert pushed.returncode == 1 and "SKIPPED        BIG-1" in pushed.stdout
    git(a, "push", "-q", "origin", f"{ref}:{ref}")  # as plain git (or another tool) can
    b = clone(remote, tmp_path / "b")
    git(b, "config", "hydrate.maxBodyBytes", "1m")
    code, tasks = _pull_json(b)
    assert code == 1 and tasks["T-2"][0] == "created"
    action, detail = tasks["BIG-1"]
    assert action == "skipped"
    assert "over hydrate.maxBodyBytes (1048576), though its link says 6" in detail
    fsck(b)


PEAK = """
import sys
from git_hydrate.cli import run
code = run(sys.argv[1:])
# VmHWM, not ru_maxrss: that one keeps the high-water mark of the forking
# parent (the test process) across exec
with open("/proc/self/status") as status:
    print(next(line.split()[1] for line in status if line.startswith("VmHWM:")), file=sys.stderr)
sys.exit(code)
"""


def _peak_kib(repo: Path, *args: str) -> int:
    """Peak RSS of the Python process alone (git's children not counted)."""
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stderr.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
def test_pull_and_doctor_check_a_128_mb_body_in_little_memory(
    remote: Path, tmp_path: Path
) -> None:
    # 128 MiB under a bound of 80 for a process that peaks at 26-28 MiB: holding half
    # the body breaks it, as it broke the bound of 120 with 256 MiB, at half the
    # CPU-seconds (every git step of the test hashes, packs or unpacks the body)
    size = 128 * 1024 * 1024
    a = clone(remote, tmp_path / "a")
    git(a, "config", "hydrate.maxBodyBytes", "300m")
    body = tmp_path / "big.txt"
    block = LINE * ((1 << 20) // len(LINE))
    with body.open("w") as out:  # (by the MiB: the test process stays small too)
        for _ in range(size // len(block)):
            out.write(block)
    assert hydrate(a, "task-add", "BIG-1", "--objective", "o", "--acceptance", "a").returncode == 0
    # (in a process of its own: the test process stays small)
    assert hydrate_process(a, "add", "BIG-1", "--file", str(body)).returncode == 0
    assert hydrate(a, "push").returncode == 0
    b = clone(remote, tmp_path / "b")
    git(b, "config", "hydrate.maxBodyBytes", "300m")
    pull = _peak_kib(b, "pull")
    doctor = _peak_kib(b, "doctor")
    print(f"peak RSS of the python process: pull {pull // 1024} MiB, doctor {doctor // 1024} MiB")
    # the body whole would be 128 MiB, twice over when decoded; the interpreter is ~30
    assert pull < 80 * 1024 and doctor < 80 * 1024
    assert git(b, "rev-parse", "refs/hydrate/tasks/BIG-1")


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    from .test_sync import remote as make_remote

    return make_remote.__wrapped__(tmp_path)  # type: ignore[attr-defined]
