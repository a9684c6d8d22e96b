from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from graphmem.embeddings.local import published_model_dir
from graphmem.embeddings.weights_file import map_tensors


def _write_raw(path: Path, header: dict[str, object], data: bytes) -> Path:
    encoded = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    return path


def test_mapped_tensors_equal_what_safetensors_reads(tmp_path: Path) -> None:
    tensors = {
        "w": np.arange(12, dtype=np.float32).reshape(3, 4),
        "ids": np.array([[1, 2, 3]], dtype=np.int64),
        "half": np.linspace(0, 1, 5).astype(np.float16),
    }
    path = tmp_path / "t.safetensors"
    save_file(tensors, str(path), metadata={"format": "np"})
    mapped = map_tensors(path)
    assert set(mapped) == set(tensors)
    for name, array in tensors.items():
        assert mapped[name].dtype == array.dtype
        assert np.array_equal(mapped[name], array)


def test_mapped_tensors_are_read_only(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    save_file({"w": np.ones(4, np.float32)}, str(path))
    with pytest.raises(ValueError, match="read-only"):
        map_tensors(path)["w"][0] = 2.0


@pytest.mark.model
def test_the_published_model_maps_to_the_same_weights_as_safetensors_reads() -> None:
    path = published_model_dir() / "model.safetensors"
    mapped, read = map_tensors(path), load_file(str(path))
    assert set(mapped) == set(read)
    assert all(np.array_equal(mapped[k], read[k]) for k in read)


def test_a_tensor_of_a_dtype_numpy_lacks_is_left_out(tmp_path: Path) -> None:
    header = {
        "b": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 4]},
        "f": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    }
    path = _write_raw(tmp_path / "t.safetensors", header, b"\0" * 4 + struct.pack("<f", 1.5))
    assert list(map_tensors(path)) == ["f"]
    assert map_tensors(path)["f"][0] == 1.5


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, "outside"),
        ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, b"\0" * 16, "outside"),
        ({"w": {"dtype": "F32", "shape": "x", "data_offsets": [0, 4]}}, b"\0" * 4, "wrongly"),
        ([1, 2], b"", "unreadable header"),
    ],
)
def test_a_damaged_file_raises_value_error(
    tmp_path: Path, header: dict[str, object], data: bytes, message: str
) -> None:
    path = _write_raw(tmp_path / "t.safetensors", header, data)
    with pytest.raises(ValueError, match=message):
        map_tensors(path)


def test_a_truncated_header_raises_value_error(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    path.write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(ValueError, match="header longer"):
        map_tensors(path)
    path.write_bytes(b"\1\2")
    with pytest.raises(ValueError, match="too short"):
        map_tensors(path)
