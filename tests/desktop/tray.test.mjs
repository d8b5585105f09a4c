// The tray driven the way a panel drives it (issue 42): the built app's
// StatusNotifierItem and its dbusmenu, read and clicked over the private
// session bus by the tests' own panel (panel.mjs), every entry of
// src-tauri/tray.rs's and connect_menu.rs's menu at least once, each judged by
// what it did rather than by the click being taken:
//
// - Copy MCP config for ▸ <client> (all of them): the X clipboard holds that
//   client's snippet, the very one /api/clients gives, and a notification
//   (notifyd.mjs) says it was copied;
// - Connect ▸ <client>: the client's own file in the private HOME gets our
//   `local-mcp` entry (keeping what else it held) and the entry reads
//   "connected"; after a restart on another port, the entry reads "outdated —
//   update", and a click on it, or on "Update all", rewrites the file;
// - Hold all queues / Release all queues: /api/status has every queue held,
//   then none, and the entry's label follows;
// - the three notification switches: the check mark flips, desktop.json
//   follows, and the notification they govern comes or does not;
// - Start at login: the autostart .desktop file appears, then goes;
// - Open log folder: the desktop is asked to open the engine's log folder
//   (a recorder in place of xdg-open); with no log files, a notification says so;
// - Queue clipboard: what the clipboard holds is queued (the tray's click is
//   the person's gesture; only a *launch* with --queue-clipboard must not
//   queue, desktop.test.mjs) and a notification says what;
// - Open queue: the queue window is mapped on the X server; Phone… too (the
//   page opens its Phone panel at /#phone: tests/ui/phone.test.mjs);
// - Quick add…: its window is mapped; what is typed into it is queued; while
//   an agent waits on a question (the needs-you icon in the tray), the same
//   entry opens it answering that agent, whose waiting call gets the answer;
// - Needs you ▸ <agent>: <question> ▸ an answer: the agent's waiting call
//   gets it in reply to its question and the question's notification is
//   withdrawn; ▸ Reply… opens quick add at that question;
// - pick-ups: ten quick ones by one agent are one notification on screen,
//   which ends up counting them;
// - Quit local-mcp, clicked last: the app exits 0 and its item leaves the panel.
//
// Run by scripts/test-desktop.sh (Xvfb, private D-Bus session).

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { inflateSync } from "node:zlib";

import { png } from "../png.mjs";
import { QUICK_ADD, agentCall as harnessAgentCall, app, closeWindow, endApps, quickAddReady, root, said, shownWindows, sleep, startHiddenApp, typeInto, until, windowColors } from "./harness.mjs";
import { startNotifyd } from "./notifyd.mjs";
import { findEntry, flatten, startPanel } from "./panel.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-tray-"));
const runs = [];
const stops = [];

after(async () => {
  for (const run of runs) if (!run.exited) run.child.kill("SIGKILL");
  for (const stop of stops) await stop().catch(() => {});
});

const MAIN = "local-mcp";
/** How long the app is given to act on a click (it acts at once; this is a machine under load's margin). */
const ACT = 15000;
/** How long "nothing happened" is watched for before it counts. */
const QUIET = 1500;

// The desktop's opener, as a recorder: the app opens folders through
// tauri-plugin-opener, which runs the first `xdg-open` on PATH with the
// folder (the `open` crate); this one writes its arguments down instead of
// starting a file manager, so what the app asked the desktop to open is seen.
const bin = join(home, "bin");
const opened = join(home, "opened.txt");
mkdirSync(bin, { recursive: true });
writeFileSync(join(bin, "xdg-open"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${opened}'\n`, { mode: 0o755 });
const openedSoFar = () => (existsSync(opened) ? readFileSync(opened, "utf8").split("\n").filter(Boolean) : []);

const p = await startPanel();
stops.push(() => p.stop());
const d = await startNotifyd();
stops.push(() => d.stop());

/** Wait (bounded, named) for `what` or fail with what the app said. */
const waitFor = (fn, what, run, timeout = ACT) =>
  until(fn, what, timeout).catch((e) => {
    throw new Error(e.message + said(run), { cause: e });
  });

/**
 * Start the app hidden with its own folders under `home`/`name` (HOME and
 * TMPDIR too: its tray icon files go there), the recorder first on PATH;
 * resolves once its toolkit is up and its item is on the panel.
 */
async function startApp(name, extra = {}) {
  // Waits long enough for the quick-add window to answer a question (the default is 10 s).
  const env = { PATH: `${bin}:${process.env.PATH}`, DEFAULT_WAIT_SECONDS: "120", ...extra };
  const { base, env: used, run } = await startHiddenApp(home, name, runs, { extra: env });
  const item = await p.waitForItem(30000, (props, it) => /local-mcp/.test(props.Id) && !it.gone).catch((e) => {
    throw new Error(e.message + said(run), { cause: e });
  });
  return { base, env: used, run, item };
}

const getJson = async (url) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10000) });
  assert.ok(res.ok, `GET ${url}: ${res.status} ${await res.clone().text()}`);
  return res.json();
};
const postJson = (url, body) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(10000) });

