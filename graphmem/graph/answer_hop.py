"""The answer hop: for a question about people, the memories that name a thing of the kind it
asks for beside one of them, or state a fact of theirs with its verb; and how much of the walk's
bonus a question about a conversation's speakers gets. Recall uses its clues on their own
(`answer_clues`), the multi-hop walk links them into its subgraph (graph/multihop.py).
"""

from __future__ import annotations

from collections.abc import Collection

from graphmem.graph.multihop import Subgraph, entity_node, memory_node
from graphmem.recall.query import asked_labels, asks_for_many, parse_names, verb_lemmas
from graphmem.storage.protocols import Store

CLUE_ROWS = 1500  # rows the answer hop reads at most, for plain recall as for the walk
MAX_KIND_MEMORIES = 40  # the answer hop's limit on memories naming a thing of the asked kind
VERB_FACT_SHARE = 1 / 3  # a fact with the question's verb, against a thing of the asked kind
SINGLE_ANSWER_SHARE = 1 / 3  # the clues of a question after one thing, against one after several
# the share of `graph_weight` a question about someone who speaks in the store's conversations
# gets (0.8 x 0.025 = 0.02, the weight tuned on LoCoMo): see `speaker_share`
SPEAKER_SHARE = 0.025


def answer_hop(
    store: Store, query: str, sub: Subgraph, gathered: Collection[str] = ()
) -> dict[str, float]:
    """Memories that hold a clue to a question about people, with its strength:

    - a thing of the kind the question asks for, named beside a person it names ("Which cities
      has John visited?": John's memories that name a place), strength 1. If more than
      `MAX_KIND_MEMORIES` memories do, the kind is too common to reach new memories by, but it
      still tells apart those recall `gathered`: only they keep the clue;
    - a fact whose subject is such a person and whose verb is one of the question's
      ("john -visit-> chicago"), `VERB_FACT_SHARE`, added to the first.

    Both count `SINGLE_ANSWER_SHARE` as much for a question after one thing ("Which book did
    Tim read in May?"): recall has most often ranked its answer already, and a clue would push
    it down.

    A list question's answers are spread over memories that share neither words nor much
    meaning with it; the entity labels and the fact verbs are what they share. Each clue is
    linked into the subgraph, so the hit's path shows it. Measured on LoCoMo dev:
    docs/recall.md#multi-hop-recall."""
    names = parse_names(query)
    people = sorted(set(store.entities.resolve_known(names).values())) if names else []
    if not people:
        return {}
    clues: dict[str, float] = {}
    share = 1.0 if asks_for_many(query) else SINGLE_ANSWER_SHARE
    labels = asked_labels(query)
    # the people who speak in the conversations are named in turn after turn ("Thanks,
    # Caroline!"): not the person a question asks for
    things = (
        store.entities.things_mentioned_with(
            people, labels, limit=CLUE_ROWS, besides=sorted(store.memories.speakers())
        )
        if labels
        else []
    )
    if len({memory_id for memory_id, *_ in things}) > MAX_KIND_MEMORIES:
        within = set(gathered)
        things = [row for row in things if row[0] in within]
    for memory_id, person, thing, name in things:
        sub.names[entity_node(thing)] = name
        sub.link(memory_node(memory_id), entity_node(person), "mentions", 1.0)
        sub.link(memory_node(memory_id), entity_node(thing), "mentions", 1.0)
        clues[memory_id] = share
    facts = store.entities.facts_of_people(people, verb_lemmas(query, set(names)), limit=CLUE_ROWS)
    for memory_id, person, predicate, obj, name in facts:
        sub.names[entity_node(obj)] = name
        sub.link(entity_node(person), entity_node(obj), predicate, 1.0)
        sub.link(memory_node(memory_id), entity_node(obj), "mentions", 1.0)
    for memory_id in {memory_id for memory_id, *_ in facts}:
        clues[memory_id] = clues.get(memory_id, 0.0) + share * VERB_FACT_SHARE
    return clues


def names_a_speaker(store: Store, query: str) -> bool:
    """Whether the question names someone who speaks in the store's conversations (a store
    without conversations is not asked)."""
    names = parse_names(query)
    return bool(names) and bool(set(names) & store.memories.speakers())


def speaker_share(store: Store, query: str) -> float:
    """The share of `graph_weight` the walk's bonus gets for this question: `SPEAKER_SHARE` for
    a question about someone who speaks in the store's conversations, else all of it.

    A conversation's turns are linked by who speaks and by whatever they chat about, so the
    turns the walk reaches from the seeds are rarely what such a question asks for; its
    answers are reached by the answer hop. On LoCoMo dev, `recall_multihop` at graph weight
    0.8 for every question: R@5 0.743 -> 0.666, R@10 0.839 -> 0.811 (0.3: 0.724 and 0.830);
    with this share: 0.747 and 0.840."""
    return SPEAKER_SHARE if names_a_speaker(store, query) else 1.0


def answer_clues(store: Store, query: str, gathered: Collection[str]) -> dict[str, float]:
    """The answer hop on its own, for plain recall: its clues without the walk's subgraph.
    Only a question that names someone who speaks in the store's conversations can have any,
    so any other query costs no store query."""
    if not names_a_speaker(store, query):
        return {}
    return answer_hop(store, query, Subgraph(), gathered)
