"""Sortable ids (ULID layout: 48-bit milliseconds + 80 random bits, Crockford base32).

Ids sort by creation time, so `list` pages and exports are stable without a second sort key. Ids
made for the same millisecond count up from the previous one (monotonic ULIDs), so memories
stored together keep their order: the turns of a conversation stay in sequence.
"""

from __future__ import annotations

import secrets
import threading
from datetime import UTC, datetime

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# two characters for each 10 bits: 13 lookups spell an id, twice as fast as 26 (imports make
# tens of thousands a second)
_PAIRS = [_ALPHABET[i >> 5] + _ALPHABET[i & 31] for i in range(1024)]
_RANDOM_BITS = 80
_lock = threading.Lock()
_last: dict[int, int] = {}


def _millis(at: datetime | None) -> int:
    when = at or datetime.now(UTC)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(int(when.timestamp() * 1000), 0) & ((1 << 48) - 1)


def new_id(at: datetime | None = None) -> str:
    millis = _millis(at)
    with _lock:
        previous = _last.get(millis)
        if previous is not None and previous + 1 < (1 << _RANDOM_BITS):
            rand = previous + 1
        else:
            rand = secrets.randbits(_RANDOM_BITS - 1)  # headroom to count up
        if len(_last) > 4096:
            _last.clear()
        _last[millis] = rand
    value = (millis << _RANDOM_BITS) | rand
    # 26 characters are 130 bits: the 128-bit value with two zero bits in front
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -10, -10)])