/** An agent's get_user_request with `args`. */
const agentCall = (base, args) => harnessAgentCall(base, args, "tray-test");

/** The agent `agent` as /api/status has it (or undefined). */
const agentOf = async (base, agent) => (await getJson(`${base}/api/status`)).agents.find((a) => a.agent_id === agent);

/** Stop a waiting agent (the page's Stop), and see its call end. */
async function stopAgent(base, agent, call) {
  const res = await postJson(`${base}/api/agents/stop`, { agent_id: agent });
  assert.equal(res.status, 204, await res.text());
  const result = await call;
  assert.notEqual(result.result_type, "instruction", `${agent} was stopped, not given work: ${JSON.stringify(result)}`);
}

/** Queue `content` in the default queue over the API. */
async function queue(base, content) {
  const res = await postJson(`${base}/api/instructions`, { content });
  assert.equal(res.status, 201, await res.text());
}

/** An agent takes every pending instruction (none left for the tests after). */
async function takeAll(base, agent = "taker") {
  for (let items = await pending(base); items.length; items = await pending(base)) {
    const got = await agentCall(base, { agent_id: agent });
    assert.equal(got.result_type, "instruction", JSON.stringify(got));
  }
}

/** The pending instructions of the default queue. */
const pending = async (base) => {
  const body = await getJson(`${base}/api/instructions?status=pending`);
  return body.items ?? body;
};

/** Notifications that arrived after `mark` (a count of d.notifications). */
const since = (mark) => d.notifications.slice(mark);
/** The first notification after `mark` whose summary `test` accepts. */
const notified = (mark, test, what, run) =>
  d.waitFor((n) => n.id > mark && test(n.summary), what, ACT).catch((e) => {
    throw new Error(e.message + said(run), { cause: e });
  });
const mark = () => d.notifications.length;

/** The X clipboard's text, as another program reads it. */
const clipboardText = (env) => {
  const out = spawnSync("xclip", ["-o", "-selection", "clipboard"], { env, timeout: 5000, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`xclip -o: ${out.status} ${out.stderr}`);
  return out.stdout;
};

/** RGBA pixels of an 8-bit RGB(A), non-interlaced PNG (the tray icons and the files the tray writes for the panel). */
function pngPixels(file) {
  const buf = readFileSync(file);
  let pos = 8;
  let header;
  const data = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString("ascii", pos + 4, pos + 8);
    const body = buf.subarray(pos + 8, pos + 8 + len);
    if (type === "IHDR") header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], colour: body[9], interlace: body[12] };
    else if (type === "IDAT") data.push(body);
    else if (type === "IEND") break;
    pos += 12 + len;
  }
  const { width, height, depth, colour, interlace } = header;
  assert.ok(depth === 8 && (colour === 6 || colour === 2) && interlace === 0, `${file}: an 8-bit RGB(A) PNG (${JSON.stringify(header)})`);
  const bpp = colour === 6 ? 4 : 3;
  const stride = width * bpp;
  const raw = inflateSync(Buffer.concat(data));
  const out = Buffer.alloc(width * height * 4, 255);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? line[i - bpp] : 0;
      const b = prev[i];
      const c = i >= bpp ? prev[i - bpp] : 0;
      const pa = Math.abs(b - c);
      const pb = Math.abs(a - c);
      const pc = Math.abs(a + b - 2 * c);
      const add = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter];
      line[i] = (line[i] + add) & 0xff;
    }
    for (let x = 0; x < width; x++) line.copy(out, (y * width + x) * 4, x * bpp, x * bpp + bpp);
    prev = line;
  }
  return { width, height, rgba: out };
}

