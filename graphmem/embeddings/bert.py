"""A BERT encoder forward pass in numpy: the maths behind the local embedder, with no torch.

It computes what `transformers` computes for BertModel (post-LayerNorm, exact erf GELU), then
mean pooling and L2 normalisation as sentence-transformers does. For speed, tokens are packed:
the dense layers run over the real tokens of a whole batch at once, and only attention is padded,
in groups of texts of similar length. Weights are rearranged once at load (`Weights.from_bert`)
so that the forward pass does less work: fused QKV, pre-scaled queries, folded biases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings import packing
from graphmem.embeddings.base import l2_normalise
from graphmem.embeddings.kernels import F32, add_layer_norm_, gelu_


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


_LAYER_KEYS = tuple(
    f"{part}.{kind}"
    for part in (
        "attention.self.query", "attention.self.key", "attention.self.value",
        "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
        "output.dense", "output.LayerNorm",
    )
    for kind in ("weight", "bias")
)  # fmt: skip


@dataclass(frozen=True)
class Weights:
    """A BERT encoder's weights, rearranged for `forward`."""

    word: F32
    position: F32  # position embeddings plus the (always 0) token-type embedding
    ln_g: F32
    ln_b: F32
    heads: int
    build_layers: Callable[[], tuple[Layer, ...]] = field(repr=False, compare=False)

    @property
    def dim(self) -> int:
        return int(self.word.shape[1])

    @cached_property
    def layers(self) -> tuple[Layer, ...]:
        """Rearranged on first use: the int8 engine with its model already built never needs
        them, and rearranging reads all ~85 MB of them (~0.1 s of a cold `graphmem recall`)."""
        return self.build_layers()

    @classmethod
    def from_bert(cls, w: Mapping[str, NDArray[np.generic]], *, layers: int, heads: int) -> Weights:
        """From BertModel state-dict names; raises KeyError for a missing weight. The maths of
        the rearrangement is `packing.fold_layer`'s, shared with the int8 engine."""
        embeddings = packing.fold_embeddings(w)
        scale = packing.query_scale(embeddings["word"].shape[1], heads)
        # every layer weight looked up now (views of the mapped file, nothing read), so a
        # missing one fails at load, not at first use
        found = [{k: w[f"encoder.layer.{i}.{k}"] for k in _LAYER_KEYS} for i in range(layers)]
        return cls(
            word=embeddings["word"],
            position=embeddings["position"],
            ln_g=embeddings["ln_g"],
            ln_b=embeddings["ln_b"],
            heads=heads,
            build_layers=lambda: tuple(Layer(**packing.fold_layer(t, scale)) for t in found),
        )


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


def _plan(lengths: NDArray[np.int64], offsets: NDArray[np.int64]) -> list[_Group]:
    """Split ascending lengths into runs whose padding to the run's longest stays small."""
    groups, lo = [], 0
    for hi in range(1, len(lengths) + 1):
        if hi < len(lengths) and lengths[hi] <= lengths[lo] * 1.25 + 4:
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
    out = np.empty((qkv.shape[0], qkv.shape[1] // 3), dtype=np.float32)
    for g in plan:
        _attend(qkv, g, out, heads, b_q)
    return out


def forward(model: Weights, ids: NDArray[np.int64], lengths: NDArray[np.int64]) -> F32:
    """Packed token ids of texts (ascending length) -> their mean-pooled, normalised vectors."""
    offsets = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    plan = _plan(lengths, offsets)
    positions = np.arange(len(ids)) - np.repeat(offsets, lengths)
    x = model.word[ids]
    x += model.position[positions]
    x = add_layer_norm_(x, None, None, model.ln_g, model.ln_b)
    for layer in model.layers:
        attn = _attention(x @ layer.w_qkv, plan, model.heads, layer.b_q) @ layer.w_out
        x = add_layer_norm_(attn, layer.b_out, x, layer.ln1_g, layer.ln1_b)
        h = gelu_(x @ layer.w_in, layer.b_in) @ layer.w_ffn_out
        x = add_layer_norm_(h, layer.b_ffn_out, x, layer.ln2_g, layer.ln2_b)
    pooled = np.add.reduceat(x, offsets, axis=0)
    pooled /= lengths[:, None].astype(np.float32)
    return l2_normalise(pooled)
