"""A commit's change events as one entry of the graph's change stream (`{GRAPH}:changes`), and
back: how every node's search state learns of the writes of the others
(docs/adr/0011-falkordb-engine.md).

An entry is flat fields: `txn` (the id of the commit's marker node, `_Txn`), `node` (the
writer, which skips its own entries), `changes` (JSON: one object per event) and, for each
event that carries vectors, `vec<i>`: the float32 rows as raw bytes (a follower applies them
without reading the graph: 30 ms p95 after the write's acknowledgement, against 1.25 s when it
read them back by id). No pickle: anyone who can write to the server must not be able to run
code on a node.

Only the events of the repositories written so far are encoded; another raises
NotImplementedError naming it, so a write that emits one fails rather than leave the other
nodes behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

import numpy as np

from graphmem.indexes.changes import (
    Change,
    DocumentMoved,
    DocumentRemoved,
    DocumentWritten,
    LayersSet,
    MemoriesChanged,
    MemoriesDeleted,
    MemoriesWritten,
    VectorsAdded,
    VectorsDeleted,
    VectorSetMade,
)
from graphmem.indexes.doc_index import ChunkInfo, DocInfo, SectionInfo
from graphmem.indexes.entity_index import EntityChange

_TIME = "$t"  # {"$t": iso} in a row: a datetime (the columns hold naive UTC)
RESET = ""  # the txn of an entry that says "anything may have changed" (a caller's Cypher)


def reset_entry(*, node: str) -> dict[str, bytes]:
    """What a node appends after a caller's query wrote to the graph: it cannot say what
    changed, so every other node drops its search state, to be read again. Appended after the
    write, it has no marker to check."""
    return {"txn": RESET.encode(), "node": node.encode(), "changes": b"[]"}


def _row_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return {_TIME: value.isoformat()}
    if isinstance(value, tuple):
        return list(value)
    return value


def _row_back(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {_TIME}:
        return datetime.fromisoformat(value[_TIME])
    return value


def _texts(texts: Any) -> list[str]:
    return texts.to_pylist() if hasattr(texts, "to_pylist") else [str(t) for t in texts]


def encode(
    changes: Iterable[Change],
    *,
    txn: str,
    node: str,
    entity_graph: tuple[bool, Sequence[EntityChange] | None] = (False, None),
) -> dict[str, bytes]:
    """The stream entry of a commit's events; `entity_graph`: whether it changed the entity
    graph, and what it said it changed there (None: unknown), in an `entities` field."""
    fields: dict[str, bytes] = {"txn": txn.encode(), "node": node.encode()}
    changed, described = entity_graph
    if changed:
        said_there = None if described is None else [asdict(c) for c in described]
        fields["entities"] = json.dumps(said_there, ensure_ascii=False).encode()
    said: list[dict[str, Any]] = []
    for change in changes:
        if isinstance(change, MemoriesWritten):
            rows = [{k: _row_value(v) for k, v in row.items()} for row in change.rows]
            said.append({"e": "memories_written", "rows": rows, "texts": _texts(change.texts)})
        elif isinstance(change, MemoriesDeleted | MemoriesChanged):
            name = "memories_deleted" if isinstance(change, MemoriesDeleted) else "memories_changed"
            said.append({"e": name, "ids": list(change.ids)})
        elif isinstance(change, LayersSet):
            said.append({"e": "layers_set", "layers": dict(change.layers)})
        elif isinstance(change, VectorsAdded):
            key = f"vec{len(said)}"
            vectors = np.ascontiguousarray(change.vectors, dtype=np.float32)
            fields[key] = vectors.tobytes()
            said.append(
                {
                    "e": "vectors_added", "set": change.vector_set, "ids": list(change.ids),
                    "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0, "field": key,
                }
            )  # fmt: skip
        elif isinstance(change, VectorsDeleted):
            said.append(
                {"e": "vectors_deleted", "set": change.vector_set, "ids": sorted(change.ids)}
            )
        elif isinstance(change, VectorSetMade):
            said.append({"e": "vector_set_made", "set": change.vector_set})
        elif isinstance(change, DocumentWritten):
            said.append(
                {
                    "e": "document_written", "doc": asdict(change.doc),
                    "sections": [asdict(s) for s in change.sections],
                    "chunks": [asdict(c) for c in change.chunks],
                    "texts": _texts(change.search_texts),
                }
            )  # fmt: skip
        elif isinstance(change, DocumentMoved):
            said.append({"e": "document_moved", "doc": asdict(change.doc)})
        elif isinstance(change, DocumentRemoved):
            said.append({"e": "document_removed", "uid": change.uid})
        else:
            raise NotImplementedError(
                f"the FalkorDB engine does not stream {type(change).__name__} events yet"
            )
    fields["changes"] = json.dumps(said, ensure_ascii=False, separators=(",", ":")).encode()
    return fields


def decode(entry: Mapping[Any, bytes]) -> tuple[str, str, list[Change]]:
    """(txn, node, events) of an entry `encode` or `reset_entry` wrote (its field names as
    str or, read back from the server, as bytes); txn is RESET for the latter."""
    fields = {k.decode() if isinstance(k, bytes) else k: v for k, v in entry.items()}
    txn, node = fields["txn"].decode(), fields["node"].decode()
    changes: list[Change] = []
    for said in json.loads(fields["changes"]):
        kind = said["e"]
        if kind == "memories_written":
            rows: Sequence[dict[str, Any]] = [
                {k: _row_back(v) for k, v in row.items()} for row in said["rows"]
            ]
            changes.append(MemoriesWritten(rows, said["texts"]))
        elif kind == "memories_deleted":
            changes.append(MemoriesDeleted(said["ids"]))
        elif kind == "memories_changed":
            changes.append(MemoriesChanged(said["ids"]))
        elif kind == "layers_set":
            changes.append(LayersSet(said["layers"]))
        elif kind == "vectors_added":
            raw = fields[said["field"]]
            vectors = np.frombuffer(raw, np.float32).reshape(len(said["ids"]), said["dim"])
            changes.append(VectorsAdded(said["set"], said["ids"], vectors.copy()))
        elif kind == "vectors_deleted":
            changes.append(VectorsDeleted(said["set"], frozenset(said["ids"])))
        elif kind == "vector_set_made":
            changes.append(VectorSetMade(said["set"]))
        elif kind == "document_written":
            sections = [
                SectionInfo(**{**s, "breadcrumb": tuple(s["breadcrumb"])}) for s in said["sections"]
            ]
            chunks = [ChunkInfo(**c) for c in said["chunks"]]
            changes.append(DocumentWritten(DocInfo(**said["doc"]), sections, chunks, said["texts"]))
        elif kind == "document_moved":
            changes.append(DocumentMoved(DocInfo(**said["doc"])))
        elif kind == "document_removed":
            changes.append(DocumentRemoved(said["uid"]))
        else:
            raise ValueError(f"unknown change {kind!r} in stream entry {txn}")
    return txn, node, changes


def entity_part(entry: Mapping[Any, bytes]) -> tuple[bool, tuple[EntityChange, ...] | None]:
    """Whether the entry's commit changed the entity graph, and what it said it changed there
    (None: unknown; a caller's Cypher, a reset, may have changed it too)."""
    fields = {k.decode() if isinstance(k, bytes) else k: v for k, v in entry.items()}
    if fields["txn"].decode() == RESET:
        return True, None
    if "entities" not in fields:
        return False, None
    said = json.loads(fields["entities"])
    if said is None:
        return True, None
    return True, tuple(
        EntityChange(
            entities=[tuple(e) for e in c["entities"]],
            aliases=c["aliases"],
            mentions=[tuple(m) for m in c["mentions"]],
            facts=[tuple(f) for f in c["facts"]],
            sources=[tuple(x) for x in c["sources"]],
        )
        for c in said
    )
