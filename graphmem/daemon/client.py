"""The client side of the owner process: RemoteMemory, which serves the MemoryAPI over its
socket so that a CLI call or a stdio MCP server never opens the database itself while an owner
holds it, and open_api, which picks the owner or the store for one caller. Starting, stopping
and surviving an owner is graphmem.daemon.link's.
"""

from __future__ import annotations

import functools
import itertools
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from graphmem.api import Filters, MemoryAPI, Progress
from graphmem.daemon.link import OwnerLink, start_lock, with_keys
from graphmem.daemon.link import start_owner as start_owner
from graphmem.daemon.link import stop_owner as stop_owner
from graphmem.daemon.paths import OwnerInfo, live_owner
from graphmem.daemon.protocol import MAX_LINE, decode, dumps, encode, raise_error
from graphmem.documents.models import DocsIndexReport
from graphmem.errors import GraphmemError, InvalidInput, StoreLocked, item_error_after
from graphmem.graph.models import GlossaryReport, IndexReport
from graphmem.models import (
    BackupInfo,
    CypherResult,
    ImportReport,
    MemoryInput,
    MemoryPage,
    RecallResult,
    RecallScope,
    ReembedReport,
    StoredMemory,
    validated_items,
)
from graphmem.recall.config import RecallConfig
from graphmem.registry import BY_NAME
from graphmem.settings import Settings
from graphmem.transfer import import_chunks


