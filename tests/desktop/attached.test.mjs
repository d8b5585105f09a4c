// The desktop app started while a headless local-mcp-server already serves
// the person's database (issue 16): it does not fail and does not start a
// second engine — it runs as that server's window and tray. Proves: the
// window shows the server's page and its queue; an agent consuming there
// produces the app's notification (fed by the server's event stream); the
// server's connection file is left as it was. Run by scripts/test-desktop.sh
// after desktop.test.mjs (files run one at a time: one tauri-driver port).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { startServer } from "../server.mjs";
import { closeSession, monitorNotifications, openSession, sleep, until, wd } from "./harness.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-attached-"));
const monitorLog = join(home, "dbus-monitor.log");
let server, base, driver, monitor, session;

const s = (path) => `/session/${session}${path}`;
const contentOf = (css) => wd("POST", s("/execute/sync"), { script: "return document.querySelector(arguments[0])?.textContent ?? ''", args: [css] });

before(async () => {
  // The headless server first, on the folder the app is then pointed at.
  server = await startServer({ dir: home });
  base = server.url;
  await server.add("Queued in the headless server");
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_DATA_HOME: join(home, "data"),
    DB_PATH: join(home, "queue.sqlite3"),
    LOCAL_MCP_CONNECTION_FILE: server.connectionFile,
    LOCAL_MCP_TOKEN_FILE: join(home, "token"),
    HTTP_PORT: "0",
    LOG_LEVEL: "info",
  };
  monitor = monitorNotifications(monitorLog);
  ({ session, driver } = await openSession(env));
});

after(async () => {
  monitor?.kill(); // first: a live child keeps this file's process from ever ending
  await closeSession(session, driver);
  await server?.stop();
});

test("the app started on a database a headless server holds becomes that server's window", async () => {
  await until(async () => (await wd("GET", s("/url"))).startsWith(base), "the window on the server's page");
  await until(async () => (await contentOf("#rail")).includes("Queued in the headless server"), "the server's queue in the window");
  await until(async () => (await contentOf("#conn")) === "live", "live events in the window");
  const info = JSON.parse(readFileSync(server.connectionFile, "utf8"));
  assert.equal(info.url, base, "the server's connection file still names it");
  assert.equal(server.child.exitCode, null, "the server keeps running");
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
