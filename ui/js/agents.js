// The agent panel and the header lamp: who needs you, who is listening,
// working or gone, in words (js/presence.js), the shown queue's agents
// first. Ids that share one client session (an agent and its subagents) are
// one entry. Each agent has a quiet Stop that ends its loop, kept apart from
// anything that answers it; an offline one a quiet Forget that takes it off
// the lists, and two or more offline "Forget the N gone" (issue 39: they pile
// up). What is forgotten goes with the next status event; an agent that calls
// again is listed again. Each entry shows its agent's newest report whichever
// queue is shown (another queue's fetched once, then kept by the events). The
// questions themselves are above the rail (js/asks.js); this panel points there.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { goToQuestion } from "./asks.js";
import { clientLine, detail, loudness, needingYou, questionOf, stateOf, WORDS, wordOf } from "./presence.js";
import { answerOf, reportBlock } from "./report.js";
import { toast } from "./toast.js";
import { every20s, exact } from "./time.js";
import { learnReports, on, reportOf, state } from "./state.js";

/** Who the header's pill leads to: { queue, agent } of the question first in line, or null. */
let pillAsks = null;

/**
 * The loudest thing in the header: an agent waiting on the person, else the
 * server's summary. It is a control (issue 39 §3): an agent that needs you
 * leads to its question, switching queue if need be; another state to the
 * agent in the panel; no agent yet to Connect agents.
 */
function renderHeader(status) {
  const lamp = $("lamp");
  const word = $("agent-word");
  const asking = needingYou().sort((x, y) => (x.queue === state.queue ? 0 : 1) - (y.queue === state.queue ? 0 : 1));
  let st;
  let parts;
  if (asking.length) {
    const a = asking[0];
    st = "needs_you";
    pillAsks = { queue: a.queue, agent: a.agent_id };
    const where = a.queue !== state.queue ? ` in ${a.queue}` : "";
    const more = asking.length > 1 ? ` and ${asking.length - 1} more` : "";
    parts = [WORDS.needs_you, `${a.agent_id}${where}${more}`];
    word.title = `Go to ${a.agent_id}'s question`;
  } else {
    pillAsks = null;
    // The loudest agent as the page sees it (an answered question needs nobody), else the server's summary.
    const agent = [...(status?.agents ?? [])].sort((x, y) => loudness(y) - loudness(x))[0] ?? status?.agent;
    st = agent?.agent_id ? stateOf(agent) : "offline";
    parts = agent?.agent_id ? [WORDS[st], agent.agent_id] : ["No agent yet"];
    word.title = agent?.agent_id ? `Show ${agent.agent_id} in Agents` : "Connect an agent";
  }
  lamp.dataset.state = st;
  word.dataset.state = st;
  // Two lines at narrow widths: the state, then who (whole, never cut).
  const nodes = [el("span", "strip__state", parts[0])];
  if (parts[1]) nodes.push(el("span", "strip__dot", " · "), el("span", "strip__who", parts[1]));
  word.replaceChildren(...nodes);
}

/** Where the header's pill leads. */
function followPill() {
  if (pillAsks) {
    goToQuestion(pillAsks.queue, pillAsks.agent);
    return;
  }
  const id = $("agent-word").querySelector(".strip__who")?.textContent;
  const row = id && [...$("agents").querySelectorAll("li[data-agent]")].find((li) => li.dataset.agent === id);
  if (row) {
    row.scrollIntoView({ block: "start" });
    row.focus();
    return;
  }
  const connect = $("clients-details");
  connect.open = true;
  connect.querySelector("summary").scrollIntoView({ block: "start" });
  connect.querySelector("summary").focus();
}

const STOP_ICON = "M7 7h10v10H7z";
const FORGET_ICON = "M7.4 6 6 7.4 10.6 12 6 16.6 7.4 18l4.6-4.6 4.6 4.6 1.4-1.4-4.6-4.6L18 7.4 16.6 6 12 10.6z";

/** A quiet action in the agent's own line: its icon and word, named with the agent for screen readers. */
function rowAction(a, { action, word, icon, title }) {
  const btn = el("button", `agent__act agent__${action}`);
  btn.type = "button";
  btn.dataset.action = action;
  btn.title = title;
  btn.setAttribute("aria-label", `${word} ${a.agent_id} in ${a.queue}`);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", icon);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  btn.append(svg, el("span", null, word));
  return btn;
}

const stopButton = (a) => rowAction(a, { action: "stop", word: "Stop", icon: STOP_ICON, title: "End this agent's loop: its next call is told to stop" });

const forgetButton = (a) =>
  rowAction(a, { action: "forget", word: "Forget", icon: FORGET_ICON, title: "Take it off this list (what it took and reported stays); it comes back if it calls again" });

/**
 * Agents of other queues than the shown one whose newest report was asked
 * for (the shown queue's come with its load). Asked again once the live
 * connection comes back: reports made meanwhile came by no event.
 */
const fetched = new Set();

