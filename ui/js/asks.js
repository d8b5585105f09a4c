// "Needs you": the questions the shown queue's agents are waiting on, above
// the rail, so that at any width the question and its answers come before
// the work queued behind it (issue 25 §2). Each shows what the agent asked,
// its suggested answers and a reply box; once answered, what was sent and
// that it is next. Questions are rendered keyed by report, so a status event
// never steals focus or a half-typed reply.

import { $, el } from "./dom.js";
import { agentsOf, stateOf } from "./presence.js";
import { reportBlock } from "./report.js";
import { every20s, exact, relative } from "./time.js";
import { on, state } from "./state.js";

/** agent id → its rendered question, with the key it was rendered for. */
const shown = new Map();

/** Open questions of the shown queue: the agent's newest report, asking, while it is not gone. */
function openQuestions() {
  return agentsOf()
    .filter((a) => a.asking && stateOf(a) !== "offline" && state.reports.get(a.agent_id)?.id === a.asking)
    .sort((x, y) => (stateOf(x) === "needs_you" ? 0 : 1) - (stateOf(y) === "needs_you" ? 0 : 1) || x.agent_id.localeCompare(y.agent_id));
}

/** The answer already queued for this question: an instruction for that agent, queued after it asked. */
function answerTo(agent, report) {
  return state.pending.find((p) => p.target === agent.agent_id && p.created_at >= report.created_at);
}

function question(agent, report, answered, now) {
  const li = el("li", "ask");
  li.dataset.agent = agent.agent_id;
  li.dataset.queue = agent.queue;
  const head = el("p", "ask__head");
  head.append(el("span", "ask__agent", agent.agent_id), document.createTextNode(" asks"));
  const when = el("span", "ask__when", ` · ${relative(report.created_at, now)}`);
  when.title = exact(report.created_at);
  head.append(when);
  li.append(head);
  if (answered) {
    li.append(reportBlock(report));
    const first = answered.content.split("\n")[0];
    li.append(el("p", "ask__answered", `You answered “${first}”: it is next for ${agent.agent_id}.`));
  } else {
    li.append(reportBlock(report, { answers: true }));
  }
  return li;
}

function render() {
  const list = $("asks-list");
  const now = Date.now();
  const open = openQuestions();
  const wanted = new Set(open.map((a) => a.agent_id));
  for (const [id, entry] of shown) {
    if (!wanted.has(id)) {
      entry.node.remove();
      shown.delete(id);
    }
  }
  open.forEach((agent, index) => {
    const report = state.reports.get(agent.agent_id);
    const answered = answerTo(agent, report);
    const key = `${report.id}|${answered?.id ?? ""}`;
    let entry = shown.get(agent.agent_id);
    if (!entry || entry.key !== key) {
      const node = question(agent, report, answered, now);
      entry?.node.replaceWith(node);
      entry = { key, node };
      shown.set(agent.agent_id, entry);
    } else {
      const when = entry.node.querySelector(".ask__when");
      when.textContent = ` · ${relative(report.created_at, now)}`;
    }
    if (list.children[index] !== entry.node) list.insertBefore(entry.node, list.children[index] ?? null);
  });
  // Once every question has its answer queued, nothing here needs the person any more.
  const waiting = open.some((agent) => !answerTo(agent, state.reports.get(agent.agent_id)));
  $("asks").hidden = open.length === 0;
  $("asks").dataset.answered = String(!waiting);
  $("asks-title").textContent = waiting ? "Needs you" : "Answered: on its way";
}

export function initAsks() {
  on("status", render);
  on("reports", render);
  on("queue", render);
  on("queue-switch", render);
  every20s(render);
}