/** Which of the app's four tray images (icons/tray-*.png) the panel is given now. */
const TRAY_IMAGES = ["needs-you", "listening", "working", "offline"].map((name) => ({ name, ...pngPixels(join(root, "icons", `tray-${name}.png`)) }));
async function trayImage(item) {
  const shown = pngPixels(await item.iconFile());
  return TRAY_IMAGES.find((i) => i.width === shown.width && i.height === shown.height && i.rgba.equals(shown.rgba))?.name ?? "none of the four";
}

let base, env, run, item;

test("the app's item is on the panel, and its menu has every entry tray.rs builds", async (t) => {
  // Cursor and Gemini CLI look installed (their folders exist), so Connect ▸ lists them;
  // Gemini's file already holds a setting of the person's, which connecting must keep.
  const a = join(home, "a", "home");
  mkdirSync(join(a, ".cursor"), { recursive: true });
  mkdirSync(join(a, ".gemini"), { recursive: true });
  writeFileSync(join(a, ".gemini", "settings.json"), `{\n  "theme": "Dracula"\n}\n`);
  ({ base, env, run, item } = await startApp("a"));
  const menu = await item.menu();
  for (const e of flatten(menu)) if (e.type !== "separator") t.diagnostic(`${e.id} ${e.path.join(" ▸ ")}${e.toggleType ? ` [${e.toggleState}]` : ""}${e.enabled ? "" : " (disabled)"}`);
  for (const label of ["Quick add…", "Queue clipboard", "Open queue", "Phone…", "Hold all queues", "Start at login", "Open log folder", "Quit local-mcp"]) assert.equal(findEntry(menu, label).enabled, true, label);
  // Connect ▸ is filled from the client files off the main thread, just after start.
  await item.waitForMenu((m) => flatten(findEntry(m, "Connect")).some((e) => e.label === "Cursor: connect"), "Connect ▸ to list Cursor", ACT);
});

test("Copy MCP config for ▸ each client: the clipboard holds its snippet, and a notification says so", async () => {
  const menu = await item.menu();
  const entries = findEntry(menu, "Copy MCP config for").children;
  const { clients } = await getJson(`${base}/api/clients`);
  assert.equal(entries.length, clients.length, "one entry per client the engine knows");
  for (const entry of entries) {
    const client = clients.find((c) => c.name === entry.label);
    assert.ok(client, `"${entry.label}" is a client of /api/clients`);
    const before = mark();
    await item.click(entry.id);
    const shown = await notified(before, (s) => s === `MCP config for ${client.name} copied`, `the "${client.name} copied" notification`, run);
    assert.equal(shown.body, client.how, `${client.name}: the notification says where it goes`);
    // The snippet is the one the page shows for the same server (no token is required here).
    assert.equal(clipboardText(env), client.snippet, `${client.name}: the clipboard holds its snippet`);
  }
  assert.ok(clipboardText(env).includes(`${base}/mcp`));
});

test("Connect ▸ a client writes our entry into its own file and the entry reads connected", async () => {
  const files = {
    "Cursor": join(env.HOME, ".cursor", "mcp.json"),
    "Gemini CLI": join(env.HOME, ".gemini", "settings.json"),
  };
  for (const [name, file] of Object.entries(files)) {
    const before = mark();
    await item.click(`${name}: connect`);
    const shown = await notified(before, (s) => s === `${name} connected to local-mcp`, `"${name} connected"`, run);
    assert.ok(shown.body.includes(file), `the notification names ${file}: ${shown.body}`);
    const doc = JSON.parse(readFileSync(file, "utf8"));
    assert.equal(doc.mcpServers["local-mcp"].url ?? doc.mcpServers["local-mcp"].httpUrl, `${base}/mcp`, `${file}: ${JSON.stringify(doc)}`);
    await item.waitForMenu((m) => findEntry(m, `${name}: connected`).enabled === false, `"${name}: connected" (nothing left to click)`, ACT);
  }
  assert.equal(JSON.parse(readFileSync(files["Gemini CLI"], "utf8")).theme, "Dracula", "the person's own setting is kept");
  const state = await getJson(`${base}/api/connect`);
  for (const id of ["cursor", "gemini-cli"]) assert.equal(state.clients.find((c) => c.id === id)?.state, "connected", `${id} in /api/connect`);
  assert.equal(findEntry(await item.menu(), "Update all").enabled, false, "nothing is outdated");
});

