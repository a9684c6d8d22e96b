"""Turning a function into an MCP tool: strict arguments, graphmem errors as tool errors, one lock
around the store, lean schemas (schemas.py), and whether it only reads, as graphmem.registry
declares the operation the tool runs."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict

from graphmem.errors import GraphmemError
from graphmem.mcp.present import FORMS
from graphmem.mcp.schemas import argument_schema, output_schema
from graphmem.registry import BY_TOOL

__all__ = ["error_text", "guard", "hints", "make_tool"]

P = ParamSpec("P")
R = TypeVar("R")


def error_text(exc: GraphmemError) -> str:
    """What the client reads for a graphmem error: its code, then its message."""
    return f"{exc.code}: {exc.message}"


def guard(lock: threading.Lock, fn: Callable[P, R]) -> Callable[P, R]:
    """Serialise calls into GraphMemory and turn graphmem errors into MCP tool errors."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            with lock:
                return fn(*args, **kwargs)
        except GraphmemError as exc:
            raise ToolError(error_text(exc)) from exc

    return wrapper


def hints(
    title: str,
    *,
    destructive: bool = False,
    idempotent: bool = True,
    writes: bool | None = None,
) -> ToolAnnotations:
    """Tool annotations; every tool works on the local store only (openWorldHint false). A full
    tool leaves `writes` out: make_tool takes it from the registry's line for its operation."""
    return ToolAnnotations(
        title=title,
        read_only_hint=None if writes is None else not writes,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def make_tool(
    lock: threading.Lock,
    fn: Callable[..., Any],
    description: str,
    annotations: ToolAnnotations,
) -> Tool:
    """Register `fn` as a structured-output tool that rejects arguments it does not know.

    The tool is named after `fn`, which graphmem.registry must declare as an operation's tool:
    its read-only hint is the operation's. The SDK ignores unknown arguments by default, so a
    misspelt `tag` for `tags` would be dropped without a word; forbidding extras turns it into a
    tool error that names the argument. A tool returning `Annotated[CallToolResult, Model]` with
    a compact form (present.FORMS) and a `detail` argument gets `compact | full` as its output
    schema, so both details validate.
    """
    op = BY_TOOL.get(fn.__name__)
    if op is None:
        raise ValueError(f"MCP tool {fn.__name__} runs no operation of graphmem.registry")
    annotations = annotations.model_copy(update={"read_only_hint": op.reads})
    tool = Tool.from_function(
        guard(lock, fn),
        name=fn.__name__,
        title=annotations.title,
        description=description,
        annotations=annotations,
        structured_output=True,
    )
    loose = tool.fn_metadata.arg_model
    strict = cast(
        "type[ArgModelBase]",
        type(loose.__name__, (loose,), {"model_config": ConfigDict(extra="forbid")}),
    )
    tool.fn_metadata.arg_model = strict
    tool.parameters = argument_schema(strict)
    meta = tool.fn_metadata
    full = meta.output_model
    if isinstance(full, type) and issubclass(full, BaseModel) and "detail" in strict.model_fields:
        meta.output_model = FORMS[full].model | full
    meta.output_schema = output_schema(meta.output_model)
    return tool
