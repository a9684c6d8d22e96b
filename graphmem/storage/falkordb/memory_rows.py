"""How memories are written to FalkorDB and read back: rows, their times as microseconds, the
returned columns, filters and cursors."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from graphmem.indexes.columns import FIELDS, MEMORY_FIELDS, WRITTEN_FIELDS, memory_from_values
from graphmem.models import Memory, MemoryFilter, stored_time
from graphmem.storage.falkordb.values import from_micros
from graphmem.storage.selection import MemorySelection
from graphmem.text import index_text

TIMES = frozenset({"created_at", "updated_at", "valid_from", "valid_to", "verified_at"})
RETURN_MEMORY = ", ".join(f"m.{f}" for f in MEMORY_FIELDS)
RETURN_COLUMNS = ", ".join(f"m.{f}" for f in FIELDS)
SET_FIELDS = [f for f in WRITTEN_FIELDS if f != "id"] + ["search_text"]
ARROW_TYPES = {
    **{f: pa.timestamp("us") for f in TIMES},  # naive UTC, as the embedded engines return
    "importance": pa.float64(),
    "confidence": pa.float64(),
    "tags": pa.list_(pa.string()),
}


def memory_to_row(memory: Memory) -> dict[str, Any]:
    """What a write of the whole memory sets (not its layer), times as naive UTC datetimes: the
    columns' form; the connection sends them as microseconds."""
    row = memory.model_dump(include=set(WRITTEN_FIELDS))
    for field in TIMES:
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


def values_of(fields: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """A returned row as field -> value, times back to naive UTC datetimes."""
    return {f: from_micros(v) if f in TIMES else v for f, v in zip(fields, row, strict=True)}


def row_to_memory(row: Sequence[Any]) -> Memory:
    return memory_from_values(values_of(MEMORY_FIELDS, row))


def columns_table(rows: Sequence[Sequence[Any]]) -> pa.Table:
    """Rows of RETURN_COLUMNS as the arrow table the in-process columns are built from."""
    values = [values_of(FIELDS, row) for row in rows]
    return pa.table(
        {f: pa.array([v[f] for v in values], ARROW_TYPES.get(f, pa.string())) for f in FIELDS}
    )


def filter_clause(filters: MemoryFilter, params: dict[str, Any]) -> str:
    """A WHERE fragment over `m`; archived memories are hidden unless asked for. Times are
    compared as the microseconds they are stored as (the parameters are converted alike)."""
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
        conditions.append("(m.valid_from IS NULL OR m.valid_from <= $f_as_of)")
        conditions.append("(m.valid_to IS NULL OR m.valid_to > $f_as_of)")
        conditions.append("m.created_at <= $f_as_of")
        params["f_as_of"] = filters.as_of
    elif filters.lifecycle is None:
        conditions.append("m.lifecycle <> 'archived'")
    for i, tag in enumerate(filters.tags):
        conditions.append(f"$f_tag{i} IN m.tags")
        params[f"f_tag{i}"] = tag
    return " AND ".join(conditions) or "true"


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
        for i, tag in enumerate(mentions.tags):
            said.append(f"$s_tag{i} IN m.tags")
            params[f"s_tag{i}"] = tag
        for i, word in enumerate(mentions.words):
            said.append(
                f"toLower(m.content) CONTAINS $s_word{i} "
                f"OR toLower(coalesce(m.title, '')) CONTAINS $s_word{i}"
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