test("Hold all queues holds every queue, and Release all queues releases them; the entry says which it does", async () => {
  assert.equal((await postJson(`${base}/api/queues`, { name: "second" })).status, 201);
  const held = async () => (await getJson(`${base}/api/status`)).queues.map((q) => q.held);
  await item.waitForMenu((m) => findEntry(m, "Queues").enabled, "the Queues submenu (two queues now)", ACT);
  assert.deepEqual(await held(), [false, false]);
  const lines = (m) => JSON.stringify(findEntry(m, "Queues").children.map((e) => e.label).sort());
  try {
    await item.click("Hold all queues");
    await waitFor(async () => (await held()).every(Boolean), "/api/status to have every queue held", run);
    await item.waitForMenu((m) => flatten(m).some((e) => e.label === "Release all queues"), `the entry to read "Release all queues"`, ACT);
    await item.waitForMenu((m) => lines(m) === JSON.stringify(["default — nothing pending · held", "second — nothing pending · held"]), "Queues ▸ to say both are held", ACT);
    await item.click("Release all queues");
    await waitFor(async () => !(await held()).some(Boolean), "/api/status to have no queue held", run);
    await item.waitForMenu((m) => flatten(m).some((e) => e.label === "Hold all queues"), `the entry to read "Hold all queues" again`, ACT);
    await item.waitForMenu((m) => lines(m) === JSON.stringify(["default — nothing pending", "second — nothing pending"]), "Queues ▸ to say neither is held", ACT);
  } finally {
    // Whatever failed above, the tests after this one need the queues released.
    await postJson(`${base}/api/release`, {});
  }
});

/** Click the switch `label`, and see its check mark become `on` and desktop.json's `key` follow. */
async function flip(label, key, on) {
  const prefs = join(env.XDG_CONFIG_HOME, "local-mcp", "desktop.json");
  const clicked = await item.click(label);
  assert.equal(clicked.toggleState, on ? 0 : 1, `"${label}" read ${on ? "off" : "on"} before the click`);
  await item.waitForMenu((m) => findEntry(m, label).toggleState === (on ? 1 : 0), `"${label}" checked ${on}`, ACT);
  await waitFor(() => JSON.parse(readFileSync(prefs, "utf8"))[key] === on, `desktop.json to say ${key}: ${on}`, run);
}

test("Notify when an instruction is picked up: on, a pick-up is announced; off, it is not", async () => {
  // Each by an agent of its own: an agent's pick-ups in quick succession are counted in one notification (the next test).
  const take = async (content, agent) => {
    await queue(base, content);
    await takeAll(base, agent);
  };
  let before = mark();
  await take("first pick-up", "picker-1");
  await notified(before, (s) => s === "picker-1 picked up: first pick-up", "the pick-up notification (on by default)", run);
  await flip("Notify when an instruction is picked up", "notify_consumed", false);
  before = mark();
  await take("quiet pick-up", "picker-2");
  await sleep(QUIET);
  await flip("Notify when an instruction is picked up", "notify_consumed", true);
  await take("third pick-up", "picker-3");
  await notified(before, (s) => s === "picker-3 picked up: third pick-up", "the pick-up notification once on again", run);
  assert.ok(!since(before).some((n) => n.summary.includes("quiet pick-up")), `no notification while off: ${d.describe()}`);
});

