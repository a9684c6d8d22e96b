"""Documents in FalkorDB: a file's Document node, its Section tree and its Chunks, written one
file per transaction; the chunks' entities; and document search's reads from the search state,
as on the embedded engines (graphmem/storage/kuzu/documents.py).

A transaction here is one query sent at its end (graphmem.storage.falkordb.connection): what a
write must know of the store (the chunks a file had, the vector sets there are) is read before
it buffers anything, for its change events. What it deletes on the server is chosen in the
statement itself, so a file another node rewrote meanwhile loses no vector or waiting work of a
chunk it still has, and keeps none of one it no longer has.
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

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.indexes.changes import DocumentMoved, DocumentRemoved, DocumentWritten, VectorsDeleted
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, DocumentIndex, SectionInfo
from graphmem.indexes.entity_index import EntityChange
from graphmem.indexes.search_state import SearchState
from graphmem.indexes.vectors import CHUNK_PREFIX, nearest, scores_of
from graphmem.models import utcnow
from graphmem.storage.falkordb.connection import FalkorConnection
from graphmem.storage.falkordb.graph_writes import put_entities
from graphmem.storage.falkordb.pending import FalkorPending, pending_key
from graphmem.storage.falkordb.values import from_micros
from graphmem.storage.falkordb.vectors import FalkorVectors, chunk_table_for
from graphmem.storage.protocols.documents import DocumentWrite, IndexedDocument
from graphmem.storage.protocols.entities import EntityRow, Mention
from graphmem.storage.protocols.pending import CHUNK_EXTRACT

# the fields of the console's rows (graphmem.documents.models)
_SUMMARY = ("path", "title", "source_type", "sections")
_SECTION = ("section_key", "title", "level", "start_line", "end_line")
_CITATION = ("memory_id", "title", "content", "lifecycle", "section")
_WAITING = pending_key(CHUNK_EXTRACT, "")  # a chunk's Pending key, less its id


def _document_row(write: DocumentWrite, at: datetime) -> dict[str, Any]:
    doc = write.doc
    return {
        "path": doc.path, "uid": doc.uid, "root": doc.root, "rel": doc.rel, "title": doc.title,
        "type": doc.source_type, "sha": write.sha256, "size": write.size, "mtime": write.mtime,
        "at": at, "meta": json.dumps(write.metadata, default=str, ensure_ascii=False),
    }  # fmt: skip


class FalkorDocuments:
    """graphmem.storage.protocols.Documents over one connection and the search state."""

    def __init__(
        self,
        conn: FalkorConnection,
        state: SearchState,
        vectors: FalkorVectors,
        pending: FalkorPending,
    ) -> None:
        self.conn = conn
        self.state = state
        self.vectors = vectors
        self.pending = pending

    # -- what is indexed ------------------------------------------------------------------------

    def indexed_documents(self, root: str) -> dict[str, IndexedDocument]:
        rows = self.conn.read(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL AND d.root = $root "
            "RETURN d.path, d.uid, d.indexed_sha, d.rel",
            {"root": root},
        )
        return {p: IndexedDocument(p, u, s, r) for p, u, s, r in rows}

    def indexed_locations(self) -> tuple[list[str], list[str]]:
        rows = self.conn.read(
            "MATCH (d:Document) WHERE d.indexed_sha IS NOT NULL RETURN d.rel, d.root"
        )
        return [r for r, root in rows if not root], sorted({root for _, root in rows if root})

    def chunk_ids_of(self, uid: str) -> set[str]:
        rows = self.conn.read("MATCH (c:Chunk {doc: $uid}) RETURN c.id", {"uid": uid})
        return {r[0] for r in rows}

    def chunk_vector_ids(self, space: EmbeddingSpace, ids: Iterable[str]) -> set[str]:
        table = chunk_table_for(space)
        if not self.vectors.has_set(table):
            return set()
        known = self.state.read_matrix(table, space.dim, lambda m: m.ids)
        return {i for i in ids if i in known}

    # -- writes ---------------------------------------------------------------------------------

    def write(self, writes: Sequence[DocumentWrite], space: EmbeddingSpace) -> None:
        """Replace the files' sections and chunks in one query: a file is never half written.
        The chunks the files had are read first, for the search state's events."""
        if not writes:
            return
        uids = [w.doc.uid for w in writes]
        keep = {c.id for w in writes for c in w.chunks}
        table = chunk_table_for(space)
        gone = self._chunks_of(uids) - keep
        self.vectors.ensure_set(table, space.dim)  # may buffer the set's record
        now = utcnow()
        with self.conn.transaction():
            self.conn.write(
                "UNWIND $docs AS r MERGE (d:Document {path: r.path}) SET d.uid = r.uid, "
                "d.root = r.root, d.rel = r.rel, d.title = r.title, d.source_type = r.type, "
                "d.indexed_sha = r.sha, d.size = r.size, d.mtime = r.mtime, d.indexed_at = r.at, "
                "d.metadata = r.meta",
                {"docs": [_document_row(w, now) for w in writes]},
            )
            self._drop_vanished({w.doc.uid: [c.id for c in w.chunks] for w in writes}, [table])
            self._drop_structure(uids)
            self._insert_sections(
                [s for w in writes for s in w.sections],
                {k: v for w in writes for k, v in w.parents.items()},
            )
            self._insert_chunks(
                [c for w in writes for c in w.chunks], [t for w in writes for t in w.search_texts]
            )
            # every chunk written waits for extraction (its mentions went with the old node)
            self.pending.put(CHUNK_EXTRACT, sorted(keep), at=now)
            if gone:
                self.conn.emit(VectorsDeleted(table, frozenset(gone)))
            new = {k: v for w in writes for k, v in w.new_vectors.items()}
            if new:
                matrix = np.stack(list(new.values())).astype(np.float32)
                self.vectors.insert(table, space, list(new), matrix)
            for w in writes:
                self.conn.emit(DocumentWritten(w.doc, w.sections, w.chunks, w.search_texts))

    def _chunks_of(self, uids: Sequence[str]) -> set[str]:
        rows = self.conn.read(
            "UNWIND $u AS u MATCH (c:Chunk {doc: u}) RETURN c.id", {"u": list(uids)}
        )
        return {r[0] for r in rows}

    def _drop_vanished(self, keep: dict[str, list[str]], tables: Sequence[str]) -> None:
        """The vectors and waiting work of each document's chunks but those it keeps (document
        uid -> chunk ids), chosen when the query runs, before the chunks themselves go."""
        vanished = "UNWIND $docs AS d MATCH (c:Chunk {doc: d.uid}) WHERE NOT c.id IN d.keep "
        params = {"docs": [{"uid": uid, "keep": ids} for uid, ids in keep.items()]}
        for table in tables:
            self.conn.write(vanished + f"MATCH (v:{table} {{id: c.id}}) DELETE v", params)
        self.conn.write(
            vanished + "MATCH (p:Pending {key: $w + c.id}) DELETE p", {**params, "w": _WAITING}
        )

    def _drop_structure(self, uids: Sequence[str]) -> None:
        """A node's DELETE takes its edges: the chunks' mentions, NEXT and IN_SECTION too."""
        self.conn.write(
            "UNWIND $u AS u MATCH (c:Chunk {doc: u}) DELETE c", {"u": list(uids)}, entity_graph=True
        )
        self.conn.write(
            "UNWIND $u AS u MATCH (s:Section {doc: u}) DELETE s",
            {"u": list(uids)},
            entity_graph=True,
        )

    def _insert_sections(self, sections: Sequence[SectionInfo], parents: dict[str, str]) -> None:
        if not sections:
            return
        rows = [{**asdict(s), "breadcrumb": list(s.breadcrumb)} for s in sections]
        self.conn.write(
            "UNWIND $rows AS r CREATE (s:Section {key: r.key, doc: r.doc, "
            "section_key: r.section_key, title: r.title, level: r.level, "
            "breadcrumb: r.breadcrumb, ord: r.ord, start_line: r.start_line, "
            "end_line: r.end_line}) "
            "WITH s, r MATCH (d:Document {uid: r.doc}) CREATE (d)-[:HAS_SECTION]->(s)",
            {"rows": rows},
        )
        pairs = [{"c": child, "p": parent} for child, parent in parents.items()]
        if pairs:
            self.conn.write(
                "UNWIND $pairs AS p MATCH (c:Section {key: p.c}), (s:Section {key: p.p}) "
                "CREATE (c)-[:CHILD_OF]->(s)",
                {"pairs": pairs},
            )

    def _insert_chunks(self, chunks: Sequence[ChunkInfo], search_texts: Sequence[str]) -> None:
        if not chunks:
            return
        rows = [
            {**asdict(c), "search_text": text} for c, text in zip(chunks, search_texts, strict=True)
        ]
        self.conn.write(
            "UNWIND $rows AS r CREATE (c:Chunk {id: r.id, doc: r.doc, section: r.section, "
            "ord: r.ord, text: r.text, search_text: r.search_text, start_line: r.start_line, "
            "end_line: r.end_line}) "
            "WITH c, r MATCH (s:Section {key: r.section}) CREATE (c)-[:IN_SECTION]->(s)",
            {"rows": rows},
        )
        ordered = sorted(chunks, key=lambda c: (c.doc, c.ord))
        pairs = [{"a": a.id, "b": b.id} for a, b in itertools.pairwise(ordered) if a.doc == b.doc]
        if pairs:
            self.conn.write(
                "UNWIND $pairs AS p MATCH (a:Chunk {id: p.a}), (b:Chunk {id: p.b}) "
                "CREATE (a)-[:NEXT]->(b)",
                {"pairs": pairs},
            )

    def move(self, old_path: str, doc: DocInfo) -> None:
        """A renamed file: its sections and chunks stay (they are keyed by the document's uid);
        the node moves to the new path with the citations that pointed at the old one."""
        with self.conn.transaction():
            self.conn.write(
                "MATCH (o:Document {path: $old}) "
                "CREATE (:Document {path: $new, uid: o.uid, root: $root, rel: $rel, title: o.title, "
                "source_type: o.source_type, indexed_sha: o.indexed_sha, sha256: o.sha256, "
                "size: o.size, mtime: o.mtime, indexed_at: o.indexed_at, metadata: o.metadata})",
                {"old": old_path, "new": doc.path, "root": doc.root, "rel": doc.rel},
            )
            self.conn.write(
                "MATCH (d:Document {path: $new}) MATCH (s:Section {doc: d.uid}) "
                "CREATE (d)-[:HAS_SECTION]->(s)",
                {"new": doc.path},
            )
            self.conn.write(
                "MATCH (m:Memory)-[c:CITES]->(:Document {path: $old}), (d:Document {path: $new}) "
                "CREATE (m)-[:CITES {section: c.section, sha256_at_verify: c.sha256_at_verify, "
                "at: c.at}]->(d)",
                {"old": old_path, "new": doc.path},
            )
            self.conn.write(
                "MATCH (o:Document {path: $old}) DELETE o", {"old": old_path}, entity_graph=True
            )
            self.conn.emit(DocumentMoved(doc))

    def remove(self, paths: Sequence[str], spaces: Sequence[EmbeddingSpace]) -> None:
        """Files that are gone: their sections, chunks and chunk vectors. A document that
        memories cite keeps its node (the citation then reports the file missing)."""
        tables = [chunk_table_for(s) for s in spaces if self.vectors.has_set(chunk_table_for(s))]
        for path in paths:
            rows = self.conn.read("MATCH (d:Document {path: $p}) RETURN d.uid", {"p": path})
            if not rows or rows[0][0] is None:
                continue
            uid = rows[0][0]
            ids = self.chunk_ids_of(uid)
            with self.conn.transaction():
                self._drop_vanished({uid: []}, tables)
                self._drop_structure([uid])
                for table in tables:
                    if ids:
                        self.conn.emit(VectorsDeleted(table, frozenset(ids)))
                self.conn.write(
                    "MATCH (d:Document {path: $p}) WHERE NOT (:Memory)-[:CITES]->(d) DELETE d",
                    {"p": path},
                )
                self.conn.write(
                    "MATCH (d:Document {path: $p}) SET d.indexed_sha = NULL, d.uid = NULL",
                    {"p": path},
                )
                self.conn.emit(DocumentRemoved(uid))

    # -- ADRs that supersede others -------------------------------------------------------------

    def state_supersessions(self, stated_by: str, pairs: Sequence[tuple[str, str]]) -> None:
        with self.conn.transaction():
            self.conn.write(
                "MATCH (:Document)-[s:SUPERSEDES]->(:Document) WHERE s.reason = $by DELETE s",
                {"by": stated_by},
                entity_graph=True,
            )
            if pairs:
                self.conn.write(
                    "UNWIND $pairs AS p MATCH (n:Document {path: p.n}), (o:Document {path: p.o}) "
                    "MERGE (n)-[s:SUPERSEDES]->(o) SET s.reason = $by, s.at = $at",
                    {"pairs": [{"n": n, "o": o} for n, o in pairs], "by": stated_by,
                     "at": utcnow()},
                    entity_graph=True,
                )  # fmt: skip

    def chain(self, path: str) -> list[tuple[str, str, str, str | None]]:
        rows = self.conn.read(
            "MATCH (a:Document {path: $p})-[:SUPERSEDES*1..30]-(d:Document) RETURN DISTINCT d.path "
            "UNION MATCH (d:Document {path: $p}) RETURN d.path",
            {"p": path},
        )
        out = []
        for (doc_path,) in rows:
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
        """Times are compared as the microseconds they are stored as (parameters alike)."""
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
                "(d.indexed_at < $b_at OR (d.indexed_at = $b_at AND 'doc:' + d.path < $b_key))"
            )
            params["b_at"], params["b_key"] = before
        rows = self.conn.read(
            f"MATCH (d:Document) WHERE {' AND '.join(where)} "
            "RETURN d.path, d.title, d.source_type, d.indexed_at "
            "ORDER BY d.indexed_at DESC, d.path DESC LIMIT $limit",
            params,
        )
        return [
            {"path": p, "title": t, "source_type": s, "indexed_at": from_micros(at)}
            for p, t, s, at in rows
        ]

    def page(self, path: str) -> dict[str, Any] | None:
        found = self.conn.read(
            "MATCH (d:Document {path: $p}) RETURN d.title, d.source_type, d.indexed_at", {"p": path}
        )
        if not found:
            return None
        title, source_type, indexed_at = found[0]
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
            "title": title,
            "source_type": source_type,
            "indexed_at": from_micros(indexed_at),
            "sections": [dict(zip(_SECTION, row, strict=True)) for row in sections],
            "cited_by": [dict(zip(_CITATION, row, strict=True)) for row in cited],
        }

    # -- entities in chunks ---------------------------------------------------------------------

    def pending_chunks(self, limit: int) -> list[tuple[str, str]]:
        """(id, text) of up to `limit` chunks whose entities are not extracted yet, in the
        order they wait. A chunk deleted behind the store's back (by a caller's Cypher) has
        nothing left to extract."""
        while waiting := self.pending.items(CHUNK_EXTRACT, limit=limit):
            texts = {
                row[0]: row[1]
                for row in self.conn.read(
                    "UNWIND $ids AS i MATCH (c:Chunk {id: i}) RETURN c.id, c.text",
                    {"ids": waiting},
                )
            }
            gone = [chunk_id for chunk_id in waiting if chunk_id not in texts]
            if gone:
                self.pending.finish(CHUNK_EXTRACT, sorted(gone))
            if texts:
                return [(chunk_id, texts[chunk_id]) for chunk_id in waiting if chunk_id in texts]
        return []

    def chunks_mentioning(self, entity_ids: Sequence[str], *, limit: int) -> list[tuple[str, str]]:
        """(entity id, chunk id) for the chunks naming each entity, at most `limit` an entity
        (a hub's count is all that matters past it)."""
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
        """One query, reading nothing: a chunk replaced meanwhile (its file changed) is gone
        when it lands, and its mentions with it."""
        with self.conn.described_entity_writes():
            put_entities(self.conn, entities, aliases, at=at)
            # a chunk's mentions are not the memories' the entity index holds
            self.conn.emit(EntityChange([(e.id, e.name, e.label) for e in entities], aliases))
            if mentions:
                self.conn.write(
                    "UNWIND $rows AS r MATCH (c:Chunk {id: r.memory_id}), "
                    "(e:Entity {id: r.entity_id}) "
                    "CREATE (c)-[:MENTIONS {name: r.name, extractor: $x}]->(e)",
                    {"rows": [asdict(m) for m in mentions], "x": extractor},
                    entity_graph=True,
                )
            if chunk_ids:
                self.conn.write(
                    "UNWIND $ids AS i MATCH (c:Chunk {id: i}) SET c.extracted_by = $x",
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
        if not self.vectors.has_set(table):
            return []
        view = self.state.read_matrix(table, space.dim, lambda m: m.search_view(space.dim))
        return nearest(view, vector, top, None)

    def chunk_scores(
        self, space: EmbeddingSpace, vector: npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, float]:
        table = chunk_table_for(space)
        if not ids or not self.vectors.has_set(table):
            return {}
        found = self.state.read_matrix(table, space.dim, lambda m: m.rows_of(ids, space.dim))
        return scores_of(found, vector)

    def spaces(self) -> set[str]:
        return {
            s.removeprefix(CHUNK_PREFIX)
            for s in self.vectors.vector_sets()
            if s.startswith(CHUNK_PREFIX)
        }
