"""Map a `.safetensors` file's tensors as read-only numpy arrays, without reading them; write one.

Reading the 90 MB MiniLM file took ~60 ms, a tenth of a cold `graphmem recall`. Mapped, the
operating system brings in only the pages a forward pass touches: every layer, but of the
30k-word embedding table only the rows of the words in use.

The format: an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
shape and byte range within the data that follows.

This module imports nothing but numpy: the wheel's build loads it by its path.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_MAX_HEADER = 100 * 1024 * 1024  # the format's own limit
_ALIGN = 8  # the header is padded so every tensor starts on a multiple of this


def read_metadata(path: Path) -> dict[str, str]:
    """The header's `__metadata__` (names to strings); empty when the file has none or is not
    a readable safetensors file."""
    try:
        with path.open("rb") as handle:
            (header_len,) = struct.unpack("<Q", handle.read(8))
            if header_len > _MAX_HEADER:
                return {}
            header = json.loads(handle.read(header_len))
    except (OSError, struct.error, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    found = header.get("__metadata__") if isinstance(header, dict) else None
    return dict(found) if isinstance(found, dict) else {}


def write_tensors(
    path: Path, tensors: Mapping[str, NDArray[np.generic]], metadata: Mapping[str, str]
) -> None:
    """Write `tensors` (little-endian, C order) and string `metadata` as a safetensors file.

    Written beside `path` and renamed over it, so a reader sees the whole file or none."""
    names = {np.dtype(v).str: k for k, v in _DTYPES.items()}
    header: dict[str, object] = {"__metadata__": dict(metadata)}
    arrays, offset = [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array)
        data = data.astype(data.dtype.newbyteorder("<"), copy=False)
        kind = names.get(data.dtype.str)
        if kind is None:
            raise ValueError(f"tensor {name!r} has a dtype safetensors cannot hold: {data.dtype}")
        header[name] = {"dtype": kind, "shape": list(data.shape),
                        "data_offsets": [offset, offset + data.nbytes]}  # fmt: skip
        arrays.append(data)
        offset += data.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % _ALIGN)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as out:
            out.write(struct.pack("<Q", len(text)))
            out.write(text)
            for data in arrays:
                out.write(data.tobytes())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def map_tensors(path: Path) -> dict[str, NDArray[np.generic]]:
    """Every tensor of a numpy-readable dtype (others are left out), as views of the mapped
    file; raises ValueError when the file is not a well-formed safetensors file."""
    with path.open("rb") as handle:
        size = path.stat().st_size
        if size < 8:
            raise ValueError(f"{path} is too short to be a safetensors file")
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > min(_MAX_HEADER, size - 8):
        raise ValueError(f"{path} has a header longer than the file")
    try:
        header = json.loads(data[8 : 8 + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} has an unreadable header: {exc}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path} has an unreadable header")
    base = 8 + header_len
    tensors: dict[str, NDArray[np.generic]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = np.dtype(_DTYPES[spec["dtype"]]) if spec["dtype"] in _DTYPES else None
            shape = tuple(int(n) for n in spec["shape"])
            begin, end = (int(n) for n in spec["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: tensor {name!r} is described wrongly") from None
        if dtype is None:
            continue
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= size - base or end - begin != count * dtype.itemsize:
            raise ValueError(f"{path}: tensor {name!r} lies outside the file")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=base + begin)
        tensors[name] = array.reshape(shape)
    return tensors
