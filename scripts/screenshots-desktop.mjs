// The README's desktop screenshots, taken from the built app as real desktop
// programs draw it: run by scripts/screenshots-desktop.sh, which starts Xvfb,
// a private D-Bus session, Debian's xfce4-notifyd (a notification server that
// draws action buttons) and trayer (an XEmbed tray: with no
// StatusNotifierWatcher on the bus, libayatana-appindicator falls back to an
// XEmbed icon, whose menu is the app's own GTK menu).
//
//   node scripts/screenshots-desktop.mjs OUT_DIR WORK_DIR
//
// Starts the app (the link in LOCAL_MCP_SCREENSHOTS_APP the shell script
// makes, else the built binary) hidden with its folders under WORK_DIR, has an agent ask a
// question with options (get_user_request with a report and options, as
// tests/desktop/answer.test.mjs does), shoots the notification
// (OUT_DIR/notification-question.png), then right-clicks the tray icon and
// shoots its menu (OUT_DIR/tray-menu.png) — with the "Needs you" submenu
// opened when the menu has one — and, through its Reply…, quick add at the
// question (OUT_DIR/quick-add-answer.png). Every wait is bounded and names what it
// waited for; the app is ended before this returns.

import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";

import { agentCall, app as builtApp, appSetting, launchApp, said, sleep, until } from "../tests/desktop/harness.mjs";
import { dbus, sessionBus } from "../tests/desktop/bus.mjs";
import { parseLayout } from "../tests/desktop/panel.mjs";

