"""kill -9 of the owner in the middle of an import loses nothing that was acknowledged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from graphmem.daemon.client import connect
from graphmem.embeddings.hashing import HashEmbedder
from graphmem.errors import StoreError
from graphmem.service import GraphMemory
from graphmem.settings import load_settings


def test_kill_9_during_import_loses_no_acknowledged_write(tmp_path: Path) -> None:
    home = tmp_path / "store"
    env = {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_EMBEDDING_PROVIDER": "hash"}
    started = subprocess.run(
        [sys.executable, "-m", "graphmem", "daemon", "start", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    pid = json.loads(started.stdout)["pid"]
    settings = load_settings(home, environ={"GRAPHMEM_EMBEDDING_PROVIDER": "hash"})
    remote = connect(settings, recover=False)  # the import stops with its owner
    assert remote is not None

    lines = [
        json.dumps({"id": f"01HKS6590000000000{i:08d}", "content": f"imported note {i}"})
        for i in range(20_000)
    ]
    acknowledged: list[str] = []
    failure: list[BaseException] = []

    def import_in_chunks() -> None:
        try:
            for start in range(0, len(lines), 200):
                chunk = lines[start : start + 200]
                remote.import_jsonl(chunk, first_line=start + 1)
                acknowledged.extend(json.loads(line)["id"] for line in chunk)
        except StoreError as exc:  # the owner died under us: expected
            failure.append(exc)

    worker = threading.Thread(target=import_in_chunks)
    worker.start()
    deadline = 60.0
    while len(acknowledged) < 1000 and worker.is_alive() and deadline > 0:
        worker.join(timeout=0.05)
        deadline -= 0.05
    os.kill(pid, signal.SIGKILL)
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert failure, "the import should have been cut short by the kill"
    assert 1000 <= len(acknowledged) < len(lines)

    with GraphMemory(settings, embedder=HashEmbedder()) as gm:
        status = gm.db_status()
        assert not status.pending
        present = gm.store.existing_ids(acknowledged)
        assert len(present) == len(acknowledged)
        sample = gm.get(acknowledged[-1])
        assert sample.content.startswith("imported note")
        assert gm.stats().missing_vectors == 0

    doctor = subprocess.run(
        [sys.executable, "-m", "graphmem", "doctor", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["ok"]
