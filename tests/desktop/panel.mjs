// A desktop panel of the tests' own: it owns org.kde.StatusNotifierWatcher on
// the session bus, so an app built on libayatana-appindicator (Tauri's tray on
// Linux) registers its tray item with it as it would with KDE's or GNOME's
// AppIndicator extension, and then reads that item as a panel's host does —
// its org.kde.StatusNotifierItem properties and its menu over
// com.canonical.dbusmenu — and clicks menu entries the way a person's click
// reaches the app. It draws nothing and asserts nothing.
//
// Start it before the app. libayatana also watches for the watcher's name to
// appear and registers then (a panel started after the app gets its item at
// once), but until then it falls back to an XEmbed status icon, which no test
// can read.

import { join } from "node:path";

import { dbus, own, plain, sessionBus } from "./bus.mjs";

const { Interface, ACCESS_READ } = dbus.interface;

export const WATCHER = "org.kde.StatusNotifierWatcher";
export const WATCHER_PATH = "/StatusNotifierWatcher";
const ITEM = "org.kde.StatusNotifierItem";
const MENU = "com.canonical.dbusmenu";
/** The item's signals a host follows (libayatana adds its own label's). */
const ITEM_SIGNALS = ["NewTitle", "NewIcon", "NewAttentionIcon", "NewOverlayIcon", "NewToolTip", "NewStatus", "XAyatanaNewLabel"];

/** The watcher object; registrations go to the panel, which knows who called. */
class Watcher extends Interface {
  constructor(panel) {
    super(WATCHER);
    this.panel = panel;
  }
  get RegisteredStatusNotifierItems() {
    return [...this.panel.items.keys()];
  }
  get IsStatusNotifierHostRegistered() {
    return true;
  }
  get ProtocolVersion() {
    return 0;
  }
  // Answered in Panel.onCall, which sees the caller's bus name; declared here for introspection.
  RegisterStatusNotifierItem() {}
  RegisterStatusNotifierHost() {}
  StatusNotifierItemRegistered(key) {
    return key;
  }
  StatusNotifierItemUnregistered(key) {
    return key;
  }
  StatusNotifierHostRegistered() {}
}
Watcher.configureMembers({
  properties: {
    RegisteredStatusNotifierItems: { signature: "as", access: ACCESS_READ },
    IsStatusNotifierHostRegistered: { signature: "b", access: ACCESS_READ },
    ProtocolVersion: { signature: "i", access: ACCESS_READ },
  },
  methods: {
    RegisterStatusNotifierItem: { inSignature: "s" },
    RegisterStatusNotifierHost: { inSignature: "s" },
  },
  signals: {
    StatusNotifierItemRegistered: { signature: "s" },
    StatusNotifierItemUnregistered: { signature: "s" },
    StatusNotifierHostRegistered: {},
  },
});

/** A dbusmenu label as shown: "_" marks the access key, "__" is an underscore. */
const shownLabel = (label) => label.replace(/__|_/g, (m) => (m === "__" ? "_" : ""));

/** GetLayout's (ia{sv}av) as { id, label, enabled, visible, type, toggleType, toggleState, children, … }. */
export function parseLayout([id, properties, children]) {
  const p = plain(properties);
  return {
    id,
    label: shownLabel(p.label ?? ""),
    rawLabel: p.label ?? "",
    type: p.type ?? "standard",
    enabled: p.enabled ?? true,
    visible: p.visible ?? true,
    toggleType: p["toggle-type"] ?? "",
    toggleState: p["toggle-state"] ?? -1,
    childrenDisplay: p["children-display"] ?? "",
    shortcut: p.shortcut ?? null,
    children: children.map((c) => parseLayout(c instanceof dbus.Variant ? c.value : c)),
  };
}

/** Every entry below `tree`, depth first, each with `path`: the labels leading to it. */
export function flatten(tree, path = []) {
  return tree.children.flatMap((c) => {
    const here = [...path, c.label];
    return [{ ...c, path: here }, ...flatten(c, here)];
  });
}

/** The one entry `target` names: its id (a number), its label (a string) or a RegExp on the label; an error listing the menu otherwise. */
export function findEntry(tree, target) {
  const all = flatten(tree);
  const hits = all.filter((e) => (typeof target === "number" ? e.id === target : target instanceof RegExp ? target.test(e.label) : e.label === target));
  if (hits.length === 1) return hits[0];
  const listing = all.filter((e) => e.type !== "separator").map((e) => `${e.id} "${e.path.join(" ▸ ")}"`).join(", ");
  throw new Error(`${hits.length ? "more than one" : "no"} menu entry matches ${target}: the menu has ${listing}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Call `read` until `accept` takes what it returned, waking on `wake` (a
 * promise-maker resolved by the next relevant signal) or every 250 ms;
 * an error naming `what` and the last value after `timeout` ms.
 */
async function readUntil(read, accept, what, timeout, wake) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await read();
      if (accept(last)) return last;
    } catch (e) {
      last = e; // not there yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what} (last read: ${last instanceof Error ? last.message : JSON.stringify(last)?.slice(0, 1500)})`);
    await Promise.race([wake(), sleep(250)]);
  }
}