const [outDir, work] = process.argv.slice(2).map((p) => resolve(p));
if (!outDir || !work) {
  console.error("usage: node scripts/screenshots-desktop.mjs OUT_DIR WORK_DIR");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
/** The app: the link the shell script made (see there why), or the built binary. */
const app = process.env.LOCAL_MCP_SCREENSHOTS_APP ?? builtApp;

/** Blank space kept around what a screenshot shows, in pixels. */
const MARGIN = 20;

const log = (line) => console.log(`screenshots-desktop: ${line}`);

/** Run a tool; its stdout, or an error with what it said. */
function run(cmd, args, timeout = 15000) {
  const out = spawnSync(cmd, args, { encoding: "utf8", timeout });
  if (out.error) throw new Error(`${cmd} ${args.join(" ")}: ${out.error.message}`);
  if (out.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${out.status}: ${out.stderr.trim()}`);
  return out.stdout;
}

/** The shown top-level windows of X class `cls`: { id, x, y, width, height }. */
function shown(cls) {
  const out = spawnSync("xdotool", ["search", "--onlyvisible", "--class", cls], { encoding: "utf8", timeout: 10000 });
  const ids = (out.stdout ?? "").split("\n").filter(Boolean);
  return ids.flatMap((id) => {
    const geo = spawnSync("xdotool", ["getwindowgeometry", "--shell", id], { encoding: "utf8", timeout: 10000 }).stdout ?? "";
    const v = Object.fromEntries(geo.split("\n").filter((l) => l.includes("=")).map((l) => l.split("=")));
    return v.WIDTH ? [{ id, x: Number(v.X), y: Number(v.Y), width: Number(v.WIDTH), height: Number(v.HEIGHT) }] : [];
  });
}

/** `list`, or null when it is empty (an answer `until` keeps waiting on). */
const some = (list) => (list.length ? list : null);

/** The screen's size. */
function screen() {
  const [width, height] = run("xdotool", ["getdisplaygeometry"]).trim().split(/\s+/).map(Number);
  return { width, height };
}

/**
 * Shoot the whole screen and keep the box around `windows` (with a margin),
 * as `name` in the output folder; an error if what is kept is nearly one
 * colour (nothing was drawn there).
 */
function shoot(name, windows) {
  const { width, height } = screen();
  const left = Math.max(0, Math.min(...windows.map((w) => w.x)) - MARGIN);
  const top = Math.max(0, Math.min(...windows.map((w) => w.y)) - MARGIN);
  const right = Math.min(width, Math.max(...windows.map((w) => w.x + w.width)) + MARGIN);
  const bottom = Math.min(height, Math.max(...windows.map((w) => w.y + w.height)) + MARGIN);
  const full = join(work, `full-${name}`);
  const file = join(outDir, name);
  run("import", ["-window", "root", full], 30000);
  run("convert", [full, "-crop", `${right - left}x${bottom - top}+${left}+${top}`, "+repage", "-strip", file], 30000);
  const colours = Number(run("identify", ["-format", "%k", file]).trim());
  if (!(colours > 20)) throw new Error(`${file} has ${colours} colours: nothing was drawn where the windows are`);
  log(`${file}: ${right - left}x${bottom - top} at +${left}+${top}, ${colours} colours`);
}

/**
 * The app's tray menu as libayatana exports it on the bus (com.canonical.dbusmenu,
 * which it serves from the same GTK menu it pops up): the parsed layout, or
 * null (with a note) if it cannot be read. Only used to find "Needs you".
 */
async function readMenu(pid) {
  let bus;
  const within = (p, ms) => Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`no answer in ${ms} ms`)))]);
  try {
    bus = sessionBus();
    const call = (destination, path, iface, member, signature = "", body = []) =>
      within(bus.call(new dbus.Message({ destination, path, interface: iface, member, signature, body })), 3000);
    const names = await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames");
    for (const name of names.body[0].filter((n) => n.startsWith(":"))) {
      try {
        const owner = await call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", [name]);
        if (owner.body[0] !== pid) continue;
        const xml = (await call(name, "/org/ayatana/NotificationItem", "org.freedesktop.DBus.Introspectable", "Introspect")).body[0];
        for (const [, node] of xml.matchAll(/<node name="([^"]+)"/g)) {
          const layout = await call(name, `/org/ayatana/NotificationItem/${node}/Menu`, "com.canonical.dbusmenu", "GetLayout", "iias", [0, -1, []]);
          return parseLayout(layout.body[1]);
        }
      } catch {
        // not this connection
      }
    }
    log("note: the tray menu is not on the bus; shooting it without opening submenus");
    return null;
  } catch (e) {
    log(`note: could not read the tray menu from the bus (${e.message}); shooting it without opening submenus`);
    return null;
  } finally {
    bus?.disconnect();
  }
}

/** Entries GTK's keyboard navigation stops at (it skips separators, hidden and disabled ones). */
const selectable = (entries) => entries.filter((e) => e.visible && e.enabled && e.type !== "separator");

const key = (...keys) => {
  for (const k of keys) {
    run("xdotool", ["key", k]);
    spawnSync("sleep", ["0.15"]);
  }
};

const runs = [];
let failed = false;
try {
  const { base, env } = await appSetting(work, "app");
  env.HOME = join(work, "app", "home");
  env.TMPDIR = join(work, "app", "tmp");
  // The question stays open while it is shot (the default wait is 10 s).
  env.DEFAULT_WAIT_SECONDS = "600";
  for (const dir of [env.HOME, env.TMPDIR]) mkdirSync(dir, { recursive: true });
  const started = launchApp(app, ["--hidden"], env);
  runs.push(started);
  const waitFor = (fn, what, timeout = 30000) =>
    until(fn, what, timeout).catch((e) => {
      throw new Error(e.message + said(started), { cause: e });
    });
  await waitFor(() => fetch(`${base}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok), `the app's engine at ${base}`);
  await waitFor(() => started.output.includes("the desktop toolkit and plugins are up"), "the app's toolkit");
  // The icon, docked in trayer: the app's only shown window while it is hidden.
  const [icon] = await waitFor(() => some(shown("local-mcp")), "the app's tray icon in trayer");
  log(`tray icon at ${icon.x},${icon.y} (${icon.width}x${icon.height})`);

  // An agent asks; its call waits for the answer (ended with the app).
  const asked = agentCall(base, { agent_id: "claude-code", report: "Tests pass.\nMerge the branch now?", options: ["Merge", "Wait", "Rebase first"] }, "claude-code");
  asked.catch(() => {});
  const [bubble] = await waitFor(() => some(shown("xfce4-notifyd").filter((w) => w.height > 40)), "xfce4-notifyd to show the question's notification", 20000);
  await sleep(1000); // drawn
  shoot("notification-question.png", [bubble]);
  // Out of the way of the menu (the daemon still holds it; the app is not told).
  run("xdotool", ["windowunmap", bubble.id]);

  await waitFor(async () => {
    const status = await (await fetch(`${base}/api/status`)).json();
    return status.agents?.some((a) => a.agent_id === "claude-code" && a.asking);
  }, "the question in the app's status");
  await sleep(1500); // the icon and the menu follow the status

  const menu = await readMenu(started.child.pid);
  const needs = menu && selectable(menu.children).find((e) => /needs you/i.test(e.label));
  const before = new Set(shown("local-mcp").map((w) => w.id));
  run("xdotool", ["mousemove", String(icon.x + Math.floor(icon.width / 2)), String(icon.y + Math.floor(icon.height / 2)), "click", "3"]);
  await waitFor(() => shown("local-mcp").some((w) => !before.has(w.id) && w.height > 50), "the tray menu to open (right click on the icon)", 10000);
  await sleep(500);
  if (needs) {
    // Keyboard, as a person could: Down to the entry, Right into its submenu
    // (and into its first agent's, when that is a submenu too).
    const count = () => shown("local-mcp").length;
    const opened = count();
    key(...Array(selectable(menu.children).indexOf(needs) + 1).fill("Down"), "Right");
    try {
      await until(() => count() > opened, `"${needs.label}" to open`, 5000);
      if (selectable(needs.children)[0]?.children.length) {
        key("Right");
        await until(() => count() > opened + 1, `the first entry under "${needs.label}" to open`, 5000);
      }
    } catch (e) {
      log(`note: ${e.message.split(" (last")[0]}; shooting what is open`);
    }
    await sleep(500);
  } else if (menu) {
    log('note: this build\'s tray menu has no "Needs you" entry; shooting the top-level menu');
  }
  shoot("tray-menu.png", shown("local-mcp"));
  // Reply…, the agent's last entry: quick add opens at the question, with every answer it suggested.
  const agentEntry = needs && selectable(needs.children)[0];
  if (agentEntry?.children.length) {
    key(...Array(selectable(agentEntry.children).length - 1).fill("Down"), "Return");
    const [quick] = await waitFor(() => some(shown("local-mcp").filter((w) => w.width >= 400 && w.height >= 250)), "quick add to open at the question (Reply…)", 15000);
    await sleep(2000); // its page drawn and the question fetched
    shoot("quick-add-answer.png", [quick]);
    key("Escape");
  } else {
    key("Escape", "Escape", "Escape");
  }
} catch (e) {
  failed = true;
  console.error(`screenshots-desktop: ${e.message}`);
} finally {
  for (const r of runs) {
    if (r.exited) continue;
    r.child.kill("SIGTERM"); // answered like Quit
    const gone = await until(() => r.exited, "the app to quit", 15000).then(() => true, () => false);
    if (!gone) r.child.kill("SIGKILL");
  }
}
process.exit(failed ? 1 : 0);
