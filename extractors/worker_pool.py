"""Worker processes for big batches, so extraction uses every core.

Nearly all the time goes into spaCy's tok2vec, parser and NER, which hold the GIL: two
threads were no faster than one, while two processes on two idle cores come close to twice
the rate of one. Each worker is a fresh interpreter serving `worker_main` (not a fork, which is unsafe
in a process that already runs threads, and not multiprocessing's spawn, which re-runs the
parent's main script when it lacks a `__main__` guard). Workers load the model once, return
finished Extractions, and live until `close`.
"""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, cast

from .base import Extraction

_WORKER_MODULE = f"{__package__}.worker_main"
# the child sees the parent's import path, so an uninstalled checkout works too
_BOOT = (
    "import importlib, json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
    "importlib.import_module(sys.argv[2]).serve(sys.argv[3], int(sys.argv[4]))"
)
_STOP_SECONDS = 5.0


class WorkerError(RuntimeError):
    """A worker died or answered out of protocol."""


class _Worker:
    def __init__(self, model: str, batch_size: int) -> None:
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _BOOT,
                json.dumps(sys.path),
                _WORKER_MODULE,
                model,
                str(batch_size),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self._in = cast(IO[bytes], self._process.stdin)
        self._out = cast(IO[bytes], self._process.stdout)
        self.name = self._receive()

    def send(self, texts: list[str]) -> None:
        try:
            pickle.dump(texts, self._in, protocol=pickle.HIGHEST_PROTOCOL)
            self._in.flush()
        except OSError as exc:
            raise WorkerError(f"extraction worker is gone ({exc})") from None

    def _receive(self) -> object:
        try:
            return pickle.load(self._out)
        except (EOFError, pickle.UnpicklingError) as exc:
            code = self._process.poll()
            raise WorkerError(f"extraction worker stopped (exit code {code}): {exc!r}") from None

    def receive(self) -> list[Extraction]:
        reply = self._receive()
        if not isinstance(reply, list):
            raise WorkerError("extraction worker answered out of protocol")
        return cast(list[Extraction], reply)

    def stop(self) -> None:
        if self._process.poll() is None:
            try:
                self._in.close()
                self._process.wait(timeout=_STOP_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._out.close()


class WorkerPool:
    """A fixed set of worker processes that each hold one loaded pipeline."""

    def __init__(self, model: str, workers: int, batch_size: int, expected_name: str) -> None:
        self._workers: list[_Worker] = []
        try:
            for _ in range(workers):
                worker = _Worker(model, batch_size)
                self._workers.append(worker)
                if worker.name != expected_name:  # it fell back to rules: not the same output
                    raise WorkerError(f"worker runs {worker.name!r}, not {expected_name!r}")
        except BaseException:
            self.close()
            raise

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        """One chunk per worker, all sent before any reply is read, so they parse at once."""
        size = math.ceil(len(texts) / len(self._workers))
        chunks = [list(texts[i : i + size]) for i in range(0, len(texts), size)]
        busy = self._workers[: len(chunks)]
        for worker, chunk in zip(busy, chunks, strict=True):
            worker.send(chunk)
        return [e for worker in busy for e in worker.receive()]

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self._workers = []
