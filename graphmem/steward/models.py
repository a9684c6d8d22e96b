"""What the steward finds, files and does, at every boundary: findings, runs, the inbox, the
policy, and what an undo reverted."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from graphmem.models import Layer as Layer  # re-exported: the steward models name layers
from graphmem.models import Model, UtcDateTime

StewardScope = Literal[
    "duplicates", "conflicts", "stale", "canonical", "orphans", "entities", "all"
]
STEWARD_SCOPES: tuple[str, ...] = StewardScope.__args__  # type: ignore[attr-defined]
FindingKind = Literal[
    # duplicates: same kind and context, close in meaning, naming the same things
    "exact_duplicate",  # the same text once spaces, case and punctuation are set aside
    "near_duplicate",  # nearly the same words
    "similar",  # the same thing in other words: for a look before merging
    # conflicts
    "fact_conflict",  # two live memories give one subject and predicate different objects
    "canonical_conflict",  # two canonical entries on one topic
    "decision_dead_end",  # an active decision and an active dead end about one approach
    # stale
    "drifted_citation",  # a cited file changed or is gone since the memory was verified
    "unverified",  # knowledge neither verified nor used for `stale_days`
    "expired_working",  # working memory past its time to live
    "live_middle",  # a superseded memory still live
    # canonical
    "canonical_candidate",  # verified, used and referenced: worth making canonical
    # orphans
    "orphan_entity",  # an entity nothing mentions any more
    "orphan_review_item",  # a pending review item whose memory is gone
    # entities: resolution's likely mistakes, for a person to decide (graphmem/steward/entities.py)
    "same_entity",  # two entities that are likely one thing
    "wrong_merge",  # a name one entity took in that likely names another thing
]
FINDING_KINDS: tuple[str, ...] = FindingKind.__args__  # type: ignore[attr-defined]
SCOPE_OF: dict[str, str] = {
    "exact_duplicate": "duplicates", "near_duplicate": "duplicates", "similar": "duplicates",
    "fact_conflict": "conflicts", "canonical_conflict": "conflicts",
    "decision_dead_end": "conflicts", "drifted_citation": "stale", "unverified": "stale",
    "expired_working": "stale", "live_middle": "stale", "canonical_candidate": "canonical",
    "orphan_entity": "orphans", "orphan_review_item": "orphans",
    "same_entity": "entities", "wrong_merge": "entities",
}  # fmt: skip
FindingAction = Literal[
    "merge",
    "mark_outdated",
    "supersede",
    "promote",
    "verify",
    "archive",
    "prune",
    "dismiss_item",
    "merge_entities",
    "split_entity",
]
FindingStatus = Literal["proposed", "pending", "applied", "dismissed"]
FINDING_STATUSES: tuple[str, ...] = FindingStatus.__args__  # type: ignore[attr-defined]
DEFAULT_AUTO: tuple[FindingKind, ...] = ("exact_duplicate", "expired_working")
FINDINGS_LISTED = 1000  # a run lists this many of what it filed; its counts cover all
# what the extractors name with one object at a time (extractors/rules_extractor.py)
SINGLE_VALUED: tuple[str, ...] = ("owned_by", "deployed_to", "migrated_to", "migrated_from")
LAYERS: tuple[str, ...] = Layer.__args__  # type: ignore[attr-defined]  # bottom to top
InboxSort = Literal["confidence", "newest", "oldest"]
InboxResolution = Literal["apply", "dismiss"]


class Finding(Model):
    """One thing the steward found, the evidence for it, and what it proposes to do."""

    id: str
    run: str = Field(description="the run that filed it")
    kind: FindingKind
    scope: str = Field(
        description="duplicates | conflicts | stale | canonical | orphans | entities"
    )
    targets: list[str] = Field(
        description="what it is about: memory ids (for a merge, the one to keep first), an "
        "entity's or a review item's id for orphans, entity ids for entities (the one to "
        "keep first)"
    )
    evidence: dict[str, Any] = Field(
        description="the scores and the graph path that show it (cosine, shared entities, facts, "
        "the changed file...)"
    )
    confidence: float = Field(ge=0.0, le=1.0)
    action: FindingAction = Field(description="what applying it does")
    summary: str = Field(description="one line a person can judge it by")
    status: FindingStatus = Field(
        description="proposed (a dry run: not filed), pending (in the inbox, or back in it after "
        "an undo), applied, dismissed"
    )
    auto: bool = Field(default=False, description="applied by the policy, without review")
    error: str | None = Field(
        default=None, description="why applying it failed last time (it stays pending)"
    )
    note: str | None = None
    created_at: UtcDateTime
    resolved_at: UtcDateTime | None = None
    resolved_by: str | None = None


class StewardRun(Model):
    """What one run of the steward looked at, found, applied and filed."""

    id: str
    scope: StewardScope
    dry_run: bool
    context: str | None = None
    service: str | None = None
    actor: str
    started_at: UtcDateTime
    finished_at: UtcDateTime | None = None
    seconds: float = 0.0
    found: dict[str, int] = Field(
        default_factory=dict, description="findings by kind, known ones included"
    )
    filed: int = Field(default=0, description="new findings put in the inbox")
    applied: int = Field(default=0, description="findings the policy applied on its own")
    failed: int = Field(default=0, description="findings the policy tried to apply and could not")
    known: int = Field(
        default=0,
        description="findings already in the inbox or resolved, with the same evidence: not "
        "filed again",
    )
    findings: list[Finding] = Field(
        default_factory=list,
        description="what this run filed or applied (a dry run: what it would), best first; "
        "at most the run's `listed`",
    )
    unlisted: int = Field(
        default=0,
        description="findings past `listed`: counted above, not listed here (the inbox pages "
        "through them)",
    )


class InboxPage(Model):
    items: list[Finding]
    pending: int = Field(description="pending findings in the whole inbox, not only these")
    by_kind: dict[str, int] = Field(
        default_factory=dict, description="pending findings by kind, in the whole inbox"
    )


class StewardPolicy(Model):
    """Which findings apply on their own, the thresholds detection uses, and the schedule."""

    auto_apply: list[FindingKind] = Field(
        default_factory=lambda: list(DEFAULT_AUTO),
        description="finding kinds applied without review",
    )
    duplicate_cosine: float = Field(
        default=0.90, ge=0.5, le=1.0, description="cosine from which two memories may be one"
    )
    duplicate_overlap: float = Field(
        default=0.4,
        ge=0.0,
        le=1.0,
        description="share of their words two duplicates have in common at least: below it, a "
        "close cosine is one topic, not one statement",
    )
    near_duplicate_cosine: float = Field(
        default=0.97,
        ge=0.5,
        le=1.0,
        description="cosine from which two duplicates are near duplicates (with the word overlap)",
    )
    near_duplicate_overlap: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="share of their words near duplicates have in common",
    )
    conflict_cosine: float = Field(
        default=0.80,
        ge=0.0,
        le=1.0,
        description="cosine from which two canonical entries, or a decision and a dead end, are "
        "about one thing",
    )
    single_valued: list[str] = Field(
        default_factory=lambda: list(SINGLE_VALUED),
        description="predicates a subject holds one object of at a time: two memories giving "
        'one subject two objects of these conflict ("uses" or "has" hold several at once)',
    )
    stale_days: int = Field(
        default=180, ge=1, description="knowledge neither verified nor used for this long"
    )
    working_ttl_hours: float = Field(
        default=72.0, gt=0, description="working memory older than this has expired"
    )
    canonical_min_accesses: int = Field(
        default=5, ge=1, description="recalls and reads that make a memory a canonical candidate"
    )
    sweep_days: int = Field(
        default=365, ge=1, description="sweep_archive: episodic and working memory older than this"
    )
    sweep_max_importance: float = Field(
        default=0.3,
        ge=0.0,
        le=1.0,
        description="sweep_archive: only memories at most this important (and never used)",
    )
    entity_suggestions: int = Field(
        default=200,
        ge=0,
        description="entity suggestions (same_entity, wrong_merge) a run files at most, the "
        "likeliest: the rest wait for a later run; 0: none",
    )
    schedule_hours: float = Field(
        default=24.0,
        ge=0,
        description="the owner runs the steward this often (and after a session closes); 0: never",
    )
    sediment_settle_hours: float = Field(
        default=24.0,
        gt=0,
        description="sedimentation: a surface memory older than this settles to episodic",
    )
    sediment_semantic_uses: int = Field(
        default=3,
        ge=1,
        description="sedimentation: targeted uses that lift an episodic memory to semantic (one "
        "reference does too)",
    )
    sediment_semantic_days: float = Field(
        default=7.0,
        ge=0,
        description="sedimentation: ... once it is at least this many days old",
    )
    sediment_character_uses: int = Field(
        default=10,
        ge=1,
        description="sedimentation: targeted uses that, with two references, lift a semantic "
        "memory to character (canonical ones rise without)",
    )
    sediment_disuse_days: float = Field(
        default=180.0,
        gt=0,
        description="sedimentation: a semantic or character memory (not canonical) neither used "
        "nor moved for this long sinks one layer; a layer set by hand holds this long",
    )

    @model_validator(mode="after")
    def _ordered(self) -> StewardPolicy:
        if self.near_duplicate_cosine < self.duplicate_cosine:
            raise ValueError("near_duplicate_cosine must be at least duplicate_cosine")
        if self.sediment_character_uses < self.sediment_semantic_uses:
            raise ValueError("sediment_character_uses must be at least sediment_semantic_uses")
        return self


class StewardStatus(Model):
    last_run: StewardRun | None = Field(description="the newest run, without its findings")
    pending: int
    by_kind: dict[str, int] = Field(description="pending findings by kind")
    policy: StewardPolicy
    next_run_at: UtcDateTime | None = Field(
        default=None, description="when the owner runs the steward next (None: not scheduled)"
    )


class AuditEntry(Model):
    """One audited change: who did what to which memory, when, and whether it was undone."""

    id: str
    actor: str
    action: str = Field(description="curate:ACTION by hand, steward:ACTION, review:..., ...")
    target: str | None = None
    target_label: str | None = Field(
        default=None, description="the memory's title or the start of its text; None once gone"
    )
    item: str | None = Field(default=None, description="the finding or review item, if any")
    run: str | None = None
    at: UtcDateTime
    undone_at: UtcDateTime | None = None
    undoable: bool = Field(default=False, description="steward_undo(id) can put it back")


class AuditPage(Model):
    """The newest audited changes, newest first."""

    entries: list[AuditEntry] = Field(default_factory=list)


class UndoReport(Model):
    """What an undo reverted: the audit records, and the memories and findings restored."""

    undone: list[str] = Field(default_factory=list, description="audit records reverted")
    memories: list[str] = Field(default_factory=list, description="memories restored")
    entities: list[str] = Field(
        default_factory=list, description="entities put back (a merge, rename, split, alias)"
    )
    findings: list[str] = Field(default_factory=list, description="findings back in the inbox")
    skipped: list[dict[str, Any]] = Field(
        default_factory=list, description="records that could not be reverted: {audit, why}"
    )


class SweepReport(Model):
    """What `sweep_archive` archived (a dry run: would archive); undo with the run's id."""

    run: str | None = Field(default=None, description="the run to undo it with (not in a dry run)")
    dry_run: bool
    archived: list[str] = Field(default_factory=list)
    policy: dict[str, float] = Field(description="the age and importance it swept by")


