"""StewardOps, the service of GraphMemory that tends the store: find duplicates, conflicts, stale entries, canonical candidates and
orphans (graphmem.steward.detect), file them in an inbox, apply what the policy allows, and undo.

- A finding is filed once: one already pending, or resolved, is filed again only when its
  evidence changed (its fingerprint is its scope and targets, its evidence hashed beside it).
- Every change a finding makes writes an Audit row with the run, the state of what it changed
  before, and the edges it made, so `steward_undo` puts a run or one action back exactly.
- Nothing is deleted: a merge archives the copy under MERGED_INTO, retiring keeps the node, and a
  pruned entity is kept whole in its audit row.
- An action that fails leaves its finding pending, with the error.
"""

from __future__ import annotations

import itertools
import json
import time
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from graphmem.embeddings.parallel import single_threaded_blas
from graphmem.errors import (
    Conflict,
    GraphmemError,
    InvalidInput,
    NotFound,
    check_limit,
    validation_message,
)
from graphmem.foreground import FOREGROUND
from graphmem.graph import editing
from graphmem.ids import new_id
from graphmem.models import utcnow
from graphmem.service_context import Service, ServiceContext
from graphmem.steward import detect, sediment
from graphmem.steward.entities import EntityTexts, same_entities, wrong_merges
from graphmem.steward.models import (
    FINDING_KINDS,
    FINDING_STATUSES,
    FINDINGS_LISTED,
    STEWARD_SCOPES,
    ConflictsReport,
    Finding,
    InboxPage,
    StewardPolicy,
    StewardRun,
    StewardStatus,
    UndoReport,
)
from graphmem.storage.protocols import POLICY_KEY
from graphmem.usage import unnoticed

if TYPE_CHECKING:
    from datetime import datetime

    from graphmem.graph.editing import EntityEditOps
    from graphmem.knowledge.ops import KnowledgeOps
    from graphmem.memory_ops import MemoryOps
    from graphmem.steward.schedule import StewardSchedule

_RESOLVED = ("applied", "dismissed")
_LIVE = ("active", "canonical")


