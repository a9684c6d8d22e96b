"""The `graphmem` command: one typer app made of small command modules."""

from __future__ import annotations

import typer

from graphmem.cli import admin, daemon, graph, knowledge, memories, serve

app = typer.Typer(
    name="graphmem",
    help="Shared, local-first memory for engineering agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
for module in (memories, knowledge, graph, admin, serve):
    app.registered_commands.extend(module.app.registered_commands)
app.add_typer(admin.db_app, name="db", help="Schema status and migrations.")
app.add_typer(daemon.app, name="daemon", help="The store's owner process.")
app.add_typer(
    knowledge.canonical_app, name="canonical", help="Canonical knowledge: promote, list, recall."
)


def main() -> None:
    app()
