"""`graphmem migrate`: copy a store to another engine, losslessly and resumably.

The two engines cannot be loaded in one process (`storage.engines`), so this process exports
every table of the source to Parquet files in the new store's `.migrate/` folder, with a digest
of each table's rows, and a child process of the target's engine loads them into the new store
and digests them again. A run that stops anywhere starts again where it stopped: an exported
table is in the manifest, a loaded one in `loaded.json`. The copy counts only when every table
has the same rows and the same digest on both sides; then the Parquet files are removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graphmem.daemon.link import start_lock, stop_owner
from graphmem.daemon.paths import live_owner
from graphmem.errors import Conflict, InvalidInput, StorageError
from graphmem.models import MigrationReport, TableCopy
from graphmem.settings import CONFIG_FILE, Settings
from graphmem.storage import engines, open_graph_store, open_store_at, open_store_backend
from graphmem.storage.protocols import Store, TableSpec
from graphmem.store_url import USAGE, StoreUrl, parse_store_url

WORK = ".migrate"
MANIFEST = "manifest.json"
LOADED = "loaded.json"
Progress = Callable[[str, int, int], None]  # (what, done, of)


def migrate(
    settings: Settings,
    target: Path,
    to: str,
    *,
    force: bool = False,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy the store of `settings` (its data dir's, or the graph its store_url names) into
    `target` (a new data dir, or an unfinished copy) on the engine `to`: an embedded engine's
    name, or a `falkordb://` URL naming an empty graph, which the new data dir's config then
    names. The source is only read; with `force`, an owner serving it is stopped first."""
    started = time.perf_counter()
    url = _server_target(to)
    if url is None and to not in engines.BY_NAME:
        raise InvalidInput(
            f"unknown engine {to!r}: use one of {', '.join(engines.ENGINES)}, or a {USAGE} URL"
        )
    source = settings.home
    target = Path(target).expanduser().resolve()
    if target == source.resolve() or source.resolve() in target.parents:
        raise InvalidInput("the copy cannot go inside the store it copies", path=str(target))
    if url is not None and url == settings.store_url:
        raise InvalidInput("the copy cannot go into the graph it copies", store_url=str(url))
    if settings.store_url is None and not engines.has_store(source):
        raise InvalidInput(f"no store at {source}", path=str(source))
    work = target / WORK
    named = str(url) if url is not None else to  # what the manifest records: no password
    manifest = _manifest(work, source, named)
    if manifest is None:
        if target.exists() and any(target.iterdir()):
            raise Conflict(
                f"{target} exists and is neither empty nor an unfinished copy; choose a new path",
                path=str(target),
            )
        if url is not None:
            _refuse_a_graph_in_use(url, target)
        manifest = {"source": str(source), "to": named, "tables": [], "exported": {}}
    resumed = bool(manifest["exported"])
    work.mkdir(parents=True, exist_ok=True)
    with start_lock(source):
        _export(settings, work, manifest, force=force, progress=progress)
    loaded = _load_in_child(target, to, work, progress)
    copies = []
    for spec in manifest["tables"]:
        name = spec["name"]
        want, got = manifest["exported"][name], loaded.get(name)
        if got != want:
            raise StorageError(
                f"the copy of table {name} differs: {want['rows']} rows exported, "
                f"{got['rows'] if got else 'none'} loaded (digests {want['sha256'][:12]} / "
                f"{got['sha256'][:12] if got else '-'}); the source is untouched",
                table=name,
            )
        copies.append(TableCopy(table=name, rows=want["rows"], sha256=want["sha256"]))
    if not (target / CONFIG_FILE).exists():
        _copy_config(source / CONFIG_FILE, target / CONFIG_FILE, url)
    shutil.rmtree(work)
    return MigrationReport(
        source=str(source),
        target=str(target),
        engine_from=manifest["from"],
        engine_to="falkordb" if url is not None else to,
        tables=copies,
        resumed=resumed,
        seconds=round(time.perf_counter() - started, 2),
    )


def _server_target(to: str) -> StoreUrl | None:
    """The graph `to` names when it is a store URL (never echoing its password)."""
    return parse_store_url(to) if "://" in to else None


def _refuse_a_graph_in_use(url: StoreUrl, target: Path) -> None:
    """A new copy goes into a graph that holds no memory yet: never over a team's store."""
    store = _open_target(target, str(url))
    try:
        if store.memories.count():
            raise Conflict(
                f"the graph {url} already holds memories; copy into a new graph",
                store_url=str(url),
            )
    finally:
        store.close()


