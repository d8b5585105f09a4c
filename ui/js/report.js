// A report as the page shows it: the server's sanitized HTML (rendered and
// cleaned by engine/src/markdown.rs — the only outside HTML the page ever
// inserts), clamped when long, and, where asked for, its suggested answers
// and a reply box. Answering queues the text at the front of the queue for
// the agent that asked (POST /api/reports/{id}/reply).

import { api } from "./api.js";
import { el } from "./dom.js";
import { applyAnswer, KIND } from "./state.js";
import { toast } from "./toast.js";

const CLAMP_CHARS = 400;

/**
 * A report's block. `answers` adds the reply box, and the option buttons
 * unless `options` is false (a question already answered).
 */
export function reportBlock(report, { answers = false, options = true } = {}) {
  const box = el("div", "report");
  box.dataset.report = report.id;
  const body = el("div", "report__body");
  body.innerHTML = report.html;
  box.append(body);
  if (report.content.length > CLAMP_CHARS || report.content.split("\n").length > 6) {
    body.dataset.clamped = "true";
    const more = el("button", "ticket__more", "Show all");
    more.type = "button";
    more.addEventListener("click", () => {
      const clamped = body.dataset.clamped === "true";
      body.dataset.clamped = clamped ? "false" : "true";
      more.textContent = clamped ? "Show less" : "Show all";
    });
    box.append(more);
  }
  if (!answers) return box;
  if (options && report.options.length) {
    const row = el("div", "report__options");
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", `Answers ${report.agent_id} suggested`);
    for (const option of report.options) {
      const b = el("button", "btn btn--small btn--answer", option);
      b.type = "button";
      b.addEventListener("click", () => answer(report, option, b));
      row.append(b);
    }
    box.append(row);
  }
  const form = el("form", "report__reply");
  const input = el("input");
  input.type = "text";
  input.placeholder = `Reply to ${report.agent_id}…`;
  input.setAttribute("aria-label", `Reply to ${report.agent_id}`);
  const send = el("button", "btn btn--small btn--primary", "Reply");
  send.type = "submit";
  form.append(input, send);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (input.value.trim() && (await answer(report, input.value, send))) input.value = "";
  });
  box.append(form);
  return box;
}

async function answer(report, text, button) {
  button.disabled = true;
  try {
    const { item } = await api.reply(report.id, text);
    applyAnswer(KIND.created, item);
    toast(`Sent to ${report.agent_id}: it is next.`);
    return true;
  } catch (err) {
    toast(`Not sent: ${err.message}`);
    return false;
  } finally {
    button.disabled = false;
  }
}
