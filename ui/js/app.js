// Entry module: wires the feature modules together, loads the queue (on
// boot, after a reset, while polling) and shows the state of the connection
// (the strip in the header and the banner). Features live in their modules.

import { api, stopTalking } from "./api.js";
import { initAgents } from "./agents.js";
import { initAsks } from "./asks.js";
import { initAttach } from "./attach.js";
import { composerError, initComposer } from "./composer.js";
import { initTemplates } from "./templates.js";
import { initClients } from "./clients.js";
import { initConnectHelp, initPortNote, loadClients } from "./connect.js";
import { $ } from "./dom.js";
import { connect, disconnect } from "./events.js";
import { initGate, showGate } from "./gate.js";
import { initHeld } from "./held.js";
import { initLedger } from "./ledger.js";
import { initPhonePanel, onPhone, pairThisPhone } from "./phone.js";
import { initQueues } from "./queues.js";
import { initRail } from "./rail.js";
import { initRecoveryNote, initStorageFault } from "./recovery.js";
import { initRefusedNote } from "./refused.js";
import { initSettings, loadSettingsForm } from "./settings.js";
import { initToken, loadToken } from "./token.js";
import { abandonSnapshot, beginSnapshot, load, on, setConn, setReports, state } from "./state.js";

const INITIAL_LEDGER = 50;

/** Why the last load failed, if it did. */
let loadError = null;

/**
 * A load that fails while the stream is live is tried again: nothing else
 * would (the stream only brings changes, and polling runs only without it),
 * and the banner promises a retry. After 3 s, then twice as long each time
 * it fails again, up to 30 s.
 */
const RETRY_LOAD_MS = 3000;
const RETRY_LOAD_MAX_MS = 30_000;
let retryTimer = null;
let retryMs = RETRY_LOAD_MS;

/**
 * The banner says what is wrong now: a failed load, or a dropped live
 * connection. Derived from state, so a late success cannot hide a live problem.
 */
function renderBanner() {
  if (state.stranger) {
    const b = $("banner");
    b.textContent = STRANGER;
    b.hidden = false;
    return;
  }
  const msg = loadError ? `${loadError} Retrying…` : state.conn === "reconnecting" ? "Lost the live connection to local-mcp. Reconnecting…" : null;
  const b = $("banner");
  b.textContent = msg ?? "";
  b.hidden = !msg;
}

const STRANGER =
  "A different program now answers at this address: local-mcp moved (another port?) or stopped, and something else took its place. " +
  "This page has stopped sending it anything. Open local-mcp from its tray, or run `local-mcp-server status`, to find where it runs now.";

/** Another program answers at the page's address: send it nothing more, and say so. */
function initStranger() {
  on("stranger", () => {
    stopTalking(STRANGER);
    disconnect();
    setConn("offline");
    renderBanner();
  });
}

/** Fetch everything the page shows (first load, after a reset, while polling). */
async function reload() {
  const missed = beginSnapshot();
  try {
    const queue = state.queue;
    const [pending, consumed, status, reports] = await Promise.all([api.pending(queue), api.consumed(queue, Math.max(INITIAL_LEDGER, state.consumed.length)), api.status(), api.reports(queue)]);
    if (queue !== state.queue) {
      abandonSnapshot(missed); // switched meanwhile: that queue's load is under way
      return;
    }
    // The reports first: load() replays what arrived meanwhile (reports included) over both.
    setReports(reports.items, queue);
    load({ pending: pending.items, consumed: consumed.items, status }, missed);
    loadError = null;
    retryMs = RETRY_LOAD_MS;
  } catch (err) {
    abandonSnapshot(missed);
    if (err.status === 401) return; // the token gate handles it
    loadError = err.message;
    if (state.conn === "polling" || state.conn === "connecting") setConn("offline");
    if (state.conn === "live" && !retryTimer) {
      retryTimer = setTimeout(() => ((retryTimer = null), reload()), retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_LOAD_MAX_MS);
    }
  }
  renderBanner();
}

// ---- connection strip -------------------------------------------------------
const CONN_WORDS = { connecting: "connecting…", live: "live", reconnecting: "reconnecting…", polling: "polling", offline: "server unreachable" };
function initConn() {
  on("conn", (c) => {
    const el = $("conn");
    el.dataset.conn = c;
    el.textContent = CONN_WORDS[c] ?? c;
    renderBanner();
    // Live again (or for the first time): catch up on what the stream did not carry,
    // or load at last what failed to load before it opened.
    if (c === "live") reload();
  });
}

/** Load the rest and go live; `loaded` is a load of the queue already under way. */
async function start(loaded = reload()) {
  // A phone reaches the queue only: the computer's settings and agents' configuration are not its to load.
  if (!onPhone()) {
    loadClients();
    loadToken();
    loadSettingsForm();
  }
  await loaded;
  connect(reload);
  $("composer-text").focus();
}

/**
 * Ask whether a token is needed and load the queue at the same time (one
 * round trip less before it shows; without a session the load gets 401,
 * which the gate handles); retried while the server is unreachable.
 */
async function boot() {
  if (onPhone()) return bootPhone();
  const loaded = reload();
  try {
    const session = await api.session();
    if (session.token_required && !session.authenticated) {
      loadError = null; // the gate says what is needed, not an unreachable server
      renderBanner();
      showGate();
      return;
    }
  } catch (err) {
    await loaded;
    loadError = err.message;
    setConn("offline");
    renderBanner();
    setTimeout(boot, 3000);
    return;
  }
  start(loaded);
}

/** On the phone listener: pair (once) or say why not, then run as the page does. */
async function bootPhone() {
  const refused = (text) => {
    const b = $("banner");
    b.textContent = text;
    b.hidden = false;
    disconnect();
    setConn("offline");
  };
  const notPaired = await pairThisPhone();
  if (notPaired) return refused(notPaired);
  // Revoked from the computer: its requests are refused from then on.
  document.addEventListener("auth:required", () => refused("This phone was unpaired on the computer. Pair it again there (Phone → Pair a phone) to use it."));
  start();
}

initConn();
initStranger();
initConnectHelp();
initClients();
initPortNote();
initRecoveryNote();
initRefusedNote();
initStorageFault();
initAgents();
initAsks();
initSettings();
initToken(loadClients);
initTemplates();
initComposer();
initAttach({ refuse: composerError });
initQueues(reload, loadClients);
initRail();
initHeld();
initLedger();
if (!onPhone()) initGate(start);
initPhonePanel();
$("composer-text").focus();
boot();
