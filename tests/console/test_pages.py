"""What each console page shows, read from the HTML a browser gets."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.testclient import TestClient

from graphmem.console.app import console_mount
from graphmem.models import Hit, Memory, RecallResult, utcnow
from graphmem.storage.protocols.entities import EntityRow, Mention
from tests.console.conftest import TOKEN, Seeded
from tests.console.test_auth import csrf, signed_in


def hits(page: str) -> list[str]:
    """The memory ids of a results column, in rank order."""
    return re.findall(r'<li class="hit">\s*<div><a href="/console/memory/([^"]+)"', page)


def test_search_ranks_explains_and_filters(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    page = client.get("/search", params={"q": "deploys ArgoCD syncs on its own"}).text
    assert hits(page)[0] == seeded.new
    assert page.count('<svg class="bars"') == len(hits(page))  # every hit says why
    assert "superseded by" in page  # the old version points at the new one

    runbooks = client.get("/search", params={"q": "ArgoCD", "kind": "runbook"}).text
    assert seeded.new in hits(runbooks)
    assert not set(hits(runbooks)) & set(seeded.hostile)  # notes filtered out
    nothing = client.get("/search", params={"q": "ArgoCD", "layer": "character"}).text
    assert hits(nothing) == [] and "Nothing found" in nothing

    both = client.get("/search", params={"q": "ArgoCD", "recipe": "hybrid", "compare": "bm25"})
    assert "recipe hybrid" in both.text and "recipe bm25" in both.text
    docs = client.get("/search", params={"q": "rollback revert the commit", "scope": "docs"})
    assert "Rollback" in docs.text and "docs/deploy.md" in docs.text


def test_a_memory_shows_its_versions_citation_state_and_neighbourhood(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    page = client.get(f"/memory/{seeded.new}").text
    assert f'href="/console/memory/{seeded.old}"' in page  # its earlier version
    assert '<svg class="timeline"' in page and '<svg class="graph"' in page
    assert "docs/deploy.md" in page and 'class="drift current"' in page
    assert "ArgoCD" in page  # an entity it names

    deploy = Path(seeded.gm.settings.home.parent, "docs", "deploy.md")
    deploy.write_text(deploy.read_text(encoding="utf-8") + "\nNew step.\n", encoding="utf-8")
    assert 'class="drift source_changed"' in client.get(f"/memory/{seeded.new}").text

    missing = client.get("/memory/01NOSUCHMEMORY")
    assert missing.status_code == 404 and "no memory" in missing.text


def test_documents_list_their_sections_and_who_cites_them(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    assert "docs/deploy.md" in client.get("/documents").text
    page = client.get("/document", params={"path": "docs/deploy.md"}).text
    assert "Rollback" in page and f"/console/memory/{seeded.new}" in page
    assert re.search(r"indexed \d{4}-\d\d-\d\d \d\d:\d\d</p>", page)
    assert client.get("/document", params={"path": "nope.md"}).status_code == 404


def test_stats_show_the_counts_and_the_backlog(console: str, seeded: Seeded) -> None:
    seeded.gm.wait_for_extraction()
    page = signed_in(console).get("/stats").text
    total = seeded.gm.stats().total
    assert f"{total} memories" in page
    assert re.search(r"memories to extract</th>\s*<td>0</td>", page)
    assert "superseded" in page  # by lifecycle


def test_deferring_a_review_item_keeps_it_out_of_the_pending_list(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    item = seeded.review_items[1]
    done = client.post(f"/inbox/review/{item}", data={"csrf": csrf(client), "decision": "defer",
                                                      "note": "after the release"})  # fmt: skip
    assert done.status_code == 303
    queue = seeded.gm.review_session_changes(status=None)
    deferred = next(i for i in queue.items if i.id == item)
    assert (deferred.status, deferred.note) == ("deferred", "after the release")
    assert f"review-{item}" not in client.get("/inbox").text


def test_a_multihop_question_shows_each_path(console: str, seeded: Seeded) -> None:
    seeded.gm.wait_for_extraction()
    page = signed_in(console).get("/multihop", params={"q": "how do deploys sync"}).text
    walked = page.count("from a recall hit")
    assert hits(page) and walked
    assert page.count('<svg class="path"') == walked  # every hit the walk reached shows how


def test_bad_input_is_shown_as_an_error_page(console: str) -> None:
    client = signed_in(console)
    response = client.get("/search", params={"q": "deploy", "as_of": "not a date"})
    assert response.status_code == 400 and "as_of" in response.text.lower()


def links(page: str) -> list[str]:
    """Every console link of a page, fragments left off."""
    return sorted({h.split("#")[0] for h in re.findall(r'href="(/console/[^"]*)"', page)} - {""})


def orphan_entity(gm: Any, entity_id: str, name: str) -> str:
    """An entity nothing names, and the steward's finding about it (id)."""
    gm.store.entities.write_extraction(
        [], extractor="test", entities=[EntityRow(entity_id, name, entity_id, entity_id, "concept")],
        aliases={}, mentions=[], facts=[], provenance=[], at=utcnow(),
    )  # fmt: skip
    run = gm.steward_run("orphans", dry_run=False)
    return next(f.id for f in run.findings if f.kind == "orphan_entity" and entity_id in f.targets)


