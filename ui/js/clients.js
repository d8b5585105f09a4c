// The "Connect agents" panel: each MCP client the engine detects, its state
// (connected, outdated, not connected, unreadable), and Connect / Update /
// Disconnect / install-link buttons. The engine edits the files (keeping
// everything else in them); this module only asks and shows what happened.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { state } from "./state.js";

const STATE_WORDS = {
  connected: "connected",
  outdated: "outdated",
  not_connected: "not connected",
  unreadable: "cannot read its file",
  unavailable: "unavailable",
};

let project = "";

function say(text) {
  $("clients-status").textContent = text;
}

function describe(changes) {
  return changes
    .map((c) => {
      const what = c.what === "hook" ? "Stop hook" : "entry";
      const done = {
        written: `Wrote the ${what} in ${c.file}.`,
        unchanged: `Already so in ${c.file}; nothing written.`,
        removed: `Removed the ${what} from ${c.file}.`,
        absent: `Nothing of local-mcp's in ${c.file}.`,
      }[c.action] ?? `${c.action}: ${c.file}`;
      return [done, c.backup ? `Backup: ${c.backup}.` : "", c.note ? `(${c.note})` : ""].filter(Boolean).join(" ");
    })
    .join(" ");
}

async function act(label, run) {
  say(`${label}…`);
  try {
    const r = await run();
    say(r);
  } catch (e) {
    say(e.message);
  }
  await loadConnections();
}

function button(text, cls, action) {
  const b = el("button", cls, text);
  b.type = "button";
  b.dataset.action = action;
  return b;
}

function row(c) {
  const buttons = [];
  const body = () => ({ client: c.id, project: project || null, queue: state.queue });
  if (c.state === "not_connected" || c.state === "outdated") {
    const b = button(c.state === "outdated" ? "Update" : "Connect", "btn btn--small", "connect");
    b.onclick = () =>
      act(`Connecting ${c.name}`, async () => {
        // Claude Code has a Stop hook at both scopes; VS Code in a project (.github/hooks).
        const hooks = $("clients-hooks").checked && (c.id === "claude-code" || (project && (c.id === "vscode" || c.id === "vscode-insiders")));
        return describe((await api.connectClient({ ...body(), hooks })).changes);
      });
    buttons.push(b);
  }
  if (c.state === "connected" || c.state === "outdated") {
    const b = button("Disconnect", "btn btn--small btn--ghost", "disconnect");
    b.onclick = () =>
      act(`Disconnecting ${c.name}`, async () => describe((await api.disconnectClient({ client: c.id, project: project || null })).changes));
    buttons.push(b);
  }
  if (c.deep_link && c.state !== "connected") {
    const b = button(`Install in ${c.name}`, "btn btn--small btn--ghost", "link");
    b.onclick = () =>
      act(`Opening ${c.name}`, async () => {
        await api.openInstallLink(c.id, state.queue);
        return `${c.name} should now ask you to confirm.`;
      });
    buttons.push(b);
  }
  const word = STATE_WORDS[c.state] ?? c.state;
  const item = el("li", `client client--${c.state}${c.installed ? "" : " client--absent"}`);
  const actions = el("span", "client__actions");
  actions.append(...buttons);
  item.append(
    el("span", "client__name", c.name),
    el("span", "client__state", c.installed ? word : `${word} · not detected`),
    actions,
  );
  item.dataset.client = c.id;
  item.dataset.state = c.state;
  const detail = c.detail ?? (c.file ? c.file : "");
  if (detail) item.append(el("span", "client__detail mono", detail));
  if (c.hook) item.append(el("span", "client__detail", "Stop hook installed"));
  return item;
}

export async function loadConnections() {
  let data;
  try {
    data = await api.connections(project);
  } catch (e) {
    say(e.message);
    return;
  }
  // Detected clients (and any we connected) in view; the rest folded away
  // but still connectable: a client may live where it is not detected.
  const shown = (c) => c.installed || !["not_connected", "unavailable"].includes(c.state);
  const near = data.clients.filter(shown);
  const far = data.clients.filter((c) => !shown(c));
  $("client-list").replaceChildren(...near.map(row));
  $("client-list-more").replaceChildren(...far.map(row));
  $("clients-more").hidden = far.length === 0;
  $("clients-more-count").textContent = `${far.length} more, not detected on this computer`;
  $("clients-update").hidden = !data.clients.some((c) => c.state === "outdated");
}

export function initClients() {
  const details = $("clients-details");
  details.addEventListener("toggle", () => {
    if (details.open) loadConnections();
  });
  $("clients-project-form").addEventListener("submit", (e) => {
    e.preventDefault();
    project = $("clients-project").value.trim();
    loadConnections();
  });
  $("clients-update").onclick = () =>
    act("Updating", async () => {
      const r = await api.updateClients();
      return [describe(r.changes), ...r.errors].filter(Boolean).join(" ") || "Nothing needed updating.";
    });
}
