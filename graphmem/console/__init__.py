"""The console: the store in a browser (search, memories, multi-hop, inbox, documents, stats)."""

from graphmem.console.app import PREFIX, build_console, console_mount

__all__ = ["PREFIX", "build_console", "console_mount"]
