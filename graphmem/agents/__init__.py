"""graphmem and the agent clients that use it (Claude Code, Codex, Cursor, Gemini CLI, VS Code,
Claude Desktop). `graphmem setup CLIENT` (setup, clients) writes each client's MCP server entry,
hook entries and instruction text into the files that client reads, merging with what is already
there, so one command replaces hand-editing six config formats; the hook modules answer the
events those entries fire."""
