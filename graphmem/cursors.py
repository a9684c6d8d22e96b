"""Page cursors, the same on every engine and for every paged list: the time of the last item
returned and a key that orders items of equal time, opaque to callers, so that a page goes on
after the last item of the one before."""

from __future__ import annotations

import base64
import json
from datetime import datetime

from graphmem.errors import InvalidInput


def encode_cursor(at: datetime, key: str) -> str:
    raw = json.dumps([at.isoformat(), key])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(
    cursor: str, *, refused: str = "cursor is not one that list returned"
) -> tuple[datetime, str]:
    """(time, key) of a cursor `encode_cursor` made; InvalidInput saying `refused` if not."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, key = json.loads(raw)
        return datetime.fromisoformat(at), str(key)
    except (ValueError, TypeError) as exc:  # binascii.Error is a ValueError
        raise InvalidInput(refused, cursor=cursor) from exc
