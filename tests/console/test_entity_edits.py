"""Correcting an entity from its page: each form posts to the audited operation of the core, the
page it lands on shows the change and says what was done with an Undo, and a refusal shows on
the page with nothing changed."""

from __future__ import annotations

import httpx
from markupsafe import escape

from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.storage.protocols import EntityRow, FactRow, Mention, Provenance, fact_id
from tests.console.conftest import Seeded
from tests.console.test_auth import csrf, signed_in

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'


def places(gm: GraphMemory) -> list[str]:
    """Manhattan named by three memories (the first also says it is in the USA), Gotham City
    and Metropolis by one each: the ids of the memories naming Manhattan."""
    memories = [gm.remember(text) for text in (  # no name the extractor finds in them
        "the island is in the country", "the town by the river has a university",
        "the town sits on a river", "a city with a bat problem", "a city with a reporter",
    )]  # fmt: skip
    gm.wait_for_extraction()
    rows = {"manhattan": EntityRow("manhattan", "Manhattan", "manhattan", "manhattan", "place"),
            "gotham": EntityRow("gotham", "Gotham City", "gotham", "gotham", "place"),
            "metropolis": EntityRow("metropolis", "Metropolis", "metropolis", "metropolis",
                                    "place"),
            "usa": EntityRow("usa", "USA", "usa", "usa", "place")}  # fmt: skip
    named = ["manhattan", "manhattan", "manhattan", "gotham", "metropolis"]
    fact = FactRow(fact_id("manhattan", "part_of", "usa"), "manhattan", "part_of", "usa",
                   "Manhattan", "USA", "Manhattan is in the USA", 0.9)  # fmt: skip
    gm.store.entities.write_extraction(
        [m.id for m in memories], extractor="test", entities=list(rows.values()), aliases={},
        mentions=[Mention(m.id, e, rows[e].name) for m, e in zip(memories, named, strict=True)]
        + [Mention(memories[0].id, "usa", "USA")],
        facts=[fact], provenance=[Provenance(fact.id, memories[0].id, 0.9)], at=utcnow(),
    )  # fmt: skip
    return [m.id for m in memories[:3]]


def post(
    client: httpx.Client, entity_id: str, action: str, data: dict[str, object] | None = None
) -> httpx.Response:
    return client.post(f"/entity/{entity_id}/{action}", data={"csrf": csrf(client), **(data or {})})


def landing(client: httpx.Client, response: httpx.Response, entity_id: str) -> str:
    assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/console/entity/{entity_id}"
    return client.get(response.headers["location"].removeprefix("/console")).text


def undo_action(page: str) -> str:
    """The action of the Undo form the page offers after a correction."""
    outcome = page.split('class="outcome"', 1)[1].split("</div>", 1)[0]
    return outcome.split('action="', 1)[1].split('"', 1)[0]


def test_an_alias_is_added_and_removed_and_the_page_shows_it(console: str, seeded: Seeded) -> None:
    places(seeded.gm)
    client = signed_in(console)
    page = landing(client, post(client, "manhattan", "alias", {"alias": "Big  Apple"}),
                   "manhattan")  # fmt: skip
    assert "Added alias &#39;big apple&#39;." in page
    assert '<span class="alias">big apple</span>' in page
    added = seeded.gm.audit_log(limit=1).entries[0]
    assert (added.action, added.target) == ("curate:add-entity-alias", "manhattan")
    assert undo_action(page) == f"/console/audit/{added.id}/undo"
    assert f'href="/console/audit#audit-{added.id}"' in page
    assert "Added alias" not in client.get("/entity/manhattan").text  # said once
    assert seeded.gm.entity_page("manhattan").aliases == ["big apple"]

    page = landing(client, post(client, "manhattan", "unalias", {"alias": "big apple"}),
                   "manhattan")  # fmt: skip
    assert "Removed alias &#39;big apple&#39;." in page
    assert '<span class="alias">big apple</span>' not in page
    assert seeded.gm.entity_page("manhattan").aliases == []

    again = landing(client, post(client, "manhattan", "alias", {"alias": "manhattan"}),
                    "manhattan")  # fmt: skip
    assert "already names this entity: no change." in again
    assert 'class="undo"' not in again.split("<h1>", 1)[0]  # nothing to undo


