"""add-tree in a partial clone (``git clone --filter=blob:none``): git fetches each
blob it lacks when it is asked about it, so a run asks only about the blobs of
the files its pathspec takes (never ``git ls-tree -l`` of the whole tree)."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from git_hydrate import Ledger
from tests.conftest import commit_files, fsck, git, hydrate

TASK = "T-1"
FILES = {f"{folder}/f{i}.txt": f"{folder} file {i}\n" for folder in ("a", "b") for i in range(5)}


def _missing(clone: Path) -> set[str]:
    """The blobs of ``HEAD`` the clone lacks (listed without fetching them)."""
    out = git(clone, "rev-list", "--objects", "--missing=print", "HEAD")
    return {line[1:] for line in out.splitlines() if line.startswith("?")}


@pytest.fixture
def partial(tmp_path: Path) -> Path:
    """A blobless clone, with no work tree checked out, of a repository of two
    folders of five files each: it lacks every blob of ``HEAD``."""
    origin = tmp_path / "origin"
    git(tmp_path, "init", "-q", "-b", "main", str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit_files(origin, FILES)
    clone = tmp_path / "partial"
    git(
        tmp_path,
        "clone",
        "-q",
        "--filter=blob:none",
        "--no-checkout",
        f"file://{origin}",
        "partial",
    )
    assert len(_missing(clone)) == len(FILES)
    with Ledger(clone) as ledger:
        ledger.add_task(TASK, objective="Fix the parser", acceptance="tests pass")
    return clone


def test_a_pathspec_fetches_only_the_blobs_it_takes(partial: Path) -> None:
    with Ledger(partial) as ledger:
        result = ledger.add_tree(TASK, ["a"])
        links = ledger.context_entries(TASK)
    assert result["added"] == 5
    wanted = {
        git(partial, "rev-parse", f"HEAD:{name}").strip() for name in FILES if name[0] == "a"
    }
    assert _missing(partial) == {
        git(partial, "rev-parse", f"HEAD:{name}").strip() for name in FILES if name[0] == "b"
    }
    assert {link["oid"] for link in links} == wanted
    for link in links:
        text = FILES[link["source"]].encode()
        assert (link["size"], link["hash"]) == (len(text), hashlib.sha256(text).hexdigest())
    fsck(partial)


def test_the_whole_tree_is_taken_as_in_a_full_clone(partial: Path) -> None:
    """Without a pathspec every blob is fetched (each sized by git), and the links
    are those a full clone makes."""
    with Ledger(partial) as ledger:
        result = ledger.add_tree(TASK)
        sizes = {link["source"]: link["size"] for link in ledger.context_entries(TASK)}
    assert result["added"] == len(FILES) and result["skipped"] == []
    assert _missing(partial) == set()
    assert sizes == {name: len(text.encode()) for name, text in FILES.items()}


def test_the_blobs_a_run_takes_come_in_one_fetch(partial: Path) -> None:
    """git's lazy fetch asks the remote for one blob at a time (a fetch, a pack and
    git's housekeeping each: 3,000 files took 649 s); the blobs a run takes that the
    clone lacks are fetched together, in one pack."""
    git(partial, "config", "maintenance.auto", "false")  # (no repack of the packs counted)
    git(partial, "config", "gc.auto", "0")
    packs = partial / ".git" / "objects" / "pack"
    before = set(packs.glob("*.promisor"))
    with Ledger(partial) as ledger:
        assert ledger.add_tree(TASK)["added"] == len(FILES)
    assert _missing(partial) == set()
    assert len(set(packs.glob("*.promisor")) - before) == 1
    fsck(partial)


def test_a_promisor_remote_out_of_reach_is_named_in_the_one_line(partial: Path) -> None:
    """The blobs a run takes cannot be fetched: git's words alone ("'...' does not
    appear to be a git repository") did not say they were a partial clone's blobs,
    nor what to do; nothing is attached."""
    (partial.parent / "origin").rename(partial.parent / "gone")
    res = hydrate(partial, "add-tree", TASK, "a")
    assert res.returncode == 1, res
    assert res.stdout == "" and len(res.stderr.splitlines()) == 1, res
    assert "partial clone" in res.stderr and "'origin'" in res.stderr, res
    assert "Traceback" not in res.stderr
    with Ledger(partial) as ledger:
        assert ledger.context_entries(TASK) == []


def test_a_sparse_checkouts_files_are_fetched_only_when_taken(partial: Path) -> None:
    """``--worktree`` in a sparse checkout of a partial clone: the files outside
    its patterns are taken from the index, their blobs fetched for those the
    pathspec takes only."""
    git(partial, "sparse-checkout", "set", "--no-cone", "/a/")
    git(partial, "checkout", "-q", "main")
    outside = {git(partial, "rev-parse", f"HEAD:{name}").strip(): name for name in FILES}
    outside = {oid: name for oid, name in outside.items() if name[0] == "b"}
    assert _missing(partial) == set(outside)
    with Ledger(partial) as ledger:
        result = ledger.add_tree(TASK, ["a", "b/f1.txt"], worktree=True)
        sources = sorted(link["source"] for link in ledger.context_entries(TASK))
    assert result["added"] == 6
    assert sources == [*sorted(n for n in FILES if n[0] == "a"), "b/f1.txt"]
    assert {outside[oid] for oid in _missing(partial)} == {f"b/f{i}.txt" for i in (0, 2, 3, 4)}
    fsck(partial)


def test_the_sparse_files_a_worktree_run_takes_come_in_one_fetch(partial: Path) -> None:
    """``--worktree b`` in a sparse checkout that leaves ``b`` out: its five blobs
    come in one fetch, not one each."""
    git(partial, "sparse-checkout", "set", "--no-cone", "/a/")
    git(partial, "checkout", "-q", "main")
    git(partial, "config", "maintenance.auto", "false")  # (no repack of the packs counted)
    git(partial, "config", "gc.auto", "0")
    packs = partial / ".git" / "objects" / "pack"
    before = set(packs.glob("*.promisor"))
    with Ledger(partial) as ledger:
        assert ledger.add_tree(TASK, ["b"], worktree=True)["added"] == 5
    assert _missing(partial) == set()
    assert len(set(packs.glob("*.promisor")) - before) == 1
    fsck(partial)


def test_a_sparse_checkout_of_a_partial_clone_fetches_nothing_unasked(partial: Path) -> None:
    """``--worktree`` without a pathspec in a sparse checkout of a partial clone:
    the files outside its patterns are skipped (``sparse``), each named, and no
    blob is fetched; the files on disk are taken."""
    git(partial, "sparse-checkout", "set", "--no-cone", "/a/")
    git(partial, "checkout", "-q", "main")
    missing = _missing(partial)
    with Ledger(partial) as ledger:
        result = ledger.add_tree(TASK, worktree=True)
        sources = sorted(link["source"] for link in ledger.context_entries(TASK))
    assert sources == sorted(n for n in FILES if n[0] == "a")
    skipped = {s["path"]: s["reason"] for s in result["skipped"]}
    assert skipped == {name: "sparse" for name in FILES if name[0] == "b"}
    assert _missing(partial) == missing  # (nothing fetched)
    fsck(partial)


def test_a_named_file_outside_the_sparse_checkout_is_named_in_the_prompt(partial: Path) -> None:
    """A file in play that ``--worktree`` left out as ``sparse`` is named in the
    prompt's Not included part, its size unknown (its blob was not fetched), with
    a command that prints it (``git show`` fetches it then)."""
    git(partial, "sparse-checkout", "set", "--no-cone", "/a/")
    git(partial, "checkout", "-q", "main")
    with Ledger(partial) as ledger:
        ledger.add_task(
            "N-1", objective="fix b", acceptance="a", files=[{"path": "b/f2.txt", "note": ""}]
        )
        ledger.add_tree("N-1", worktree=True)
        prompt = ledger.prompt("N-1", max_bytes=100_000)["prompt"]
    oid = git(partial, "rev-parse", "HEAD:b/f2.txt").strip()
    line = next(x for x in prompt.splitlines() if "b/f2.txt" in x and "not attached" in x)
    assert line.endswith(f"(size unknown): not attached, sparse; git show {oid}"), line
    shown = subprocess.run(["git", "show", oid], cwd=partial, capture_output=True, check=True)
    assert shown.stdout == FILES["b/f2.txt"].encode()


def test_a_sparse_file_attached_before_follows_its_file(partial: Path) -> None:
    """A file outside the sparse checkout that an earlier run attached (its pathspec
    took it) is taken again by a run without one: its link is neither removed (as it
    was) nor kept stale (as a first fix did, after the file changed upstream): its
    blob is fetched, and the others stay unfetched."""
    git(partial, "sparse-checkout", "set", "--no-cone", "/a/")
    git(partial, "checkout", "-q", "main")
    with Ledger(partial) as ledger:
        ledger.add_task(
            "K-1", objective="fix b", acceptance="a", files=[{"path": "b/f1.txt", "note": ""}]
        )
        ledger.add_tree("K-1", ["a", "b/f1.txt"], worktree=True)
        before = {link["source"]: link["hash"] for link in ledger.context_entries("K-1")}
        again = ledger.add_tree("K-1", worktree=True)
        assert {e["source"]: e["hash"] for e in ledger.context_entries("K-1")} == before
    assert "b/f1.txt" in before and again["removed"] == 0
    skipped = {s["path"]: s["reason"] for s in again["skipped"]}
    assert skipped == {f"b/f{i}.txt": "sparse" for i in (0, 2, 3, 4)}
    # the file changes upstream; the clone takes the commit (its sparse checkout keeps
    # b/ away, so the new blob is not fetched by the pull)
    origin = partial.parent / "origin"
    commit_files(origin, {"b/f1.txt": "b file 1, changed\n"})
    git(partial, "pull", "-q", "--ff-only", "origin", "main")
    missing = _missing(partial)
    with Ledger(partial) as ledger:
        changed = ledger.add_tree("K-1", worktree=True)
        prompt = ledger.prompt("K-1", max_bytes=100_000)["prompt"]
    assert changed["updated"] == 1 and changed["removed"] == 0
    assert "b file 1, changed\n" in prompt and "not attached" not in prompt
    assert len(missing - _missing(partial)) == 1  # (the one blob: the others stay away)
    fsck(partial)


def test_the_skipped_sparse_files_are_listed_with_no_size(tmp_path: Path) -> None:
    """Their blobs are not here: ``-v`` says the size is unknown, not ``0 bytes``, and
    the summary (more than ten skipped) gives them no byte count."""
    origin = tmp_path / "origin"
    git(tmp_path, "init", "-q", "-b", "main", str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit_files(origin, {"a/x.txt": "x\n", **{f"b/f{i:02}.txt": f"{i}\n" for i in range(12)}})
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{origin}", "partial")
    clone = tmp_path / "partial"
    git(clone, "sparse-checkout", "set", "--no-cone", "/a/")
    made = hydrate(clone, "task-add", TASK, "--objective", "o", "--acceptance", "a")
    assert made.returncode == 0, made
    res = hydrate(clone, "add-tree", TASK, "--worktree")
    assert res.returncode == 0, res
    assert "skipped 12 files: 12 sparse (-v lists them)" in res.stdout
    listed = hydrate(clone, "add-tree", TASK, "--worktree", "-v")
    lines = [line for line in listed.stdout.splitlines() if line.startswith("  sparse")]
    assert lines == [
        f"  sparse        b/f{i:02}.txt (size unknown: its blob is not here)" for i in range(12)
    ]


OK = ("--acceptance", "ok")
SOURCES = {"a/f.py": "alpha parser\n", "b/g.py": "beta lexer\n", "c/h.py": "gamma lexer tokens\n"}


def _suggested(clone: Path, task: str) -> dict[str, object]:
    out = hydrate(clone, "rank", task, "--suggest", "--json")
    assert out.returncode == 0 and out.stderr == "", out
    found: dict[str, object] = json.loads(out.stdout)
    return found


@pytest.mark.parametrize("checkout", [True, False])
def test_rank_suggest_in_a_blobless_clone(tmp_path: Path, checkout: bool) -> None:
    """``rank --suggest`` in a blobless clone fetches no blob: a file whose blob is
    here (checked out) is read and sized as in a full clone, one whose blob is not
    is matched by its path alone and counted (``unread``, and a note on stderr);
    once add-tree fetched them, the answer is the full clone's."""
    origin = tmp_path / "origin"
    git(tmp_path, "init", "-q", "-b", "main", str(origin))
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit_files(origin, SOURCES)
    no_checkout = [] if checkout else ["--no-checkout"]
    git(tmp_path, "clone", "-q", "--filter=blob:none", *no_checkout, f"file://{origin}", "pc")
    clone = tmp_path / "pc"
    for repo in (origin, clone):
        made = hydrate(repo, "task-add", "PC-1", "--objective", "lexer tokens in b/g.py", *OK)
        assert made.returncode == 0, made
    full = _suggested(origin, "PC-1")
    assert [s["path"] for s in full["suggestions"]][:2] == ["b/g.py", "c/h.py"]  # type: ignore[index]
    missing = _missing(clone)
    found = _suggested(clone, "PC-1")
    assert _missing(clone) == missing  # (nothing fetched)
    if checkout:  # (the checkout fetched every blob of HEAD)
        assert found["suggestions"] == full["suggestions"]
        assert found == full and full["unread"] == 0
    else:
        assert found["suggestions"] == [
            {"path": "b/g.py", "score": 1.0, "reason": "named in the task ('b/g.py')"}
        ]
        assert found["unread"] == len(SOURCES)
        text = hydrate(clone, "rank", "PC-1", "--suggest")
        assert text.stdout.startswith("b/g.py  1.00  named in the task ('b/g.py')\n")
        assert text.stderr.splitlines()[1] == (
            "note: the contents of 3 files are not in this partial clone: matched by path"
            " alone (git hydrate add-tree PC-1 PATHSPEC fetches the files it takes)"
        )
        hydrate(clone, "task-add", "PC-2", "--objective", "the gamma tokens", *OK)
        none = hydrate(clone, "rank", "PC-2", "--suggest")
        assert none.returncode == 0 and none.stdout == (
            "PC-2: no file suggested (the task's text matches no file's path, nor the"
            " contents of those here)\n"
        )
        assert none.stderr.startswith("note: the contents of 3 files are not in")
    assert hydrate(clone, "add-tree", "PC-1", ".").returncode == 0  # (fetches them all)
    assert _missing(clone) == set()
    assert _suggested(clone, "PC-1") == full


def test_rank_fetches_no_blob_the_run_it_ranks_among_lacks(partial: Path) -> None:
    """``rank`` ranks among the files a recorded run would take now, but a file in
    play that run never fetched is not fetched to size it: the links then rank
    among themselves."""
    with Ledger(partial) as ledger:
        ledger.add_tree(TASK, ["a"])
        assert ledger.rank(TASK)["reranked"] == 0
        missing = _missing(partial)
        ledger.edit_task(TASK, files=["b/f1.txt", "a/f2.txt"])
        result = ledger.rank(TASK)
    assert result["missing"] == ["b/f1.txt"] and result["reranked"] > 0
    assert _missing(partial) == missing  # (nothing fetched)
