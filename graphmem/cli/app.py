"""The `graphmem` command: one typer app made of small command modules.

A command line names one command, so `main` imports and builds only the module that holds it:
typer builds all 45 commands in ~50 ms, a noticeable part of a cold `graphmem recall`. Help,
and anything not recognised, goes to the whole app.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

# sub-command groups: name -> (module, its typer app, help)
_GROUPS = {
    "db": ("admin", "db_app", "Schema status and migrations."),
    "daemon": ("daemon", "app", "The store's owner process."),
    "canonical": ("knowledge", "canonical_app", "Canonical knowledge: promote, list, recall."),
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
    "graph": ("index-triples", "entities", "merge-entities", "multihop"),
    "admin": ("cypher", "doctor", "backup", "restore"),
    "serve": ("serve", "demo"),
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


def main() -> None:
    build(_named(sys.argv[1:]))()


def __getattr__(name: str) -> typer.Typer:
    if name == "app":  # the whole app, for tests and documentation checks
        return build()
    raise AttributeError(name)
