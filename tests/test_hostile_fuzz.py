"""Fuzzing pulls with random remote data: trees, modes, JSON shapes and sizes.

Runs in CI's slow step (``pytest -m slow``). Each example builds a crafted
remote task (and sometimes an archive or removal record) with git's own
plumbing, pulls it into a clone that has work of its own, and checks the
pull neither crashes nor hangs nor writes outside ``refs/hydrate``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from git_hydrate import Ledger

from .conftest import git, hydrate

pytestmark = pytest.mark.slow

FAKE = "1234567890abcdef1234567890abcdef12345678"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def task_documents(draw: Any, task_id: str) -> bytes:
    """A task.json: a valid one with random changes, random JSON, or a deep one."""
    kind = draw(st.integers(0, 3))
    doc: dict[str, Any] = {
        "format": 1,
        "id": task_id,
        "title": "t",
        "objective": "o",
        "acceptance": "a",
    }
    if kind == 0:
        return json.dumps(doc).encode()
    if kind == 1:
        doc[
            draw(st.sampled_from(["title", "priority", "status", "checkpoints", "x", "format"]))
        ] = draw(json_values)
        return json.dumps(doc).encode()
    if kind == 2:
        depth = draw(st.integers(1, 3000))
        return (
            b'{"format":1,"id":"'
            + task_id.encode()
            + b'","x":'
            + b"[" * depth
            + b"]" * depth
            + b"}"
        )
    return json.dumps(draw(json_values)).encode()


@st.composite
def link_documents(draw: Any) -> bytes:
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return b'{"format":1,"links":[]}'
    if kind == 1:
        link = {
            "sha256": "0" * 64,
            "oid": FAKE,
            "size": draw(st.integers(-5, 2**64)),
            "source": "s",
            "expires": draw(st.integers(-(2**40), 2**70)),
        }
        return json.dumps({"format": 1, "links": [link]}).encode()
    return json.dumps({"format": draw(st.integers(-1, 3)), "links": draw(json_values)}).encode()


ENTRY_NAMES = ["task.json", "links.json", "links", "bodies", "evil", "x.json", "..."]
MODES = ["100644", "100755", "120000", "160000", "040000"]


def _blob(repo: Path, data: bytes) -> str:
    return (
        subprocess.run(
            ["git", "hash-object", "-w", "--stdin"],
            cwd=repo,
            input=data,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )


def _mktree(repo: Path, lines: list[str]) -> str:
    return git(repo, "mktree", "--missing", input="".join(f"{ln}\n" for ln in lines)).strip()


#: The repositories every example starts from, made once per process: an empty
#: bare remote, ``a`` (whose object store the examples' crafted objects go to; they
#: reach a remote only through a push of their own) and ``b``, a clone with a task
#: of its own. Each example pulls into its own copy of ``b`` from its own copy of
#: the remote, as fresh as a repository made for it.
_TEMPLATE: list[Path] = []


def _template(tmp_path_factory: Any) -> Path:
    if not _TEMPLATE:
        base = tmp_path_factory.mktemp("fuzz-template")
        remote = base / "remote.git"
        git(base, "init", "-q", "--bare", str(remote))
        a, b = base / "a", base / "b"
        for repo in (a, b):
            git(base, "init", "-q", "-b", "main", str(repo))
            git(repo, "remote", "add", "origin", str(remote))
            git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        with Ledger(b) as ledger:
            ledger.add_task("MINE", objective="o", acceptance="a")
            ledger.add_context("MINE", "my notes\n", "notes")
        _TEMPLATE.append(base)
    return _TEMPLATE[0]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_remote_data_never_crashes_a_pull(tmp_path_factory: Any, data: Any) -> None:
    template = _template(tmp_path_factory)
    base = tmp_path_factory.mktemp("fuzz")
    remote, a, b = base / "remote.git", template / "a", base / "b"
    shutil.copytree(template / "remote.git", remote, symlinks=True)
    shutil.copytree(template / "b", b, symlinks=True)
    config = b / ".git" / "config"
    config.write_text(config.read_text().replace(str(template / "remote.git"), str(remote)))
    assert git(b, "remote", "get-url", "origin").strip() == str(remote)
    task_id = "FUZZ-1"
    lines = [
        f"100644 blob {_blob(a, data.draw(task_documents(task_id)))}\ttask.json",
        f"100644 blob {_blob(a, data.draw(link_documents()))}\tlinks.json",
    ]
    for _ in range(data.draw(st.integers(0, 3))):
        name = data.draw(st.sampled_from(ENTRY_NAMES))
        mode = data.draw(st.sampled_from(MODES))
        if name in ("task.json", "links.json"):
            continue
        if mode == "040000":
            sub = _mktree(
                a, [f"100644 blob {_blob(a, b'{}')}\t{'ab' if name == 'bodies' else 'x'}"]
            )
            lines.append(f"040000 tree {sub}\t{name}")
        elif mode == "160000":
            lines.append(f"160000 commit {FAKE}\t{name}")
        else:
            lines.append(f"{mode} blob {_blob(a, data.draw(st.binary(max_size=64)))}\t{name}")
    by_name: dict[str, str] = {}
    for line in lines:  # one entry per name: the first one drawn
        by_name.setdefault(line.split("\t")[1], line)
    lines = list(by_name.values())
    tree = _mktree(a, lines)
    commit = git(a, "commit-tree", tree, "-m", "fuzz").strip()
    refs = [f"{commit}:refs/hydrate/tasks/{task_id}"]
    shared = data.draw(st.sampled_from([None, "archive", "removed"]))
    if shared is not None:
        name = "index.json" if shared == "archive" else "removed.json"
        doc = data.draw(
            st.sampled_from(
                [
                    json.dumps(
                        {
                            "format": 1,
                            "tasks": {
                                "MINE": {
                                    "tip": FAKE,
                                    "title": "t",
                                    "status": "done",
                                    "kind": "code",
                                    "priority": 2,
                                }
                            },
                        }
                    ).encode(),
                    json.dumps({"format": 1, "removed": {"MINE": {"tip": FAKE}}}).encode(),
                    b"[" * 4000 + b"]" * 4000,
                    json.dumps(data.draw(json_values)).encode(),
                ]
            )
        )
        entries = [f"100644 blob {_blob(a, doc)}\t{name}"]
        if data.draw(st.booleans()):
            entries.append(f"160000 commit {FAKE}\tevil")
        shared_commit = git(a, "commit-tree", _mktree(a, entries), "-p", commit, "-m", "s").strip()
        refs.append(f"{shared_commit}:refs/hydrate/{shared}")
    git(a, "push", "-q", str(remote), *refs)

    outside = git(
        b, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"
    )
    mine = git(b, "rev-parse", "refs/hydrate/tasks/MINE").strip()
    res = hydrate(b, "pull", "--json")
    assert res.returncode in (0, 1), res
    assert "bug" not in res.stderr and "Traceback" not in res.stderr, res.stderr
    json.loads(res.stdout)
    assert (
        git(b, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
        == outside
    )
    # the clone's own task is still there and readable (no claim took it away)
    assert git(b, "rev-parse", "refs/hydrate/tasks/MINE").strip() == mine
    assert hydrate(b, "show", "MINE").returncode == 0
    for args in (["list"], ["status"], ["doctor"]):
        done = hydrate(b, *args)
        assert "bug" not in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    # nothing hostile reached a local ref: a local write would then carry it
    for ref in git(b, "for-each-ref", "--format=%(refname)", "refs/hydrate").split():
        listing = git(b, "ls-tree", "-r", "-t", ref)
        assert "160000" not in listing and "120000" not in listing, (ref, listing)
