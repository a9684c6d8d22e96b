// Drives a graphmem MCP server with the official TypeScript SDK client, as Claude Code, VS Code
// and most agent hosts do: the client checks every tool result's structured content against the
// tool's output schema (Ajv with ajv-formats) and rejects the result when it does not match.
//
//   node driver.mjs stdio COMMAND [ARGS...]   spawns the server (environment passed on)
//   node driver.mjs http URL                  streamable HTTP; GRAPHMEM_HTTP_TOKEN as bearer token
//
// It prints one JSON line when connected ({"tools": [...names]}), then answers each JSON line
// read on stdin, {"tool": NAME, "arguments": {...}}, with one JSON line:
//   {"accepted": true, "isError": bool, "structuredContent": ..., "text": "..."}
//   {"accepted": false, "error": "..."}   the client threw (a schema mismatch, a protocol error)
// A line {"selfcheck": true} answers whether this client rejects a date-time without an offset;
// {"validate": SCHEMA, "value": VALUE} answers {"valid": bool} as the client's validator sees it.
import readline from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";

const [mode, ...rest] = process.argv.slice(2);
const write = (value) => process.stdout.write(JSON.stringify(value) + "\n");

function transportFor() {
  if (mode === "stdio") {
    return new StdioClientTransport({
      command: rest[0],
      args: rest.slice(1),
      env: { ...process.env },
      stderr: "inherit",
    });
  }
  if (mode === "http") {
    const token = process.env.GRAPHMEM_HTTP_TOKEN;
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    return new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
  }
  throw new Error(`mode must be stdio or http, not ${mode}`);
}

function selfcheck() {
  const schema = {
    type: "object",
    properties: { at: { type: "string", format: "date-time" } },
  };
  const check = new AjvJsonSchemaValidator().getValidator(schema);
  return {
    naive_rejected: !check({ at: "2026-12-01T12:56:40.644918" }).valid,
    utc_accepted: check({ at: "2026-12-01T12:56:40.644918Z" }).valid,
  };
}

const client = new Client({ name: "graphmem-ts-conformance", version: "1.0.0" });
await client.connect(transportFor());
const { tools } = await client.listTools(); // also caches the output-schema validators
write({ tools: tools.map((tool) => tool.name) });

const lines = readline.createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  if (request.selfcheck) {
    write(selfcheck());
    continue;
  }
  if (request.validate) {
    write({ valid: new AjvJsonSchemaValidator().getValidator(request.validate)(request.value).valid });
    continue;
  }
  try {
    const result = await client.callTool({ name: request.tool, arguments: request.arguments });
    write({
      accepted: true,
      isError: Boolean(result.isError),
      structuredContent: result.structuredContent ?? null,
      text: (result.content ?? []).map((block) => block.text ?? "").join(" "),
    });
  } catch (error) {
    write({ accepted: false, error: String(error?.message ?? error) });
  }
}
await client.close();
