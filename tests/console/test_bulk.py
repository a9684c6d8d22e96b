"""Deciding several inbox items at once: tick them, one POST, and the page says how many were
done and names any that were not."""

from __future__ import annotations

import re

import httpx

from tests.console.conftest import Seeded
from tests.console.test_auth import csrf, signed_in


def bulk(client: httpx.Client, picks: list[str], decision: str, **form: str) -> httpx.Response:
    data = {"csrf": csrf(client), "decision": decision, "pick": picks, **form}
    return client.post("/inbox/bulk", data=data)


def shown(client: httpx.Client, response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    return client.get(response.headers["location"].removeprefix("/console")).text


def test_every_item_has_a_box_that_belongs_to_the_bulk_form(console: str, seeded: Seeded) -> None:
    page = signed_in(console).get("/inbox").text
    assert 'id="bulk"' in page and 'action="/console/inbox/bulk"' in page
    boxes = re.findall(r'name="pick" value="([^"]+)" form="bulk"', page)
    assert set(boxes) == {f"review:{i}" for i in seeded.review_items} | {
        f"finding:{seeded.finding}"
    }


def test_several_items_are_decided_at_once_and_the_failures_named(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    first, second = seeded.review_items[:2]
    seeded.gm.resolve_review_item(second, "accept")  # decided already: this one fails
    page = shown(client, bulk(client, [f"review:{first}", f"review:{second}",
                                       f"finding:{seeded.finding}"], "reject", note="not now"))  # fmt: skip
    assert "Rejected 2 items; 1 not done" in page and second in page
    assert seeded.gm.steward_inbox(status="dismissed").items[0].id == seeded.finding
    queue = {i.id: i for i in seeded.gm.review_session_changes(status=None).items}
    assert (queue[first].status, queue[first].note) == ("rejected", "not now")
    assert f'id="review-{first}"' not in page


def test_deferring_in_bulk_and_accepting_on_the_deferred_tab(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    picks = [f"review:{i}" for i in seeded.review_items]
    page = shown(client, bulk(client, picks, "defer"))
    n = len(picks)
    assert f"Deferred {n} item{'s' if n > 1 else ''}" in page and "not done" not in page
    tab = client.get("/inbox", params={"show": "deferred"}).text
    assert 'value="defer"' not in tab and all(p in tab for p in picks)
    accepted = bulk(client, picks, "accept", show="deferred")
    assert accepted.headers["location"].startswith("/console/inbox?show=deferred")
    assert f"Accepted {n} item" in shown(client, accepted)
    assert seeded.gm.review_session_changes(status="deferred").items == []


def test_bad_bulk_input_is_refused(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    item = f"review:{seeded.review_items[0]}"
    for picks, decision, says in [
        ([], "accept", "tick at least one"),
        ([item], "explode", "decision must be"),
        (["memory:x"], "accept", "review:ID or finding:ID"),
        (["review:<b>x</b>"], "accept", "review:ID or finding:ID"),
    ]:
        response = bulk(client, picks, decision)
        assert response.status_code == 400 and says in response.text, (picks, decision)
        assert "<b>x</b>" not in response.text
    forged = client.post("/inbox/bulk", data={"csrf": "x", "decision": "accept", "pick": [item]})
    assert forged.status_code == 403
    words = client.get("/inbox", params={"done": "bulk-accept", "n": "2",
                                         "failed": "a,<script>x</script>"}).text  # fmt: skip
    assert "Accepted 2 items; 1 not done" in words and "&lt;script" not in words
    assert seeded.gm.review_session_changes().pending == len(seeded.review_items)
