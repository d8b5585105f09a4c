// The tests' notification server (notifyd.mjs) is a real one (issue 42): the
// system's own client, libnotify's notify-send, gets its buttons shown and
// learns which was pressed; it sees a server without "actions" as one and
// falls back to a plain notification; a CloseNotification is answered with
// NotificationClosed reason 3 to every listener; and the dbus-monitor the
// other desktop tests record Notify calls with still sees every call. Run by
// scripts/test-desktop.sh (private D-Bus session).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, test } from "node:test";

import { dbus, sessionBus } from "./bus.mjs";
import { monitorNotifications, until } from "./harness.mjs";
import { NAME, PATH, Reason, startNotifyd } from "./notifyd.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-notifyd-"));
const running = [];

/** Start a server, to be stopped after the test whatever happens. */
async function start(options) {
  const d = await startNotifyd(options);
  running.push(d);
  return d;
}

afterEach(async () => {
  while (running.length) await running.pop().stop();
});

/**
 * Run notify-send; `done` resolves with its exit code and output. Never
 * spawnSync: the server answering it runs in this very process.
 */
function notifySend(args) {
  const child = spawn("notify-send", args, { stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (c) => (out.stdout += c));
  child.stderr.on("data", (c) => (out.stderr += c));
  const done = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, ...out })));
  return { child, done };
}

/** `promise`, or an error naming `what` after `ms` (a notify-send left waiting is killed). */
async function within(ms, what, promise, child) {
  let timer;
  const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
    child?.kill();
  }
}

/** A client of our own on the bus, as an app is: the Notifications interface and the signals it heard. */
async function client() {
  const bus = sessionBus();
  const object = await bus.getProxyObject(NAME, PATH);
  const notifications = object.getInterface(NAME);
  const heard = [];
  notifications.on("NotificationClosed", (id, reason) => heard.push({ signal: "NotificationClosed", id, reason }));
  notifications.on("ActionInvoked", (id, key) => heard.push({ signal: "ActionInvoked", id, key }));
  notifications.on("ActivationToken", (id) => heard.push({ signal: "ActivationToken", id }));
  return { bus, notifications, heard };
}

test("buttons: notify-send's actions are recorded, and pressing one tells notify-send which and closes it", async () => {
  const log = join(home, "monitor.log");
  const monitor = monitorNotifications(log);
  try {
    // The monitor is listening once it has printed its own name's comings and goings.
    await until(() => readFileSync(log, "utf8").includes("NameLost"), "dbus-monitor to start listening", 10000);
    const d = await start({ actions: true });
    const send = notifySend(["--app-name=local-mcp-test", "--action=merge=Merge now", "--action=wait=Wait", "Merge now?", "The agent asks"]);
    const n = await d.waitFor((x) => x.summary === "Merge now?", "notify-send's notification");
    assert.equal(n.appName, "local-mcp-test");
    assert.equal(n.body, "The agent asks");
    assert.deepEqual(n.actions, [
      { key: "merge", label: "Merge now" },
      { key: "wait", label: "Wait" },
    ]);
    assert.equal(n.closed, null, "still shown until someone acts");
    d.press(n.id, "merge");
    const result = await within(10000, "notify-send to exit after the press", send.done, send.child);
    assert.equal(result.code, 0, `notify-send: ${result.stderr}`);
    assert.equal(result.stdout.trim(), "merge", "notify-send prints the pressed action's key");
    assert.deepEqual(
      d.events.map(({ signal, id, reason, actionKey }) => ({ signal, id, reason, actionKey })),
      [
        { signal: "ActionInvoked", id: n.id, reason: undefined, actionKey: "merge" },
        { signal: "NotificationClosed", id: n.id, reason: Reason.DISMISSED, actionKey: undefined },
      ],
    );
    assert.equal(d.get(n.id).closed.by, "press");
    assert.throws(() => d.press(n.id, "wait"), /already closed by press/);
    // The other desktop tests' way of seeing notifications still sees this one.
    await until(() => readFileSync(log, "utf8").includes('string "Merge now?"'), "dbus-monitor to record the Notify call", 10000);
  } finally {
    monitor.kill();
  }
});

