// Claude Code (@anthropic-ai/claude-code) as a new user meets local-mcp:
// paste what `local-mcp-server config claude-code` prints, then Claude Code's
// own health check (`claude mcp list`) must report the server connected —
// over HTTP in both MCP modes, and through the stdio bridge.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { MODES, serverBin, startServer } from "./harness.mjs";

const run = promisify(execFile);

for (const mode of MODES) {
  describe(`claude code — ${mode}`, () => {
    let server;
    let env;
    before(async () => {
      server = await startServer({ mode });
      // A fresh home: Claude Code writes its config there, not in the user's.
      const home = mkdtempSync(join(tmpdir(), "claude-home-"));
      env = { ...process.env, HOME: home, LOCAL_MCP_CONNECTION_FILE: server.connectionFile, DISABLE_AUTOUPDATER: "1" };
    });
    after(() => server?.stop());

    test("the pasted `config claude-code` command connects", async () => {
      const { stdout: command } = await run(serverBin, ["config", "claude-code"], { env });
      assert.equal(command.trim(), `claude mcp add --transport http local-mcp ${server.mcpUrl}`);
      await run("bash", ["-c", command], { env, cwd: env.HOME, timeout: 60_000 });
      const { stdout } = await run("claude", ["mcp", "list"], { env, cwd: env.HOME, timeout: 90_000 });
      assert.match(stdout, new RegExp(`local-mcp: ${server.mcpUrl} \\(HTTP\\) - ✔ Connected`), stdout);
    });

    test("the stdio bridge connects, finding the server by itself", async () => {
      await run("claude", ["mcp", "add", "local-mcp-stdio", "--", serverBin, "stdio"], { env, cwd: env.HOME, timeout: 60_000 });
      const { stdout } = await run("claude", ["mcp", "list"], { env, cwd: env.HOME, timeout: 90_000 });
      assert.match(stdout, /local-mcp-stdio: .* stdio - ✔ Connected/, stdout);
    });
  });
}
