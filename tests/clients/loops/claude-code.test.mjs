// Claude Code (@anthropic-ai/claude-code) runs its own agent loop, `claude
// -p`, against the real server, with the scripted model behind
// ANTHROPIC_BASE_URL (the Messages API, streamed). Its MCP tools are deferred
// behind ToolSearch: the model selects get_user_request first.

import { readFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, agentLoop, runTo, serverBin } from "./harness.mjs";

agentLoop({
  name: "Claude Code",
  connect: "claude-code",
  known: { name: "Claude Code", version: "2.1.330" },
  images: "tool-result",
  async configure({ model, home }) {
    // User scope, through Claude Code's own `claude mcp add-json`.
    await runTo(serverBin, ["connect", "claude-code"], { env: home.env, cwd: home.project });
    const entry = JSON.parse(readFileSync(join(home.dir, ".claude.json"), "utf8")).mcpServers["local-mcp"];
    return {
      cmd: "claude",
      args: ["-p", PROMPT, "--allowedTools", "mcp__local-mcp__get_user_request"],
      env: { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "scripted-model" },
      timeout: entry.timeout / 1000,
    };
  },
});