def test_a_rename_shows_the_new_name_and_its_undo_brings_the_old_one_back(
    console: str, seeded: Seeded
) -> None:
    places(seeded.gm)
    client = signed_in(console)
    page = landing(client, post(client, "manhattan", "rename", {"name": "Manhattan Island"}),
                   "manhattan")  # fmt: skip
    assert "<h1>Manhattan Island " in page
    assert "Renamed &#39;Manhattan&#39; to &#39;Manhattan Island&#39;" in page
    assert seeded.gm.entity_page("manhattan").name == "Manhattan Island"
    # the old name is the id: it stays, without a button that could only be refused
    assert 'aria-label="Remove alias manhattan"' not in page and "its id: always names it" in page

    undone = client.post(undo_action(page).removeprefix("/console"), data={"csrf": csrf(client)})
    assert undone.status_code == 303 and undone.headers["location"].startswith("/console/audit")
    assert "<h1>Manhattan " in client.get("/entity/manhattan").text
    assert seeded.gm.entity_page("manhattan").name == "Manhattan"


def test_another_entity_is_merged_in_by_its_name_or_its_id(console: str, seeded: Seeded) -> None:
    places(seeded.gm)
    client = signed_in(console)
    page = landing(client, post(client, "manhattan", "merge", {"other": " gotham CITY "}),
                   "manhattan")  # fmt: skip
    assert "Merged &#39;Gotham City&#39; (gotham) into this entity" in page
    assert "named by</th><td>4 memories" in page and "a city with a bat problem" in page
    assert client.get("/entity/gotham").status_code == 404
    assert "gotham" in seeded.gm.entity_page("manhattan").aliases

    page = landing(client, post(client, "manhattan", "merge", {"other": "metropolis"}),
                   "manhattan")  # fmt: skip
    assert "Merged &#39;Metropolis&#39; (metropolis)" in page
    assert seeded.gm.entity_page("manhattan").mentions == 5

    undone = client.post(undo_action(page).removeprefix("/console"), data={"csrf": csrf(client)})
    assert undone.status_code == 303
    assert seeded.gm.entity_page("metropolis").mentions == 1


def test_ticked_memories_are_split_off_into_a_new_entity(console: str, seeded: Seeded) -> None:
    first, *kansas = places(seeded.gm)
    client = signed_in(console)
    page = client.get("/entity/manhattan").text
    for memory in (first, *kansas):  # a box beside each memory naming it
        assert f'name="memory" value="{memory}" form="split"' in page
    response = post(client, "manhattan", "split", {"memory": kansas, "name": "Manhattan, Kansas"})
    page = landing(client, response, "manhattan%2C%20kansas")  # the new entity's page
    assert "<h1>Manhattan, Kansas " in page
    assert "Split &#39;Manhattan, Kansas&#39; off &#39;manhattan&#39;" in page
    assert "the mentions of 2 memories and 0 facts" in page
    assert '<a href="/console/entity/manhattan">back to manhattan</a>' in page
    assert all(f'href="/console/memory/{m}"' in page for m in kansas)
    original = client.get("/entity/manhattan").text
    assert "named by</th><td>1 memory" in original
    assert all(f'href="/console/memory/{m}"' not in original for m in kansas)
    assert "split" not in undo_action(page)  # the undo of the split itself
    assert seeded.gm.entity_page("manhattan, kansas").mentions == 2


def test_a_correction_without_the_csrf_token_is_refused(console: str, seeded: Seeded) -> None:
    _, *kansas = places(seeded.gm)
    client = signed_in(console)
    before = seeded.gm.audit_log(limit=1).entries
    for action, form in [("alias", {"alias": "big apple"}), ("unalias", {"alias": "manhattan"}),
                         ("rename", {"name": "Gotham"}), ("merge", {"other": "gotham"}),
                         ("split", {"memory": kansas})]:  # fmt: skip
        for token in ({}, {"csrf": "forged"}):
            response = client.post(f"/entity/manhattan/{action}", data={**form, **token})
            assert response.status_code == 403, (action, token)
    assert seeded.gm.audit_log(limit=1).entries == before
    page = seeded.gm.entity_page("manhattan")
    assert (page.name, page.aliases, page.mentions) == ("Manhattan", [], 3)
    with httpx.Client(base_url=console, follow_redirects=False, timeout=30) as stranger:
        response = stranger.post("/entity/manhattan/alias", data={"alias": "x", "csrf": "x"})
        assert response.status_code == 401
    cross = client.post("/entity/manhattan/alias", data={"alias": "x", "csrf": csrf(client)},
                        headers={"sec-fetch-site": "cross-site"})  # fmt: skip
    assert cross.status_code == 403 and seeded.gm.entity_page("manhattan").aliases == []


