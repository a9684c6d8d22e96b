"""UpkeepOps, the steward's upkeep beside its runs, a service of GraphMemory: sweeping old unused memory into the archive,
recounting references, and sedimentation (graphmem.steward.sediment). Each is undone by its
run, as a steward run is."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from graphmem.ids import new_id
from graphmem.models import utcnow
from graphmem.service_context import Service, ServiceContext
from graphmem.steward import sediment
from graphmem.steward.models import (
    Layer,
    ReferenceReport,
    SedimentMove,
    SedimentReport,
    SweepReport,
)

if TYPE_CHECKING:
    from graphmem.steward.ops import StewardOps


class UpkeepOps(Service):
    def __init__(self, context: ServiceContext, steward: StewardOps) -> None:
        """The steward's policy says how old, how little used and how referenced."""
        super().__init__(context)
        self._steward = steward

    # -- sweeping, references --------------------------------------------------------------------

    def sweep_archive(self, *, dry_run: bool = True, actor: str = "user") -> SweepReport:
        """Archive (never delete) old episodic and working memory of little value, by policy:
        older than `sweep_days`, at most `sweep_max_importance`, never used, referenced by
        nothing. Undo with the report's run."""
        policy = self._steward.steward_policy()
        self.context.usage.flush()
        before = utcnow() - timedelta(days=policy.sweep_days)
        found = self.store.steward.sweepable(
            before=before, max_importance=policy.sweep_max_importance
        )
        report = SweepReport(
            dry_run=dry_run, archived=[memory_id for memory_id, _, _ in found],
            policy={"sweep_days": policy.sweep_days,
                    "sweep_max_importance": policy.sweep_max_importance},
        )  # fmt: skip
        if dry_run or not found:
            return report
        report.run = new_id()
        for memory_id, kind, created in found:
            before_state = {"memories": self.store.steward.memory_state([memory_id])}
            self.store.knowledge.set_fields(
                memory_id,
                {"lifecycle": "archived", "updated_at": utcnow(),
                 "lifecycle_reason": f"swept: {kind} memory from {created.date()}, never used"},
            )  # fmt: skip
            after = {
                "edges": [],
                "kind": "sweep",
                "memories": self.store.steward.memory_state([memory_id]),
            }
            self.store.steward.audit_step(
                actor=actor, action="steward:archive", target=memory_id, item=None,
                run=report.run, before=before_state, after=after,
            )  # fmt: skip
        return report

    def recount_references(self) -> ReferenceReport:
        """Recompute each live memory's reference count from the graph (what other knowledge
        points at it), kept as `reference_count`."""
        counts = self.store.steward.reference_counts()
        self.store.steward.write_reference_counts(counts)
        live = self.store.steward.count_live()
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
        return ReferenceReport(
            memories=live, referenced=sum(1 for n in counts.values() if n > 0),
            top=[{"id": memory_id, "references": n} for memory_id, n in top],
        )  # fmt: skip

    # -- sedimentation ---------------------------------------------------------------------------

    def sediment_cycle(self, *, dry_run: bool = True, actor: str = "user") -> SedimentReport:
        """Move live memories a layer up by age, targeted use and references, or down by
        disuse (the policy's `sediment_*`); unless `dry_run`, undone by the report's run."""
        self.context.usage.flush()  # the latest uses count
        return sediment.cycle(
            self.store, self._steward.steward_policy(), dry_run=dry_run, actor=actor
        )

    def promote_sediment(
        self, memory_id: str, *, layer: Layer | None = None, note: str | None = None,
        actor: str = "user",
    ) -> SedimentMove:  # fmt: skip
        """One layer up, or up to `layer`; undone by the move's run."""
        return sediment.by_hand(self.store, memory_id, up=True, layer=layer, note=note, actor=actor)

    def demote_sediment(
        self, memory_id: str, *, layer: Layer | None = None, note: str | None = None,
        actor: str = "user",
    ) -> SedimentMove:  # fmt: skip
        """One layer down, or down to `layer`; undone by the move's run."""
        return sediment.by_hand(
            self.store, memory_id, up=False, layer=layer, note=note, actor=actor
        )
