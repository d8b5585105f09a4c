// The official TypeScript SDK, v2 line (@modelcontextprotocol/client): it
// probes with server/discover first and falls back to initialize.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

import { clientContract, longWait, stopAndRestart } from "./contract.mjs";

async function open(server) {
  const client = new Client({ name: "ts-sdk-v2-test", version: "2.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl)));
  return {
    listTools: async () => (await client.listTools()).tools,
    call: (agent, options) => client.callTool({ name: "get_user_request", arguments: { agent_id: agent } }, options),
    close: () => client.close(),
  };
}

clientContract("ts-v2", open);
longWait("ts-v2", open);
stopAndRestart("ts-v2", open);
