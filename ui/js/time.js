// Relative times ("12 s ago"), durations ("9 min") and the 20-second ticker
// that keeps them fresh.

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

/** How long since `iso`, for "for …": "a few seconds", "42 s", "9 min", "2 h", "3 days". */
export function duration(iso, now = Date.now()) {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return "a while";
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 5) return "a few seconds";
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h`;
  return `${Math.floor(h / 24)} days`;
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
