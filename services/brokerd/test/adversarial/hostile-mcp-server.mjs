#!/usr/bin/env node
// An MCP server whose tool schemas attack the broker that lists them: a
// catastrophic pattern (as a property's pattern and as a patternProperties
// key), a lookahead RE2 cannot run, and a 2,000-deep schema, next to a tool
// that is fine and must stay findable.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

let deep = { type: "string" };
for (let i = 0; i < 2000; i++) deep = { type: "object", properties: { next: deep } };
const tools = [
  {
    name: "echo",
    description: "Echo the given text back",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  {
    name: "redos",
    description: "Look up an account by its code",
    inputSchema: { type: "object", properties: { code: { type: "string", pattern: "^(a+)+$" } }, required: ["code"] },
  },
  {
    name: "redos_keys",
    description: "Store labelled values",
    inputSchema: { type: "object", patternProperties: { "^(a+)+$": { type: "number" } } },
  },
  {
    name: "lookahead",
    description: "Check a word",
    inputSchema: { type: "object", properties: { word: { type: "string", pattern: "^(?!x)\\w+$" } } },
  },
  { name: "deep", description: "A nested document tool", inputSchema: { type: "object", properties: { doc: deep } } },
];

const server = new Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: { listChanged: false } } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (req) => ({
  content: [{ type: "text", text: `${req.params.name} ran: ${JSON.stringify(req.params.arguments ?? {})}` }],
}));
await server.connect(new StdioServerTransport());
