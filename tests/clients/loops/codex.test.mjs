// Codex (@openai/codex) runs its own agent loop, `codex exec`, against the
// real server, with the scripted model as a custom model provider in
// config.toml (`wire_api = "responses"`: the Responses API, streamed; 0.169.0
// refuses "chat"). MCP tools come to the model in a namespace,
// `mcp__local_mcp`, and their results as function_call_output items.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, agentLoop, timeoutLoop, runTo, serverBin } from "./harness.mjs";

const client = {
  name: "Codex",
  connect: "codex",
  known: { name: "Codex", version: "0.169.0" },
  timeoutText: /tool call failed for `local-mcp\/get_user_request`\n\nCaused by:\n\s+timed out awaiting tools\/call after 3s/,
  images: "tool-result",
  async configure({ model, home }, { callTimeout } = {}) {
    // The person's own settings first; connect adds its table and keeps them.
    mkdirSync(join(home.dir, ".codex"));
    const file = join(home.dir, ".codex", "config.toml");
    writeFileSync(
      file,
      [
        'model = "scripted"',
        'model_provider = "scripted"',
        "",
        "[model_providers.scripted]",
        'name = "scripted model"',
        `base_url = "${model.url}/v1"`,
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "",
      ].join("\n"),
    );
    await runTo(serverBin, ["connect", "codex"], { env: home.env, cwd: home.project });
    const timeout = Number(/^tool_timeout_sec = (\d+)$/m.exec(readFileSync(file, "utf8"))?.[1]);
    if (callTimeout) writeFileSync(file, readFileSync(file, "utf8").replace(/^tool_timeout_sec = \d+$/m, `tool_timeout_sec = ${callTimeout}`));
    return {
      cmd: "codex",
      // No approvals and no sandbox: MCP calls run unattended.
      args: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", PROMPT],
      env: { SCRIPTED_API_KEY: "scripted-model" },
      timeout,
    };
  },
};

agentLoop(client);
timeoutLoop(client);
