"""How memories are written in Kùzu and read back: rows, parameters, filters, selections,
cursors and lookups by id, shared by the repositories that read or write memories."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from graphmem.indexes.columns import MEMORY_FIELDS, WRITTEN_FIELDS, memory_from_values
from graphmem.models import Memory, MemoryFilter, stored_time
from graphmem.storage.kuzu.connection import KuzuConnection
from graphmem.storage.selection import MemorySelection
from graphmem.text import index_text

_FIELDS = MEMORY_FIELDS
RETURN_MEMORY = ", ".join(f"m.{f}" for f in _FIELDS)
SET_FIELDS = [f for f in WRITTEN_FIELDS if f != "id"] + ["search_text"]
TIMES = {"created_at", "updated_at", "valid_from", "valid_to", "verified_at"}
POINT_LOOKUPS = 32  # up to this many ids, primary-key lookups beat Kùzu's hash join
ARROW_TYPES = {
    **{f: pa.timestamp("us", tz="UTC") for f in TIMES},
    "importance": pa.float64(),
    "confidence": pa.float64(),
    "tags": pa.list_(pa.string()),
}


def param(field: str) -> str:
    """Kùzu types a null parameter as STRING, so timestamps and lists are cast explicitly."""
    expr = f"$p_{field}"
    if field in TIMES:
        return f"CAST({expr} AS TIMESTAMP)"
    if field == "tags":
        return f"CAST({expr} AS STRING[])"
    return expr


def row_to_memory(row: Sequence[Any]) -> Memory:
    return memory_from_values(dict(zip(_FIELDS, row, strict=True)))


def memory_to_row(memory: Memory) -> dict[str, Any]:
    """What a write of the whole memory sets; not its `layer`, which sedimentation owns."""
    row = memory.model_dump(include=set(WRITTEN_FIELDS))
    for field in TIMES:  # the in-process columns compare them with what Kùzu returns
        if row[field] is not None:
            row[field] = stored_time(row[field])
    row["metadata"] = json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True)
    row["search_text"] = index_text(
        memory.content,
        title=memory.title,
        tags=memory.tags,
        context=memory.context,
        service=memory.service,
        when=memory.created_at,
    )
    return row


def filter_clause(filters: MemoryFilter, params: dict[str, Any]) -> str:
    """A WHERE fragment over `m`; archived memories are hidden unless asked for."""
    conditions = []
    for field in ("type", "kind", "context", "service", "lifecycle"):
        value = getattr(filters, field)
        if value is not None:
            conditions.append(f"m.{field} = $f_{field}")
            params[f"f_{field}"] = value
    if filters.layer is not None:  # a memory never moved is at the surface
        conditions.append("coalesce(m.layer, 'surface') = $f_layer")
        params["f_layer"] = filters.layer
    if filters.as_of is not None:
        # what was believed then: valid at that moment and already recorded
        conditions.append("(m.valid_from IS NULL OR m.valid_from <= $f_as_of)")
        conditions.append("(m.valid_to IS NULL OR m.valid_to > $f_as_of)")
        conditions.append("m.created_at <= $f_as_of")
        params["f_as_of"] = filters.as_of
    elif filters.lifecycle is None:
        conditions.append("m.lifecycle <> 'archived'")
    for i, tag in enumerate(filters.tags):
        conditions.append(f"list_contains(m.tags, $f_tag{i})")
        params[f"f_tag{i}"] = tag
    return " AND ".join(conditions) or "true"


def by_id(conn: KuzuConnection, ids: Sequence[str], returns: str) -> list[list[Any]]:
    """`returns` of the memories with these ids: a primary-key lookup each up to
    POINT_LOOKUPS ids (~0.25 ms each), one `UNWIND` beyond, which Kùzu plans as a hash join
    over the whole table (~15 ms at 100k memories)."""
    if len(ids) <= POINT_LOOKUPS:
        query = f"MATCH (m:Memory {{id: $id}}) RETURN {returns}"
        return [row for i in ids for row in conn.read(query, {"id": i})]
    return conn.read(
        f"UNWIND $ids AS i MATCH (m:Memory {{id: i}}) RETURN {returns}", {"ids": list(ids)}
    )


def selection_clause(selection: MemorySelection, params: dict[str, Any]) -> str:
    """A WHERE over `m` for the selection, its values added to `params`."""
    conditions = []
    for field, values in (("kind", selection.kinds), ("lifecycle", selection.lifecycles)):
        if values is not None:
            conditions.append(f"m.{field} IN $s_{field}")
            params[f"s_{field}"] = list(values)
    for field, value in (("context", selection.context), ("session_id", selection.session_id)):
        if value is not None:
            conditions.append(f"m.{field} = $s_{field}")
            params[f"s_{field}"] = value
    if (mentions := selection.mentions) is not None:
        said = []
        for i, tag in enumerate(mentions.tags):  # Kùzu takes no parameter inside any(...)
            said.append(f"list_contains(m.tags, $s_tag{i})")
            params[f"s_tag{i}"] = tag
        for i, word in enumerate(mentions.words):
            said.append(
                f"lower(m.content) CONTAINS $s_word{i} "
                f"OR lower(coalesce(m.title, '')) CONTAINS $s_word{i}"
            )
            params[f"s_word{i}"] = word.lower()
        conditions.append(f"({' OR '.join(said) or 'false'})")
    if (due := selection.due_for_review) is not None:
        conditions.append(
            "(m.verify_status IN ['failed', 'needs_update'] OR "
            "((m.lifecycle = 'canonical' OR m.importance >= $s_importance) AND "
            "(m.verified_at IS NULL OR m.verified_at < $s_before)))"
        )
        params["s_importance"], params["s_before"] = due.min_importance, due.before
    return " AND ".join(conditions) or "true"
