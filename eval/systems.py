"""What a benchmark's system names mean, shared by the runners."""

from __future__ import annotations

from collections.abc import Sequence

from graphmem.recall.config import get_recipe

GRAPH = "graph"  # hybrid recall fused with the entity-graph walk (recall_multihop)


def needs_entities(systems: Sequence[str]) -> bool:
    """Whether a system reads the graph's entities and facts: multi-hop recall, or a recipe that
    fuses the answer hop's clues. A store gets them on write; the runners store with
    extraction off and index them once, timed on their own."""
    return any(s == GRAPH or get_recipe(s).w_answer > 0 for s in systems)