test("a server without actions: notify-send reads the capabilities, says so, and sends a plain notification", async () => {
  const d = await start({ actions: false });
  const { bus, notifications } = await client();
  try {
    const caps = await notifications.GetCapabilities();
    assert.ok(!caps.includes("actions") && caps.includes("body"), `capabilities: ${caps}`);
  } finally {
    bus.disconnect();
  }
  const send = notifySend(["--action=merge=Merge", "Plain one", "No buttons here"]);
  const n = await d.waitFor((x) => x.summary === "Plain one", "the plain notification");
  assert.deepEqual(n.actions, [], "no buttons asked of a server that shows none");
  const result = await within(10000, "notify-send to give up waiting for a press", send.done, send.child);
  assert.match(result.stderr, /Actions are not supported/);
  assert.throws(() => d.press(n.id, "merge"), /does not advertise "actions"/);
  d.dismiss(n.id);
  assert.deepEqual(d.get(n.id).closed.reason, Reason.DISMISSED);
});

test("CloseNotification withdraws it: NotificationClosed reason 3 to listeners, a second close is quiet; a press is heard too", async () => {
  const d = await start({ activationToken: true });
  const { bus, notifications, heard } = await client();
  try {
    const info = await notifications.GetServerInformation();
    assert.equal(info[3], "1.2", `spec version in ${info}`);
    const hints = { urgency: new dbus.Variant("y", 2), "desktop-entry": new dbus.Variant("s", "local-mcp") };
    const id = await notifications.Notify("local-mcp", 0, "", "Question", "Merge?", ["merge", "Merge", "default", ""], hints, 0);
    const n = await d.waitFor((x) => x.id === id, `notification ${id}`);
    assert.deepEqual(n.hints, { urgency: 2, "desktop-entry": "local-mcp" });
    assert.deepEqual(n.actions, [
      { key: "merge", label: "Merge" },
      { key: "default", label: "" },
    ]);
    await notifications.CloseNotification(id);
    await until(() => heard.length === 1, "NotificationClosed to reach the client", 10000);
    assert.deepEqual(heard, [{ signal: "NotificationClosed", id, reason: Reason.CLOSED }]);
    assert.equal(d.get(id).closed.by, "app", "recorded as withdrawn by the app");
    await notifications.CloseNotification(id); // already gone: no error, as desktop servers answer
    await notifications.GetCapabilities(); // a round trip: a second signal would have arrived by now
    assert.equal(heard.length, 1, `no second NotificationClosed: ${JSON.stringify(heard)}`);

    const other = await notifications.Notify("local-mcp", 0, "", "Again", "", ["merge", "Merge"], {}, 0);
    heard.length = 0;
    d.press(other, "merge");
    await until(() => heard.length === 3, "the press's three signals to reach the client", 10000);
    assert.deepEqual(heard, [
      { signal: "ActivationToken", id: other },
      { signal: "ActionInvoked", id: other, key: "merge" },
      { signal: "NotificationClosed", id: other, reason: Reason.DISMISSED },
    ]);
  } finally {
    bus.disconnect();
  }
});

test("replaces_id: an update keeps its id while shown; one already closed gets a new id; a dismissal ends --wait", async () => {
  const d = await start();
  const first = await within(10000, "notify-send -p", notifySend(["-p", "One"]).done);
  const id = Number(first.stdout.trim());
  assert.ok(id > 0, `printed id: ${first.stdout}`);
  const second = await within(10000, "notify-send -r", notifySend(["-p", "-r", String(id), "Two"]).done);
  assert.equal(Number(second.stdout.trim()), id, "the same id back");
  assert.equal(d.notifications.length, 1);
  assert.deepEqual([d.get(id).summary, d.get(id).replaced], ["Two", 1]);
  assert.deepEqual(
    d.calls.map((c) => [c.summary, c.replacesId, c.id]),
    [
      ["One", 0, id],
      ["Two", id, id],
    ],
  );
  const waiting = notifySend(["--wait", "-r", String(id), "Three"]);
  await d.waitFor((x) => x.summary === "Three", "the third version");
  d.dismiss(id);
  const ended = await within(10000, "notify-send --wait to end on the dismissal", waiting.done, waiting.child);
  assert.equal(ended.code, 0, ended.stderr);
  const again = await within(10000, "notify-send -r of a closed one", notifySend(["-p", "-r", String(id), "Four"]).done);
  assert.notEqual(Number(again.stdout.trim()), id, "a closed notification is not brought back");
});

test("one server at a time: a second is refused while the first runs, and takes the name once it stops", async () => {
  const d = await start();
  await assert.rejects(startNotifyd(), /another notification server runs/);
  await d.stop();
  running.splice(running.indexOf(d), 1);
  const next = await start({ actions: false });
  assert.ok(!next.capabilities.includes("actions"));
  await assert.rejects(next.waitFor(() => false, "a notification nobody sends", 300), /timed out after 300 ms waiting for a notification nobody sends; the notification server has received no notification/);
});
