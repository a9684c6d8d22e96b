"""The steward's records (runs, findings, the audit trail and its undo, the policy) and the
reads its detection and sedimentation make."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import pyarrow as pa

POLICY_KEY = "steward_policy"


class Steward(Protocol):
    # -- runs and findings ------------------------------------------------------------------

    def add_run(self, fields: dict[str, Any]) -> None:
        """A run begins: id, scope, dry_run, context, service, actor, started_at."""
        ...

    def finish_run(self, run_id: str, *, finished_at: datetime, report: dict[str, Any]) -> None: ...

    def run_report(self, run_id: str | None) -> dict[str, Any] | None:
        """A run's stored report (the newest run's when `run_id` is None, then None when
        there is no run); NotFound for an unknown run."""
        ...

    def last_run_finished(self) -> datetime | None: ...

    def known_findings(self, fingerprints: Sequence[str]) -> dict[str, tuple[str, str, str]]:
        """fingerprint -> (id, status, evidence hash) of the newest finding with it."""
        ...

    def add_findings(self, findings: Sequence[tuple[dict[str, Any], Sequence[str]]]) -> None:
        """Findings (their fields) in bulk, each flagging its memories."""
        ...

    def set_finding(self, finding_id: str, values: dict[str, Any]) -> None: ...

    def finding(self, finding_id: str) -> dict[str, Any]:
        """One finding, its evidence decoded; NotFound when it is not there."""
        ...

    def findings(
        self,
        *,
        status: str | None,
        kind: str | None = None,
        run: str | None = None,
        limit: int,
        sort: str = "confidence",
    ) -> list[dict[str, Any]]:
        """Findings matching every filter given; `sort`: confidence, newest or oldest."""
        ...

    def count_findings(self, status: str = "pending") -> dict[str, int]:
        """Findings with the status, by kind."""
        ...

    # -- the audit trail, and what an undo restores -----------------------------------------

    def audit(
        self,
        *,
        actor: str,
        action: str,
        target: str | None,
        item: str | None,
        before: Any,
        after: Any,
    ) -> None:
        """Who changed what, when, from what to what (JSON of the memory before and after)."""
        ...

    def audit_step(
        self,
        *,
        actor: str,
        action: str,
        target: str | None,
        item: str | None,
        run: str | None,
        before: Any,
        after: Any,
    ) -> str:
        """`audit`, as a step of a steward run; returns the row's id."""
        ...

    def audit_rows(self, run_or_action: str) -> list[dict[str, Any]]:
        """The audit rows of a run, of a finding, or the one row with that id, newest first,
        before and after decoded."""
        ...

    def mark_undone(self, audit_id: str, at: datetime) -> None: ...

    def recent_audit(self, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` audit rows, newest first: id, actor, action, target, item, run,
        at, undone_at (before and after left out)."""
        ...

    def memory_state(self, memory_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The fields a steward action may change, of each memory found, as they are now."""
        ...

    def restore_state(self, memory_id: str, state: dict[str, Any]) -> None:
        """Put back fields `memory_state` read (times may come back from JSON as ISO text)."""
        ...

    def delete_edge(self, rel: str, source: str, target: str) -> None:
        """Undo a MERGED_INTO or SUPERSEDES link the steward made; ValueError for another."""
        ...

    def meta_json(self, key: str) -> dict[str, Any] | None:
        """A JSON document kept under `key` (the policy: POLICY_KEY)."""
        ...

    def set_meta_json(self, key: str, value: dict[str, Any]) -> None: ...

    # -- what detection reads ---------------------------------------------------------------

    def live_memory_rows(
        self, *, context: str | None, service: str | None
    ) -> list[tuple[str, str, str, str | None, str, str | None, str, float, int, datetime]]:
        """(id, kind, type, context, content, title, lifecycle, importance, access count,
        created) of every live memory, sessions' own records left out."""
        ...

    def count_live(self) -> int:
        """Live memories, sessions' own records left out: what detection looks at."""
        ...

    def verified_ids(self, memory_ids: Sequence[str]) -> set[str]:
        """Which of the memories were verified at their last check."""
        ...

    def entity_sets(self, memory_ids: Sequence[str]) -> dict[str, set[str]]:
        """The entities each memory mentions (those with any)."""
        ...

    def live_facts(self) -> list[tuple[str, str, str, str, str, str]]:
        """(memory id, subject id, predicate, object id, subject name, object name) of the
        facts extracted from live memories."""
        ...

    def avoid_pairs(self) -> set[tuple[str, str]]:
        """(decision, dead end) of every avoidance."""
        ...

    def superseded_but_live(self) -> list[tuple[str, str]]:
        """(newer, older) where the older is still live though a live newer one supersedes
        it."""
        ...

    def stale_rows(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, str, datetime | None, datetime | None, datetime]]:
        """Live memories neither verified nor used since `before`, written before it:
        (id, kind, verified_at, accessed_at, created_at)."""
        ...

    def expired_working(
        self, *, before: datetime, context: str | None, service: str | None
    ) -> list[tuple[str, datetime]]:
        """(id, created_at) of live working memories written before `before`."""
        ...

    def reference_counts(self) -> dict[str, int]:
        """What other knowledge points at each live memory: avoidance, supersession and merge
        links in, and the entities it shares with canonical entries."""
        ...

    def write_reference_counts(self, counts: dict[str, int]) -> None:
        """Replace every memory's reference count (0 for those not in `counts`)."""
        ...

    def sweepable(
        self, *, before: datetime, max_importance: float
    ) -> list[tuple[str, str, datetime]]:
        """Live episodic and working memories older than `before`, at most `max_importance`,
        never used and referenced by nothing: (id, type, created_at)."""
        ...

    def orphan_entities(self) -> list[tuple[str, str]]:
        """(id, name) of entities nothing mentions and no fact names."""
        ...

    def entity_names(self) -> list[tuple[str, str, str]]:
        """(id, name, label) of every entity: what entity suggestions compare by name."""
        ...

    def entity_mentions(self) -> list[tuple[str, str, str]]:
        """(memory or chunk id, entity id, the words it used) of every mention by a live
        memory or a document chunk: which names share their texts and neighbours."""
        ...

    def orphan_review_items(self) -> list[tuple[str, str]]:
        """(item id, target) of pending review items whose target memory is gone."""
        ...

    # -- sedimentation ----------------------------------------------------------------------

    def sediment_table(self) -> pa.Table:
        """What the sediment cycle decides by, for every live memory (sessions' own records
        left out): id, layer, layer_at, layer_by, lifecycle, created_at, accessed_at,
        targeted."""
        ...

    def layer_states(
        self, memory_ids: Sequence[str]
    ) -> dict[str, tuple[str | None, datetime | None, str | None]]:
        """(layer, layer_at, layer_by) of each memory found, as stored (None: the surface)."""
        ...

    def set_layers(
        self, layers: Sequence[tuple[str, str | None, datetime | None, str | None]]
    ) -> None:
        """Set (id, layer, layer_at, layer_by) of each memory, in the caller's transaction or
        one of its own; recall's columns follow once it commits."""
        ...
