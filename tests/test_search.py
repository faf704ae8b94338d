"""search: ranked hits over the tasks' words, from an index kept by tip."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from git_hydrate import Ledger, ValidationError, search

from .conftest import git, hydrate


@pytest.fixture
def tasks(ledger: Ledger) -> Ledger:
    ledger.add_task(
        "R-1",
        objective="Send the Retry-After header when a client is throttled with 429.",
        acceptance="clients back off",
        title="Retry header on 429",
    )
    ledger.add_task(
        "R-2",
        objective="Per-user rate limiting; the helper is retryAfterSeconds.",
        acceptance="limits hold",
    )
    ledger.add_task("D-1", objective="Write the deployment guide.", acceptance="reviewed")
    ledger.add_checkpoint("D-1", "drafted the rate_limit section", "doc builds", "proofread", 10)
    return ledger


def test_ranked_by_bm25_with_the_title_counting_most(tasks: Ledger) -> None:
    hits = tasks.search("retry header")
    assert [h["task_id"] for h in hits] == ["R-1", "R-2"]
    assert hits[0]["field"] == "title" and hits[0]["snippet"] == "Retry header on 429"
    assert hits[0]["score"] > hits[1]["score"] > 0


def test_a_task_named_by_its_id_comes_first(tasks: Ledger) -> None:
    """People look a task up by its id: named (case aside), it comes first, even when
    its words match nothing else of the query."""
    hits = tasks.search("d-1")
    assert [(h["task_id"], h["field"], h["snippet"]) for h in hits] == [
        ("D-1", "id", "Write the deployment guide.")
    ]
    both = tasks.search("retry header R-2")
    assert [h["task_id"] for h in both] == ["R-2", "R-1"]
    assert both[0]["score"] > both[1]["score"]


def test_words_split_on_case_and_underscore_and_checkpoints_count(tasks: Ledger) -> None:
    hits = {h["task_id"]: h for h in tasks.search("rate limit")}
    assert set(hits) == {"R-2", "D-1"}
    assert hits["D-1"]["field"] == "checkpoint"
    assert "rate_limit" in hits["D-1"]["snippet"]
    assert [h["task_id"] for h in tasks.search("seconds")] == ["R-2"]  # retryAfterSeconds


def test_archived_only_on_request_and_marked(tasks: Ledger) -> None:
    tasks.set_status("D-1", "cancelled")
    tasks.archive("D-1")
    assert [h["task_id"] for h in tasks.search("deployment")] == []
    found = tasks.search("deployment", archived=True)
    assert [(h["task_id"], h["archived"]) for h in found] == [("D-1", True)]


def test_attachments_are_searched_on_request(repo: Path, tasks: Ledger) -> None:
    body = "def backoff():\n    # exponential jitter for the HTTP client\n    return 2\n"
    tasks.add_context("D-1", body, "src/client.py")
    assert tasks.search("jitter") == []
    hit = tasks.search("jitter", attachments=True)[0]
    assert hit["task_id"] == "D-1" and hit["field"] == "attachment src/client.py"
    assert "exponential jitter" in hit["snippet"]
    assert (repo / ".git" / "hydrate" / "search-bodies").exists()


def test_a_body_linked_by_many_tasks_is_tokenised_once(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six tasks link the same two bodies: a body's line is tokenised once to index
    it and, for the snippets, at most once more whatever the number of tasks and hits
    (it was twice, then once per link and hit); the first line that matches best, in
    link order, is still the snippet."""
    filler = "".join(f"plain words line {i}\n" for i in range(40))
    first, second = "exponential jitter in the client", "jitter and backoff, exponential"
    for n in range(6):
        ledger.add_task(f"S-{n}", objective=f"Task {n}", acceptance="ok")
        ledger.add_context(f"S-{n}", filler + first + "\n", "first.py")
        ledger.add_context(f"S-{n}", filler + second + "\n", "second.py")
    ledger.add_context("S-5", filler + first + "\n", "again.py")
    seen: Counter[str] = Counter()
    real = search.terms_of

    def counting(text: str) -> list[str]:
        seen[text] += 1
        return real(text)

    monkeypatch.setattr(search, "terms_of", counting)
    hits = ledger.search("jitter backoff", attachments=True)
    assert {h["task_id"] for h in hits} == {f"S-{n}" for n in range(6)}
    assert {(h["field"], h["snippet"]) for h in hits} == {("attachment second.py", second)}
    assert len({h["score"] for h in hits}) == 1
    # (second.py comes first in the links, and its line holds both words: the other
    # body cannot do better and is not looked into)
    assert (seen["plain words line 0"], seen[first], seen[second]) == (2, 1, 2)
    seen.clear()
    again = ledger.search("exponential jitter", attachments=True)
    assert {(h["field"], h["snippet"]) for h in again} == {("attachment second.py", second)}
    assert (seen["plain words line 0"], seen[first], seen[second]) == (0, 0, 1)


