// The agent panel and the header lamp: who is listening, working or gone.

import { $, el } from "./dom.js";
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
  list.replaceChildren(
    ...agents.slice(0, 12).map((a) => {
      const li = el("li", "agent");
      li.dataset.agent = a.agent_id;
      const lamp = el("span", "lamp");
      lamp.dataset.state = a.state;
      lamp.setAttribute("aria-hidden", "true");
      const head = el("div");
      head.append(el("span", "agent__id", a.agent_id), document.createTextNode(" "), el("span", "agent__state", WORDS[a.state]));
      const times = el("p", "agent__times", `seen ${relative(a.last_seen_at, now)} · fetched ${relative(a.last_fetch_at, now)}`);
      if (a.last_seen_at) times.title = `last seen ${exact(a.last_seen_at)}`;
      li.append(lamp, head, times);
      return li;
    }),
  );
}

export function initAgents() {
  on("status", (s) => {
    renderHeader(s);
    renderList(s);
  });
  every20s(() => renderList(state.status));
}
