"""Sedimentation: memories settle through four layers as they prove themselves, and sink back
when nobody uses them.

    surface -> episodic -> semantic -> character

- A new memory is at the surface (a null `layer` reads as surface: stores written before
  sedimentation need no rewrite).
- Up, one layer a cycle: a surface memory that outlived `sediment_settle_hours` settles to
  episodic; an episodic one at least `sediment_semantic_days` old that was asked for by id or
  filter `sediment_semantic_uses` times, or that other knowledge refers to, becomes semantic; a
  semantic one that is canonical, or was asked for `sediment_character_uses` times and is
  referred to twice, becomes character.
- Down, one layer a cycle: a semantic or character memory (not canonical) neither used nor moved
  for `sediment_disuse_days` sinks. It rises again only once used after it sank, so the lifetime
  counts that lifted it do not lift it straight back.
- A layer set by hand holds: a promoted memory's disuse clock starts at the promotion, and a
  demoted one is not lifted again by the cycle for `sediment_disuse_days`.
- Only live memories move (active, canonical; sessions' own records left out).

Every move is audited under its run (`steward:sediment`, the layers before and after), so
`steward_undo(run)` puts them back, except where a memory moved again since. In recall a layer is
a small feature (`RecallConfig.w_layer`), never a filter: a new memory stays findable.

The cycle reads what it decides by in one arrow scan, decides in numpy and writes in batches:
100k memories take about a second.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from graphmem.errors import InvalidInput, NotFound
from graphmem.ids import new_id
from graphmem.models import stored_time, utcnow
from graphmem.steward.models import LAYERS, SedimentMove, SedimentReport

if TYPE_CHECKING:
    from graphmem.steward.models import StewardPolicy
    from graphmem.storage.protocols import Store

ACTION = "steward:sediment"
MOVES_LISTED = 1000  # a report lists this many moves; its counts cover all of them
AUDIT_CHUNK = 1000  # moves an audit row holds
# a layer as an audit row keeps it: (layer, layer_at as ISO text, layer_by), as stored
State = tuple[str | None, str | None, str | None]
Times = npt.NDArray[np.datetime64]


@dataclass(frozen=True)
class Step:
    memory: str
    from_layer: str
    to_layer: str
    reason: str
    was: State  # the layer as stored before the move


def plan(
    table: pa.Table, references: dict[str, int], policy: StewardPolicy, now: datetime
) -> list[Step]:
    """The moves of one cycle over `StewardRepository.sediment_table`'s rows, one step at most
    a memory; `references` as `reference_counts` gives them."""
    if table.num_rows == 0:
        return []
    ids = table["id"].to_pylist()
    layer_column = pc.cast(table["layer"], pa.string())
    rank = pc.fill_null(pc.index_in(layer_column, value_set=pa.array(LAYERS)), 0)
    level = rank.to_numpy(zero_copy_only=False).astype(np.int64)
    by = pc.cast(table["layer_by"], pa.string()).to_numpy(zero_copy_only=False)
    canonical = np.asarray(pc.equal(table["lifecycle"], "canonical").to_numpy(), dtype=bool)
    created, accessed, layer_at = (
        _times(table[n]) for n in ("created_at", "accessed_at", "layer_at")
    )
    targeted = table["targeted"].to_numpy(zero_copy_only=False).astype(np.int64)
    refs = np.fromiter((references.get(i, 0) for i in ids), np.int64, len(ids))

    clock = np.datetime64(stored_time(now), "us")

    def ago(days: float) -> np.datetime64:
        return clock - np.timedelta64(round(days * 86_400e6), "us")

    disused_before = ago(policy.sediment_disuse_days)
    # the latest of creation, use and layer change (NaT, never, is passed over)
    touched = np.fmax(np.fmax(created, accessed), layer_at)
    held = (by == "demote") & (layer_at > disused_before)  # a demotion by hand holds
    sunk = (by == "down") & ~(accessed > layer_at)  # sank for disuse, not used since
    may_rise = ~held & ~sunk
    down = (level >= 2) & ~canonical & (touched <= disused_before)
    settle_before = ago(policy.sediment_settle_hours / 24)
    semantic_before = ago(policy.sediment_semantic_days)
    moves = (
        ("settled", 1, may_rise & (level == 0) & (created <= settle_before)),
        ("used", 1, may_rise & (level == 1) & (created <= semantic_before)
         & ((targeted >= policy.sediment_semantic_uses) | (refs >= 1))),
        ("canonical", 1, may_rise & (level == 2) & canonical),
        ("relied_on", 1, may_rise & (level == 2) & ~canonical & ~down
         & (targeted >= policy.sediment_character_uses) & (refs >= 2)),
        ("disused", -1, down),
    )  # fmt: skip
    raw_layer, raw_by = layer_column.to_pylist(), by.tolist()
    steps = []
    for reason, step, mask in moves:
        for i in np.flatnonzero(mask).tolist():
            at = None if np.isnat(layer_at[i]) else _iso(layer_at[i])
            steps.append(
                Step(ids[i], LAYERS[level[i]], LAYERS[level[i] + step], reason,
                     (raw_layer[i], at, raw_by[i]))
            )  # fmt: skip
    return steps


def cycle(store: Store, policy: StewardPolicy, *, dry_run: bool, actor: str) -> SedimentReport:
    """Plan the moves of one cycle and, unless `dry_run`, make them under a new run."""
    clock, now = time.perf_counter(), utcnow()
    table = store.steward.sediment_table()
    steps = plan(table, store.steward.reference_counts(), policy, now)
    report = SedimentReport(dry_run=dry_run, looked_at=table.num_rows)
    report.counts = dict(Counter(f"{s.from_layer}->{s.to_layer}" for s in steps))
    layers = Counter(pc.fill_null(pc.cast(table["layer"], pa.string()), "surface").to_pylist())
    for s in steps:
        layers[s.from_layer] -= 1
        layers[s.to_layer] += 1
    report.layers = {name: layers[name] for name in LAYERS}
    if steps and not dry_run:
        report.run = new_id()
        _apply(store, steps, run=report.run, actor=actor, at=now, note=None)
    listed = steps[:MOVES_LISTED]
    labels = store.memories.labels([s.memory for s in listed]) if listed else {}
    report.moves = [_move(s, labels.get(s.memory, "")) for s in listed]
    report.unlisted = len(steps) - len(listed)
    report.seconds = round(time.perf_counter() - clock, 3)
    return report


def by_hand(
    store: Store,
    memory_id: str,
    *,
    up: bool,
    layer: str | None,
    note: str | None,
    actor: str,
) -> SedimentMove:
    """One layer up (down), or to `layer`, which must be above (below) the memory's own."""
    if layer is not None and layer not in LAYERS:
        raise InvalidInput(f"layer must be one of {', '.join(LAYERS)}", layer=layer)
    state = store.steward.layer_states([memory_id]).get(memory_id)
    if state is None:
        raise NotFound(f"no memory with id {memory_id!r}", id=memory_id)
    current = LAYERS.index(state[0]) if state[0] in LAYERS else 0
    target = current + (1 if up else -1) if layer is None else LAYERS.index(layer)
    if not 0 <= target < len(LAYERS):
        raise InvalidInput(
            f"{memory_id} is {LAYERS[current]}: no layer {'above' if up else 'below'} it",
            id=memory_id,
        )
    if target == current or (target > current) != up:
        raise InvalidInput(
            f"{memory_id} is {LAYERS[current]}: {layer} is not {'above' if up else 'below'} it",
            id=memory_id,
            layer=layer,
        )
    at = state[1]
    step = Step(memory_id, LAYERS[current], LAYERS[target], "by_hand",
                (state[0], None if at is None else _iso(at), state[2]))  # fmt: skip
    run = new_id()
    _apply(store, [step], run=run, actor=actor, at=utcnow(), note=note)
    move = _move(step, store.memories.labels([memory_id]).get(memory_id, ""))
    move.note, move.run = note, run
    return move


