// GitHub Copilot CLI (@github/copilot) runs its own agent loop, `copilot -p`,
// against the real server, with the scripted model as its "bring your own
// key" provider: COPILOT_PROVIDER_BASE_URL (type "openai", chat completions,
// SSE) and COPILOT_OFFLINE=true (no GitHub sign-in, no other network).
// Images in MCP tool results do not reach a BYOK model (github/copilot-cli#4600):
// the model gets the JSON, whose attachment path the agent can open itself.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, agentLoop, timeoutLoop, runTo, serverBin } from "./harness.mjs";

const client = {
  name: "GitHub Copilot CLI",
  connect: "copilot-cli",
  known: { name: "GitHub Copilot CLI", version: "1.0.102" },
  timeoutText: /^MCP server 'local-mcp': McpError: MCP error -32001: Request timed out$/,
  images: "dropped",
  async configure({ model, home }, { callTimeout } = {}) {
    await runTo(serverBin, ["connect", "copilot-cli"], { env: home.env, cwd: home.project });
    const file = join(home.dir, ".copilot", "mcp-config.json");
    const written = JSON.parse(readFileSync(file, "utf8"));
    const entry = written.mcpServers["local-mcp"];
    if (callTimeout) {
      entry.timeout = callTimeout * 1000;
      writeFileSync(file, JSON.stringify(written, null, 2));
    }
    return {
      cmd: "copilot",
      args: ["-p", PROMPT, "--allow-all-tools"],
      env: {
        COPILOT_OFFLINE: "true",
        COPILOT_PROVIDER_BASE_URL: `${model.url}/v1`,
        COPILOT_PROVIDER_API_KEY: "scripted-model",
        COPILOT_MODEL: "scripted",
        COPILOT_AUTO_UPDATE: "false",
      },
      timeout: entry.timeout / 1000,
    };
  },
};

agentLoop(client);
timeoutLoop(client);
