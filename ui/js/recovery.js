// The notice that the database was found damaged at start: it was moved
// aside and local-mcp started fresh. It stays until the person dismisses it
// (remembered per damaged file, so a later recovery shows again).

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