test("ten quick pick-ups by one agent are one notification, which counts them in the end", async () => {
  for (let i = 1; i <= 10; i++) await queue(base, `burst ${i}`);
  const before = mark();
  const started = Date.now();
  for (let i = 1; i <= 10; i++) {
    const got = await agentCall(base, { agent_id: "burster" });
    assert.equal(got.instruction?.content, `burst ${i}`, JSON.stringify(got));
  }
  const took = Date.now() - started;
  // The first at once; the rest counted when its window (10 s) ends, in its place.
  const count = await notified(before, (s) => s === "burster picked up 10 instructions", "the count of burster's ten pick-ups", run);
  assert.equal(count.body, "Latest: burst 10. The queue is empty now.");
  const burster = since(before).filter((n) => n.summary.startsWith("burster picked up"));
  assert.equal(burster[0].summary, "burster picked up: burst 1", d.describe());
  // One more notification per 10 s the pick-ups took (a loaded machine's), never one per pick-up.
  assert.ok(burster.length <= 2 + Math.floor(took / 10000), `${burster.length} notifications for 10 pick-ups in ${took} ms: ${d.describe()}`);
  for (const n of burster.slice(0, -1)) assert.equal(n.closed?.by, "app", `each earlier one closed for the next: ${d.describe()}`);
  assert.equal(d.shown.filter((n) => n.summary.startsWith("burster")).length, 1, "one on screen");
});

test("Notify when an agent reports: on, a report is announced; off, it is not", async () => {
  /** An agent reports `content` and waits; `heard` waits for what should come of it; then it is stopped. */
  const report = async (agent, content, heard) => {
    const call = agentCall(base, { agent_id: agent, report: content });
    await waitFor(async () => (await agentOf(base, agent))?.waiting, `${agent} waiting after its report`, run);
    await heard();
    await stopAgent(base, agent, call);
  };
  let before = mark();
  await report("reporter-1", "Built the first part", () => notified(before, (s) => s === "reporter-1 reported: Built the first part", "the report announced (on by default)", run));
  await flip("Notify when an agent reports", "notify_reported", false);
  before = mark();
  await report("reporter-2", "Built the second part", () => sleep(QUIET));
  assert.ok(!since(before).some((n) => n.summary.includes("reporter-2")), `no notification while off: ${d.describe()}`);
  await flip("Notify when an agent reports", "notify_reported", true);
  await report("reporter-3", "Built the third part", () => notified(before, (s) => s === "reporter-3 reported: Built the third part", "the report announced once on again", run));
  // The app takes events in order: had reporter-2's report been announced late, it would be here by now.
  assert.ok(!since(before).some((n) => n.summary.includes("reporter-2")), `reporter-2 never announced: ${d.describe()}`);
});

test("Notify when an agent is waiting: off (the default), nothing is said; on, an agent waiting on an empty queue is announced", async () => {
  const wait = async (agent, heard) => {
    const call = agentCall(base, { agent_id: agent });
    await waitFor(async () => (await agentOf(base, agent))?.waiting, `${agent} waiting on the empty queue`, run);
    await heard();
    await stopAgent(base, agent, call);
  };
  assert.deepEqual(await pending(base), [], "the queue is empty");
  const before = mark();
  await wait("waiter-1", () => sleep(QUIET));
  assert.ok(!since(before).some((n) => n.summary.includes("waiter-1")), `nothing said while off: ${d.describe()}`);
  await flip("Notify when an agent is waiting", "notify_waiting", true);
  await wait("waiter-2", () => notified(before, (s) => s === "waiter-2 is waiting for you", "the waiting agent announced once on", run));
  // Events are taken in order: a late word about waiter-1 would be here by now.
  assert.ok(!since(before).some((n) => n.summary.includes("waiter-1")), `waiter-1 never announced: ${d.describe()}`);
  await flip("Notify when an agent is waiting", "notify_waiting", false);
});

