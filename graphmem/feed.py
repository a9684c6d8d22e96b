"""What arrived, newest first: memories (a session's summaries and checkpoints among them) and
indexed documents in one stream, filtered and paged, for the console's landing page."""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationError

from graphmem.cursors import decode_cursor, encode_cursor
from graphmem.errors import InvalidInput, check_limit, validation_message
from graphmem.models import FeedDocument, FeedItem, FeedPage, MemoryFilter
from graphmem.service_context import Service


class FeedOps(Service):
    def feed(
        self,
        *,
        context: str | None = None,
        type: str | None = None,
        kind: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 30,
        cursor: str | None = None,
    ) -> FeedPage:
        """Memories stored and documents indexed, newest first, `limit` a page; pass
        `next_cursor` back for the next. `context`, `type`, `kind`, `session` and `agent` (the
        client whose sessions stored them) keep memories (documents have none of them, so any
        of them leaves documents out); `since` (included) and `until` (excluded) bound when it
        arrived. Archived memories are left out."""
        check_limit(limit, most=200)
        try:
            filters = MemoryFilter.model_validate({"context": context, "type": type, "kind": kind})
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from exc
        if since is not None and until is not None and since >= until:
            raise InvalidInput("since must be before until")
        before = decode_cursor(cursor, refused="not a cursor this feed gave") if cursor else None
        store = self.context.store
        agents = store.sessions.by_client()
        sessions = [session] if session else None
        if agent:
            of_agent = agents.get(agent, [])
            sessions = [s for s in sessions if s in of_agent] if sessions else of_agent
        memories = store.memories.newest(
            filters, sessions=sessions, since=since, until=until, before=before, limit=limit + 1
        )
        items = [FeedItem(kind="memory", at=m.created_at, memory=m) for m in memories]
        keys = {id(i): i.memory.id for i in items if i.memory}
        if not (context or type or kind or session or agent):
            for row in store.documents.newest_indexed(
                since=since, until=until, before=before, limit=limit + 1
            ):
                item = FeedItem(
                    kind="document", at=row["indexed_at"],
                    document=FeedDocument.model_validate(row),
                )  # fmt: skip
                keys[id(item)] = f"doc:{row['path']}"
                items.append(item)
        items.sort(key=lambda i: (i.at, keys[id(i)]), reverse=True)
        page, more = items[:limit], len(items) > limit
        last = page[-1] if page else None
        return FeedPage(
            items=page,
            next_cursor=encode_cursor(last.at, keys[id(last)]) if more and last else None,
            agents=sorted(agents),
        )
