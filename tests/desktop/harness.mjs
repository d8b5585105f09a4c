// What the desktop test files share: the built app, a bounded wait, the
// D-Bus notification monitor and a WebDriver session on the app through
// tauri-driver (one at a time: files run one after the other, port 4444).

import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const target = process.env.CARGO_TARGET_DIR ?? join(root, "target");
export const app = join(target, "debug", "local-mcp");
/** The app as WebKitWebDriver starts it: through a script that keeps its output in LOCAL_MCP_APP_LOG. */
export const appWithLog = join(root, "tests/desktop/app-with-log.sh");

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
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})${appLog ? `; the app said:\n${appOutput()}` : ""}`);
    await sleep(100);
  }
}

/** Record every Notify call on the session bus into `logPath`; returns the monitor process. */
export function monitorNotifications(logPath) {
  // stderr not inherited: a monitor left running must not hold the test runner's pipe.
  const monitor = spawn("dbus-monitor", ["--session", "interface='org.freedesktop.Notifications',member='Notify'"], { stdio: ["ignore", "pipe", "ignore"] });
  process.on("exit", () => monitor.kill("SIGKILL"));
  let log = "";
  monitor.stdout.on("data", (c) => {
    log += c;
    writeFileSync(logPath, log);
  });
  return monitor;
}

/** The port of the tauri-driver the last `openSession` started. */
let driverPort = 4444;

/** The log the app of the last `openSession` writes (its stdout and stderr). */
let appLog = null;

/** The end of the app's own output, for a failure to show. */
export function appOutput(log = appLog, lines = 40) {
  if (!log || !existsSync(log)) return "(no output recorded)";
  return readFileSync(log, "utf8").split("\n").slice(-lines).join("\n");
}

/** A WebDriver call; the W3C `value` of the answer, or an error naming the call (and, past a minute, the app's output). */
export async function wd(method, path, body, timeout = 60000) {
  let res;
  try {
    res = await fetch(`http://127.0.0.1:${driverPort}${path}`, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeout),
    });
  } catch (e) {
    throw new Error(`${method} ${path}: no answer from the WebDriver in ${timeout / 1000} s (${e.message}); the app said:\n${appOutput()}\nthe driver said:\n${appOutput(driverLog, 15)}`);
  }
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${JSON.stringify(json.value)}`);
  return json.value;
}

/** Every tauri-driver `openSession` started and nobody has ended yet. */
const drivers = new Set();

/** The log tauri-driver (and the WebKitWebDriver it starts) of the last `openSession` writes. */
let driverLog = null;

// Last resort: a driver left running would outlive this file's process and keep
// the test runner waiting for it for ever (it holds the runner's pipe otherwise).
process.on("exit", () => {
  for (const d of drivers) d.kill("SIGKILL");
});

/** Answers anything on `port` as a WebDriver would (`/status`)? */
const answersOn = (port) =>
  fetch(`http://127.0.0.1:${port}/status`, { signal: AbortSignal.timeout(2000) }).then(
    (r) => r.ok,
    () => false,
  );

/** End a driver this harness started, and wait until nothing answers on its port. */
async function endDriver(driver) {
  if (!driver) return;
  drivers.delete(driver);
  if (driver.exitCode === null && driver.signalCode === null) {
    driver.kill("SIGTERM");
    const gone = await Promise.race([new Promise((ok) => driver.once("exit", () => ok(true))), sleep(5000).then(() => false)]);
    if (!gone) driver.kill("SIGKILL");
  }
  if (driver.port) await until(async () => !(await answersOn(driver.port)), `tauri-driver on ${driver.port} to be gone`, 10000);
}

/**
 * Start tauri-driver on `port` (WebKitWebDriver on the next one) with `env`,
 * which the app inherits, and open a session on the app: its id and the driver.
 * Later `wd` calls go to this driver. If the session does not open, the driver
 * and the app are ended before the error is thrown: nothing is left for the
 * next test to talk to by mistake.
 */
export async function openSession(env, port = 4444) {
  // The app of a previous test may still be leaving: a new one would wait for it (or take over).
  await noAppRunning();
  // A driver still answering here (a test that did not end its own) would take this test's calls.
  if (await answersOn(port)) throw new Error(`something already answers WebDriver calls on port ${port}: an earlier test's tauri-driver was left running`);
  const logs = env.XDG_CONFIG_HOME ?? tmpdir();
  mkdirSync(logs, { recursive: true });
  appLog = join(logs, `app-${port}.log`);
  writeFileSync(appLog, "");
  driverLog = join(logs, `tauri-driver-${port}.log`);
  const out = openSync(driverLog, "w");
  const driverEnv = { ...env, LOCAL_MCP_APP: app, LOCAL_MCP_APP_LOG: appLog };
  // Its output to a file, never this process's: a pipe it held would keep the runner waiting.
  const driver = spawn("tauri-driver", ["--port", String(port), "--native-port", String(port + 1), "--native-driver", "/usr/bin/WebKitWebDriver"], { env: driverEnv, stdio: ["ignore", out, out] });
  closeSync(out);
  driver.unref(); // this file's process may end with it running: the exit handler above ends it
  driver.port = port;
  drivers.add(driver);
  driverPort = port;
  try {
    await until(async () => {
      if (driver.exitCode !== null || driver.signalCode !== null) throw new Error(`tauri-driver exited (${driver.exitCode ?? driver.signalCode}): ${readFileSync(driverLog, "utf8").slice(-2000)}`);
      return answersOn(port);
    }, `tauri-driver on ${port}`);
    // The driver waits a minute for an app that has already said it cannot start: fail on its word.
    let opened = false;
    const gaveUp = (async () => {
      while (!opened) {
        if (readFileSync(appLog, "utf8").includes("could not start")) throw new Error(`the app did not start; it said:\n${appOutput()}`);
        await sleep(250);
      }
    })();
    const creating = wd("POST", "/session", { capabilities: { alwaysMatch: { "tauri:options": { application: appWithLog } } } });
    try {
      const created = await Promise.race([creating, gaveUp]);
      return { session: created.sessionId, driver };
    } finally {
      opened = true;
      creating.catch(() => {}); // settled by ending the driver below, if it lost the race
    }
  } catch (e) {
    await endDriver(driver);
    await endApps();
    throw e;
  }
}

