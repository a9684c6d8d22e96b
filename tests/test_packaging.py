"""What the wheel installs: every package (found, not listed), the version, the model's packing.

The wheel itself is built and installed alone in a clean environment by `make install-check`
(tests/install_check.py), which CI runs.
"""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from typer.testing import CliRunner

import graphmem
from graphmem.cli.app import app, run

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def setup_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("graphmem_setup_script", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # setup() itself runs only as a script
    return module


def test_every_folder_of_python_code_is_a_package_the_wheel_installs(
    setup_script: ModuleType,
) -> None:
    installed = set(setup_script.packages())
    folders = {p.parent for p in (ROOT / "graphmem").rglob("*.py") if "__pycache__" not in p.parts}
    expected = {".".join(f.relative_to(ROOT).parts) for f in folders}
    expected |= {"graphmem.extractors", "graphmem.schema"}
    assert expected <= installed, f"left out of the wheel: {sorted(expected - installed)}"
    assert all(name.startswith("graphmem") for name in installed)  # nothing generic installed


def test_the_package_version_is_graphmems_own(capsys: pytest.CaptureFixture[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"]["attr"] == "graphmem.__version__"
    assert run(["--version"]) == 0
    assert capsys.readouterr().out == f"graphmem {graphmem.__version__}\n"


def test_the_help_lists_the_version_option() -> None:
    assert "--version" in CliRunner().invoke(app, ["--help"]).output


def test_the_build_packs_the_model_with_the_runtimes_own_packing(
    setup_script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder named by GRAPHMEM_MODEL_SOURCE is packed into the build; a second build finds
    the model there and leaves it."""
    from graphmem.embeddings import packing
    from graphmem.embeddings.local import published_model_dir
    from graphmem.embeddings.weights_file import map_tensors, read_metadata

    monkeypatch.setenv("GRAPHMEM_MODEL_SOURCE", str(published_model_dir()))
    target = tmp_path / "model"
    setup_script.pack_model(target)
    metadata = read_metadata(target / packing.FILE)
    assert metadata["format"] == packing.FORMAT and len(metadata["source_sha256"]) == 64
    assert "Apache License, Version 2.0" in (target / "NOTICE").read_text()
    expected = packing.pack_bert(map_tensors(published_model_dir() / "model.safetensors"))
    packed = map_tensors(target / packing.FILE)
    assert list(packed) == list(expected)
    assert all((packed[name] == expected[name]).all() for name in expected)

    written = (target / packing.FILE).stat().st_mtime_ns
    monkeypatch.setenv("GRAPHMEM_MODEL_SOURCE", str(tmp_path / "nowhere"))
    setup_script.pack_model(target)  # nothing to do: no source needed
    assert (target / packing.FILE).stat().st_mtime_ns == written
