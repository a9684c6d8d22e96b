"""An entity's neighbours drawn: a node's link expands it through the query string, edges are
filtered by kind, and each fact links the memory it came from."""

from __future__ import annotations

import re
from urllib.parse import unquote

from graphmem.models import utcnow
from graphmem.service import GraphMemory
from graphmem.storage.protocols import EntityRow, FactRow, Mention, Provenance, fact_id
from tests.console.conftest import Seeded
from tests.console.test_auth import signed_in

NAMES = {"checkout": "checkout", "redis": '<img src=x onerror="window.pwned = 20">',
         "payments": "payments", "postgres": "postgres " + "p" * 200}  # fmt: skip
TRIPLES = [("checkout", "uses", "redis"), ("checkout", "depends_on", "payments"),
           ("payments", "uses", "postgres")]  # fmt: skip


def graph(gm: GraphMemory) -> list[str]:
    """Four services in three facts, each fact from its own memory: those memories' ids."""
    stated = []
    for s, p, o in TRIPLES:
        memory = gm.remember(f"{NAMES[s]} {p} {NAMES[o]}")
        gm.wait_for_extraction()
        fact = FactRow(fact_id(s, p, o), s, p, o, s, o, f"{s} {p} {o}", 0.9)
        gm.store.entities.write_extraction(
            [memory.id], extractor="test",
            entities=[EntityRow(n, NAMES[n], n, n, "service") for n in (s, o)], aliases={},
            mentions=[Mention(memory.id, n, NAMES[n]) for n in (s, o)], facts=[fact],
            provenance=[Provenance(fact.id, memory.id, 0.9)], at=utcnow(),
        )  # fmt: skip
        stated.append(memory.id)
    return stated


def nodes(page: str) -> list[str]:
    return [unquote(t) for t in re.findall(r"<title>([^<]*)</title>", page)]


def test_the_neighbours_are_drawn_and_a_node_expands_them(console: str, seeded: Seeded) -> None:
    stated = graph(seeded.gm)
    client = signed_in(console)
    page = client.get("/entity/checkout").text
    assert '<svg class="graph"' in page
    drawn = page.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
    assert "payments" in drawn and "&lt;img src=x" in drawn and "postgres" not in drawn
    assert 'href="/console/entity/checkout?expand=payments"' in drawn
    assert ">uses</text>" in drawn and ">depends on</text>" in drawn

    expanded = client.get("/entity/checkout", params={"expand": "payments"}).text
    drawn = expanded.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
    assert "postgres" in drawn
    assert '<a href="/console/entity/checkout">fold it back</a>' in expanded
    assert 'href="/console/entity/checkout?expand=payments&amp;expand=postgres"' in drawn
    for memory in stated[:2]:  # the facts checkout is in link the memories that stated them
        assert f'from <a href="/console/memory/{memory}">' in page
    assert stated[2] not in page


def test_edges_are_filtered_by_kind(console: str, seeded: Seeded) -> None:
    graph(seeded.gm)
    client = signed_in(console)
    uses = client.get("/entity/checkout", params={"edge": "uses", "expand": "payments"}).text
    drawn = uses.split('<svg class="graph"', 1)[1].split("</svg>", 1)[0]
    assert "&lt;img src=x" in drawn and ">payments<" not in drawn and "depends on" not in drawn
    assert 'class="here">uses</a>' in uses
    assert "edge=uses" in drawn  # expanding keeps the filter


def test_bad_exploration_is_refused(console: str, seeded: Seeded) -> None:
    graph(seeded.gm)
    client = signed_in(console)
    for params, says in [
        ({"expand": [f"e{n}" for n in range(7)]}, "at most 6"),
        ({"expand": "nosuch"}, "no entity"),
        ({"edge": "<b>x</b>"}, "edge is a predicate"),
    ]:
        response = client.get("/entity/checkout", params=params)
        assert response.status_code == 400 and says in response.text, params
        assert "<b>x</b>" not in response.text


def test_an_entity_whose_id_holds_a_comma_expands(console: str, seeded: Seeded) -> None:
    graph(seeded.gm)
    memory = seeded.gm.remember("payments serves 3,000 users")
    seeded.gm.wait_for_extraction()
    users = "3,000 users"
    fact = FactRow(fact_id("payments", "serves", users), "payments", "serves", users, "payments",
                   users, "payments serves 3,000 users", 0.9)  # fmt: skip
    seeded.gm.store.entities.write_extraction(
        [memory.id], extractor="test",
        entities=[EntityRow(users, users, users, users, "quantity")], aliases={},
        mentions=[Mention(memory.id, users, users)], facts=[fact],
        provenance=[Provenance(fact.id, memory.id, 0.9)], at=utcnow(),
    )  # fmt: skip
    client = signed_in(console)
    page = client.get("/entity/checkout", params={"expand": ["payments", users]})
    assert page.status_code == 200
    assert "expand=payments&amp;expand=3%2C000+users" in page.text  # each entity its own