def test_hostile_names_are_shown_as_text(console: str, seeded: Seeded) -> None:
    places(seeded.gm)
    client = signed_in(console)
    page = landing(client, post(client, "manhattan", "alias", {"alias": SCRIPT}), "manhattan")
    alias = seeded.gm.entity_page("manhattan").aliases[0]
    assert "script>alert(1)</script" in alias  # as names resolve: brackets kept
    assert "<script" not in page and f'<span class="alias">{escape(alias)}</span>' in page
    page = landing(client, post(client, "manhattan", "rename", {"name": IMG}), "manhattan")
    assert seeded.gm.entity_page("manhattan").name == IMG
    assert "<img" not in page and f"<h1>{escape(IMG)} " in page
    assert f'value="{escape(IMG)}"' in page  # the rename field holds it as text
    page = landing(client, post(client, "manhattan", "unalias", {"alias": alias}), "manhattan")
    assert "Removed alias" in page and "<script" not in page


def test_a_refused_correction_says_why_on_the_page_and_changes_nothing(
    console: str, seeded: Seeded
) -> None:
    first, *_ = places(seeded.gm)
    client = signed_in(console)
    before = seeded.gm.audit_log(limit=1).entries
    cases = [
        ("alias", {"alias": "gotham"}, 409, "already names entity &#39;gotham&#39;"),
        ("alias", {"alias": " "}, 400, "give the alias to add"),
        ("alias", {"alias": "!!!"}, 400, "must have letters or digits"),
        ("rename", {"name": "gotham"}, 409, "already names entity &#39;gotham&#39;"),
        ("unalias", {"alias": "big apple"}, 404, "has no alias"),
        ("merge", {"other": "Smallville"}, 404, "give the other entity&#39;s id"),
        ("merge", {"other": "manhattan"}, 400, "not the primary"),
        ("split", {}, 400, "tick the memories"),
        ("split", {"memory": "01NOSUCH"}, 400, "do not mention entity"),
    ]
    for action, form, status, says in cases:
        response = post(client, "manhattan", action, form)
        assert response.status_code == status, (action, form, response.text)
        assert "Not done: " in response.text and says in response.text, (action, response.text)
        assert "<h1>Manhattan " in response.text  # the entity's page, with its forms
        assert f'<details id="correct-{action}" open>' in response.text or action in (
            "unalias", "split")  # fmt: skip
    assert seeded.gm.audit_log(limit=1).entries == before
    page = seeded.gm.entity_page("manhattan")
    assert (page.name, page.mentions) == ("Manhattan", 3)
    assert seeded.gm.entity_page("gotham").mentions == 1

    typed = post(client, "manhattan", "alias", {"alias": "gotham"}).text
    assert 'name="alias" required value="gotham"' in typed  # what was typed is kept
    split = post(client, "manhattan", "split", {"memory": [first, "01NOSUCH"]}).text
    assert f'value="{first}" form="split" aria-label="move the mention of {first}" checked' in split
    assert post(client, "manhattan", "explode").status_code == 404
    assert post(client, "nosuch", "alias", {"alias": "x"}).status_code == 404


def test_the_outcome_is_shown_to_its_own_session_only(console: str, seeded: Seeded) -> None:
    places(seeded.gm)
    mine, other = signed_in(console), signed_in(console)
    response = post(mine, "manhattan", "alias", {"alias": "big apple"})
    assert "Added alias" not in other.get("/entity/manhattan").text
    assert "Added alias" not in mine.get("/entity/gotham").text  # not another entity's page
    assert "Added alias" in landing(mine, response, "manhattan")


def test_the_entity_page_says_when_it_was_first_and_last_seen_and_when_a_fact_held(
    console: str, seeded: Seeded
) -> None:
    ids = places(seeded.gm)
    client = signed_in(console)
    page = client.get("/entity/manhattan").text
    assert "<th>first seen</th>" in page and "<th>last seen</th>" in page
    facts = page.split("<h2>Facts</h2>", 1)[1]
    assert "part of" in facts and "held on" in facts
    entity = seeded.gm.entity_page("manhattan")
    assert entity.first_seen == seeded.gm.get(ids[0]).created_at
    assert entity.last_seen == seeded.gm.get(ids[2]).created_at
