// The real local-mcp-server binary on a free port with a temporary database,
// for the JavaScript test suites (tests/ui, tests/clients). Node built-ins
// only, so any suite can import it. Nothing is mocked.

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { after } from "node:test";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export const serverBin =
  process.env.LOCAL_MCP_SERVER_BIN ?? join(process.env.CARGO_TARGET_DIR ?? join(root, "target"), "debug", "local-mcp-server");

// Every server a test file started and has not stopped. A test that fails
// before its own `stop()` would otherwise leave the child (and its stderr
// pipe) holding the test process open until CI's time limit, turning one
// failed assertion into a timed-out run.
const live = new Set();
after(async () => {
  await Promise.all([...live].map((child) => stopChild(child)));
});

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/**
 * Start a server and resolve once it prints its ready line. `mode` is
 * "stateless" (the default) or "sessions"; `dir` and `port` let a test
 * restart on the same database and address; `env` adds variables (e.g. API_TOKEN).
 */
export async function startServer({ dir = mkdtempSync(join(tmpdir(), "local-mcp-test-")), port = 0, mode = "stateless", waitSeconds = 2, env = {} } = {}) {
  const fullEnv = {
    ...process.env,
    // A home of its own: the Connect panel edits clients' files under HOME,
    // and a test must never touch the real ones.
    HOME: join(dir, "home"),
    XDG_CONFIG_HOME: join(dir, "home", ".config"),
    DB_PATH: join(dir, "queue.sqlite3"),
    LOCAL_MCP_CONNECTION_FILE: join(dir, "connection.json"),
    LOCAL_MCP_TOKEN_FILE: join(dir, "token"),
    LOCAL_MCP_LOG_DIR: join(dir, "logs"),
    HTTP_PORT: String(port),
    DEFAULT_WAIT_SECONDS: String(waitSeconds),
    MCP_STATELESS: mode === "stateless" ? "true" : "false",
    LOG_LEVEL: "warn",
    ...env,
  };
  mkdirSync(fullEnv.HOME, { recursive: true });
  const child = spawn(serverBin, [], { env: fullEnv, stdio: ["ignore", "ignore", "pipe"] });
  live.add(child);
  child.once("exit", () => live.delete(child));
  const log = [];
  const url = await new Promise((ok, fail) => {
    createInterface({ input: child.stderr }).on("line", (line) => {
      log.push(line);
      const m = /^local-mcp-server ready: (\S+)/.exec(line);
      if (m) ok(m[1]);
    });
    child.on("exit", (code) => fail(new Error(`server exited (${code}) before it was ready:\n${log.join("\n")}`)));
    // A binary that is not there never exits: it fails to spawn.
    child.on("error", (e) => fail(new Error(`cannot run ${serverBin}: ${e.message} (build it first: cargo build, with the same CARGO_TARGET_DIR)`)));
  });
  const server = {
    url,
    home: fullEnv.HOME,
    mcpUrl: `${url}/mcp`,
    dir,
    port: Number(new URL(url).port),
    mode,
    child,
    log,
    connectionFile: fullEnv.LOCAL_MCP_CONNECTION_FILE,
    /** Sent as the bearer token when set (tests change it as the server's token changes). */
    token: fullEnv.API_TOKEN,
    async stop() {
      await stopChild(child);
    },
    async api(method, path, body) {
      const headers = { "content-type": "application/json" };
      if (server.token) headers.authorization = `Bearer ${server.token}`;
      const res = await fetch(url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async add(content) {
      const r = await server.api("POST", "/api/instructions", { content });
      if (r.status !== 201) throw new Error(`add failed: ${r.status}`);
      return r.body.item;
    },
    /** Queue `content` with files ({ name, bytes, type }) as a multipart form. */
    async addWithFiles(content, files) {
      const form = new FormData();
      form.append("content", content);
      for (const f of files) form.append("files", new Blob([f.bytes], { type: f.type }), f.name);
      const headers = server.token ? { authorization: `Bearer ${server.token}` } : {};
      const res = await fetch(url + "/api/instructions", { method: "POST", headers, body: form });
      const body = await res.json();
      if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(body)}`);
      return body.item;
    },
    async pending() {
      return (await server.api("GET", "/api/instructions?status=pending")).body.items;
    },
    async agent(id, queue = null) {
      return (await server.api("GET", "/api/status")).body.agents.find((a) => a.agent_id === id && (!queue || a.queue === queue));
    },
    /** One raw MCP `tools/call get_user_request` over streamable HTTP (stateless), as an agent of `queue`. */
    async consume(agent = "test-agent", queue = null, extra = {}) {
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      if (server.token) headers.authorization = `Bearer ${server.token}`;
      const res = await fetch(queue ? `${server.mcpUrl}/q/${queue}` : server.mcpUrl, {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: agent, ...extra } } }),
      });
      const text = await res.text();
      const line = text.split("\n").reverse().find((l) => l.startsWith("data:") && l.includes('"result"'));
      return JSON.parse(JSON.parse(line.slice(5)).result.content[0].text);
    },
  };
  return server;
}

/**
 * Poll `check()` until it is truthy, for at most `timeout` ms. The default is
 * generous: it bounds a wait for something to happen, not how fast it happens
 * (on a busy 2-core machine a page update can take seconds; speed is the bench's).
 */
export async function until(check, { timeout = 15000, what = "condition" } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
