// The app's life outside WebDriver (issue 28), which would add its own
// processes: the webview and its helper processes exist only while a window
// is open; the engine answers before the window exists; a start while the
// previous app is leaving, or has hung, ends in one running app — never in
// "could not start". Run by scripts/test-desktop.sh (Xvfb, private D-Bus).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, test } from "node:test";

import {
  app,
  appProcesses,
  appSetting,
  closeWindow,
  launchApp,
  noAppRunning,
  processTree,
  pssKiB,
  said,
  shownWindows,
  windowColors,
  sleep,
  until,
  webkitProcesses,
} from "./harness.mjs";

const home = mkdtempSync(join(tmpdir(), "local-mcp-lifecycle-"));
const started = [];

const setting = (name) => appSetting(home, name);

/** Start the app with `args`, to be ended after the test if it is still running. */
function launch(args, env) {
  const run = launchApp(app, args, env);
  started.push(run);
  return run;
}

/** The pid of the app whose engine answers at `base`. */
async function servingPid(base) {
  const status = await (await fetch(`${base}/api/status`, { signal: AbortSignal.timeout(5000) })).json();
  return status.server.pid;
}

async function answering(base, run, timeout = 30000) {
  try {
    await until(() => fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok), `the engine at ${base}`, timeout);
  } catch (e) {
    throw new Error(e.message + said(run));
  }
}

/** Which of `pids` map OpenGL's driver (Mesa's DRI/Gallium, its LLVM), as "pid name: library". */
function openGlMapped(pids) {
  const found = [];
  for (const pid of pids) {
    let maps;
    try {
      maps = readFileSync(`/proc/${pid}/maps`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    const hit = maps.split("\n").find((l) => /libGLX_mesa|libEGL_mesa|_dri\.so|libgallium|libLLVM/.test(l));
    if (hit) found.push(`${pid}: ${hit.trim().split(/\s+/).pop()}`);
  }
  return found;
}

/** The app's webview processes, named; an empty list when it has none. */
const webviewOf = (run) => webkitProcesses(processTree(run.child.pid));

// Whatever a test leaves running (it failed half way) is ended before the next.
afterEach(async () => {
  for (const run of started) if (!run.exited) run.child.kill("SIGKILL");
  await noAppRunning();
});

test("the webview lives only while a window is open: none when started hidden, none once its windows close", async () => {
  await noAppRunning();
  const { base, env } = await setting("windows");
  const run = launch(["--hidden"], env);
  await answering(base, run);
  await sleep(1500);
  assert.deepEqual(webviewOf(run), [], "started hidden, the app has no webview process");
  // GTK's OpenGL is off (webview_helpers::before_toolkit): its probe loaded Mesa and LLVM, ~31 MiB.
  assert.deepEqual(openGlMapped([run.child.pid]), [], "started hidden, the app has not loaded OpenGL");

  let openKiB = 0;
  for (const round of [1, 2]) {
    // A second launch brings the window: the running app creates it.
    const second = spawnSync(app, [], { env, timeout: 30000, encoding: "utf8" });
    assert.equal(second.status, 0, `second launch: ${second.stderr}`);
    await until(() => shownWindows().includes("local-mcp"), `the queue window shown (round ${round})`);
    await until(() => webviewOf(run).length > 0, `its webview processes (round ${round})`);
    // The page is drawn on the screen, not only loaded: the app's own
    // process opens no EGL display (webview_helpers::no_egl_here), and the
    // web process's frames must still reach the window.
    await until(() => windowColors("local-mcp") >= 8, `the page drawn in the window (round ${round})`);
    assert.deepEqual(
      openGlMapped([run.child.pid]),
      [],
      "with its window open, the app's own process has not loaded OpenGL's driver (the web process draws)",
    );
    // The largest the app's own process was with its window (a round after the first starts from given-back pages).
    openKiB = Math.max(openKiB, pssKiB([run.child.pid]));
    assert.ok(closeWindow("local-mcp"), "the window took the close request");
    await until(() => !shownWindows().includes("local-mcp"), `the window closed (round ${round})`);
    try {
      await until(() => webviewOf(run).length === 0, `no webview process left after the close (round ${round})`);
    } catch (e) {
      throw new Error(`${e.message}; still running: ${webviewOf(run).join(", ")}${said(run)}`);
    }
    // With no window left, the app gives back the code pages the window used (trim.rs): its own
    // process falls well below what it held with the window open (94-97 -> 32 MiB, release build).
    await until(
      () => pssKiB([run.child.pid]) < openKiB * 0.6,
      `the app's own process giving back the window's code pages (${openKiB} KiB at most with the window; now ${pssKiB([run.child.pid])} KiB) (round ${round})`,
    );
    assert.equal(run.exited, null, "closing the window keeps the app in the tray");
    assert.deepEqual(openGlMapped([run.child.pid]), [], "nor after the window closed");
    assert.ok((await fetch(`${base}/healthz`)).ok, "and its engine serving");
  }

  // Quick add: the same, for its own small window.
  const quick = spawnSync(app, ["--quick-add"], { env, timeout: 30000, encoding: "utf8" });
  assert.equal(quick.status, 0, `--quick-add: ${quick.stderr}`);
  await until(() => shownWindows().includes("Quick add · local-mcp"), "the quick-add box shown");
  await until(() => webviewOf(run).length > 0, "its webview processes");
  await sleep(500);
  assert.ok(closeWindow("Quick add · local-mcp"));
  await until(() => webviewOf(run).length === 0, "no webview process left after quick add closed");
  run.child.kill("SIGTERM");
  await until(() => run.exited, "the app gone on SIGTERM");
  assert.equal(run.exited.code, 0, `SIGTERM quits like the tray's Quit${said(run)}`);
});

test("a second launch hands over to the running app before it opens the display", async () => {
  await noAppRunning();
  const { base, env } = await setting("hand-over");
  const run = launch(["--hidden"], env);
  await answering(base, run);
  // Its display cannot be opened: only a launch that never starts the
  // toolkit (GTK's start was half of a second launch's time) gets through.
  const second = spawnSync(app, [], { env: { ...env, DISPLAY: ":7777" }, timeout: 30000, encoding: "utf8" });
  assert.equal(second.status, 0, `second launch: ${second.stderr}`);
  await until(() => shownWindows().includes("local-mcp"), "the running app's queue window shown");
  assert.equal(appProcesses().length, 1, "one app running");
  run.child.kill("SIGTERM");
  await until(() => run.exited, "the app gone on SIGTERM");
});

test("a start on a display that cannot be opened says so, and leaves nothing running", async () => {
  await noAppRunning();
  const { base, env } = await setting("no-display");
  const start = spawnSync(app, [], { env: { ...env, DISPLAY: ":7777" }, timeout: 60000, encoding: "utf8" });
  assert.equal(start.status, 3, `exit status (a panic is 101): ${start.stderr}`);
  assert.match(start.stderr, /cannot open the display ":7777"/);
  assert.match(start.stderr, /local-mcp-server/, "it names the headless server");
  assert.doesNotMatch(start.stderr, /panicked/);
  assert.deepEqual(appProcesses(), [], "nothing left running");
  await assert.rejects(fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }), "its engine stopped with it");
});

