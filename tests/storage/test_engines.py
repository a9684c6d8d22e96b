"""Which engine a store runs on: its own, recorded beside it; another is refused, naming both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StorageError
from graphmem.service import GraphMemory, open_store
from graphmem.storage import engines

OTHER = engines.LADYBUG if engines.DEFAULT is engines.KUZU else engines.KUZU


def test_a_new_store_records_its_engine_and_its_storage_format(gm: GraphMemory) -> None:
    found = json.loads((gm.store.home / engines.RECORD).read_text())
    engine = gm.store.conn.engine
    assert found == {
        "engine": engine.name,
        "version": engine.version(),
        "storage_version": engine.storage_version(),
    }
    assert (gm.store.home / engine.db_file).exists()
    stats = gm.stats()
    assert (stats.engine, stats.engine_version) == (engine.name, engine.version())


def test_a_store_asked_for_by_another_engine_is_refused_naming_both(
    gm: GraphMemory, store_path: Path
) -> None:
    engine = gm.store.conn.engine
    gm.close()
    with pytest.raises(StorageError) as refused:
        open_store(store_path, embedder=HashEmbedder(), engine=OTHER.name)
    message = str(refused.value)
    assert f"made by the {engine.name} {engine.version()} engine, not {OTHER.name}" in message
    assert f"graphmem migrate --to {OTHER.name}" in message
    with open_store(store_path, embedder=HashEmbedder()) as again:  # unset: the store's own
        assert again.store.conn.engine is engine


def test_a_store_made_before_the_record_is_kuzus(tmp_path: Path) -> None:
    (tmp_path / engines.KUZU.db_file).write_bytes(b"")
    assert engines.choose(tmp_path, None) is engines.KUZU
    with pytest.raises(StorageError, match="made by the kuzu engine, not ladybug"):
        engines.choose(tmp_path, "ladybug")
    assert engines.choose(tmp_path / "new", "ladybug") is engines.LADYBUG
    assert engines.choose(tmp_path / "new", None) is engines.DEFAULT


def test_a_store_of_another_storage_format_is_refused(gm: GraphMemory, store_path: Path) -> None:
    gm.close()
    record = json.loads((store_path / engines.RECORD).read_text())
    record.update(version="0.0.1", storage_version=record["storage_version"] - 1)
    (store_path / engines.RECORD).write_text(json.dumps(record))
    with pytest.raises(StorageError, match=r"storage format .* cannot read it"):
        open_store(store_path, embedder=HashEmbedder())


def test_an_unreadable_record_is_a_storage_error(tmp_path: Path) -> None:
    (tmp_path / engines.RECORD).write_text('{"engine": "sqlite"}')
    with pytest.raises(StorageError, match="names no engine"):
        engines.choose(tmp_path, None)


def test_the_cli_refuses_a_store_of_another_engine_without_a_traceback(
    gm: GraphMemory, store_path: Path, cli_env: dict[str, str]
) -> None:
    gm.close()
    env = {**cli_env, "GRAPHMEM_HOME": str(store_path), "GRAPHMEM_ENGINE": OTHER.name}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "stats", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4
    assert "Traceback" not in done.stderr
    error = json.loads(done.stderr)
    assert error["error"] == "storage_error" and OTHER.name in error["message"]
    env["GRAPHMEM_ENGINE"] = gm.store.engine_name
    stats = subprocess.run(
        [sys.executable, "-m", "graphmem", "stats", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert json.loads(stats.stdout)["engine"] == gm.store.engine_name


def test_one_process_cannot_load_both_engines_and_says_so(tmp_path: Path) -> None:
    """Both register the same native types; the second import would crash the process."""
    script = textwrap.dedent(f"""
        from graphmem.storage import engines
        from graphmem.errors import StorageError
        engines.{engines.DEFAULT.name.upper()}.module()
        try:
            engines.{OTHER.name.upper()}.module()
        except StorageError as exc:
            print(exc)
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"runs the {engines.DEFAULT.name} engine, so it cannot open a {OTHER.name} store" in (
        done.stdout
    )