function fetchNewest(a) {
  const key = `${a.queue}\n${a.agent_id}`;
  if (a.queue === state.queue || fetched.has(key)) return;
  fetched.add(key);
  api.reports(a.queue, 1, a.agent_id).then(
    ({ items }) => learnReports(items),
    () => fetched.delete(key), // asked again at the next render
  );
}

/** One agent id: lamp, id, state word, what it means now, its newest report. */
function agentRow(a, { showQueue, client, now }) {
  const li = el("li", "agent");
  const st = stateOf(a);
  li.dataset.agent = a.agent_id;
  li.dataset.queue = a.queue;
  li.dataset.state = st;
  const lamp = el("span", "lamp");
  lamp.dataset.state = st;
  lamp.setAttribute("aria-hidden", "true");
  // Who it is (wrapping as it must), and Stop at the end of the line, never under it.
  const head = el("div", "agent__head");
  const who = el("div", "agent__who");
  const word = el("span", "agent__state", wordOf(a));
  word.dataset.state = st;
  who.append(el("span", "agent__id", a.agent_id), word);
  if (showQueue) who.append(el("span", "chip", a.queue));
  head.append(who);
  if (st === "offline") head.append(forgetButton(a));
  else if (!a.stop_requested) head.append(stopButton(a));
  const line = el("p", "agent__detail", detail(a, now));
  if (a.last_seen_at) line.title = `last heard from ${exact(a.last_seen_at)}`;
  li.append(lamp, head, line);
  if (client) li.append(el("p", "agent__client", client));
  const question = st !== "offline" ? questionOf(a) : null;
  // Its newest report, whichever queue is shown (another queue's is fetched once, then kept by events).
  const report = reportOf(a.queue, a.agent_id);
  fetchNewest(a);
  if (question) {
    // What it asked, here too; its answers and reply box are in "Needs you", above the rail,
    // in whichever queue is shown: one place to answer it.
    li.append(reportBlock(question));
    if (!answerOf(question)) {
      const go = el("button", "btn btn--small btn--answer agent__go", "Answer it");
      go.type = "button";
      go.dataset.action = "answer";
      go.title = "Go to the question, above the rail";
      go.setAttribute("aria-label", `Answer it: ${a.agent_id}'s question`);
      li.append(go);
    }
  } else if (report) {
    // Its newest report: a small "Reply" (a "Done: …" asks nothing), or the answer it got.
    li.append(reportBlock(report, { replyLink: true }));
  }
  li.tabIndex = -1;
  return li;
}

/**
 * Entries of the panel: one per agent, or one per client session with
 * several ids. Loudest first, the shown queue's before the others.
 */