/**
 * End a session and its driver, then the app: closing its window leaves it in the tray (as
 * it should), so it is asked to quit (SIGTERM, which it answers like Quit), and the next
 * test starts only once it is gone. Without a driver (its `openSession` failed), every
 * driver still running is ended.
 */
export async function closeSession(session, driver) {
  if (session) await wd("DELETE", `/session/${session}`, undefined, 15000).catch(() => {});
  for (const d of driver ? [driver] : [...drivers]) await endDriver(d);
  await endApps();
}

/** Quit every running app (SIGTERM), SIGKILL what is left after 15 s, and wait for them to be gone. */
export async function endApps() {
  for (const pid of appProcesses()) process.kill(pid, "SIGTERM");
  try {
    await noAppRunning(15000);
  } catch {
    for (const pid of appProcesses()) process.kill(pid, "SIGKILL");
    await noAppRunning();
  }
}

/** Every process running the app's binary (any test's), or the binary at `path`. */
export function appProcesses(path = app) {
  const pids = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readlinkSync(`/proc/${name}/exe`) === path && !isZombie(Number(name))) pids.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

function isZombie(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return / [ZX] /.test(stat.slice(stat.lastIndexOf(")") + 1, stat.lastIndexOf(")") + 4));
  } catch {
    return true;
  }
}

/** Wait (up to 30 s) until no app (of `path`) is running: tests start theirs on a clean desktop. */
export async function noAppRunning(timeout = 30000, path = app) {
  await until(() => appProcesses(path).length === 0, `the previous app to be gone (still running: ${appProcesses(path).join(", ")})`, timeout);
}

/** A TCP port nothing listens on now. */
export function freePort() {
  return new Promise((ok) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/** An app's settings: its own folders and database under `home`/`name`, a fixed free port. */
export async function appSetting(home, name, logLevel = "info") {
  const port = await freePort();
  return {
    base: `http://127.0.0.1:${port}`,
    env: {
      ...process.env,
      XDG_CONFIG_HOME: join(home, name, "config"),
      XDG_DATA_HOME: join(home, name, "data"),
      XDG_STATE_HOME: join(home, name, "state"),
      DB_PATH: join(home, name, "queue.sqlite3"),
      HTTP_PORT: String(port),
      LOG_LEVEL: logLevel,
    },
  };
}

/** Start the app at `path` with `args`; its output is kept (for a failure to show), each chunk also given to `onOutput`. */
export function launchApp(path, args, env, onOutput = () => {}) {
  const child = spawn(path, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const run = { child, path, output: "", exited: null };
  const take = (c) => {
    run.output += c;
    onOutput(String(c));
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  child.on("exit", (code, signal) => (run.exited = { code, signal }));
  return run;
}

/** The end of what an app said, for an error message. */
export const said = (run) => `; the app said:\n${run.output.split("\n").slice(-30).join("\n")}`;

/**
 * Start the app hidden with its own folders under `home`/`name` (HOME and
 * TMPDIR too: its tray icon files go there), `extra` added to its
 * environment; its run is put in `runs` at once (for the caller to end, even
 * if a wait here fails). Resolves with { base, env, run } once its engine
 * answers and, with `toolkit`, once its toolkit is up: the engine answers
 * first, and the app follows its events and handles menu clicks from its
 * setup on.
 */
export async function startHiddenApp(home, name, runs, { extra = {}, toolkit = true } = {}) {
  await noAppRunning();
  const { base, env } = await appSetting(home, name);
  env.HOME = join(home, name, "home");
  env.TMPDIR = join(home, name, "tmp");
  Object.assign(env, extra);
  for (const dir of [env.HOME, env.TMPDIR]) mkdirSync(dir, { recursive: true });
  const run = launchApp(app, ["--hidden"], env);
  runs.push(run);
  const waitFor = (fn, what) =>
    until(fn, what, 30000).catch((e) => {
      throw new Error(e.message + said(run), { cause: e });
    });
  await waitFor(() => fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok), `the engine at ${base}`);
  if (toolkit) {
    await waitFor(() => run.output.includes("the desktop toolkit and plugins are up"), "the app's toolkit");
    await sleep(500);
  }
  return { base, env, run };
}

/**
 * An agent's get_user_request with `args`, in the 2026-07-28 shape (one
 * request, no session), its client named `client`: resolves with the
 * tool's result as JSON. `signal` ends the call early (the agent goes).
 */
export async function agentCall(base, args, client = "desktop-test", { signal } = {}) {
  const body = {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: {
      name: "get_user_request",
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: client, version: "1" },
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
  const res = await fetch(`${base}/mcp`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": "tools/call",
      "mcp-name": "get_user_request",
    },
    body: JSON.stringify(body),
    signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(150000)]) : AbortSignal.timeout(150000),
  });
  const text = await res.text();
  const message =
    text
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => JSON.parse(l.slice(5)))
      .find((m) => m.id !== undefined) ?? JSON.parse(text);
  if (!message.result) throw new Error(`get_user_request gave no result: ${text}`);
  return JSON.parse(message.result.content[0].text);
}

