"""`graphmem daemon start|stop|status|run`: the store's owner process."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from graphmem.cli.common import HomeOpt, JsonOpt, emit_json, handle_errors, out

app = typer.Typer(no_args_is_help=True)


def _settings(home: HomeOpt, as_json: bool):  # type: ignore[no-untyped-def]
    from graphmem.settings import load_settings

    with handle_errors(as_json):
        return load_settings(home)


@app.command("start")
def start(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Start the owner process of the store (a no-op when one runs)."""
    from graphmem.daemon.client import start_owner

    settings = _settings(home, as_json)
    with handle_errors(as_json):
        info = start_owner(settings.home)
    if as_json:
        emit_json({"running": True, **info.model_dump()})
    else:
        out.print(f"owner running: pid {info.pid}, socket {info.socket}")


@app.command("stop")
def stop(
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait for it to drain.")
    ] = 30.0,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop the owner process: it finishes queued writes, then exits."""
    from graphmem.daemon.client import stop_owner

    settings = _settings(home, as_json)
    with handle_errors(as_json):
        info = stop_owner(settings.home, timeout=timeout)
    if as_json:
        emit_json({"stopped": info is not None, "pid": info.pid if info else None})
    else:
        out.print(f"stopped owner {info.pid}" if info else "no owner was running")


@app.command("status")
def status(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Whether an owner runs for the store, with its pid, socket, uptime and clients."""
    from graphmem.daemon.client import connect

    settings = _settings(home, as_json)
    with handle_errors(as_json):
        remote = connect(settings, recover=False)  # asking must not start an owner
        state = {"running": False, "home": str(settings.home)}
        if remote is not None:
            with remote:
                state = {"running": True, **remote.ping()}
    if as_json:
        emit_json(state)
    elif state["running"]:
        out.print(
            f"owner running: pid {state['pid']}, up {state['uptime_s']}s, {state['requests']} "
            f"requests, {state['clients']} clients, socket {state['socket']}"
        )
    else:
        out.print(f"no owner running for {settings.home}")


@app.command("run")
def run(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Run the owner in the foreground (what `start` launches in the background)."""
    from graphmem.daemon.owner import run_owner
    from graphmem.service import GraphMemory

    settings = _settings(home, as_json)
    with handle_errors(as_json):
        gm = GraphMemory(settings)
        if as_json:
            emit_json({"running": True, "pid": os.getpid(), "home": str(settings.home)})
        run_owner(gm)
