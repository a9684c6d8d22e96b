"""What the services of one GraphMemory share: its settings, its open store, the embedder (made
on first use), the usage log and background extraction.

GraphMemory builds one ServiceContext and hands it to each service it composes; a service reads
the settings through it at call time, so a reload (GraphMemory.reload_settings) reaches every
service at once.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from graphmem.embeddings.factory import make_embedder, warm
from graphmem.graph.background import Extraction
from graphmem.recall.relevance import RelevanceBar
from graphmem.storage import open_store_backend, saved_space_names
from graphmem.storage.protocols import Store
from graphmem.usage import UsageLog

if TYPE_CHECKING:
    from graphmem.embeddings.base import Embedder
    from graphmem.settings import Settings


class ServiceContext:
    """The store opened and migrated, and what every service reads beside it."""

    def __init__(
        self,
        settings: Settings,
        *,
        embedder: Embedder | None,
        background: bool,
        warm_embedder: bool,
    ) -> None:
        """See GraphMemory: `background` runs extraction and usage flushes on threads,
        `warm_embedder` loads the model in a thread while the store opens."""
        self.settings = settings
        # what a prompt's memories and recall's dead-end warnings must clear (recall.relevance)
        self.relevance = RelevanceBar()
        self._embedder = embedder
        self._embedding = settings.embedding
        if warm_embedder and embedder is None:
            # Which model the store wants is known once it is open; until then, guess from
            # the search structures it saved last.
            self._embedding = settings.embedding.for_store(saved_space_names(settings.home))
            self._embedder = make_embedder(self._embedding)
            threading.Thread(target=warm, args=(self._embedder,), daemon=True).start()
        self.store = open_store_backend(settings)
        try:
            self.store.migrate()
            if embedder is None:
                settled = settings.embedding.for_store(self.store.vectors.space_names())
                if settled != self._embedding:
                    self._embedding, self._embedder = settled, None
        except BaseException:
            self.store.close()
            raise
        self.extraction = Extraction(self.store, settings, self.embed_names, background=background)
        self.usage = UsageLog(self.store, background=background)

    @property
    def embedder(self) -> Embedder:
        """Created on first use so that commands which never embed never load a model."""
        if self._embedder is None:
            self._embedder = make_embedder(self._embedding)
        return self._embedder

    def embed_names(self, names: list[str]) -> Any:
        """Entity names for the extraction's resolver, embedded by the store's model."""
        return self.embedder.embed(names)


class Service:
    """One part of GraphMemory (knowledge, the graph, documents, ...): built by it with the
    shared context and the other services it calls."""

    def __init__(self, context: ServiceContext) -> None:
        self.context = context
        self.store: Store = context.store

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def embedder(self) -> Embedder:
        return self.context.embedder