/** One app's tray item, as the panel sees it. */
class TrayItem {
  constructor(panel, busName, path) {
    this.panel = panel;
    this.busName = busName;
    this.path = path;
    this.key = `${busName}${path}`;
    this.gone = false;
    /** The item's and its menu's signals, in order: `{ signal, args, at }`. */
    this.events = [];
    this.wakers = new Set();
  }

  /** Connect to the item and follow its signals (a panel repaints on them): once, or again after a failure. */
  attach() {
    this.attaching ??= (async () => {
      const object = await this.panel.bus.getProxyObject(this.busName, this.path);
      const item = object.getInterface(ITEM);
      if (!item) throw new Error(`${this.key} does not implement ${ITEM}`);
      for (const name of ITEM_SIGNALS) if (item.$signals.some((s) => s.name === name)) item.on(name, (...args) => this.heard(name, args));
      this.props = object.getInterface("org.freedesktop.DBus.Properties");
    })().catch((e) => {
      this.attaching = null;
      throw e;
    });
    return this.attaching;
  }

  heard(signal, args) {
    this.events.push({ signal, args: plain(args), at: Date.now() });
    for (const wake of [...this.wakers]) wake();
  }

  /** A promise the next signal from the item or its menu resolves. */
  next() {
    return new Promise((resolve) => {
      const wake = () => {
        this.wakers.delete(wake);
        resolve();
      };
      this.wakers.add(wake);
    });
  }

  /** Every org.kde.StatusNotifierItem property, plain: { Id, Status, Title, IconName, IconThemePath, Menu, … }. */
  async properties() {
    await this.attach();
    return plain(await this.props.GetAll(ITEM));
  }

  /** The image file a panel would draw: IconName when it is a path (as Tauri's tray gives it), else IconName.png in IconThemePath. */
  async iconFile() {
    const { IconName, IconThemePath } = await this.properties();
    return IconName.startsWith("/") ? IconName : join(IconThemePath, `${IconName}.png`);
  }

  /** The menu's dbusmenu interface (at the item's Menu path), following its signals: once, or again after a failure. */
  menuInterface() {
    this.menuProxy ??= (async () => {
      const { Menu } = await this.properties();
      if (!Menu || Menu === "/") throw new Error(`the item ${this.key} exports no menu`);
      const menu = (await this.panel.bus.getProxyObject(this.busName, Menu)).getInterface(MENU);
      menu.on("LayoutUpdated", (...args) => this.heard("LayoutUpdated", args));
      menu.on("ItemsPropertiesUpdated", (...args) => this.heard("ItemsPropertiesUpdated", args));
      return menu;
    })().catch((e) => {
      this.menuProxy = null;
      throw e;
    });
    return this.menuProxy;
  }

  /** The whole menu as a host reads it before showing it: AboutToShow, then GetLayout(0, -1, []). */
  async menu() {
    const menu = await this.menuInterface();
    await menu.AboutToShow(0);
    const [, layout] = await menu.GetLayout(0, -1, []);
    return parseLayout(layout);
  }

  /** The menu once `accept(tree)` holds (re-read on each menu signal); an error naming `what` after `timeout` ms. */
  waitForMenu(accept, what, timeout = 20000) {
    return readUntil(() => this.menu(), accept, what, timeout, () => this.next());
  }

  /** The properties once `accept(properties)` holds; an error naming `what` after `timeout` ms. */
  waitForProperties(accept, what, timeout = 20000) {
    return readUntil(() => this.properties(), accept, what, timeout, () => this.next());
  }

  /**
   * Click the entry `target` names (see findEntry) as a panel passes a
   * person's click on: Event(id, "clicked", 0, time). Refuses what a person
   * could not click (disabled, hidden, a separator, a submenu's title).
   * Returns the entry as it was before the click.
   */
  async click(target) {
    const entry = findEntry(await this.menu(), target);
    const what = `"${entry.path.join(" ▸ ")}" (id ${entry.id})`;
    if (entry.type === "separator" || !entry.enabled || !entry.visible) throw new Error(`cannot click ${what}: it is ${entry.type === "separator" ? "a separator" : !entry.enabled ? "disabled" : "hidden"}`);
    if (entry.children.length || entry.childrenDisplay === "submenu") throw new Error(`cannot click ${what}: it opens a submenu`);
    const menu = await this.menuInterface();
    await menu.Event(entry.id, "clicked", new dbus.Variant("i", 0), Math.floor(Date.now() / 1000) >>> 0);
    return entry;
  }

