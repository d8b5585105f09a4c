// What the page says about the database itself. A damaged file found at
// start was moved aside and local-mcp started fresh: that notice stays until
// the person dismisses it (remembered per damaged file, so a later recovery
// shows again). A database that cannot be written now (disk full, locked,
// read-only): that alert stays while it lasts and goes when it clears.

import { $ } from "./dom.js";
import { on } from "./state.js";

const KEY = "local-mcp.recovery-dismissed";

export function initRecoveryNote() {
  let shown = null;
  on("status", (s) => {
    const r = s.server.recovered;
    const note = $("recovery-note");
    if (!r || localStorage.getItem(KEY) === r.moved_to) {
      note.hidden = true;
      return;
    }
    shown = r.moved_to;
    $("recovery-text").textContent =
      `local-mcp found its database damaged at start (${r.reason}) and started with a fresh one. ` +
      `The damaged file, with its attachments, is kept at ${r.moved_to} — nothing in it was changed.`;
    note.hidden = false;
  });
  $("recovery-dismiss").addEventListener("click", () => {
    if (shown) localStorage.setItem(KEY, shown);
    $("recovery-note").hidden = true;
  });
}

export function initStorageFault() {
  on("status", (s) => {
    const fault = s.server.storage_fault;
    const alert = $("storage-fault");
    alert.hidden = !fault;
    if (fault) $("storage-fault-text").textContent = `local-mcp cannot write its database: ${fault}.`;
  });
}
