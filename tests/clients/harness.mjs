// The real local-mcp-server binary on a free port with a temporary database,
// for the third-party client tests. Nothing is mocked.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const serverBin =
  process.env.LOCAL_MCP_SERVER_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug", "local-mcp-server");

export const MODES = ["stateless", "sessions"];

/** Start a server; `mode` is "stateless" (the default) or "sessions". */
export async function startServer({ mode = "stateless", waitSeconds = 2 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "local-mcp-clients-"));
  const env = {
    ...process.env,
    DB_PATH: join(dir, "queue.sqlite3"),
    HTTP_PORT: "0",
    DEFAULT_WAIT_SECONDS: String(waitSeconds),
    MCP_STATELESS: mode === "stateless" ? "true" : "false",
    LOCAL_MCP_CONNECTION_FILE: join(dir, "connection.json"),
    LOCAL_MCP_TOKEN_FILE: join(dir, "token"),
    LOG_LEVEL: "warn",
  };
  const proc = spawn(serverBin, [], { env, stdio: ["ignore", "ignore", "pipe"] });
  const log = [];
  const url = await new Promise((ok, fail) => {
    const lines = createInterface({ input: proc.stderr });
    lines.on("line", (line) => {
      log.push(line);
      const m = /^local-mcp-server ready: (\S+)/.exec(line);
      if (m) ok(m[1]);
    });
    proc.on("exit", (code) => fail(new Error(`server exited (${code}) before it was ready:\n${log.join("\n")}`)));
  });
  const api = async (method, path, body) => {
    const res = await fetch(url + path, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };
  return {
    url,
    mcpUrl: `${url}/mcp`,
    mode,
    connectionFile: env.LOCAL_MCP_CONNECTION_FILE,
    log,
    async add(content) {
      const r = await api("POST", "/api/instructions", { content });
      if (r.status !== 201) throw new Error(`add failed: ${r.status}`);
      return r.body.item;
    },
    async pending() {
      return (await api("GET", "/api/instructions?status=pending")).body.items;
    },
    async agent(id) {
      return (await api("GET", "/api/status")).body.agents.find((a) => a.agent_id === id);
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill("SIGTERM");
        await new Promise((ok) => proc.once("exit", ok));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Poll until `check()` is truthy. */
export async function until(check, { what, timeout = 5000 } = {}) {
  const deadline = Date.now() + timeout;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for: ${what}`);
}
