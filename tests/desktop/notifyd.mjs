// A notification server of the tests' own: it owns org.freedesktop.Notifications
// on the session bus and answers the freedesktop Desktop Notifications spec 1.2
// as a desktop's server does, so the app talks to it exactly as it would to
// GNOME's or dunst's. What a person would do with a bubble — press one of its
// buttons, dismiss it — the test does through `press` and `dismiss`, and the
// app hears the very signals a real server sends. It records; it asserts
// nothing (that is the tests' job), and it shows nothing on the screen.
//
// Unlike a desktop's server, nothing here expires by itself: a notification
// stays until the app closes it or the test acts (`expire` when a test wants
// reason 1), so no assertion races a timer.

import { dbus, own, plain, sessionBus } from "./bus.mjs";

const { Interface } = dbus.interface;

export const NAME = "org.freedesktop.Notifications";
export const PATH = "/org/freedesktop/Notifications";

/** NotificationClosed's reasons (spec 1.2). */
export const Reason = Object.freeze({ EXPIRED: 1, DISMISSED: 2, CLOSED: 3, UNDEFINED: 4 });

/** What every server here advertises; "actions" is added unless `actions: false`. */
const BASIC_CAPABILITIES = ["body", "icon-static", "persistence"];

/** The spec's flat action list, [key, label, key, label, …], as [{ key, label }]. */
export function parseActions(list) {
  const actions = [];
  for (let i = 0; i + 1 < list.length; i += 2) actions.push({ key: list[i], label: list[i + 1] });
  return actions;
}

/** The bus object: each method hands its work to the server. */
class Notifications extends Interface {
  constructor(server) {
    super(NAME);
    this.server = server;
  }
  GetCapabilities() {
    return this.server.capabilities;
  }
  Notify(appName, replacesId, appIcon, summary, body, actions, hints, expireTimeout) {
    return this.server.received({ appName, replacesId, appIcon, summary, body, actions, hints, expireTimeout });
  }
  CloseNotification(id) {
    this.server.closeBy(id, Reason.CLOSED, "app");
  }
  GetServerInformation() {
    return ["local-mcp-test-notifyd", "local-mcp", "1.0", "1.2"];
  }
  NotificationClosed(id, reason) {
    return [id, reason];
  }
  ActionInvoked(id, actionKey) {
    return [id, actionKey];
  }
  ActivationToken(id, token) {
    return [id, token];
  }
}
Notifications.configureMembers({
  methods: {
    GetCapabilities: { outSignature: "as" },
    Notify: { inSignature: "susssasa{sv}i", outSignature: "u" },
    CloseNotification: { inSignature: "u" },
    GetServerInformation: { outSignature: "ssss" },
  },
  signals: {
    NotificationClosed: { signature: "uu" },
    ActionInvoked: { signature: "us" },
    ActivationToken: { signature: "us" },
  },
});

/**
 * A running server. `notifications`: one record per id, in the order they
 * appeared, each `{ id, appName, appIcon, summary, body, actions: [{ key,
 * label }], hints, expireTimeout, replaced, closed }`, where `replaced` counts
 * the Notify calls that updated it in place and `closed` is null while shown,
 * then `{ reason, by: "app" | "press" | "dismiss" | "expire", at }`. `calls`:
 * every Notify call as received, with the id it answered. `events`: every
 * signal sent, in order (`{ signal, id, reason | actionKey | token, at }`).
 */
class Notifyd {
  constructor(bus, capabilities, activationToken) {
    this.bus = bus;
    this.capabilities = capabilities;
    this.activationToken = activationToken;
    this.notifications = [];
    this.calls = [];
    this.events = [];
    this.nextId = 1;
    this.waiters = new Set();
    this.object = new Notifications(this);
  }

  /** The record of `id` (shown or closed), or undefined. */
  get(id) {
    return this.notifications.find((n) => n.id === id);
  }

  /** The notifications still shown. */
  get shown() {
    return this.notifications.filter((n) => !n.closed);
  }

  received(call) {
    const record = {
      appName: call.appName,
      appIcon: call.appIcon,
      summary: call.summary,
      body: call.body,
      actions: parseActions(call.actions),
      hints: plain(call.hints),
      expireTimeout: call.expireTimeout,
    };
    // replaces_id updates a notification still shown in place, under the same
    // id; one already gone gets a new id, as GNOME Shell's server does.
    const old = call.replacesId ? this.get(call.replacesId) : undefined;
    let id;
    if (old && !old.closed) {
      Object.assign(old, record, { replaced: old.replaced + 1 });
      id = old.id;
    } else {
      id = this.nextId++;
      this.notifications.push({ id, ...record, replaced: 0, closed: null });
    }
    this.calls.push({ ...record, replacesId: call.replacesId, id, at: Date.now() });
    this.changed();
    return id;
  }

