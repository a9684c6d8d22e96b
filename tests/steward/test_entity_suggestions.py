"""The steward suggests what resolution likely got wrong: two entities that are one thing, and a
name an entity took in that names another; accepting one corrects the graph (audited, so its
undo puts the suggestion back in the inbox), dismissing one keeps it from coming back."""

from __future__ import annotations

import pytest

from graphmem.service import GraphMemory
from graphmem.steward.entities import EntityTexts, same_entities, wrong_merges


def _graph(
    entities: dict[str, tuple[str, str]], mentions: list[tuple[str, str, str]]
) -> EntityTexts:
    return EntityTexts.read([(i, name, label) for i, (name, label) in entities.items()], mentions)


def _pairs(graph: EntityTexts) -> dict[tuple[str, str], float]:
    return {(s.keep, s.other): s.confidence for s in same_entities(graph)}


def test_a_surname_said_after_the_full_name_is_suggested_as_one_person() -> None:
    graph = _graph(
        {"william duncan": ("William Duncan", "person"), "duncan": ("Duncan", "person"),
         "dundee": ("Dundee", "gpe"), "scotland": ("Scotland", "gpe")},
        [("t1", "william duncan", "William Duncan"), ("t1", "duncan", "Duncan"),
         ("t1", "dundee", "Dundee"), ("t2", "scotland", "Scotland")],
    )  # fmt: skip
    (suggestion,) = same_entities(graph)
    assert (suggestion.keep, suggestion.other) == ("william duncan", "duncan")
    assert suggestion.evidence["why"] == "the end of the other name"
    assert suggestion.evidence["named_together"] == 1


def test_names_in_one_text_rank_above_names_that_share_nothing() -> None:
    entities = {
        "james gleason": ("James Gleason", "person"), "gleason": ("Gleason", "person"),
        "lowell bergman": ("Lowell Bergman", "person"), "bergman": ("Bergman", "person"),
    }  # fmt: skip
    graph = _graph(
        entities,
        [("t1", "james gleason", "James Gleason"), ("t1", "gleason", "Gleason"),
         ("t2", "lowell bergman", "Lowell Bergman"), ("t3", "bergman", "Bergman")],
    )  # fmt: skip
    pairs = _pairs(graph)
    assert pairs[("james gleason", "gleason")] > pairs[("lowell bergman", "bergman")] > 0


def test_a_name_that_starts_another_is_another_thing_unless_both_are_people() -> None:
    graph = _graph(
        {"logit": ("Logit", "org"), "logit dashboard": ("Logit dashboard", "org"),
         "gds logit": ("GDS Logit", "org"), "shia": ("Shia", "person"),
         "shia labeouf": ("Shia Labeouf", "person")},
        [("t1", "logit", "Logit"), ("t1", "logit dashboard", "Logit dashboard"),
         ("t1", "gds logit", "GDS Logit"), ("t2", "shia", "Shia"),
         ("t2", "shia labeouf", "Shia Labeouf")],
    )  # fmt: skip
    pairs = _pairs(graph)
    assert ("gds logit", "logit") in pairs and ("shia labeouf", "shia") in pairs
    assert ("logit dashboard", "logit") not in pairs  # a name's head is its last word


def test_a_short_name_that_ends_several_names_is_less_sure_and_a_person_is_not_a_place() -> None:
    people = {"duncan": ("Duncan", "person"), "william duncan": ("William Duncan", "person")}
    alone = _pairs(_graph(people, [("t1", "duncan", "Duncan"), ("t1", "william duncan", "W")]))
    both = _pairs(
        _graph(
            {**people, "isadora duncan": ("Isadora Duncan", "person")},
            [
                ("t1", "duncan", "Duncan"),
                ("t1", "william duncan", "W"),
                ("t2", "isadora duncan", "I"),
            ],
        )
    )
    assert both[("william duncan", "duncan")] == pytest.approx(
        alone[("william duncan", "duncan")] / 2**0.5, abs=1e-4
    )
    place = _pairs(
        _graph(
            {"duncan": ("Duncan", "gpe"), "william duncan": ("William Duncan", "person")},
            [("t1", "duncan", "Duncan"), ("t1", "william duncan", "W")],
        )
    )
    assert place.get(("william duncan", "duncan"), 0) < alone[("william duncan", "duncan")]


