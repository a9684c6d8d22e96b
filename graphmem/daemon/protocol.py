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
from graphmem.api import DocumentAPI, GraphAPI, HookAPI, KnowledgeAPI, SessionAPI, StewardAPI
from graphmem.documents import models as document_models
from graphmem.graph import models as graph_models
from graphmem.knowledge import models as knowledge_models
from graphmem.recall.config import RecallConfig
from graphmem.sessions import models as session_models
from graphmem.steward import models as steward_models

# What a client may call: the MemoryAPI methods, nothing private, nothing that closes the store.
KNOWLEDGE_METHODS = tuple(
    name
    for api in (KnowledgeAPI, GraphAPI, DocumentAPI, SessionAPI, StewardAPI, HookAPI)
    for name, value in vars(api).items()
    if callable(value) and not name.startswith("_")
)  # fmt: skip
METHODS = frozenset(
    {
        "remember", "remember_many", "get", "update", "delete", "list", "stats", "recall",
        "cypher", "db_status", "backup", "export_page", "import_jsonl", "reembed", "ping",
        *KNOWLEDGE_METHODS,
    }
)  # fmt: skip

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
