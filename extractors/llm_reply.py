"""What to ask a chat model for, and how to read what it sends back.

Models wrap JSON in code fences, add a sentence before it, invent labels and spell
predicates every which way. Everything here is forgiving about form and strict about
content: an answer without a usable object is an error for the caller to count, not a guess.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import LABELS, Extraction
from .facts import FactTable, snake_case
from .mentions import PATTERN, EntityTable, mention

LLM_CONFIDENCE = 0.7

SYSTEM_PROMPT = f"""You extract a knowledge graph from short engineering notes and chat messages.
Reply with one JSON object and nothing else, in this shape:
{{"entities": [{{"name": "...", "label": "..."}}],
 "triples": [{{"subject": "...", "predicate": "...", "object": "..."}}]}}
Rules:
- Give 3 to 7 triples per text when the text supports them; fewer if it does not. Never invent.
- subject and object are entity names exactly as written in the text, without articles.
- predicate is a short snake_case verb phrase, preferring: uses, depends_on, caused, fixed,
  replaced, migrated_from, migrated_to, mitigated_by, owned_by, deployed_to, broke, blocked_by.
- label is one of: {", ".join(sorted(LABELS))}.
- Never use pronouns (we, it, they) as an entity."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRIPLE_KEYS = ("triples", "facts", "relations", "relationships")


def user_prompt(text: str) -> str:
    return f"Text:\n{text}"


def _first_object(reply: str) -> dict[str, Any]:
    """The first JSON object in the reply, whatever surrounds it."""
    fenced = _FENCE.search(reply)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(reply)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                found, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(found, dict):
                return found
            start = candidate.find("{", start + 1)
    raise ValueError("no JSON object in the reply")


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def parse_reply(reply: str, text: str, extractor: str) -> Extraction:
    """An Extraction from a model's reply; ValueError when there is nothing usable in it."""
    payload = _first_object(reply)
    raw_entities = payload.get("entities", [])
    raw_triples = next((payload[k] for k in _TRIPLE_KEYS if k in payload), None)
    if not isinstance(raw_entities, list) or not isinstance(raw_triples, list):
        raise ValueError("the reply has no list of triples")
    entities = EntityTable()
    for item in raw_entities:
        if not isinstance(item, dict):
            continue
        label = snake_case(_text(item.get("label")) or "concept")
        found = mention(
            0, 0, _text(item.get("name")), label if label in LABELS else "concept", PATTERN
        )
        if found is not None:
            entities.add(found)
    facts = FactTable()
    for item in raw_triples:
        if not isinstance(item, dict):
            continue
        subject = entities.add_concept(_text(item.get("subject")))
        obj = entities.add_concept(_text(item.get("object")))
        predicate = snake_case(_text(item.get("predicate")))
        if subject and obj and predicate:
            facts.add(subject, predicate, obj, text, _confidence(item.get("confidence")))
    return Extraction(entities=entities.entities(), facts=facts.facts(), extractor=extractor)


def _confidence(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return LLM_CONFIDENCE
