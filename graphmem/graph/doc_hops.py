"""The documents one hop from multi-hop recall's hits: sections whose chunks name an entity that a
hit names ("billing-api" in an incident, and in the runbook of billing-api).

A section scores the sum, over the entities it shares with hits, of the hits' scores, each
divided by how many sections name the entity (an entity every document names links nothing).
Entities named in more than HUB_CHUNKS chunks are not followed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

from graphmem.graph.models import MultiHopSection, PathStep
from graphmem.storage.protocols import Store

HUB_CHUNKS = 50


def linked_sections(
    store: Store, hits: Mapping[str, tuple[float, str]], *, limit: int
) -> list[MultiHopSection]:
    """`hits`: memory id -> (score, label for the path); the best `limit` sections they reach."""
    if not hits:
        return []
    index = store.documents.index()
    if not index.chunks:
        return []
    named: dict[str, list[tuple[str, str]]] = defaultdict(list)  # entity -> (memory, name)
    for memory_id, entity_id, name in store.entities.mentions_of(list(hits)):
        named[entity_id].append((memory_id, name))
    by_entity: dict[str, set[str]] = defaultdict(set)  # entity -> sections naming it
    for entity_id, chunk_id in store.documents.chunks_mentioning(list(named), limit=HUB_CHUNKS + 1):
        chunk = index.chunks.get(chunk_id)
        if chunk is not None:
            by_entity[entity_id].add(chunk.section)
    scores: dict[str, float] = defaultdict(float)
    via: dict[str, tuple[float, str, str, str]] = {}  # section -> its strongest link
    for entity_id, sections in by_entity.items():
        if len(sections) > HUB_CHUNKS:
            continue
        for memory_id, name in named[entity_id]:
            share = hits[memory_id][0] / math.log2(1 + len(sections))
            for key in sections:
                scores[key] += share
                if share > via.get(key, (0.0, "", "", ""))[0]:
                    via[key] = (share, memory_id, name, entity_id)
    out = []
    for key in sorted(scores, key=lambda k: -scores[k])[:limit]:
        section = index.sections[key]
        doc = index.docs[section.doc]
        _, memory_id, name, _ = via[key]
        steps = [
            PathStep(source=hits[memory_id][1], relation="mentions", target=name),
            PathStep(
                source=name, relation="mentions", target=" > ".join(section.breadcrumb),
                reverse=True,
            ),
        ]  # fmt: skip
        out.append(
            MultiHopSection(
                path=doc.rel,
                title=doc.title,
                heading=section.title,
                breadcrumb=list(section.breadcrumb),
                section_key=section.section_key,
                source_type=doc.source_type,
                lines=[section.start_line, section.end_line],
                score=round(scores[key], 6),
                via_memory=memory_id,
                route=steps,
                route_text=f"{steps[0].source} -mentions-> {name} <-mentions- {steps[1].target}",
            )
        )
    return out
