// Shared helpers for the browser tests: the real local-mcp-server binary on a
// free port with a temporary database, Debian's Chromium through
// playwright-core, and a raw MCP client for consuming instructions.

import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "../..");
export const artifacts = join(root, "tests/artifacts");
mkdirSync(join(artifacts, "screenshots"), { recursive: true });

export function serverBinary() {
  if (process.env.LOCAL_MCP_SERVER_BIN) return process.env.LOCAL_MCP_SERVER_BIN;
  const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
  return join(target, "debug", "local-mcp-server");
}

/** Start the server; resolves once it prints its ready line. */
export async function startServer({ dir = mkdtempSync(join(tmpdir(), "local-mcp-ui-")), port = 0, env = {} } = {}) {
  const child = spawn(serverBinary(), [], {
    env: { ...process.env, DB_PATH: join(dir, "queue.sqlite3"), LOCAL_MCP_CONNECTION_FILE: join(dir, "connection.json"), LOCAL_MCP_TOKEN_FILE: join(dir, "token"), HTTP_PORT: String(port), LOG_LEVEL: "warn", DEFAULT_WAIT_SECONDS: "30", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  const url = await new Promise((ok, fail) => {
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /local-mcp-server ready: (\S+)/.exec(log);
      if (m) ok(m[1]);
    });
    child.on("exit", (code) => fail(new Error(`server exited (${code}) before it was ready:\n${log}`)));
  });
  const server = {
    url,
    dir,
    port: Number(new URL(url).port),
    child,
    token: env.API_TOKEN,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
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
    async pending() {
      return (await server.api("GET", "/api/instructions?status=pending")).body.items;
    },
    /** One real MCP `tools/call get_user_request` over streamable HTTP (stateless). */
    async consume(agent = "browser-test-agent") {
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
      if (server.token) headers.authorization = `Bearer ${server.token}`;
      const res = await fetch(url + "/mcp", {
        method: "POST",
        headers,
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: agent } } }),
      });
      const text = await res.text();
      const line = text.split("\n").reverse().find((l) => l.startsWith("data:") && l.includes('"result"'));
      return JSON.parse(line.slice(5)).result.structuredContent;
    },
  };
  return server;
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"],
  });
}

/**
 * A page on the server, recording console errors and every request URL.
 * `colorScheme` picks the OS theme the page sees.
 */
export async function openPage(browser, server, { width = 1280, height = 800, colorScheme = "light", reducedMotion = "reduce" } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, reducedMotion });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(server.url + "/");
  return { page, context, errors, requests };
}

/** Poll `fn` until it returns truthy (bounded). */
export async function until(fn, { timeout = 5000, what = "condition" } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