class ReferenceReport(Model):
    """Reference counts as `recount_references` recomputed them from the graph."""

    memories: int = Field(description="live memories counted")
    referenced: int = Field(description="of them, referenced at least once")
    top: list[dict[str, Any]] = Field(
        default_factory=list, description="the most referenced: {id, references}"
    )


class ConflictsReport(Model):
    """Open conflicts: what the steward finds now, each saying whether it waits in the inbox."""

    conflicts: list[Finding]
    in_inbox: int = Field(description="of them, already pending in the inbox")


SedimentReason = Literal[
    "settled",  # surface -> episodic: it outlived `sediment_settle_hours`
    "used",  # episodic -> semantic: targeted uses or a reference, and old enough
    "canonical",  # semantic -> character: canonical knowledge
    "relied_on",  # semantic -> character: many targeted uses and references
    "disused",  # down one layer: neither used nor moved for `sediment_disuse_days`
    "by_hand",  # promote_sediment / demote_sediment
]


class SedimentMove(Model):
    """One memory moved (a dry run: to be moved) from one layer to the next."""

    memory: str = Field(description="the memory's id")
    title: str = Field(description="its title, or the start of its content")
    from_layer: Layer
    to_layer: Layer
    reason: SedimentReason
    note: str | None = Field(default=None, description="why, when moved by hand")
    run: str | None = Field(
        default=None, description="moved by hand: the id to undo it with (steward_undo)"
    )


class SedimentReport(Model):
    """What `sediment_cycle` moved (a dry run: would move); undo with the run's id."""

    run: str | None = Field(default=None, description="the run to undo it with (not in a dry run)")
    dry_run: bool
    looked_at: int = Field(description="live memories considered")
    moves: list[SedimentMove] = Field(
        default_factory=list, description="the moves, up to 1,000 (`counts` has them all)"
    )
    unlisted: int = Field(default=0, description="moves left out of `moves`")
    counts: dict[str, int] = Field(
        default_factory=dict, description="moves by step: 'surface->episodic': 12, ..."
    )
    layers: dict[str, int] = Field(
        default_factory=dict,
        description="live memories in each layer after the cycle (a dry run: as they would be)",
    )
    seconds: float = 0.0
