"""all-MiniLM-L6-v2 as graphmem ships it: the BERT weights rearranged once (fused QKV, pre-scaled
queries, folded biases) and every dense layer quantised to int8 per output column.

The int8 engine runs exactly these arrays, whether they were packed when the wheel was built or
are packed at load from the published float32 weights: one function does both, so a store's
vectors do not depend on where the weights came from. The embedding tables stay float32 (the
lookup runs in numpy, and rounding them would change every vector: another embedding space).

This module imports nothing but numpy: the wheel's build loads it by its path to pack the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

F32 = NDArray[np.float32]

LAYERS = 6
HEADS = 12
FILE = "minilm-l6-v2-int8.safetensors"
"""The packed model's file name in the model folder, beside `tokenizer.json`."""
FORMAT = "graphmem-minilm-int8/1"
"""Recorded in the file's metadata; a file of another format is packed again."""
DENSE = ("qkv", "out", "in", "ffn")
NORMS = ("ln1", "ln2")


def names(layers: int) -> list[str]:
    """The tensors a packed model of `layers` layers holds (see `pack`)."""
    found = ["word", "position", "ln.g", "ln.b"]
    for i in range(layers):
        found += [f"l{i}.{d}.{part}" for d in DENSE for part in ("q", "scale", "bias")]
        found += [f"l{i}.{n}.{part}" for n in NORMS for part in ("g", "b")]
    return found


def query_scale(dim: int, heads: int) -> np.float32:
    return np.float32(1.0 / math.sqrt(dim // heads))


def fold_embeddings(w: Mapping[str, NDArray[np.generic]]) -> dict[str, F32]:
    """The embedding tables; the token-type embedding (always type 0) is added to positions."""

    def get(key: str) -> F32:
        return np.ascontiguousarray(w[key], dtype=np.float32)

    return {
        "word": get("embeddings.word_embeddings.weight"),
        "position": get("embeddings.position_embeddings.weight")
        + get("embeddings.token_type_embeddings.weight")[0],
        "ln_g": get("embeddings.LayerNorm.weight"),
        "ln_b": get("embeddings.LayerNorm.bias"),
    }


def fold_layer(t: Mapping[str, NDArray[np.generic]], scale: np.float32) -> dict[str, F32]:
    """One encoder layer from BertModel's names within the layer, for the forward pass.

    Queries are scaled by 1/sqrt(head_dim) here instead of every score later (only rounding
    differs). Softmax ignores a constant added to a row, so the key bias has no effect; its
    rows sum to one, so the value bias passes straight to the output projection.
    """

    def f32(key: str) -> F32:
        return np.ascontiguousarray(t[key], dtype=np.float32)

    q, k, v = (f32(f"attention.self.{n}.weight") for n in ("query", "key", "value"))
    w_out = f32("attention.output.dense.weight")
    return {
        "w_qkv": np.ascontiguousarray(np.concatenate([q * scale, k, v]).T),
        "b_q": f32("attention.self.query.bias") * scale,
        "w_out": w_out.T,
        "b_out": f32("attention.output.dense.bias") + w_out @ f32("attention.self.value.bias"),
        "ln1_g": f32("attention.output.LayerNorm.weight"),
        "ln1_b": f32("attention.output.LayerNorm.bias"),
        "w_in": f32("intermediate.dense.weight").T,
        "b_in": f32("intermediate.dense.bias"),
        "w_ffn_out": f32("output.dense.weight").T,
        "b_ffn_out": f32("output.dense.bias"),
        "ln2_g": f32("output.LayerNorm.weight"),
        "ln2_b": f32("output.LayerNorm.bias"),
    }


def quantise_columns(w: F32) -> tuple[NDArray[np.int8], F32]:
    """Symmetric int8 per output column: `w ≈ q * scale`, the scale chosen by the column's peak."""
    peak = np.abs(w).max(axis=0)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def pack(
    embeddings: Mapping[str, F32], layers: Sequence[Mapping[str, F32]]
) -> dict[str, NDArray[np.generic]]:
    """The int8 engine's tensors, by name: `word`, `position`, `ln.g`, `ln.b`, and per layer i
    `l{i}.{dense}.q|scale|bias` for the four dense layers and `l{i}.{norm}.g|b` for the two norms.
    `embeddings` and `layers` are `fold_embeddings` and `fold_layer` results."""
    out: dict[str, NDArray[np.generic]] = {
        "word": embeddings["word"],
        "position": embeddings["position"],
        "ln.g": embeddings["ln_g"],
        "ln.b": embeddings["ln_b"],
    }
    for i, layer in enumerate(layers):
        dim = layer["w_out"].shape[1]
        dense = {
            "qkv": (layer["w_qkv"], np.concatenate([layer["b_q"], np.zeros(2 * dim, np.float32)])),
            "out": (layer["w_out"], layer["b_out"]),
            "in": (layer["w_in"], layer["b_in"]),
            "ffn": (layer["w_ffn_out"], layer["b_ffn_out"]),
        }
        for name, (w, bias) in dense.items():
            q, scale = quantise_columns(w)
            out[f"l{i}.{name}.q"], out[f"l{i}.{name}.scale"] = q, scale
            out[f"l{i}.{name}.bias"] = np.ascontiguousarray(bias, dtype=np.float32)
        for norm in NORMS:
            out[f"l{i}.{norm}.g"] = layer[f"{norm}_g"]
            out[f"l{i}.{norm}.b"] = layer[f"{norm}_b"]
    return out


def pack_bert(
    w: Mapping[str, NDArray[np.generic]], *, layers: int = LAYERS, heads: int = HEADS
) -> dict[str, NDArray[np.generic]]:
    """`pack` straight from a BertModel state dict; raises KeyError for a missing weight."""
    embeddings = fold_embeddings(w)
    scale = query_scale(embeddings["word"].shape[1], heads)
    folded = [
        fold_layer({k.removeprefix(f"encoder.layer.{i}."): v for k, v in w.items()}, scale)
        for i in range(layers)
    ]
    return pack(embeddings, folded)
