"""An exported JSONL line as a new memory, and what the line brings of its embedding."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from graphmem.embeddings.base import EmbeddingSpace
from graphmem.errors import InvalidInput, validation_message
from graphmem.idempotency import CALL_FIELDS
from graphmem.ids import new_id
from graphmem.models import Memory, MemoryInput, parse_time, utcnow, validated
from graphmem.passages import MAX_PASSAGES, passages

_M = TypeVar("_M", bound=Memory)


def new_memory(model: type[_M], item: MemoryInput, kept: Mapping[str, Any] | None = None) -> _M:
    """A `model` (Memory or a subclass) from validated input, its dates defaulted and its id new; `kept`: fields an
    import carries over (id, dates, lifecycle), validated with the rest in one go."""
    now = utcnow()
    created = item.created_at or now
    values = {
        "created_at": created,
        "updated_at": now,
        "valid_from": item.valid_from or created,
        **item.model_dump(exclude={"created_at", "valid_from", *CALL_FIELDS}),
        **(kept or {}),
    }
    if "id" not in values:
        values["id"] = new_id(created)
    return model.model_validate(values)


_KEPT_ON_IMPORT = (
    "id", "updated_at", "valid_to", "lifecycle", "confidence", "owner", "verified_at", "verify_status",
    "layer",
)  # fmt: skip


@dataclass(frozen=True)
class Supplied:
    """What an imported line brings of its embedding: its vector, its passages' vectors."""

    vector: npt.NDArray[np.float32] | None = None
    passages: npt.NDArray[np.float32] | None = None

    def complete(self, memory: Memory) -> bool:
        """Nothing of the memory is left to embed."""
        return self.vector is not None and (
            self.passages is not None or not passages(memory.content)
        )


def memory_from_json(line: str, space: EmbeddingSpace) -> tuple[Memory, Supplied, bool]:
    """One exported memory, validated like a new one; its id, dates, lifecycle and layer are
    kept (a line without a layer, from before sedimentation, is at the surface).
    The flag says whether the line named the id.

    A `vector` (and `passages`) is used as the memory's embedding only when `embedding_space`
    names the store's active space: vectors of another model would be compared with this one's
    and mislead recall, so such a memory is embedded again instead."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise InvalidInput("not a JSON object")
    label = data.pop("embedding_space", None)
    vector = _supplied_vector(data.pop("vector", None), label, space)
    brought = Supplied(vector, _supplied_passages(data.pop("passages", None), label, space))
    kept = {k: data.pop(k) for k in _KEPT_ON_IMPORT if k in data}
    if "layer" in kept and kept["layer"] is None:  # as stored: a null layer is the surface
        del kept["layer"]
    item = validated(MemoryInput, data)
    try:
        for key in ("updated_at", "valid_to", "verified_at"):
            if key in kept:
                kept[key] = parse_time(kept[key])
        if kept and kept.get("updated_at") is None:
            kept["updated_at"] = item.created_at or utcnow()
        return new_memory(Memory, item, kept), brought, "id" in kept
    except (ValidationError, ValueError) as exc:
        message = validation_message(exc) if isinstance(exc, ValidationError) else str(exc)
        raise InvalidInput(message) from exc


def _supplied_vector(
    vector: Any, label: Any, space: EmbeddingSpace
) -> npt.NDArray[np.float32] | None:
    if vector is None:
        return None
    if label is None:
        raise InvalidInput(f"a vector needs its embedding_space (this store uses {space.label!r})")
    if label != space.label:
        return None
    try:
        if isinstance(vector, str):  # base64 of little-endian float32: 4x faster to parse
            array = np.frombuffer(base64.b64decode(vector, validate=True), dtype="<f4")
        else:
            array = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            "vector must be a list of numbers or base64 of little-endian float32"
        ) from exc
    norm = math.sqrt(float(array @ array)) if array.shape == (space.dim,) else math.nan
    if not math.isfinite(norm):  # a NaN or an infinity anywhere makes the norm one too
        raise InvalidInput(f"vector must be {space.dim} finite numbers for {space.label}")
    if norm == 0:
        raise InvalidInput("vector must not be all zeros")
    return array * np.float32(1 / norm)


def _supplied_passages(
    rows: Any, label: Any, space: EmbeddingSpace
) -> npt.NDArray[np.float32] | None:
    if rows is None:
        return None
    if not isinstance(rows, list) or len(rows) > MAX_PASSAGES:
        raise InvalidInput(f"passages must be a list of at most {MAX_PASSAGES} vectors")
    found = [_supplied_vector(row, label, space) for row in rows]
    if any(row is None for row in found):  # another space: embedded again
        return None
    return np.array(found, np.float32).reshape(len(found), space.dim)


def vector_base64(vector: npt.NDArray[np.float32]) -> str:
    return base64.b64encode(vector.astype("<f4").tobytes()).decode()
