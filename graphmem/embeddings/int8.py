"""The local model's int8 engine: the same BERT weights, quantised, run by ONNX Runtime.

The numpy encoder reaches about two thirds of what two cores can do in float32, ~170 texts/s
on short notes; that caps a bulk import below 300 memories/s. Here every dense layer's weights
are quantised to int8 per output column (once: `packing`), activations per token row as they
come, and ONNX Runtime runs the products with the CPU's integer instructions: about twice the
texts per second and a third of the time per query. Its vectors are close to the float32 model's (cosine
0.998 on average) but not equal, so they form their own embedding space, never mixed with it.

The graph is built in memory from a `PackedModel`: the int8 tensors graphmem's wheel ships
(`packing`), or the same tensors packed at load from the published float32 weights.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from graphmem.embeddings import packing
from graphmem.embeddings.base import l2_normalise
from graphmem.embeddings.bert import Weights
from graphmem.embeddings.kernels import F32, add_layer_norm_
from graphmem.errors import EmbeddingError

_INSTALL_HINT = "pip install onnxruntime onnx"
_MASKED = np.float32(-1e4)  # added to attention scores of padding: exp() of it is 0 in float32
_CACHED_PREFIX = "minilm-int8-"
_UNUSED_DAYS = 30
_ZERO_POINT = 128  # activations are stored as uint8 around it: 1..255 for -127..127


class PackedModel:
    """The int8 engine's tensors (named as `packing.pack` names them) and the number of heads."""

    def __init__(self, tensors: Mapping[str, NDArray[np.generic]], heads: int) -> None:
        self.tensors = tensors
        self.heads = heads
        self.layers = sum(1 for name in tensors if name.endswith(".qkv.q"))
        missing = [name for name in packing.names(self.layers) if name not in tensors]
        if missing or not self.layers:
            raise KeyError(f"the packed model lacks {missing or 'every layer'}")

    @classmethod
    def from_weights(cls, weights: Weights) -> PackedModel:
        """Quantised now from float32 weights, as the wheel's build quantises them."""
        embeddings = {
            "word": weights.word, "position": weights.position,
            "ln_g": weights.ln_g, "ln_b": weights.ln_b,
        }  # fmt: skip
        layers = [
            {f.name: getattr(layer, f.name) for f in fields(layer)} for layer in weights.layers
        ]
        return cls(packing.pack(embeddings, layers), weights.heads)

    def f32(self, name: str) -> F32:
        return cast(F32, self.tensors[name])

    @property
    def dim(self) -> int:
        return int(self.tensors["word"].shape[1])


