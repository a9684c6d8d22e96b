"""Every indexed document's sections and chunks, held in process with BM25 postings over the chunks.

Document search scores a few hundred candidate chunks a query and needs each one's section,
breadcrumb and document; reading those from the store per query would cost more than the search.
They are read once per process (three scans, by the store) and then kept in step with this
process's writes, a file at a time, as the memories' columns are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.indexes.keywords import KeywordIndex


@dataclass(frozen=True)
class DocInfo:
    uid: str
    path: str  # the Document's key: relative to the project, or absolute outside it
    root: str  # "" for the project, else the absolute root it was indexed under
    rel: str  # what hits show: relative to the project, or to its own root
    title: str
    source_type: str


@dataclass(frozen=True)
class SectionInfo:
    key: str  # "<document uid>#<section_key>"
    doc: str
    section_key: str
    title: str
    level: int
    breadcrumb: tuple[str, ...]
    ord: int
    start_line: int
    end_line: int


@dataclass(frozen=True)
class ChunkInfo:
    id: str
    doc: str
    section: str  # the section's key
    ord: int  # reading order in the document
    text: str
    start_line: int
    end_line: int


Rows = Sequence[tuple[Any, ...]]


class DocumentIndex:
    def __init__(self) -> None:
        self.docs: dict[str, DocInfo] = {}
        self.sections: dict[str, SectionInfo] = {}
        self.chunks: dict[str, ChunkInfo] = {}
        self.keywords = KeywordIndex()
        self._sections_of: dict[str, list[str]] = {}
        self._chunks_of: dict[str, list[str]] = {}

    @classmethod
    def load(cls, docs: Rows, sections: Rows, chunks: Rows) -> DocumentIndex:
        """From the store's rows (`DocumentRepository.document_rows`): documents (uid, path,
        root, rel, title, source type), sections (key, doc, section key, title, level,
        breadcrumb, ord, first and last line), chunks (id, doc, section, ord, text, first and
        last line, search text)."""
        index = cls()
        for row in docs:
            doc = DocInfo(*row)
            index.docs[doc.uid] = doc
        found = [
            SectionInfo(k, d, sk, t, int(lv), tuple(b or ()), int(o), int(s), int(e))
            for k, d, sk, t, lv, b, o, s, e in sections
        ]
        infos = [ChunkInfo(i, d, s, int(o), t, int(a), int(b)) for i, d, s, o, t, a, b, _ in chunks]
        index._add(found, infos, [r[7] or "" for r in chunks])
        return index

    def _add(
        self,
        sections: Sequence[SectionInfo],
        chunks: Sequence[ChunkInfo],
        search_texts: Sequence[str],
    ) -> None:
        for section in sections:
            self.sections[section.key] = section
            self._sections_of.setdefault(section.doc, []).append(section.key)
        for chunk in chunks:
            self.chunks[chunk.id] = chunk
            self._chunks_of.setdefault(chunk.doc, []).append(chunk.id)
        if chunks:
            self.keywords.add([c.id for c in chunks], list(search_texts))

    def replace(
        self,
        doc: DocInfo,
        sections: Sequence[SectionInfo],
        chunks: Sequence[ChunkInfo],
        search_texts: Sequence[str],
    ) -> None:
        self.remove(doc.uid)
        self.docs[doc.uid] = doc
        self._add(sections, chunks, search_texts)

    def move(self, doc: DocInfo) -> None:
        self.docs[doc.uid] = doc

    def remove(self, uid: str) -> None:
        self.docs.pop(uid, None)
        for key in self._sections_of.pop(uid, []):
            self.sections.pop(key, None)
        gone = self._chunks_of.pop(uid, [])
        for chunk_id in gone:
            self.chunks.pop(chunk_id, None)
        if gone:
            self.keywords.remove(gone)

    def section_chunks(self, section_key: str) -> list[ChunkInfo]:
        """The section's chunks in reading order."""
        section = self.sections.get(section_key)
        if section is None:
            return []
        found = [self.chunks[c] for c in self._chunks_of.get(section.doc, []) if c in self.chunks]
        return sorted((c for c in found if c.section == section_key), key=lambda c: c.ord)

    def doc_by_rel(self, rel: str) -> list[DocInfo]:
        return [d for d in self.docs.values() if d.rel == rel]