def test_index_is_disposable_and_follows_changes(repo: Path, tasks: Ledger) -> None:
    assert tasks.search("guide")[0]["task_id"] == "D-1"
    index = repo / ".git" / "hydrate" / "search-index-2"
    assert index.exists()
    index.write_bytes(b"\x00 not msgpack")
    assert tasks.search("guide")[0]["task_id"] == "D-1"
    tasks.edit_task("R-2", objective="Write a guide for the rate limiter.")
    assert {h["task_id"] for h in tasks.search("guide")} == {"D-1", "R-2"}
    os.remove(index)
    assert {h["task_id"] for h in tasks.search("guide")} == {"D-1", "R-2"}


def test_long_lines_are_trimmed_around_the_hit(ledger: Ledger) -> None:
    text = "word " * 60 + "needle in the middle " + "tail " * 60
    ledger.add_task("L-1", objective=text, acceptance="ok")
    snippet = ledger.search("needle")[0]["snippet"]
    assert "needle" in snippet and len(snippet) <= 122
    assert snippet.startswith("…") and snippet.endswith("…")


def test_cli_text_json_and_bad_input(repo: Path, tasks: Ledger) -> None:
    out = hydrate(repo, "search", "retry", "header")
    assert out.returncode == 0
    assert out.stdout.splitlines()[:2] == [
        "R-1\topen\tRetry header on 429",
        "    title: Retry header on 429",
    ]
    data = json.loads(hydrate(repo, "search", "retry", "--json", "--limit", "1").stdout)
    assert [h["task_id"] for h in data] == ["R-1"]
    assert set(data[0]) == {"task_id", "title", "status", "score", "snippet", "field", "archived"}
    none = hydrate(repo, "search", "zzzz")
    assert none.returncode == 0 and none.stdout == "" and "no task matches" in none.stderr
    blank = hydrate(repo, "search", "--", "  -- ")
    assert blank.returncode == 1 and blank.stderr.count("\n") == 1
    assert "holds no word" in blank.stderr
    long = hydrate(repo, "search", "--", "-+" * 10_000)  # (20 KB, no word in it)
    assert long.returncode == 1 and long.stderr == (
        "error: search for what? '" + "-+" * 39 + "… holds no word to look for\n"  # (80 in all)
    )
    assert hydrate(repo, "search", "x", "--limit", "0").returncode == 2
    with pytest.raises(ValidationError):
        tasks.search("retry", limit=0)


def test_words_beyond_ascii(ledger: Ledger) -> None:
    ledger.add_task("U-1", objective="Überweisung für Straße prüfen", acceptance="a")
    ledger.add_task("R-9", objective="Port the R scripts to F#", acceptance="ok")
    ledger.add_task("J-1", objective="日本語 の 翻訳", acceptance="ok")
    assert [h["task_id"] for h in ledger.search("für")] == ["U-1"]
    assert [h["task_id"] for h in ledger.search("STRASSE straße")][:1] == ["U-1"]
    assert [h["task_id"] for h in ledger.search("日本語")] == ["J-1"]


def test_the_mcp_tool_answers_within_its_budget(repo: Path, tasks: Ledger) -> None:
    import json as _json

    from git_hydrate.serve.answers import AnswerBudget
    from git_hydrate.serve.tools import READ_ONLY, call

    assert "search_tasks" in READ_ONLY
    answer = _json.loads(
        call(
            tasks,
            "search_tasks",
            {"query": "retry header"},
            AnswerBudget(20000, "bytes", "", None),
        )
    )
    assert [h["task_id"] for h in answer["tasks"]][:2] == ["R-1", "R-2"]
    with pytest.raises(ValidationError, match="holds no word"):
        call(tasks, "search_tasks", {"query": "  "}, AnswerBudget(20000, "bytes", "", None))