  /**
   * Close `id` with `reason` and say so on the bus. A CloseNotification for
   * an id that is gone is answered without an error and without a signal, as
   * GNOME Shell's server does (the spec's "empty error" is not what apps meet).
   */
  closeBy(id, reason, by) {
    const n = this.get(id);
    if (!n || n.closed) return false;
    n.closed = { reason, by, at: Date.now() };
    this.signal("NotificationClosed", id, reason);
    this.changed();
    return true;
  }

  /** A notification still shown, or an error naming what there is instead. */
  shownOne(id, doing) {
    const n = this.get(id);
    if (!n) throw new Error(`cannot ${doing} notification ${id}: there is none (${this.describe()})`);
    if (n.closed) throw new Error(`cannot ${doing} notification ${id}: already closed by ${n.closed.by} (reason ${n.closed.reason})`);
    return n;
  }

  /**
   * Press the button `actionKey` ("default" is the bubble itself) of
   * notification `id`: ActionInvoked, then — unless the notification asked
   * to stay (hint "resident"), or `keep` is set (a server that keeps it, in
   * its list or history) — NotificationClosed with reason 2, as a
   * desktop server does once a button is pressed. With `activationToken`
   * (an option of startNotifyd) ActivationToken comes first, as GNOME
   * Shell sends it for the app to raise its window with.
   */
  press(id, actionKey, { keep = false } = {}) {
    const n = this.shownOne(id, `press "${actionKey}" on`);
    if (!this.capabilities.includes("actions")) throw new Error(`cannot press "${actionKey}": this server does not advertise "actions", so it shows no buttons`);
    if (!n.actions.some((a) => a.key === actionKey)) {
      throw new Error(`notification ${id} ("${n.summary}") has no action "${actionKey}"; it has ${JSON.stringify(n.actions)}`);
    }
    if (this.activationToken) this.signal("ActivationToken", id, `local-mcp-test-notifyd-${id}-${actionKey}`);
    this.signal("ActionInvoked", id, actionKey);
    if (n.hints.resident !== true && !keep) this.closeBy(id, Reason.DISMISSED, "press");
    else this.changed();
  }

  /** Dismiss notification `id` as a person closing the bubble does: NotificationClosed, reason 2. */
  dismiss(id) {
    this.shownOne(id, "dismiss");
    this.closeBy(id, Reason.DISMISSED, "dismiss");
  }

  /** Let notification `id` time out: NotificationClosed, reason 1. */
  expire(id) {
    this.shownOne(id, "expire");
    this.closeBy(id, Reason.EXPIRED, "expire");
  }

  signal(name, ...args) {
    const detail = { ActionInvoked: "actionKey", ActivationToken: "token", NotificationClosed: "reason" }[name];
    // Broadcast, not sent to the app alone as GNOME Shell does: dbus-monitor and other listeners see them too.
    this.events.push({ signal: name, id: args[0], [detail]: args[1], at: Date.now() });
    this.object[name](...args);
  }

  /** The first notification `predicate` accepts (shown or closed), once there is one; an error naming `what` after `timeout` ms. */
  waitFor(predicate, what, timeout = 20000) {
    const found = this.notifications.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = {
        check: () => {
          const hit = this.notifications.find(predicate);
          if (hit) waiter.end(() => resolve(hit));
        },
        fail: (why) => waiter.end(() => reject(new Error(`${why} waiting for ${what}; the notification server has ${this.describe()}`))),
        end: (settle) => {
          this.waiters.delete(waiter);
          clearTimeout(timer);
          settle();
        },
      };
      const timer = setTimeout(() => waiter.fail(`timed out after ${timeout} ms`), timeout);
      this.waiters.add(waiter);
    });
  }

  changed() {
    for (const w of [...this.waiters]) w.check();
  }

  /** What was received, for an error message. */
  describe() {
    if (!this.notifications.length) return "received no notification";
    return this.notifications
      .map((n) => `#${n.id} "${n.summary}" / "${n.body}" actions ${JSON.stringify(n.actions.map((a) => a.key))}${n.closed ? ` closed by ${n.closed.by}` : ""}`)
      .join("; ");
  }

  /** Give the name back (another server may take it) and leave the bus. */
  async stop() {
    for (const w of [...this.waiters]) w.fail("the notification server stopped");
    try {
      await this.bus.releaseName(NAME);
      this.bus.unexport(PATH, this.object);
    } finally {
      this.bus.disconnect();
    }
  }
}

/**
 * Start a notification server on the session bus; resolves once it owns the
 * name. `actions: false` leaves "actions" out of its capabilities (a server
 * that shows no buttons); `capabilities` replaces the whole list;
 * `activationToken: true` sends ActivationToken before each ActionInvoked.
 */
export async function startNotifyd({ actions = true, capabilities, activationToken = false } = {}) {
  const bus = sessionBus();
  const caps = capabilities ?? (actions ? ["actions", ...BASIC_CAPABILITIES] : BASIC_CAPABILITIES);
  const server = new Notifyd(bus, caps, activationToken);
  bus.export(PATH, server.object);
  await own(bus, NAME, "notification server");
  return server;
}
