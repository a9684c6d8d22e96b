"""DocumentOps, the service of GraphMemory for the project's documents (index them, search their
sections, read a section, the overview) and its files, behind the path guard."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from graphmem.documents.models import (
    DocSearchResult,
    DocsIndexReport,
    DocumentPage,
    DocumentsOverview,
    DocumentSummary,
    RepoFile,
    RepoListing,
    RepoMatches,
    SectionText,
    SubSection,
)
from graphmem.errors import EmbeddingError, InvalidInput, NotFound, check_limit
from graphmem.indexes.doc_index import SectionInfo
from graphmem.service_context import Service, ServiceContext

if TYPE_CHECKING:
    from graphmem.documents.guard import PathGuard

Progress = Callable[[int, int], None]


class DocumentOps(Service):
    def __init__(self, context: ServiceContext) -> None:
        super().__init__(context)
        self._index_lock = threading.Lock()  # one run at a time: the owner's watch and a client

    def index_documents(
        self,
        paths: Sequence[str | Path] | None = None,
        *,
        on_progress: Progress | None = None,
    ) -> DocsIndexReport:
        """Index the project's documents (the settings' globs), or the files and folders given;
        only files whose content changed are parsed and embedded again."""
        from graphmem.documents.indexer import DocumentIndexer

        with self._index_lock:
            report = DocumentIndexer(self.store, self.embedder, self.settings).run(
                list(paths) if paths else None, on_progress=on_progress
            )
        self.context.extraction.schedule_chunks()  # entities of the new chunks, in the background
        return report

    def search_docs(
        self,
        query: str,
        *,
        limit: int = 10,
        source_type: str | None = None,
        path_prefix: str | None = None,
        explain: bool = False,
        recipe: str | None = None,
    ) -> DocSearchResult:
        """The sections that answer `query`, best first, at most a few per document."""
        from graphmem.documents.search import doc_recipe, search

        if not query or not query.strip():
            raise InvalidInput("query is empty")
        check_limit(limit)
        config = doc_recipe(recipe)
        warnings: list[str] = []
        vector, space, degraded = None, None, False
        if config.vector_candidates:
            space = self.embedder.space
            spaces = self.store.documents.spaces()
            if spaces and space.name not in spaces:
                degraded, space = True, None
                warnings.append(
                    "the documents were embedded with another model than the one configured "
                    "now: keyword-only results; run `graphmem index` again to embed them anew"
                )
            else:
                try:
                    vector = self.embedder.embed_query(query)
                except EmbeddingError as exc:
                    degraded, space = True, None
                    warnings.append(f"embedding failed, keyword-only results: {exc.message}")
        hits = search(
            self.store,
            query,
            vector,
            space,
            config,
            limit=limit,
            source_type=source_type,
            path_prefix=path_prefix,
            explain=explain,
        )
        return DocSearchResult(
            query=query,
            hits=hits,
            degraded=degraded,
            embedding_space=space.label if space is not None else None,
            warnings=warnings,
        )

    # -- file tools, behind the path guard ------------------------------------------------------

    def _guard(self) -> PathGuard:
        from graphmem.documents.guard import PathGuard

        extra = [Path(r).expanduser() for r in self.settings.repo_roots]
        return PathGuard([self.settings.home.parent, *extra])

    def repo_list(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        recursive: bool = False,
        limit: int = 200,
    ) -> RepoListing:
        """A folder of the project (or of another allowed root), .gitignore respected."""
        from graphmem.documents.repo import repo_list

        return repo_list(self._guard(), path, pattern=pattern, recursive=recursive, limit=limit)

    def repo_read(
        self,
        path: str,
        *,
        start_line: int = 1,
        end_line: int | None = None,
        max_bytes: int = 65536,
    ) -> RepoFile:
        """Lines of a text file inside the allowed roots."""
        from graphmem.documents.repo import repo_read

        return repo_read(
            self._guard(), path, start_line=start_line, end_line=end_line, max_bytes=max_bytes
        )

    def repo_search(
        self,
        query: str,
        *,
        path: str = ".",
        regex: bool = False,
        case_sensitive: bool = False,
        glob: str | None = None,
        limit: int = 100,
    ) -> RepoMatches:
        """Lines of the text files under `path` that hold `query` (literal, or a regex)."""
        from graphmem.documents.repo import repo_search

        return repo_search(
            self._guard(),
            query,
            path=path,
            regex=regex,
            case_sensitive=case_sensitive,
            glob=glob,
            limit=limit,
        )

    def expand_section(self, path: str, section_key: str) -> SectionText:
        """A whole section of an indexed document, in reading order, and the sections under it."""
        index = self.store.documents.index()
        docs = index.doc_by_rel(path.strip().removeprefix("./"))
        if not docs:
            raise NotFound(f"no indexed document at {path!r}", path=path)
        doc = min(docs, key=lambda d: d.root != "")  # the project's own before another root's
        section = index.sections.get(f"{doc.uid}#{section_key}")
        if section is None and section_key == "":  # no text before the first heading
            section = SectionInfo(f"{doc.uid}#", doc.uid, "", doc.title, 0, (doc.title,), -1, 1, 1)
        if section is None:
            raise NotFound(
                f"{path} has no section {section_key!r}", path=path, section_key=section_key
            )
        prefix = f"{section_key}/" if section_key else ""
        below = [
            s
            for s in index.sections.values()
            if s.doc == doc.uid
            and s.section_key.startswith(prefix)
            and s.section_key != section_key
            and "/" not in s.section_key.removeprefix(prefix)
        ]
        return SectionText(
            path=doc.rel,
            title=doc.title,
            section_key=section.section_key,
            heading=section.title,
            breadcrumb=list(section.breadcrumb),
            source_type=doc.source_type,
            lines=[section.start_line, section.end_line],
            text="\n\n".join(c.text for c in index.section_chunks(section.key)),
            subsections=[
                SubSection(section_key=s.section_key, heading=s.title)
                for s in sorted(below, key=lambda s: s.ord)
            ],
        )

    def documents_overview(self, *, limit: int = 2000) -> DocumentsOverview:
        """Every document the store knows, by path: the indexed ones and the files memories
        cite without their being indexed."""
        check_limit(limit, most=10_000)
        rows = self.store.documents.overview(limit=limit)
        return DocumentsOverview(documents=[DocumentSummary.model_validate(r) for r in rows])

    def document_page(self, path: str) -> DocumentPage:
        """One document of the overview, by its path as listed there: its sections and the
        memories that cite it."""
        found = self.store.documents.page(path)
        if found is None:
            raise NotFound(f"no indexed document {path!r}", path=path)
        return DocumentPage.model_validate(found)
