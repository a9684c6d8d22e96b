"""The MCP transport: graphmem's GraphMemory exposed as MCP tools over stdio or streamable HTTP.

This package is the only part of graphmem that imports the `mcp` SDK; everything else reaches it
lazily (the CLI imports `graphmem.mcp.server` only inside `graphmem serve`). Each tool parses its
arguments, calls one GraphMemory method and returns that method's pydantic model as structured
output (the tools that return memories or hits send a compact form unless asked for `full`);
graphmem errors become MCP tool errors (`isError: true`) in one place. The tool mode decides which
tools `tools/list` offers: all of them, a few grouped ones, or the core three.
"""
