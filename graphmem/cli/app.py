"""The `graphmem` command: one typer app made of small command modules.

A command line names one command, so `main` imports and builds only the module that holds it:
typer builds all 45 commands in ~50 ms, a noticeable part of a cold `graphmem recall`. Help,
and anything not recognised, goes to the whole app.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

import typer

# sub-command groups: name -> (module, its typer app, help)
_GROUPS = {
    "db": ("admin", "db_app", "Schema status and migrations."),
    "daemon": ("daemon", "app", "The store's owner process."),
    "canonical": ("knowledge", "canonical_app", "Canonical knowledge: promote, list, recall."),
    "repo": ("docs", "repo_app", "The project's files, read through the path guard."),
    "session": ("sessions", "session_app", "Close a session; review what it proposed."),
    "steward": ("steward", "steward_app", "Tend the store: duplicates, conflicts, stale entries."),
    "sediment": ("sediment", "sediment_app", "Memory layers: run a cycle, or move one by hand."),
    "glossary": ("glossary", "glossary_app", "The project's glossary of entity names."),
}
# each module's top-level commands (tests/cli/test_app.py keeps this true)
_BY_MODULE = {
    "memories": (
        "store", "recall", "get", "list", "update", "delete", "stats", "export", "import", "reembed",
    ),
    "knowledge": (
        "outdated", "merge", "decision", "dead-end", "incident", "runbook", "postmortem",
        "runbooks", "incidents", "context", "bank", "timeline", "cite", "verify",
        "verify-candidates", "drift",
    ),
    "graph": (
        "index-triples", "entities", "merge-entities", "alias-entity", "unalias-entity",
        "rename-entity", "split-entity", "multihop",
    ),
    "docs": ("index", "search", "expand"),
    "admin": ("cypher", "doctor", "backup", "restore", "migrate"),
    "serve": ("serve", "console", "demo"),
    "setup": ("setup",),
}  # fmt: skip
COMMANDS = {command: module for module, names in _BY_MODULE.items() for command in names}


def build(only: str | None = None) -> typer.Typer:
    """The app: every command, or only the top-level command or group named `only`."""
    app = typer.Typer(
        name="graphmem",
        help="Shared, local-first memory for engineering agents.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    if only is not None:

        @app.callback()
        def _group() -> None:  # keeps the app a group when it holds a single command
            pass

    else:

        @app.callback()
        def _root(
            version: bool = typer.Option(  # answered by `run` before typer is reached
                False, "--version", "-V", help="Print graphmem's version and exit."
            ),
        ) -> None:
            pass

    for name in _BY_MODULE:
        if only is None or COMMANDS.get(only) == name:
            module = importlib.import_module(f"graphmem.cli.{name}")
            app.registered_commands.extend(module.app.registered_commands)
    for group, (name, attribute, help_text) in _GROUPS.items():
        if only is None or only == group:
            module = importlib.import_module(f"graphmem.cli.{name}")
            app.add_typer(getattr(module, attribute), name=group, help=help_text)
    return app


def _named(argv: Sequence[str]) -> str | None:
    first = argv[0] if argv else None
    return first if first in COMMANDS or first in _GROUPS else None


def run(argv: Sequence[str]) -> int | str | None:
    """Run one command line; returns its exit code."""
    if list(argv) in (["--version"], ["-V"]):
        from graphmem import __version__

        print(f"graphmem {__version__}")
        return 0
    try:
        build(_named(argv))(args=list(argv), prog_name="graphmem")
    except SystemExit as exc:
        return exc.code
    return 0


def main() -> None:
    _leave(run(sys.argv[1:]))


def _leave(code: int | str | None) -> NoReturn:
    """Exit without the interpreter's teardown, which frees every module, the model and the
    store's mapped arrays: ~0.13 s of a ~0.9 s cold `graphmem recall`. Only once exit handlers
    have run, the output is flushed and no thread but daemons is left; otherwise as usual."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if not isinstance(code, int | None) or any(not t.daemon for t in others):
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let Python report it as it would
        sys.exit(code)
    os._exit(code or 0)


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole app, for tests and documentation checks
        return build()
    raise AttributeError(name)
