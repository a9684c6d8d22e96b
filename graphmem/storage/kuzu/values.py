"""Python values on their way into Kùzu (parameters) and out of it (a caller's Cypher rows)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphmem.models import as_utc, stored_time


def stored_params(params: dict[str, Any]) -> dict[str, Any]:
    """Aware datetimes as naive UTC: Kùzu drops a parameter's offset without converting it, so
    12:00+02:00 would be stored, and compared, as 12:00 UTC."""
    return {k: _stored(v) for k, v in params.items()}


def _stored(value: Any) -> Any:
    if isinstance(value, datetime):
        return stored_time(value)
    if isinstance(value, list):  # of one type, as Kùzu wants: a list of ids is left alone
        return [_stored(v) for v in value] if value and _nested(value[0]) else value
    if isinstance(value, dict):
        return {k: _stored(v) for k, v in value.items()}
    return value


def _nested(value: Any) -> bool:
    return isinstance(value, datetime | list | dict)


def type_key(value: Any) -> Any:
    """What Kùzu types a parameter by: a prepared statement is reused for values of one key."""
    if isinstance(value, list | tuple):
        return ("list", type_key(value[0]) if value else None)
    if isinstance(value, dict):
        return ("map", tuple((k, type_key(v)) for k, v in sorted(value.items())))
    return type(value).__name__


def jsonable(value: Any) -> Any:
    """Cypher results hold dates, nodes and rels; make them JSON friendly for transports. A
    TIMESTAMP is naive UTC in the store: it is written with its offset, as every time we emit."""
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def time_value(value: Any) -> Any:
    """A time as it comes back from JSON (an ISO string), for a parameter."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def equal_to(alias: str, clauses: list[str], params: dict[str, Any], **values: Any) -> None:
    """Narrow a match to the given properties' values (None: any), as parameters."""
    for name, value in values.items():
        if value is not None:
            clauses.append(f"{alias}.{name} = ${name}")
            params[name] = value
