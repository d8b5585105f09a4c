// The desktop app's footprint (issue 28), a bench: what the tray app costs
// while it sits in the tray, with its window open and after it closed, how
// soon its engine answers after launch, and how soon a re-opened window shows
// its page. Prints a table; `npm run bench:desktop` runs it under Xvfb and a
// private D-Bus (scripts/bench-desktop.sh), on release builds.
//
//   node tests/desktop/footprint.mjs [LABEL=BINARY ...]
//
// Memory is PSS (each shared page split among its users) summed over the
// app's whole process tree, read 8 s after the state was reached. Launch →
// /healthz is timed from spawning the app to its engine's first answer,
// polled every 5 ms (median of 5 fresh starts). A window is opened as a
// person's second launch opens it (the single-instance hand-over), and its
// page counts as shown when the page's event stream opens (the engine logs
// that at debug level; a binary that does not log it gets "-"); it is
// re-opened 3 times (LOCAL_MCP_FOOTPRINT_REOPENS), the median reported.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  appSetting,
  closeWindow,
  launchApp,
  noAppRunning,
  processTree,
  pssKiB,
  said,
  shownWindows,
  sleep,
  target,
  until,
  watchWindows,
  webkitProcesses,
} from "./harness.mjs";

const SETTLE_MS = Number(process.env.LOCAL_MCP_FOOTPRINT_SETTLE_MS ?? 8000);
const LAUNCHES = 5;
const REOPENS = Number(process.env.LOCAL_MCP_FOOTPRINT_REOPENS ?? 3);
const TITLE = "local-mcp";
/** The engine's line for a page's event stream is at debug level. */
const LOG_LEVEL = "info,engine::http::sse=debug";

const binaries = process.argv.slice(2).map((a) => {
  const i = a.indexOf("=");
  return i > 0 ? { label: a.slice(0, i), path: a.slice(i + 1) } : { label: "this build", path: a };
});
if (binaries.length === 0) binaries.push({ label: "this build", path: join(target, "release", "local-mcp") });

/** Start the app, noting when each page event stream opened (the engine's debug line). */
function launch(path, args, env) {
  const run = launchApp(path, args, env, (chunk) => {
    const now = performance.now();
    for (const _ of chunk.matchAll(/an event stream opened/g)) run.streams.push(now);
  });
  run.streams = [];
  return run;
}

async function quit(run) {
  if (!run.exited) run.child.kill("SIGTERM");
  await until(() => run.exited, "the app gone on SIGTERM", 20000).catch(() => run.child.kill("SIGKILL"));
  await noAppRunning(30000, run.path);
}

/** Spawn → the engine's first answer, polled every 5 ms. */
async function launchToHealthz(path, env, base) {
  const started = performance.now();
  const run = launch(path, ["--hidden"], env);
  for (;;) {
    const ok = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { run, ms: performance.now() - started };
    if (run.exited || performance.now() - started > 30000) throw new Error(`the engine at ${base} never answered${said(run)}`);
    await sleep(5);
  }
}

const tree = (run) => processTree(run.child.pid);
const mib = (kib) => `${(kib / 1024).toFixed(0)} MiB`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Open the window as a second launch does; ms until that launch has handed
 * over (it exits), until the window is mapped (`windows`: the X server's
 * word) and until its page's stream opens. Nothing is spawned or polled
 * meanwhile: on 2 cores that would take CPU from what is timed.
 */
