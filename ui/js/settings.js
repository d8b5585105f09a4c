// The settings form, built from the engine's definitions (GET
// /api/config/fields): one field per setting with its label, help and limits,
// validated inline with those limits. A new setting appears here without
// touching the page.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { on, setSettings, state } from "./state.js";

/** The definitions, once loaded. */
let fields = [];

const form = () => $("settings");
const inputOf = (field) => form().elements[field.name];

function fill(settings, force = false) {
  const f = form();
  // Do not overwrite what the person is typing.
  if (!settings || !fields.length || (!force && f.contains(document.activeElement))) return;
  for (const field of fields) {
    if (!(field.name in settings)) continue;
    if (field.kind === "switch") inputOf(field).checked = settings[field.name];
    else inputOf(field).value = settings[field.name];
  }
}

/** One field's markup: label, control, help, and a slot for its error. */
function fieldFor(field) {
  const id = `set-${field.short}`;
  const box = el("div", "field");
  const label = el("label", null, field.label);
  label.htmlFor = id;
  let control;
  if (field.kind === "seconds") {
    control = el("input");
    Object.assign(control, { type: "number", inputMode: "numeric", min: field.min, max: field.max, step: 1, required: true });
  } else if (field.kind === "switch") {
    control = el("input");
    control.type = "checkbox";
    box.classList.add("field--switch");
  } else {
    control = el("textarea");
    control.rows = 3;
  }
  control.id = id;
  control.name = field.name;
  const help = el("p", "hint", field.help);
  help.id = `${id}-hint`;
  const error = el("p", "field-error");
  error.id = `${id}-error`;
  error.hidden = true;
  control.setAttribute("aria-describedby", `${id}-hint ${id}-error`);
  box.append(label, control, help, error);
  return box;
}

/** The value to save, or null after saying what is wrong next to the field. */
function check(field) {
  const input = inputOf(field);
  const error = $(`${input.id}-error`);
  let msg = "";
  let value = input.value;
  if (field.kind === "switch") {
    value = input.checked;
  } else if (field.kind === "seconds") {
    const raw = input.value.trim();
    value = Number(raw);
    if (raw === "" || !Number.isInteger(value)) msg = `${field.label} must be a whole number.`;
    else if (value < field.min || value > field.max) msg = `${field.label} must be between ${field.min} and ${field.max}.`;
  } else if (new TextEncoder().encode(value).length > field.max_bytes) {
    msg = `${field.label} must be at most ${field.max_bytes} bytes.`;
  }
  input.setAttribute("aria-invalid", msg ? "true" : "false");
  error.textContent = msg;
  error.hidden = !msg;
  return msg ? null : value;
}

/** Fetch the definitions and build the form (after sign-in: the API needs it). */
export async function loadSettingsForm() {
  if (fields.length) return;
  try {
    ({ fields } = await api.configFields());
  } catch (err) {
    $("settings-status").textContent = `Settings unavailable: ${err.message}`;
    return;
  }
  $("settings-fields").replaceChildren(...fields.map(fieldFor));
  for (const field of fields) inputOf(field).addEventListener("input", () => check(field));
  fill(state.settings, true);
}

export function initSettings() {
  const f = form();
  const status = $("settings-status");
  f.addEventListener("submit", async (e) => {
    e.preventDefault();
    const patch = {};
    for (const field of fields) {
      const value = check(field);
      if (value === null) {
        inputOf(field).focus();
        return;
      }
      patch[field.name] = value;
    }
    status.textContent = "Saving…";
    try {
      const saved = await api.saveConfig(patch);
      setSettings(saved);
      fill(saved, true);
      status.textContent = "Saved.";
    } catch (err) {
      status.textContent = err.message;
    }
  });
  on("settings", (s) => fill(s));
  on("status", (s) => {
    fill(state.settings);
    // Where this server writes its daily log files, when it does.
    $("log-dir").hidden = !s.server.log_dir;
    $("log-dir-path").textContent = s.server.log_dir ?? "";
  });
}
