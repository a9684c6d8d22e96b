"""Every memory's fields (what recall scores, filters and returns), held in process.

Kùzu answers a lookup of a list of memory ids with a hash join over the whole table (15 ms at
100k memories, whatever the number of ids) and a single-id lookup costs ~0.25 ms, so fetching a
query's ~200 candidates from Kùzu cost more than the rest of recall. These columns are read once
per process (one arrow scan, ~0.3 s at 100k, or the saved copy), then kept in step: a write of
whole memories hands its rows over, a write of some fields marks the memory stale and it is read
again when next asked for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from graphmem.indexes.row_ids import RowIds
from graphmem.models import Memory, MemoryFilter, stored_time
from graphmem.text import ends_asking

# what a write of a whole memory sets (`memory_to_row`)
WRITTEN_FIELDS = (
    "id", "kind", "type", "title", "content", "tags", "context", "service", "importance",
    "confidence", "lifecycle", "metadata", "created_at", "updated_at", "valid_from", "valid_to",
    "owner", "verified_at", "verify_status", "session_id",
)  # fmt: skip
# a Memory's fields as stored. `layer` (see graphmem.steward.sediment) is set by sedimentation,
# and by an insert (an import keeps it), never by an update: a row written whole keeps it.
MEMORY_FIELDS = (*WRITTEN_FIELDS, "layer")
# the in-process columns: a Memory's fields and `search_text`, which recall reads but a Memory
# does not carry (in the order the saved copies keep)
FIELDS = (*WRITTEN_FIELDS, "search_text", "layer")
_KEPT = ("layer",)
Datetimes = npt.NDArray[np.datetime64]
COLUMNS = ", ".join(f"m.{f}" for f in FIELDS)  # a RETURN clause over `m`
# a memory that opens with "Name: " is a turn of a conversation, spoken by Name
SPEAKER = re.compile(r"^(?P<name>[A-Z][a-z]+): ")
_SCORING = (
    "id", "title", "created_at", "importance", "lifecycle", "session_id", "type", "kind",
    "context", "service", "tags", "valid_from", "valid_to", "search_text", "layer",
)  # fmt: skip


def memory_from_values(values: Mapping[str, Any]) -> Memory:
    data = {f: values.get(f) for f in MEMORY_FIELDS}
    data["metadata"] = json.loads(data["metadata"] or "{}")
    data["tags"] = data["tags"] or []
    return Memory.model_validate({k: v for k, v in data.items() if v is not None})


@dataclass(frozen=True)
class ScoringRow:
    id: str
    title: str | None
    created_at: datetime
    importance: float
    lifecycle: str
    session_id: str | None
    type: str | None = None
    kind: str | None = None
    context: str | None = None
    service: str | None = None
    tags: tuple[str, ...] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    search_text: str = ""
    layer: str = "surface"  # sedimentation's layer; a memory never moved is at the surface
    turn: bool = False  # a conversation turn: its content opens with "Name: "
    asks: bool = False  # a conversation turn that ends on a question (see `of`)

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> ScoringRow:
        data: dict[str, Any] = {f: values.get(f) for f in _SCORING}
        # between people, a turn that ends by asking hands the floor over: what answers it is
        # the next turn. A request to an assistant ends on a question too, but holds the facts.
        content = values.get("content") or ""  # read for recall's candidates only
        data["turn"] = bool(SPEAKER.match(content))
        data["asks"] = data["turn"] and ends_asking(content)
        data["tags"] = tuple(data["tags"] or ())
        data["search_text"] = data["search_text"] or ""
        data["importance"] = data["importance"] if data["importance"] is not None else 0.5
        data["lifecycle"] = data["lifecycle"] or "active"
        data["layer"] = data["layer"] or "surface"
        return cls(**data)

    @cached_property
    def tokens(self) -> frozenset[str]:
        """The analysed search_text, as a set."""
        return frozenset(self.search_text.split())

    def passes(self, filters: MemoryFilter) -> bool:
        """`filter_clause`'s meaning, in Python."""
        for name in ("type", "kind", "context", "service", "lifecycle"):
            wanted = getattr(filters, name)
            if wanted is not None and getattr(self, name) != wanted:
                return False
        if filters.layer is not None and self.layer != filters.layer:
            return False
        if filters.as_of is not None:
            at = stored_time(filters.as_of)
            if self.created_at > at:
                return False
            if self.valid_from is not None and self.valid_from > at:
                return False
            if self.valid_to is not None and self.valid_to <= at:
                return False
        elif filters.lifecycle is None and self.lifecycle == "archived":
            return False
        return all(tag in self.tags for tag in filters.tags)


