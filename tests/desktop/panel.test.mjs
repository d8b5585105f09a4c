// The tests' panel (panel.mjs) is a real one (issue 42): the built app's tray
// item registers with it through libayatana-appindicator, whether the panel
// came up before the app or after; its menu, read over dbusmenu, is the one
// src-tauri/tray.rs builds; a click on a notification switch reaches the app
// (the check mark flips and the app saves the preference); Quit, clicked last,
// ends the app and its item leaves the panel. Run by scripts/test-desktop.sh
// (Xvfb, private D-Bus session).

import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { endApps, said, sleep, startHiddenApp, until } from "./harness.mjs";
import { findEntry, flatten, startPanel } from "./panel.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-panel-"));
const panels = [];
const runs = [];

after(async () => {
  for (const run of runs) if (!run.exited) run.child.kill("SIGKILL");
  for (const p of panels) await p.stop().catch(() => {});
});

/** A panel, to be stopped when the file ends. */
async function panel() {
  const p = await startPanel();
  panels.push(p);
  return p;
}

/** Start the app hidden with its own folders; resolves once its engine answers. */
const startApp = (name) => startHiddenApp(home, name, runs, { toolkit: false });

/** The app's item on `p`, or an error with what the app said. */
async function itemOf(p, run, timeout) {
  try {
    return await p.waitForItem(timeout, (props) => /local-mcp/.test(props.Id));
  } catch (e) {
    throw new Error(e.message + said(run), { cause: e });
  }
}

// tray.rs's menu, top level, in order (separators left out); later entries may be added between them.
const TRAY_MENU = [
  "Quick add…",
  "Queue clipboard",
  "Open queue",
  "Queues",
  "Hold all queues",
  "Connect",
  "Copy MCP config for",
  "Notify when an instruction is picked up",
  "Notify when an agent is waiting",
  "Notify when an agent reports",
  "Start at login",
  "Open log folder",
  "Quit local-mcp",
];

/** Whether `want` appears in `labels` in the same order. */
const inOrder = (labels, want) => {
  let i = 0;
  for (const l of labels) if (l === want[i]) i++;
  return i === want.length;
};

test("a panel started after the app still gets its item (libayatana watches for the watcher)", async () => {
  const { run } = await startApp("late");
  await until(() => run.output.includes("desktop toolkit and plugins are up"), "the app's tray to be set up", 30000).catch((e) => {
    throw new Error(e.message + said(run), { cause: e });
  });
  // Well past libayatana's 100 ms before it falls back to an XEmbed icon, finding no watcher.
  await sleep(1000);
  const p = await panel();
  const item = await itemOf(p, run, 10000);
  assert.equal((await item.properties()).Status, "Active");
  await p.stop();
  panels.splice(panels.indexOf(p), 1);
  await endApps();
});

let run, env, p, item;

test("the item registers with a panel started first; its menu is the one tray.rs builds", async (t) => {
  p = await panel();
  ({ run, env } = await startApp("first"));
  item = await itemOf(p, run, 30000);
  assert.match(item.path, /^\/org\/ayatana\/NotificationItem\//, "libayatana registers an object path at its own bus name");
  assert.deepEqual(p.events.map((e) => e.signal), ["StatusNotifierItemRegistered"]);
  const props = await item.properties();
  assert.equal(props.Status, "Active");
  assert.equal(props.Title, "local-mcp");
  const icon = await item.iconFile();
  assert.ok(icon.startsWith(env.TMPDIR), `the icon file ${icon} is the app's own (in its TMPDIR)`);
  assert.equal(readFileSync(icon).subarray(1, 4).toString(), "PNG", `${icon} is a PNG`);

  const menu = await item.menu();
  const entries = flatten(menu);
  for (const e of entries) t.diagnostic(`${e.id} ${e.type === "separator" ? "—" : e.path.join(" ▸ ")}${e.toggleType ? ` [${e.toggleType} ${e.toggleState}]` : ""}${e.enabled ? "" : " (disabled)"}`);
  const top = menu.children.filter((e) => e.type !== "separator").map((e) => e.label);
  assert.ok(inOrder(top, TRAY_MENU), `the top level ${JSON.stringify(top)} has tray.rs's entries in order`);
  assert.equal(menu.children.filter((e) => e.type === "separator").length, 2);
  // The switches show desktop.json's defaults (prefs.rs) and "Start at login" off.
  const checks = Object.fromEntries(entries.filter((e) => e.toggleType === "checkmark").map((e) => [e.label, e.toggleState]));
  assert.deepEqual(checks, {
    "Notify when an instruction is picked up": 1,
    "Notify when an agent is waiting": 0,
    "Notify when an agent reports": 1,
    "Start at login": 0,
  });
  const copy = findEntry(menu, "Copy MCP config for");
  assert.ok(["VS Code", "Claude Code", "Cursor"].every((c) => copy.children.some((e) => e.label === c)), "a copy entry per client");
  assert.equal(findEntry(menu, "Connect").childrenDisplay, "submenu");
  assert.equal(findEntry(menu, /^Quit/).enabled, true);
});

test("a click on a notification switch reaches the app: the check mark flips and the preference is saved", async () => {
  const prefs = join(env.XDG_CONFIG_HOME, "local-mcp", "desktop.json");
  const saved = () => JSON.parse(readFileSync(prefs, "utf8")).notify_waiting;
  const label = "Notify when an agent is waiting";
  const state = (menu) => findEntry(menu, label).toggleState;
  for (const [before, after] of [
    [0, 1],
    [1, 0],
  ]) {
    const clicked = await item.click(label);
    assert.equal(clicked.toggleState, before);
    await item.waitForMenu((m) => state(m) === after, `"${label}" to read ${after} after the click`, 10000);
    await until(() => saved() === (after === 1), `desktop.json to say notify_waiting: ${after === 1}`, 10000);
  }
  assert.ok(item.events.some((e) => e.signal === "ItemsPropertiesUpdated"), "the menu said its entry changed");
  assert.throws(() => findEntry({ children: [] }, "Nothing"), /no menu entry matches Nothing/);
  await assert.rejects(item.click("Queues"), /disabled|submenu/, "an empty, disabled submenu is not clickable");
});

test("Quit, clicked last, ends the app within 15 s and its item leaves the panel", async () => {
  await item.click(/^Quit/);
  await until(() => run.exited, "the app to exit after Quit", 15000).catch((e) => {
    throw new Error(e.message + said(run), { cause: e });
  });
  assert.deepEqual(run.exited, { code: 0, signal: null });
  await item.waitGone(5000);
  assert.equal(p.items.size, 0);
  assert.deepEqual(p.events.map((e) => e.signal), ["StatusNotifierItemRegistered", "StatusNotifierItemUnregistered"]);
});
