// Connecting an agent: the MCP URL, the snippet each client expects (the
// engine's, shared with the tray and the CLI), copy buttons, and the note
// that agents must be re-pointed when the port fell back.

import { api } from "./api.js";
import { $ } from "./dom.js";
import { on, state } from "./state.js";
import { START_SENTENCE } from "./text.js";
import { toast } from "./toast.js";

// ---- port fallback: agents configured for the old port must be told ------
export function initPortNote() {
  on("status", (s) => {
    const note = $("port-note");
    const wanted = s.server.requested_port;
    note.hidden = !wanted;
    if (!wanted) return;
    const holder = s.server.requested_port_holder;
    note.textContent = holder
      ? `Port ${wanted} is held by another account's server (${holder}): agents configured for port ${wanted} would reach another account's server. local-mcp is serving on ${location.port}; point your agents at ${s.server.url}/mcp.`
      : `Port ${wanted} was taken, so local-mcp is serving on ${location.port}. Point your agents at ${s.server.url}/mcp (and /mcp/q/<queue> for other queues).`;
  });
}

// ---- MCP config snippets (the engine's, shared with the tray and the CLI) ----
const CLIENT_KEY = "local-mcp.client";
/** What the engine's snippets carry instead of the token (crates/serve/src/http/status.rs). */
const TOKEN_PLACEHOLDER = "<your API token>";

export async function loadClients() {
  const queue = state.queue;
  let data;
  try {
    data = await api.clients(queue);
  } catch {
    return; // the banner already says why; the URL above is still right
  }
  if (queue !== state.queue) return; // switched meanwhile: that queue's answer is on its way
  for (const id of ["mcp-url", "mcp-url-2", "mcp-url-3"]) $(id).textContent = data.mcp_url;
  const pick = $("client-pick");
  const byId = new Map(data.clients.map((c) => [c.id, c]));
  pick.replaceChildren(...data.clients.map((c) => new Option(c.name, c.id)));
  const show = () => {
    const c = byId.get(pick.value) ?? data.clients[0];
    $("client-how").textContent = c.how;
    $("client-snippet").textContent = c.snippet;
    // With a token required the engine writes a placeholder (the page never sees the token): say where it is.
    $("client-token").hidden = !c.snippet.includes(TOKEN_PLACEHOLDER);
  };
  const saved = localStorage.getItem(CLIENT_KEY);
  if (saved && byId.has(saved)) pick.value = saved;
  pick.onchange = () => {
    localStorage.setItem(CLIENT_KEY, pick.value);
    show();
  };
  show();
}

export function initConnectHelp() {
  const url = `${location.origin}/mcp`;
  for (const id of ["mcp-url", "mcp-url-2", "mcp-url-3"]) $(id).textContent = url;
  for (const q of document.querySelectorAll("[data-start-sentence]")) q.textContent = START_SENTENCE;
  // "Connect agents" named in a sentence opens that panel, wherever the layout put it.
  document.body.addEventListener("click", (e) => {
    const btn = e.target.closest("[data-open]");
    if (!btn) return;
    const details = $(btn.dataset.open);
    details.open = true;
    const summary = details.querySelector("summary");
    summary.scrollIntoView({ block: "start" });
    summary.focus();
  });
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