class MemoryColumns:
    """A base arrow table as read, and an overlay of rows written since (None: deleted)."""

    def __init__(self, table: pa.Table, ids: RowIds | None = None) -> None:
        """`ids`: the table's id column as row ids, when saved with it."""
        # one chunk per column: `take` from many chunks costs ~40 ms at 1M rows, from one ~0.1
        self.table = table.select(list(FIELDS)).combine_chunks()
        self._ids = ids if ids is not None else RowIds(self.table.column(0).to_pylist())
        self._overlay: dict[str, dict[str, Any] | None] = {}
        self._stale: set[str] = set()
        self._base_speakers: frozenset[str] | None = None
        self._base_archived: list[str] | None = None  # ids archived in the base table
        self._sessions: tuple[dict[str, tuple[int, int]], pa.Array] | None = None

    def put(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Whole memories (as `memory_to_row` gives them): a field of _KEPT the row lacks keeps
        the value held (a new memory's is None)."""
        rows = list(rows)
        lacking = [row["id"] for row in rows if any(f not in row for f in _KEPT)]
        held = self.values(lacking, ("id", *_KEPT)) if lacking else {}
        for row in rows:
            kept = held.get(row["id"], {})
            self._overlay[row["id"]] = {f: row[f] if f in row else kept.get(f) for f in FIELDS}
            self._stale.discard(row["id"])

    def set_layers(self, layers: Mapping[str, str | None]) -> None:
        """New layers of some memories, set in place: a cycle moves thousands at once, too many
        to read again one by one (~5 ms at 100k rows)."""
        for memory_id, layer in layers.items():
            row = self._overlay.get(memory_id)
            if row is not None:
                row["layer"] = layer
        in_table = [i for i in layers if i not in self._overlay]
        at = self._ids.rows(in_table)
        found = at >= 0
        if not found.any():
            return
        column = self.table["layer"].to_numpy(zero_copy_only=False).astype(object)
        column[at[found]] = [
            layers[i] for i, ok in zip(in_table, found.tolist(), strict=True) if ok
        ]
        position = self.table.schema.get_field_index("layer")
        self.table = self.table.set_column(
            position, "layer", pa.array(column.tolist(), pa.string())
        )

    def drop(self, ids: Iterable[str]) -> None:
        for memory_id in ids:
            self._overlay[memory_id] = None
            self._stale.discard(memory_id)

    def mark_stale(self, ids: Iterable[str]) -> None:
        self._stale.update(ids)

    def refresh(self, fetch: Callable[[Sequence[str]], list[dict[str, Any]]]) -> None:
        """Read the stale memories again (a memory not found was deleted)."""
        if not self._stale:
            return
        stale = sorted(self._stale)
        found = {row["id"]: row for row in fetch(stale)}
        for memory_id in stale:
            self._overlay[memory_id] = found.get(memory_id)
        self._stale.clear()

    def values(
        self, ids: Iterable[str], fields: Sequence[str] = FIELDS
    ) -> dict[str, dict[str, Any]]:
        """The fields of each live memory asked for, by id (overlay rows bring them all)."""
        unique = list(dict.fromkeys(ids))
        out = {i: row for i in unique if (row := self._overlay.get(i)) is not None}
        from_table = [
            int(r) for r in self._ids.rows([i for i in unique if i not in self._overlay]) if r >= 0
        ]
        if from_table:
            taken = self.table.select(list(fields)).take(pa.array(from_table, pa.int64()))
            for row in taken.to_pylist():
                out[row["id"]] = row
        return out

    def get(self, ids: Iterable[str]) -> dict[str, ScoringRow]:
        return {k: ScoringRow.of(v) for k, v in self.values(ids, (*_SCORING, "content")).items()}

    def memories(self, ids: Iterable[str]) -> dict[str, Memory]:
        return {k: memory_from_values(v) for k, v in self.values(ids).items()}

    def newest(self, ids: Sequence[str], limit: int) -> list[str]:
        """Up to `limit` of the live `ids`, newest first; equal times keep the order given."""
        (created,) = self._times(ids, ("created_at",))
        live = np.flatnonzero(~np.isnat(created))
        order = np.argsort(-created[live].astype(np.int64), kind="stable")[:limit]
        return [ids[i] for i in live[order]]

    def windows(self, ids: Sequence[str]) -> tuple[Datetimes, Datetimes, Datetimes]:
        """(created_at, valid_from, valid_to) of each id, in order; NaT where unknown."""
        created, starts, ends = self._times(ids, ("created_at", "valid_from", "valid_to"))
        return created, starts, ends

    def _times(self, ids: Sequence[str], names: Sequence[str]) -> list[Datetimes]:
        """Each named time column of each id, in order; NaT where unknown."""
        out = [np.full(len(ids), np.datetime64("NaT"), "datetime64[us]") for _ in names]
        at = self._ids.rows(ids)
        base = (at >= 0) & np.fromiter((i not in self._overlay for i in ids), bool, len(ids))
        for column, name in zip(out, names, strict=True):
            column[base] = self.table[name].to_numpy().astype("datetime64[us]")[at[base]]
        for position, memory_id in enumerate(ids):
            row = self._overlay.get(memory_id)
            if row is not None:
                for column, name in zip(out, names, strict=True):
                    column[position] = row[name] or np.datetime64("NaT")
        return out

    def _live_overlay(self) -> list[dict[str, Any]]:
        return [row for row in self._overlay.values() if row is not None]

    # Queries below run over the whole base table and then leave out the rows the overlay
    # replaces: filtering the table against the overlay first cost ~12 ms at 100k rows on
    # every recall after a write.

    def matching(self, filters: MemoryFilter) -> set[str]:
        """Ids of the memories that pass the filters: the equality filters run in arrow over
        the base table, the rest in Python over what is left."""
        table = self.table
        for name in ("type", "kind", "context", "service", "lifecycle"):
            wanted = getattr(filters, name)
            if wanted is not None:
                table = table.filter(pc.equal(table[name], wanted))
        rows = [
            row
            for v in table.select(list(_SCORING)).to_pylist()
            if (row := ScoringRow.of(v)).id not in self._overlay
        ]
        rows += [ScoringRow.of(v) for v in self._live_overlay()]
        return {row.id for row in rows if row.passes(filters)}

    def in_sessions(self, sessions: Sequence[str]) -> dict[str, list[str]]:
        """Each session's memory ids in the order they were stored (ids are monotonic), the
        sessions in the order of their first memory."""
        spans, ids = self._base_sessions()
        order: dict[str, list[str]] = {}
        for session in dict.fromkeys(sessions):
            start, end = spans.get(session, (0, 0))
            members = ids.slice(start, end - start).to_pylist() if end > start else []
            order[session] = [m for m in members if m not in self._overlay]
        for row in self._live_overlay():
            if row["session_id"] in order:
                order[row["session_id"]].append(row["id"])
        found = {session: sorted(members) for session, members in order.items() if members}
        return dict(sorted(found.items(), key=lambda item: item[1][0]))

    def _base_sessions(self) -> tuple[dict[str, tuple[int, int]], pa.Array]:
        """Where each session's memories lie in the base table's ids sorted by session, then
        id. Sorted once: filtering the whole session column cost every call ~2 ms at 100k."""
        if self._sessions is None:
            keyed = self.table.select(["session_id", "id"])
            keyed = keyed.filter(pc.is_valid(keyed["session_id"]))
            ordered = keyed.sort_by([("session_id", "ascending"), ("id", "ascending")])
            ids = ordered["id"].combine_chunks()
            spans: dict[str, tuple[int, int]] = {}
            if len(ordered):
                runs = pc.run_end_encode(ordered["session_id"].combine_chunks())
                ends = runs.run_ends.to_pylist()
                starts = [0, *ends[:-1]]
                spans = dict(
                    zip(runs.values.to_pylist(), zip(starts, ends, strict=True), strict=True)
                )
            self._sessions = (spans, ids)
        return self._sessions

    def speakers(self) -> frozenset[str]:
        """Lowercased names that open memories the way conversation turns are stored
        ("Caroline: ..."). The base table's are found once; a memory deleted since may still
        count, which only makes its name a little more likely to be treated as a person."""
        if self._base_speakers is None:
            found = pc.extract_regex(self.table["content"], SPEAKER.pattern)
            names = pc.unique(pc.struct_field(found, 0)).to_pylist()
            self._base_speakers = frozenset(n.lower() for n in names if n)
        extra = {m[1].lower() for r in self._live_overlay() if (m := SPEAKER.match(r["content"]))}
        return self._base_speakers | extra

    def any_archived(self) -> bool:
        if any(r["lifecycle"] == "archived" for r in self._live_overlay()):
            return True
        if self._base_archived is None:
            archived = self.table.filter(pc.equal(self.table["lifecycle"], "archived"))
            self._base_archived = archived["id"].to_pylist()
        return any(i not in self._overlay for i in self._base_archived)

    def merged(self) -> pa.Table:
        """One table with the overlay folded in (what is saved for the next process)."""
        if not self._overlay:
            return self.table
        replaced = pa.array(list(self._overlay), pa.string())
        base = self.table.filter(pc.invert(pc.is_in(self.table["id"], value_set=replaced)))
        added = pa.Table.from_pylist(self._live_overlay(), schema=self.table.schema)
        return pa.concat_tables([base, added]).combine_chunks()
