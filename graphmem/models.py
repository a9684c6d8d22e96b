"""Pydantic models at every boundary: library results, tool arguments, `--json` output.

Validation lives here so that the CLI, the MCP server and the library reject the same bad input
with the same message, before anything touches the store.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from graphmem.errors import InvalidInput, rejected_field, validation_message

MemoryType = Literal["episodic", "semantic", "procedural", "working"]
MemoryKind = Literal[
    "note", "decision", "dead_end", "incident", "runbook", "postmortem", "summary", "checkpoint"
]
Lifecycle = Literal["active", "canonical", "outdated", "superseded", "archived"]
# sedimentation's layers, bottom to top (graphmem.steward.sediment)
Layer = Literal["surface", "episodic", "semantic", "character"]

MEMORY_TYPES: tuple[str, ...] = MemoryType.__args__  # type: ignore[attr-defined]
MEMORY_KINDS: tuple[str, ...] = MemoryKind.__args__  # type: ignore[attr-defined]
LIFECYCLES: tuple[str, ...] = Lifecycle.__args__  # type: ignore[attr-defined]

# Large enough for a long design note or a log excerpt; a 10 MB paste is a mistake, not a memory.
MAX_CONTENT_CHARS = 200_000
MAX_TITLE_CHARS = 500
MAX_TAGS = 50


def parse_time(value: datetime | str | None) -> datetime | None:
    """An ISO 8601 string or a datetime as an aware UTC datetime. A value without an offset is
    read as UTC: that is what graphmem has always stored, and what clients mean by a bare time."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("z", "Z"):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"not an ISO 8601 date or time: {value!r}") from exc
    return as_utc(value)