def test_search_and_ready_say_which_damaged_tasks_they_left_out(repo: Path, tasks: Ledger) -> None:
    """``list`` shows a damaged task; ``search`` and ``ready`` cannot, so they say on
    stderr that they left it out (and still answer for the others)."""
    blob = git(repo, "hash-object", "-w", "--stdin", input="not a commit")
    git(repo, "update-ref", "refs/hydrate/tasks/Z-9", blob.strip())
    for args in (["search", "retry"], ["search", "retry", "--json"], ["ready"]):
        out = hydrate(repo, *args)
        assert out.returncode == 0 and "R-1" in out.stdout, args
        assert out.stderr.splitlines() == [
            "warning: left out 1 damaged task(s) (Z-9); see: git hydrate doctor"
        ], args
    mine = hydrate(repo, "ready", "--mine")
    assert "left out 1 damaged task(s) (Z-9)" in mine.stderr
    git(repo, "update-ref", "-d", "refs/hydrate/tasks/Z-9")
    assert hydrate(repo, "search", "retry").stderr == ""


def test_words_are_found_without_their_accents(repo: Path, ledger: Ledger) -> None:
    """cafe, naive and resume found nothing where CAFÉ and résumé did (explorer11):
    an accented word is also indexed without its accents; an index an earlier version
    kept is made again (its entries lack them)."""
    ledger.add_task("A-1", objective="Fix the Café menu and the résumé upload", acceptance="a")
    ledger.add_task("A-2", objective="A naïve retry loop", acceptance="a")
    assert [h["task_id"] for h in ledger.search("cafe")] == ["A-1"]
    assert [h["task_id"] for h in ledger.search("resume")] == ["A-1"]
    assert [h["task_id"] for h in ledger.search("naive")] == ["A-2"]
    assert [h["task_id"] for h in ledger.search("CAFÉ")] == ["A-1"]
    ledger.add_context("A-2", "the Zürich office\n", "notes")
    hits = ledger.search("zurich", attachments=True)
    assert [(h["task_id"], h["field"]) for h in hits] == [("A-2", "attachment notes")]


def test_a_plural_or_an_ing_form_meets_its_word(repo: Path, ledger: Ledger) -> None:
    """``search timestamp`` found nothing for "signer timestamps" (explorer13),
    though ranking folds plurals: a plural, ``-ies``, ``-ing`` or ``-ed`` form is
    also indexed as its word, in a whole word and in a camelCase word's last part,
    and the snippet is the line that holds it."""
    ledger.add_task("S-1", objective="Make signer timestamps timezone aware", acceptance="a")
    ledger.add_task("S-2", objective="Cache the retryHeaders of failed calls", acceptance="a")
    ledger.add_task("S-3", objective="Drop stale entries", acceptance="a")
    assert [h["task_id"] for h in ledger.search("timestamp")] == ["S-1"]
    assert [h["task_id"] for h in ledger.search("retry header")] == ["S-2"]
    assert [h["task_id"] for h in ledger.search("fail")] == ["S-2"]
    (entry,) = ledger.search("entry")
    assert (entry["task_id"], entry["field"]) == ("S-3", "title")
    assert entry["snippet"] == "Drop stale entries"
    ledger.add_context("S-3", "the slow lookups\n", "notes")
    hits = ledger.search("lookup", attachments=True)
    assert [(h["task_id"], h["field"]) for h in hits] == [("S-3", "attachment notes")]


def test_an_attachment_too_large_to_search_is_named_not_passed_over_unsaid(repo: Path) -> None:
    """review13: search --attachments left bodies over 1 MiB out of the search and
    answered "no task matches" about a word only such a body holds."""
    hydrate(repo, "task-add", "B-1", "--objective", "o", "--acceptance", "a")
    (repo / "big.log").write_text("giraffe " * 140_000)  # (1.1 MB)
    assert hydrate(repo, "context-add", "B-1", "--file", "big.log").returncode == 0
    result = hydrate(repo, "search", "--attachments", "giraffe")
    assert result.returncode == 0 and result.stdout == ""
    assert "no task matches giraffe" in result.stderr
    assert "1 attachment over 1 MiB not searched: B-1 big.log" in result.stderr
    # without --attachments no body is searched, and none is named
    assert "not searched" not in hydrate(repo, "search", "giraffe").stderr