test("Start at login writes the autostart entry, and a second click takes it away", async (t) => {
  // The XDG autostart folder is $XDG_CONFIG_HOME/autostart; the auto-launch crate
  // (under tauri-plugin-autostart) writes to $HOME/.config/autostart whatever
  // XDG_CONFIG_HOME says. Both are looked at: exactly one must have it.
  const places = [join(env.XDG_CONFIG_HOME, "autostart", "local-mcp.desktop"), join(env.HOME, ".config", "autostart", "local-mcp.desktop")];
  const present = () => places.filter((f) => existsSync(f));
  assert.deepEqual(present(), []);
  await item.click("Start at login");
  const [file] = await waitFor(() => present().length === 1 && present(), "the autostart .desktop file", run);
  t.diagnostic(`written to ${file}`);
  const entry = readFileSync(file, "utf8");
  assert.match(entry, /^\[Desktop Entry\]/);
  assert.ok(entry.split("\n").includes(`Exec=${app} --hidden`), `it starts this app hidden: ${entry}`);
  await item.waitForMenu((m) => findEntry(m, "Start at login").toggleState === 1, `"Start at login" checked`, ACT);
  await item.click("Start at login");
  await waitFor(() => present().length === 0, "the autostart file gone", run);
  await item.waitForMenu((m) => findEntry(m, "Start at login").toggleState === 0, `"Start at login" unchecked`, ACT);
});

test("Open log folder asks the desktop to open the engine's log folder", async () => {
  const { log_dir: logDir } = (await getJson(`${base}/api/status`)).server;
  assert.ok(logDir && existsSync(logDir), `the engine's log folder ${logDir} exists`);
  assert.deepEqual(openedSoFar(), []);
  await item.click("Open log folder");
  await waitFor(() => openedSoFar().length > 0, "xdg-open to be run", run);
  assert.deepEqual(openedSoFar(), [logDir]);
});

test("Queue clipboard queues the image the clipboard holds, and says so", async () => {
  // xclip owns the X clipboard, as a screenshot tool would; in the foreground (-quiet), so it can be ended.
  const shot = join(home, "clip.png");
  writeFileSync(shot, png(320, 200));
  const clip = spawn("xclip", ["-quiet", "-selection", "clipboard", "-t", "image/png", "-i", shot], { env, stdio: "ignore" });
  stops.push(async () => clip.kill());
  await until(() => spawnSync("xclip", ["-o", "-selection", "clipboard", "-t", "TARGETS"], { env, timeout: 5000, encoding: "utf8" }).stdout?.includes("image/png"), "xclip holding the image");
  const known = new Set((await pending(base)).map((i) => i.id));
  const before = mark();
  await item.click("Queue clipboard");
  await notified(before, (s) => s === "Queued from the clipboard: a 320×200 image", "the 'Queued from the clipboard' notification", run);
  const added = await waitFor(async () => {
    const items = (await pending(base)).filter((i) => !known.has(i.id));
    return items.length > 0 && items;
  }, "the clipboard's image queued", run);
  assert.equal(added.length, 1, `one instruction: ${JSON.stringify(added)}`);
  assert.deepEqual(added[0].attachments?.map((f) => [f.width, f.height]), [[320, 200]], JSON.stringify(added[0]));
  clip.kill();
  // An agent takes it: the queue is empty again for what follows.
  await takeAll(base);
});

test("Open queue maps the queue window", async () => {
  assert.ok(!shownWindows().includes(MAIN), "no queue window before (the app started hidden)");
  await item.click("Open queue");
  await waitFor(() => shownWindows().includes(MAIN), `the "${MAIN}" window mapped`, run);
  await waitFor(() => windowColors(MAIN) > 10, "the queue page drawn in it", run, 30000);
  // Closed, it goes to the tray: the app keeps running.
  assert.ok(closeWindow(MAIN));
  await waitFor(() => !shownWindows().includes(MAIN), "the queue window closed", run);
  assert.equal(run.exited, null);
});

test("Phone… maps the queue window (at its Phone panel: /#phone, which tests/ui/phone.test.mjs opens)", async () => {
  assert.ok(!shownWindows().includes(MAIN), "no queue window before");
  await item.click("Phone…");
  await waitFor(() => shownWindows().includes(MAIN), `the "${MAIN}" window mapped`, run);
  await waitFor(() => windowColors(MAIN) > 10, "the queue page drawn in it", run, 30000);
  assert.ok(closeWindow(MAIN));
  await waitFor(() => !shownWindows().includes(MAIN), "the queue window closed", run);
});