function entries(agents) {
  const groups = new Map();
  for (const a of agents) {
    const key = a.session ? `session\n${a.session}` : `agent\n${a.queue}\n${a.agent_id}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(a);
  }
  const loudest = (g) => Math.max(...g.map(loudness));
  const here = (g) => (g.some((a) => a.queue === state.queue) ? 0 : 1);
  for (const g of groups.values()) g.sort((x, y) => loudness(y) - loudness(x) || x.agent_id.localeCompare(y.agent_id));
  return [...groups.values()].sort((x, y) => here(x) - here(y) || loudest(y) - loudest(x) || x[0].queue.localeCompare(y[0].queue) || x[0].agent_id.localeCompare(y[0].agent_id));
}

/** "Forget the N gone", shown while two or more agents are offline (in any queue: each is forgotten by name). */
function renderForgetGone(status) {
  const btn = $("agents-forget-gone");
  const gone = (status?.agents ?? []).filter((a) => stateOf(a) === "offline").length;
  const had = document.activeElement === btn;
  btn.hidden = gone < 2;
  btn.textContent = `Forget the ${gone} gone`;
  // Gone with what it forgot: focus goes to the panel, not to the page's start.
  if (had && btn.hidden) $("agents-title").focus();
}

function renderList(status) {
  const list = $("agents");
  const agents = (status?.agents ?? []).slice(0, 48);
  $("agents-empty").hidden = agents.length > 0;
  renderForgetGone(status);
  const now = Date.now();
  // Status updates re-render the list: keep what is being typed in a reply box, and where focus was.
  const drafts = new Map([...list.querySelectorAll(".report__reply input")].map((i) => [i.closest("[data-report]").dataset.report, i.value]));
  const focus = focusIn(list);
  const queues = new Set(agents.map((a) => a.queue));
  const showQueue = (a) => queues.size > 1 || a.queue !== "default";
  list.replaceChildren(
    ...entries(agents).map((group) => {
      if (group.length === 1) return agentRow(group[0], { showQueue: showQueue(group[0]), client: clientLine(group[0]), now });
      // One client session under several ids (e.g. subagents): one entry, its ids inside.
      const li = el("li", "agent-session");
      li.dataset.session = group[0].session;
      const client = group.map(clientLine).find(Boolean);
      li.append(el("p", "agent-session__title", client ?? "One client session"), el("p", "agent-session__ids", `${group.length} agent ids in one session`));
      const inner = el("ul", "agent-list agent-list--session");
      inner.append(...group.map((a) => agentRow(a, { showQueue: showQueue(a), client: null, now })));
      li.append(inner);
      return li;
    }),
  );
  for (const input of list.querySelectorAll(".report__reply input")) {
    const id = input.closest("[data-report]").dataset.report;
    input.value = drafts.get(id) ?? "";
  }
  focus?.();
}

/**
 * What has focus in the panel, as a way to find it again once the panel is
 * redrawn. An agent no longer there (forgotten) passes focus to the one that
 * took its place (its Forget, when focus was on Forget), else to the panel.
 */
function focusIn(list) {
  const active = document.activeElement;
  const row = active?.closest?.("li[data-agent]");
  if (!row || !list.contains(row)) return null;
  const { agent, queue } = row.dataset;
  const index = [...list.querySelectorAll("li[data-agent]")].indexOf(row);
  const what = active === row ? null : active.dataset.action ? `[data-action="${active.dataset.action}"]` : active.matches(".report__reply input") ? ".report__reply input" : active.matches(".report__reply button") ? ".report__reply button" : null;
  return () => {
    const rows = [...list.querySelectorAll("li[data-agent]")];
    const again = rows.find((li) => li.dataset.agent === agent && li.dataset.queue === queue);
    if (again) {
      ((what && again.querySelector(what)) || again).focus();
      return;
    }
    const next = rows[Math.min(index, rows.length - 1)];
    if (next) ((what && next.querySelector(what)) || next).focus();
    else $("agents-title").focus();
  };
}

async function stopAgent(btn) {
  const li = btn.closest("li[data-agent]");
  btn.disabled = true;
  try {
    await api.stopAgent(li.dataset.queue, li.dataset.agent);
    toast(`${li.dataset.agent} is told to stop calling.`);
  } catch (err) {
    btn.disabled = false;
    toast(`Not stopped: ${err.message}`);
  }
}

/** "Forgot a and b." */
function forgotten(list) {
  const names = list.map((a) => a.agent_id);
  return names.length > 1 ? `${names.slice(0, -1).join(", ")} and ${names.at(-1)}` : names[0];
}

/** Forget one agent; the status event that follows takes it off the list. */
async function forgetAgent(btn) {
  if (btn.dataset.busy) return;
  btn.dataset.busy = "1";
  const { agent, queue } = btn.closest("li[data-agent]").dataset;
  try {
    const r = await api.forgetAgents({ agent_id: agent, queue });
    toast(r.forgotten.length ? `Forgot ${agent}. It comes back if it calls again.` : `${agent} was no longer listed.`);
  } catch (err) {
    delete btn.dataset.busy;
    // 409: it called meanwhile (listening now); the status event shows it back.
    toast(`Not forgotten: ${err.message}`);
  }
}

/**
 * Forget every agent shown offline, each by name: exactly the N the button
 * counts (the server's `{}` forgets by time alone, and would take a working
 * one not heard from lately too).
 */
async function forgetGone(btn) {
  if (btn.dataset.busy) return;
  btn.dataset.busy = "1";
  const gone = (state.status?.agents ?? []).filter((a) => stateOf(a) === "offline");
  try {
    const results = await Promise.allSettled(gone.map((a) => api.forgetAgents(a)));
    const done = results.flatMap((r) => (r.status === "fulfilled" ? r.value.forgotten : []));
    const failed = results.filter((r) => r.status === "rejected");
    const said = done.length ? `Forgot ${forgotten(done)}.` : "No agent was forgotten.";
    toast(failed.length ? `${said} Not forgotten: ${failed.length} (${failed[0].reason.message})` : said);
  } finally {
    delete btn.dataset.busy;
  }
}

export function initAgents() {
  $("agents").addEventListener("click", (e) => {
    const btn = e.target.closest('[data-action="stop"]');
    if (btn) stopAgent(btn);
    const forget = e.target.closest('[data-action="forget"]');
    if (forget) forgetAgent(forget);
    const go = e.target.closest('[data-action="answer"]');
    if (go) {
      const li = go.closest("li[data-agent]");
      goToQuestion(li.dataset.queue, li.dataset.agent);
    }
  });
  $("agents-forget-gone").addEventListener("click", (e) => forgetGone(e.currentTarget));
  $("agent-word").addEventListener("click", followPill);
  const render = () => {
    renderHeader(state.status);
    renderList(state.status);
  };
  on("queue-switch", render);
  on("reports", () => renderList(state.status));
  on("status", render);
  // "Took “…”" names the newest delivery, which the ledger's events bring.
  on("queue", ({ kind }) => {
    if (kind === "load" || kind === "instruction.consumed") renderList(state.status);
  });
  every20s(() => renderList(state.status));
  let down = false;
  on("conn", (c) => {
    if (c === "live" && down) fetched.clear();
    down = c === "reconnecting" || c === "polling" || c === "offline";
  });
}
