"""What every command shares: the --home/--json options, opening the store, errors to exit codes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel

from graphmem.errors import GraphmemError

HomeOpt = Annotated[
    Path | None,
    typer.Option(
        "--home",
        help="Data dir of the store (default: GRAPHMEM_HOME or ./.graphmem of the project).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]

F = TypeVar("F", bound=Callable[..., Any])


def to_jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    return value


def emit_json(value: Any) -> None:
    sys.stdout.write(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2) + "\n")


def fail(error: GraphmemError, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps(error.to_dict(), default=str) + "\n")
    else:
        sys.stderr.write(f"error: {error.message}\n")
    raise typer.Exit(error.exit_code)


@contextmanager
def handle_errors(as_json: bool) -> Iterator[None]:
    """Turn graphmem errors into one line on stderr and the error's exit code, never a traceback."""
    try:
        yield
    except GraphmemError as exc:
        fail(exc, as_json)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise typer.Exit(130) from None
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        if os.environ.get("GRAPHMEM_DEBUG"):
            raise
        sys.stderr.write(
            f"internal error: {type(exc).__name__}: {exc} (set GRAPHMEM_DEBUG=1 for a traceback)\n"
        )
        raise typer.Exit(1) from None


@contextmanager
def opened(home: Path | None, as_json: bool, **overrides: Any) -> Iterator[Any]:
    """Open the store for one command; settings are built here, at the entry point."""
    from graphmem.service import GraphMemory
    from graphmem.settings import load_settings

    with handle_errors(as_json):
        gm = GraphMemory(load_settings(home, overrides=overrides or None))
        try:
            yield gm
        finally:
            gm.close()


def short(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
