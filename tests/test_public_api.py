"""The public API other tools call: every exported name resolves, and nothing else is promised."""

from __future__ import annotations

import subprocess
import sys

import graphmem


def test_every_exported_name_resolves_to_what_its_module_defines() -> None:
    assert sorted(graphmem.__all__) == sorted(graphmem._EXPORTS)
    for name in graphmem.__all__:
        assert getattr(graphmem, name) is not None, name


def test_importing_the_cli_does_not_load_the_database_or_the_model() -> None:
    code = "import sys, graphmem.cli.app; print(sorted(m for m in ('kuzu', 'numpy', 'pyarrow') if m in sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"