test("Quick add… opens its window, and what is typed there is queued", async () => {
  const known = new Set((await pending(base)).map((i) => i.id));
  await item.click("Quick add…");
  await quickAddReady(run);
  typeInto(QUICK_ADD, "typed in quick add\n");
  const added = await waitFor(async () => {
    const items = (await pending(base)).filter((i) => !known.has(i.id));
    return items.length > 0 && items;
  }, "the typed instruction queued", run);
  assert.deepEqual(added.map((i) => [i.content, i.target]), [["typed in quick add", null]], "queued for any agent");
  await waitFor(() => !shownWindows().includes(QUICK_ADD), "the quick-add window gone once it queued", run);
  // The menu's count line (not clickable) follows the queue.
  await item.waitForMenu((m) => flatten(m).some((e) => e.label === "1 pending" && !e.enabled), `the count line to read "1 pending"`, ACT);
  await takeAll(base);
  await item.waitForMenu((m) => flatten(m).some((e) => e.label === "Nothing pending"), `the count line to read "Nothing pending" again`, ACT);
});

test("while an agent waits on its question the tray shows it needs you, and Quick add… answers that agent", async () => {
  assert.deepEqual(await pending(base), [], "nothing pending: the question waits");
  assert.notEqual(await trayImage(item), "needs-you");
  const asked = agentCall(base, { agent_id: "asker", report: "Merge the branch now?", options: ["Merge", "Wait"] });
  await waitFor(async () => (await agentOf(base, "asker"))?.asking, "asker's question in the status", run);
  await waitFor(async () => (await trayImage(item)) === "needs-you", "the needs-you image in the tray", run);
  // The question arrived as a notification too, with its answers as buttons (answer.test.mjs presses them).
  await d.waitFor((n) => n.summary.includes("asker") && n.actions.some((a) => a.key === "option:0"), "the question's notification", ACT);
  await item.click("Quick add…");
  await quickAddReady(run);
  typeInto(QUICK_ADD, "merge after the review\n");
  const result = await Promise.race([asked, sleep(ACT).then(() => null)]);
  assert.ok(result, `asker got no answer within ${ACT} ms of typing it${said(run)}`);
  assert.equal(result.result_type, "instruction", JSON.stringify(result));
  assert.equal(result.instruction.content, "merge after the review");
  assert.equal(result.instruction.in_reply_to?.question, "Merge the branch now?", JSON.stringify(result));
  await waitFor(() => !shownWindows().includes(QUICK_ADD), "the quick-add window gone once it answered", run);
  await waitFor(async () => (await trayImage(item)) !== "needs-you", "the needs-you image gone once answered", run);
});

test("Needs you ▸ an agent's question ▸ an answer answers that agent and withdraws its notification; Reply… opens quick add at it", async () => {
  const needsYou = (m) => flatten(m).find((e) => e.path.length === 1 && /^Needs you/.test(e.label));
  assert.equal(needsYou(await item.menu()).enabled, false, "nobody asks yet");
  const question = "Ship the release now?\nAll checks are green.";
  const long = "Yes, and tag it, and write the announcement, and tell everyone";
  const asked = agentCall(base, { agent_id: "menu-asker", report: question, options: ["Ship it", "Wait, for the docs", long, "Fix & push"] });
  const entry = "menu-asker: Ship the release now?";
  const menu = await item.waitForMenu((m) => needsYou(m).enabled && flatten(m).some((e) => e.label === entry), `"${entry}" under Needs you`, ACT);
  const answers = flatten(menu).filter((e) => e.path[1] === entry && e.path.length === 3);
  // A long answer is no entry (it goes through Reply…); commas are welcome in a menu, and an
  // ampersand is shown as it is (a menu would take a single one for a shortcut's mark).
  assert.deepEqual(answers.map((e) => e.label), ["Ship it", "Wait, for the docs", "Fix & push", "Reply…"]);
  const shown = await d.waitFor((n) => n.summary.startsWith("menu-asker reported") && !n.closed, "the question's notification", ACT);
  await item.click(answers[1].id);
  const result = await Promise.race([asked, sleep(ACT).then(() => null)]);
  assert.ok(result, `menu-asker got no answer within ${ACT} ms of the click${said(run)}`);
  assert.equal(result.instruction?.content, "Wait, for the docs", JSON.stringify(result));
  assert.equal(result.instruction.in_reply_to?.question, "Ship the release now?", JSON.stringify(result));
  await waitFor(() => d.get(shown.id)?.closed, "the question's notification withdrawn once answered from the tray", run);
  await item.waitForMenu((m) => !needsYou(m).enabled && !flatten(m).some((e) => e.label === entry), "Needs you empty and disabled again", ACT);

  const asked2 = agentCall(base, { agent_id: "menu-asker", report: "Which branch?", options: ["main"] });
  const menu2 = await item.waitForMenu((m) => flatten(m).some((e) => e.label === "menu-asker: Which branch?"), "the second question under Needs you", ACT);
  await item.click(flatten(menu2).find((e) => e.path[1] === "menu-asker: Which branch?" && e.label === "Reply…").id);
  await quickAddReady(run);
  typeInto(QUICK_ADD, "release-2\n");
  const result2 = await Promise.race([asked2, sleep(ACT).then(() => null)]);
  assert.ok(result2, `menu-asker got no typed answer within ${ACT} ms${said(run)}`);
  assert.equal(result2.instruction?.content, "release-2", JSON.stringify(result2));
  assert.equal(result2.instruction.in_reply_to?.question, "Which branch?", JSON.stringify(result2));
  await waitFor(() => !shownWindows().includes(QUICK_ADD), "the quick-add window gone once it answered", run);
});

