"""Hybrid recall: gather candidates by vector and by BM25, score features, fuse, explain.

Candidates come from the active embedding space only; a store whose memories lack vectors in that
space still finds them by keyword. Features are scaled per query so that weights mean the same
thing for every store size.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.columns import ScoringRow
from graphmem.indexes.row_ids import RowIds
from graphmem.models import Hit, MemoryFilter, RecallWarning, stored_time, utcnow
from graphmem.recall.config import RecallConfig
from graphmem.recall.query import ParsedQuery, parse_query
from graphmem.storage.protocols import PassageMatch, Store
from graphmem.text import content_terms, query_text, tokens


@dataclass
class Candidate:
    memory_id: str
    cosine: float | None = None
    passage: PassageMatch | None = None  # its passages (graphmem.passages)
    bm25: float = 0.0
    vector_rank: int | None = None
    keyword_rank: int | None = None
    features: dict[str, float] = field(default_factory=dict)


Ranked = list[tuple[Candidate, float]]  # best first


@dataclass
class Search:
    """A query's candidates ranked, before any memory is read, and what recall says of them."""

    query: str
    ranked: Ranked
    config: RecallConfig  # as it scored: `rank`
    warnings: list[RecallWarning]
    degraded: bool  # the query could not be embedded: keyword scores only
    vector: npt.NDArray[np.float32] | None
    space: EmbeddingSpace | None


def _vector_candidates(
    store: Store,
    vector: npt.NDArray[np.float32],
    space: EmbeddingSpace,
    allowed: set[str] | None,
    top: int,
    mask: npt.NDArray[np.bool_] | None = None,
    *,
    passages: bool = False,
) -> tuple[list[tuple[str, float]], dict[str, PassageMatch], RowIds, npt.NDArray[np.float32]]:
    """The `top` memories nearest the query, by their own vector or, with `passages`, by the
    better of it and their best passage's; and the passages of every memory looked at."""
    ids, matrix = store.vectors.matrix(space)
    if not len(ids) or top <= 0:
        return [], {}, ids, matrix
    if allowed is not None:
        listed = np.fromiter((i in allowed for i in ids), dtype=bool, count=len(ids))
        mask = listed if mask is None else mask[: len(listed)] & listed[: len(mask)]
    hits = store.vectors.nearest(space, vector, top, mask)
    if not passages:
        return hits, {}, ids, matrix
    best = dict(hits)
    # a memory reached by a passage alone: its own vector scores below every hit's, so below
    # the passage's whenever that passage makes the top
    reached = [
        memory_id
        for memory_id in store.vectors.nearest_passages(space, vector, top)
        if memory_id not in best and (allowed is None or memory_id in allowed)
    ]
    found = store.vectors.passage_scores(space, vector, [*best, *reached])
    for memory_id, match in found.items():
        best[memory_id] = max(best.get(memory_id, match.best), match.best)
    ranked = sorted(best.items(), key=lambda pair: pair[1], reverse=True)
    return ranked[:top], found, ids, matrix


WIDEN = 4  # how many more candidates to fetch when a filter will drop some
MIN_SPREAD = 0.3  # cosine spread that min-max scaling may stretch to the full 0..1


def scaled(values: dict[str, float]) -> dict[str, float]:
    """Min-max to 0..1 over the candidates, but never stretching a spread smaller than
    MIN_SPREAD: with a handful of candidates, two near-equal cosines must stay near-equal."""
    if not values:
        return {}
    high = max(values.values())
    low = min(min(values.values()), high - MIN_SPREAD)
    if high - low < 1e-9:
        return {k: 1.0 if high > 0 else 0.0 for k in values}
    return {k: (v - low) / (high - low) for k, v in values.items()}