def _apply(
    store: Store, steps: list[Step], *, run: str, actor: str, at: datetime, note: str | None
) -> None:
    """Write the moves and their audit rows in one transaction."""
    stamp = stored_time(at)

    def how(step: Step) -> str:
        up = LAYERS.index(step.to_layer) > LAYERS.index(step.from_layer)
        if step.reason == "by_hand":
            return "promote" if up else "demote"
        return "up" if up else "down"

    with store.transaction():
        store.steward.set_layers([(s.memory, s.to_layer, stamp, how(s)) for s in steps])
        for start in range(0, len(steps), AUDIT_CHUNK):
            chunk = steps[start : start + AUDIT_CHUNK]
            store.steward.audit_step(
                actor=actor, action=ACTION, target=chunk[0].memory, item=None, run=run,
                before={"layers": {s.memory: list(s.was) for s in chunk}},
                after={"kind": "sediment", "note": note,
                       "layers": {s.memory: [s.to_layer, stamp.isoformat(), how(s)] for s in chunk},
                       "reasons": {s.memory: s.reason for s in chunk}},
            )  # fmt: skip


def moved_since(store: Store, after: dict[str, list[str | None]]) -> list[str]:
    """The memories of an audit row whose layer is no longer what the move left (moved again,
    or gone)."""
    if not after:
        return []
    now = store.steward.layer_states(list(after))
    return [
        memory_id
        for memory_id, state in after.items()
        if (found := now.get(memory_id)) is None or list(_state(found)) != list(state)
    ]


def restore(store: Store, before: dict[str, list[str | None]], skip: set[str]) -> list[str]:
    """Put back the layers an audit row kept, but those of `skip`; in the caller's
    transaction."""
    rows = [
        (memory_id, layer, None if at is None else datetime.fromisoformat(at), by)
        for memory_id, (layer, at, by) in before.items()
        if memory_id not in skip
    ]
    if rows:
        store.steward.set_layers(rows)
    return [row[0] for row in rows]


def _move(step: Step, label: str) -> SedimentMove:
    return SedimentMove(
        memory=step.memory, title=label, from_layer=step.from_layer,  # type: ignore[arg-type]
        to_layer=step.to_layer, reason=step.reason,  # type: ignore[arg-type]
    )  # fmt: skip


def _state(found: tuple[str | None, datetime | None, str | None]) -> State:
    layer, at, by = found
    return layer, None if at is None else stored_time(at).isoformat(), by


def _iso(value: np.datetime64 | datetime) -> str:
    """A stored time (naive UTC) as an audit row keeps it."""
    if isinstance(value, np.datetime64):
        at: datetime = value.astype("datetime64[us]").astype(datetime)
        return at.isoformat()
    return stored_time(value).isoformat()


def _times(column: pa.ChunkedArray) -> Times:
    """A timestamp column as naive UTC microseconds, NaT where null."""
    cast = pc.cast(column, pa.timestamp("us"))
    times: Times = cast.to_numpy(zero_copy_only=False).astype("datetime64[us]")
    return times
