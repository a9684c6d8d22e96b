"""A BERT encoder forward pass in numpy: the maths behind the local embedder, with no torch.

It computes what `transformers` computes for BertModel (post-LayerNorm, exact erf GELU), then
mean pooling and L2 normalisation as sentence-transformers does. For speed, tokens are packed:
the dense layers run over the real tokens of a whole batch at once, and only attention is padded,
in groups of texts of similar length. Weights are rearranged once at load (`Weights.from_bert`)
so that the forward pass does less work: fused QKV, pre-scaled queries, folded biases.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings.base import l2_normalise
from graphmem.embeddings.kernels import CHUNK_ROWS, F32, add_layer_norm_, gelu_

_GROUP_MAX = 16  # texts per attention group, so groups can be shared between threads


@dataclass(frozen=True)
class Layer:
    w_qkv: F32  # (hidden, 3*hidden); query part pre-scaled by 1/sqrt(head_dim)
    b_q: F32  # query bias, pre-scaled; the key bias is dropped and the value bias folded in b_out
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
class Weights:
    """A BERT encoder's weights, rearranged for `forward`."""

    word: F32
    position: F32  # position embeddings plus the (always 0) token-type embedding
    ln_g: F32
    ln_b: F32
    layers: tuple[Layer, ...]
    heads: int

    @property
    def dim(self) -> int:
        return int(self.word.shape[1])

    @classmethod
    def from_bert(cls, w: Mapping[str, NDArray[np.generic]], *, layers: int, heads: int) -> Weights:
        """From BertModel state-dict names; raises KeyError for a missing weight.

        Scaling queries by 1/sqrt(head_dim), a power of two here, is exact. Softmax ignores a
        constant added to a row, so the key bias has no effect; its rows sum to one, so the
        value bias passes straight through to the output projection.
        """

        def get(key: str) -> F32:
            return np.ascontiguousarray(w[key], dtype=np.float32)

        dim = get("embeddings.word_embeddings.weight").shape[1]
        scale = np.float32(1.0 / math.sqrt(dim // heads))
        out = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            a = p + "attention."
            q, k, v = (get(f"{a}self.{n}.weight") for n in ("query", "key", "value"))
            w_out = get(a + "output.dense.weight")
            out.append(
                Layer(
                    w_qkv=np.ascontiguousarray(np.concatenate([q * scale, k, v]).T),
                    b_q=get(a + "self.query.bias") * scale,
                    w_out=w_out.T,
                    b_out=get(a + "output.dense.bias") + w_out @ get(a + "self.value.bias"),
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
        return cls(
            word=get("embeddings.word_embeddings.weight"),
            position=get("embeddings.position_embeddings.weight")
            + get("embeddings.token_type_embeddings.weight")[0],
            ln_g=get("embeddings.LayerNorm.weight"),
            ln_b=get("embeddings.LayerNorm.bias"),
            layers=tuple(out),
            heads=heads,
        )


# BLAS already uses every core for the matrix products; the element-wise work between them is
# single-threaded numpy, so it is split over helper threads (numpy releases the GIL inside its
# loops).
_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
_HELPERS = max(0, min(_CPUS, 4) - 1)
_pool: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _in_parallel(jobs: Sequence[Callable[[], object]]) -> None:
    """Run jobs on the helper threads and the calling one; re-raise the first failure."""
    global _pool
    if len(jobs) <= 1 or _HELPERS == 0:
        for job in jobs:
            job()
        return
    if _pool is None:
        with _POOL_LOCK:
            if _pool is None:
                _pool = ThreadPoolExecutor(_HELPERS, thread_name_prefix="graphmem-embed")
    futures = [_pool.submit(job) for job in jobs[1:]]
    jobs[0]()
    for future in futures:
        future.result()


def _row_slices(rows: int) -> list[slice]:
    """Split `rows` into one slice per thread, at multiples of the chunk size."""
    parts = min(_HELPERS + 1, max(1, rows // CHUNK_ROWS))
    step = -(-rows // parts)
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


@dataclass(frozen=True)
class _Group:
    """Consecutive texts of a batch (ascending length), attended together, padded to `width`."""

    first: int  # packed rows first:last hold the group's tokens
    last: int
    lengths: tuple[int, ...]
    mask: F32 | None  # (texts, 1, 1, width): 0 for tokens, -1e30 for padding; None if no padding

    @property
    def width(self) -> int:
        return self.lengths[-1]

    @property
    def cost(self) -> int:
        return len(self.lengths) * self.width * (self.width + 100)  # scores and the rest


def _plan(lengths: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[_Group]:
    """Split ascending lengths into runs whose padding to the run's longest stays small."""
    groups, lo = [], 0
    for hi in range(1, len(lengths) + 1):
        if hi < len(lengths) and hi - lo < _GROUP_MAX and lengths[hi] <= lengths[lo] * 1.25 + 4:
            continue
        lens = lengths[lo:hi]
        mask = None
        if lens[0] != lens[-1]:
            real = np.arange(lens[-1]) < lens[:, None]
            mask = np.where(real, np.float32(0), np.float32(-1e30))[:, None, None, :]
        first = int(offsets[lo])
        groups.append(_Group(first, first + int(lens.sum()), tuple(map(int, lens)), mask))
        lo = hi
    return groups


def _attend(qkv: F32, g: _Group, out: F32, heads: int, b_q: F32) -> None:
    """Self-attention of one group: packed (tokens, 3*dim) rows -> packed (tokens, dim) context.

    Key biases are dropped and value biases folded into the output bias at load: softmax
    ignores a per-row constant, and its rows sum to one.
    """
    count, width, dim = len(g.lengths), g.width, out.shape[1]
    if g.mask is None:
        rows = qkv[g.first : g.last].reshape(count, width, 3 * dim)
    else:
        rows = np.zeros((count, width, 3 * dim), dtype=np.float32)
        start = g.first
        for i, n in enumerate(g.lengths):
            rows[i, :n] = qkv[start : start + n]
            start += n
    rows[:, :, :dim] += b_q  # (padding queries get it too, and are then dropped)
    per_head = rows.reshape(count, width, 3, heads, dim // heads)
    q = per_head[:, :, 0].transpose(0, 2, 1, 3)  # (count, heads, width, head_dim), pre-scaled
    k = per_head[:, :, 1].transpose(0, 2, 3, 1)
    v = per_head[:, :, 2].transpose(0, 2, 1, 3)
    scores = q @ k
    if g.mask is not None:
        scores += g.mask
    # Softmax without a max per row: exp cannot overflow below 60, and if a row underflowed
    # (never seen in practice) the group is redone the careful way.
    top = scores.max()
    if top > 60:
        scores -= top
    weights = np.exp(scores, out=scores)
    sums = weights.sum(axis=-1, keepdims=True)
    if sums.min() < 1e-20:
        scores = q @ k + (0 if g.mask is None else g.mask)
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores, out=scores)
        sums = weights.sum(axis=-1, keepdims=True)
    ctx = weights @ v
    ctx /= sums
    by_token = ctx.transpose(0, 2, 1, 3)  # (count, width, heads, head_dim)
    start = g.first
    for i, n in enumerate(g.lengths):
        out[start : start + n].reshape(n, heads, dim // heads)[...] = by_token[i, :n]
        start += n


def _attention(qkv: F32, plan: list[_Group], heads: int, b_q: F32) -> F32:
    """Attention of every group, the groups shared out between the threads by cost."""
    out = np.empty((qkv.shape[0], qkv.shape[1] // 3), dtype=np.float32)
    shares: list[list[_Group]] = [[] for _ in range(min(len(plan), _HELPERS + 1))]
    loads = [0] * len(shares)
    for g in sorted(plan, key=lambda g: -g.cost):  # greedy: biggest group to the idlest thread
        i = loads.index(min(loads))
        shares[i].append(g)
        loads[i] += g.cost
    _in_parallel([partial(_attend_all, qkv, share, out, heads, b_q) for share in shares])
    return out


def _attend_all(qkv: F32, groups: list[_Group], out: F32, heads: int, b_q: F32) -> None:
    for g in groups:
        _attend(qkv, g, out, heads, b_q)


def _gelu(h: F32, bias: F32) -> F32:
    _in_parallel([partial(gelu_, h[rows], bias) for rows in _row_slices(h.shape[0])])
    return h


def _layer_norm(x: F32, bias: F32 | None, residual: F32 | None, gamma: F32, beta: F32) -> F32:
    jobs = [
        partial(add_layer_norm_, x[r], bias, None if residual is None else residual[r], gamma, beta)
        for r in _row_slices(x.shape[0])
    ]
    _in_parallel(jobs)
    return x


def forward(model: Weights, ids: NDArray[np.int64], lengths: NDArray[np.int64]) -> F32:
    """Packed token ids of texts (ascending length) -> their mean-pooled, normalised vectors."""
    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    plan = _plan(lengths, offsets)
    positions = np.arange(len(ids)) - np.repeat(offsets, lengths)
    x = model.word[ids]
    x += model.position[positions]
    x = _layer_norm(x, None, None, model.ln_g, model.ln_b)
    for layer in model.layers:
        attn = _attention(x @ layer.w_qkv, plan, model.heads, layer.b_q) @ layer.w_out
        x = _layer_norm(attn, layer.b_out, x, layer.ln1_g, layer.ln1_b)
        h = _gelu(x @ layer.w_in, layer.b_in) @ layer.w_ffn_out
        x = _layer_norm(h, layer.b_ffn_out, x, layer.ln2_g, layer.ln2_b)
    pooled = np.add.reduceat(x, offsets, axis=0)
    pooled /= lengths[:, None].astype(np.float32)
    return l2_normalise(pooled)
