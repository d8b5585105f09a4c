// opencode (opencode-ai, installed by scripts/test-all.sh) runs its own agent
// loop, `opencode run`, against the real server, with the scripted model as
// an OpenAI-compatible provider in opencode.json (chat completions, SSE).
// The model is declared to take images (`modalities`): without it opencode
// replaces an image with "ERROR: Cannot read image (this model does not
// support image input)" (anomalyco/opencode#25229). A tool message cannot
// carry an image in chat completions, so opencode sends it in a user message
// after the tool result ("Attached media from tool result:").

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, agentLoop, timeoutLoop, runTo, serverBin } from "./harness.mjs";

const client = {
  name: "opencode",
  connect: "opencode",
  known: { name: "opencode", version: "1.18.33" },
  timeoutText: /^MCP error -32001: Request timed out$/,
  // Known bug (local-mcp): after its timeout this client sends notifications/cancelled but keeps
  // the response stream open; the server ignores the cancel, its call waits on and takes the next
  // instruction (delivery "sent", then "confirmed"), which the model never gets.
  images: "beside",
  async configure({ model, home }, { callTimeout } = {}) {
    const dir = join(home.dir, ".config", "opencode");
    mkdirSync(dir, { recursive: true });
    const provider = {
      npm: "@ai-sdk/openai-compatible",
      name: "scripted model",
      options: { baseURL: `${model.url}/v1`, apiKey: "scripted-model" },
      models: { scripted: { name: "scripted", attachment: true, modalities: { input: ["text", "image"], output: ["text"] } } },
    };
    writeFileSync(join(dir, "opencode.json"), JSON.stringify({ provider: { scripted: provider }, model: "scripted/scripted", small_model: "scripted/scripted", autoupdate: false, share: "disabled" }, null, 2));
    await runTo(serverBin, ["connect", "opencode"], { env: home.env, cwd: home.project });
    if (callTimeout) {
      const file = join(dir, "opencode.json");
      const written = JSON.parse(readFileSync(file, "utf8"));
      written.mcp["local-mcp"].timeout = callTimeout * 1000;
      writeFileSync(file, JSON.stringify(written, null, 2));
    }
    return {
      cmd: "opencode",
      args: ["run", PROMPT],
      env: { OPENCODE_DISABLE_MODELS_FETCH: "1", OPENCODE_DISABLE_AUTOUPDATE: "1" },
      // connect writes no call timeout for opencode (its `timeout` is the tool-list fetch).
    };
  },
};

agentLoop(client);
timeoutLoop(client);
