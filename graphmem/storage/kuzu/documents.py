"""Documents in Kùzu: a file's Document node, its Section tree and its Chunks, written one file per
transaction; the chunks' entities; and document search's reads from the search state
(graphmem.indexes.doc_index and the chunk vector sets).

A changed file is replaced whole in one transaction, so a run killed at any point leaves every file
either as it was indexed before or as it is now. Chunk ids carry the hash of their text, so a chunk
whose text did not change keeps its id and its vector; only new chunks are embedded.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.changes import DocumentMoved, DocumentRemoved, DocumentWritten
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, DocumentIndex, SectionInfo
from graphmem.indexes.entity_index import EntityChange
from graphmem.indexes.search_state import SearchState
from graphmem.indexes.vectors import CHUNK_PREFIX, scores_of
from graphmem.models import utcnow
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.kuzu.graph_writes import put_entities
from graphmem.storage.kuzu.pending import KuzuPending
from graphmem.storage.kuzu.vectors import KuzuVectors, chunk_table_for
from graphmem.storage.protocols.documents import DocumentWrite, IndexedDocument
from graphmem.storage.protocols.entities import EntityRow, Mention
from graphmem.storage.protocols.pending import CHUNK_EXTRACT

# the fields of the console's rows (graphmem.documents.models)
CHAIN_HOPS = 30  # how far a supersession chain is followed from the document asked for
_SUMMARY = ("path", "title", "source_type", "sections")
_SECTION = ("section_key", "title", "level", "start_line", "end_line")
_CITATION = ("memory_id", "title", "content", "lifecycle", "section")


def _document_row(write: DocumentWrite, at: datetime) -> dict[str, Any]:
    doc = write.doc
    return {
        "path": doc.path, "uid": doc.uid, "root": doc.root, "rel": doc.rel, "title": doc.title,
        "type": doc.source_type, "sha": write.sha256, "size": write.size, "mtime": write.mtime,
        "at": at, "meta": json.dumps(write.metadata, default=str, ensure_ascii=False),
    }  # fmt: skip


class KuzuDocuments:
    """graphmem.storage.protocols.Documents over one connection and the search state."""

    def __init__(
        self,
        conn: KuzuConnection,
        state: SearchState,
        vectors: KuzuVectors,
        pending: KuzuPending,
    ) -> None:
        self.conn = conn
        self.state = state
        self.vectors = vectors
        self.pending = pending

    # -- what is indexed ------------------------------------------------------------------------

    def indexed_documents(self, root: str) -> dict[str, IndexedDocument]:
        """path -> the indexed document, of the files indexed under `root` ("" for the project)."""
        rows = self.conn.read(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL AND d.root = $root "
            "RETURN d.path, d.uid, d.indexed_sha, d.rel",
            {"root": root},
        )
        return {p: IndexedDocument(p, u, s, r) for p, u, s, r in rows}

    def indexed_locations(self) -> tuple[list[str], list[str]]:
        """(rel of every indexed project document, every outside root documents came from)."""
        rows = self.conn.read(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL RETURN d.rel, d.root"
        )
        return [r for r, root in rows if not root], sorted({root for _, root in rows if root})

    def chunk_ids_of(self, uid: str) -> set[str]:
        rows = self.conn.read("MATCH (c:Chunk) WHERE c.doc = $uid RETURN c.id", {"uid": uid})
        return {r[0] for r in rows}

    def chunk_vector_ids(self, space: EmbeddingSpace, ids: Iterable[str]) -> set[str]:
        """Those of `ids` that have a vector in the space."""
        table = chunk_table_for(space)
        if table not in self.conn.table_names():
            return set()
        known = self.state.read_matrix(table, space.dim, lambda m: m.ids)
        return {i for i in ids if i in known}

    # -- writes ---------------------------------------------------------------------------------

    def write(self, writes: Sequence[DocumentWrite], space: EmbeddingSpace) -> None:
        """Replace the files' sections and chunks in one transaction (a file is never half
        written); chunks that vanished lose their vectors, new ones get theirs."""
        if not writes:
            return
        uids = [w.doc.uid for w in writes]
        keep = {c.id for w in writes for c in w.chunks}
        self.vectors.ensure_table(chunk_table_for(space), space.dim)
        with self.conn.transaction():
            old = {
                r[0]
                for r in self.conn.read(
                    "MATCH (c:Chunk) WHERE c.doc IN $u RETURN c.id", {"u": uids}
                )
            }
            now = utcnow()
            self.conn.execute(
                "UNWIND $docs AS r MERGE (d:Document {path: r.path}) SET d.uid = r.uid, "
                "d.root = r.root, d.rel = r.rel, d.title = r.title, d.source_type = r.type, "
                "d.indexed_sha = r.sha, d.size = r.size, d.mtime = r.mtime, d.indexed_at = r.at, "
                "d.metadata = r.meta",
                {"docs": [_document_row(w, now) for w in writes]},
            )
            self._drop_structure(uids)
            self._insert_sections(
                {w.doc.uid: w.doc.path for w in writes},
                [s for w in writes for s in w.sections],
                {k: v for w in writes for k, v in w.parents.items()},
            )
            self._insert_chunks(
                [c for w in writes for c in w.chunks], [t for w in writes for t in w.search_texts]
            )
            # every chunk written waits for extraction (its mentions went with the old node)
            self.pending.put(CHUNK_EXTRACT, sorted(keep), at=now)
            gone = old - keep
            if gone:
                self.vectors.delete_rows(chunk_table_for(space), gone)
                self.pending.finish(CHUNK_EXTRACT, sorted(gone))
            new = {k: v for w in writes for k, v in w.new_vectors.items()}
            if new:
                matrix = np.stack(list(new.values())).astype(np.float32)
                self.vectors.insert(chunk_table_for(space), space, list(new), matrix)
            for w in writes:
                self.conn.emit(DocumentWritten(w.doc, w.sections, w.chunks, w.search_texts))

    def _drop_structure(self, uids: Sequence[str]) -> None:
        self.conn.execute(
            "MATCH (c:Chunk) WHERE c.doc IN $u DETACH DELETE c",
            {"u": list(uids)},
            entity_graph=True,
        )
        self.conn.execute(
            "MATCH (s:Section) WHERE s.doc IN $u DETACH DELETE s",
            {"u": list(uids)},
            entity_graph=True,
        )

    def _insert_sections(
        self, paths: dict[str, str], sections: Sequence[SectionInfo], parents: dict[str, str]
    ) -> None:
        """`paths`: each written document's path (its key) by its uid."""
        if not sections:
            return
        table = pa.table(
            {
                "key": [s.key for s in sections],
                "doc": [s.doc for s in sections],
                "section_key": [s.section_key for s in sections],
                "title": [s.title for s in sections],
                "level": pa.array([s.level for s in sections], pa.int64()),
                "breadcrumb": pa.array(
                    [list(s.breadcrumb) for s in sections], pa.list_(pa.string())
                ),
                "ord": pa.array([s.ord for s in sections], pa.int64()),
                "start_line": pa.array([s.start_line for s in sections], pa.int64()),
                "end_line": pa.array([s.end_line for s in sections], pa.int64()),
            }
        )
        fields = ", ".join(f"{name}: {name}" for name in table.column_names)
        self.conn.query_result(f"LOAD FROM $t CREATE (:Section {{{fields}}})", {"t": table})
        # both ends by their keys: `d.uid IN $u` joined to the sections matched a Document
        # other than the one this transaction wrote (Kùzu 0.11.3), so a document written after
        # others had its sections linked to one of those
        self.conn.execute(
            "UNWIND $rows AS r MATCH (s:Section {key: r.key}), (d:Document {path: r.path}) "
            "CREATE (d)-[:HAS_SECTION]->(s)",
            {"rows": [{"key": s.key, "path": paths[s.doc]} for s in sections]},
        )
        pairs = [{"c": child, "p": parent} for child, parent in parents.items()]
        if pairs:
            self.conn.execute(
                "UNWIND $pairs AS p MATCH (c:Section {key: p.c}), (s:Section {key: p.p}) "
                "CREATE (c)-[:CHILD_OF]->(s)",
                {"pairs": pairs},
            )

    def _insert_chunks(self, chunks: Sequence[ChunkInfo], search_texts: Sequence[str]) -> None:
        if not chunks:
            return
        table = pa.table(
            {
                "id": [c.id for c in chunks],
                "doc": [c.doc for c in chunks],
                "section": [c.section for c in chunks],
                "ord": pa.array([c.ord for c in chunks], pa.int64()),
                "text": [c.text for c in chunks],
                "search_text": list(search_texts),
                "start_line": pa.array([c.start_line for c in chunks], pa.int64()),
                "end_line": pa.array([c.end_line for c in chunks], pa.int64()),
            }
        )
        fields = ", ".join(f"{name}: {name}" for name in table.column_names)
        self.conn.query_result(f"LOAD FROM $t CREATE (:Chunk {{{fields}}})", {"t": table})
        self.conn.execute(
            "UNWIND $pairs AS p MATCH (c:Chunk {id: p.c}), (s:Section {key: p.s}) "
            "CREATE (c)-[:IN_SECTION]->(s)",
            {"pairs": [{"c": c.id, "s": c.section} for c in chunks]},
        )
        ordered = sorted(chunks, key=lambda c: (c.doc, c.ord))
        pairs = [{"a": a.id, "b": b.id} for a, b in itertools.pairwise(ordered) if a.doc == b.doc]
        if pairs:
            self.conn.execute(
                "UNWIND $pairs AS p MATCH (a:Chunk {id: p.a}), (b:Chunk {id: p.b}) "
                "CREATE (a)-[:NEXT]->(b)",
                {"pairs": pairs},
            )

    def move(self, old_path: str, doc: DocInfo) -> None:
        """A renamed file: its sections and chunks stay (they are keyed by the document's uid);
        the node moves to the new path with the citations that pointed at the old one."""
        with self.conn.transaction():
            self.conn.execute(
                "MATCH (o:Document {path: $old}) "
                "CREATE (:Document {path: $new, uid: o.uid, root: $root, rel: $rel, title: o.title, "
                "source_type: o.source_type, indexed_sha: o.indexed_sha, sha256: o.sha256, "
                "size: o.size, mtime: o.mtime, indexed_at: o.indexed_at, metadata: o.metadata})",
                {"old": old_path, "new": doc.path, "root": doc.root, "rel": doc.rel},
            )
            self.conn.execute(
                "MATCH (d:Document {path: $new}), (s:Section) WHERE s.doc = d.uid "
                "CREATE (d)-[:HAS_SECTION]->(s)",
                {"new": doc.path},
            )
            self.conn.execute(
                "MATCH (m:Memory)-[c:CITES]->(:Document {path: $old}), (d:Document {path: $new}) "
                "CREATE (m)-[:CITES {section: c.section, sha256_at_verify: c.sha256_at_verify, "
                "at: c.at}]->(d)",
                {"old": old_path, "new": doc.path},
            )
            self.conn.execute(
                "MATCH (o:Document {path: $old}) DETACH DELETE o",
                {"old": old_path},
                entity_graph=True,
            )
            self.conn.emit(DocumentMoved(doc))

    def remove(self, paths: Sequence[str], spaces: Sequence[EmbeddingSpace]) -> None:
        """Files that are gone: their sections, chunks and chunk vectors. A document that
        memories cite keeps its node (the citation then reports the file missing)."""
        for path in paths:
            with self.conn.transaction():
                rows = self.conn.read("MATCH (d:Document {path: $p}) RETURN d.uid", {"p": path})
                if not rows or rows[0][0] is None:
                    continue
                uid = rows[0][0]
                ids = self.chunk_ids_of(uid)
                self._drop_structure([uid])
                self.pending.finish(CHUNK_EXTRACT, sorted(ids))
                for space in spaces:
                    if chunk_table_for(space) in self.conn.table_names():
                        self.vectors.delete_rows(chunk_table_for(space), ids)
                self.conn.execute(
                    "MATCH (d:Document {path: $p}) WHERE NOT EXISTS { MATCH (:Memory)-[:CITES]->(d) } "
                    "DELETE d",
                    {"p": path},
                )
                self.conn.execute(
                    "MATCH (d:Document {path: $p}) SET d.indexed_sha = NULL, d.uid = NULL",
                    {"p": path},
                )
                self.conn.emit(DocumentRemoved(uid))

    # -- ADRs that supersede others -------------------------------------------------------------

    def state_supersessions(self, stated_by: str, pairs: Sequence[tuple[str, str]]) -> None:
        """What the document at path `stated_by` says it supersedes or is superseded by, as
        (newer path, older path): it replaces what it said before."""
        with self.conn.transaction():
            self.conn.execute(
                "MATCH (:Document)-[s:SUPERSEDES]->(:Document) WHERE s.reason = $by DELETE s",
                {"by": stated_by},
                entity_graph=True,
            )
            if pairs:
                self.conn.execute(
                    "UNWIND $pairs AS p MATCH (n:Document {path: p.n}), (o:Document {path: p.o}) "
                    "MERGE (n)-[s:SUPERSEDES]->(o) SET s.reason = $by, s.at = $at",
                    {"pairs": [{"n": n, "o": o} for n, o in pairs], "by": stated_by,
                     "at": utcnow()},
                    entity_graph=True,
                )  # fmt: skip

    def chain(self, path: str) -> list[tuple[str, str, str, str | None]]:
        """(path, rel, title, the rel of what superseded it) of every document linked to `path`
        by SUPERSEDES, itself included, in no particular order."""
        # one hop at a time: Kùzu's `SUPERSEDES*1..30` in both directions enumerates every path
        # (11 s for a chain of four documents, "buffer pool is full" from six, or on a cycle)
        exists = self.conn.read("MATCH (d:Document {path: $p}) RETURN d.path", {"p": path})
        found, frontier = [path] if exists else [], [path] if exists else []
        for _ in range(CHAIN_HOPS):
            rows = self.conn.read(
                "UNWIND $ps AS p MATCH (:Document {path: p})-[:SUPERSEDES]-(d:Document) "
                "RETURN DISTINCT d.path",
                {"ps": frontier},
            )
            frontier = [r[0] for r in rows if r[0] not in found]
            if not frontier:
                break
            found += frontier
        out = []
        for doc_path in found:
            info = self.conn.read(
                "MATCH (d:Document {path: $p}) OPTIONAL MATCH (n:Document)-[:SUPERSEDES]->(d) "
                "RETURN d.rel, d.title, n.rel",
                {"p": doc_path},
            )
            rel, title, newer = info[0]
            out.append((doc_path, rel or doc_path, title or rel or doc_path, newer))
        return out

    # -- what the console shows -----------------------------------------------------------------

    def overview(self, *, limit: int) -> list[dict[str, Any]]:
        """Every Document node (indexed, or made by a citation), by path, with its count of
        sections."""
        rows = self.conn.read(
            "MATCH (d:Document) OPTIONAL MATCH (d)-[:HAS_SECTION]->(s:Section) "
            "RETURN d.path, d.title, d.source_type, count(s) ORDER BY d.path LIMIT $limit",
            {"limit": limit},
        )
        return [dict(zip(_SUMMARY, row, strict=True)) for row in rows]

    def newest_indexed(
        self,
        *,
        since: datetime | None,
        until: datetime | None,
        before: tuple[datetime, str] | None,
        limit: int,
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": limit}
        where = ["d.indexed_at IS NOT NULL"]
        if since is not None:
            where.append("d.indexed_at >= $since")
            params["since"] = since
        if until is not None:
            where.append("d.indexed_at < $until")
            params["until"] = until
        if before is not None:
            where.append(
                "(d.indexed_at < $b_at OR (d.indexed_at = $b_at AND concat('doc:', d.path) < $b_key))"
            )
            params["b_at"], params["b_key"] = before
        rows = self.conn.read(
            f"MATCH (d:Document) WHERE {' AND '.join(where)} "
            "RETURN d.path, d.title, d.source_type, d.indexed_at "
            "ORDER BY d.indexed_at DESC, d.path DESC LIMIT $limit",
            params,
        )
        names = ("path", "title", "source_type", "indexed_at")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def page(self, path: str) -> dict[str, Any] | None:
        """The Document at `path`, its sections in reading order and the memories citing it,
        oldest first; None when there is none."""
        found = self.conn.read(
            "MATCH (d:Document {path: $p}) RETURN d.title, d.source_type, d.indexed_at", {"p": path}
        )
        if not found:
            return None
        sections = self.conn.read(
            "MATCH (d:Document {path: $p})-[:HAS_SECTION]->(s:Section) RETURN s.section_key, "
            "s.title, s.level, s.start_line, s.end_line ORDER BY s.ord",
            {"p": path},
        )
        cited = self.conn.read(
            "MATCH (m:Memory)-[c:CITES]->(d:Document {path: $p}) "
            "RETURN m.id, m.title, m.content, m.lifecycle, c.section ORDER BY m.created_at",
            {"p": path},
        )
        return {
            "path": path,
            **dict(zip(("title", "source_type", "indexed_at"), found[0], strict=True)),
            "sections": [dict(zip(_SECTION, row, strict=True)) for row in sections],
            "cited_by": [dict(zip(_CITATION, row, strict=True)) for row in cited],
        }

    # -- entities in chunks ---------------------------------------------------------------------

    def pending_chunks(self, limit: int) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` chunks whose entities are not extracted yet (read from
        the Pending table, then by primary key). A chunk deleted behind the store's back (by a
        caller's Cypher) has nothing left to extract."""
        while waiting := self.pending.items(CHUNK_EXTRACT, limit=limit):
            found = [
                (row[0], row[1])
                for chunk_id in waiting
                for row in self.conn.read(
                    "MATCH (c:Chunk {id: $id}) RETURN c.id, c.text", {"id": chunk_id}
                )
            ]
            gone = set(waiting).difference(chunk_id for chunk_id, _ in found)
            if gone:
                self.pending.finish(CHUNK_EXTRACT, sorted(gone))
            if found:
                return found
        return []

    def chunks_mentioning(self, entity_ids: Sequence[str], *, limit: int) -> list[tuple[str, str]]:
        """(entity id, chunk id) for the chunks naming each entity, at most `limit` an entity
        (a hub's count is all that matters past it)."""
        if not entity_ids:
            return []
        out: list[tuple[str, str]] = []
        for entity_id in entity_ids:
            out += [
                (entity_id, r[0])
                for r in self.conn.read(
                    "MATCH (c:Chunk)-[:MENTIONS]->(:Entity {id: $e}) RETURN c.id LIMIT $n",
                    {"e": entity_id, "n": limit},
                )
            ]
        return out

    def count_pending_chunks(self) -> int:
        return self.pending.counts()[CHUNK_EXTRACT]

    def write_chunk_mentions(
        self,
        chunk_ids: Sequence[str],
        *,
        extractor: str,
        entities: Sequence[EntityRow],
        aliases: dict[str, str],
        mentions: Sequence[Mention],
        at: datetime,
    ) -> None:
        """The entities the chunks name, in one transaction, and the chunks marked done. A
        chunk replaced meanwhile (its file changed) is gone, and so are its mentions."""
        with self.conn.described_entity_writes():
            put_entities(self.conn, entities, aliases, at=at)
            # a chunk's mentions are not the memories' the entity index holds
            self.conn.emit(EntityChange([(e.id, e.name, e.label) for e in entities], aliases))
            if mentions:
                self.conn.execute(
                    "UNWIND $rows AS r MATCH (c:Chunk {id: r.memory_id}), (e:Entity {id: r.entity_id}) "
                    "CREATE (c)-[:MENTIONS {name: r.name, extractor: $x}]->(e)",
                    {"rows": [asdict(m) for m in mentions], "x": extractor},
                    entity_graph=True,
                )
            self.conn.execute(
                "MATCH (c:Chunk) WHERE c.id IN $ids SET c.extracted_by = $x",
                {"ids": list(chunk_ids), "x": extractor},
            )
            self.pending.finish(CHUNK_EXTRACT, chunk_ids)

    # -- reads for search -----------------------------------------------------------------------

    def index(self) -> DocumentIndex:
        return self.state.document_index()

    def nearest_chunks(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], top: int
    ) -> list[tuple[str, float]]:
        table = chunk_table_for(space)
        if table not in self.conn.table_names():
            return []
        return self.vectors.nearest_in(table, space.dim, vector, top)

    def chunk_scores(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine of each of `ids` that has a vector in the space."""
        table = chunk_table_for(space)
        if not ids or table not in self.conn.table_names():
            return {}
        found = self.state.read_matrix(table, space.dim, lambda m: m.rows_of(ids, space.dim))
        return scores_of(found, vector)

    def spaces(self) -> set[str]:
        names = self.conn.table_names()
        return {t.removeprefix(CHUNK_PREFIX) for t in names if t.startswith(CHUNK_PREFIX)}
