"""Sessions and the review items they file."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol


class Sessions(Protocol):
    def upsert(
        self,
        session_id: str,
        *,
        client: str | None,
        mode: str,
        context: str | None,
        service: str | None,
        cwd: str | None,
        ended_at: datetime | None,
        summary_id: str | None,
    ) -> None:
        """Make the session, or update it: a None leaves a field as it was, but for
        `ended_at`, which is always set."""
        ...

    def link_memories(self, session_id: str, memory_ids: Sequence[str]) -> None:
        """The memories belong to the session (once each)."""
        ...

    def by_client(self) -> dict[str, list[str]]:
        """Each client (agent) that recorded sessions -> the ids of its sessions."""
        ...

    def resolved_fingerprints(self, fingerprints: Sequence[str]) -> dict[str, str]:
        """fingerprint -> status of the items already filed for these changes."""
        ...

    def add_review_item(self, session_id: str, fields: dict[str, Any]) -> str:
        """File a pending item in the session (which must exist) and return its id. `fields`:
        action, statement_kind, statement, target (a memory, linked when given), risk,
        confidence, rationale, fingerprint, and payload (any JSON)."""
        ...

    def review_items(
        self, *, session: str | None, status: str | None, action: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Items matching every filter given, oldest first, with their payload decoded."""
        ...

    def review_item(self, item_id: str) -> dict[str, Any]:
        """One item; NotFound when it is not there."""
        ...

    def count_pending_reviews(self) -> int: ...

    def set_item_status(self, item_id: str, *, status: str, note: str | None, actor: str) -> None:
        """Resolve an item: its status, note, who and when."""
        ...

    def reopen_review_item(self, item_id: str, *, status: str) -> None:
        """Put an item back to `status`, unresolved (an undo of the steward's dismissal)."""
        ...
