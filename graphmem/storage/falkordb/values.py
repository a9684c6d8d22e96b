"""Python values on their way into FalkorDB (query parameters) and out of it.

FalkorDB has no timestamp type and its client cannot send a datetime (tests/servers/
test_falkordb_dialect.py): a time is stored as an integer of microseconds since the epoch, UTC,
and read back as the naive UTC datetime the embedded engines return (graphmem.models.
stored_time). Parameters travel as query text, so each statement's are renamed when several
are chained into one query (`renamed`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from graphmem.models import stored_time

_EPOCH = datetime(1970, 1, 1)
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def micros(value: datetime) -> int:
    """A datetime as the store keeps it: microseconds since the epoch, UTC."""
    return (stored_time(value) - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int | None) -> datetime | None:
    """What `micros` stored, as naive UTC (what the embedded engines return)."""
    if value is None:
        return None
    return _EPOCH + timedelta(microseconds=int(value))


def aware(value: int | None) -> datetime | None:
    found = from_micros(value)
    return found.replace(tzinfo=UTC) if found is not None else None


def stored(value: Any) -> Any:
    """A parameter as FalkorDB takes it: datetimes as microseconds, numpy values as Python
    ones, tuples as lists, recursively."""
    if isinstance(value, datetime):
        return micros(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [stored(v) for v in value]
    if isinstance(value, dict):
        return {k: stored(v) for k, v in value.items()}
    return value


def stored_params(params: dict[str, Any] | None) -> dict[str, Any]:
    return {k: stored(v) for k, v in (params or {}).items()}


def renamed(query: str, params: dict[str, Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """The statement with each `$name` read as `$<prefix>name`, and its parameters so named:
    statements chained into one query must not share a name. graphmem's statements hold no
    `$` inside a string literal."""
    return (
        _PARAM.sub(lambda m: f"${prefix}{m.group(1)}", query),
        {f"{prefix}{k}": v for k, v in params.items()},
    )
