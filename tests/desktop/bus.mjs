// What the desktop tests' own D-Bus services (notifyd.mjs, panel.mjs) share:
// a connection to the test's private session bus, and D-Bus values turned
// into plain JavaScript for assertions and error messages.

import dbus from "dbus-next";

export { dbus };

/** A new connection to the session bus (each service its own: stopping one leaves the others), or an error saying how to get one. */
export function sessionBus() {
  if (!process.env.DBUS_SESSION_BUS_ADDRESS) throw new Error("no session bus (DBUS_SESSION_BUS_ADDRESS is unset): run the tests under dbus-run-session");
  return dbus.sessionBus();
}

/** A D-Bus value as plain JavaScript: variants unwrapped, 64-bit integers as numbers when they fit. */
export function plain(value) {
  if (value instanceof dbus.Variant) return plain(value.value);
  if (typeof value === "bigint") return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === "object" && !Buffer.isBuffer(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

/** Own `name` on `bus` at once, or an error saying who has it (DO_NOT_QUEUE: never wait in line behind another owner). */
export async function own(bus, name, what) {
  const reply = await bus.requestName(name, dbus.NameFlag.DO_NOT_QUEUE);
  if (reply !== dbus.RequestNameReply.PRIMARY_OWNER) {
    bus.disconnect();
    throw new Error(`could not own ${name} (reply ${reply}): another ${what} runs on this session bus`);
  }
}
