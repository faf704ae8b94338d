"""A ticket's title names its area by convention (``fastcgi: ...``, ``fix(etag): ...``)."""

from __future__ import annotations

import pytest

from git_hydrate.hydrate.areas import AREA_FILES, AREA_NAMES, area_files
from git_hydrate.hydrate.rank import Candidate, TaskText, rank

FASTCGI = ["modules/fastcgi/client.go", "modules/fastcgi/fastcgi.go"]
ETAG = ["src/middleware/etag/digest.ts", "src/middleware/etag/index.ts"]
PATHS = [
    ".github/workflows/walk.yml",
    "modules/fastcgi/client.go",
    "modules/fastcgi/fastcgi.go",
    "src/middleware/etag/digest.ts",
    "src/middleware/etag/index.ts",
    "src/other.ts",
    "src/walk.rs",
    "cmd/serve/main.go",
    "docs/index.md",
    *(f"src/unix/f{i}.c" for i in range(AREA_FILES + 1)),
]


@pytest.mark.parametrize(
    ("title", "named"),
    [
        ("fastcgi: fix HTTPoxy vulnerability", FASTCGI),
        ("fix(etag): match tags with optional whitespace", ETAG),
        ("feat(middleware/etag)!: weak tags", ETAG),
        ("walk: switch back to crossbeam-channel", ["src/walk.rs"]),
        ("index.md: a stem has no dot (the file name is a mention)", []),
        ("unix: remove a flag", []),
        ("docs: say more", []),
        ("fix: a crash", []),
        ("Fix the walk: it loops", []),
        ("other words\nwalk: not the title", []),
        ("chore(main): release 2.4.0", []),
        ("walk: Release v2 of the walker", []),
        ("walk: release the lock on exit", ["src/walk.rs"]),
    ],
)  # fmt: skip
def test_the_area_of_a_title_names_its_folder_or_its_stem(title: str, named: list[str]) -> None:
    """A folder of that name (at most AREA_FILES files: libuv's ``unix:`` names 54),
    else the files of that stem outside hidden folders (not a workflow named so);
    a type word (``fix``, ``docs``) names nothing, nor a ``:`` later in the title."""
    assert sorted(area_files(title, PATHS)) == named


def test_a_titles_area_ranks_its_files_as_named_unless_one_is_in_play() -> None:
    candidates = [Candidate(p, 1000) for p in PATHS]
    task = TaskText("fastcgi: populate SERVER_ADDR by default")
    ranks = rank(candidates, task, [])
    assert ranks["modules/fastcgi/client.go"].reason == "named in the task ('fastcgi')"
    assert ranks["modules/fastcgi/client.go"].level > ranks["src/other.ts"].level
    # (a file in play in the area anchors it already: its neighbours would crowd out
    # the files that change with it)
    in_play = TaskText(task.text, files_in_play=["modules/fastcgi/fastcgi.go"])
    ranks = rank(candidates, in_play, [])
    assert not ranks["modules/fastcgi/client.go"].reason.startswith("named in the task")


def test_a_path_holding_a_line_break_leaves_the_stems_files_found() -> None:
    """git allows a line break in a file's name: the stem's files are still the ones
    found, not a path further on, nor one past the end (an IndexError)."""
    assert area_files("walk: fix it", ["x\ny/z.py", "c/walk.rs"]) == {"c/walk.rs": "walk"}
    assert area_files("walk: fix it", ["x\nwalk.py", "c/z.rs"]) == {}
    assert area_files("walk: fix it", ["a/walk\n.rs", "b/walk.c"]) == {"b/walk.c": "walk"}


def test_a_title_of_many_areas_names_the_files_of_its_first_ones() -> None:
    """Each area is a pass over every path: a title listing thousands of names in its
    parentheses (a pasted log line) looks for its first AREA_NAMES, each once."""
    paths = [f"src/m{i}.py" for i in range(AREA_NAMES + 1)]
    names = [f"m{i}" for i in range(AREA_NAMES + 1)]
    title = f"fix({', '.join(['m0', *names])}): everything"
    assert sorted(area_files(title, paths)) == sorted(paths[:AREA_NAMES])
