"""The console in the distribution's Chromium, driven by Playwright: sign in, search, open a
memory, follow its versions, resolve an inbox item, and look at every page holding text that
would run script or load something if it were not shown as text.

Screenshots go to GRAPHMEM_CONSOLE_SCREENSHOTS when set (eval/results/console in the docs),
else to the test's temp folder."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphmem.models import utcnow
from graphmem.storage.protocols.entities import EntityRow, Mention
from tests.console.conftest import TOKEN, Beacon, Seeded

CHROMIUM = os.environ.get("GRAPHMEM_CHROMIUM", "/usr/bin/chromium")
FLAGS = [  # headless as root in a sandboxed machine, and no connection anywhere but loopback
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not shutil.which(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: `make browser` installs the distribution's")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    opened = context.new_page()
    opened.dialogs = []  # type: ignore[attr-defined]
    opened.on("dialog", lambda d: (opened.dialogs.append(d.message), d.dismiss()))
    yield opened
    context.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("GRAPHMEM_CONSOLE_SCREENSHOTS") or tmp_path / "console")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def sign_in(page: Any, console: str, shots: Path) -> None:
    page.goto(f"{console}/stats")
    assert page.url.startswith(f"{console}/login")
    page.fill("input[name=token]", TOKEN)
    page.screenshot(path=shots / "login.png")
    page.click("section.login button[type=submit]")
    page.wait_for_url(f"{console}/stats")


def test_a_person_searches_opens_a_memory_follows_its_versions_and_clears_the_inbox(
    page: Any, console: str, seeded: Seeded, shots: Path
) -> None:
    sign_in(page, console, shots)
    assert "memories" in page.inner_text("h1")
    page.screenshot(path=shots / "stats.png", full_page=True)

    page.click("nav >> text=Search")
    page.fill("input[name=q]", "how do deploys sync with ArgoCD")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("li.hit")
    assert page.locator("svg.bars rect").count() > 0  # why each hit ranks where it does
    assert page.locator("svg.bars text.num").count() == page.locator("svg.bars rect").count()
    page.screenshot(path=shots / "search.png", full_page=True)

    page.goto(f"{console}/search?q=deploys+ArgoCD&recipe=hybrid&compare=bm25")
    assert page.locator("section.results").count() == 2
    page.screenshot(path=shots / "compare.png", full_page=True)

    page.goto(f"{console}/search?q=deploys+ArgoCD+syncs+on+its+own&kind=runbook")
    page.click(f"a[href='/console/memory/{seeded.new}']")
    page.wait_for_url(f"{console}/memory/{seeded.new}")
    assert page.locator("svg.timeline").count() == 1
    assert "current" in page.inner_text(".drift")  # the cited file has not changed
    page.screenshot(path=shots / "memory.png", full_page=True)

    page.click(f"ol.versions a[href='/console/memory/{seeded.old}']")  # back in time
    page.wait_for_url(f"{console}/memory/{seeded.old}")
    assert "superseded" in page.inner_text("table.fields")

    page.goto(f"{console}/multihop?q=how+do+deploys+roll+back")
    page.wait_for_selector("li.hit")
    page.screenshot(path=shots / "multihop.png", full_page=True)

    page.click("nav >> text=Inbox")
    page.screenshot(path=shots / "inbox.png", full_page=True)
    finding = page.locator(f"#finding-{seeded.finding}")
    finding.locator("input[name=note]").fill("same runbook twice")
    finding.locator("button[value=accept]").click()
    page.wait_for_selector("p.done")
    assert page.locator(f"#finding-{seeded.finding}").count() == 0
    assert seeded.gm.steward_inbox().pending == 0
    item = page.locator(f"#review-{seeded.review_items[0]}")
    item.locator("button[value=reject]").click()
    page.wait_for_selector("p.done")
    assert seeded.gm.review_session_changes().pending == len(seeded.review_items) - 1

    page.click("nav >> text=Documents")
    page.click("a[href='/console/document?path=docs%2Fdeploy.md']")
    assert "Rollback" in page.inner_text("ul.sections")
    assert page.locator(f"a[href='/console/memory/{seeded.new}']").count() == 1  # cited by
    page.screenshot(path=shots / "document.png", full_page=True)


def test_stored_markup_is_shown_as_text_and_never_runs_or_loads(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    note = seeded.hostile and '<img src=x onerror="window.pwned = 8">'
    seeded.gm.resolve_review_item(seeded.review_items[1], "defer", note)  # on the deferred tab
    sign_in(page, console, shots)
    urls = [
        f"{console}/feed",
        f"{console}/audit",
        f"{console}/search?q=Payload",
        f"{console}/search?q=Payload&compare=vector",
        f"{console}/inbox?done=%3Cscript%3Ewindow.pwned%3D9%3C%2Fscript%3E",
        f"{console}/inbox?show=deferred",
        f"{console}/entity/svg-entity",
        f"{console}/search",
        f"{console}/documents",
        f"{console}/document?path=docs%2Fdeploy.md",
        f"{console}/stats",
        *(f"{console}/memory/{memory_id}" for memory_id in seeded.hostile),
    ]
    for url in urls:
        page.goto(url)
        page.wait_for_load_state("load")
        assert page.evaluate("typeof window.pwned") == "undefined", url
        assert page.is_visible("main"), url  # a stored <style> did not hide the page
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []  # nothing stored made the browser fetch anything

    page.goto(f"{console}/memory/{seeded.hostile[0]}")
    assert "<script>window.pwned = 1</script>" in page.inner_text("pre.content")
    assert '<svg onload="window.pwned = 7">' in page.inner_text("main")  # an entity's name
    page.goto(f"{console}/search?q=Payload")
    page.screenshot(path=shots / "hostile.png", full_page=True)
    page.goto(f"{console}/document?path=docs%2Fdeploy.md")
    assert "<script>window.pwned = 6</script>" in page.inner_text("h1")


def crowded(gm: Any) -> str:
    """A memory naming ten entities with long and wide names, each named by other memories:
    a full neighbourhood to draw."""
    names = [f"entity {n} <b>with a long name</b> {'請求サービス' if n % 3 == 0 else ''}"
             for n in range(10)]  # fmt: skip
    centre = gm.remember("A memory that names ten things " + ", ".join(names))
    others = [gm.remember(f"Another memory naming {name}, number {n}") for n, name in
              enumerate(names[:6] * 2)]  # fmt: skip
    gm.wait_for_extraction()
    rows = [EntityRow(f"crowd-{n}", name, f"crowd-{n}", f"crowd{n}", "concept")
            for n, name in enumerate(names)]  # fmt: skip
    mentions = [Mention(centre.id, r.id, r.name) for r in rows]
    mentions += [Mention(o.id, rows[n % 6].id, rows[n % 6].name) for n, o in enumerate(others)]
    gm.store.entities.write_extraction(
        [centre.id, *(o.id for o in others)], extractor="test", entities=rows, aliases={},
        mentions=mentions, facts=[], provenance=[], at=utcnow(),
    )  # fmt: skip
    return str(centre.id)


def overlapping(a: dict[str, float], b: dict[str, float], slack: float = 0.5) -> bool:
    return (a["x"] + slack < b["x"] + b["width"] and b["x"] + slack < a["x"] + a["width"]
            and a["y"] + slack < b["y"] + b["height"] and b["y"] + slack < a["y"] + a["height"])  # fmt: skip


def test_every_node_of_a_picture_is_a_link_and_no_label_sits_on_another(
    page: Any, console: str, seeded: Seeded, shots: Path
) -> None:
    memory_id = crowded(seeded.gm)
    sign_in(page, console, shots)
    for url in (f"{console}/memory/{memory_id}", f"{console}/memory/{seeded.new}",
                f"{console}/multihop?q=how+do+deploys+roll+back"):  # fmt: skip
        page.goto(url)
        for picture in page.locator("svg.graph, svg.timeline, svg.path").all():
            nodes = picture.locator("g.node")
            assert nodes.count() and nodes.count() == picture.locator("a > g.node").count(), url
            texts = [t.bounding_box() for t in picture.locator("text").all()]
            for a, b in itertools.combinations(texts, 2):
                assert not overlapping(a, b), (url, a, b)
            for node in nodes.all():  # a label stays inside its box
                box, text = node.locator("rect").bounding_box(), node.locator("text").bounding_box()
                assert text["x"] + text["width"] <= box["x"] + box["width"] + 1, url
    page.goto(f"{console}/memory/{memory_id}")
    page.screenshot(path=shots / "neighbourhood.png", full_page=True)
    page.click("svg.graph a[href='/console/entity/crowd-0']")
    page.wait_for_url(f"{console}/entity/crowd-0")
    assert "Memories that name it" in page.inner_text("main")


def test_at_the_width_of_a_phone_no_page_scrolls_sideways(
    browser: Any, console: str, seeded: Seeded, shots: Path
) -> None:
    memory_id = crowded(seeded.gm)
    context = browser.new_context(viewport={"width": 390, "height": 844})
    phone = context.new_page()
    try:
        sign_in(phone, console, shots)
        for url in [
            f"{console}/feed", f"{console}/search", f"{console}/search?q=Payload",
            f"{console}/search?q=deploys+ArgoCD&recipe=hybrid&compare=bm25",
            f"{console}/memory/{memory_id}", f"{console}/memory/{seeded.new}",
            *(f"{console}/memory/{m}" for m in seeded.hostile), f"{console}/entity/crowd-0",
            f"{console}/multihop?q=how+do+deploys+roll+back", f"{console}/inbox",
            f"{console}/inbox?show=deferred", f"{console}/documents",
            f"{console}/document?path=docs%2Fdeploy.md", f"{console}/stats",
        ]:  # fmt: skip
            phone.goto(url)
            wide = phone.evaluate("document.documentElement.scrollWidth")
            assert wide <= 390, (url, wide)
        phone.goto(f"{console}/search?q=deploys+ArgoCD&recipe=hybrid&compare=bm25")
        phone.screenshot(path=shots / "phone.png", full_page=True)
    finally:
        context.close()


def test_a_person_curates_a_memory_holding_markup_and_no_script_runs(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    gm = seeded.gm
    hostile = gm.remember(
        "</textarea><script>window.pwned = 10</script>" + "x" * 300,
        title='"><img src=x onerror="window.pwned = 11">', tags=["</textarea><b>tag</b>"],
    )  # fmt: skip
    successor = gm.remember('<svg onload="window.pwned = 12"></svg> the newer note')
    sign_in(page, console, shots)
    page.goto(f"{console}/memory/{hostile.id}")
    page.click("#curate-edit summary")
    assert page.input_value("#curate-edit input[name=title]") == hostile.title
    assert page.input_value("#curate-edit textarea[name=content]") == hostile.content
    page.screenshot(path=shots / "curate.png", full_page=True)
    page.fill("#curate-edit input[name=title]", "<i>still text</i> " + "y" * 200)
    page.click("#curate-edit button[type=submit]")
    page.wait_for_selector("p.done")
    assert gm.get(hostile.id).title == "<i>still text</i> " + "y" * 200
    assert gm.get(hostile.id).content == hostile.content  # the text area gave it back unchanged
    assert gm.get(hostile.id).tags == hostile.tags

    page.click("#curate-verify summary")
    page.fill("#curate-verify input[name=method]", "<script>window.pwned = 13</script>")
    page.click("#curate-verify button[type=submit]")
    page.wait_for_selector("p.done")
    page.click("#curate-outdated summary")
    page.fill("#curate-outdated input[name=reason]", '<img src=x onerror="window.pwned = 14">')
    page.fill("#curate-outdated input[name=superseded_by]", successor.id)
    page.click("#curate-outdated button[type=submit]")
    page.wait_for_selector("p.done")
    assert successor.id in page.inner_text("p.done")
    assert gm.get(hostile.id).lifecycle == "superseded"

    page.goto(f"{console}/memory/{successor.id}")
    page.click("#curate-delete summary")
    page.check("#curate-delete input[name=confirm]")
    page.click("#curate-delete button[type=submit]")
    page.wait_for_url(f"{console}/search?*")
    assert f"Deleted memory {successor.id}" in page.inner_text("p.done")
    page.goto(f"{console}/memory/{hostile.id}")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 1280, wide


def test_a_person_undoes_a_change_from_the_audit_list(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    hostile = seeded.hostile[1]  # '<img src=x onerror=...>' as title, content, tag and metadata
    sign_in(page, console, shots)
    page.goto(f"{console}/memory/{hostile}")
    page.click("#curate-canonical summary")
    page.fill("#curate-canonical input[name=owner]", '<svg onload="window.pwned = 15">')
    page.click("#curate-canonical button[type=submit]")
    page.wait_for_selector("p.done")
    assert seeded.gm.get(hostile).lifecycle == "canonical"
    page.click("p.done a")
    page.wait_for_url(f"{console}/audit")
    entry = seeded.gm.audit_log(limit=1).entries[0]
    page.screenshot(path=shots / "audit.png", full_page=True)
    page.click(f"#audit-{entry.id} button[type=submit]")
    page.wait_for_selector("p.done")
    assert entry.id in page.inner_text("p.done")
    assert "undone" in page.inner_text(f"#audit-{entry.id}")
    assert seeded.gm.get(hostile).lifecycle == "active"
    page.goto(f"{console}/memory/{hostile}")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console}/audit")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_person_ticks_several_inbox_items_and_decides_them_at_once(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    gm = seeded.gm
    first, *rest = seeded.review_items
    gm.resolve_review_item(first, "defer", '<img src=x onerror="window.pwned = 16">' + "z" * 300)
    plan = gm.close_session(
        "Notes.\n- We decided <script>window.pwned = 17</script> stays as text\n"
        '- TODO: check <svg onload="window.pwned = 18"> too',
        dry_run=False,
    )
    hostile = [i.id for i in gm.review_session_changes(session=plan.session_id).items]
    sign_in(page, console, shots)
    page.goto(f"{console}/inbox")
    for item in [*rest, *hostile]:
        page.check(f"#review-{item} input[name=pick]")
    page.check(f"#finding-{seeded.finding} input[name=pick]")
    page.screenshot(path=shots / "inbox-bulk.png", full_page=True)
    page.fill("#bulk input[name=note]", "<b>bulk</b>")
    page.click("#bulk button[value=reject]")
    page.wait_for_selector("p.done")
    n = len(rest) + len(hostile) + 1
    assert f"Rejected {n} items" in page.inner_text("p.done")
    assert gm.review_session_changes().pending == 0 and gm.steward_inbox().pending == 0

    page.goto(f"{console}/inbox?show=deferred")
    page.check(f"#review-{first} input[name=pick]")
    page.click("#bulk button[value=accept]")
    page.wait_for_selector("p.done")
    assert "Accepted 1 item" in page.inner_text("p.done")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console}/inbox")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_a_person_explores_an_entity_s_neighbours_by_expanding_them(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    from tests.console.test_entity_graph import graph

    stated = graph(seeded.gm)
    sign_in(page, console, shots)
    page.goto(f"{console}/entity/checkout")
    page.click("svg.graph a[href='/console/entity/checkout?expand=payments']")
    page.wait_for_url(f"{console}/entity/checkout?expand=payments")
    picture = page.locator("svg.graph")
    assert "postgres" in picture.text_content()
    texts = [t.bounding_box() for t in picture.locator("text").all()]
    for a, b in itertools.combinations(texts, 2):
        assert not overlapping(a, b), (a, b)
    for node in picture.locator("g.node").all():  # a label stays inside its box
        box, text = node.locator("rect").bounding_box(), node.locator("text").bounding_box()
        assert text["x"] + text["width"] <= box["x"] + box["width"] + 1
    page.screenshot(path=shots / "entity.png", full_page=True)
    page.click("nav.edges >> text=uses")
    assert "depends on" not in page.locator("svg.graph").text_content()
    page.click(f"ul.facts a[href='/console/memory/{stated[0]}']")
    page.wait_for_url(f"{console}/memory/{stated[0]}")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console}/entity/checkout?expand=payments")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate("typeof window.pwned") == "undefined"


def test_the_feed_is_the_landing_page_and_its_filters_are_a_form(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    sign_in(page, console, shots)
    page.goto(f"{console}/")
    page.wait_for_url(f"{console}/feed")
    assert page.locator("ul.feed li.document").count() == 1
    assert page.locator("ul.feed li.memory").count() >= len(seeded.hostile)
    assert "<script>window.pwned = 1</script>" in page.inner_text("ul.feed")  # as text
    page.screenshot(path=shots / "feed.png", full_page=True)
    page.select_option("select[name=kind]", "runbook")
    page.click("form.feed button[type=submit]")
    page.wait_for_url(f"{console}/feed?*kind=runbook*")
    assert page.locator("ul.feed li.document").count() == 0
    page.click(f"ul.feed a[href='/console/memory/{seeded.new}']")
    page.wait_for_url(f"{console}/memory/{seeded.new}")
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []


def test_a_person_corrects_an_entity_and_undoes_the_rename(
    page: Any, console: str, seeded: Seeded, beacon: Beacon, shots: Path
) -> None:
    from tests.console.test_entity_edits import places

    _, *kansas = places(seeded.gm)
    gm = seeded.gm
    sign_in(page, console, shots)
    page.goto(f"{console}/entity/manhattan")
    page.click("#correct-alias summary")
    page.fill("#correct-alias input[name=alias]", "<script>window.pwned = 21</script>")
    with page.expect_navigation():
        page.click("#correct-alias button[type=submit]")
    assert "Added alias" in page.inner_text("p.done")
    alias = gm.entity_page("manhattan").aliases[0]
    assert alias in page.inner_text("ul.aliases")
    page.screenshot(path=shots / "entity-correct.png", full_page=True)
    with page.expect_navigation():
        page.locator("ul.aliases li", has_text=alias).get_by_role("button").click()
    assert "Removed alias" in page.inner_text("p.done")
    assert gm.entity_page("manhattan").aliases == []

    page.click("#correct-rename summary")
    page.fill("#correct-rename input[name=name]", '"><img src=x onerror="window.pwned = 22">')
    with page.expect_navigation():
        page.click("#correct-rename button[type=submit]")
    assert page.inner_text("h1").startswith('"><img src=x onerror="window.pwned = 22">')
    with page.expect_navigation():
        page.click(".outcome button[type=submit]")  # Undo
    assert page.url.startswith(f"{console}/audit")
    assert "Undid change" in page.inner_text("p.done")
    page.goto(f"{console}/entity/manhattan")
    assert page.inner_text("h1").startswith("Manhattan")

    for memory in kansas:
        page.check(f"ul.mentions input[value='{memory}']")
    page.fill("#split input[name=name]", "Manhattan, Kansas")
    with page.expect_navigation():
        page.click("#split button[type=submit]")
    assert page.url == f"{console}/entity/manhattan%2C%20kansas"
    assert "Split" in page.inner_text("p.done") and gm.entity_page("manhattan").mentions == 1
    assert page.evaluate("typeof window.pwned") == "undefined"
    assert page.dialogs == []  # type: ignore[attr-defined]
    assert beacon.hits == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{console}/entity/manhattan")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
