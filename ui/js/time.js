// Relative times ("12 s ago") and the 20-second ticker that keeps them fresh.

// Each formatter is made once, when first needed (not while the page's
// modules load): toLocaleString() builds one on every call, which made the
// tooltips of a 50-entry ledger one of the first load's larger costs.
let day;
let exactTime;
const dayFormat = () => (day ??= new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" }));
const exactFormat = () =>
  (exactTime ??= new Intl.DateTimeFormat(undefined, { year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" }));

/** "just now", "42 s ago", "3 min ago", "2 h ago", or a date for older times. */
export function relative(iso, now = Date.now()) {
  if (!iso) return "never";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "unknown";
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s} s ago`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ago`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ago`;
  return dayFormat().format(then);
}

/** Exact local time for a tooltip. */
export function exact(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : exactFormat().format(d);
}

/** Call `fn` every 20 s (relative times drift otherwise). */
export function every20s(fn) {
  return setInterval(fn, 20_000);
}
