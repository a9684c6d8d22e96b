"""The owner's wire protocol: one JSON object a line over a unix socket.

Request  {"id": 7, "method": "recall", "args": [...], "kwargs": {...}}
Response {"id": 7, "result": ...} or {"id": 7, "error": {"type": "NotFound", "message": ..., "fields": {...}}}

Values keep their types across the socket: pydantic models travel as {"$model": name, "data": ...}
and datetimes as {"$datetime": iso}, and graphmem errors are raised again on the client side with
their own class, so callers cannot tell a remote store from a local one.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from graphmem import errors, models
from graphmem.documents import models as document_models
from graphmem.graph import models as graph_models
from graphmem.knowledge import models as knowledge_models
from graphmem.recall.config import RecallConfig
from graphmem.registry import BY_NAME, OPERATIONS
from graphmem.sessions import models as session_models
from graphmem.steward import models as steward_models

# What a client may call: the operations of graphmem.registry, and `ping`, the owner's own (its
# status). Nothing private, nothing that closes the store.
PING = "ping"
METHODS = frozenset({PING, *BY_NAME})
# What a client may send again when the owner died before answering (graphmem.daemon.link): see
# registry.Operation for when an operation may be.
READS = frozenset({PING, *(op.name for op in OPERATIONS if op.reads)})
KEYED_STORES = frozenset(op.name for op in OPERATIONS if op.keyed)


def is_read(method: str, kwargs: dict[str, Any]) -> bool:
    op = BY_NAME.get(method)
    return method == PING or (op is not None and op.is_read(kwargs))


def resendable(method: str, kwargs: dict[str, Any]) -> bool:
    """Whether a request may be sent again when its first sending got no answer."""
    op = BY_NAME.get(method)
    return method == PING or (op is not None and op.resendable(kwargs))


_MODELS: dict[str, type[BaseModel]] = {
    name: value
    for module in (
        models,
        knowledge_models,
        graph_models,
        document_models,
        session_models,
        steward_models,
    )
    for name, value in vars(module).items()
    if isinstance(value, type)
    and issubclass(value, BaseModel)
    and value.__module__ == module.__name__
}
_MODELS["RecallConfig"] = RecallConfig
_ERRORS: dict[str, type[errors.GraphmemError]] = {
    name: value
    for name, value in vars(errors).items()
    if isinstance(value, type) and issubclass(value, errors.GraphmemError)
}
MAX_LINE = 64 * 1024 * 1024  # a request line larger than this is refused


def encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return {"$model": type(value).__name__, "data": value.model_dump(mode="json")}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "$model" in value and value["$model"] in _MODELS:
            return _MODELS[value["$model"]].model_validate(value["data"])
        if "$datetime" in value:
            return datetime.fromisoformat(value["$datetime"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def error_payload(exc: errors.GraphmemError) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": exc.message, "fields": encode(exc.fields)}


def raise_error(payload: dict[str, Any]) -> None:
    cls = _ERRORS.get(payload.get("type", ""), errors.StorageError)
    raise cls(
        payload.get("message", "the owner process failed"), **decode(payload.get("fields", {}))
    )
