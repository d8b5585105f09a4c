// Quick add: one box; Enter queues, Esc cancels. Opened with ?reply=<report
// id>&agent=<id> (the tray does so while an agent waits on its question), it
// answers that agent instead: first in its queue, for it. In the desktop shell the
// window closes by navigating to /quick-add/done or /quick-add/cancel, which
// the shell intercepts — so this page needs no Tauri IPC at all.

import { api } from "./api.js";
import { createStaging, initViewer, pasteFilesInto } from "./attach.js";
import { $, el } from "./dom.js";
import { attachTemplateCompletion } from "./templates.js";
import { BLANK_INSTRUCTION } from "./text.js";

const box = $("quick-text");
const error = $("quick-error");
const params = new URLSearchParams(location.search);
const replyTo = params.get("reply");
const agent = params.get("agent");
if (replyTo) {
  const label = document.querySelector('label[for="quick-text"]');
  label.textContent = `Answer ${agent ?? "the agent"}`;
  // No templates or screenshots in an answer (it is text): the keys that work here.
  $("quick-hint").hidden = true;
  $("quick-hint-answer").hidden = false;
  box.setAttribute("aria-describedby", "quick-hint-answer quick-error");
  showQuestion();
}

/**
 * The question being answered and every answer its agent suggested, as
 * buttons (its notification has room for two; "Reply…" brings the person
 * here for the rest). A question no longer open shows nothing more: the
 * box still answers, and the server says if it cannot.
 */
async function showQuestion() {
  let report;
  try {
    // The question is its agent's newest report.
    const { items } = await api.reports(null, 10, agent);
    report = items.find((r) => r.id === replyTo);
  } catch {
    return;
  }
  if (!report) return;
  const question = $("quick-question");
  question.textContent = report.content.trim();
  question.hidden = false;
  const row = $("quick-options");
  row.setAttribute("aria-label", `Answers ${report.agent_id} suggested`);
  for (const option of report.options) {
    const b = el("button", "btn btn--small btn--answer", option);
    b.type = "button";
    b.addEventListener("click", () => send(option));
    row.append(b);
  }
  row.hidden = report.options.length === 0;
}

// A pasted screenshot goes with the instruction (not with an answer: that is text).
const staging = createStaging($("quick-files"), { onLimit: (msg) => fail(msg), onRemove: () => box.focus() });
if (!replyTo) pasteFilesInto(staging, () => box.focus());
initViewer();

function fail(msg) {
  error.textContent = msg;
  error.hidden = false;
  box.setAttribute("aria-invalid", "true");
  box.focus();
}

/** Answer the question with one of its suggested answers. */
async function send(answer) {
  try {
    await api.reply(replyTo, answer);
    location.assign("/quick-add/done");
  } catch (err) {
    fail(`Not sent: ${err.message}`);
  }
}

async function submit() {
  const text = box.value;
  const files = staging.files();
  if (!text.trim() && !files.length) {
    fail(BLANK_INSTRUCTION);
    return;
  }
  const queue = localStorage.getItem("local-mcp.queue") || "default";
  try {
    if (replyTo) await api.reply(replyTo, text);
    else if (files.length) await api.addWithFiles(text, queue, null, files);
    else await api.add(text, queue);
    box.value = "";
    staging.clear();
    location.assign("/quick-add/done");
  } catch (err) {
    fail(`Not queued: ${err.message}`); // the text stays
  }
}

// Before the box's own keys: while the template list is open, Enter picks and Esc closes it.
if (!replyTo) attachTemplateCompletion(box, $("quick-completions"), { stage: (files) => staging.add(files), fail });
box.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    submit();
  } else if (e.key === "Escape") {
    e.preventDefault();
    box.value = "";
    location.assign("/quick-add/cancel");
  }
});
box.addEventListener("input", () => {
  error.hidden = true;
  box.removeAttribute("aria-invalid");
});
window.addEventListener("focus", () => box.focus());
box.focus();
// Every handler is in place: keys typed from now on are ours (tests wait for this).
$("quick").dataset.ready = "true";
