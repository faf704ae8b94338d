"""git hydrate web in a real browser: headless Chromium driven by Playwright.

Skipped, with the reason, where Playwright or Debian's ``chromium`` is missing
(``.ci/run`` installs both). One browser for the file's tests; each test opens
a page. ``WEB_SCREENSHOTS=DIR`` saves the pages' screenshots there (the ones in
docs/images/ were taken so).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import git, hydrate, web_serving
from .test_web import _environment
from .xss_corpus import PAYLOADS

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

if importlib.util.find_spec("playwright") is None:
    pytest.skip("Playwright is not installed (pip install playwright)", allow_module_level=True)
if shutil.which(CHROMIUM) is None:
    pytest.skip(
        f"no browser: {CHROMIUM} is missing (apt-get install chromium)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium, for this file's tests. Not for the session: while Playwright's sync
    API is open, asyncio counts a loop as running in this thread between its calls,
    and a later test of another file on the same worker could not run one."""
    # imported here, not when the file is collected (~0.15 s in each xdist worker)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A repository whose titles, tags, sources, bodies and checkpoints carry the
    XSS corpus, served on a free port."""
    from git_hydrate import Ledger

    base = tmp_path_factory.mktemp("browser")
    with pytest.MonkeyPatch.context() as mp:
        _environment(mp, base)
        repo = base / "repo"
        git(base, "init", "-q", "-b", "main", str(repo))
        git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
        with Ledger(repo) as ledger:
            for index, payload in enumerate(PAYLOADS):
                ledger.add_task(
                    f"P-{index:02d}",
                    objective=payload + "\u2028" + payload,
                    acceptance=payload,
                    title=payload,
                    tags=[payload],
                    acceptance_criteria=[payload],
                    depends_on=[f"P-{index - 1:02d}"] if index % 3 else [],
                )
            ledger.add_task(
                "H-1",
                objective="Show hostile bodies as text",
                acceptance="no script",
                title="Hostile bodies",
                priority=1,
                tags=["web"],
            )
            ledger.add_context("H-1", "\n".join(PAYLOADS) + "\n", PAYLOADS[1], priority=50)
            for i in range(40):
                text = f"{PAYLOADS[i % len(PAYLOADS)]}\nbody {i}\n" + "y" * (150 * i)
                ledger.add_context("H-1", text, f"notes/{i}.html", priority=i % 9)
            ledger.add_checkpoint("H-1", PAYLOADS[0], PAYLOADS[2], PAYLOADS[3], 10)
            ledger.claim("H-1")
        with web_serving(repo) as server:
            yield repo, f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(60_000)
    events: list[str] = []
    opened.on("dialog", lambda d: (events.append(f"dialog: {d.message}"), d.dismiss()))
    opened.on("pageerror", lambda e: events.append(f"error: {e}"))
    opened.on(
        "request",
        lambda r: (
            None if r.url.startswith("http://127.0.0.1") else events.append(f"request: {r.url}")
        ),
    )
    opened.events = events
    yield opened
    context.close()


def _shot(page: Any, name: str) -> None:
    where = os.environ.get("WEB_SCREENSHOTS")
    if where:
        page.screenshot(path=str(Path(where) / f"web-{name}.png"))


#: The parts of the pages that hold task text.
_DATA = (
    "#board",
    "#fields",
    "#attachments",
    "#prompt-panel",
    "#timeline",
    "#history",
    "#commits",
    "#graph",
)


def _no_script_ran(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.events == []
    # only the page's own scripts; no element made from task text
    sources = page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))")
    assert len(sources) == 2 and all(re.fullmatch(r"/static/[a-z]+\.js", s) for s in sources)
    for tag in (
        "img",
        "iframe",
        "object",
        "embed",
        "video",
        "audio",
        "form",
        "input[autofocus]",
        "details",
        "marquee",
        "base",
        "meta[http-equiv]",
        "template",
        "math",
        "textarea",
    ):
        assert page.locator(", ".join(f"{where} {tag}" for where in _DATA)).count() == 0, tag
    handlers = page.evaluate(
        "[...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))"
        ".filter(n => n.startsWith('on'))"
    )
    assert handlers == []


def test_the_board_shows_every_payload_as_text(site: tuple[Path, str], page: Any) -> None:
    _repo, url = site
    page.goto(url + "/?limit=50")
    page.wait_for_selector("body[data-loaded] .card")
    titles = page.locator(".card .title").all_text_contents()
    assert sorted(titles) == sorted([*PAYLOADS, "Hostile bodies"])
    tags = set(page.locator(".card .tag").all_text_contents())
    assert set(PAYLOADS) <= tags
    held = page.locator(".card[data-task='H-1'] .holder").text_content()
    assert held is not None and held.startswith("held by Hydrate Tester") and "claimed" in held
    assert page.locator(".card[data-task='P-01'] .dep.waiting").count() == 1
    _shot(page, "board")
    page.hover(".card[data-task='P-35']")
    _no_script_ran(page)
    page.select_option("#f-tag", "web")
    from playwright.sync_api import expect

    expect(page.locator(".card")).to_have_count(1)
    assert "tag=web" in page.url


def test_the_budget_control_matches_prompt(site: tuple[Path, str], page: Any) -> None:
    repo, url = site
    page.goto(url + "/")
    page.wait_for_selector("body[data-loaded] .card")
    page.click(".card[data-task='H-1'] a.task-link")
    page.wait_for_url(re.compile(r"/task/H-1$"))
    page.wait_for_selector("#attachment-table tr[data-hash]")
    for budget in (3000, 12000, 60000):
        page.fill("#amount", str(budget))
        page.dispatch_event("#amount", "change")
        page.wait_for_selector(f"body[data-packed*='max_bytes={budget}&']")
        cli = hydrate(repo, "prompt", "H-1", "--max-bytes", str(budget), "-vv", "--no-cache")
        assert cli.returncode == 0, cli.stderr
        size = len(cli.stdout.encode())
        assert page.text_content("#n-prompt-bytes") == f"{size:,} bytes"
        omitted = sorted(re.findall(r"^  omitted ([0-9a-f]+) ", cli.stderr, re.M))
        shown = sorted(
            h[:12]
            for h in page.eval_on_selector_all(
                "#attachment-table tr.dropped", "rows => rows.map(r => r.dataset.hash)"
            )
        )
        assert shown == sorted(o[:12] for o in omitted)
        kept = page.locator("#attachment-table tr.kept").count()
        assert kept == 41 - len(omitted)
        assert page.text_content("#n-kept") == str(kept)
        raw = page.text_content("#prompt-raw")
        assert raw is not None and len(raw.encode()) == size
    assert PAYLOADS[0] in (page.text_content("#prompt-rendered") or "")
    _no_script_ran(page)
    _shot(page, "task")


def test_the_graph_draws_the_open_tasks(site: tuple[Path, str], page: Any) -> None:
    _repo, url = site
    page.goto(url + "/graph")
    page.wait_for_selector("#graph-svg .node")
    drawn = page.eval_on_selector_all("#graph-svg a.node", "ns => ns.map(n => n.dataset.task)")
    waiting = [i for i in range(len(PAYLOADS)) if i % 3]
    assert sorted(drawn) == sorted({f"P-{n:02d}" for i in waiting for n in (i, i - 1)})
    assert page.locator("#graph-svg path.edge").count() == len(waiting)
    titles = page.locator("#graph-svg a.node title").all_text_contents()
    assert any(PAYLOADS[0] in t for t in titles)
    _no_script_ran(page)
    _shot(page, "graph")
    page.click("#graph-svg a.node[data-task='P-01']")
    page.wait_for_url(re.compile(r"/task/P-01$"))
    page.wait_for_selector("#fields h1")
    assert page.text_content("#fields .task-title") == PAYLOADS[1]


def test_the_holder_filter_tells_nobody_from_a_holder_named_dash(repo: Path, page: Any) -> None:
    """``(nobody)`` lists the unclaimed tasks, not those of a worker called ``-``,
    and survives the address and the next read of the board."""
    from playwright.sync_api import expect

    for task in ("DASH-1", "FREE-1"):
        hydrate(repo, "task-add", task, "--objective", "o", "--acceptance", "a")
    assert hydrate(repo, "claim", "DASH-1", "--as", "-").returncode == 0
    with web_serving(repo) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        page.goto(url + "/")
        page.wait_for_selector("body[data-loaded] .card")
        labels = page.locator("#f-holder option").all_text_contents()
        assert labels == ["any", "(nobody) (1)", "- (1)"]
        page.select_option("#f-holder", label="(nobody) (1)")
        expect(page.locator(".card")).to_have_count(1)
        assert page.locator(".card").get_attribute("data-task") == "FREE-1"
        assert page.url.endswith("/?holder=")
        checked = page.eval_on_selector("#f-holder", "s => s.selectedOptions[0].textContent")
        assert checked == "(nobody) (1)"  # (the board read again keeps the choice)
        page.select_option("#f-holder", label="- (1)")
        expect(page.locator(".card[data-task='DASH-1']")).to_have_count(1)
        expect(page.locator(".card")).to_have_count(1)
        page.goto(url + "/?holder=")
        page.wait_for_selector("body[data-loaded] .card")
        expect(page.locator(".card")).to_have_count(1)
        assert page.locator(".card").get_attribute("data-task") == "FREE-1"
        selected = page.eval_on_selector("#f-holder", "s => s.selectedOptions[0].textContent")
        assert selected == "(nobody) (1)"
        _no_script_ran(page)


@pytest.mark.parametrize(
    ("address", "error"),
    [
        ("/?kind=nope", "unknown kind 'nope'"),
        ("/?archived=yes", "archived must be 1 or 0 (or left out), not 'yes'"),
    ],
)
def test_a_filter_the_server_refuses_is_said_on_the_page(
    site: tuple[Path, str], page: Any, address: str, error: str
) -> None:
    from playwright.sync_api import expect

    _repo, url = site
    page.goto(url + address)
    expect(page.locator("#board .error")).to_contain_text(error)
    assert page.locator(".card").count() == 0
    page.select_option("#f-kind", "")  # (a control chosen: its filters, the board back)
    page.check("#f-archived")
    expect(page.locator(".card[data-task='H-1']")).to_have_count(1)
    assert page.locator("#board .error").count() == 0 and "archived=1" in page.url