/** `pid` and every process below it. */
export function processTree(pid) {
  const children = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [];
  const walk = (p) => {
    tree.push(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  walk(pid);
  return tree.filter((p) => !isZombie(p));
}

/** The command name of each process (`comm`), e.g. "WebKitWebProces". */
export function commandNames(pids) {
  return pids.map((p) => {
    try {
      return readFileSync(`/proc/${p}/comm`, "utf8").trim();
    } catch {
      return "";
    }
  });
}

/** The webview's processes among `pids` (WebKitGTK's web and network processes). */
export const webkitProcesses = (pids) => commandNames(pids).filter((n) => n.startsWith("WebKit"));

/** Proportional set size of the processes, in KiB (each shared page split among its users). */
export function pssKiB(pids) {
  let total = 0;
  for (const p of pids) {
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/smaps_rollup`, "utf8"));
      total += m ? Number(m[1]) : 0;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

/** Close the window titled `title` as its × button does (tests/desktop/xwindow.py); false if there was none. */
export function closeWindow(title) {
  return spawnSync("python3", [join(root, "tests/desktop/xwindow.py"), "close", title], { timeout: 10000 }).status === 0;
}

/** How many colours the shown window `title` has on the X server (a grid of its pixels; 0 if not shown). */
export function windowColors(title) {
  const out = spawnSync("python3", [join(root, "tests/desktop/xwindow.py"), "colors", title], { timeout: 10000, encoding: "utf8" });
  return out.status === 0 ? Number(out.stdout.trim()) : 0;
}

/** The titles of the X windows that are shown. */
/**
 * Follow windows titled `title` as the X server maps and unmaps them, in one
 * long-lived process (`xwindow.py watch`): `events` gets `{ at, shown }` (at:
 * `performance.now()`) as they come. `ready` resolves once it is watching;
 * `stop()` ends it (until then it keeps this process running).
 */
export function watchWindows(title) {
  const child = spawn("python3", [join(root, "tests/desktop/xwindow.py"), "watch", title], { stdio: ["ignore", "pipe", "inherit"] });
  const watch = { events: [], stop: () => child.kill() };
  let buffered = "";
  watch.ready = new Promise((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`the window watcher ended (${code}) before it was ready`)));
    child.stdout.on("data", (chunk) => {
      const at = performance.now();
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = lines.pop();
      for (const line of lines) {
        if (line === "ready") resolve();
        else watch.events.push({ at, shown: line === "shown" });
      }
    });
  });
  return watch;
}

export function shownWindows() {
  const out = spawnSync("python3", [join(root, "tests/desktop/xwindow.py"), "list"], { timeout: 10000, encoding: "utf8" }).stdout ?? "";
  return out
    .split("\n")
    .filter((l) => l.startsWith("* "))
    .map((l) => l.slice(2));
}

/** The quick-add window's title. */
export const QUICK_ADD = "Quick add · local-mcp";

/** Type `text` into the shown window `title` (tests/desktop/xkeys.py, XTEST; "\n" is Enter). */
export function typeInto(title, text) {
  const out = spawnSync("python3", [join(root, "tests/desktop/xkeys.py"), "type", title, text], { timeout: 20000, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`typing into "${title}": ${out.stderr}`);
}

/**
 * The quick-add window shown (within 15 s) with its page drawn (20 s) and
 * its handlers given time to be in place; an error naming what it waited
 * for, with what `run` (the app) said.
 */
export async function quickAddReady(run) {
  const waitFor = (fn, what, timeout) =>
    until(fn, what, timeout).catch((e) => {
      throw new Error(e.message + said(run), { cause: e });
    });
  await waitFor(() => shownWindows().includes(QUICK_ADD), `the "${QUICK_ADD}" window mapped`, 15000);
  // A page with text has dozens of colours; an empty webview has one or two.
  await waitFor(() => windowColors(QUICK_ADD) > 10, "the quick-add page drawn", 20000);
  // quick.js's handlers (Enter queues) go in once its modules load, just after the first paint.
  await sleep(1000);
}
