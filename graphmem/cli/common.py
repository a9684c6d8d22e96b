"""What every command shares: the --home/--json options, opening the store, errors to exit codes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import BaseModel

from graphmem.api import MemoryAPI
from graphmem.errors import GraphmemError, InvalidInput

if TYPE_CHECKING:
    from rich.progress import Progress

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


class Console:
    """Human output through rich, made on first use: importing rich costs ~20 ms that a
    `--json` command, and every cold `graphmem recall --json`, would pay for nothing."""

    def __init__(self) -> None:
        self._console: Any = None

    def print(self, *objects: Any, **options: Any) -> None:
        if self._console is None:
            from rich.console import Console as RichConsole

            self._console = RichConsole(highlight=False, soft_wrap=True)
        self._console.print(*objects, **options)


out = Console()


def escape(text: str) -> str:
    """`text` shown as it is, not read as rich markup."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def progress_bar() -> Progress:
    """A transient bar on stderr for long work."""
    from rich.console import Console as RichConsole
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=RichConsole(stderr=True),
        transient=True,
    )


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
def opened(
    home: Path | None,
    as_json: bool,
    *,
    start_owner: bool = False,
    overrides: dict[str, Any] | None = None,
    embeds: bool = False,
    writes: bool = False,
) -> Iterator[MemoryAPI]:
    """The store for one command: through its owner process when one runs (or when asked to
    start one), else opened here for this command only. Settings are built here, at the entry
    point. `embeds`: the command embeds text (see `open_api`). `writes`: the command changes the
    store, so it goes through an owner, started if none runs: writers beside agents and other
    writers then wait for nobody's open or close of the database."""
    from graphmem.daemon.client import RemoteMemory, open_api
    from graphmem.settings import load_settings

    with handle_errors(as_json):
        given = {k: v for k, v in (overrides or {}).items() if v is not None}
        settings = load_settings(home, overrides=given or None)
        gm = open_api(settings, start=start_owner or writes, embeds=embeds)
        if isinstance(gm, RemoteMemory) and any(k.startswith("embedding.") for k in given):
            gm.close()
            raise InvalidInput(
                "an owner process serves this store with its own embedding settings; "
                "stop it first (graphmem daemon stop) to use other ones"
            )
        try:
            yield gm
        finally:
            gm.close()


def short(text: str, width: int = 100) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