def rank(
    store: Store,
    query: str,
    vector: npt.NDArray[np.float32] | None,
    space: EmbeddingSpace | None,
    filters: MemoryFilter,
    config: RecallConfig,
    *,
    clues: Callable[[Collection[str]], Mapping[str, float]] | None = None,
) -> tuple[Ranked, RecallConfig]:
    """Every candidate with its score, best first, and the recipe as it scored them (a question
    after several things weighs the features otherwise). `clues`: given the candidates, memory id ->
    strength of the answer hop's clue in it (graph.multihop), fused with `config.w_answer`; a
    clue outside the candidates joins them if it passes the filters."""
    # list and recall hide archived memories unless asked; filter only when something is hidden
    restricted = not filters.is_empty() or store.memories.has_archived()
    only = filters if restricted else None

    positions: RowIds | None = None
    matrix: npt.NDArray[np.float32] | None = None
    vector_hits: list[tuple[str, float]] = []
    passage_hits: dict[str, PassageMatch] = {}
    want = config.vector_candidates
    valid: npt.NDArray[np.bool_] | None = None
    widen = restricted
    if vector is not None and space is not None and want > 0:
        if filters.as_of is not None:  # the as-of window is applied inside the scan
            valid = store.memories.valid_at_mask(space, filters.as_of)
            widen = not filters.model_copy(update={"as_of": None}).is_empty()
        # other filters run after the scan, over a wider top (cost grows with the candidates)
        vector_hits, passage_hits, positions, matrix = _vector_candidates(
            store,
            vector,
            space,
            None,
            want * WIDEN if widen else want,
            valid,
            passages=config.needs_passages,
        )
    keyword_hits: list[tuple[str, float]] = []
    if config.needs_keywords:  # FTS cannot filter either: ask for more when filters drop some
        top = config.keyword_candidates * (2 if restricted else 1)
        keyword_hits = store.memories.keyword_search(query_text(query), top=top)
    if not vector_hits and not keyword_hits:
        return [], config
    # one round trip fetches the scoring rows of the candidates that pass the filters
    rows = store.memories.scoring_rows([i for i, _ in vector_hits + keyword_hits], only)
    passed = [(i, s) for i, s in vector_hits if i in rows]
    selective = widen and len(passed) < want and len(vector_hits) == want * WIDEN
    if selective and vector is not None and space is not None:
        # a very selective filter: scan only the memories it allows
        allowed = store.memories.matching_ids(filters)
        passed, passage_hits, positions, matrix = _vector_candidates(
            store, vector, space, allowed, want, valid, passages=config.needs_passages
        )
        rows.update(store.memories.scoring_rows([i for i, _ in passed if i not in rows], only))

    candidates: dict[str, Candidate] = {}
    for rank, (memory_id, _) in enumerate(passed[:want]):
        candidates[memory_id] = Candidate(memory_id, vector_rank=rank)
    ranked = [(i, s) for i, s in keyword_hits if i in rows][: config.keyword_candidates]
    for rank, (memory_id, score) in enumerate(ranked):
        cand = candidates.setdefault(memory_id, Candidate(memory_id))
        cand.bm25, cand.keyword_rank = score, rank
    if not candidates:
        return [], config
    rows = {k: rows[k] for k in candidates}
    if matrix is not None and vector is not None and positions is not None:
        # every candidate's own cosine, and the best passage's of those not looked at yet
        located = positions.within(list(candidates), len(matrix))
        if located:
            sims = matrix[[row for _, row in located]] @ vector
            for (memory_id, _), sim in zip(located, sims.tolist(), strict=True):
                candidates[memory_id].cosine = sim
        if config.needs_passages and space is not None:
            looked = {i for i, _ in vector_hits} | {i for i, _ in passed}
            unseen = [i for i in candidates if i not in looked]
            passage_hits = {**passage_hits, **store.vectors.passage_scores(space, vector, unseen)}
            for memory_id, cand in candidates.items():
                cand.passage = passage_hits.get(memory_id)

    # as of a past date there is no "superseded" yet: every version is judged as it stood then
    judge = filters.as_of is None
    parsed = parse_query(query)
    if parsed.many:
        config = config.for_many()
    scored = _score(parsed, candidates, rows, config, judge_lifecycle=judge)
    # a question after several things wants them in its top k, not each beside its neighbour
    lend = config.w_neighbor_many if parsed.many else config.w_neighbor
    if lend > 0:
        scored = _with_neighbours(store, scored, rows, lend)
    if config.w_session > 0:
        scored = _with_session(scored, rows, config.w_session)
    if config.question_factor != 1.0:  # after lending: a question still lends to its answer
        scored = [
            (cand, score * config.question_factor if rows[cand.memory_id].asks else score)
            for cand, score in scored
        ]
    if clues is not None and config.w_answer > 0:
        found = clues(rows.keys())
        if found:
            scored = _with_clues(store, scored, rows, found, config.w_answer, only)
    scored.sort(key=lambda pair: pair[1], reverse=True)
    if judge and scored:
        # canonical knowledge comes first whenever it is relevant at all (within a set share of
        # the best score); the rest keep their order
        bar = scored[0][1] * config.canonical_relevance
        scored.sort(
            key=lambda pair: rows[pair[0].memory_id].lifecycle == "canonical" and pair[1] >= bar,
            reverse=True,
        )
    return scored, config


