"""Page cursors of memory lists, the same on every engine: a memory's creation time and id,
opaque to callers, so that a page goes on after the last memory the previous one returned."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from graphmem.errors import InvalidInput
from graphmem.models import Memory


def encode_cursor(memory: Memory) -> str:
    raw = json.dumps([memory.created_at.isoformat(), memory.id])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, memory_id = json.loads(raw)
        return datetime.fromisoformat(created), str(memory_id)
    except (ValueError, TypeError) as exc:
        raise InvalidInput("cursor is not one that list returned", cursor=cursor) from exc
