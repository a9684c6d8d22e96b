"""The entity-resolution labels are well formed and name what their texts say, and the runner's
arithmetic holds: finding a mention among extracted names, pair counts, and a CI slice (the notes
written for the set) through the real extractor."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from graphmem.extractors import ExtractedEntity, normalise
from graphmem.extractors.spacy_extractor import MODEL_NAMES, installed_model

import eval.__main__ as cli
from eval import entities
from graphmem.embeddings.hashing import HashEmbedder

REPO = Path(__file__).parents[2]
LABELS = REPO / "eval" / "data" / "entity_resolution.jsonl"
NOTES = REPO / "eval" / "data" / "entity_resolution_notes.json"
BENCH = REPO / ".." / "shared" / "bench"


def _labels() -> list[entities.Label]:
    return entities.load_labels(LABELS)[1]


def test_the_header_says_how_mentions_were_drawn_and_judged() -> None:
    header, _ = entities.load_labels(LABELS)

    assert {"about", "rule", "sampling"} <= set(header)


def test_there_are_enough_mentions_from_both_corpora_and_enough_shared_entities() -> None:
    labels = _labels()
    per_kind = Counter(label.kind for label in labels)
    sizes = Counter((label.store, label.entity) for label in labels)

    assert len(labels) >= 300 and per_kind["docs"] >= 150 and per_kind["locomo"] >= 150
    assert sum(1 for n in sizes.values() if n > 1) >= 40  # entities named more than one way


def test_each_mention_is_labelled_once_in_its_own_store() -> None:
    labels = _labels()
    rows = [json.loads(line) for line in LABELS.read_text().splitlines()[1:]]

    assert all(set(row) == {"source", "mention", "entity"} for row in rows)
    spellings = Counter((label.store, label.mention.casefold()) for label in labels)
    assert max(spellings.values()) == 1
    for label in labels:
        assert label.mention.strip() == label.mention and label.mention
        assert label.entity.split("/", 1)[0] == label.store.split(":")[-1]


def test_every_notes_mention_is_in_its_note() -> None:
    notes = {f"notes#{n['id']}": n["text"] for n in json.loads(NOTES.read_text())["notes"]}
    for label in _labels():
        if label.kind == "notes":
            assert label.mention.casefold() in notes[label.source].casefold(), label


@pytest.mark.skipif(not BENCH.is_dir(), reason="../shared/bench is not here")
def test_every_mention_is_in_its_source_text() -> None:
    labels = [label for label in _labels() if label.kind != "notes"]
    stores = entities.store_texts(labels, BENCH, None)
    for label in labels:
        texts = stores[label.store].texts
        found = stores[label.store].by_source.get(label.source)
        assert found, f"no text for {label.source}"
        assert any(label.mention.casefold() in texts[i].casefold() for i in found), label


# -- the runner's arithmetic ------------------------------------------------------------------


def _named(*names: str) -> list[ExtractedEntity]:
    return [ExtractedEntity(name=n, norm=normalise(n), label="concept") for n in names]


def test_a_mention_is_found_by_spelling_then_key_then_the_head_inside_it() -> None:
    found = _named("sqlc", "prepared statements", "Redis")

    assert entities.locate("prepared statements", found) == "prepared statement"
    assert entities.locate("the Prepared Statement", found) == "prepared statement"
    assert entities.locate("sqlc's prepared statements", found) == "prepared statement"
    assert entities.locate("pgbouncer", found) is None


def _placed(store: str, rows: list[tuple[str, str, str | None]]) -> list[entities.Placed]:
    source = "notes#n" if store == "notes" else "docs/a.md"
    return [entities.Placed(entities.Label(source, m, e), None, got) for m, e, got in rows]


def test_pairs_are_counted_within_each_store() -> None:
    placed = _placed(
        "docs",
        [
            ("ledger-worker", "docs/ledger", "ledger-worker"),
            ("ledger-worker service", "docs/ledger", "ledger-worker"),  # right
            ("ledger queue", "docs/queue", "ledger-worker"),  # wrongly merged twice
            ("pgbouncer", "docs/pgbouncer", None),  # not found: an entity of its own
            ("PgBouncer", "docs/pgbouncer", "pgbouncer"),  # missed
        ],
    )

    counts, wrong = entities.score(placed)

    docs = counts["docs"]
    assert (docs.gold_pairs, docs.predicted_pairs, docs.true_pairs) == (2, 3, 1)
    assert docs.found == 4 and docs.mentions == 5
    scores = docs.scores()
    assert scores["precision"] == round(1 / 3, 4) and scores["recall"] == 0.5
    assert Counter(w["what"] for w in wrong["docs"]) == {"false merge": 2, "missed": 1}


needs_model = pytest.mark.skipif(
    installed_model(MODEL_NAMES) is None, reason="no spaCy English model installed"
)


@needs_model
def test_the_notes_slice_resolves_every_pair_it_merges_correctly() -> None:
    result = entities.run_entities(
        LABELS, bench=None, notes=NOTES, embedder=HashEmbedder(), kinds=["notes"]
    )

    notes = result["notes"]
    assert notes["mentions"] >= 40 and notes["found"] == notes["mentions"]
    assert notes["precision"] == 1.0 and notes["recall"] >= 0.75


@needs_model
def test_the_subcommand_writes_its_results(tmp_path: Path) -> None:
    out = tmp_path / "out" / "entity_resolution.json"

    code = cli.main(
        ["entities", "--labels", str(LABELS), "--notes", str(NOTES), "--sources", "notes",
         "--embedding", "hash", "--out", str(out)]
    )  # fmt: skip

    assert code == 0
    assert json.loads(out.read_text())["notes"]["mentions"] >= 40


@needs_model
def test_a_simulated_user_deciding_suggestions_and_a_glossary_raise_recall() -> None:
    result = entities.run_entities(
        LABELS, bench=None, notes=NOTES, embedder=HashEmbedder(), kinds=["notes"],
        with_feedback=True,
    )  # fmt: skip

    feedback = result["feedback"]
    start, last = feedback["curve"][0], feedback["curve"][-1]
    assert (start["precision"], start["recall"]) == (
        result["notes"]["precision"], result["notes"]["recall"],
    )  # fmt: skip
    assert last["decisions"] == len(feedback["curve"]) - 1 >= 1
    assert last["recall"] > start["recall"] and last["precision"] == 1.0
    assert "PgBouncer transaction mode" in " ".join(c["suggestion"] for c in feedback["curve"][1:])
    glossary = feedback["glossary"]
    assert glossary["entities"] >= 1 and glossary["recall"] > start["recall"]