  /** Resolves once the item's app has left the bus (its registration dropped); an error after `timeout` ms. */
  waitGone(timeout = 20000) {
    return readUntil(
      () => this.gone,
      (g) => g,
      `the tray item ${this.key} to leave the bus`,
      timeout,
      () => this.panel.next(),
    );
  }
}

/**
 * A running panel: `items` (Map key → TrayItem, only those registered now),
 * `events` (the watcher's signals, in order: `{ signal, key, at }`).
 */
class Panel {
  constructor(bus) {
    this.bus = bus;
    this.items = new Map();
    this.events = [];
    this.wakers = new Set();
    this.watcher = new Watcher(this);
    this.onCall = this.onCall.bind(this);
  }

  /** A promise the next registration or departure resolves. */
  next() {
    return new Promise((resolve) => {
      const wake = () => {
        this.wakers.delete(wake);
        resolve();
      };
      this.wakers.add(wake);
    });
  }

  changed(signal, key) {
    this.events.push({ signal, key, at: Date.now() });
    for (const wake of [...this.wakers]) wake();
  }

  /**
   * RegisterStatusNotifierItem's argument is a bus name or, as libayatana
   * sends it, just an object path meaning "at the caller's own name": the
   * caller's name is needed, and dbus-next hands it to a raw handler only.
   */
  onCall(msg) {
    if (msg.interface !== WATCHER || msg.path !== WATCHER_PATH) return false;
    const reply = () => this.bus.send(dbus.Message.newMethodReturn(msg, "", []));
    if (msg.member === "RegisterStatusNotifierHost") {
      reply();
      return true;
    }
    if (msg.member !== "RegisterStatusNotifierItem") return false;
    const [service] = msg.body;
    const [busName, path] = service.startsWith("/") ? [msg.sender, service] : [service, "/StatusNotifierItem"];
    reply();
    this.register(busName, path);
    return true;
  }

  async register(busName, path) {
    const item = new TrayItem(this, busName, path);
    if (this.items.has(item.key)) return;
    this.items.set(item.key, item);
    // Follow its signals from the start; if it does not answer yet, its first read tries again.
    await item.attach().catch(() => {});
    this.watcher.StatusNotifierItemRegistered(item.key);
    this.changed("StatusNotifierItemRegistered", item.key);
  }

  /** An app left the bus: its items go, as a watcher drops them. */
  ownerChanged(name, oldOwner, newOwner) {
    if (newOwner || !oldOwner) return;
    for (const item of [...this.items.values()]) {
      if (item.busName !== name && item.busName !== oldOwner) continue;
      item.gone = true;
      this.items.delete(item.key);
      this.watcher.StatusNotifierItemUnregistered(item.key);
      this.changed("StatusNotifierItemUnregistered", item.key);
    }
  }

  /**
   * The first registered item whose properties `accept` takes (any item by
   * default), once its properties can be read; an error after `timeout` ms
   * saying what registered meanwhile.
   */
  async waitForItem(timeout = 20000, accept = () => true) {
    const deadline = Date.now() + timeout;
    for (;;) {
      for (const item of this.items.values()) {
        try {
          if (accept(await item.properties(), item)) return item;
        } catch {
          // registered but not answering yet
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const seen = this.events.map((e) => `${e.signal} ${e.key}`).join("; ") || "nothing registered";
        throw new Error(`timed out after ${timeout} ms waiting for a tray item to register with the panel (${seen})`);
      }
      await Promise.race([this.next(), sleep(Math.min(250, left))]);
    }
  }

  /** Give the watcher's name back and leave the bus. */
  async stop() {
    try {
      this.bus.removeMethodHandler(this.onCall);
      await this.bus.releaseName(WATCHER);
      this.bus.unexport(WATCHER_PATH, this.watcher);
    } finally {
      this.bus.disconnect();
    }
  }
}

/** Start a panel on the session bus; resolves once it owns the watcher's name and follows apps leaving. */
export async function startPanel() {
  const bus = sessionBus();
  const panel = new Panel(bus);
  bus.addMethodHandler(panel.onCall);
  bus.export(WATCHER_PATH, panel.watcher);
  const daemon = (await bus.getProxyObject("org.freedesktop.DBus", "/org/freedesktop/DBus")).getInterface("org.freedesktop.DBus");
  daemon.on("NameOwnerChanged", (name, oldOwner, newOwner) => panel.ownerChanged(name, oldOwner, newOwner));
  await own(bus, WATCHER, "panel (StatusNotifierWatcher)");
  panel.watcher.StatusNotifierHostRegistered();
  return panel;
}