def hydrate(
    store: Store, ranked: Ranked, filters: MemoryFilter, config: RecallConfig, *, explain: bool
) -> list[Hit]:
    """Hits of the ranked candidates, with their memories (the costly part: ~35 us each)."""
    memories = store.memories.get_many([cand.memory_id for cand, _ in ranked])
    hits = []
    for cand, score in ranked:
        if cand.memory_id not in memories:  # deleted since it was scored
            continue
        hits.append(
            Hit(
                memory=memories[cand.memory_id],
                score=round(score, 6),
                explain=_explain(cand, filters, config) if explain else None,
            )
        )
    return hits


def _with_neighbours(
    store: Store,
    scored: list[tuple[Candidate, float]],
    rows: dict[str, ScoringRow],
    weight: float,
) -> list[tuple[Candidate, float]]:
    """Lend each conversation turn part of the score of the turn stored just before or after
    it in the same session: between people, an answer sits next to the question it answers.
    Other memories (notes, one person's requests to an assistant) neither lend nor borrow:
    LongMemEval's user turns, stored one after another, lose ndcg_any@5 by it (0.925 -> 0.912)."""
    sessions = sorted({r.session_id for r in rows.values() if r.session_id and r.turn})
    if not sessions:
        return scored
    base = {cand.memory_id: score for cand, score in scored}
    position: dict[str, tuple[list[str], int]] = {}
    for members in store.memories.session_order(sessions).values():
        for index, memory_id in enumerate(members):
            if memory_id in base:
                position[memory_id] = (members, index)
    out = []
    for cand, score in scored:
        best = 0.0
        if cand.memory_id in position and rows[cand.memory_id].turn:
            members, index = position[cand.memory_id]
            around = members[max(index - 1, 0) : index] + members[index + 1 : index + 2]
            best = max((base[m] for m in around if m in base and rows[m].turn), default=0.0)
        cand.features["neighbor"] = best
        out.append((cand, score + weight * best))
    return out


def _with_clues(
    store: Store,
    scored: list[tuple[Candidate, float]],
    rows: dict[str, ScoringRow],
    clues: Mapping[str, float],
    weight: float,
    only: MemoryFilter | None,
) -> list[tuple[Candidate, float]]:
    """Add `weight` x the clue's strength x the best score: a list question's answers share
    neither words nor much meaning with it, but they name its person beside the kind of thing
    it asks for. A clue that recall did not gather joins with the clue alone (its scoring row
    is added to `rows`)."""
    top = max((score for _, score in scored), default=0.0) or 1.0
    known = {cand.memory_id for cand, _ in scored}
    rows.update(store.memories.scoring_rows([m for m in clues if m not in known], only))
    out = list(scored) + [(Candidate(m), 0.0) for m in clues if m in rows and m not in known]
    for i, (cand, score) in enumerate(out):
        strength = clues.get(cand.memory_id, 0.0)
        if strength:
            cand.features["clue"] = strength
            out[i] = (cand, score + weight * top * strength)
    return out


def _with_session(
    scored: list[tuple[Candidate, float]], rows: dict[str, ScoringRow], weight: float
) -> list[tuple[Candidate, float]]:
    """Lend each candidate a share of the best score in its session: a conversation's session
    stays on one subject, so the turns around a strong match are likelier answers than turns
    elsewhere that share a word with the question. A session with one candidate lends nothing:
    that candidate would only borrow its own score (a session summary among notes topped
    queries it matched no better than they did)."""
    best_in: dict[str, float] = {}
    members: Counter[str] = Counter()
    for cand, score in scored:
        session = rows[cand.memory_id].session_id
        if session:
            best_in[session] = max(best_in.get(session, 0.0), score)
            members[session] += 1
    top = max((score for _, score in scored), default=0.0)
    if top <= 0:
        return scored
    out = []
    for cand, score in scored:
        session = rows[cand.memory_id].session_id
        share = best_in[session] / top if session and members[session] > 1 else 0.0
        cand.features["session"] = share
        out.append((cand, score + weight * share))
    return out


