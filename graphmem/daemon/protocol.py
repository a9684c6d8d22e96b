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

# What a client may send again when the owner died before answering (graphmem.daemon.client).
# Reads change nothing a second run would not (a recall counts one more access at most); `update`
# sets fields to the values given, so twice is once; the stores carry an idempotency key, which
# the client makes when the caller gave none, so a second run returns the first one's memory.
# Every other write may have been applied or not: the caller is told so (OutcomeUnknown).
READS = frozenset(
    {
        "ping", "get", "list", "stats", "recall", "db_status", "export_page",
        "wait_for_extraction", "search_runbooks", "recall_similar_incidents",
        "list_canonical_knowledge", "recall_canonical_knowledge", "summarize_project_context",
        "project_bank_view", "recall_as_of", "knowledge_timeline", "verification_candidates",
        "drift_scan", "list_entities", "recall_multihop", "search_docs", "expand_section",
        "documents_overview", "document_page", "repo_list", "repo_read", "repo_search",
        "review_session_changes", "steward_inbox", "steward_status", "steward_report",
        "conflicts_report",
    }
)  # fmt: skip
KEYED_STORES = frozenset(
    {
        "remember", "remember_many", "store_decision", "store_dead_end", "store_incident",
        "store_runbook", "store_postmortem",
    }
)  # fmt: skip


def is_read(method: str, kwargs: dict[str, Any]) -> bool:
    if method == "cypher":
        return not kwargs.get("write")  # a read-only query is refused any write
    return method in READS


def resendable(method: str, kwargs: dict[str, Any]) -> bool:
    """Whether a request may be sent again when its first sending got no answer."""
    return is_read(method, kwargs) or method in KEYED_STORES or method == "update"


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
