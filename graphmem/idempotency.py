"""Store calls that must not store twice: a retry with the caller's idempotency key, and an exact
duplicate from the same client session within the duplicate window.

An agent whose client timed out (or rejected a result) after the server stored a memory retries
the call; without this, it stores the memory twice. The key of each store is kept in the store, in
the same transaction as the memory, so a retry finds it whichever process answers it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from graphmem.errors import Conflict
from graphmem.models import MemoryInput

# the fields that say who asked and how to find a retry, not what to store
CALL_FIELDS = frozenset({"idempotency_key", "client_session"})


@dataclass(frozen=True)
class StoreKey:
    key: str  # "key:<the caller's key>" or "dup:<digest of the session and the input>"
    digest: str  # what was asked to store
    expires_at: datetime | None  # None: the caller's key, kept for good

    @property
    def explicit(self) -> bool:
        return self.expires_at is None


def input_digest(item: MemoryInput) -> str:
    """The same for two inputs that would store the same memory."""
    data = item.model_dump(mode="json", exclude=set(CALL_FIELDS))
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def store_key(item: MemoryInput, *, window_seconds: float, now: datetime) -> StoreKey | None:
    """The key a retry of this store would bring, or None when nothing identifies one."""
    if item.idempotency_key is None and (item.client_session is None or window_seconds <= 0):
        return None
    digest = input_digest(item)
    if item.idempotency_key is not None:
        return StoreKey(f"key:{item.idempotency_key}", digest, None)
    session = hashlib.sha256(f"{item.client_session}\n{digest}".encode()).hexdigest()
    return StoreKey(f"dup:{session}", digest, now + timedelta(seconds=window_seconds))


def repeated_stores(
    keys: Sequence[StoreKey | None], earlier: Mapping[str, tuple[str, str]]
) -> dict[int, str | int]:
    """Which inputs of one call repeat a store: index -> the id of the memory an earlier call
    stored (`earlier`: key -> (memory id, digest), as the store found them), or the index of an
    earlier input of this call. A caller's key that comes back with other content is a Conflict,
    raised before anything is written."""
    seen: dict[str, tuple[str | int, str]] = dict(earlier)  # key -> what it stored, its digest
    repeats: dict[int, str | int] = {}
    for i, key in enumerate(keys):
        if key is None:
            continue
        if key.key not in seen:
            seen[key.key] = (i, key.digest)
            continue
        stored, digest = seen[key.key]
        if key.explicit and digest != key.digest:
            raise Conflict(
                "this idempotency key was used to store something else: give each different "
                "memory its own key",
                idempotency_key=key.key.removeprefix("key:"),
                index=i,
            )
        repeats[i] = stored
    return repeats
