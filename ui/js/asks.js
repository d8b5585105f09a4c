// "Needs you": the questions agents are waiting on, above the rail, so that
// at any width the question and its answers come before the work queued
// behind it (issue 25 §2) — every queue's, so a question is answerable from
// wherever the person is (issue 39 §3); another queue's says which. Each
// shows what the agent asked, its suggested answers and a reply box; once
// answered, what was sent and where it is. Questions are rendered keyed by
// queue and agent, so a status event never steals focus or a half-typed
// reply. goToQuestion() is where the header's pill and the agent panel lead.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { questionOf, stateOf } from "./presence.js";
import { showQueue } from "./queues.js";
import { answerOf, reportBlock } from "./report.js";
import { every20s, exact, relative } from "./time.js";
import { learnAnswers, learnReports, on, setQuestion, state } from "./state.js";

/** queue + agent id → its rendered question, with the key it was rendered for. */
const shown = new Map();
const keyOf = (a) => `${a.queue}\n${a.agent_id}`;

/** Questions being fetched (asked before this page opened, in another queue). */
const fetching = new Set();

/** Fetch a question the page has not seen, and the answers already queued to it. */
async function fetchQuestion(agent) {
  const id = agent.asking;
  if (fetching.has(id)) return;
  fetching.add(id);
  try {
    const [reports, pending] = await Promise.all([api.reports(agent.queue, 5, agent.agent_id), api.pendingFor(agent.queue, agent.agent_id)]);
    learnAnswers(pending.items);
    learnReports(reports.items);
    const report = reports.items.find((r) => r.id === id);
    if (report) setQuestion(report);
  } catch {
    fetching.delete(id); // tried again at the next render
  }
}

/** Open questions of every queue: an agent's question while it is not gone. The shown queue's first. */
function openQuestions() {
  const open = [];
  for (const agent of state.status?.agents ?? []) {
    if (!agent.asking || stateOf(agent) === "offline") continue;
    const report = questionOf(agent);
    if (report) open.push({ agent, report });
    else fetchQuestion(agent);
  }
  const here = ({ agent }) => (agent.queue === state.queue ? 0 : 1);
  const loud = ({ agent }) => (stateOf(agent) === "needs_you" ? 0 : 1);
  return open.sort((x, y) => here(x) - here(y) || loud(x) - loud(y) || x.agent.queue.localeCompare(y.agent.queue) || x.agent.agent_id.localeCompare(y.agent.agent_id));
}

function question(agent, report, now) {
  const li = el("li", "ask");
  li.dataset.agent = agent.agent_id;
  li.dataset.queue = agent.queue;
  li.tabIndex = -1;
  const head = el("p", "ask__head");
  head.append(el("span", "ask__agent", agent.agent_id), document.createTextNode(" asks"));
  if (agent.queue !== state.queue) head.append(" in ", el("span", "chip ask__queue", agent.queue));
  const when = el("span", "ask__when", ` · ${relative(report.created_at, now)}`);
  when.title = exact(report.created_at);
  head.append(when);
  li.append(head, reportBlock(report, { answers: true }));
  return li;
}

/** The kind of answering control `node` is, to find the same one in another question. */
const ANSWERING = [".report__options button", ".report__reply input", ".report__reply button"];
const kindOf = (node) => ANSWERING.find((sel) => node.matches?.(sel)) ?? null;

/**
 * Focus on a question: on its control of `kind` if it has one; else, when
 * `anyAnswer`, its first answer or its reply box; else the question itself.
 */
function focusQuestion(node, kind, anyAnswer = false) {
  const pick = (sel) => (sel ? node.querySelector(sel) : null);
  (pick(kind) ?? (anyAnswer ? (pick(ANSWERING[0]) ?? pick(ANSWERING[1])) : null) ?? node).focus();
}

function render() {
  const list = $("asks-list");
  const now = Date.now();
  const open = openQuestions();
  const wanted = new Set(open.map(({ agent }) => keyOf(agent)));
  // A question that leaves (its agent got the answer) while focus is in it hands focus on:
  // to the question that takes its place, else to the composer. Never to the page.
  let lost = null;
  for (const [key, entry] of shown) {
    if (!wanted.has(key)) {
      if (entry.node.contains(document.activeElement)) {
        lost = { at: [...list.children].indexOf(entry.node), kind: kindOf(document.activeElement) };
      }
      entry.node.remove();
      shown.delete(key);
    }
  }
  open.forEach(({ agent, report }, index) => {
    const answer = answerOf(report);
    // What the question's node shows: a new question, an answer, its fate, the queue shown.
    const key = `${report.id}|${answer?.id ?? ""}|${answer?.status ?? ""}|${agent.queue === state.queue}`;
    let entry = shown.get(keyOf(agent));
    if (!entry || entry.key !== key) {
      const node = question(agent, report, now);
      const focused = entry?.node.contains(document.activeElement);
      const kind = focused ? kindOf(document.activeElement) : null;
      entry?.node.replaceWith(node);
      if (focused) focusQuestion(node, kind);
      entry = { key, node };
      shown.set(keyOf(agent), entry);
    } else {
      const when = entry.node.querySelector(".ask__when");
      when.textContent = ` · ${relative(report.created_at, now)}`;
    }
    if (list.children[index] !== entry.node) list.insertBefore(entry.node, list.children[index] ?? null);
  });
  // Once every question has its answer queued, nothing here needs the person any more.
  const waiting = open.some(({ report }) => !answerOf(report));
  $("asks").hidden = open.length === 0;
  if (lost) {
    const next = list.children[Math.min(lost.at, list.children.length - 1)];
    if (next) focusQuestion(next, lost.kind, true);
    else $("composer-text").focus();
  }
  $("asks").dataset.answered = String(!waiting);
  // "On its way" only when it is: an answer on a held queue waits for the person's Release.
  const held = (name) => (state.status?.queues ?? []).find((q) => q.name === name)?.held;
  const stuck = open.some(({ report }) => answerOf(report)?.status === "pending" && held(answerOf(report).queue));
  $("asks-title").textContent = waiting ? "Needs you" : stuck ? "Answered: held until you release the queue" : "Answered: on its way";
}

/**
 * Take the person to an agent's question: its queue shown (the rail and
 * ledger it is about), the question scrolled into view, focus on its first
 * answer (or its reply box).
 */
export function goToQuestion(queue, agentId) {
  if (queue !== state.queue) showQueue(queue);
  render();
  const node = shown.get(`${queue}\n${agentId}`)?.node;
  if (!node) return;
  node.scrollIntoView({ block: "start" });
  (node.querySelector(".report__options button, .report__reply input") ?? node).focus();
}

export function initAsks() {
  on("status", render);
  on("reports", render);
  on("queue", render);
  on("queue-switch", render);
  every20s(render);
}