class StewardOps(Service):
    def __init__(
        self,
        context: ServiceContext,
        memories: MemoryOps,
        knowledge: KnowledgeOps,
        entity_edits: EntityEditOps,
    ) -> None:
        super().__init__(context)
        self._memories = memories
        self._knowledge = knowledge
        self._entity_edits = entity_edits
        self.schedule: StewardSchedule | None = None  # the owner's (graphmem.steward.schedule)

    def use_schedule(self, schedule: StewardSchedule) -> None:
        """Runs on `schedule` from now on: its next run is in the status, and a closed
        session brings one."""
        self.schedule = schedule

    def session_closed(self) -> None:
        """In the owner, a run soon tends what the session stored."""
        if self.schedule is not None:
            self.schedule.session_closed()

    # -- the policy ----------------------------------------------------------------------------

    def steward_policy(self, updates: dict[str, Any] | None = None) -> StewardPolicy:
        """The policy; with `updates`, those fields changed (validated) and the result kept."""
        current = StewardPolicy.model_validate(self.store.steward.meta_json(POLICY_KEY) or {})
        if not updates:
            return current
        unknown = set(updates) - set(StewardPolicy.model_fields)
        if unknown:
            raise InvalidInput(
                f"unknown policy fields {sorted(unknown)}; known: "
                f"{', '.join(StewardPolicy.model_fields)}"
            )
        try:
            changed = StewardPolicy.model_validate({**current.model_dump(), **updates})
        except ValidationError as exc:
            raise InvalidInput(f"invalid policy: {validation_message(exc)}") from None
        self.store.steward.set_meta_json(POLICY_KEY, changed.model_dump(mode="json"))
        return changed

    # -- a run ---------------------------------------------------------------------------------

    def steward_run(
        self,
        scope: str = "all",
        *,
        dry_run: bool = True,
        context: str | None = None,
        service: str | None = None,
        actor: str = "user",
        listed: int | None = FINDINGS_LISTED,
    ) -> StewardRun:
        """Look for what needs tending in `scope`; unless `dry_run`, file what is new in the inbox
        and apply what the policy lets apply on its own. The run lists the `listed` best of
        what it filed (None: all) and counts the rest: a first run over a large store files
        thousands, which the inbox pages through."""
        if scope not in STEWARD_SCOPES:
            raise InvalidInput(f"scope must be one of {', '.join(STEWARD_SCOPES)}", scope=scope)
        started, clock = utcnow(), time.perf_counter()
        self.context.usage.flush()  # the counts of the latest recalls count
        policy = self.steward_policy()
        run = StewardRun(
            id=new_id(), scope=scope, dry_run=dry_run, context=context,  # type: ignore[arg-type]
            service=service, actor=actor, started_at=started,
        )  # fmt: skip
        with single_threaded_blas(), self.store.background():  # cores stay free for requests
            proposals = self._detect(scope, policy, context=context, service=service, now=started)
        for proposal in proposals:
            run.found[proposal.kind] = run.found.get(proposal.kind, 0) + 1
        known = self.store.steward.known_findings([p.fingerprint for p in proposals])
        fresh = []
        for proposal in proposals:
            seen = known.get(proposal.fingerprint)
            if seen is not None and (seen[1] == "pending" or seen[2] == proposal.evidence_hash):
                run.known += 1
            else:
                fresh.append(proposal)
        fresh.sort(key=lambda p: (-p.confidence, p.kind, p.targets))
        entity_ones = itertools.count(1)  # the likeliest entity suggestions now, more next run
        fresh = [
            p for p in fresh
            if p.scope != "entities" or next(entity_ones) <= policy.entity_suggestions
        ]  # fmt: skip
        shown = len(fresh) if listed is None else max(listed, 0)
        run.unlisted = max(len(fresh) - shown, 0)
        if dry_run:
            run.findings = [_proposed(p, run.id, started) for p in fresh[:shown]]
            return _finished(run, clock)
        self.store.steward.add_run(
            {"id": run.id, "scope": scope, "dry_run": False, "context": context,
             "service": service, "actor": actor, "started_at": started}
        )  # fmt: skip
        filed = []
        for proposal in fresh:
            FOREGROUND.step_aside()
            finding = _proposed(proposal, run.id, started)
            finding.status = "pending"
            filed.append((finding, proposal))
        self.store.steward.add_findings([
            ({**finding.model_dump(exclude={"resolved_at", "resolved_by"}),
              "evidence_hash": proposal.evidence_hash, "fingerprint": proposal.fingerprint},
             proposal.memories)
            for finding, proposal in filed
        ])  # fmt: skip
        for finding, proposal in filed:
            FOREGROUND.step_aside()
            if proposal.kind in policy.auto_apply:
                try:
                    self._apply_finding(finding, actor="steward", run=run.id)
                except GraphmemError as exc:
                    self.store.steward.set_finding(finding.id, {"error": exc.message})
                    finding.error = exc.message
                    run.failed += 1
                else:
                    self.store.steward.set_finding(
                        finding.id,
                        {"status": "applied", "auto": True, "resolved_at": utcnow(),
                         "resolved_by": "steward", "error": None},
                    )  # fmt: skip
                    finding.status, finding.auto = "applied", True
                    run.applied += 1
            if len(run.findings) < shown:
                run.findings.append(finding)
        run.filed = len(fresh)
        _finished(run, clock)
        self.store.steward.finish_run(
            run.id, finished_at=run.finished_at or utcnow(), report=run.model_dump(mode="json")
        )
        return run

    def _detect(
        self,
        scope: str,
        policy: StewardPolicy,
        *,
        context: str | None,
        service: str | None,
        now: datetime,
    ) -> list[detect.Proposal]:
        wants = set(STEWARD_SCOPES) if scope == "all" else {scope}
        found: list[detect.Proposal] = []
        rows = detect.rows_of(self.store.steward.live_memory_rows(context=context, service=service))
        vectors = (
            self._vectors_of([r.id for r in rows]) if wants & {"duplicates", "conflicts"} else {}
        )
        conflicts: list[detect.Proposal] = []
        if wants & {"duplicates", "conflicts"}:
            live = {r.id for r in rows}
            facts = [f for f in self.store.steward.live_facts() if f[0] in live]
            conflicts = detect.fact_conflicts(facts, vectors, policy.single_valued)
        FOREGROUND.step_aside()
        if "duplicates" in wants:
            entities = self.store.steward.entity_sets([r.id for r in rows])
            apart = {frozenset(c.targets) for c in conflicts}  # they disagree: not one note
            found += detect.duplicates(rows, vectors, entities, policy, apart=apart)
        if "conflicts" in wants:
            found += conflicts
            found += detect.topic_conflicts(rows, vectors, self.store.steward.avoid_pairs(), policy)
        FOREGROUND.step_aside()
        if "stale" in wants:
            stale_before, expired_before = detect.stale_before(now, policy)
            found += detect.unverified(
                self.store.steward.stale_rows(
                    before=stale_before, context=context, service=service
                ),
                policy,
            )
            found += detect.expired(
                self.store.steward.expired_working(
                    before=expired_before, context=context, service=service
                ),
                policy,
            )
            live = {r.id for r in rows}
            found += detect.live_middles(
                [(n, o) for n, o in self.store.steward.superseded_but_live() if o in live]
            )
            drift = self._knowledge.drift_scan()
            found += detect.drifted(
                [(i.memory_id, i.path, i.status, i.current_sha256) for i in drift.items
                 if i.memory_id in live]
            )  # fmt: skip
        FOREGROUND.step_aside()
        if "canonical" in wants:
            verified = self.store.steward.verified_ids([r.id for r in rows])
            references = self.store.steward.reference_counts()
            found += detect.canonical_candidates(rows, verified, references, policy)
        if "orphans" in wants and context is None and service is None:
            found += detect.orphans(
                self.store.steward.orphan_entities(), self.store.steward.orphan_review_items()
            )
        if "entities" in wants and context is None and service is None:
            graph = EntityTexts.read(
                self.store.steward.entity_names(), self.store.steward.entity_mentions()
            )
            FOREGROUND.step_aside()
            found += detect.entity_suggestions(same_entities(graph))
            found += detect.entity_suggestions(wrong_merges(graph))
        return found

    def _vectors_of(self, ids: list[str]) -> dict[str, Any]:
        """Each memory's own vector in the store's embedding space (none: nothing to compare)."""
        space = self.embedder.space
        if not self.store.vectors.has_space(space):
            return {}
        row_ids, matrix = self.store.vectors.matrix(space)
        rows = row_ids.rows(ids)
        return {i: matrix[r] for i, r in zip(ids, rows.tolist(), strict=True) if r >= 0}

    # -- applying and undoing ------------------------------------------------------------------

    def _apply_finding(self, finding: Finding, *, actor: str, run: str | None) -> None:
        """Do what the finding proposes, and write its audit row (state before, edges made)."""
        with unnoticed():  # the steward's own reads are not uses
            self._apply_unnoticed(finding, actor=actor, run=run)

    def _apply_unnoticed(self, finding: Finding, *, actor: str, run: str | None) -> None:
        targets = finding.targets
        if finding.action in ("merge_entities", "split_entity"):  # audited as corrections are
            edits = self._entity_edits.audited_as(actor, run, item=finding.id)
            if finding.action == "merge_entities":
                edits.merge_entities(targets[0], targets[1:])
            else:
                evidence = finding.evidence
                edits.split_entity(targets[0], evidence["texts"], name=evidence["name"])
            return
        before: dict[str, Any] = {}
        made: list[list[str]] = []
        if finding.action in ("prune", "dismiss_item"):
            before, made = self._apply_orphan(finding)
        else:
            self._require_live(targets if finding.kind != "live_middle" else targets[:1])
            before = {"memories": self.store.steward.memory_state(targets)}
            if finding.action == "merge":
                kept, *copies = targets
                self._knowledge.merge_duplicates(kept, copies, reason=f"steward: {finding.kind}")
                made = [["MERGED_INTO", copy, kept] for copy in copies]
            elif finding.kind == "live_middle":
                older, newer = targets
                self.store.knowledge.set_fields(
                    older,
                    {"lifecycle": "superseded", "updated_at": utcnow(),
                     "lifecycle_reason": f"superseded by {newer} (steward)"},
                )  # fmt: skip
            elif finding.action in ("supersede", "mark_outdated"):
                older, newer = self._older_newer(targets)
                same_kind = self._memories.get(older).kind == self._memories.get(newer).kind
                self._knowledge.mark_outdated(
                    older,
                    reason=f"steward: {finding.kind}: {newer} is newer",
                    superseded_by=newer if same_kind else None,
                )
                if same_kind:
                    made = [["SUPERSEDES", newer, older]]
            elif finding.action == "archive":
                self.store.knowledge.set_fields(
                    targets[0],
                    {"lifecycle": "archived", "updated_at": utcnow(),
                     "lifecycle_reason": f"steward: {finding.kind}"},
                )  # fmt: skip
            elif finding.action == "promote":
                self._knowledge.promote_to_canonical(targets[0], owner="steward")
            elif finding.action == "verify":
                self._knowledge.verify_entry(
                    targets[0], method="checked from the steward inbox", status="verified",
                    note=finding.summary,
                )  # fmt: skip
        after: dict[str, Any] = {"edges": made, "kind": finding.kind}
        if "memories" in before:
            after["memories"] = self.store.steward.memory_state(targets)
        self.store.steward.audit_step(
            actor=actor, action=f"steward:{finding.action}", target=targets[0], item=finding.id,
            run=run, before=before, after=after,
        )  # fmt: skip

    def _apply_orphan(self, finding: Finding) -> tuple[dict[str, Any], list[list[str]]]:
        target = finding.targets[0]
        if finding.action == "prune":
            entity = self.store.entities.row(target)
            if entity is None:
                raise NotFound(f"no entity with id {target!r}", id=target)
            self.store.entities.delete(target)
            return {"entity": entity}, []
        item = self.store.sessions.review_item(target)
        if item["status"] != "pending":
            raise Conflict(f"review item {target} is already {item['status']}", id=target)
        self.store.sessions.set_item_status(
            target, status="rejected", note="its memory is gone (steward)", actor="steward"
        )
        return {"item": {"id": target, "status": item["status"]}}, []

    def _require_live(self, ids: list[str]) -> None:
        state = self.store.steward.memory_state(ids)
        for memory_id in ids:
            if memory_id not in state:
                raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
            if state[memory_id]["lifecycle"] not in _LIVE:
                raise Conflict(
                    f"{memory_id} is {state[memory_id]['lifecycle']} now: nothing to do",
                    id=memory_id,
                )

    def _older_newer(self, targets: list[str]) -> tuple[str, str]:
        a, b = (self._memories.get(t) for t in targets[:2])
        return (a.id, b.id) if (a.created_at, a.id) <= (b.created_at, b.id) else (b.id, a.id)

    def _state_of(self, ids: list[str]) -> dict[str, Any]:
        return {"memories": self.store.steward.memory_state(ids)}

    def _changed_since(self, after: dict[str, dict[str, Any]]) -> str | None:
        """The first memory whose state is no longer what the action left (edited since)."""
        now = self.store.steward.memory_state(list(after))
        for memory_id, state in after.items():
            if json.dumps(now.get(memory_id), default=str) != json.dumps(state, default=str):
                return memory_id
        return None

    def steward_undo(self, run_or_action: str, *, actor: str = "user") -> UndoReport:
        """Put back what a run, one finding or one audit record of the steward changed, newest
        first. An action whose memories changed since is left as it is (reported as skipped):
        undoing it would wipe the later edit."""
        rows = [
            r
            for r in self.store.steward.audit_rows(run_or_action)
            if r["action"].startswith(("steward:", "curate:"))
        ]
        if not rows:
            raise NotFound(
                f"no steward run or action, nor audited change, {run_or_action!r} to undo",
                id=run_or_action,
            )
        report = UndoReport()
        for row in rows:
            if row["undone_at"] is not None:
                report.skipped.append({"audit": row["id"], "why": "already undone"})
                continue
            before, after = row["before"] or {}, row["after"] or {}
            changed = self._changed_since(after.get("memories", {})) or editing.changed_since(
                self.store, before, after
            )
            moved = set(sediment.moved_since(self.store, after.get("layers", {})))
            if changed or (moved and moved == set(after["layers"])):
                changed = changed or min(moved)
                report.skipped.append(
                    {"audit": row["id"], "why": f"{changed} changed since: undo it by hand"}
                )
                continue
            for memory_id, text in before.get("text", {}).items():  # an edit: embeds again
                self._memories.update(memory_id, **text)
            with self.store.transaction():
                report.memories += sediment.restore(self.store, before.get("layers", {}), moved)
                report.skipped += [
                    {"audit": row["id"], "why": f"{m} moved since: undo it by hand"}
                    for m in sorted(moved)
                ]
                for rel, source, target in after.get("edges", []):
                    self.store.steward.delete_edge(rel, source, target)
                for memory_id, state in before.get("memories", {}).items():
                    self.store.steward.restore_state(memory_id, state)
                    report.memories.append(memory_id)
                if "entity" in before:
                    self.store.entities.restore(before["entity"])
                if "entities" in before:  # a correction of the entity graph
                    editing.undo(self.store, before, after)
                    report.entities += sorted({*before["entities"], *after["entities"],
                                               *before["aliases"].values(),
                                               *(x[2] for x in before["links"])})  # fmt: skip
                if "item" in before:
                    item = before["item"]
                    self.store.sessions.reopen_review_item(item["id"], status=item["status"])
                if row["item"]:
                    self.store.steward.set_finding(
                        row["item"],
                        {"status": "pending", "auto": False, "resolved_at": None,
                         "resolved_by": None, "note": f"undone by {actor}"},
                    )  # fmt: skip
                    report.findings.append(row["item"])
                self.store.steward.mark_undone(row["id"], utcnow())
                self.store.steward.audit_step(
                    actor=actor, action="steward-undo", target=row["target"], item=row["item"],
                    run=None, before={"audit": row["id"]}, after={},
                )  # fmt: skip
            report.undone.append(row["id"])
        report.memories = list(dict.fromkeys(report.memories))
        return report

    # -- the inbox -----------------------------------------------------------------------------

    def steward_inbox(
        self,
        status: str | None = "pending",
        kind: str | None = None,
        limit: int = 50,
        sort: str = "confidence",
    ) -> InboxPage:
        """Findings, best first by default; `status=None` for every status."""
        check_limit(limit)
        if status is not None and status not in FINDING_STATUSES:
            raise InvalidInput(
                f"status must be one of {', '.join(FINDING_STATUSES)}", status=status
            )
        if kind is not None and kind not in FINDING_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(FINDING_KINDS)}", kind=kind)
        if sort not in ("confidence", "newest", "oldest"):
            raise InvalidInput("sort must be confidence, newest or oldest", sort=sort)
        rows = self.store.steward.findings(status=status, kind=kind, limit=limit, sort=sort)
        counts = self.store.steward.count_findings("pending")
        return InboxPage(
            items=[Finding.model_validate(r) for r in rows],
            pending=sum(counts.values()),
            by_kind=counts,
        )

    def steward_inbox_resolve(
        self, item: str, action: str, note: str | None = None, *, actor: str = "user"
    ) -> Finding:
        """`apply` does what the finding proposes; `dismiss` keeps it from being filed again
        until its evidence changes. An action that fails leaves it pending, with the error."""
        if action not in ("apply", "dismiss"):
            raise InvalidInput("action must be apply or dismiss", action=action)
        finding = Finding.model_validate(self.store.steward.finding(item))
        if finding.status != "pending":
            raise InvalidInput(f"finding {item} is {finding.status}, not pending", id=item)
        if action == "apply":
            try:
                self._apply_finding(finding, actor=actor, run=finding.run)
            except GraphmemError as exc:
                self.store.steward.set_finding(item, {"error": exc.message, "note": note})
                raise
        self.store.steward.set_finding(
            item,
            {"status": "applied" if action == "apply" else "dismissed", "note": note,
             "resolved_at": utcnow(), "resolved_by": actor, "error": None},
        )  # fmt: skip
        return Finding.model_validate(self.store.steward.finding(item))

    # -- conflicts ------------------------------------------------------------------------------

    def conflicts_report(
        self, *, context: str | None = None, service: str | None = None
    ) -> ConflictsReport:
        """The conflicts the steward finds now, with their evidence, each saying whether it is
        pending in the inbox already. Files nothing."""
        policy = self.steward_policy()
        proposals = self._detect(
            "conflicts", policy, context=context, service=service, now=utcnow()
        )
        known = self.store.steward.known_findings([p.fingerprint for p in proposals])
        conflicts = []
        for proposal in sorted(proposals, key=lambda p: (-p.confidence, p.targets)):
            finding = _proposed(proposal, "", utcnow())
            seen = known.get(proposal.fingerprint)
            if seen is not None and seen[1] == "pending":
                finding.id, finding.status = seen[0], "pending"
            conflicts.append(finding)
        return ConflictsReport(
            conflicts=conflicts, in_inbox=sum(f.status == "pending" for f in conflicts)
        )

    # -- reports -------------------------------------------------------------------------------

    def steward_report(self, run: str | None = None) -> StewardRun:
        """What a run (the newest by default) looked at, found, applied and filed."""
        stored = self.store.steward.run_report(run)
        if stored is None:
            raise NotFound("the steward has not run yet")
        return StewardRun.model_validate(stored)

    def steward_status(self) -> StewardStatus:
        stored = self.store.steward.run_report(None)
        last = StewardRun.model_validate({**stored, "findings": []}) if stored else None
        counts = self.store.steward.count_findings("pending")
        return StewardStatus(
            last_run=last, pending=sum(counts.values()), by_kind=counts,
            policy=self.steward_policy(), next_run_at=self._next_steward_run(),
        )  # fmt: skip

    def steward_status_last_finished(self) -> datetime | None:
        """When the newest run (not a dry run) finished."""
        return self.store.steward.last_run_finished()

    def _next_steward_run(self) -> datetime | None:
        """Only the owner runs the steward on a schedule."""
        schedule = self.schedule
        return schedule.next_run_at() if schedule is not None else None


def _proposed(proposal: detect.Proposal, run: str, at: datetime) -> Finding:
    return Finding(
        id=new_id(), run=run, kind=proposal.kind, scope=proposal.scope,  # type: ignore[arg-type]
        targets=proposal.targets, evidence=proposal.evidence, confidence=proposal.confidence,
        action=proposal.action, summary=proposal.summary, status="proposed",  # type: ignore[arg-type]
        created_at=at,
    )  # fmt: skip


def _finished(run: StewardRun, clock: float) -> StewardRun:
    run.finished_at = utcnow()
    run.seconds = round(time.perf_counter() - clock, 3)
    return run