def exact_signed_products() -> bool:
    """Whether ONNX Runtime multiplies uint8 activations by int8 weights exactly on this CPU.

    It does on ARM and with VNNI (x86). Without VNNI, its x86 kernels add pairs of products in
    16 bits, which saturate: measured here on an AVX2 machine, vectors at cosine 0.9964 of
    float32 instead of 0.9974, and not those of a VNNI machine, so one store's vectors would
    depend on the CPU that embedded them. Unsigned weights (around 128) take kernels that widen
    first: the same integers, so the same vectors, at ~3/4 of the speed.
    """
    if platform.machine().lower() in ("arm64", "aarch64"):
        return True
    try:
        flags = set(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").split())
    except OSError:
        return False  # not Linux: the exact form, whatever the CPU
    return bool(flags & {"avx512_vnni", "avx_vnni"})


class _Graph:
    """Collects ONNX nodes and initialisers; each node is named after its first output."""

    def __init__(self, signed_weights: bool) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self._helper, self._numpy = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self.const("zero_point", np.array(_ZERO_POINT, np.uint8))
        self.const("unit", np.array(1.0, np.float32))
        self.const("per_step", np.array(1 / 127, np.float32))
        self.const("tiny", np.array(1e-12, np.float32))
        self.const("column", np.array([1], np.int64))
        self._zero_points = helper.make_tensor("z", TensorProto.UINT8, [1], [_ZERO_POINT])
        self._signed = signed_weights

    def const(self, name: str, value: NDArray[Any] | np.generic) -> str:
        self.inits.append(self._numpy.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, *inputs: str, outputs: int = 1, **attrs: Any) -> Any:
        names = [f"n{len(self.nodes)}_{i}" for i in range(outputs)]
        self.nodes.append(self._helper.make_node(kind, list(inputs), names, name=names[0], **attrs))
        return names[0] if outputs == 1 else names

    def dense(self, rows: str, name: str, model: PackedModel) -> str:
        """rows @ w + bias, in integers: weights per column, each row of activations by its peak.

        A scale per row (not one per batch, as ONNX's dynamic quantisation has it) keeps a
        text's vector the same whatever else is in its batch, and closer to float32.
        """
        q, scale, bias = (model.tensors[f"{name}.{part}"] for part in ("q", "scale", "bias"))
        peak = self.op("ReduceMax", self.op("Abs", rows), axes=[1], keepdims=0)
        row_scale = self.op("Max", self.op("Mul", peak, "per_step"), "tiny")
        zero = self.op("ConstantOfShape", self.op("Shape", row_scale), value=self._zero_points)
        rows_q = self.op("QuantizeLinear", rows, row_scale, zero, axis=0)
        weights = q if self._signed else (q.astype(np.int16) + _ZERO_POINT).astype(np.uint8)
        q_name, scale_name = self.const(f"{name}.q", weights), self.const(f"{name}.scale", scale)
        zero_points = ["zero_point"] * (1 if self._signed else 2)  # activations', weights'
        product = self.op(  # integer product, times the column scales, as float
            "MatMulIntegerToFloat", rows_q, q_name, "unit", scale_name, *zero_points,
            domain="com.microsoft",
        )  # fmt: skip
        scaled = self.op("Mul", product, self.op("Unsqueeze", row_scale, "column"))
        return str(self.op("Add", scaled, self.const(f"{name}.bias", bias)))

    def layer_norm(self, x: str, name: str, model: PackedModel) -> str:
        g = self.const(f"{name}.g", model.tensors[f"{name}.g"])
        b = self.const(f"{name}.b", model.tensors[f"{name}.b"])
        return str(self.op("LayerNormalization", x, g, b, axis=-1, epsilon=1e-12))


def build_model(model: PackedModel, signed_weights: bool | None = None) -> bytes:
    """The int8 encoder as a serialised ONNX model.

    `signed_weights` picks the form of the weights (see `exact_signed_products`, the default):
    both compute the same integer products where the CPU multiplies signed weights exactly.

    Inputs: `x` (batch * tokens, dim), the embedded tokens of a padded batch, row by row, and
    `mask` (batch, 1, 1, tokens), 0 for tokens and a large negative number for padding. Output:
    `hidden` (batch * tokens, dim), before pooling. The embedding lookup stays in numpy: it is
    cheap there, and its table is most of the weights, which would otherwise be copied in.
    """
    try:
        from onnx import TensorProto, helper
    except ImportError:
        raise EmbeddingError(
            f"the int8 local model needs the onnx package: run `{_INSTALL_HINT}`", provider="local"
        ) from None

    g = _Graph(exact_signed_products() if signed_weights is None else signed_weights)
    dim, heads = model.dim, model.heads
    split = g.const("split", np.array([dim, dim, dim], np.int64))
    rows_shape = g.const("rows_shape", np.array([-1, dim], np.int64))
    half, root_half = g.const("half", np.float32(0.5)), g.const("root_half", np.float32(0.5**0.5))
    tokens = g.op("Slice", g.op("Shape", "mask"), g.const("three", np.array([3], np.int64)),
                  g.const("four", np.array([4], np.int64)))  # fmt: skip
    head_dims = g.const("head_dims", np.array([heads, dim // heads], np.int64))
    by_head = g.op("Concat", g.const("any", np.array([-1], np.int64)), tokens, head_dims, axis=0)

    x = "x"
    for i in range(model.layers):
        qkv = g.dense(x, f"l{i}.qkv", model)
        q, k, v = (
            g.op("Reshape", t, by_head) for t in g.op("Split", qkv, split, outputs=3, axis=-1)
        )  # (batch, tokens, heads, head_dim)
        q = g.op("Transpose", q, perm=[0, 2, 1, 3])
        k = g.op("Transpose", k, perm=[0, 2, 3, 1])
        v = g.op("Transpose", v, perm=[0, 2, 1, 3])
        attn = g.op("Softmax", g.op("Add", g.op("MatMul", q, k), "mask"), axis=-1)
        ctx = g.op("Transpose", g.op("MatMul", attn, v), perm=[0, 2, 1, 3])
        out = g.dense(g.op("Reshape", ctx, rows_shape), f"l{i}.out", model)
        x = g.layer_norm(g.op("Add", out, x), f"l{i}.ln1", model)
        h = g.dense(x, f"l{i}.in", model)
        erf = g.op("Erf", g.op("Mul", h, root_half))
        h = g.op("Mul", g.op("Mul", h, half), g.op("Add", erf, "unit"))  # exact GELU
        h = g.dense(h, f"l{i}.ffn", model)
        x = g.layer_norm(g.op("Add", h, x), f"l{i}.ln2", model)
    g.nodes.append(helper.make_node("Identity", [x], ["hidden"], name="hidden"))
    graph = helper.make_graph(
        g.nodes,
        "minilm_int8",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", dim]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 1, 1, "tokens"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["rows", dim])],
        g.inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8  # every onnxruntime that supports opset 17 reads it
    data: bytes = model.SerializeToString()
    return data


def cached_model(model: PackedModel, source: Path, folder: Path) -> bytes:
    """`build_model(model)`, kept in `folder` for the next process.

    Building means importing `onnx` and copying ~10M weights: ~0.1 s of every cold start.
    The file is named after the weights file (path, size, modification time), this module's
    source and the form of the weights, so another model or another graph builds again; files
    of other versions unused for 30 days are removed. A folder that cannot be written costs
    only the rebuild.
    """
    stat = source.stat()
    key = hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8)
    key.update(f"{source.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    key.update(b"signed" if exact_signed_products() else b"unsigned")
    path = folder / f"{_CACHED_PREFIX}{key.hexdigest()}.onnx"
    with contextlib.suppress(OSError):
        data = path.read_bytes()
        os.utime(path)  # in use: see the pruning below
        return data
    data = build_model(model)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob(f"{_CACHED_PREFIX}*.onnx"):  # other versions, long unused
            if time.time() - old.stat().st_mtime > _UNUSED_DAYS * 86400:
                old.unlink()
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, path)  # readers see the whole file or none
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return data


class Int8Encoder:
    """An ONNX Runtime session over `build_model(model)`; call it from several threads at once."""

    def __init__(
        self, model: PackedModel, source: Path | None = None, cache_dir: Path | None = None
    ) -> None:
        """With `cache_dir`, the model built from `source` (the weights' file) is kept there."""
        try:
            import onnxruntime as ort
        except ImportError:
            raise EmbeddingError(
                f"the int8 local model needs ONNX Runtime: run `{_INSTALL_HINT}`",
                provider="local",
            ) from None
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no notes about unused constants
        # One thread per call: callers run slices of a batch at once (`parallel`), which beat
        # ONNX Runtime's own pool here (~455 against ~420 texts/s), and a pool's idle threads
        # spin after each call, taking the cores from the store work between embeddings.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._model = model
        self._session = ort.InferenceSession(
            build_model(model)
            if source is None or cache_dir is None
            else cached_model(model, source, cache_dir),
            options,
            providers=["CPUExecutionProvider"],
        )

    def encode(self, ids: Sequence[Sequence[int]]) -> F32:
        """Token ids of texts (similar lengths, padded here) -> mean-pooled, normalised vectors."""
        lengths = np.fromiter((len(t) for t in ids), dtype=np.int64, count=len(ids))
        width = int(lengths.max())
        real = np.arange(width) < lengths[:, None]
        m = self._model
        tokens = np.fromiter((i for t in ids for i in t), dtype=np.int64, count=int(real.sum()))
        x = np.zeros((len(ids) * width, m.dim), dtype=np.float32)
        word, position = m.f32("word"), m.f32("position")
        x[real.ravel()] = add_layer_norm_(
            word[tokens] + position[np.nonzero(real)[1]], None, None, m.f32("ln.g"), m.f32("ln.b")
        )
        mask = np.where(real, np.float32(0), _MASKED)[:, None, None, :]
        hidden: F32 = self._session.run(["hidden"], {"x": x, "mask": mask})[0]
        hidden = hidden.reshape(len(ids), width, m.dim)
        pooled = np.einsum("btd,bt->bd", hidden, real.astype(np.float32))
        pooled /= lengths[:, None].astype(np.float32)
        return l2_normalise(pooled)
