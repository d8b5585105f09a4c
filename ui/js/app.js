// Entry module: wires the feature modules together and loads the queue.
// It holds no feature logic of its own.

import { api } from "./api.js";
import { initAgents } from "./agents.js";
import { $ } from "./dom.js";
import { connect } from "./events.js";
import { initInstructions, toast } from "./instructions.js";
import { initSettings } from "./settings.js";
import { initToken, loadToken } from "./token.js";
import { abandonSnapshot, beginSnapshot, load, on, setConn, state } from "./state.js";

const INITIAL_LEDGER = 50;

/** Why the last load failed, if it did. */
let loadError = null;

/**
 * The banner says what is wrong now: a failed load, or a dropped live
 * connection. Derived from state, so a late success cannot hide a live problem.
 */
function renderBanner() {
  const msg = loadError ? `${loadError} Retrying…` : state.conn === "reconnecting" ? "Lost the live connection to local-mcp. Reconnecting…" : null;
  const b = $("banner");
  b.textContent = msg ?? "";
  b.hidden = !msg;
}

/** Fetch everything the page shows (first load, after a reset, while polling). */
async function reload() {
  const missed = beginSnapshot();
  try {
    const [pending, consumed, status] = await Promise.all([api.pending(), api.consumed(Math.max(INITIAL_LEDGER, state.consumed.length)), api.status()]);
    load({ pending: pending.items, consumed: consumed.items, status }, missed);
    loadError = null;
  } catch (err) {
    abandonSnapshot(missed);
    if (err.status === 401) return; // the token gate handles it
    loadError = err.message;
    if (state.conn === "polling" || state.conn === "connecting") setConn("offline");
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
    if (c === "live" && state.loaded) reload();
  });
}

// ---- port fallback: agents configured for the old port must be told ------
function initPortNote() {
  on("status", (s) => {
    const note = $("port-note");
    const wanted = s.server.requested_port;
    note.hidden = !wanted;
    if (wanted) note.textContent = `Port ${wanted} was taken, so local-mcp is serving on ${location.port}. Point your agents at ${s.server.url}/mcp.`;
  });
}

// ---- MCP config snippets (the engine's, shared with the tray and the CLI) ----
const CLIENT_KEY = "local-mcp.client";

async function loadClients() {
  let data;
  try {
    data = await api.clients();
  } catch {
    return; // the banner already says why; the URL above is still right
  }
  const pick = $("client-pick");
  const byId = new Map(data.clients.map((c) => [c.id, c]));
  pick.replaceChildren(...data.clients.map((c) => new Option(c.name, c.id)));
  const show = () => {
    const c = byId.get(pick.value) ?? data.clients[0];
    $("client-how").textContent = c.how;
    $("client-snippet").textContent = c.snippet;
  };
  const saved = localStorage.getItem(CLIENT_KEY);
  if (saved && byId.has(saved)) pick.value = saved;
  pick.onchange = () => {
    localStorage.setItem(CLIENT_KEY, pick.value);
    show();
  };
  show();
}

function initConnectHelp() {
  const url = `${location.origin}/mcp`;
  $("mcp-url").textContent = url;
  $("mcp-url-2").textContent = url;
  document.body.addEventListener("click", async (e) => {
    const btn = e.target.closest("[data-copy]");
    if (!btn) return;
    try {
      const source = $(btn.dataset.copy);
      await navigator.clipboard.writeText(source instanceof HTMLInputElement ? source.value : source.textContent);
      toast("Copied.");
    } catch {
      toast("Copy failed: select the text and copy it by hand.");
    }
  });
}

// ---- token gate -------------------------------------------------------------
function showGate() {
  const gate = $("gate");
  if (!gate.open) gate.showModal();
  $("gate-token").focus();
}

function initGate(start) {
  document.addEventListener("auth:required", showGate);
  $("gate-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const input = $("gate-token");
    const error = $("gate-error");
    if (!input.value.trim()) {
      error.textContent = "Enter the token.";
      error.hidden = false;
      return;
    }
    try {
      await api.login(input.value);
      input.value = "";
      error.hidden = true;
      $("gate").close();
      start();
    } catch (err) {
      error.textContent = err.status === 401 ? "That is not this server's token." : err.message;
      error.hidden = false;
      input.select();
    }
  });
}

async function start() {
  loadClients();
  loadToken();
  await reload();
  connect(reload);
  $("composer-text").focus();
}

/** Ask whether a token is needed, then load; retried while the server is unreachable. */
async function boot() {
  try {
    const session = await api.session();
    loadError = null;
    renderBanner();
    if (session.token_required && !session.authenticated) {
      showGate();
      return;
    }
  } catch (err) {
    loadError = err.message;
    setConn("offline");
    renderBanner();
    setTimeout(boot, 3000);
    return;
  }
  start();
}

initConn();
initConnectHelp();
initPortNote();
initAgents();
initSettings();
initToken(loadClients);
initInstructions();
initGate(start);
$("composer-text").focus();
boot();
