// A report as the page shows it: the server's sanitized HTML (rendered and
// cleaned by crates/core/src/markdown.rs — the only outside HTML the page ever
// inserts), clamped when long, and what can be done with it now:
// - a question still open (the engine's `asking` names it): its suggested
//   answers and a reply box, where it is asked for (`answers: true`);
// - answered (an instruction whose `answers` names it is known): what was
//   answered and where that answer is, and no box;
// - anything else (a "Done: …"): a small "Reply" that opens a box.
// Answering queues the text at the front of the queue for the agent that
// asked (POST /api/reports/{id}/reply).

import { api } from "./api.js";
import { el } from "./dom.js";
import { applyAnswer, asks, KIND, on, state } from "./state.js";
import { relative } from "./time.js";
import { toast, toastShows } from "./toast.js";

const CLAMP_CHARS = 400;

/** Reports whose "Reply" was opened: the panels re-render often, the box stays open. */
const opened = new Set();

/** Whether this report is its agent's open question, as the engine says (`asking`). */
export function isOpenQuestion(report) {
  return asks(report) && (state.status?.agents ?? []).some((a) => a.asking === report.id && a.queue === report.queue && a.agent_id === report.agent_id);
}

/** The answer queued to this report, if the page knows of one. */
export const answerOf = (report) => state.answers.get(report.id) ?? null;

/** The first line of a text, shortened, in quotes. */
function quoted(text, max = 80) {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  return `“${line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line}”`;
}

/** What became of an answer: next in line, waiting on a held queue, or taken. */
export function answeredLine(report, answer, now = Date.now()) {
  const who = report.agent_id;
  if (answer.status === "consumed") return `You answered ${quoted(answer.content)}; ${who} got it ${relative(answer.consumed_at, now)}.`;
  const held = (state.status?.queues ?? []).find((q) => q.name === answer.queue)?.held;
  if (held) return `You answered ${quoted(answer.content)}: it goes to ${who} once you release ${answer.queue}.`;
  return `You answered ${quoted(answer.content)}: it is next for ${who}.`;
}

/**
 * A report's block. `answers` puts the suggested answers and the reply box
 * under a question that is still open; `replyLink` offers a small "Reply"
 * under any other report that is not answered yet.
 */
export function reportBlock(report, { answers = false, replyLink = false } = {}) {
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
  const answer = answerOf(report);
  if (answer) {
    box.dataset.answered = "true";
    const line = el("p", "report__answered", answeredLine(report, answer));
    box.append(line);
    return box;
  }
  if (answers && isOpenQuestion(report)) {
    box.append(...replyControls(report));
  } else if (replyLink) {
    if (opened.has(report.id)) box.append(...replyControls(report));
    else {
      const open = el("button", "linkish report__open", "Reply");
      open.type = "button";
      open.setAttribute("aria-label", `Reply to ${report.agent_id}`);
      open.addEventListener("click", () => {
        opened.add(report.id);
        open.replaceWith(...replyControls(report));
        box.querySelector(".report__reply input").focus();
      });
      box.append(open);
    }
  }
  return box;
}

/** The suggested answers (when there are any) and the reply box. */
function replyControls(report) {
  const controls = [];
  if (report.options.length) {
    const row = el("div", "report__options");
    row.setAttribute("role", "group");
    row.setAttribute("aria-label", `Answers ${report.agent_id} suggested`);
    for (const option of report.options) {
      const b = el("button", "btn btn--small btn--answer", option);
      b.type = "button";
      b.addEventListener("click", () => answer(report, option, b));
      row.append(b);
    }
    controls.push(row);
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
  controls.push(form);
  return controls;
}

/**
 * Said once an answer is sent: "Sent to asker." when it has reached the
 * agent already (a waiting agent gets it at once), "…: it is next." only
 * while it is pending, "Queued for …" while its queue is held.
 */
function sentLine(report, item) {
  if (item.status === "consumed") return `Sent to ${report.agent_id}.`;
  const held = (state.status?.queues ?? []).find((q) => q.name === item.queue)?.held;
  return held ? `Queued for ${report.agent_id}: it goes once you release ${item.queue}.` : `Sent to ${report.agent_id}: it is next.`;
}

/** The answer the toast says is pending: { id, text, report }, until it is taken or the toast changes. */
let pendingToast = null;
let watching = false;

/** Once the agent takes the answer the toast calls pending, the toast says it was sent. */
function watchDelivery() {
  if (watching) return;
  watching = true;
  on("queue", ({ kind, item }) => {
    if (kind !== KIND.consumed || item?.id !== pendingToast?.id) return;
    const { text, report } = pendingToast;
    pendingToast = null;
    if (toastShows(text)) toast(sentLine(report, item));
  });
}

async function answer(report, text, button) {
  // Busy without `disabled`: a disabled button loses focus (to the page, not the next question).
  if (button.getAttribute("aria-disabled") === "true") return false;
  button.setAttribute("aria-disabled", "true");
  try {
    const { item } = await api.reply(report.id, text);
    opened.delete(report.id);
    applyAnswer(KIND.created, item);
    // The newest the page knows of it: the event of its delivery may have come before this answer.
    const known = state.answers.get(report.id)?.id === item.id ? state.answers.get(report.id) : item;
    const said = sentLine(report, known);
    toast(said);
    pendingToast = known.status === "consumed" ? null : { id: item.id, text: said, report };
    watchDelivery();
    return true;
  } catch (err) {
    toast(`Not sent: ${err.message}`);
    return false;
  } finally {
    button.removeAttribute("aria-disabled");
  }
}