test("a start while the previous app is leaving waits for it, and ends in one running app", async () => {
  await noAppRunning();
  const { base, env: plain } = await setting("leaving");
  // A long wait: what the agent gets must be the quitting app's answer, not its wait's end.
  const env = { ...plain, DEFAULT_WAIT_SECONDS: "600" };
  const first = launch(["--hidden"], env);
  await answering(base, first);
  // Its window open, so that its way out takes a while (the webview's teardown).
  assert.equal(spawnSync(app, [], { env, timeout: 30000 }).status, 0);
  await until(() => webviewOf(first).length > 0, "the first app's window");
  // An agent waits, which its way out answers.
  const waiting = fetch(`${base}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: "leaver" } } }),
  })
    .then((r) => r.text())
    .catch((e) => `failed: ${e}`);
  await until(async () => (await (await fetch(`${base}/api/status`)).json()).agents.some((a) => a.agent_id === "leaver" && a.waiting), "the agent waiting");
  first.child.kill("SIGTERM");
  const second = launch(["--hidden"], env);
  await until(() => first.exited, `the first app gone${said(first)}`);
  assert.equal(first.exited.code, 0, `the first app left gracefully${said(first)}`);
  await answering(base, second, 45000);
  assert.equal(await servingPid(base), second.child.pid, "the second start serves");
  assert.deepEqual(appProcesses(), [second.child.pid], "one app runs");
  assert.doesNotMatch(second.output, /could not start/);
  // The app that quit answered the waiting call before it went (issue 37): its
  // normal answer, never a stream cut off without one.
  const answer = await waiting;
  assert.match(answer, /"result_type\\?":\\?"default_response/, `the waiting agent's answer: ${answer.slice(0, 400)}`);
  second.child.kill("SIGTERM");
  await until(() => second.exited, "the second app gone");
});

test("a start while the running app has hung takes over from it, and ends in one running app", async () => {
  await noAppRunning();
  const { base, env } = await setting("hung");
  const first = launch(["--hidden"], env);
  await answering(base, first);
  await sleep(500); // its single-instance channel is up once it has said it is ready
  // Wedged: it holds its locks and its bus name, and answers nothing.
  first.child.kill("SIGSTOP");
  const began = Date.now();
  const second = launch(["--hidden"], env);
  await until(() => first.exited, `the hung app ended by the new start${said(second)}`, 45000);
  await answering(base, second, 45000);
  const took = Date.now() - began;
  assert.equal(await servingPid(base), second.child.pid, "the new start serves");
  assert.deepEqual(appProcesses(), [second.child.pid], "one app runs");
  assert.match(second.output, /does not answer/, "it said why it took over");
  assert.ok(took < 45000, `took over in ${took} ms`);
  second.child.kill("SIGTERM");
  await until(() => second.exited, "the second app gone");
});

test("a start while another copy of the app, with other settings, has hung holding the channel takes over from it", async () => {
  await noAppRunning();
  // Two copies with their own folders (so their desktop locks differ) on one session bus:
  // only the single-instance channel stands between them.
  const a = await setting("channel-a");
  const b = await setting("channel-b");
  const first = launch(["--hidden"], a.env);
  await answering(a.base, first);
  await sleep(500); // its single-instance channel is up once it has said it is ready
  first.child.kill("SIGSTOP");
  const second = launch(["--hidden"], b.env);
  // The second's call to the holder of the channel waits; past its patience (20 s) it asks the bus who that is.
  await until(() => first.exited, `the hung copy ended by the new start${said(second)}`, 60000);
  await answering(b.base, second, 45000);
  assert.equal(await servingPid(b.base), second.child.pid, "the new start serves");
  assert.deepEqual(appProcesses(), [second.child.pid], "one app runs");
  assert.match(second.output, /holds the single-instance channel/, `it said why it took over${said(second)}`);
  assert.doesNotMatch(second.output, /could not start/);
  second.child.kill("SIGTERM");
  await until(() => second.exited, "the second app gone");
});
