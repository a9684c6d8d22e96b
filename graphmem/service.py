"""GraphMemory: the one facade that the CLI, the MCP server, the daemon and hooks call.

It is composed, not inherited: its constructor opens the store into a ServiceContext
(graphmem.service_context) and builds each service with that context and the other services it
calls. Each public method is one line, `_delegate(Service.method)`, typed as the method it calls
(so mypy checks callers against the implementation itself, and the facade against the MemoryAPI
protocol) and routed to the service graphmem.registry names for it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from graphmem import registry
from graphmem.admin_ops import AdminOps
from graphmem.agents.context import HookOps
from graphmem.curation import CurationOps
from graphmem.documents.ops import DocumentOps
from graphmem.embeddings.base import Embedder
from graphmem.feed import FeedOps
from graphmem.graph.editing import EntityEditOps
from graphmem.graph.glossary_ops import GlossaryOps
from graphmem.graph.ops import GraphOps
from graphmem.knowledge.ops import KnowledgeOps
from graphmem.memory_ops import MemoryOps
from graphmem.passage_work import PassageWork
from graphmem.recall.relevance import RelevanceBar
from graphmem.service_context import ServiceContext
from graphmem.sessions.checkpoint import CheckpointOps, DedupPolicy
from graphmem.sessions.ops import SessionOps
from graphmem.settings import Settings, load_settings
from graphmem.steward.ops import StewardOps
from graphmem.steward.schedule import StewardSchedule
from graphmem.steward.upkeep import UpkeepOps

P = ParamSpec("P")
R = TypeVar("R")


def _delegate(
    method: Callable[Concatenate[Any, P], R], service: str | None = None
) -> Callable[Concatenate[GraphMemory, P], R]:
    """A facade method that calls `method` on the service that runs it: the registry's for an
    operation, else `service`. Its signature, name and docstring are the method's own."""
    name = method.__name__
    where = service or registry.BY_NAME[name].service

    @functools.wraps(method)
    def call(gm: GraphMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(getattr(gm, where), name)
        return bound(*args, **kwargs)

    return call


class GraphMemory:
    """A memory store: typed memories in a Kùzu graph, recalled by meaning and by exact words."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        extract_in_background: bool = True,
        warm_embedder: bool = False,
    ) -> None:
        """`extract_in_background=False` leaves new memories pending for a later backfill, and
        has an import embed its passages before it returns: a one-shot command should not wait
        for a model to load before it exits, nor leave work to a thread that dies with it.
        `warm_embedder=True` loads the embedding model in a thread while the store opens, for a
        caller that is about to embed (Kùzu opens without holding the GIL)."""
        context = ServiceContext(
            settings,
            embedder=embedder,
            background=extract_in_background,
            warm_embedder=warm_embedder,
        )
        self._context = context
        self.store = context.store
        # an import leaves its passages to this worker when one may run (graphmem.passages)
        self.passages = PassageWork(context, background=extract_in_background)
        self.documents = DocumentOps(context)
        self.memories = MemoryOps(context, self.documents)
        self.admin = AdminOps(context, self.memories, self.passages)
        self.knowledge = KnowledgeOps(context, self.memories, self.documents)
        self.arrivals = FeedOps(context)
        self.curation = CurationOps(context, self.memories, self.knowledge)
        self.graph = GraphOps(context, self.memories, self.knowledge)
        self.entity_edits = EntityEditOps(context)
        self.glossary = GlossaryOps(context, self.entity_edits)
        context.extraction.before_batch = self.glossary.apply_if_changed
        self.steward = StewardOps(context, self.memories, self.knowledge, self.entity_edits)
        self.upkeep = UpkeepOps(context, self.steward)
        self.sessions = SessionOps(
            context, self.memories, self.knowledge, closed=self.steward.session_closed
        )
        self.checkpoints = CheckpointOps(context, self.memories)
        self.hooks = HookOps(context, self.knowledge, self.checkpoints, self.sessions)

    # -- lifecycle --------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self._context.settings

    def reload_settings(self, settings: Settings) -> None:
        """Serve with `settings` from now on (the owner does on SIGHUP): every service reads
        them at call time. The store, the embedder and the background workers keep theirs."""
        self._context.settings = settings

    @property
    def embedder(self) -> Embedder:
        """Created on first use so that commands which never embed never load a model."""
        return self._context.embedder

    @property
    def path(self) -> Path:
        return self.settings.home

    @property
    def project_root(self) -> Path:
        """Cited paths are relative to the project: the folder holding the data dir."""
        return self.knowledge.project_root

    def close(self) -> None:
        self._context.usage.close()
        self._context.extraction.stop()
        self.passages.stop()
        self.store.close()

    def __enter__(self) -> GraphMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_steward_schedule(self, stopping: threading.Event) -> StewardSchedule:
        """Run the steward on its policy's schedule, and soon after a session closes, until
        `stopping` is set (the owner process does)."""
        schedule = StewardSchedule(self.steward, self.upkeep, stopping)
        self.steward.use_schedule(schedule)
        schedule.start()
        return schedule

    @property
    def steward_schedule(self) -> StewardSchedule | None:
        return self.steward.schedule

    @property
    def relevance(self) -> RelevanceBar:
        """When a hook adds a recalled memory or section to a prompt (graphmem.agents.context),
        and when recall warns of a dead end (graphmem.recall.warnings)."""
        return self._context.relevance

    @relevance.setter
    def relevance(self, bar: RelevanceBar) -> None:
        self._context.relevance = bar

    @property
    def checkpoint_dedup(self) -> DedupPolicy | None:
        """When a checkpoint repeats the session's last one; None: the settings' thresholds."""
        return self.checkpoints.dedup

    @checkpoint_dedup.setter
    def checkpoint_dedup(self, policy: DedupPolicy | None) -> None:
        self.checkpoints.dedup = policy

    # -- memories and recall (graphmem/memory_ops.py) ---------------------------------------

    remember = _delegate(MemoryOps.remember)
    remember_many = _delegate(MemoryOps.remember_many)
    recall = _delegate(MemoryOps.recall)
    recall_scoped = _delegate(MemoryOps.recall_scoped, "memories")
    get = _delegate(MemoryOps.get)
    update = _delegate(CurationOps.update)
    delete = _delegate(MemoryOps.delete)
    stats = _delegate(MemoryOps.stats)
    list = _delegate(MemoryOps.list)

    # -- the store as a whole (graphmem/admin_ops.py, graphmem/passage_work.py) -------------

    cypher = _delegate(AdminOps.cypher)
    db_status = _delegate(AdminOps.db_status)
    backup = _delegate(AdminOps.backup)
    export_page = _delegate(AdminOps.export_page)
    import_jsonl = _delegate(AdminOps.import_jsonl)
    reembed = _delegate(AdminOps.reembed)
    schedule_pending_passages = _delegate(PassageWork.schedule_pending_passages, "passages")
    wait_for_passages = _delegate(PassageWork.wait_for_passages, "passages")
    flagged_passages = _delegate(PassageWork.flagged_passages, "passages")

    # -- knowledge over time (graphmem/knowledge/ops.py) ------------------------------------

    summarize_project_context = _delegate(KnowledgeOps.summarize_project_context)
    store_decision = _delegate(KnowledgeOps.store_decision)
    store_dead_end = _delegate(KnowledgeOps.store_dead_end)
    store_incident = _delegate(KnowledgeOps.store_incident)
    store_runbook = _delegate(KnowledgeOps.store_runbook)
    store_postmortem = _delegate(KnowledgeOps.store_postmortem)
    mark_outdated = _delegate(CurationOps.mark_outdated)
    merge_duplicates = _delegate(CurationOps.merge_duplicates)
    search_runbooks = _delegate(KnowledgeOps.search_runbooks)
    recall_similar_incidents = _delegate(KnowledgeOps.recall_similar_incidents)
    promote_to_canonical = _delegate(CurationOps.promote_to_canonical)
    list_canonical_knowledge = _delegate(KnowledgeOps.list_canonical_knowledge)
    recall_canonical_knowledge = _delegate(KnowledgeOps.recall_canonical_knowledge)
    project_bank_view = _delegate(KnowledgeOps.project_bank_view)
    recall_as_of = _delegate(KnowledgeOps.recall_as_of)
    knowledge_timeline = _delegate(KnowledgeOps.knowledge_timeline)
    cite_source = _delegate(KnowledgeOps.cite_source)
    verify_entry = _delegate(CurationOps.verify_entry)
    verification_candidates = _delegate(KnowledgeOps.verification_candidates)
    drift_scan = _delegate(KnowledgeOps.drift_scan)

    # -- the entity graph (graphmem/graph/ops.py) -------------------------------------------

    recall_multihop = _delegate(GraphOps.recall_multihop)
    list_entities = _delegate(GraphOps.list_entities)
    merge_entities = _delegate(EntityEditOps.merge_entities)
    add_entity_alias = _delegate(EntityEditOps.add_entity_alias)
    remove_entity_alias = _delegate(EntityEditOps.remove_entity_alias)
    rename_entity = _delegate(EntityEditOps.rename_entity)
    split_entity = _delegate(EntityEditOps.split_entity)
    apply_glossary = _delegate(GlossaryOps.apply_glossary)
    index_triples = _delegate(GraphOps.index_triples)
    memory_graph = _delegate(GraphOps.memory_graph)
    entity_page = _delegate(GraphOps.entity_page)
    wait_for_extraction = _delegate(GraphOps.wait_for_extraction)
    schedule_pending_extraction = _delegate(GraphOps.schedule_pending_extraction, "graph")

    # -- documents and files (graphmem/documents/ops.py) ------------------------------------

    search_docs = _delegate(DocumentOps.search_docs)
    expand_section = _delegate(DocumentOps.expand_section)
    index_documents = _delegate(DocumentOps.index_documents)
    documents_overview = _delegate(DocumentOps.documents_overview)
    document_page = _delegate(DocumentOps.document_page)
    repo_list = _delegate(DocumentOps.repo_list)
    repo_read = _delegate(DocumentOps.repo_read)
    repo_search = _delegate(DocumentOps.repo_search)

    # -- sessions, the review queue, checkpoints (graphmem/sessions/) -----------------------

    close_session = _delegate(SessionOps.close_session)
    review_session_changes = _delegate(SessionOps.review_session_changes)
    resolve_review_item = _delegate(SessionOps.resolve_review_item)
    accept_session_changes = _delegate(SessionOps.accept_session_changes)
    resolve_review_queue = _delegate(SessionOps.resolve_review_queue)
    checkpoint = _delegate(CheckpointOps.checkpoint, "checkpoints")
    last_checkpoint = _delegate(CheckpointOps.last_checkpoint, "checkpoints")

    # -- the steward (graphmem/steward/) ----------------------------------------------------

    steward_run = _delegate(StewardOps.steward_run)
    steward_inbox = _delegate(StewardOps.steward_inbox)
    steward_inbox_resolve = _delegate(StewardOps.steward_inbox_resolve)
    steward_policy = _delegate(StewardOps.steward_policy)
    steward_status = _delegate(StewardOps.steward_status)
    steward_report = _delegate(StewardOps.steward_report)
    steward_undo = _delegate(StewardOps.steward_undo)
    audit_log = _delegate(CurationOps.audit_log)
    feed = _delegate(FeedOps.feed)
    conflicts_report = _delegate(StewardOps.conflicts_report)
    steward_status_last_finished = _delegate(StewardOps.steward_status_last_finished, "steward")
    sweep_archive = _delegate(UpkeepOps.sweep_archive)
    recount_references = _delegate(UpkeepOps.recount_references)
    sediment_cycle = _delegate(UpkeepOps.sediment_cycle)
    promote_sediment = _delegate(UpkeepOps.promote_sediment)
    demote_sediment = _delegate(UpkeepOps.demote_sediment)

    # -- what `graphmem hook` asks the owner for (graphmem/agents/context.py) ---------------

    hook_context = _delegate(HookOps.hook_context)
    hook_checkpoint = _delegate(HookOps.hook_checkpoint)
    end_session = _delegate(HookOps.end_session)
    hook_jobs_done = _delegate(HookOps.hook_jobs_done, "hooks")


def open_store(
    path: str | Path | None = None,
    *,
    embedder: Embedder | None = None,
    **overrides: Any,
) -> GraphMemory:
    """Open (creating if needed) the store at `path`, or the project's default data dir."""
    settings = load_settings(path, overrides=overrides or None)
    return GraphMemory(settings, embedder=embedder)
