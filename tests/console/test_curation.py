"""Curating a memory from its page: each form posts to the operation the CLI and MCP call, and
the page it lands on says what was done."""

from __future__ import annotations

import httpx
from markupsafe import escape

from tests.console.conftest import Seeded
from tests.console.test_auth import csrf, signed_in


def post(client: httpx.Client, memory_id: str, action: str, **form: str) -> httpx.Response:
    return client.post(f"/memory/{memory_id}/{action}", data={"csrf": csrf(client), **form})


def landing(client: httpx.Client, response: httpx.Response) -> str:
    assert response.status_code == 303, response.text
    return client.get(response.headers["location"].removeprefix("/console")).text


def test_editing_a_memory_changes_its_content_title_and_tags(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    memory = seeded.gm.get(seeded.new)
    page = landing(client, post(
        client, memory.id, "edit", content=memory.content.replace("three", "five") + "\r\n",
        title="ArgoCD auto-sync", tags="deploy\r\nargocd\r\n",
    ))  # fmt: skip
    assert "Saved the changes" in page and "every five minutes" in page
    edited = seeded.gm.get(memory.id)
    assert (edited.title, edited.tags) == ("ArgoCD auto-sync", ["deploy", "argocd"])
    assert "five minutes" in edited.content

    same = post(client, memory.id, "edit", content=edited.content, title=edited.title or "",
                tags="deploy\nargocd")  # fmt: skip
    assert same.status_code == 400 and "nothing changed" in same.text


def test_marking_outdated_with_a_successor_links_the_two(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    old = seeded.gm.remember("Staging runs ArgoCD 2.8", context="infra")
    new = seeded.gm.remember("Staging runs ArgoCD 2.9", context="infra")
    page = landing(client, post(client, old.id, "outdated", reason="upgraded",
                                superseded_by=new.id))  # fmt: skip
    assert f"Marked outdated, superseded by {new.id}" in page
    assert seeded.gm.get(old.id).lifecycle == "superseded"
    assert f'href="/console/memory/{new.id}"' in page  # its newer version

    again = post(client, old.id, "outdated", reason="again", superseded_by=new.id)
    assert again.status_code == 400 and "already superseded" in again.text
    alone = seeded.gm.remember("We page the on-call by SMS")
    assert "Marked outdated" in landing(client, post(client, alone.id, "outdated", reason="gone"))
    assert seeded.gm.get(alone.id).lifecycle == "outdated"


def test_verifying_and_promoting_are_recorded(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    page = landing(client, post(client, seeded.new, "verify", method="read the ArgoCD config",
                                status="verified", note="<b>ok</b>"))  # fmt: skip
    assert "Recorded the check" in page
    checked = seeded.gm.get(seeded.new)
    assert checked.verify_status == "verified" and checked.verified_at is not None

    page = landing(client, post(client, seeded.new, "canonical", owner="platform team"))
    assert "Promoted to canonical" in page
    assert seeded.gm.get(seeded.new).lifecycle == "canonical"
    old = post(client, seeded.old, "canonical", owner="platform team")
    assert old.status_code == 400 and seeded.new in old.text  # promote its newest version


def test_merging_a_duplicate_archives_it_and_keeps_its_tags(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    keep = seeded.gm.remember("Backups run nightly at 02:00", tags=["backup"])
    copy = seeded.gm.remember("Backups run every night at 2am", tags=["nightly"])
    page = landing(client, post(client, keep.id, "merge", duplicate=copy.id, reason="same"))
    assert f"Merged {copy.id} into this memory" in page
    assert seeded.gm.get(copy.id).lifecycle == "archived"
    assert set(seeded.gm.get(keep.id).tags) == {"backup", "nightly"}


def test_deleting_asks_for_the_box_to_be_ticked(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    doomed = seeded.gm.remember("A note made by mistake")
    unticked = post(client, doomed.id, "delete")
    assert unticked.status_code == 400 and "confirm" in unticked.text
    page = landing(client, post(client, doomed.id, "delete", confirm="yes"))
    assert f"Deleted memory {doomed.id}" in page
    assert client.get(f"/memory/{doomed.id}").status_code == 404


def test_the_audit_names_a_deleted_memory_by_its_id_without_a_dead_link(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    doomed = seeded.gm.remember("A note verified, then deleted")
    post(client, doomed.id, "verify", method="read it", status="verified")
    post(client, doomed.id, "delete", confirm="yes")
    entry = next(e for e in seeded.gm.audit_log().entries if e.target == doomed.id)
    assert entry.target_label is None
    row = client.get("/audit").text.split(f'id="audit-{entry.id}"', 1)[1].split("</tr>", 1)[0]
    assert doomed.id in row and f"/console/memory/{doomed.id}" not in row


def test_bad_curation_is_refused_with_a_clear_page(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    cases = [
        ("outdated", {"reason": " "}, "reason"),
        ("outdated", {"reason": "x", "superseded_by": "01NOSUCH"}, "no memory with id"),
        ("verify", {"method": "looked", "status": "<b>fine</b>"}, "status must be"),
        ("verify", {"method": "", "status": "verified"}, "method"),
        ("canonical", {"owner": ""}, "owner"),
        ("merge", {"duplicate": ""}, "id of the other memory"),
        ("merge", {"duplicate": seeded.new}, "cannot also be"),
        ("edit", {"content": " ", "title": "", "tags": ""}, "content"),
    ]
    for action, form, says in cases:
        response = post(client, seeded.new, action, **form)
        assert response.status_code == 400, (action, form)
        assert says in response.text, (action, form, response.text)
        assert "<b>fine</b>" not in response.text  # the input comes back as text, if at all
    assert post(client, seeded.new, "explode").status_code == 404
    assert post(client, "01NOSUCH", "verify", method="x", status="verified").status_code == 404
    forged = client.post(f"/memory/{seeded.new}/delete", data={"csrf": "x", "confirm": "yes"})
    assert forged.status_code == 403 and seeded.gm.get(seeded.new).id == seeded.new


def test_a_change_is_listed_in_the_audit_and_undone_from_there(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    page = landing(client, post(client, seeded.new, "canonical", owner="platform team"))
    assert 'href="/console/audit"' in page  # the way back
    entry = seeded.gm.audit_log(limit=1).entries[0]
    assert (entry.action, entry.target) == ("curate:canonical", seeded.new)
    audit = client.get("/audit").text
    row = audit.split(f'id="audit-{entry.id}"', 1)[1].split("</tr>", 1)[0]
    assert "curate:canonical" in row and f"/console/memory/{seeded.new}" in row
    assert f'action="/console/audit/{entry.id}/undo"' in row
    memory = seeded.gm.get(seeded.new)  # named as a person knows it, not by its id
    assert f">{escape(memory.title or memory.content[:80])}</a>" in row

    undone = landing(client, client.post(f"/audit/{entry.id}/undo", data={"csrf": csrf(client)}))
    assert f"Undid change {entry.id}" in undone
    assert seeded.gm.get(seeded.new).lifecycle == "active"
    row = undone.split(f'id="audit-{entry.id}"', 1)[1].split("</tr>", 1)[0]
    assert "undone" in row and "/undo" not in row

    again = client.post(f"/audit/{entry.id}/undo", data={"csrf": csrf(client)})
    assert again.status_code == 400 and "already undone" in again.text
    missing = client.post("/audit/01NOSUCH/undo", data={"csrf": csrf(client)})
    assert missing.status_code == 404
    forged = client.post(f"/audit/{entry.id}/undo", data={"csrf": "nope"})
    assert forged.status_code == 403


def test_a_change_edited_since_is_refused_with_the_reason(console: str, seeded: Seeded) -> None:
    client = signed_in(console)
    post(client, seeded.new, "verify", method="read it", status="verified")
    verified = seeded.gm.audit_log(limit=1).entries[0].id
    post(client, seeded.new, "edit", content="Deploys sync on their own", title="", tags="")
    refused = client.post(f"/audit/{verified}/undo", data={"csrf": csrf(client)})
    assert refused.status_code == 400 and "changed since" in refused.text


def test_an_entity_merge_links_to_the_entity_and_is_undone_from_the_audit(
    console: str, seeded: Seeded
) -> None:
    client = signed_in(console)
    seeded.gm.remember_many([{"content": "The api uses Postgres."},
                             {"content": "The api uses PostgreSQL."}])  # fmt: skip
    seeded.gm.index_triples()
    merged = seeded.gm.merge_entities("postgresql", ["postgres"])
    row = client.get("/audit").text.split(f'id="audit-{merged.audit_id}"', 1)[1]
    row = row.split("</tr>", 1)[0]
    assert "curate:merge-entities" in row and 'href="/console/entity/postgresql"' in row
    undone = landing(
        client, client.post(f"/audit/{merged.audit_id}/undo", data={"csrf": csrf(client)})
    )
    assert f"Undid change {merged.audit_id}" in undone
    assert seeded.gm.entity_page("postgres").mentions == 1
