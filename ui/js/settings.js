// The settings form: wait seconds, reply text, stale seconds; validated inline.

import { api } from "./api.js";
import { on, setSettings, state } from "./state.js";

const form = () => document.getElementById("settings");

function fill(settings, force = false) {
  const f = form();
  // Do not overwrite what the person is typing.
  if (!settings || (!force && f.contains(document.activeElement))) return;
  f.elements.default_wait_seconds.value = settings.default_wait_seconds;
  f.elements.agent_stale_after_seconds.value = settings.agent_stale_after_seconds;
  f.elements.default_empty_response.value = settings.default_empty_response;
}

function check(input, min, max, label) {
  const error = document.getElementById(`${input.id}-error`);
  const raw = input.value.trim();
  const n = Number(raw);
  let msg = "";
  if (raw === "" || !Number.isInteger(n)) msg = `${label} must be a whole number.`;
  else if (n < min || n > max) msg = `${label} must be between ${min} and ${max}.`;
  input.setAttribute("aria-invalid", msg ? "true" : "false");
  error.textContent = msg;
  error.hidden = !msg;
  return msg ? null : n;
}

export function initSettings() {
  const f = form();
  const status = document.getElementById("settings-status");
  const wait = f.elements.default_wait_seconds;
  const stale = f.elements.agent_stale_after_seconds;
  wait.addEventListener("input", () => check(wait, 0, 86400, "Wait"));
  stale.addEventListener("input", () => check(stale, 1, 86400, "Agent timeout"));
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    const w = check(wait, 0, 86400, "Wait");
    const s = check(stale, 1, 86400, "Agent timeout");
    if (w === null || s === null) {
      (w === null ? wait : stale).focus();
      return;
    }
    status.textContent = "Saving…";
    try {
      const saved = await api.saveConfig({
        default_wait_seconds: w,
        agent_stale_after_seconds: s,
        default_empty_response: f.elements.default_empty_response.value,
      });
      setSettings(saved);
      fill(saved, true);
      status.textContent = "Saved.";
    } catch (err) {
      status.textContent = err.message;
    }
  });
  on("settings", (s) => fill(s));
  on("status", () => fill(state.settings));
}
