"""The ten ready queries of docs/graph-model.md run as written on a small engineering history,
and each returns what its heading promises."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.storage.protocols import EntityRow, FactRow, Mention, Provenance, fact_id

DOC = Path(__file__).resolve().parents[1] / "docs" / "graph-model.md"
_QUERY = re.compile(r"### (\d+)\. (.+?)\n\n```cypher\n(.+?)```\n(?:Parameters: `(\{.*?\})`)?", re.S)
QUERIES = [
    (int(n), title, text, json.loads(p) if p else {})
    for n, title, text, p in _QUERY.findall(DOC.read_text())
]

# the first value each query must return, on the history below
EXPECTED_FIRST = {
    1: "checkout-service",
    3: "redis",
    4: "billing migration",
    5: "billing migration",
    6: "billing migration",
    7: "index lock",
    8: "Index lock on orders",
}


def _extract(
    gm: GraphMemory, memory_id: str, names: list[str], triples: list[tuple[str, str, str]]
) -> None:
    facts = [FactRow(fact_id(s, p, o), s, p, o, s, o, f"{s} {p} {o}", 0.8) for s, p, o in triples]
    gm.store.entities.write_extraction(
        [memory_id], extractor="test",
        entities=[EntityRow(n, n, n, "".join(c for c in n if c.isalnum()), "concept") for n in names],
        aliases={}, mentions=[Mention(memory_id, n, n) for n in names], facts=facts,
        provenance=[Provenance(f.id, memory_id, 0.8) for f in facts], at=utcnow(),
    )  # fmt: skip


@pytest.fixture
def history(gm: GraphMemory) -> GraphMemory:
    uses = gm.remember("checkout-service uses Redis for carts")
    _extract(gm, uses.id, ["checkout-service", "redis"], [("checkout-service", "uses", "redis")])
    incident = gm.store_incident(
        summary="Index lock on orders", impact="checkout down 20 min",
        root_cause="the billing migration caused an index lock", title="Index lock on orders",
    )  # fmt: skip
    _extract(gm, incident.id, ["billing migration", "index lock"],
             [("billing migration", "caused", "index lock")])  # fmt: skip
    runbook = gm.store_runbook(
        trigger="index lock on orders", steps=["run the rollback runbook"], title="Rollback"
    )
    _extract(gm, runbook.id, ["index lock", "rollback runbook"],
             [("index lock", "mitigated_by", "rollback runbook")])  # fmt: skip
    dead_end = gm.store_dead_end(
        attempted_approach="Redis cluster for sessions", why_failed="MULTI across slots"
    )
    _extract(gm, dead_end.id, ["redis"], [])
    old = gm.store_decision(decision="Keep sessions in Redis", rationale="fast")
    new = gm.store_decision(
        decision="Keep sessions in Postgres", rationale="one less service", avoids=[dead_end.id]
    )
    gm.mark_outdated(old.id, reason="moved", superseded_by=new.id)
    _extract(gm, old.id, ["redis", "checkout-service"], [])
    return gm


def test_the_document_has_ten_queries() -> None:
    assert [n for n, *_ in QUERIES] == list(range(1, 11))


@pytest.mark.parametrize(
    ("number", "title", "text", "params"), QUERIES, ids=[q[1] for q in QUERIES]
)
def test_each_ready_query_runs_and_answers(
    history: GraphMemory, number: int, title: str, text: str, params: dict[str, str]
) -> None:
    result = history.cypher(text, params)
    assert result.rows, f"query {number} ({title}) returned nothing"
    if number in EXPECTED_FIRST:
        assert result.rows[0][0] == EXPECTED_FIRST[number]
    if number == 9:  # the superseded decision points at its replacement
        assert any(row[2] == "superseded" and row[3] for row in result.rows)
    if number == 10:  # the dead end, with the decision that avoids it
        assert result.rows[0][2] is not None
