"""MemoryAPI: what transports may call, served in process (GraphMemory) or by the owner process
(RemoteMemory); the CLI and the MCP server are written against this and never know which. The
operations themselves are declared in graphmem.registry."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from graphmem.documents.models import (
    DocSearchResult,
    DocsIndexReport,
    DocumentPage,
    DocumentsOverview,
    RepoFile,
    RepoListing,
    RepoMatches,
    SectionText,
)
from graphmem.graph.models import (
    EntityAliasReport,
    EntityList,
    EntityPage,
    GlossaryReport,
    IndexReport,
    MemoryGraph,
    MergeEntitiesReport,
    MultiHopResult,
    RenameEntityReport,
    SplitEntityReport,
)
from graphmem.knowledge.models import (
    BankView,
    Citation,
    DriftReport,
    ProjectContext,
    Timeline,
)
from graphmem.models import (
    BackupInfo,
    CypherResult,
    DbStatus,
    FeedPage,
    ImportReport,
    Memory,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    RecallResult,
    RecallScope,
    ReembedReport,
    StoredMemory,
    StoreStats,
)
from graphmem.recall.config import RecallConfig
from graphmem.sessions.models import ResolveReport, ReviewQueue, SessionPlan
from graphmem.settings import Settings
from graphmem.steward.models import (
    FINDINGS_LISTED,
    AuditPage,
    ConflictsReport,
    Finding,
    InboxPage,
    Layer,
    ReferenceReport,
    SedimentMove,
    SedimentReport,
    StewardPolicy,
    StewardRun,
    StewardStatus,
    SweepReport,
    UndoReport,
)

Progress = Callable[[int, int], None]
Filters = MemoryFilter | Mapping[str, Any] | None


class KnowledgeAPI(Protocol):
    """Knowledge over time (graphmem/knowledge/ops.py)."""

    def mark_outdated(
        self, memory_id: str, *, reason: str, superseded_by: str | None = None
    ) -> Memory: ...

    def merge_duplicates(
        self, primary: str, duplicates: list[str], *, reason: str | None = None
    ) -> Memory: ...

    def promote_to_canonical(self, memory_id: str, *, owner: str) -> Memory: ...

    def store_decision(self, **fields: Any) -> StoredMemory: ...

    def store_dead_end(self, **fields: Any) -> StoredMemory: ...

    def store_incident(self, **fields: Any) -> StoredMemory: ...

    def store_runbook(self, **fields: Any) -> StoredMemory: ...

    def store_postmortem(self, **fields: Any) -> StoredMemory: ...

    def search_runbooks(self, query: str, *, limit: int = 5) -> RecallResult: ...

    def recall_similar_incidents(self, query: str, *, limit: int = 5) -> RecallResult: ...

    def list_canonical_knowledge(
        self, *, context: str | None = None, limit: int = 50
    ) -> MemoryPage: ...

    def recall_canonical_knowledge(self, query: str, *, limit: int = 10) -> RecallResult: ...

    def summarize_project_context(
        self, *, context: str | None = None, limit: int = 10
    ) -> ProjectContext: ...

    def project_bank_view(
        self, view: str, *, context: str | None = None, limit: int = 50
    ) -> BankView: ...

    def recall_as_of(
        self, query: str, *, as_of: datetime | str, limit: int = 10, filters: Filters = None
    ) -> RecallResult: ...

    def knowledge_timeline(
        self, query: str | None = None, *, memory_id: str | None = None
    ) -> Timeline: ...

    def cite_source(self, memory_id: str, path: str, *, section: str | None = None) -> Citation: ...

    def verify_entry(
        self, memory_id: str, *, method: str, status: str, note: str | None = None
    ) -> Memory: ...

    def verification_candidates(
        self, *, days: int = 90, min_importance: float = 0.7, limit: int = 50
    ) -> MemoryPage: ...

    def drift_scan(self) -> DriftReport: ...


class GraphAPI(Protocol):
    """Entities, facts and multi-hop recall (graphmem/graph/ops.py)."""

    def index_triples(
        self,
        *,
        limit: int | None = None,
        context: str | None = None,
        force: bool = False,
        resume: bool = False,
        dry_run: bool = False,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> IndexReport: ...

    def list_entities(
        self, query: str | None = None, *, label: str | None = None, limit: int = 50
    ) -> EntityList: ...

    def merge_entities(self, primary: str, duplicates: Sequence[str]) -> MergeEntitiesReport: ...

    def add_entity_alias(self, entity_id: str, alias: str) -> EntityAliasReport: ...

    def remove_entity_alias(self, entity_id: str, alias: str) -> EntityAliasReport: ...

    def rename_entity(self, entity_id: str, name: str) -> RenameEntityReport: ...

    def split_entity(
        self, entity_id: str, memory_ids: Sequence[str], name: str | None = None
    ) -> SplitEntityReport: ...

    def apply_glossary(
        self, path: str | Path | None = None, *, dry_run: bool = False
    ) -> GlossaryReport: ...

    def memory_graph(self, memory_id: str, *, limit: int = 12) -> MemoryGraph: ...

    def entity_page(self, entity_id: str, *, limit: int = 50) -> EntityPage: ...

    def recall_multihop(
        self,
        query: str,
        *,
        max_hops: int = 2,
        seed_k: int = 3,
        limit: int = 10,
        filters: Filters = None,
        damping: float = 0.85,
        graph_weight: float = 0.8,
        answer_weight: float = 0.3,
    ) -> MultiHopResult: ...

    def wait_for_extraction(self, timeout: float | None = None) -> bool: ...


class DocumentAPI(Protocol):
    """Project documents (graphmem/documents/ops.py)."""

    def index_documents(
        self,
        paths: Sequence[str | Path] | None = None,
        *,
        on_progress: Progress | None = None,
    ) -> DocsIndexReport: ...

    def search_docs(
        self,
        query: str,
        *,
        limit: int = 10,
        source_type: str | None = None,
        path_prefix: str | None = None,
        explain: bool = False,
        recipe: str | None = None,
    ) -> DocSearchResult: ...

    def expand_section(self, path: str, section_key: str) -> SectionText: ...

    def documents_overview(self, *, limit: int = 2000) -> DocumentsOverview: ...

    def document_page(self, path: str) -> DocumentPage: ...

    def repo_list(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        recursive: bool = False,
        limit: int = 200,
    ) -> RepoListing: ...

    def repo_read(
        self,
        path: str,
        *,
        start_line: int = 1,
        end_line: int | None = None,
        max_bytes: int = 65536,
    ) -> RepoFile: ...

    def repo_search(
        self,
        query: str,
        *,
        path: str = ".",
        regex: bool = False,
        case_sensitive: bool = False,
        glob: str | None = None,
        limit: int = 100,
    ) -> RepoMatches: ...


class SessionAPI(Protocol):
    """Sessions and the review queue (graphmem/sessions/ops.py)."""

    def close_session(
        self,
        summary: str,
        *,
        mode: str | None = None,
        context: str | None = None,
        service: str | None = None,
        dry_run: bool = True,
        auto_apply_low_risk: bool = False,
        session_id: str | None = None,
        client: str | None = None,
        cwd: str | None = None,
    ) -> SessionPlan: ...

    def review_session_changes(
        self,
        *,
        session: str | None = None,
        status: str | None = "pending",
        action: str | None = None,
        limit: int = 50,
    ) -> ReviewQueue: ...

    def accept_session_changes(
        self, session: str | None = None, items: Sequence[str] | None = None, *, actor: str = "user"
    ) -> ResolveReport: ...

    def resolve_review_item(
        self, item_id: str, resolution: str, note: str | None = None, *, actor: str = "user"
    ) -> ResolveReport: ...

    def resolve_review_queue(
        self,
        resolution: str,
        *,
        session: str | None = None,
        action: str | None = None,
        risk: str | None = None,
        note: str | None = None,
        dry_run: bool = True,
        actor: str = "user",
    ) -> ResolveReport: ...


class StewardAPI(Protocol):
    """Stewardship of the store: findings, the inbox, the policy, undo, sweeping, reference
    counts, the conflicts report and sedimentation (graphmem/steward/ops.py)."""

    def steward_run(
        self,
        scope: str = "all",
        *,
        dry_run: bool = True,
        context: str | None = None,
        service: str | None = None,
        actor: str = "user",
        listed: int | None = FINDINGS_LISTED,
    ) -> StewardRun: ...

    def steward_inbox(
        self,
        status: str | None = "pending",
        kind: str | None = None,
        limit: int = 50,
        sort: str = "confidence",
    ) -> InboxPage: ...

    def steward_inbox_resolve(
        self, item: str, action: str, note: str | None = None, *, actor: str = "user"
    ) -> Finding: ...

    def steward_policy(self, updates: dict[str, Any] | None = None) -> StewardPolicy: ...

    def steward_status(self) -> StewardStatus: ...

    def steward_report(self, run: str | None = None) -> StewardRun: ...

    def steward_undo(self, run_or_action: str, *, actor: str = "user") -> UndoReport: ...

    def audit_log(self, *, limit: int = 50) -> AuditPage: ...

    def feed(
        self,
        *,
        context: str | None = None,
        type: str | None = None,
        kind: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 30,
        cursor: str | None = None,
    ) -> FeedPage: ...

    def sweep_archive(self, *, dry_run: bool = True, actor: str = "user") -> SweepReport: ...

    def recount_references(self) -> ReferenceReport: ...

    def conflicts_report(
        self, *, context: str | None = None, service: str | None = None
    ) -> ConflictsReport: ...

    def sediment_cycle(self, *, dry_run: bool = True, actor: str = "user") -> SedimentReport: ...

    def promote_sediment(
        self,
        memory_id: str,
        *,
        layer: Layer | None = None,
        note: str | None = None,
        actor: str = "user",
    ) -> SedimentMove: ...

    def demote_sediment(
        self,
        memory_id: str,
        *,
        layer: Layer | None = None,
        note: str | None = None,
        actor: str = "user",
    ) -> SedimentMove: ...


class HookAPI(Protocol):
    """What `graphmem hook` asks the owner for (graphmem/agents/context.py): plain dicts, so a
    stdlib-only hook process can read them."""

    def hook_context(
        self, event: str, payload: Mapping[str, Any], *, client: str | None = None
    ) -> dict[str, Any]: ...

    def hook_checkpoint(
        self, payload: Mapping[str, Any], *, client: str | None = None, event: str = "stop"
    ) -> dict[str, Any]: ...

    def end_session(
        self, payload: Mapping[str, Any], *, client: str | None = None
    ) -> dict[str, Any]: ...


class MemoryAPI(KnowledgeAPI, GraphAPI, DocumentAPI, SessionAPI, StewardAPI, HookAPI, Protocol):
    """Every operation of graphmem.registry; GraphMemory's delegations are checked against it by
    mypy (they are typed as the services' methods), and tests/test_registry.py holds each stub
    to the method's own signature."""

    @property
    def settings(self) -> Settings: ...

    @property
    def path(self) -> Path: ...

    def close(self) -> None: ...

    def remember(self, content: str, **fields: Any) -> StoredMemory: ...

    def remember_many(
        self,
        items: Iterable[MemoryInput | Mapping[str, Any]],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> list[StoredMemory]: ...

    def get(self, memory_id: str) -> Memory: ...

    def update(self, memory_id: str, **changes: Any) -> Memory: ...

    def delete(self, memory_id: str) -> None: ...

    def list(
        self, filters: Filters = None, *, limit: int = 50, cursor: str | None = None
    ) -> MemoryPage: ...

    def stats(self) -> StoreStats: ...

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        filters: Filters = None,
        explain: bool = False,
        recipe: str | RecallConfig | None = None,
        scope: RecallScope = "memories",
    ) -> RecallResult: ...

    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> CypherResult: ...

    def db_status(self) -> DbStatus: ...

    def backup(self, dest: str | Path) -> BackupInfo: ...

    def export_page(
        self, cursor: str | None = None, *, limit: int = 1000, with_vectors: bool = False
    ) -> MemoryPage: ...

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        on_error: str = "continue",
        batch_size: int = 2048,
        first_line: int = 1,
        on_progress: Progress | None = None,
    ) -> ImportReport: ...

    def reembed(
        self, *, batch_size: int = 128, on_progress: Progress | None = None
    ) -> ReembedReport: ...