def test_misspellings_and_initials_are_suggested() -> None:
    graph = _graph(
        {"marksuhl": ("Marksuhl", "gpe"), "marsuhl": ("Marsuhl", "gpe"),
         "new york city": ("New York City", "gpe"), "nyc": ("NYC", "gpe")},
        [("t1", "marksuhl", "Marksuhl"), ("t2", "marksuhl", "Marksuhl"),
         ("t3", "marsuhl", "Marsuhl"), ("t4", "new york city", "New York City"),
         ("t4", "nyc", "NYC")],
    )  # fmt: skip
    found = {(s.keep, s.other): s.evidence["why"] for s in same_entities(graph)}
    assert found[("marksuhl", "marsuhl")] == "spelt nearly alike"  # the spelling more texts use
    assert found[("new york city", "nyc")] == "the other name's initials"


def test_a_name_saying_more_than_its_entity_is_suggested_as_a_wrong_merge() -> None:
    graph = _graph(
        {"data.gov.uk": ("data.gov.uk", "org")},
        [("t1", "data.gov.uk", "data.gov.uk"), ("t2", "data.gov.uk", "data.gov.uk"),
         ("t3", "data.gov.uk", "data.gov.uk applications")],
    )  # fmt: skip
    (suggestion,) = wrong_merges(graph)
    assert suggestion.keep == "data.gov.uk" and suggestion.other == "data.gov.uk applications"
    assert suggestion.texts == ["t3"] and suggestion.evidence["extra_words"] == ["applications"]


# -- in the inbox ---------------------------------------------------------------------------

TEXTS = [
    "William Duncan directed the film in Chicago. Duncan wrote it with Chicago friends.",
    "William Duncan was born in Dundee.",
    "Duncan acted in Chicago.",
]


@pytest.fixture
def suggested(gm: GraphMemory) -> GraphMemory:
    gm.remember_many([{"content": t} for t in TEXTS])
    gm.index_triples()
    return gm


def _merge_of(gm: GraphMemory, other: str):
    inbox = gm.steward_inbox(kind="same_entity").items
    return next(f for f in inbox if f.targets[1:] == [other])


def test_an_accepted_suggestion_merges_and_later_text_resolves_to_the_entity_kept(
    suggested: GraphMemory,
) -> None:
    gm = suggested
    run = gm.steward_run("entities", dry_run=False)
    assert run.found.get("same_entity", 0) >= 1
    finding = _merge_of(gm, "duncan")
    assert finding.targets[0] == "william duncan" and finding.action == "merge_entities"
    assert finding.scope == "entities" and "Duncan" in finding.summary
    gm.steward_inbox_resolve(finding.id, "apply")
    assert gm.entity_page("william duncan").mentions == 3
    later = gm.remember("Duncan retired in 1930.")
    gm.index_triples()
    named = {e for _, e, _ in gm.store.entities.mentions_of([later.id])}
    assert "william duncan" in named and "duncan" not in named
    # the correction is audited as the steward finding's: undoing it reopens the finding
    entry = gm.audit_log(limit=5).entries[0]
    assert entry.action == "curate:merge-entities"
    undone = gm.steward_undo(entry.id)
    assert undone.findings == [finding.id]
    assert gm.steward_inbox(kind="same_entity").items[0].status == "pending"
    assert gm.entity_page("duncan").mentions == 2


def test_a_dismissed_suggestion_is_not_filed_again(suggested: GraphMemory) -> None:
    gm = suggested
    gm.steward_run("entities", dry_run=False)
    finding = _merge_of(gm, "duncan")
    gm.steward_inbox_resolve(finding.id, "dismiss", note="another Duncan")
    gm.remember("Duncan and William Duncan met in Chicago.")  # more evidence for the pair
    gm.index_triples()
    again = gm.steward_run("entities", dry_run=False, listed=None)
    assert all(f.targets[1:] != ["duncan"] for f in again.findings if f.kind == "same_entity")
    assert [
        f.id for f in gm.steward_inbox(kind="same_entity").items if f.targets[1:] == ["duncan"]
    ] == []
