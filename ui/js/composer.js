// The composer: type an instruction, queue it at the back of the current
// queue's rail, for anyone there or for one of its agents. Ctrl/Cmd+Enter
// queues; whatever was typed stays in the box until the server has it.

import { api } from "./api.js";
import { clearStaged, stagedFiles } from "./attach.js";
import { $ } from "./dom.js";
import { applyAnswer, KIND, on, state } from "./state.js";
import { BLANK_INSTRUCTION } from "./text.js";

/** Say (or clear) what is wrong under the composer; what was typed is never touched. */
export function composerError(msg) {
  const err = $("composer-error");
  err.textContent = msg ?? "";
  err.hidden = !msg;
  $("composer-text").setAttribute("aria-invalid", msg ? "true" : "false");
}

async function queueFromComposer() {
  const box = $("composer-text");
  const text = box.value;
  const files = stagedFiles();
  // A screenshot alone is an instruction; blank text alone is not.
  if (!text.trim() && !files.length) {
    composerError(BLANK_INSTRUCTION);
    box.focus();
    return;
  }
  const submit = $("composer-submit");
  submit.disabled = true;
  try {
    const target = $("composer-target").value || null;
    const { item } = files.length ? await api.addWithFiles(text, state.queue, target, files) : await api.add(text, state.queue, target);
    applyAnswer(KIND.created, item);
    box.value = "";
    clearStaged();
    composerError(null);
  } catch (err) {
    // The text and the files stay: nothing typed or pasted is lost.
    composerError(`Not queued: ${err.message}`);
  } finally {
    submit.disabled = false;
    box.focus();
  }
}

/** "For: anyone in <queue>" or one of the agents known in it. */
function renderTargets() {
  const pick = $("composer-target");
  const keep = pick.value;
  const agents = (state.status?.agents ?? []).filter((a) => a.queue === state.queue).map((a) => a.agent_id);
  const options = [new Option(`anyone in ${state.queue}`, "")];
  for (const a of [...new Set(agents)].sort()) options.push(new Option(a, a));
  pick.replaceChildren(...options);
  pick.value = options.some((o) => o.value === keep) ? keep : "";
}

export function initComposer() {
  const box = $("composer-text");
  on("status", renderTargets);
  on("queue-switch", renderTargets);
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
