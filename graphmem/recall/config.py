"""RecallConfig: how candidates are gathered and how their features are fused, as named recipes.

Weights are tuned on eval/ (LoCoMo dev), never by feel; `python -m eval locomo --system NAME`
measures any recipe here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import InvalidInput


class RecallConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "custom"
    vector_candidates: int = Field(default=100, ge=0)
    keyword_candidates: int = Field(default=100, ge=0)
    fusion: Literal["weighted", "rrf"] = "weighted"
    rrf_k: int = 60
    # weighted-sum feature weights (features are scaled to 0..1 per query)
    w_cosine: float = 1.0
    w_bm25: float = 0.5
    w_terms: float = 0.4
    w_title: float = 0.05
    w_names: float = 0.1
    w_speaker: float = 0.4  # the memory is spoken by a person the query names ("Caroline: ...")
    w_session: float = 0.5  # the memory's session holds a strong match (share of the best)
    w_date: float = 0.3
    date_window_days: float = 30.0
    w_neighbor: float = 0.25
    w_neighbor_many: float = 0.125  # w_neighbor for a question after several things
    # how far a memory's best passage (graphmem.passages) lifts its cosine toward the
    # passage's own: 1 = the better of the two; a conversation turn's own share
    w_passage: float = Field(default=1.0, ge=0.0, le=1.0)
    w_passage_turn: float = Field(default=0.5, ge=0.0, le=1.0)
    # the best of more passages than this lifts less, in proportion: it is high by chance
    passage_full_count: int = Field(default=8, ge=1)
    w_recency: float = 0.02
    w_importance: float = 0.02
    # sedimentation's layer (graphmem.steward.sediment), a feature and never a filter: small
    # enough that a new memory at the surface that matches best still ranks first
    # (docs/recall.md#features)
    w_layer: float = Field(default=0.02, ge=0.0)
    layer_value: dict[str, float] = Field(
        default_factory=lambda: {"surface": 0.0, "episodic": 0.0, "semantic": 0.5, "character": 1.0}
    )
    recency_half_life_days: float = 30.0
    # the answer hop's clues (graph.answer_hop), as a share of the best fused score
    w_answer: float = 0.3
    # a conversation turn that ends on a question is less often the answer than the next turn
    question_factor: float = Field(default=0.95, ge=0.0, le=1.0)
    canonical_relevance: float = Field(default=0.5, ge=0.0, le=1.0)
    lifecycle_factor: dict[str, float] = Field(
        default_factory=lambda: {
            "canonical": 1.2,
            "active": 1.0,
            "outdated": 0.6,
            "superseded": 0.5,
            "archived": 0.3,
        }
    )

    # A question after several things (recall.query.asks_for_many: "What pets does Nate
    # have?") shares few words with its answers: the ones it has name the kind of thing
    # ("pets"), which generic turns repeat ("pets bring joy"); in a conversation its answers
    # are its person's own turns. These replace w_speaker, w_bm25 and w_terms for such a
    # question; None keeps them.
    w_speaker_many: float | None = None
    w_bm25_many: float | None = None
    w_terms_many: float | None = None

    def for_many(self) -> RecallConfig:
        """The recipe for a question after several things."""
        pairs = (
            ("w_speaker", self.w_speaker_many),
            ("w_bm25", self.w_bm25_many),
            ("w_terms", self.w_terms_many),
        )
        changed = {name: value for name, value in pairs if value is not None}
        return self.model_copy(update=changed) if changed else self

    @property
    def needs_vectors(self) -> bool:
        return self.vector_candidates > 0 and (self.w_cosine > 0 or self.fusion == "rrf")

    @property
    def needs_passages(self) -> bool:
        return self.needs_vectors and (self.w_passage > 0 or self.w_passage_turn > 0)

    @property
    def needs_keywords(self) -> bool:
        return self.keyword_candidates > 0 and (self.w_bm25 > 0 or self.fusion == "rrf")


# the weights for a question after several things: measured on LoCoMo dev
# (docs/recall.md#features)
_HYBRID = RecallConfig(name="hybrid", w_speaker_many=0.8, w_bm25_many=0.25, w_terms_many=0.2)

RECIPES: dict[str, RecallConfig] = {
    "hybrid": _HYBRID,
    # without the answer hop's clues: no entity queries, for stores where they find nothing
    "hybrid-nograph": _HYBRID.model_copy(update={"name": "hybrid-nograph", "w_answer": 0}),
    "bm25": RecallConfig(
        name="bm25",
        question_factor=1.0,
        w_answer=0,
        vector_candidates=0,
        w_cosine=0,
        w_bm25=1,
        w_terms=0,
        w_title=0,
        w_names=0,
        w_neighbor=0,
        w_neighbor_many=0,
        w_speaker=0,
        w_session=0,
        w_date=0,
        w_recency=0,
        w_importance=0,
        w_layer=0,
    ),
    "vector": RecallConfig(
        name="vector",
        question_factor=1.0,
        w_answer=0,
        keyword_candidates=0,
        w_cosine=1,
        w_bm25=0,
        w_terms=0,
        w_title=0,
        w_names=0,
        w_neighbor=0,
        w_neighbor_many=0,
        w_speaker=0,
        w_session=0,
        w_date=0,
        w_recency=0,
        w_importance=0,
        w_layer=0,
    ),
    "rrf": RecallConfig(name="rrf", fusion="rrf"),
}


def get_recipe(name: str) -> RecallConfig:
    try:
        return RECIPES[name]
    except KeyError:
        raise InvalidInput(
            f"unknown recall recipe {name!r}; known: {', '.join(sorted(RECIPES))}", recipe=name
        ) from None