def _open_target(target: Path, to: str) -> Store:
    """The store a copy goes into: `target`'s own database, or the graph `to` names with
    `target` as its data dir."""
    url = _server_target(to)
    return open_store_at(target, engine=to) if url is None else open_graph_store(url, target)


def _copy_config(source: Path, target: Path, url: StoreUrl | None) -> None:
    """The source's settings for the new data dir, its store_url the copy's (or none): a
    top-level line, first, before any [table]. With a password in it, only the owner reads it."""
    lines = source.read_text(encoding="utf-8").splitlines() if source.is_file() else []
    first_table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), None)
    top, rest = lines[:first_table], lines[first_table:] if first_table is not None else []
    top = [line for line in top if not line.lstrip().startswith("store_url")]
    if url is not None:
        top.insert(0, f"store_url = {json.dumps(url.secret_text())}")
    if not top and not rest:
        return
    target.write_text("\n".join([*top, *rest]) + "\n", encoding="utf-8")
    if url is not None and url.password:
        target.chmod(0o600)


def _manifest(work: Path, source: Path, to: str) -> dict[str, Any] | None:
    """An unfinished copy's manifest, when it is a copy of `source` to `to`."""
    try:
        found: dict[str, Any] = json.loads((work / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read {work / MANIFEST}: {exc}", path=str(work)) from exc
    if found.get("source") != str(source) or found.get("to") != to:
        raise Conflict(
            f"{work.parent} holds an unfinished copy of {found.get('source')} to "
            f"{found.get('to')}, not of {source} to {to}",
            path=str(work.parent),
        )
    return found


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _export(
    settings: Settings,
    work: Path,
    manifest: dict[str, Any],
    *,
    force: bool,
    progress: Progress | None,
) -> None:
    owner = live_owner(settings.home)
    if owner is not None:
        if not force:
            raise Conflict(
                f"store {settings.home} is served by owner process {owner.pid}; stop it "
                "(`graphmem daemon stop`) or pass --force to stop it and copy",
                pid=owner.pid,
            )
        stop_owner(settings.home)
    store = open_store_backend(settings)
    try:
        manifest["from"] = store.engine_name
        specs = store.tables.specs()
        manifest["tables"] = [spec.to_json() for spec in specs]
        for done, spec in enumerate(specs):
            if progress is not None:
                progress(f"export {spec.name}", done, len(specs))
            if spec.name not in manifest["exported"]:
                digest = store.tables.export(spec, work)
                manifest["exported"][spec.name] = {"rows": digest.rows, "sha256": digest.sha256}
                _save(work / MANIFEST, manifest)
        _save(work / MANIFEST, manifest)
    finally:
        store.close()


def _load_in_child(
    target: Path, to: str, work: Path, progress: Progress | None
) -> dict[str, dict[str, Any]]:
    """Run `load` in a process of the target's engine, relaying its progress."""
    # the target goes on stdin: a graph's address may hold a password, no argument for `ps`
    command = [sys.executable, "-P", "-m", "graphmem.migration", str(target)]
    # its stderr goes to a file: a pipe read only after stdout's end would stop a child that
    # writes more than a pipe holds there, and this process with it
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errors:
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(to + "\n")
        child.stdin.close()
        for line in child.stdout:
            step = json.loads(line)
            if progress is not None:
                progress(f"load {step['table']}", step["done"], step["of"])
        child.wait()
        errors.seek(0)
        error = errors.read()
    if child.returncode != 0:
        raise StorageError(
            f"loading the copy into {target} failed (run the same command again to resume): "
            f"{error.strip().splitlines()[-1] if error.strip() else child.returncode}",
            path=str(target),
        )
    found: dict[str, dict[str, Any]] = json.loads((work / LOADED).read_text(encoding="utf-8"))
    return found


def load(target: Path, to: str) -> None:
    """The child's half: load every exported table not loaded yet, digest it, say so."""
    work = target / WORK
    manifest = json.loads((work / MANIFEST).read_text(encoding="utf-8"))
    loaded_path = work / LOADED
    loaded = json.loads(loaded_path.read_text(encoding="utf-8")) if loaded_path.exists() else {}
    specs = [TableSpec.from_json(data) for data in manifest["tables"]]
    store = _open_target(target, to)
    try:
        for done, spec in enumerate(specs):
            print(json.dumps({"table": spec.name, "done": done, "of": len(specs)}), flush=True)
            if spec.name in loaded:
                continue
            store.tables.load(spec, work)
            digest = store.tables.digest(spec)
            loaded[spec.name] = {"rows": digest.rows, "sha256": digest.sha256}
            _save(loaded_path, loaded)
    finally:
        store.close()


if __name__ == "__main__":
    load(Path(sys.argv[1]), sys.stdin.readline().strip())
