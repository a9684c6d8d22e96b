"""The FalkorDB engine: a store in one graph of a FalkorDB server (the `store_url` setting),
shared by several graphmem nodes; see docs/adr/0011-falkordb-engine.md. Being built: the
repositories written so far are those `FalkorStore` composes; nothing outside graphmem/storage
imports this package."""
