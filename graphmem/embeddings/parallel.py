"""Run the local encoder on every core: our own threads, with BLAS held to one thread meanwhile.

OpenBLAS splits each matrix product over the cores, but between products its idle workers spin,
so the element-wise numpy work (a quarter of the encoder's time) runs on one core while the
others wait. Encoding independent slices of a batch in our own threads, with BLAS single-
threaded for that time, keeps every core busy: measured 231 -> 292 sentences/s on 2 cores.

The BLAS thread count is process-wide: other threads doing BLAS during an embed get one thread
too, and the count is restored when the last embed ends. If the BLAS in use cannot be found
(it is not numpy's bundled OpenBLAS), `workers()` is 1 and callers simply run serially.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

_MAX_WORKERS = 8
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads")


def _find_blas() -> tuple[Callable[[int], None], Callable[[], int]] | None:
    """numpy's bundled OpenBLAS thread setter and getter, or None."""
    root = Path(np.__file__).resolve().parent
    for lib in sorted((root.parent / "numpy.libs").glob("libscipy_openblas*")) + sorted(
        (root / ".dylibs").glob("libscipy_openblas*")
    ):
        try:
            dll = ctypes.CDLL(str(lib))  # already loaded by numpy: this finds the same copy
        except OSError:
            continue
        setter = next((getattr(dll, n) for n in _SETTERS if hasattr(dll, n)), None)
        getter = next((getattr(dll, n) for n in _GETTERS if hasattr(dll, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int
            return setter, getter
    return None


def _cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_BLAS = _find_blas()
_WORKERS = min(_cpus(), _MAX_WORKERS) if _BLAS is not None else 1
_lock = threading.Lock()
_holders = 0
_saved_threads = 0
_pool: ThreadPoolExecutor | None = None


def _after_fork_in_child() -> None:
    """A child has our objects but none of their threads: forget the pool and any holders."""
    global _lock, _holders, _pool
    if _holders and _BLAS is not None:  # forked during another thread's embed
        _BLAS[0](_saved_threads)
    _lock, _holders, _pool = threading.Lock(), 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def workers() -> int:
    """How many slices to encode at once (1: BLAS threads cannot be controlled, or one core)."""
    return _WORKERS


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Hold BLAS to one thread; nested and concurrent holders restore it only when all leave."""
    global _holders, _saved_threads
    if _BLAS is None:
        yield
        return
    setter, getter = _BLAS
    with _lock:
        if _holders == 0:
            _saved_threads = getter()
            setter(1)
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                setter(_saved_threads)


def run_all(jobs: Sequence[Callable[[], object]]) -> None:
    """Run jobs at once, one in the calling thread and the rest on the pool; re-raise failures."""
    global _pool
    if len(jobs) <= 1 or _WORKERS <= 1:
        for job in jobs:
            job()
        return
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_WORKERS - 1, thread_name_prefix="graphmem-embed")
        pool = _pool
    futures = [pool.submit(job) for job in jobs[1:]]
    try:
        jobs[0]()
    finally:
        for future in futures:
            future.result()
