// What the desktop test files share: the built app, a bounded wait, the
// D-Bus notification monitor and a WebDriver session on the app through
// tauri-driver (one at a time: files run one after the other, port 4444).

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
export const app = join(target, "debug", "local-mcp");

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns something truthy (errors count as "not yet"). */
export async function until(fn, what, timeout = 20000) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e; // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await sleep(100);
  }
}

/** Record every Notify call on the session bus into `logPath`; returns the monitor process. */
export function monitorNotifications(logPath) {
  const monitor = spawn("dbus-monitor", ["--session", "interface='org.freedesktop.Notifications',member='Notify'"], { stdio: ["ignore", "pipe", "inherit"] });
  let log = "";
  monitor.stdout.on("data", (c) => {
    log += c;
    writeFileSync(logPath, log);
  });
  return monitor;
}

/** The port of the tauri-driver the last `openSession` started. */
let driverPort = 4444;

/** A WebDriver call; the W3C `value` of the answer, or an error naming the call. */
export async function wd(method, path, body) {
  const res = await fetch(`http://127.0.0.1:${driverPort}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${JSON.stringify(json.value)}`);
  return json.value;
}

/**
 * Start tauri-driver on `port` (WebKitWebDriver on the next one) with `env`,
 * which the app inherits, and open a session on the app: its id and the driver.
 * Later `wd` calls go to this driver.
 */
export async function openSession(env, port = 4444) {
  const driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(port + 1), "--native-driver", "/usr/bin/WebKitWebDriver"], { env, stdio: ["ignore", "inherit", "inherit"] });
  driverPort = port;
  await until(() => fetch(`http://127.0.0.1:${port}/status`).then((r) => r.ok), `tauri-driver on ${port}`);
  const created = await wd("POST", "/session", { capabilities: { alwaysMatch: { "tauri:options": { application: app } } } });
  return { session: created.sessionId, driver };
}
