"""`graphmem setup CLIENT`: connect an agent client to this project's store. Parses, calls
graphmem.agents.setup and renders; the client knowledge and the file handling live there."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, handle_errors, out

app = typer.Typer()


@app.command()
def setup(
    client: Annotated[
        str,
        typer.Argument(help="claude-code | codex | cursor | gemini | vscode | claude-desktop"),
    ],
    scope: Annotated[
        str | None,
        typer.Option(
            "--scope",
            help="project: files in this project (the default); user: your own config for every "
            "project (claude-desktop has only this one).",
            show_default=False,
        ),
    ] = None,
    hooks: Annotated[
        bool,
        typer.Option("--hooks/--no-hooks", help="Also write the client's hook entries."),
    ] = True,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print a diff of every file it would change; change none."),
    ] = False,
    remove: Annotated[
        bool, typer.Option("--remove", help="Take out what setup added, and nothing else.")
    ] = False,
    instructions: Annotated[
        bool,
        typer.Option(
            "--instructions",
            help="Also add a short memory section to the project's AGENTS.md (CLAUDE.md, GEMINI.md).",
        ),
    ] = False,
    http: Annotated[
        bool,
        typer.Option(
            "--http",
            help="Connect the client to `graphmem serve --http` instead of starting a stdio "
            "server: an HTTP entry sending the store's token (user scope: the token itself, "
            "in a private file; project scope: a reference to it, never the token).",
        ),
    ] = False,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="The server's MCP URL for --http (implies it); default: "
            "http://<http_host>:<http_port>/mcp from the settings.",
            show_default=False,
        ),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Connect an agent client to graphmem: its MCP server entry, hooks and instructions."""
    from graphmem.agents.setup import notes, request_for, run

    with handle_errors(as_json):
        request = request_for(
            client,
            home=home,
            cwd=Path.cwd(),
            user_home=Path.home(),
            http=http,
            url=url,
            dry_run=dry_run,
            scope=scope,
            hooks=hooks,
            instructions=instructions,
            remove=remove,
        )
        changes = run(request, dry_run=dry_run)
    changed = [change for change in changes if change.action != "unchanged"]
    if as_json:
        rows = [
            {**change.to_dict(), **({"diff": change.diff(request.token)} if dry_run else {})}
            for change in changes
        ]
        return emit_json(rows)
    for change in changed:
        if dry_run:
            out.print(change.diff(request.token), markup=False, end="")
            continue
        backup = f" (backup: {change.backup})" if change.backup else ""
        out.print(f"{change.action} {change.path}{backup}", markup=False)
    if not changed:
        out.print("nothing to remove" if remove else "already set up", markup=False)
    if not dry_run and (changed or request.http_url) and not remove:
        for note in notes(request, changes):
            out.print(f"note: {note}", markup=False)
