"""The thread helpers of the local encoder: BLAS threads come back, failures surface."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from graphmem.embeddings import parallel
from graphmem.embeddings.local import LocalEmbedder

needs_blas = pytest.mark.skipif(parallel._BLAS is None, reason="numpy's OpenBLAS not found")


def blas_threads() -> int:
    assert parallel._BLAS is not None
    return parallel._BLAS[1]()


@needs_blas
def test_blas_is_single_threaded_inside_and_restored_after_nested_holders() -> None:
    before = blas_threads()
    with parallel.single_threaded_blas():
        assert blas_threads() == 1
        with parallel.single_threaded_blas():
            assert blas_threads() == 1
        assert blas_threads() == 1  # the outer holder still needs it
    assert blas_threads() == before


@needs_blas
@pytest.mark.model
def test_embedding_many_texts_leaves_the_blas_thread_count_as_it_was() -> None:
    before = blas_threads()
    LocalEmbedder().embed([f"sentence number {i} about graphs" for i in range(100)])
    assert blas_threads() == before


def test_run_all_runs_every_job_once() -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def job(i: int) -> None:
        with lock:
            seen.append(i)

    parallel.run_all([partial(job, i) for i in range(5)])
    assert sorted(seen) == [0, 1, 2, 3, 4]


def test_run_all_raises_a_failure_from_any_job() -> None:
    def boom() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        parallel.run_all([lambda: None, boom])
    with pytest.raises(ValueError, match="boom"):
        parallel.run_all([boom, lambda: None])
