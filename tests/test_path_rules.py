"""The path rule judged cheaply (each folder once, a name's suffix first) gives the
verdicts of the plain rule, and a lazily spelled reason is the one rank() would spell."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from git_hydrate.chars import on_one_line
from git_hydrate.hydrate.rank import Candidate, Ranked, TaskText, Weights, rank
from git_hydrate.hydrate.rules import (
    GENERATED_NAMES,
    GENERATED_SUFFIXES,
    SKIPPED_DIRS,
    SKIPPED_EXTENSIONS,
    FileEntry,
    own_output_name,
    path_rule,
)
from tests.conftest import examples


def plain_rule(entry: FileEntry, max_file_bytes: int) -> str | None:
    """The rule as first written: every part of the path looked at, for every file."""
    parts = entry.path.split("/")
    if any(part in SKIPPED_DIRS for part in parts[:-1]):
        return "skipped_dir"
    name = parts[-1]
    lower = name.lower()
    if os.path.splitext(lower)[1] in SKIPPED_EXTENSIONS:
        return "skipped_ext"
    if name in GENERATED_NAMES or lower.endswith(GENERATED_SUFFIXES):
        return "generated"
    if entry.kind != "file":
        return entry.kind
    if own_output_name(entry.path):
        return "own_output"
    if not all(map(on_one_line, entry.path)):  # (a soft hyphen, a no-break space: text)
        return "bad_path"
    if entry.size > max_file_bytes:
        return "too_large"
    if entry.size == 0:
        return "empty"
    return None


_PARTS = st.one_of(
    st.sampled_from(sorted(SKIPPED_DIRS)),
    st.sampled_from(["src", "T1", "a.b", "", ".", "..", "node", "Node_Modules", "x\ty"]),
    st.sampled_from(["\xad", "a\u00a0b", "\u200b", "x\u2028y"]),  # (text or not, by chars)
    st.text(min_size=0, max_size=6),
)
_NAMES = st.one_of(
    st.sampled_from(sorted(GENERATED_NAMES)),
    st.sampled_from(["T1.prompt.md", "T1.packet.json", "x.prompt.md", "README", ".bashrc"]),
    st.builds(
        lambda stem, ext: stem + ext,
        st.text(max_size=5),
        st.sampled_from([*sorted(SKIPPED_EXTENSIONS), *GENERATED_SUFFIXES, ".py", ".", ""]),
    ),
)


@settings(max_examples=examples(300), deadline=None)
@given(
    folders=st.lists(_PARTS, max_size=4),
    name=_NAMES,
    kind=st.sampled_from(["file", "symlink", "submodule", "special"]),
    size=st.integers(0, 200),
    limit=st.integers(1, 150),
)
def test_path_rule_equals_the_plain_rule(
    folders: list[str], name: str, kind: str, size: int, limit: int
) -> None:
    path = "/".join([*folders, name])
    entry = FileEntry(path=path, size=size, kind=kind)
    assert path_rule(entry, limit) == plain_rule(entry, limit)
    if folders and folders[-1] and kind == "file":  # its own output, where it is the folder's
        own = FileEntry(path="/".join([*folders, f"{folders[-1]}.prompt.md"]), size=size)
        assert path_rule(own, limit) == plain_rule(own, limit)


def test_a_reason_spelled_late_is_the_reason_and_compares_as_one() -> None:
    candidates = [Candidate(p, 100) for p in ("src/queue.py", "src/retry.py", "docs/x.md")]
    task = TaskText("retry the queue", files_in_play=["src/queue.py"])
    history = [["src/queue.py", "src/retry.py"], ["docs/x.md"]]
    # (as in a large repository: no commit here is a sweep, and this history is trusted)
    weights = Weights(sweep_share=0.0, trusted=0)
    found = rank(candidates, task, history, weights)
    again = rank(candidates, task, history, weights)
    # equal before any reason was asked, and each is then the reason spelled at once
    assert found == again
    spelled = {path: (r.level, r.score, r.reason) for path, r in found.items()}
    assert found == {path: Ranked(*values) for path, values in spelled.items()}
    assert spelled["src/queue.py"][2] == "file in play"
    assert spelled["src/retry.py"][2] == "co-change with src/queue.py"
    assert hash(found["src/retry.py"]) == hash(Ranked(*spelled["src/retry.py"]))
    assert "co-change with src/queue.py" in repr(found["src/retry.py"])


@settings(max_examples=examples(300))
@given(raw=st.binary(min_size=1, max_size=24))
def test_an_entrys_raw_path_is_the_bytes_its_path_was_decoded_from(raw: bytes) -> None:
    """A listed file holds its path as text only: the bytes git gave (not UTF-8
    too) are made again from it, exactly."""
    from git_hydrate.hydrate.rules import decode_path

    assert FileEntry(path=decode_path(raw), size=1).raw_path == raw


@settings(max_examples=examples(500))
@given(name=st.text(st.sampled_from(".aZ_-~é"), max_size=8))
def test_a_names_extension_is_what_splitext_gives(name: str) -> None:
    from git_hydrate.hydrate.rules import _extension

    assert _extension(name) == os.path.splitext(name)[1]


@settings(max_examples=examples(300), deadline=None)
@given(
    names=st.lists(st.text(st.sampled_from("ab_.\n/é"), max_size=6), max_size=12),
    inside=st.lists(st.text(st.sampled_from("ab_.\né"), max_size=3), min_size=1, max_size=3),
    leading=st.lists(st.text(st.sampled_from("ab_.\n"), max_size=3), max_size=2),
)
def test_one_search_of_every_name_misses_no_name_a_search_of_each_finds(
    names: list[str], inside: list[str], leading: list[str]
) -> None:
    """Test pairing looks for a few words in every file's name by one search of all
    of them (a name a line): it keeps, in order, every path a search of its own
    name alone would keep, whatever the names hold (line breaks, empty words)."""
    import re

    from git_hydrate.hydrate.pairing import may_pair

    paths = [f"dir/{name}" if i % 2 else name for i, name in enumerate(names)]
    pattern = "|".join([*map(re.escape, inside), *(f"^{re.escape(w)}" for w in leading)])
    search = re.compile(pattern).search
    kept = may_pair(paths, inside, leading)
    wanted = [p for p in paths if search(p.rpartition("/")[2])]
    assert [p for p in kept if p in wanted] == wanted
    assert all(p in paths for p in kept)


def test_the_lockfiles_and_bundles_of_more_ecosystems_are_generated() -> None:
    """Lockfiles of Bun (text, 1.2), Deno, PEP 751, pixi, conda-lock, renv, SwiftPM,
    Carthage, dep, Bazel, Terraform, Stack, Cabal, Crystal, Paket and Bundler's
    gems.locked, Yarn's Plug'n'Play loaders, and minified ES and CommonJS modules
    and their maps were read, ranked and attached like a team's own code."""
    names = [
        "bun.lock", "deno.lock", "pylock.toml", "pixi.lock", "conda-lock.yml", "renv.lock",
        "Sources/Package.resolved", "Cartfile.resolved", "Gopkg.lock", "MODULE.bazel.lock",
        "infra/.terraform.lock.hcl", "stack.yaml.lock", "cabal.project.freeze", "shard.lock",
        "paket.lock", "gems.locked", ".pnp.cjs", ".pnp.loader.mjs", "dist2/app.min.mjs",
        "lib/index.min.cjs", "lib/index.mjs.map", "lib/index.cjs.map",
    ]  # fmt: skip
    assert {name: path_rule(FileEntry(name, 10), 1000) for name in names} == dict.fromkeys(
        names, "generated"
    )
    assert path_rule(FileEntry("src/lock.py", 10), 1000) is None


def test_code_a_tool_writes_and_names_so_is_generated() -> None:
    """protoc's, build_runner's, Entity Framework's designer files and OpenAPI
    clients were read, ranked and attached (trpc's 112 `*.gen.ts`, 15th in a
    ticket's prompt; eShop's migrations' `*.Designer.cs`): generated by name,
    their sources (and names merely alike) not."""
    names = [
        "api/v1/user.pb.go", "proto/user_pb2.py", "proto/user_pb2.pyi", "proto/user_pb2_grpc.py",
        "src/user.pb.cc", "src/user.pb.h", "Sources/User.pb.swift", "web/user_grpc_web_pb.js",
        "lib/user.g.dart", "lib/user.freezed.dart", "test/client.mocks.dart",
        "Migrations/20231009_Initial.Designer.cs", "src/client/sdk.gen.ts",
        "src/graphql/types.generated.ts",
    ]  # fmt: skip
    assert {name: path_rule(FileEntry(name, 10), 1000) for name in names} == dict.fromkeys(
        names, "generated"
    )
    for name in ["proto/user.proto", "lib/user.dart", "src/pb.go", "src/gen.ts", "Form.cs"]:
        assert path_rule(FileEntry(name, 10), 1000) is None, name
