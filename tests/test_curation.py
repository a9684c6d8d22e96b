"""Curation by hand is audited: each change writes a `curate:` row the audit log lists, and
`steward_undo` with that row's id puts the memory back as it was."""

from __future__ import annotations

import pytest

from graphmem.errors import InvalidInput, NotFound
from graphmem.service import GraphMemory


def newest(gm: GraphMemory) -> str:
    return gm.audit_log(limit=1).entries[0].id


def test_each_change_by_hand_is_listed_newest_first(gm: GraphMemory) -> None:
    a = gm.remember("Staging runs ArgoCD 2.8")
    b = gm.remember("Staging runs ArgoCD 2.9")
    gm.update(a.id, tags=["argocd"])
    gm.verify_entry(b.id, method="read the cluster", status="verified")
    gm.promote_to_canonical(b.id, owner="platform")
    gm.mark_outdated(a.id, reason="upgraded", superseded_by=b.id)
    entries = gm.audit_log(limit=10).entries
    assert [(e.action, e.target) for e in entries[:4]] == [
        ("curate:outdated", a.id), ("curate:canonical", b.id), ("curate:verify", b.id),
        ("curate:edit", a.id),
    ]  # fmt: skip
    assert all(e.undoable and e.actor == "user" and e.undone_at is None for e in entries[:4])
    with pytest.raises(InvalidInput):
        gm.audit_log(limit=0)


def test_a_refused_change_writes_no_audit_row(gm: GraphMemory) -> None:
    memory = gm.remember("We page the on-call by SMS")
    with pytest.raises(InvalidInput):
        gm.mark_outdated(memory.id, reason=" ")
    assert gm.audit_log().entries == []


def test_undo_puts_back_a_supersession_and_its_edge(gm: GraphMemory) -> None:
    old = gm.remember("Staging runs ArgoCD 2.8")
    new = gm.remember("Staging runs ArgoCD 2.9")
    gm.mark_outdated(old.id, reason="upgraded", superseded_by=new.id)
    report = gm.steward_undo(newest(gm), actor="console")
    assert report.memories == [old.id]
    back = gm.get(old.id)
    assert (back.lifecycle, back.valid_to) == ("active", None)
    gm.mark_outdated(old.id, reason="upgraded again", superseded_by=new.id)  # no edge left over
    assert gm.get(old.id).lifecycle == "superseded"
    undone = gm.audit_log(limit=3).entries
    assert undone[1].action == "steward-undo" and not undone[1].undoable
    assert undone[2].undone_at is not None and not undone[2].undoable


def test_undo_puts_back_an_edit_of_the_text_a_merge_and_a_promotion(gm: GraphMemory) -> None:
    memory = gm.remember("Backups run nightly", title="Backups", tags=["backup"])
    gm.update(memory.id, content="Backups run hourly", title="", tags=["backup", "hourly"])
    gm.steward_undo(newest(gm))
    back = gm.get(memory.id)
    assert (back.content, back.title, back.tags) == ("Backups run nightly", "Backups", ["backup"])
    assert gm.recall("backups nightly", limit=1).hits[0].memory.id == memory.id  # embedded again

    copy = gm.remember("Backups run every night", tags=["nightly"])
    gm.merge_duplicates(memory.id, [copy.id])
    gm.steward_undo(newest(gm))
    assert gm.get(copy.id).lifecycle == "active" and gm.get(memory.id).tags == ["backup"]
    gm.merge_duplicates(memory.id, [copy.id])  # the MERGED_INTO edge went with the undo
    assert gm.get(copy.id).lifecycle == "archived"

    gm.promote_to_canonical(memory.id, owner="ops")
    gm.steward_undo(newest(gm))
    assert gm.get(memory.id).lifecycle == "active" and gm.get(memory.id).owner is None


def test_a_change_edited_since_is_not_undone(gm: GraphMemory) -> None:
    memory = gm.remember("Deploys go through ArgoCD")
    gm.verify_entry(memory.id, method="read the config", status="verified")
    verified = newest(gm)
    gm.update(memory.id, tags=["deploy"])
    report = gm.steward_undo(verified)
    assert report.undone == [] and "changed since" in report.skipped[0]["why"]
    assert gm.steward_undo(newest(gm)).undone  # the newer one still can
    for not_undoable in (newest(gm), "01NOSUCHAUDIT"):  # an undo's own row, or no row
        with pytest.raises(NotFound):
            gm.steward_undo(not_undoable)
