// The official TypeScript SDK, v1 line (@modelcontextprotocol/sdk).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { clientContract, longWait, stopAndRestart } from "./contract.mjs";

async function open(server) {
  const client = new Client({ name: "ts-sdk-v1-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.mcpUrl)));
  return {
    listTools: async () => (await client.listTools()).tools,
    call: (agent, options) => client.callTool({ name: "get_user_request", arguments: { agent_id: agent } }, undefined, options),
    close: () => client.close(),
  };
}

clientContract("ts-v1", open);
longWait("ts-v1", open);
stopAndRestart("ts-v1", open);
