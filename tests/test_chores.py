"""Chores in co-change: a lint or dependency update that touches a source file and
the tools' configuration does not make the CI files that file's partners."""

from __future__ import annotations

from dataclasses import replace

from git_hydrate.hydrate.chores import chore_scale, is_chore
from git_hydrate.hydrate.rank import Candidate, Ranking, TaskText, Weights, rank
from git_hydrate.hydrate.terms import blob_facts

TERMUI = (
    "def prompt(text, default=None, hide_input=False):\n"
    '    """Ask for input; with hide_input the default value is not shown."""\n'
    "    return text if hide_input or default is None else f'{text} [{default}]'\n"
)
FILES = {
    "src/pkg/termui.py": TERMUI,
    "src/pkg/core.py": "class Command:\n    def invoke(self, ctx):\n        return ctx\n",
    ".pre-commit-config.yaml": "repos:\n  - rev: v1\n",
    "src/pkg/_compat.py": "WIN = False\nOSX = False\n",
}
#: Newest first: termui.py changed twice with the hooks' file in chores, twice with
#: _compat.py in real changes (older, so without the rule the chores weigh more).
HISTORY = [
    ["src/pkg/termui.py", ".pre-commit-config.yaml"],
    ["src/pkg/termui.py", ".pre-commit-config.yaml", "src/pkg/core.py"],
    ["src/pkg/termui.py", "src/pkg/_compat.py"],
    ["src/pkg/termui.py", "src/pkg/_compat.py"],
    ["src/pkg/core.py"],
]
SUBJECTS = [
    "update ruff hook and noqa",
    "update dev dependencies",
    "fix the console on Windows",
    "no echo on macOS",
    "tidy",
]
OBJECTIVE = "The prompt shows its default value when the input is hidden"


def _ranked(text: str, in_play: list[str], weights: Weights | None = None) -> Ranking:
    facts = {path: blob_facts(body.encode()) for path, body in FILES.items()}
    candidates = [Candidate(path, len(body)) for path, body in FILES.items()]
    task = TaskText(text, files_in_play=in_play)
    # (this history stands for a large repository's: no share of its files is a sweep,
    # and its few commits are trusted as many would be)
    weights = replace(weights or Weights(), sweep_share=0.0, trusted=0)
    return rank(candidates, task, HISTORY, weights, facts=facts, subjects=SUBJECTS)


def _level(found: Ranking, path: str) -> int:
    return found[path].level


def test_a_chore_is_told_by_its_subject() -> None:
    for subject in ("update dev dependencies", "Bump ruff from 0.4 to 0.5", "chore: tidy CI"):
        assert is_chore(subject)
    for subject in ("Fix the session cookie's SameSite", "add typing to core", "circular import"):
        assert not is_chore(subject)
    assert chore_scale(SUBJECTS, 6, 0.5) == [0.5, 0.5, 1.0, 1.0, 1.0, 1.0]
    assert chore_scale(SUBJECTS, 5, 1.0) is None
    assert chore_scale(["tidy", "fix"], 2, 0.5) is None


def test_chores_weigh_less_in_co_change_from_a_content_hit_and_a_file_in_play() -> None:
    config, compat = ".pre-commit-config.yaml", "src/pkg/_compat.py"
    for in_play in ([], ["src/pkg/termui.py"]):
        found = _ranked(OBJECTIVE, in_play)
        assert _level(found, compat) > _level(found, config), in_play
        # the rule off (every commit weighs 1): the chores' partner ranked first
        off = _ranked(OBJECTIVE, in_play, Weights(chore=1.0))
        assert _level(off, config) > _level(off, compat), in_play


def test_a_task_that_is_a_chore_keeps_the_chores_weight() -> None:
    text = "Update the ruff hook; " + OBJECTIVE
    found = _ranked(text, ["src/pkg/termui.py"])
    off = _ranked(text, ["src/pkg/termui.py"], Weights(chore=1.0))
    assert [(path, _level(found, path)) for path in FILES] == [
        (path, _level(off, path)) for path in FILES
    ]
    assert _level(found, ".pre-commit-config.yaml") > _level(found, "src/pkg/_compat.py")
