"""The int8 model graphmem ships: packed when the wheel is built, the same as packed at load."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from test_int8 import SENTENCES, tiny_state_dict

from graphmem.embeddings import local, packing
from graphmem.embeddings.bert import Weights
from graphmem.embeddings.int8 import PackedModel
from graphmem.embeddings.local import MODEL_FOLDER, LocalEmbedder
from graphmem.embeddings.weights_file import map_tensors, read_metadata, write_tensors
from graphmem.errors import EmbeddingError


def test_packing_at_build_and_at_load_give_the_same_arrays() -> None:
    state = tiny_state_dict()
    built = packing.pack_bert(state, layers=2, heads=2)
    loaded = PackedModel.from_weights(Weights.from_bert(state, layers=2, heads=2)).tensors
    assert list(built) == list(loaded) == packing.names(2)
    for name in built:
        assert built[name].dtype == loaded[name].dtype, name
        assert np.array_equal(built[name], loaded[name]), name
    assert built["l0.qkv.q"].dtype == np.int8 and built["word"].dtype == np.float32


def test_written_tensors_map_back_equal_with_their_metadata(tmp_path: Path) -> None:
    tensors = {
        "q": np.array([[-127, 0, 5]], dtype=np.int8),
        "scale": np.linspace(0, 1, 7).astype(np.float32),
        "ids": np.arange(3, dtype=np.int64),
        "big_endian": np.arange(4, dtype=">f4"),
    }
    path = tmp_path / "m.safetensors"
    write_tensors(path, tensors, {"format": "x/1", "heads": "2"})
    mapped = map_tensors(path)
    for name, array in tensors.items():
        assert np.array_equal(mapped[name], array), name
    assert read_metadata(path) == {"format": "x/1", "heads": "2"}
    (header_len,) = struct.unpack("<Q", path.read_bytes()[:8])
    assert (8 + header_len) % 8 == 0  # every tensor aligned
    assert [p.name for p in tmp_path.iterdir()] == ["m.safetensors"]  # no temporary left


def test_the_metadata_of_a_file_that_is_not_safetensors_is_empty(tmp_path: Path) -> None:
    (tmp_path / "junk").write_bytes(b"\xff" * 40)
    assert read_metadata(tmp_path / "junk") == {}
    assert read_metadata(tmp_path / "absent") == {}


def _packed_folder(tmp_path: Path, tensors: dict[str, np.ndarray], fmt: str) -> Path:
    (tmp_path / "tokenizer.json").write_bytes((MODEL_FOLDER / "tokenizer.json").read_bytes())
    write_tensors(tmp_path / packing.FILE, tensors, {"format": fmt, "heads": "2"})
    return tmp_path


def test_a_packed_model_missing_a_tensor_says_to_reinstall(tmp_path: Path) -> None:
    tensors = packing.pack_bert(tiny_state_dict(), layers=2, heads=2)
    del tensors["l1.ffn.scale"]
    folder = _packed_folder(tmp_path, tensors, packing.FORMAT)
    with pytest.raises(EmbeddingError, match=r"l1\.ffn\.scale.*reinstall graphmem"):
        LocalEmbedder(folder, int8=True).load()


def test_a_packed_model_of_another_format_is_refused(tmp_path: Path) -> None:
    tensors = packing.pack_bert(tiny_state_dict(), layers=2, heads=2)
    folder = _packed_folder(tmp_path, tensors, "graphmem-minilm-int8/0")
    with pytest.raises(EmbeddingError, match="format"):
        LocalEmbedder(folder, int8=True).load()


def test_the_model_folder_carries_the_model_its_notice_and_the_apache_licence() -> None:
    assert {packing.FILE, "tokenizer.json", "NOTICE", "LICENSE"} <= {
        p.name for p in MODEL_FOLDER.iterdir()
    }
    assert "Apache License, Version 2.0" in (MODEL_FOLDER / "NOTICE").read_text()
    assert "Apache License" in (MODEL_FOLDER / "LICENSE").read_text()
    assert read_metadata(MODEL_FOLDER / packing.FILE)["format"] == packing.FORMAT


@pytest.mark.model
def test_the_shipped_model_embeds_exactly_as_the_published_weights_packed_at_load() -> None:
    shipped = LocalEmbedder(int8=True)
    assert shipped.model_dir == MODEL_FOLDER
    at_load = LocalEmbedder(local.published_model_dir(), int8=True)
    assert np.array_equal(shipped.embed(SENTENCES), at_load.embed(SENTENCES))
