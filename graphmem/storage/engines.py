"""The embedded engines a store can run on: Kùzu 0.11.3 (archived upstream, the default) and
LadybugDB, its maintained fork: the same Cypher and Python API under another module name, and
its own file format.

Only one of them can be loaded in a process. Both register the same native types, and
importing the second fails ("type "Database" is already registered") and then crashes the
process. So a process takes the engine of the first store it opens, a store of the other
engine is refused with both names, and `graphmem migrate` copies a store between engines
through a process of each.

A store records its engine in `engine.json` in its data dir, beside the database file, so that
it can be named before either engine is loaded: a store made before the record is Kùzu's.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, get_args

from graphmem.errors import StorageError

EngineName = Literal["kuzu", "ladybug"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)
RECORD = "engine.json"


@dataclass(frozen=True)
class Engine:
    name: EngineName
    module_name: str
    db_file: str
    install: str  # what to install when its module is missing
    options: tuple[tuple[str, Any], ...] = ()  # Database keyword arguments of this engine
    # Kùzu checkpoints when a transaction that ran a COPY commits (a COPY's rows are not
    # logged). LadybugDB 0.22 does not while another connection is open, and loses those rows
    # when the database closes: graphmem checkpoints itself after such a commit.
    copy_commit_checkpoints: bool = True
    # Kùzu evicts pages when a store outgrows the page cache sized at its open. LadybugDB
    # 0.22's checkpoint failed instead ("The buffer pool is full and no memory could be freed")
    # 205k memories into an import into a store opened empty (1 GiB): it gets its own default.
    pool_follows_store: bool = True

    @property
    def wal_file(self) -> str:
        return self.db_file + ".wal"

    def module(self) -> ModuleType:
        """The engine's Python module, imported on first use; StorageError when the other engine
        is loaded in this process already, or this one is not installed."""
        return _load(self)

    def version(self) -> str:
        return str(self.module().__version__)

    def storage_version(self) -> int:
        return int(self.module().Database.get_storage_version())


KUZU = Engine("kuzu", "kuzu", "graph.kuzu", "pip install kuzu==0.11.3")
# LadybugDB reserves address space for the largest database it may grow to at each open, 8 TiB
# by default: a process with 16 stores open ran out ("Mmap for size 8796093022208 failed").
# 1 TiB is far beyond any store (1M memories take ~10 GB).
LADYBUG = Engine(
    "ladybug", "ladybug", "graph.lbug", "pip install 'graphmem[ladybug]'",
    options=(("max_db_size", 1 << 40),), copy_commit_checkpoints=False,
    pool_follows_store=False,
)  # fmt: skip
BY_NAME: dict[str, Engine] = {engine.name: engine for engine in (KUZU, LADYBUG)}
DEFAULT = KUZU
"""The engine of a new store when none is asked for (the project's design names Kùzu until
LadybugDB matches it on every figure). A test run on LadybugDB sets it for its process."""
_LOAD_LOCK = threading.Lock()


def _load(engine: Engine) -> ModuleType:
    with _LOAD_LOCK:
        for other in BY_NAME.values():
            if other is not engine and other.module_name in sys.modules:
                raise StorageError(
                    f"this process runs the {other.name} engine, so it cannot open a "
                    f"{engine.name} store: the two cannot be loaded in one process; open it "
                    f"from another process, or copy it with `graphmem migrate --to {other.name}`",
                    engine=engine.name,
                    loaded=other.name,
                )
        try:
            return importlib.import_module(engine.module_name)
        except ImportError:
            raise StorageError(
                f"the {engine.name} engine is not installed: run `{engine.install}`",
                engine=engine.name,
            ) from None


def recorded(home: Path) -> dict[str, Any] | None:
    """What the store in `home` says of its engine; a store made before the record says
    nothing, and is Kùzu's when it has Kùzu's file; None when `home` holds no store."""
    try:
        found = json.loads((home / RECORD).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"engine": KUZU.name} if (home / KUZU.db_file).exists() else None
    except (OSError, ValueError) as exc:
        raise StorageError(f"cannot read {home / RECORD}: {exc}", path=str(home)) from exc
    if not isinstance(found, dict) or found.get("engine") not in BY_NAME:
        raise StorageError(f"{home / RECORD} names no engine graphmem knows", path=str(home))
    return found


def has_store(home: Path) -> bool:
    return recorded(home) is not None


def choose(home: Path, wanted: str | None) -> Engine:
    """The engine to open `home` with: the store's own; for a new store, `wanted` (`DEFAULT`
    when None). StorageError when `wanted` names another engine than the store's, naming both."""
    found = recorded(home)
    if wanted is not None and wanted not in BY_NAME:
        raise StorageError(f"unknown engine {wanted!r}: use one of {', '.join(ENGINES)}")
    if found is None:
        return BY_NAME[wanted] if wanted else DEFAULT
    engine = BY_NAME[found["engine"]]
    if wanted is not None and wanted != engine.name:
        made = f"{engine.name} {found['version']}" if found.get("version") else engine.name
        raise StorageError(
            f"store {home} was made by the {made} engine, not {wanted}: open it with "
            f"engine={engine.name} (GRAPHMEM_ENGINE={engine.name}), or copy it to {wanted} with "
            f"`graphmem migrate --to {wanted} NEW_HOME`",
            path=str(home),
            engine=engine.name,
            wanted=wanted,
        )
    return engine


def check_storage_version(home: Path, engine: Engine) -> None:
    """Refuse a store whose file format is not this engine version's: LadybugDB's format
    changes between versions, and opening another's file is not safe."""
    found = recorded(home) or {}
    was = found.get("storage_version")
    if was is None or int(was) == engine.storage_version():
        return
    raise StorageError(
        f"store {home} was written by {engine.name} {found.get('version')} (storage format "
        f"{was}); this is {engine.name} {engine.version()} (format {engine.storage_version()}), "
        f"which cannot read it: export it with the graphmem that made it, or copy it with "
        f"`graphmem migrate` from there",
        path=str(home),
        engine=engine.name,
    )


def record(home: Path, engine: Engine) -> None:
    """Write the store's engine record (after its database first opened)."""
    data = {
        "engine": engine.name,
        "version": engine.version(),
        "storage_version": engine.storage_version(),
    }
    path = home / RECORD
    tmp = path.with_name(f".{RECORD}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data) + "\n", encoding="utf-8")
    os.replace(tmp, path)