def test_every_link_of_the_inbox_leads_to_a_page(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    finding = orphan_entity(seeded.gm, "policy", "policy")
    page = client.get("/inbox").text
    assert f"finding-{finding}" in page
    found = links(page)
    assert "/console/entity/policy" in found  # the orphan's target is an entity, not a memory
    assert "/console/memory/policy" not in found
    for link in found:
        assert client.get(link.removeprefix("/console")).status_code == 200, link
    entity = client.get("/entity/policy").text
    assert "No memory names it any more" in entity


def test_an_entity_suggestion_links_its_entities_and_applying_it_merges_them(
    console: str, seeded: Seeded
) -> None:
    gm = seeded.gm
    said = [gm.remember(text) for text in ("the director wrote it", "he acted in it too")]
    gm.wait_for_extraction()
    rows = [
        EntityRow("william duncan", "William Duncan", "william duncan", "williamduncan", "person"),
        EntityRow("duncan", "Duncan", "duncan", "duncan", "person"),
    ]
    gm.store.entities.write_extraction(
        [m.id for m in said], extractor="test", entities=rows, aliases={},
        mentions=[Mention(said[0].id, "william duncan", "William Duncan"),
                  Mention(said[0].id, "duncan", "Duncan"), Mention(said[1].id, "duncan", "Duncan")],
        facts=[], provenance=[], at=utcnow(),
    )  # fmt: skip
    run = gm.steward_run("entities", dry_run=False)
    (finding,) = [f for f in run.findings if set(f.targets) == {"william duncan", "duncan"}]
    client = signed_in(console)
    page = client.get("/inbox").text
    assert f"finding-{finding.id}" in page
    found = links(page)
    assert {"/console/entity/duncan", "/console/entity/william%20duncan"} <= set(found)
    assert not [link for link in found if "duncan" in link and "/memory/" in link]
    for link in found:
        assert client.get(link.removeprefix("/console")).status_code == 200, link
    client.post(f"/inbox/finding/{finding.id}", data={"csrf": csrf(client), "decision": "accept"})
    assert gm.store.steward.finding(finding.id)["status"] == "applied"
    kept, merged = finding.targets
    assert gm.entity_page(kept).mentions == 2
    assert client.get(f"/entity/{merged.replace(' ', '%20')}").status_code == 404


def test_a_deferred_review_item_waits_under_its_own_tab_and_is_decided_there(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    item = seeded.review_items[1]
    token = csrf(client)
    deferred = client.post(f"/inbox/review/{item}", data={"csrf": token, "decision": "defer"})
    assert "done=review-defer" in deferred.headers["location"]
    assert f"review-{item}" not in client.get("/inbox").text
    tab = client.get("/inbox", params={"show": "deferred"}).text
    assert f'id="review-{item}"' in tab
    assert 'value="defer"' not in tab  # deferred already: accept or reject
    assert re.search(r"Deferred <span class=\"count\">1</span>", client.get("/inbox").text)

    done = client.post(f"/inbox/review/{item}", data={"csrf": token, "decision": "reject",
                                                      "show": "deferred"})  # fmt: skip
    assert done.headers["location"].startswith("/console/inbox?show=deferred")
    page = client.get(done.headers["location"].removeprefix("/console")).text
    assert f"Rejected review item {item}" in page and f'id="review-{item}"' not in page
    assert client.get("/inbox", params={"show": "nothing"}).status_code == 400


def test_each_decision_says_what_it_did(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    dismissed = client.post(
        f"/inbox/finding/{seeded.finding}", data={"csrf": csrf(client), "decision": "reject"}
    )
    page = client.get(dismissed.headers["location"].removeprefix("/console")).text
    assert f"Dismissed finding {seeded.finding}" in page
    assert "reject" not in page.split('<p class="done">')[1].split("</p>")[0]
    unknown = client.get("/inbox", params={"done": "<b>pwned</b>", "item": "x"}).text
    assert 'class="done"' not in unknown


def test_metadata_is_shown_as_keys_and_values(console: str, seeded: Seeded) -> None:
    memory = seeded.gm.remember(
        "Retention is seven years", metadata={
            "record": {"decision": "keep 7 years", "alternatives": ["5 years", "forever"]},
            "reviewed": True, "score": None, "steps": [{"at": 1}, {"at": 2}],
        },
    )  # fmt: skip
    page = signed_in(console).get(f"/memory/{memory.id}").text
    assert re.search(r"<th>metadata\.record\.decision</th><td>keep 7 years</td>", page)
    assert re.search(r"<th>metadata\.record\.alternatives</th><td>5 years, forever</td>", page)
    assert re.search(r"<th>metadata\.reviewed</th><td>true</td>", page)
    assert re.search(r"<th>metadata\.score</th><td>null</td>", page)
    assert '<pre class="json">[\n  {\n    &#34;at&#34;: 1' in page  # a list of objects: JSON
    assert "{&#39;" not in page and "[{" not in page  # no Python dict or list spelt out


def test_the_search_page_before_a_query_shows_recent_memories_and_what_waits(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    page = client.get("/search").text
    newest = seeded.gm.list(limit=1).memories[0]
    assert "Recent memories" in page and f"/console/memory/{newest.id}" in page
    waiting = seeded.gm.review_session_changes().pending + seeded.gm.steward_inbox().pending
    assert f"{waiting} waiting in the inbox" in page


def test_a_dead_end_warning_links_its_ids_and_says_why(console: str, seeded: Seeded) -> None:
    gm = seeded.gm
    dead_end = gm.store_dead_end(
        attempted_approach="Sync ArgoCD by hand from the UI on every deploy",
        why_failed="people forgot and staging drifted", alternative="auto-sync",
    )  # fmt: skip
    gm.store_dead_end(attempted_approach="Compress logs with xz", why_failed="CPU spikes")
    client = signed_in(console)
    page = client.get("/search", params={"q": "sync ArgoCD by hand from the UI"}).text
    warnings = re.findall(r'<p class="warning">(.*?)</p>', page, re.S)
    assert len(warnings) == 1
    assert f'<a href="/console/memory/{dead_end.id}">{dead_end.id}</a>' in warnings[0]
    assert "shown because it is" in warnings[0] and "close to the query" in warnings[0]
    nonsense = client.get("/search", params={"q": "zzqqxx"}).text
    assert 'class="warning"' not in nonsense


class Recalls:
    """A store that answers recall with set explanations: the cosine alone counts, 1.0 for the
    `hybrid` recipe's best hit and 0.5 for the `vector` one's."""

    def recall(self, query: str, *, recipe: str | None = None, **_: Any) -> RecallResult:
        best = {"hybrid": 1.0, "vector": 0.5}[recipe or "hybrid"]
        memory = Memory(id=f"m-{recipe}", content=f"what {recipe} finds", kind="note",
                        type="episodic", created_at=utcnow(), updated_at=utcnow())  # fmt: skip
        hits = [
            Hit(
                memory=memory,
                score=value,
                explain={"features": {"cosine": value}, "weights": {"cosine": 1.0}},
            )
            for value in (best, best / 2)
        ]
        return RecallResult(query=query, hits=hits)


def test_recipes_side_by_side_draw_their_bars_to_one_scale_with_their_numbers() -> None:
    app = Starlette(routes=[console_mount(Recalls(), TOKEN)])  # type: ignore[arg-type]
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.post("/console/login", data={"token": TOKEN}, follow_redirects=False)
        page = client.get(
            "/console/search", params={"q": "x", "recipe": "hybrid", "compare": "vector"}
        )
    drawn = re.findall(
        r'<rect x="84" y="[\d.]+" width="([\d.]+)" height="10">.*?</rect>\s*'
        r'<text class="num" [^>]*>([\d.]+)</text>', page.text, re.S,
    )  # fmt: skip
    assert [number for _, number in drawn] == ["1.00", "0.50", "0.50", "0.25"]
    per_unit = {round(float(width) / float(number)) for width, number in drawn}
    assert len(per_unit) == 1  # a unit is as long in one column as in the other


def test_the_feed_lands_first_and_lists_what_arrived_filtered_and_paged(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    assert client.get("/").headers["location"] == "/console/feed"
    page = client.get("/feed").text
    newest = seeded.gm.list(limit=1).memories[0]
    assert "What arrived" in page and f"/console/memory/{newest.id}" in page
    assert "document indexed" in page and "/console/document?path=docs%2Fdeploy.md" in page
    waiting = seeded.gm.review_session_changes().pending + seeded.gm.steward_inbox().pending
    assert f"{waiting} waiting in the inbox" in page
    summary = next(i.memory for i in seeded.gm.feed(kind="summary").items if i.memory)
    assert "session summary" in page and f"session={summary.session_id}" in page

    runbooks = client.get("/feed", params={"kind": "runbook"}).text
    assert seeded.new in runbooks and seeded.hostile[0] not in runbooks
    assert "document indexed" not in runbooks
    session = client.get("/feed", params={"session": summary.session_id}).text
    assert summary.id in session and seeded.new not in session
    assert '<option value="claude-code">claude-code</option>' in page  # the agents that ran
    agent = client.get("/feed", params={"agent": "claude-code"}).text
    assert summary.id in agent and seeded.new not in agent
    infra = client.get("/feed", params={"context": "infra", "since": "2000-01-01",
                                        "until": "2999-12-31"}).text  # fmt: skip
    assert seeded.new in infra
    assert "Nothing arrived that passes" in client.get("/feed", params={"until": "2001-01-01"}).text

    seeded.gm.remember_many(
        [{"content": f"paging note {n}", "context": "paging"} for n in range(45)]
    )
    shown, pages, url = [], 0, "/feed?context=paging"
    while url:  # thirty a page, then "Older" with the filters kept (the empty ones too)
        response = client.get(url)
        assert response.status_code == 200, url
        shown += re.findall(r'<li class="(?:memory|document)">', response.text)
        older = re.search(r'<a href="/console(/feed\?[^"]+)" rel="next">', response.text)
        url = older.group(1).replace("&amp;", "&") if older else ""
        assert not older or "context=paging" in url
        pages += 1
    assert (pages, len(shown)) == (2, 45)


def test_bad_feed_filters_get_a_400(console: str) -> None:
    client = signed_in(console)
    for params in ({"since": "yesterday"}, {"kind": "<b>poem</b>"}, {"cursor": "nope!"},
                   {"since": "2026-02-02", "until": "2026-01-01"}):  # fmt: skip
        response = client.get("/feed", params=params)
        assert response.status_code == 400, params
        assert "<b>poem</b>" not in response.text
