// The queue switcher: one tab per queue with its pending count, the agents
// waiting on the person's answer and those listening, and held state;
// making, renaming and archiving a queue; its suffix (appended to each
// instruction when delivered, shown above the rail); holding and releasing
// one queue or all of them. Switching reloads the rail, the ledger and the
// connect box for that queue.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { agentsOf, stateOf } from "./presence.js";
import { currentQueue, on, setQueue, state } from "./state.js";
import { toast } from "./toast.js";

function tab(q) {
  const b = el("button", "qtab");
  b.type = "button";
  b.dataset.queue = q.name;
  b.setAttribute("aria-pressed", String(q.name === state.queue));
  const name = el("span", "qtab__name", q.name);
  const count = el("span", "qtab__count", String(q.pending_count));
  count.setAttribute("aria-label", `${q.pending_count} pending`);
  b.append(name, count);
  // An agent waiting on the person's answer is the loudest thing a tab says.
  const asking = agentsOf(q.name).filter((a) => stateOf(a) === "needs_you").map((a) => a.agent_id);
  if (asking.length) {
    const needs = el("span", "qtab__needs", `${asking.length > 1 ? `${asking.length} ` : ""}needs you`);
    needs.title = `Waiting for your answer: ${asking.join(", ")}`;
    b.append(needs);
  }
  const listening = q.waiting_agents.filter((id) => !asking.includes(id));
  if (listening.length) {
    const dot = el("span", "qtab__waiting", `${listening.length} listening`);
    dot.title = listening.join(", ");
    b.append(dot);
  }
  if (q.held) b.append(el("span", "qtab__held", "held"));
  return b;
}

function render() {
  const queues = state.status?.queues ?? [];
  // The shown queue stays in the switcher even before anything exists in it.
  const shown = queues.some((q) => q.name === state.queue)
    ? queues
    : [...queues, { name: state.queue, pending_count: 0, waiting_agents: [], held: false }];
  $("queue-tabs").replaceChildren(...shown.map(tab));
  const cur = currentQueue();
  const hold = $("queue-hold");
  hold.textContent = cur?.held ? `Release ${state.queue}` : `Hold ${state.queue}`;
  hold.dataset.held = String(Boolean(cur?.held));
  hold.disabled = !cur;
  // `default` is where plain /mcp agents go: it is never renamed or archived.
  $("queue-suffix").disabled = !cur;
  $("rail-suffix").hidden = !cur?.suffix;
  $("rail-suffix-text").textContent = cur?.suffix ?? "";
  $("queue-rename").hidden = !cur || state.queue === "default";
  $("queue-archive").hidden = !cur || state.queue === "default";
  const anyHeld = queues.some((q) => q.held);
  const all = $("queue-hold-all");
  all.textContent = anyHeld ? "Release all" : "Hold all";
  all.dataset.held = String(anyHeld);
}

export function initQueues(reload, loadClients) {
  const show = (name) => {
    setQueue(name);
    render();
    reload();
    loadClients();
  };
  $("queue-tabs").addEventListener("click", (e) => {
    const b = e.target.closest("[data-queue]");
    if (b) show(b.dataset.queue);
  });
  $("queue-hold").addEventListener("click", async (e) => {
    const held = e.currentTarget.dataset.held === "true";
    try {
      await (held ? api.release(state.queue) : api.hold(state.queue));
      toast(held ? `${state.queue} released: waiting agents get its instructions now.` : `${state.queue} held: nothing is delivered until you release it.`);
    } catch (err) {
      toast(`Not changed: ${err.message}`);
    }
  });
  $("queue-hold-all").addEventListener("click", async (e) => {
    const held = e.currentTarget.dataset.held === "true";
    try {
      await (held ? api.release() : api.hold());
      toast(held ? "Every queue released." : "Every queue held.");
    } catch (err) {
      toast(`Not changed: ${err.message}`);
    }
  });
  const form = $("queue-new");
  $("queue-add").addEventListener("click", () => {
    form.hidden = false;
    $("queue-new-name").focus();
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const input = $("queue-new-name");
    try {
      const { item } = await api.createQueue(input.value.trim());
      input.value = "";
      form.hidden = true;
      show(item.name);
    } catch (err) {
      // A name that exists already is simply shown.
      if (err.status === 409) {
        form.hidden = true;
        show(input.value.trim().toLowerCase());
      } else toast(`No queue made: ${err.message}`);
    }
  });
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") form.hidden = true;
  });

  const suffix = $("queue-suffix-form");
  $("queue-suffix").addEventListener("click", () => {
    suffix.hidden = false;
    $("queue-suffix-text").value = currentQueue()?.suffix ?? "";
    $("queue-suffix-text").focus();
  });
  suffix.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const { item } = await api.patchQueue(state.queue, { suffix: $("queue-suffix-text").value });
      suffix.hidden = true;
      toast(item.suffix ? `Each instruction of ${item.name} is now delivered with that after it.` : `${item.name} has no suffix now.`);
    } catch (err) {
      toast(`Not saved: ${err.message}`); // the text stays in the box
    }
  });
  suffix.addEventListener("keydown", (e) => {
    if (e.key === "Escape") suffix.hidden = true;
  });

  const rename = $("queue-rename-form");
  $("queue-rename").addEventListener("click", () => {
    rename.hidden = false;
    $("queue-rename-name").value = state.queue;
    $("queue-rename-name").select();
  });
  rename.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const { item } = await api.patchQueue(state.queue, { name: $("queue-rename-name").value.trim() });
      rename.hidden = true;
      toast(`Renamed to ${item.name}. Agents configured with the old URL must be pointed at the new one (Connect an agent).`);
      show(item.name);
    } catch (err) {
      toast(`Not renamed: ${err.message}`);
    }
  });
  rename.addEventListener("keydown", (e) => {
    if (e.key === "Escape") rename.hidden = true;
  });
  $("queue-archive").addEventListener("click", async () => {
    const name = state.queue;
    try {
      await api.patchQueue(name, { archived: true });
      toast(`${name} archived. An agent connecting to it brings it back.`);
      show("default");
    } catch (err) {
      toast(`Not archived: ${err.message}`);
    }
  });
  on("status", render);
}
