// The agent panel and the header lamp: who is listening, working or gone,
// grouped by queue, each with "Stop" to end its loop.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { reportBlock } from "./report.js";
import { toast } from "./toast.js";
import { every20s, exact, relative } from "./time.js";
import { on, state } from "./state.js";

const WORDS = { listening: "Listening", working: "Working", idle: "Idle", offline: "Offline" };

function renderHeader(status) {
  const lamp = $("lamp");
  const word = $("agent-word");
  const agent = status?.agent;
  const st = agent?.agent_id ? agent.state : "offline";
  lamp.dataset.state = st;
  word.textContent = agent?.agent_id ? `${WORDS[st]} · ${agent.agent_id}` : "No agent yet";
}

function renderList(status) {
  const list = $("agents");
  const agents = status?.agents ?? [];
  $("agents-empty").hidden = agents.length > 0;
  const now = Date.now();
  // Status updates re-render the list: keep what is being typed in a reply box.
  const drafts = new Map([...list.querySelectorAll(".report__reply input")].map((i) => [i.closest("[data-report]").dataset.report, i.value]));
  const typingIn = document.activeElement?.closest?.("#agents [data-report]")?.dataset.report;
  const queues = new Set(agents.map((a) => a.queue));
  // The shown queue's agents first, then the others grouped by queue.
  const shown = [...agents.slice(0, 24)].sort((x, y) => (x.queue === state.queue ? 0 : 1) - (y.queue === state.queue ? 0 : 1) || x.queue.localeCompare(y.queue));
  list.replaceChildren(
    ...shown.map((a) => {
      const li = el("li", "agent");
      li.dataset.agent = a.agent_id;
      li.dataset.queue = a.queue;
      const lamp = el("span", "lamp");
      lamp.dataset.state = a.state;
      lamp.setAttribute("aria-hidden", "true");
      const head = el("div");
      head.append(el("span", "agent__id", a.agent_id), document.createTextNode(" "), el("span", "agent__state", a.stop_requested ? "Stopping" : WORDS[a.state]));
      if (queues.size > 1 || a.queue !== "default") head.append(document.createTextNode(" "), el("span", "chip", a.queue));
      const times = el("p", "agent__times", `seen ${relative(a.last_seen_at, now)} · fetched ${relative(a.last_fetch_at, now)}`);
      if (a.last_seen_at) times.title = `last seen ${exact(a.last_seen_at)}`;
      li.append(lamp, head, times);
      // The newest thing this agent said, with its suggested answers and a reply box.
      const report = a.queue === state.queue ? state.reports.get(a.agent_id) : null;
      if (report) li.append(reportBlock(report, { answers: true }));
      if (a.state !== "offline" && !a.stop_requested) {
        const stop = el("button", "btn btn--small agent__stop", "Stop");
        stop.type = "button";
        stop.dataset.action = "stop";
        stop.setAttribute("aria-label", `Stop ${a.agent_id} in ${a.queue}`);
        li.append(stop);
      }
      return li;
    }),
  );
  for (const input of list.querySelectorAll(".report__reply input")) {
    const id = input.closest("[data-report]").dataset.report;
    input.value = drafts.get(id) ?? "";
    if (id === typingIn) input.focus();
  }
}

async function stopAgent(btn) {
  const li = btn.closest("li");
  btn.disabled = true;
  try {
    await api.stopAgent(li.dataset.queue, li.dataset.agent);
    toast(`${li.dataset.agent} is told to stop calling.`);
  } catch (err) {
    btn.disabled = false;
    toast(`Not stopped: ${err.message}`);
  }
}

export function initAgents() {
  $("agents").addEventListener("click", (e) => {
    const btn = e.target.closest('[data-action="stop"]');
    if (btn) stopAgent(btn);
  });
  on("queue-switch", () => renderList(state.status));
  on("reports", () => renderList(state.status));
  on("status", (s) => {
    renderHeader(s);
    renderList(s);
  });
  every20s(() => renderList(state.status));
}