test("after a restart on another port, Connect ▸ a client and Update all bring the outdated entries up to date", async () => {
  await endApps();
  // The same folders and database, another port; and no log files, for Open log folder's other case.
  const old = base;
  ({ base, env, run, item } = await startApp("a", { LOCAL_MCP_LOG_DIR: "off" }));
  assert.notEqual(base, old);
  const cursor = join(env.HOME, ".cursor", "mcp.json");
  const gemini = join(env.HOME, ".gemini", "settings.json");
  const url = (file) => {
    const entry = JSON.parse(readFileSync(file, "utf8")).mcpServers["local-mcp"];
    return entry.url ?? entry.httpUrl;
  };
  await item.waitForMenu((m) => ["Cursor", "Gemini CLI"].every((c) => flatten(m).some((e) => e.label === `${c}: outdated — update`)) && findEntry(m, "Update all").enabled, "both entries outdated and Update all enabled", ACT);
  let before = mark();
  await item.click("Cursor: outdated — update");
  await notified(before, (s) => s === "Cursor connected to local-mcp", `"Cursor connected"`, run);
  assert.equal(url(cursor), `${base}/mcp`);
  assert.equal(url(gemini), `${old}/mcp`, "only the one clicked");
  await item.waitForMenu((m) => flatten(m).some((e) => e.label === "Cursor: connected"), `"Cursor: connected"`, ACT);
  before = mark();
  await item.click("Update all");
  const shown = await notified(before, (s) => /client\(s\) updated$/.test(s), "the 'updated' notification", run);
  assert.equal(shown.summary, "1 client(s) updated", `${shown.summary} / ${shown.body}`);
  assert.equal(url(gemini), `${base}/mcp`);
  assert.equal(JSON.parse(readFileSync(gemini, "utf8")).theme, "Dracula");
  await item.waitForMenu((m) => flatten(m).some((e) => e.label === "Gemini CLI: connected") && !findEntry(m, "Update all").enabled, `"Gemini CLI: connected", Update all disabled`, ACT);
});

test("Open log folder, with no log files, says so instead", async () => {
  assert.equal((await getJson(`${base}/api/status`)).server.log_dir ?? null, null, "LOCAL_MCP_LOG_DIR=off: no log folder");
  const before = mark();
  const openedBefore = openedSoFar().length;
  await item.click("Open log folder");
  const shown = await notified(before, (s) => s === "No log files", "the 'No log files' notification", run);
  assert.match(shown.body, /LOCAL_MCP_LOG_DIR=off/);
  assert.equal(openedSoFar().length, openedBefore, "nothing opened");
});

test("Quit local-mcp, clicked last, ends the app and its item leaves the panel", async () => {
  const at = Date.now();
  await item.click("Quit local-mcp");
  await waitFor(() => run.exited, "the app to exit after Quit", run, 15000);
  assert.deepEqual(run.exited, { code: 0, signal: null });
  await item.waitGone(5000);
  assert.equal(p.items.size, 0);
  assert.ok(Date.now() - at < 15000);
});