class RemoteMemory:
    """MemoryAPI served by the owner process; one connection, which outlives the owner
    (graphmem.daemon.link), one request at a time. An operation of graphmem.registry that this
    class does not define is sent to the owner with its arguments as they are (`__getattr__`);
    those defined below adapt theirs to the socket (progress, request size, plain filters)."""

    def __init__(self, settings: Settings, info: OwnerInfo, *, recover: bool = True) -> None:
        """`recover`: when the owner dies, start a new one and go on (graphmem.daemon.link);
        without it every call after the death fails, as `daemon status` wants."""
        self.settings = settings
        self._link = OwnerLink(settings.home, info, recover=recover)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def owner(self) -> OwnerInfo:
        """The owner serving this client now."""
        return self._link.owner

    @property
    def restarts(self) -> int:
        """How many owners this client started after the one it used was gone."""
        return self._link.restarts

    @property
    def path(self) -> Path:
        return self.settings.home

    def __getattr__(self, name: str) -> Any:
        """Every other operation of the registry: sent to the owner as it is."""
        if name in BY_NAME:
            return functools.partial(self._call, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def index_documents(
        self, paths: Sequence[str | Path] | None = None, *, on_progress: Progress | None = None
    ) -> DocsIndexReport:
        """Runs in the owner as one call; progress is reported once, at the end. Relative paths
        are the project's, as in the owner (the CLI makes the user's absolute first)."""
        given = [str(p) for p in paths] if paths else None
        result: DocsIndexReport = self._call("index_documents", given)
        if on_progress:
            files = len(result.added) + len(result.updated) + result.unchanged
            on_progress(files, files)
        return result

    def index_triples(self, *, on_progress: Progress | None = None, **options: Any) -> IndexReport:
        """Runs in the owner as one call; progress is reported once, at the end."""
        result: IndexReport = self._call("index_triples", **options)
        if on_progress:
            on_progress(result.memories, result.memories)
        return result

    def apply_glossary(
        self, path: str | Path | None = None, *, dry_run: bool = False
    ) -> GlossaryReport:
        """A path travels as text; a relative one is the project's, as in the owner."""
        result: GlossaryReport = self._call(
            "apply_glossary", str(path) if path else None, dry_run=dry_run
        )
        return result

    def _call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = with_keys(method, args, kwargs)
        request = {"id": next(self._ids), "method": method, "args": encode(list(args)),
                   "kwargs": encode(kwargs)}  # fmt: skip
        data = dumps(request)
        if len(data) > MAX_LINE:
            raise InvalidInput(
                f"request of {len(data) >> 20} MB is over the owner's {MAX_LINE >> 20} MB limit",
                method=method,
            )
        with self._lock:
            line = self._link.exchange(method, kwargs, data)
        response = json.loads(line)
        if "error" in response:
            raise_error(response["error"])
        return decode(response.get("result"))

    def close(self) -> None:
        self._link.close()

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- operations adapted to the socket ----------------------------------------------------

    def ping(self) -> dict[str, Any]:
        result: dict[str, Any] = self._call("ping")
        return result

    def remember_many(
        self,
        items: Iterable[MemoryInput | Mapping[str, Any]],
        *,
        batch_size: int = 256,
        on_progress: Progress | None = None,
    ) -> list[StoredMemory]:
        # checked here, whole, so that a bad item is named by its index in the caller's batch
        # and no slice of it is stored before the bad one is found
        batch = validated_items(MemoryInput, items)
        stored: list[StoredMemory] = []
        for start in range(0, len(batch), batch_size):
            try:
                stored += self._call("remember_many", batch[start : start + batch_size])
            except GraphmemError as exc:
                raise item_error_after(exc, start) from None
            if on_progress:
                on_progress(len(stored), len(batch))
        return stored

    def list(
        self, filters: Filters = None, *, limit: int = 50, cursor: str | None = None
    ) -> MemoryPage:
        result: MemoryPage = self._call("list", _plain(filters), limit=limit, cursor=cursor)
        return result

    def recall(
        self,
        query: str,
        *,
        limit: int = 10,
        filters: Filters = None,
        explain: bool = False,
        recipe: str | RecallConfig | None = None,
        scope: RecallScope = "memories",
    ) -> RecallResult:
        result: RecallResult = self._call(
            "recall", query, limit=limit, filters=_plain(filters), explain=explain, recipe=recipe,
            scope=scope,
        )  # fmt: skip
        return result

    def cypher(
        self, query: str, params: Mapping[str, Any] | None = None, *, write: bool = False
    ) -> CypherResult:
        result: CypherResult = self._call("cypher", query, dict(params or {}), write=write)
        return result

    def backup(self, dest: str | Path) -> BackupInfo:
        result: BackupInfo = self._call("backup", str(Path(dest).resolve()))
        return result

    def import_jsonl(
        self,
        lines: Iterable[str],
        *,
        on_error: str = "continue",
        batch_size: int = 2048,
        first_line: int = 1,
        on_progress: Progress | None = None,
    ) -> ImportReport:
        """One request per slice of lines that fits the owner's request limit."""

        def call(chunk: Sequence[str], first: int) -> ImportReport:
            result: ImportReport = self._call(
                "import_jsonl", list(chunk), on_error=on_error, batch_size=batch_size,
                first_line=first,
            )  # fmt: skip
            return result

        lines = list(lines)
        return import_chunks(
            _requests(lines, first_line), call, total_lines=first_line - 1 + len(lines),
            on_progress=on_progress,
        )  # fmt: skip

    def reembed(
        self, *, batch_size: int = 128, on_progress: Progress | None = None
    ) -> ReembedReport:
        result: ReembedReport = self._call("reembed", batch_size=batch_size)
        if on_progress:
            on_progress(result.embedded, result.embedded)
        return result


def _plain(filters: Filters) -> Any:
    if filters is None or isinstance(filters, dict):
        return filters
    if isinstance(filters, Mapping):
        return dict(filters)
    return filters


def open_api(settings: Settings, *, start: bool = False, embeds: bool = False) -> MemoryAPI:
    """The store for one caller: through its owner when one runs (or `start` asks for one), else
    opened in this process. Finding no owner and opening the store happen under the start lock:
    a command never opens the store while a client is starting an owner (it waits for that start
    and uses the new owner), and one held by an owner that was started some other way is waited
    for. The store's open lock (storage.locking) keeps it from opening while another process
    is still closing it. `embeds`: the caller is about to embed text, so a store opened here
    loads the model meanwhile."""
    from graphmem.service import GraphMemory

    remote = connect(settings, start=start)
    if remote is not None:
        return remote
    deadline = time.monotonic() + settings.lock_timeout
    quick = settings.model_copy(update={"lock_timeout": 0.1})
    with start_lock(settings.home):
        while True:
            remote = connect(settings)
            if remote is not None:
                return remote
            try:
                return GraphMemory(quick, extract_in_background=False, warm_embedder=embeds)
            except StoreLocked:
                if time.monotonic() >= deadline:
                    raise


def connect(
    settings: Settings, *, start: bool = False, recover: bool = True
) -> RemoteMemory | None:
    """A client of the store's owner: the running one, or (with start=True) a new one.
    `recover`: the client starts a new owner if this one dies (see RemoteMemory)."""
    info = start_owner(settings.home) if start else live_owner(settings.home)
    return None if info is None else RemoteMemory(settings, info, recover=recover)


def _requests(lines: list[str], first_line: int) -> Iterator[tuple[int, list[str]]]:
    """Slices of `lines`, each with the number of its first line, whose request stays under
    half the owner's limit (its JSON may escape quotes, and a chunk of lines with their vectors
    is ~80 MB)."""
    budget, start, size = MAX_LINE // 2, 0, 0
    for i, line in enumerate(lines):
        cost = len(line.encode()) + line.count('"') + line.count("\\") + 3
        if size + cost > budget and i > start:
            yield first_line + start, lines[start:i]
            start, size = i, 0
        size += cost
    if start < len(lines):
        yield first_line + start, lines[start:]
