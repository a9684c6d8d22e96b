"""The errors graphmem raises, as a small tree callers match by type, never by message text.

    GraphmemError                  every error graphmem raises on purpose
     ├── InvalidInput              bad arguments: empty content, importance out of range, ...
     ├── NotFound                  an id that names nothing
     ├── Conflict                  the request contradicts the store's state
     ├── StoreError                the store cannot be used
     │    ├── StoreLocked          another process holds the store
     │    ├── StorageError         the database failed under us
     │    ├── SchemaError          the store's schema is newer or broken
     │    └── OutcomeUnknown       the owner died during a write that cannot be sent twice
     └── EmbeddingError            an embedding provider failed or is forbidden

Each class carries the exit code the CLI uses for it, so transports never keep their own table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class GraphmemError(Exception):
    """Base of every deliberate graphmem error; `fields` carries machine-readable detail."""

    exit_code = 1
    code = "error"

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.fields}


class InvalidInput(GraphmemError):
    exit_code = 2
    code = "invalid_input"


class NotFound(GraphmemError):
    exit_code = 3
    code = "not_found"


class Conflict(GraphmemError):
    exit_code = 2
    code = "conflict"


class StoreError(GraphmemError):
    exit_code = 4
    code = "store_error"


class StoreLocked(StoreError):
    code = "store_locked"


class StorageError(StoreError):
    code = "storage_error"


class SchemaError(StoreError):
    code = "schema_error"


class OutcomeUnknown(StoreError):
    """The owner process died after a write reached it and before it answered, and the write
    carries no idempotency key to send it again safely: it may or may not have been applied.
    The next call starts a new owner; check the store before repeating this one."""

    code = "outcome_unknown"


class EmbeddingError(GraphmemError):
    exit_code = 5
    code = "embedding_error"


def validation_message(exc: ValidationError) -> str:
    """One line naming each rejected field and why, never echoing the values (they may be
    secrets or megabytes of text)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'input'}: {err['msg']}" for err in exc.errors()
    )


def rejected_field(exc: ValidationError) -> str | None:
    """The first field a validation rejected ("metadata.owner" for a nested one), or None when
    the input as a whole was."""
    errors = exc.errors()
    return ".".join(str(p) for p in errors[0]["loc"]) or None if errors else None


def item_error(exc: GraphmemError, index: int) -> GraphmemError:
    """`exc`, raised for one item of a batch, naming the item by its index in the batch as an
    import names a line by its number."""
    return type(exc)(f"item {index}: {exc.message}", **{**exc.fields, "index": index})


def item_error_after(exc: GraphmemError, offset: int) -> GraphmemError:
    """`exc` about an item of a slice of a batch that starts at `offset`, naming the item by its
    index in the whole batch (errors that name no item are returned as they are)."""
    index = exc.fields.get("index")
    if not offset or not isinstance(index, int):
        return exc
    errors = [{**e, "index": e["index"] + offset} for e in exc.fields.get("errors", [])]
    cause = type(exc)(exc.message.removeprefix(f"item {index}: "), **exc.fields)
    if errors:
        cause.fields["errors"] = errors
    return item_error(cause, index + offset)


def check_limit(limit: int, *, most: int = 1000) -> None:
    if not 1 <= limit <= most:
        raise InvalidInput(f"limit must be between 1 and {most}", limit=limit)
