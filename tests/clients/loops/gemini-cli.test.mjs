// Gemini CLI (@google/gemini-cli) runs its own agent loop, `gemini -p`,
// against the real server, with the scripted model behind
// GOOGLE_GEMINI_BASE_URL (streamGenerateContent, SSE). With that variable
// alone it picks the "gateway" auth type, which 0.61.0's headless mode
// refuses ("Invalid auth method selected."), so the settings choose the API
// key; the base URL still applies. Its router asks a classifier model first
// (a side request, answered by schema).

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, agentLoop, runTo, serverBin } from "./harness.mjs";

agentLoop({
  name: "Gemini CLI",
  connect: "gemini-cli",
  known: { name: "Gemini CLI", version: "0.61.0" },
  images: "beside",
  async configure({ model, home }) {
    const dir = join(home.dir, ".gemini");
    mkdirSync(dir);
    const file = join(dir, "settings.json");
    writeFileSync(file, JSON.stringify({ security: { auth: { selectedType: "gemini-api-key" } }, privacy: { usageStatisticsEnabled: false } }, null, 2));
    // User-level servers are hidden in folders the person has not trusted.
    writeFileSync(join(dir, "trustedFolders.json"), JSON.stringify({ [home.project]: "TRUST_FOLDER" }));
    await runTo(serverBin, ["connect", "gemini-cli"], { env: home.env, cwd: home.project });
    const entry = JSON.parse(readFileSync(file, "utf8")).mcpServers["local-mcp"];
    return {
      cmd: "gemini",
      args: ["-p", PROMPT, "--yolo"],
      env: { GOOGLE_GEMINI_BASE_URL: model.url, GEMINI_API_KEY: "scripted-model" },
      timeout: entry.timeout / 1000,
    };
  },
});
