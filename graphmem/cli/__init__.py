"""The `graphmem` command line: thin wrappers over GraphMemory, text or --json output."""
