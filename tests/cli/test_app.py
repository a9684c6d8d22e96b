from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer.main

from graphmem.cli import app as cli


def _commands(app: typer.Typer) -> dict[str, str | None]:
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    return {
        name: getattr(command.callback, "__module__", None)
        for name, command in group.commands.items()
    }


def test_the_command_map_names_every_command_and_its_module() -> None:
    found = _commands(cli.build())
    top = {name: module for name, module in found.items() if module is not None}
    assert {name: f"graphmem.cli.{module}" for name, module in cli.COMMANDS.items()} == top
    assert set(found) - set(top) == {
        "db", "daemon", "canonical", "repo", "session", "steward", "sediment", "glossary",
    }  # fmt: skip


def test_a_named_command_builds_only_its_module_and_stays_a_group() -> None:
    commands = _commands(cli.build("recall"))
    assert "recall" in commands and "store" in commands
    assert "timeline" not in commands and "db" not in commands
    assert set(_commands(cli.build("db"))) == {"db"}


def test_a_command_line_runs_its_command_without_importing_the_others() -> None:
    code = (
        "import sys; from graphmem.cli import app; app.run(['db', '--help'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('graphmem.cli.')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "migrate" in done.stdout
    loaded = done.stdout.strip().splitlines()[-1]
    assert "graphmem.cli.admin" in loaded
    assert "graphmem.cli.knowledge" not in loaded and "graphmem.cli.graph" not in loaded


def _main(prelude: str, *argv: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nfrom graphmem.cli import app\nsys.argv = ['graphmem', *{argv!r}]\napp.main()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_leaving_early_still_runs_exit_handlers_and_flushes_all_output() -> None:
    done = _main(
        "import atexit; atexit.register(lambda: print('handler ran', file=sys.stderr))", "--help"
    )
    assert done.returncode == 0
    assert "handler ran" in done.stderr
    assert "recall" in done.stdout and "reembed" in done.stdout


def test_a_thread_still_at_work_is_waited_for_and_the_exit_code_kept(tmp_path: Path) -> None:
    prelude = (
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.5), print('thread done')), daemon=False).start()"
    )
    done = _main(prelude, "get", "NO-SUCH-ID", "--home", str(tmp_path / "store"))
    assert done.returncode == 3
    assert "thread done" in done.stdout
