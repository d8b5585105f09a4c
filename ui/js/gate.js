// The token gate: when the server requires a token and this browser has no
// session, a dialog asks for it once and exchanges it for an HttpOnly cookie
// (the token never lands in a URL or in script-readable storage).

import { api } from "./api.js";
import { $ } from "./dom.js";

export function showGate() {
  const gate = $("gate");
  if (!gate.open) gate.showModal();
  $("gate-token").focus();
}

export function initGate(start) {
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