def as_utc(value: datetime) -> datetime:
    """Aware, in UTC; a naive value is taken to be UTC already."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def stored_time(value: datetime) -> datetime:
    """`value` as the store keeps it: naive UTC (Kùzu's TIMESTAMP has no zone), so that it
    compares with what the store and its in-process columns hold."""
    return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _parsed(value: Any) -> Any:
    """Strings are parsed here, to say what is wrong in our words; numbers are left to pydantic."""
    return parse_time(value) if isinstance(value, str) else value


UtcDateTime = Annotated[datetime, BeforeValidator(_parsed), AfterValidator(as_utc)]
"""Every datetime of the interface: aware, in UTC, and so written with an offset in JSON (RFC 3339
`date-time`, which clients such as the TypeScript MCP SDK check)."""


def _clean_tags(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        raise ValueError("tags must be a list of strings")
    tags = []
    for tag in value:
        if not isinstance(tag, str):
            raise ValueError("tags must be strings")
        tag = tag.strip()
        if tag and tag not in tags:
            tags.append(tag)
    if len(tags) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags")
    return tags


def _clean_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"metadata is not valid JSON: {exc.msg} at char {exc.pos}") from exc
    if not isinstance(value, dict):
        raise ValueError("metadata must be a JSON object")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metadata is not JSON-serialisable: {exc}") from exc
    return value


class Model(BaseModel):
    """Base of the interface models: a schema is built on first use, not at import, because a
    one-shot command uses a handful of them (measured: 50 ms less start-up)."""

    model_config = ConfigDict(defer_build=True)


class _Strict(Model):
    model_config = ConfigDict(extra="forbid")


class MemoryInput(_Strict):
    """What a caller may give to store one memory."""

    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    type: MemoryType = "episodic"
    kind: MemoryKind = "note"
    tags: list[str] = Field(default_factory=list)
    context: str | None = None
    service: str | None = None
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: UtcDateTime | None = None
    valid_from: UtcDateTime | None = None
    session_id: str | None = Field(
        default=None, max_length=200, description="conversation or work session it came from"
    )
    # how a retried store finds what its first attempt stored; neither is kept on the memory
    idempotency_key: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the caller's id for this store: a retry with the same key returns the "
        "memory the first attempt stored instead of storing it twice",
    )
    client_session: str | None = Field(
        default=None,
        max_length=200,
        description="the client session storing it: an exact duplicate it stored within the "
        "duplicate window is returned instead of stored again",
    )

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content is empty")
        return value

    _tags = field_validator("tags", mode="before")(classmethod(lambda cls, v: _clean_tags(v)))
    _metadata = field_validator("metadata", mode="before")(
        classmethod(lambda cls, v: _clean_metadata(v))
    )


class MemoryPatch(_Strict):
    """Fields an update may change; None means unchanged."""

    content: str | None = Field(default=None, min_length=1, max_length=MAX_CONTENT_CHARS)
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    type: MemoryType | None = None
    kind: MemoryKind | None = None
    tags: list[str] | None = None
    context: str | None = None
    service: str | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    metadata: dict[str, Any] | None = None

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("content is empty")
        return value

    _tags = field_validator("tags", mode="before")(
        classmethod(lambda cls, v: None if v is None else _clean_tags(v))
    )
    _metadata = field_validator("metadata", mode="before")(
        classmethod(lambda cls, v: None if v is None else _clean_metadata(v))
    )


class MemoryFilter(_Strict):
    """Filters shared by list and recall; every given field must match."""

    type: MemoryType | None = None
    kind: MemoryKind | None = None
    context: str | None = None
    service: str | None = None
    tags: list[str] = Field(default_factory=list)
    lifecycle: Lifecycle | None = None
    layer: Layer | None = Field(default=None, description="sedimentation's layer")
    as_of: UtcDateTime | None = Field(
        default=None, description="only what was valid and recorded at this time"
    )

    _tags = field_validator("tags", mode="before")(classmethod(lambda cls, v: _clean_tags(v)))

    def is_empty(self) -> bool:
        return not (
            self.type
            or self.kind
            or self.context
            or self.service
            or self.tags
            or self.lifecycle
            or self.layer
            or self.as_of
        )


class Memory(Model):
    """A stored memory as callers see it."""

    id: str
    content: str
    title: str | None = None
    type: MemoryType = "episodic"
    kind: MemoryKind = "note"
    tags: list[str] = Field(default_factory=list)
    context: str | None = None
    service: str | None = None
    importance: float = 0.5
    confidence: float = 1.0
    lifecycle: Lifecycle = "active"
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: UtcDateTime
    updated_at: UtcDateTime
    valid_from: UtcDateTime | None = None
    valid_to: UtcDateTime | None = None
    owner: str | None = None
    verified_at: UtcDateTime | None = None
    verify_status: str | None = None
    session_id: str | None = None
    layer: Layer = Field(
        default="surface",
        description="sedimentation's layer: surface (new), episodic, semantic, character",
    )

    def __eq__(self, other: object) -> bool:
        """A StoredMemory equals the Memory that `get` returns for it: the same memory."""
        if isinstance(other, Memory) and type(other) is not type(self):
            return all(getattr(self, f) == getattr(other, f) for f in Memory.model_fields)
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # as for any model: mutable, so unhashable


class StoredMemory(Memory):
    """What a store returns: the memory, and whether it was already there."""

    deduplicated: bool = Field(
        default=False,
        description="nothing was stored: this memory was stored earlier by a call with the same "
        "idempotency_key, or is an exact duplicate from the same client session",
    )


class Hit(Model):
    """One recall result; `explain` holds every score component when asked for."""

    memory: Memory
    score: float
    explain: dict[str, Any] | None = None
    superseded_by: str | None = Field(
        default=None,
        description="the newest version of this knowledge, when this one is superseded",
    )


class DocHit(Model):
    """One section that answers a search, with where it is."""

    path: str = Field(description="POSIX path, relative to the project (or to its own root)")
    title: str = Field(description="the document's title")
    heading: str = Field(description="the section's own (deepest) heading")
    breadcrumb: list[str] = Field(description="document title, then the headings down to it")
    section_key: str = Field(description="pass it to expand_section with path")
    source_type: str
    lines: list[int] = Field(description="[first, last] line of the section in the file")
    snippet: str = Field(description="the best-matching part of the section")
    score: float
    explain: dict[str, Any] | None = None


RecallScope = Literal["memories", "docs", "all"]


class ScopedHit(Model):
    """One hit of a recall over memories and document sections together."""

    source: Literal["memory", "section"]
    score: float = Field(description="reciprocal-rank fusion of the two rankings")
    memory: Hit | None = Field(default=None, description="when source is memory")
    section: DocHit | None = Field(default=None, description="when source is section")


class RecallWarning(Model):
    """Something the caller should know before acting on the hits."""

    kind: Literal["dead_end", "degraded", "missing_vectors", "backlog"]
    message: str
    memory: Memory | None = None
    reason: str | None = Field(
        default=None, description="why a dead end is shown: how it matches the query, or the hit "
        "that avoids it (also at the end of the message)",
    )  # fmt: skip
    via: str | None = Field(
        default=None, description="the id of the hit that links a dead end to the query, if any"
    )


class RecallResult(Model):
    """A ranked sequence of hits, plus what the caller should know about how they were found."""

    query: str
    hits: list[Hit] = Field(default_factory=list)
    warnings: list[RecallWarning] = Field(default_factory=list)
    degraded: bool = False
    embedding_space: str | None = None
    scope: RecallScope = "memories"
    sections: list[DocHit] = Field(
        default_factory=list, description="document sections, for scope docs or all"
    )
    ranking: list[ScopedHit] = Field(
        default_factory=list,
        description="scope all: memories and sections in one ranking, each saying which it is",
    )

    def __iter__(self) -> Iterator[Hit]:  # type: ignore[override]
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index: int) -> Hit:
        return self.hits[index]


class MemoryPage(Model):
    memories: list[Memory]
    next_cursor: str | None = None
    # with_vectors: id -> base64 of the little-endian float32 vector, in `embedding_space`
    vectors: dict[str, str] | None = None
    # with_vectors: id -> its passages' vectors, in order (graphmem.passages), as `vectors`
    passages: dict[str, list[str]] | None = None
    embedding_space: str | None = None


class StoreStats(Model):
    total: int
    by_type: dict[str, int]
    by_kind: dict[str, int]
    by_context: dict[str, int]
    by_lifecycle: dict[str, int]
    by_layer: dict[str, int] = Field(default_factory=dict, description="sedimentation layers")
    backlog: dict[str, int] = Field(
        default_factory=dict,
        description="work still waiting: `extraction`, live memories whose entities and facts "
        "are not in the graph yet; `chunks`, document chunks likewise",
    )
    store_bytes: int
    embedding_space: str
    vectors: int
    missing_vectors: int
    schema_version: int
    engine: str = Field(default="kuzu", description="the embedded engine: kuzu or ladybug")
    engine_version: str = ""
    path: str


class CypherResult(Model):
    columns: list[str]
    rows: list[list[Any]]


class MigrationInfo(Model):
    version: int
    name: str
    applied_at: UtcDateTime | None = None


class DbStatus(Model):
    path: str
    schema_version: int
    latest_version: int
    applied: list[MigrationInfo]
    pending: list[MigrationInfo]


class ImportReport(Model):
    imported: int
    skipped: int
    vectors_supplied: int = 0  # imported with the line's own vector, not embedded here
    passages_pending: int = 0  # memories whose passages the background worker embeds next
    errors: list[dict[str, Any]] = Field(default_factory=list)
    seconds: float


class ReembedReport(Model):
    space: str
    embedded: int
    passages: int = 0  # memories stored before passages existed, given theirs
    total: int
    seconds: float
    resumed: bool = False


class BackupInfo(Model):
    path: str
    source: str
    schema_version: int
    memories: int
    bytes: int
    created_at: UtcDateTime  # older manifests hold it without an offset: read as UTC
    seconds: float = 0.0


class RestoreReport(Model):
    path: str
    backup: BackupInfo
    previous_kept_at: str | None = None
    stopped_owner_pid: int | None = None


class TableCopy(Model):
    table: str
    rows: int
    sha256: str = Field(description="digest of the table's rows, the same on both engines")


class MigrationReport(Model):
    source: str
    target: str
    engine_from: str
    engine_to: str
    tables: list[TableCopy]
    resumed: bool = Field(description="the run went on from where an earlier one stopped")
    seconds: float


_M = TypeVar("_M", bound=BaseModel)


MAX_ITEM_ERRORS = 20  # bad items a batch's error lists one by one


def validated(model: type[_M], value: _M | Mapping[str, Any]) -> _M:
    """`value` (a model, or a mapping from JSON or MCP) as a `model`, checked once; InvalidInput
    says what is wrong, and `field` which field."""
    if isinstance(value, model):
        return value
    if not isinstance(value, Mapping):
        raise InvalidInput(f"expected an object, got {type(value).__name__}")
    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        raise InvalidInput(validation_message(exc), field=rejected_field(exc)) from exc


def validated_items(model: type[_M], items: Iterable[_M | Mapping[str, Any]]) -> list[_M]:
    """Every item of a batch as a `model`, all checked before any is used. A bad one is named by
    its index in the batch and its field, as an import names a line: `item 3: importance: ...`
    with fields index and field; `errors` lists every bad item (the first MAX_ITEM_ERRORS)."""
    good: list[_M] = []
    bad: list[InvalidInput] = []
    for index, item in enumerate(items):
        try:
            good.append(validated(model, item))
        except InvalidInput as exc:
            bad.append(InvalidInput(exc.message, **{"field": None, **exc.fields, "index": index}))
    if not bad:
        return good
    first = bad[0]
    more = f" (and {len(bad) - 1} more bad items)" if len(bad) > 1 else ""
    raise InvalidInput(
        f"item {first.fields['index']}: {first.message}{more}",
        **first.fields,
        errors=[{"message": e.message, **e.fields} for e in bad[:MAX_ITEM_ERRORS]],
    )


def validate_filter(filters: MemoryFilter | Mapping[str, Any] | None) -> MemoryFilter:
    return MemoryFilter() if filters is None else validated(MemoryFilter, filters)


# -- what arrived (graphmem/feed.py) --------------------------------------------------------

FeedKind = Literal["memory", "document"]


class FeedDocument(Model):
    path: str
    title: str | None = None
    source_type: str | None = None


class FeedItem(Model):
    """A memory stored, or a document indexed, at `at`."""

    kind: FeedKind
    at: UtcDateTime
    memory: Memory | None = None
    document: FeedDocument | None = None


class FeedPage(Model):
    items: list[FeedItem] = Field(default_factory=list)
    next_cursor: str | None = Field(default=None, description="pass back for the next page")
    agents: list[str] = Field(
        default_factory=list, description="the agents (clients) whose sessions are stored"
    )
