"""Golden tests of the packer's paths test_golden.py does not reach, pinned byte for byte.

test_golden.py pins a task of hand-added notes. This module pins what a task of
files adds: outlines kept in place of whole files (``shrunk``), the prompt's
``### Not included`` notice and its ``flagged`` named files, value per byte's
``decisions``, the parent task's attachment, the three prompt formats, exact
token budgets, the streamed prompt (``write_prompt``, the lean walk) and the
``-v`` listing; and the seed-named API (:mod:`git_hydrate.context_expander`)
called with plain dict entries, its body loader and outliner, and expiry given
as a datetime, an ISO text and a number. Rewrite the files after a *deliberate*
change as test_golden.py says (``GOLDEN_UPDATE=1``), then review the diff.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from git_hydrate import Ledger
from git_hydrate.context_expander import build_packet, build_prompt, pack_packet
from git_hydrate.pack.outline import outline
from tests.conftest import commit_files, hydrate
from tests.test_golden import T0, Clock, Golden, commit_at, iso

TASK = "P-1"
PARENT = "P-0"
NOW = T0 + 600
#: Budgets: everything fits; outlines stand in for the large files; little room.
ROOMY = 40_000
MEDIUM = 9_000
TIGHT = 3_500
TOKENS = (2_500, 1_200)


def _python(name: str, functions: int) -> str:
    return "".join(
        f"def {name}_{i}(value: int) -> int:\n    '''Step {i} of {name}.'''\n"
        + "    value += 1\n" * 8
        + "    return value\n\n\n"
        for i in range(functions)
    )


def _markdown(sections: int) -> str:
    return "# Guide\n\n" + "".join(
        f"## Part {i}\n\n" + f"Line {i} of the guide, about the handler.\n" * 6
        for i in range(sections)
    )


FILES: dict[str, str] = {
    "src/app.py": _python("handle", 12),
    "src/util.py": _python("helper", 3),
    "src/tiny.py": "VALUE = 1\n",
    "docs/guide.md": _markdown(8),
    "docs/ünï.md": "# Ünïcode 🚀\n\nGrüße — naïve café.\n",
    "data/big.txt": "".join(f"row {i:05d}: " + "x" * 40 + "\n" for i in range(120)),
    "tests/test_app.py": "from src.app import handle_0\n\n\n"
    + "".join(
        f"def test_{i}() -> None:\n    assert handle_0({i}) == {i + 25}\n\n\n" for i in range(12)
    ),
    "README.md": "# Service\n\nThe health service.\n",
}


@pytest.fixture
def packed(repo: Path) -> Iterator[Ledger]:
    """The scenario: a parent task, and a child with files attached by add-tree,
    a note that expires and one that does not."""
    clock = Clock()
    commit_files(repo, FILES)
    commit_at(repo, T0, "files", amend=True)
    with Ledger(repo, clock=clock) as ledger:
        ledger.add_task(PARENT, "Ship the health service\n\nAll of it.", "deployed", title="Ship")
        clock.tick()
        ledger.add_task(
            TASK,
            "Add GET /healthz to the handler.",
            "200 with the request id",
            title="Health",
            parent=PARENT,
            files=["src/app.py:the handler", ("docs/guide.md", "document it")],
            tests=["tests/test_app.py"],
        )
        clock.tick()
        ledger.add_tree(TASK)
        clock.tick()
        ledger.add_context(TASK, "Freeze until Friday.\n", "chat/ops", priority=30, ttl=300)
        clock.tick()
        ledger.add_context(TASK, "Keep it small.\n" * 3, "chat/review", priority=-1)
        clock.tick()
        spec = "".join(f"Spec line {i}: the handler answers within 50 ms.\n" for i in range(50))
        ledger.add_context(TASK, spec, "docs/spec", priority=25)
        clock.tick()
        yield ledger


def test_golden_pack_library(packed: Ledger) -> None:
    golden = Golden()
    for outlines in (True, False):
        name = "outlines" if outlines else "whole"
        budgets = (("roomy", ROOMY), ("medium", MEDIUM), ("tight", TIGHT))
        for label, size in budgets if outlines else budgets[1:]:
            results = {
                "pack": packed.pack(TASK, size, now=NOW, outline=outlines),
                "expand": packed.expand(TASK, size, now=NOW, outline=outlines),
                "prompt": packed.prompt(TASK, size, now=NOW, outline=outlines, cache=False),
            }
            if label == "roomy":  # (the same bodies again: test_golden pins a roomy expand)
                del results["expand"]
            golden.json(f"pack_{name}_{label}.json", results)
    for shape in ("markdown", "xml"):
        golden.json(
            f"pack_format_{shape}.json",
            {
                "expand": packed.expand(TASK, MEDIUM, now=NOW, format=shape),
                "prompt": packed.prompt(TASK, MEDIUM, now=NOW, format=shape, cache=False),
            },
        )
    for tokens in TOKENS:
        golden.json(
            f"pack_tokens_{tokens}.json",
            {
                "pack": packed.pack(TASK, now=NOW, max_tokens=tokens),
                "expand": packed.expand(TASK, now=NOW, max_tokens=tokens),
                "prompt": packed.prompt(TASK, now=NOW, max_tokens=tokens, cache=False),
                "prompt_and_bytes": packed.prompt(
                    TASK, MEDIUM, now=NOW, max_tokens=tokens, cache=False
                ),
            },
        )
    for label, size in (("medium", MEDIUM), ("tight", TIGHT)):
        out = io.BytesIO()
        fields = packed.write_prompt(TASK, out, size, now=T0 + 86400, cache=False)
        golden.json(f"pack_written_{label}.json", fields)
        golden.check(f"pack_written_{label}.md", out.getvalue().decode("utf-8"))
    golden.finish()


#: name -> arguments of a reading command.
CLI_CALLS: dict[str, tuple[str, ...]] = {
    "prompt_v": ("prompt", TASK, "--max-bytes", str(TIGHT), "--now", iso(NOW), "-vv"),
    "prompt_xml": ("prompt", TASK, "--max-bytes", str(MEDIUM), "--format", "xml", "--no-cache"),
    "pack_json": ("pack", TASK, "--max-bytes", str(MEDIUM), "--now", iso(NOW)),
    "expand_tokens": ("expand", TASK, "--max-tokens", str(TOKENS[0]), "--now", iso(NOW)),
}


def test_golden_pack_cli(
    packed: Ledger, repo: Path, golden_cli: Callable[[str, tuple[str, ...]], None]
) -> None:
    for name, args in CLI_CALLS.items():
        golden_cli(name, args)


@pytest.fixture
def golden_cli(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    from tests.test_golden import render_call

    monkeypatch.delenv("GIT_EXEC_PATH", raising=False)
    golden = Golden()

    def check(name: str, args: tuple[str, ...]) -> None:
        result = hydrate(repo, *args)
        text = render_call(args, result.returncode, result.stdout, result.stderr)
        golden.check(f"pack_cli_{name}.txt", text)

    yield check
    golden.finish()


# -- the seed-named API, with dict entries ------------------------------------------------


#: The body of the entry that carries only its size: the loader gives it.
UNREAD = "unread body " * 100


def _entry(body: str, source: str, priority: int, **extra: Any) -> dict[str, Any]:
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
    return {"hash": digest, "source": source, "priority": priority, "body": body, **extra}


def _seed_entries() -> list[dict[str, Any]]:
    big = _python("seed", 6)
    moment = datetime.fromtimestamp(NOW, UTC)
    unread = UNREAD
    return [
        _entry("Edge notes.\n", "repo/edge", 10, custom="kept as given"),
        _entry("Edge notes.\n", "repo/edge-again", 3),  # the same hash, lower: deduped
        _entry(big, "src/seed.py", 5, named="file in play"),
        _entry(_python("other", 4), "src/other.py", 4),
        _entry("gone as a datetime\n", "old/a", 9, expires=moment),
        _entry("gone as text\n", "old/b", 9, expires="2023-11-14T22:00:00+00:00"),
        _entry("live as a number\n", "live/c", 9, expires=NOW + 1),
        {
            "hash": hashlib.sha256(unread.encode()).hexdigest(),
            "source": "by/loader.txt",
            "priority": 2,
            "size": len(unread),
            "oid": "0" * 40,
        },
        _entry("ünïcode 🚀 " * 30 + "\n", "notes/ü", 1),
    ]


def test_golden_seed_api_with_dicts() -> None:
    golden = Golden()
    loaded: list[list[str]] = []
    outlined: list[list[str]] = []

    def load(entry: Mapping[str, Any]) -> str:
        loaded.append(sorted(entry))
        return UNREAD

    def shrink(entry: Mapping[str, Any], read: Callable[[], str]) -> str | None:
        outlined.append(sorted(entry))
        source = str(entry["source"])
        return outline(source, read()) if source.endswith(".py") else None

    task = {"id": "S-1", "title": "Seed", "objective": "Pack dicts.", "acceptance": "same bytes"}
    extra = {"files": ["x"], "custom": {"b": 1, "a": [2]}}
    results: dict[str, Any] = {}
    for size in (9_000, 3_000, 1_800):
        common: dict[str, Any] = {"now": NOW, "load_body": load, "outline": shrink}
        results[f"pack_{size}"] = pack_packet(task, _seed_entries(), size, **common)
        results[f"expand_{size}"] = build_packet(
            task, _seed_entries(), size, files=["src/seed.py"], extra=extra, **common
        )
        results[f"prompt_{size}"] = build_prompt(
            task, _seed_entries(), size, tests=[("t.py", "a test")], **common
        )
        results[f"plain_{size}"] = build_prompt(
            task, _seed_entries(), size, now=NOW, load_body=load
        )
    results["loader_saw"] = loaded
    results["outliner_saw"] = outlined
    golden.json("pack_seed_api.json", results)
    golden.finish()
