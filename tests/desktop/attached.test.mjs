// The desktop app started while a headless local-mcp-server already serves
// the person's database (issue 16): it does not fail and does not start a
// second engine — it runs as that server's window and tray. Proves: the
// window shows the server's page and its queue; an agent consuming there
// produces the app's notification (fed by the server's event stream); the
// server's connection file is left as it was. Run by scripts/test-desktop.sh
// after desktop.test.mjs (files run one at a time: one tauri-driver port).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
const app = join(target, "debug", "local-mcp");
const serverBin = join(target, "debug", "local-mcp-server");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(fn, what, timeout = 20000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await sleep(100);
  }
}

const home = mkdtempSync(join(tmpdir(), "local-mcp-attached-"));
const monitorLog = join(home, "dbus-monitor.log");
const connectionFile = join(home, "connection.json");
const env = {
  ...process.env,
  XDG_CONFIG_HOME: join(home, "config"),
  XDG_DATA_HOME: join(home, "data"),
  DB_PATH: join(home, "queue.sqlite3"),
  LOCAL_MCP_CONNECTION_FILE: connectionFile,
  LOCAL_MCP_TOKEN_FILE: join(home, "token"),
  HTTP_PORT: "0",
  LOG_LEVEL: "info",
};
let server, base, driver, monitor, session;

async function wd(method, path, body) {
  const res = await fetch(`http://127.0.0.1:4444${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${JSON.stringify(json.value)}`);
  return json.value;
}
const s = (path) => `/session/${session}${path}`;
const contentOf = (css) => wd("POST", s("/execute/sync"), { script: "return document.querySelector(arguments[0])?.textContent ?? ''", args: [css] });

before(async () => {
  server = spawn(serverBin, [], { env, stdio: ["ignore", "ignore", "pipe"] });
  base = await new Promise((ok, fail) => {
    createInterface({ input: server.stderr }).on("line", (line) => {
      const m = /^local-mcp-server ready: (\S+)/.exec(line);
      if (m) ok(m[1]);
    });
    server.on("exit", (code) => fail(new Error(`the server exited (${code})`)));
  });
  const added = await fetch(`${base}/api/instructions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content: "Queued in the headless server" }),
  });
  assert.equal(added.status, 201);

  monitor = spawn("dbus-monitor", ["--session", "interface='org.freedesktop.Notifications',member='Notify'"], { stdio: ["ignore", "pipe", "inherit"] });
  let log = "";
  monitor.stdout.on("data", (c) => {
    log += c;
    writeFileSync(monitorLog, log);
  });
  driver = spawn("tauri-driver", ["--port", "4444", "--native-driver", "/usr/bin/WebKitWebDriver"], { env, stdio: ["ignore", "inherit", "inherit"] });
  await until(() => fetch("http://127.0.0.1:4444/status").then((r) => r.ok), "tauri-driver");
  const created = await wd("POST", "/session", { capabilities: { alwaysMatch: { "tauri:options": { application: app } } } });
  session = created.sessionId;
});

after(async () => {
  if (session) await wd("DELETE", s("")).catch(() => {});
  driver?.kill();
  monitor?.kill();
  server?.kill();
});

test("the app started on a database a headless server holds becomes that server's window", async () => {
  await until(async () => (await wd("GET", s("/url"))).startsWith(base), "the window on the server's page");
  await until(async () => (await contentOf("#rail")).includes("Queued in the headless server"), "the server's queue in the window");
  await until(async () => (await contentOf("#conn")) === "live", "live events in the window");
  const info = JSON.parse(readFileSync(connectionFile, "utf8"));
  assert.equal(info.url, base, "the server's connection file still names it");
  assert.equal(server.exitCode, null, "the server keeps running");
});

test("an agent consuming at the server produces the app's notification", async () => {
  await sleep(500); // the app's event stream is open once the window is live; give it a beat
  const res = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: "headless-agent" } } }),
  });
  assert.match(await res.text(), /Queued in the headless server/);
  await until(() => readFileSync(monitorLog, "utf8").includes("headless-agent picked up: Queued in the headless server"), "a Notify from the attached app");
  await until(async () => (await contentOf("#ledger")).includes("Queued in the headless server"), "the ledger in the window");
});
