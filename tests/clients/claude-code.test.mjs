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

import { claudeCodeLimits } from "./claude-limits.mjs";
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

// A canary: Claude Code moves an MCP call that runs past a threshold into
// the background and may ignore its result (anthropics/claude-code#78566),
// and drops a remote call silent past its idle limit. Our wait for it must
// end before both — read from the installed package, so a new release that
// lowers either fails here, naming the new figure.
describe("claude code — its own limits", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 3600 });
  });
  after(() => server?.stop());

  test("a call from Claude Code ends before Claude Code stops listening", async () => {
    const pkg = join(import.meta.dirname, "node_modules", "@anthropic-ai", "claude-code");
    const limits = claudeCodeLimits(pkg);
    assert.ok(limits.autoBackgroundMs > 0 && limits.idleTimeoutRemoteMs > 0, JSON.stringify(limits));
    // Its first request, as Claude Code sends it: no initialize, the 2026-07-28 _meta.
    const meta = {
      "io.modelcontextprotocol/protocolVersion": "2026-07-28",
      "io.modelcontextprotocol/clientInfo": { name: "claude-code", title: "Claude Code", version: limits.version ?? "?" },
      "io.modelcontextprotocol/clientCapabilities": {},
      progressToken: "canary",
    };
    const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: "canary" }, _meta: meta } };
    const controller = new AbortController();
    const res = await fetch(server.mcpUrl, {
      method: "POST",
      signal: controller.signal,
      headers: {
        accept: "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "get_user_request",
        "user-agent": `claude-code/${limits.version} (sdk-cli)`,
      },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    // The first message of a waiting call says how long it will wait (progress 0 of N seconds).
    const reader = res.body.getReader();
    let text = "";
    let total = null;
    const deadline = Date.now() + 20_000;
    while (total === null && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
      const m = /"total":\s*(\d+(?:\.\d+)?)/.exec(text);
      if (m) total = Number(m[1]);
    }
    controller.abort();
    assert.ok(total !== null, `no progress with the wait's length within 20 s: ${text.slice(0, 300)}`);
    assert.ok(
      total * 1000 < limits.autoBackgroundMs,
      `Claude Code ${limits.version} moves MCP calls to the background after ${limits.autoBackgroundMs} ms, ` +
        `but local-mcp waits ${total} s for it: lower its limit in crates/serve/src/mcp/client_limits.rs`,
    );
    assert.ok(
      total * 1000 < limits.idleTimeoutRemoteMs,
      `Claude Code ${limits.version} drops a silent remote call after ${limits.idleTimeoutRemoteMs} ms, but local-mcp waits ${total} s`,
    );
  });
});
