"""The `graphmem` console script. `graphmem hook ...` runs on an agent's critical path (a prompt
waits for it), so it goes to the stdlib-only hook runner without importing the typer app and what
it pulls in (~0.3-0.5 s); every other command goes to graphmem.cli.app."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from graphmem.agents.hook import main as hook

        sys.exit(hook(sys.argv[2:]))
    from graphmem.cli.app import main as cli

    cli()


if __name__ == "__main__":
    main()
