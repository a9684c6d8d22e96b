"""The MCP transport: graphmem's GraphMemory exposed as MCP tools over stdio or streamable HTTP.

This package is the only part of graphmem that imports the `mcp` SDK; everything else reaches it
lazily (the CLI imports `graphmem.mcp.server` only inside `graphmem serve`). Each tool parses its
arguments, calls one GraphMemory method and returns that method's pydantic model as structured
output; graphmem errors become MCP tool errors (`isError: true`) in one place.
"""
