"""MemoryAPI: what transports may call, served in process (GraphMemory) or by the owner process
(RemoteMemory); the CLI and the MCP server are written against this and never know which."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from graphmem.models import (
    BackupInfo,
    CypherResult,
    DbStatus,
    ImportReport,
    Memory,
    MemoryFilter,
    MemoryInput,
    MemoryPage,
    RecallResult,
    ReembedReport,
    StoreStats,
)
from graphmem.recall.config import RecallConfig
from graphmem.settings import Settings

Progress = Callable[[int, int], None]
Filters = MemoryFilter | Mapping[str, Any] | None


class MemoryAPI(Protocol):
    settings: Settings

    @property
    def path(self) -> Path: ...

    def close(self) -> None: ...

    def remember(self, content: str, **fields: Any) -> Memory: ...

    def remember_many(
        self,
        items: Iterable[MemoryInput | Mapping[str, Any]],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> list[Memory]: ...

    def get(self, memory_id: str) -> Memory: ...

    def update(self, memory_id: str, **changes: Any) -> Memory: ...

    def delete(self, memory_id: str) -> None: ...

    def list(
        self, filters: Filters = None, *, limit: int = 50, cursor: str | None = None
    ) -> MemoryPage: ...

    def stats(self) -> StoreStats: ...

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        filters: Filters = None,
        explain: bool = False,
        recipe: str | RecallConfig | None = None,
    ) -> RecallResult: ...

    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> CypherResult: ...

    def db_status(self) -> DbStatus: ...

    def backup(self, dest: str | Path) -> BackupInfo: ...

    def export_page(self, cursor: str | None = None, *, limit: int = 1000) -> MemoryPage: ...

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        on_error: str = "continue",
        batch_size: int = 256,
        first_line: int = 1,
        on_progress: Progress | None = None,
    ) -> ImportReport: ...

    def reembed(
        self, *, batch_size: int = 128, on_progress: Progress | None = None
    ) -> ReembedReport: ...
