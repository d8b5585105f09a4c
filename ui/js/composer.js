// The composer: type an instruction, queue it at the back of the rail.
// Ctrl/Cmd+Enter queues; whatever was typed stays in the box until the
// server has it.

import { api } from "./api.js";
import { $ } from "./dom.js";
import { applyInstruction, KIND } from "./state.js";
import { BLANK_INSTRUCTION } from "./text.js";

function composerError(msg) {
  const err = $("composer-error");
  err.textContent = msg ?? "";
  err.hidden = !msg;
  $("composer-text").setAttribute("aria-invalid", msg ? "true" : "false");
}

async function queueFromComposer() {
  const box = $("composer-text");
  const text = box.value;
  if (!text.trim()) {
    composerError(BLANK_INSTRUCTION);
    box.focus();
    return;
  }
  const submit = $("composer-submit");
  submit.disabled = true;
  try {
    const { item } = await api.add(text);
    applyInstruction(KIND.created, item);
    box.value = "";
    composerError(null);
  } catch (err) {
    // The text stays in the box: nothing typed is lost.
    composerError(`Not queued: ${err.message}`);
  } finally {
    submit.disabled = false;
    box.focus();
  }
}

export function initComposer() {
  const box = $("composer-text");
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    queueFromComposer();
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      queueFromComposer();
    }
  });
  box.addEventListener("input", () => {
    if (box.value.trim()) composerError(null);
  });
}