async function openWindow(path, env, run, windows) {
  const streamsBefore = run.streams.length;
  const eventsBefore = windows.events.length;
  const started = performance.now();
  const second = spawn(path, [], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  second.stderr.on("data", (c) => (stderr += c));
  const launcher = { exited: null };
  second.on("exit", (code, signal) => (launcher.exited = { code, signal, at: performance.now() }));
  // Judged by the window it brings, not by how the launcher exits (an older
  // build's hand-over ended its launcher with another status).
  const launched = () => `the second launch ${launcher.exited ? `ended with ${launcher.exited.code ?? launcher.exited.signal}` : "runs still"}: ${stderr}`;
  const shown = () => windows.events.slice(eventsBefore).find((e) => e.shown);
  await until(
    () => launcher.exited && shown() && (run.streams.length > streamsBefore || performance.now() - started > 10000),
    "the window shown",
    30000,
  ).catch((e) => {
    throw new Error(`${e.message} (${launched()})`);
  });
  const page = run.streams.length > streamsBefore ? run.streams[streamsBefore] - started : null;
  return { handed: launcher.exited.at - started, mapped: shown().at - started, page };
}

/** Close the window as its × does; false when it stays (an older build kept it). */
async function closeIt(run) {
  if (!closeWindow(TITLE)) return false;
  const closed = await until(() => !shownWindows().includes(TITLE), "the window closed", 10000).then(
    () => true,
    () => false,
  );
  if (!closed) return false;
  // The webview's processes leave after the last window (up to a few seconds).
  await until(() => webkitProcesses(tree(run)).length === 0, "no webview process left", 15000).catch(() => {});
  return true;
}

async function measure({ label, path }) {
  const home = mkdtempSync(join(tmpdir(), "local-mcp-footprint-"));
  let windows = null;
  try {
    await noAppRunning(30000, path);
    const launches = [];
    for (let i = 0; i < LAUNCHES; i++) {
      const { base, env } = await appSetting(home, `launch${i}`, LOG_LEVEL);
      const { run, ms } = await launchToHealthz(path, env, base);
      launches.push(ms);
      await quit(run);
    }

    windows = watchWindows(TITLE);
    await windows.ready;
    const { base, env } = await appSetting(home, "resident", LOG_LEVEL);
    const { run } = await launchToHealthz(path, env, base);
    await sleep(SETTLE_MS);
    const hidden = pssKiB(tree(run));
    const hiddenProcs = tree(run).length;

    const first = await openWindow(path, env, run, windows);
    await sleep(SETTLE_MS);
    const open = pssKiB(tree(run));
    const openProcs = tree(run).length;

    const closes = await closeIt(run);
    await sleep(SETTLE_MS);
    const closed = pssKiB(tree(run));
    const closedProcs = tree(run).length;

    const reopens = [];
    for (let i = 0; closes && i < REOPENS; i++) {
      reopens.push(await openWindow(path, env, run, windows));
      await sleep(1500);
      await closeIt(run);
      await sleep(1000);
    }
    await quit(run);
    const handedMs = reopens.length ? `${median(reopens.map((r) => r.handed)).toFixed(0)} ms` : "-";
    const pageMs = reopens.length && reopens.every((r) => r.page !== null) ? `${median(reopens.map((r) => r.page)).toFixed(0)} ms` : "-";
    const mappedMs = reopens.length ? `${median(reopens.map((r) => r.mapped)).toFixed(0)} ms` : "-";
    const closedRow = closes ? `${mib(closed)} (${closedProcs} proc.)` : `window stays: ${mib(closed)}`;
    return {
      label,
      rows: [
        ["tray-resident, started hidden (PSS, process tree)", `${mib(hidden)} (${hiddenProcs} proc.)`, "≤ 60 MiB"],
        ["window open (PSS, process tree)", `${mib(open)} (${openProcs} proc.)`, "≤ 200 MiB"],
        ["tray-resident after the window closed", closedRow, "≤ 60 MiB"],
        ["launch → engine answers /healthz (median of 5)", `${median(launches).toFixed(0)} ms`, "≤ 100 ms"],
        ["first open → page's event stream", first.page === null ? "-" : `${first.page.toFixed(0)} ms`, ""],
        ["re-open → the second launch has handed over (median)", handedMs, ""],
        ["re-open → window mapped (median)", mappedMs, ""],
        ["re-open → page's event stream (median)", pageMs, "≤ 300 ms"],
      ],
    };
  } finally {
    windows?.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

const results = [];
for (const b of binaries) {
  console.error(`measuring ${b.label}: ${b.path}`);
  results.push(await measure(b));
}
const names = results[0].rows.map((r) => r[0]);
const header = ["desktop app (release, Xvfb, software rendering)", ...results.map((r) => r.label), "target"];
const lines = names.map((n, i) => [n, ...results.map((r) => r.rows[i][1]), results[0].rows[i][2]]);
const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => l[c].length)));
const fmt = (cells) => `| ${cells.map((x, c) => x.padEnd(widths[c])).join(" | ")} |`;
console.log(fmt(header));
console.log(`|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`);
for (const l of lines) console.log(fmt(l));