def _score(
    parsed: ParsedQuery,
    candidates: dict[str, Candidate],
    rows: dict[str, ScoringRow],
    config: RecallConfig,
    *,
    judge_lifecycle: bool = True,
) -> list[tuple[Candidate, float]]:
    terms = content_terms(parsed.text)
    now = stored_time(utcnow())  # rows hold naive UTC
    cos = scaled(
        {
            k: _similarity(c, rows[k], config)
            for k, c in candidates.items()
            if c.cosine is not None or c.passage is not None
        }
    )
    top_bm25 = max((c.bm25 for c in candidates.values()), default=0.0)
    out = []
    for key, cand in candidates.items():
        memory = rows[key]
        f = cand.features
        f["cosine"] = cos.get(key, 0.0)
        f["bm25"] = cand.bm25 / top_bm25 if top_bm25 > 0 else 0.0
        have = memory.tokens
        f["terms"] = sum(t in have for t in terms) / len(terms) if terms else 0.0
        title = set(tokens(memory.title)) if memory.title else set()
        f["title"] = sum(t in title for t in terms) / len(terms) if terms else 0.0
        f["names"] = (
            sum(n in have for n in parsed.names) / len(parsed.names) if parsed.names else 0.0
        )
        # spoken by someone the query names: a turn stored as "Caroline: ..." opens with her name
        f["speaker"] = float(memory.search_text.partition(" ")[0] in parsed.names)
        f["date"] = max(
            (
                max(0.0, 1.0 - span.distance_days(memory.created_at) / config.date_window_days)
                for span in parsed.dates
            ),
            default=0.0,
        )
        age_days = max((now - memory.created_at).total_seconds() / 86400, 0.0)
        f["recency"] = math.pow(0.5, age_days / config.recency_half_life_days)
        f["importance"] = memory.importance
        f["layer"] = config.layer_value.get(memory.layer, 0.0)
        f["asks"] = float(memory.asks)
        f["lifecycle"] = (
            config.lifecycle_factor.get(memory.lifecycle, 1.0) if judge_lifecycle else 1.0
        )
        if config.fusion == "rrf":
            base = sum(
                1.0 / (config.rrf_k + rank + 1)
                for rank in (cand.vector_rank, cand.keyword_rank)
                if rank is not None
            )
        else:
            base = (
                config.w_cosine * f["cosine"]
                + config.w_bm25 * f["bm25"]
                + config.w_terms * f["terms"]
                + config.w_title * f["title"]
                + config.w_names * f["names"]
                + config.w_speaker * f["speaker"]
                + config.w_date * f["date"]
                + config.w_recency * f["recency"]
                + config.w_importance * f["importance"]
                + config.w_layer * f["layer"]
            )
        out.append((cand, base * f["lifecycle"]))
    return out


def _similarity(cand: Candidate, row: ScoringRow, config: RecallConfig) -> float:
    """The memory's cosine, lifted toward its best passage's by the recipe's share: all the way
    for a note, half way for a conversation turn, whose short sentences lean on each other
    (LoCoMo recall@10 0.821 all the way, 0.836 half way). The best of many passages is high
    by chance, so past `passage_full_count` the lift shrinks in proportion (LongMemEval's long
    pasted documents had been outranking the user's own turns)."""
    own, passage = cand.cosine, cand.passage
    if passage is None:
        return own if own is not None else 0.0
    if own is None:
        return passage.best
    share = config.w_passage_turn if row.turn else config.w_passage
    share *= min(1.0, config.passage_full_count / passage.total)
    return own + share * max(passage.best - own, 0.0)


def _explain(cand: Candidate, filters: MemoryFilter, config: RecallConfig) -> dict[str, Any]:
    found_by = [
        name
        for name, rank in (("vector", cand.vector_rank), ("keyword", cand.keyword_rank))
        if rank is not None
    ] + (["answer_hop"] if "clue" in cand.features else [])
    return {
        "recipe": config.name,
        "found_by": found_by,
        "vector_rank": cand.vector_rank,
        "keyword_rank": cand.keyword_rank,
        "cosine_raw": None if cand.cosine is None else round(cand.cosine, 6),
        "passage_raw": None if cand.passage is None else round(cand.passage.best, 6),
        "passages": 0 if cand.passage is None else cand.passage.total,
        "bm25_raw": round(cand.bm25, 6),
        "features": {k: round(v, 6) for k, v in cand.features.items()},
        "weights": {
            "cosine": config.w_cosine,
            "bm25": config.w_bm25,
            "terms": config.w_terms,
            "title": config.w_title,
            "names": config.w_names,
            "date": config.w_date,
            "speaker": config.w_speaker,
            "neighbor": config.w_neighbor,
            "neighbor_many": config.w_neighbor_many,
            "session": config.w_session,
            "recency": config.w_recency,
            "importance": config.w_importance,
            "layer": config.w_layer,
            "clue": config.w_answer,
            "passage": config.w_passage,
            "passage_turn": config.w_passage_turn,
        },
        "question_factor": config.question_factor,
        "filters": filters.model_dump(exclude_defaults=True),
    }
