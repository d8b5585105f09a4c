// The phone (issue 43), both sides of it.
//
// On the computer: the "Phone" panel starts and stops the phone listener on
// an address the person picks, makes a one-time pairing link shown as a QR
// code beside the listener's certificate fingerprint, and lists the paired
// phones to rename or revoke them, with the wrong codes tried.
//
// On the phone (the page served by that listener, over https): a pairing
// link's code rides in the URL fragment (never sent or logged); it is
// exchanged once for the phone's own credential (an HttpOnly cookie) and
// taken out of the address bar. The page then runs as it does on the
// computer, minus what a phone may not reach (the listener refuses those
// routes whatever the page does; the page just does not offer them).

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { exact, relative } from "./time.js";

/** Served by the phone listener (the computer's own page is plain http on loopback). */
export const onPhone = () => location.protocol === "https:";

/** A name for this phone from its browser ("Android phone", "iPhone"), which the person can change on the computer. */
function guessName() {
  const ua = navigator.userAgent;
  if (/iPhone/.test(ua)) return "iPhone";
  if (/iPad/.test(ua)) return "iPad";
  if (/Android/.test(ua)) return "Android phone";
  return "Phone";
}

/**
 * On the phone: pair if the address carries a code, then say whether this
 * phone is paired. Resolves to null when it is, or to what to tell the person.
 */
export async function pairThisPhone() {
  const code = new URLSearchParams(location.hash.slice(1)).get("pair");
  if (code) {
    // Out of the address bar (and of history) whatever happens: it works once.
    history.replaceState(null, "", location.pathname);
    try {
      await api.pair(code, guessName());
    } catch (err) {
      return err.status === 429 ? err.message : `${err.message}`;
    }
  }
  try {
    await api.phoneMe();
    document.body.dataset.phone = "paired";
    return null;
  } catch (err) {
    if (err.status === 401) return "This phone is not paired with local-mcp (or was revoked). On the computer, open Phone → Pair a phone, and scan the code.";
    return err.message;
  }
}

// ---- the computer's panel ---------------------------------------------------

let last = null;
let pairingTimer = null;
/** While a pairing code is shown: the devices paired before it, and the poll that sees a new one. */
let pairingSince = null;
let pairingPoll = null;

function endPairing() {
  clearTimeout(pairingTimer);
  clearInterval(pairingPoll);
  pairingSince = null;
  $("phone-pairing").hidden = true;
}

function renderState(s) {
  last = s;
  const select = $("phone-address");
  const chosen = select.value;
  select.replaceChildren(...s.addresses.map((a) => el("option", null, a)));
  if (s.url) select.value = new URL(s.url).hostname.replace(/^\[|\]$/g, "");
  else if (s.addresses.includes(chosen)) select.value = chosen;
  select.disabled = s.running;
  $("phone-start").hidden = s.running;
  $("phone-start").disabled = !s.addresses.length;
  $("phone-stop").hidden = !s.running;
  $("phone-pair").hidden = !s.running;
  if (!s.running) endPairing();
  $("phone-state").textContent = s.running
    ? `Listening at ${s.url} (certificate ${s.fingerprint.slice(0, 23)}…).`
    : s.addresses.length
      ? "Off."
      : "Off: this computer has no network address a phone could reach.";
  // A phone that paired with the code shown: the code is spent, the phone is listed.
  const fresh = pairingSince && s.devices.find((d) => !pairingSince.has(d.id));
  if (fresh) {
    endPairing();
    $("phone-state").textContent = `Paired: ${fresh.name}. ${$("phone-state").textContent}`;
  }
  const list = $("phone-devices");
  list.replaceChildren(...s.devices.map(deviceRow));
  $("phone-devices-empty").hidden = s.devices.length > 0;
  const refused = $("phone-refused");
  refused.hidden = !s.refused_codes;
  if (s.refused_codes) {
    const lastOne = s.last_refused ? ` The last from ${s.last_refused.address}, ${relative(s.last_refused.at)}.` : "";
    const many = s.locked_addresses === 1 ? "1 address is" : `${s.locked_addresses} addresses are`;
    const locked = s.locked_until ? ` ${many} locked out of pairing until ${exact(s.locked_until)}; no other address is, so your phone can still pair.` : "";
    refused.textContent = `${s.refused_codes} wrong pairing code${s.refused_codes === 1 ? "" : "s"} tried.${lastOne}${locked}`;
  }
}

function deviceRow(d) {
  const li = el("li", "phone__device");
  li.dataset.device = d.id;
  const name = el("span", "phone__name", d.name);
  const seen = d.last_seen_at ? `seen ${relative(d.last_seen_at)}${d.last_address ? ` from ${d.last_address}` : ""}` : "never seen";
  const meta = el("span", "hint", ` — paired ${relative(d.created_at)}, ${seen}`);
  const rename = el("button", "btn btn--small btn--ghost", "Rename");
  rename.type = "button";
  rename.addEventListener("click", async () => {
    const name = prompt("A name for this phone", d.name);
    if (name === null || !name.trim()) return;
    try {
      await api.renameDevice(d.id, name);
      await refresh();
    } catch (err) {
      $("phone-state").textContent = err.message;
    }
  });
  const revoke = el("button", "btn btn--small btn--ghost", "Revoke");
  revoke.type = "button";
  revoke.addEventListener("click", async () => {
    if (!confirm(`Revoke ${d.name}? It is refused from its next request; pair it again to use it.`)) return;
    try {
      await api.revokeDevice(d.id);
      await refresh();
    } catch (err) {
      $("phone-state").textContent = err.message;
    }
  });
  li.append(name, meta, rename, revoke);
  return li;
}

async function refresh() {
  try {
    renderState(await api.phone());
  } catch (err) {
    $("phone-state").textContent = err.message;
  }
}

async function showCode() {
  endPairing();
  try {
    const c = await api.phoneCode();
    $("phone-qr").src = c.qr;
    $("phone-link").textContent = c.link;
    $("phone-fingerprint").textContent = c.fingerprint;
    $("phone-expires").textContent = `until ${exact(c.expires_at)}`;
    $("phone-pairing").hidden = false;
    // Gone when it expires, or once a phone paired with it (looked for every 2 s meanwhile).
    pairingSince = new Set((last?.devices ?? []).map((d) => d.id));
    const left = Math.max(0, Date.parse(c.expires_at) - Date.now());
    pairingTimer = setTimeout(endPairing, left);
    pairingPoll = setInterval(refresh, 2000);
  } catch (err) {
    $("phone-state").textContent = err.message;
  }
  refresh();
}

export function initPhonePanel() {
  if (onPhone()) return;
  const details = $("phone-details");
  details.addEventListener("toggle", () => details.open && refresh());
  // Asked for by address (`/#phone`: the tray's "Phone…"): open there.
  const openIfAsked = () => {
    if (location.hash !== "#phone") return;
    details.open = true;
    details.scrollIntoView({ block: "start" });
    $("phone-address").focus();
  };
  window.addEventListener("hashchange", openIfAsked);
  openIfAsked();
  $("phone-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      renderState(await api.phoneStart($("phone-address").value));
    } catch (err) {
      $("phone-state").textContent = err.message;
    }
  });
  $("phone-stop").addEventListener("click", async () => {
    try {
      renderState(await api.phoneStop());
    } catch (err) {
      $("phone-state").textContent = err.message;
    }
  });
  $("phone-pair").addEventListener("click", showCode);
  // A phone pairing or revoked elsewhere shows the next time the panel is looked at; while open, each minute.
  setInterval(() => details.open && last && refresh(), 60_000);
}
