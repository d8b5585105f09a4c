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
import { QUEUE_NAME_RULE } from "./text.js";
import { toast } from "./toast.js";

/** The engine's rule (model::queue_name): lower case is what is kept. */
const NAME = /^[a-z0-9._-]{1,64}$/;

/**
 * What a typed queue name becomes: `{ name, note }` when the engine takes it
 * (`note` says how it will be called when that is not what was typed), or
 * `{ error }` saying what a name may hold and what is wrong with this one.
 */
export function checkQueueName(typed) {
  const name = typed.trim().toLowerCase();
  if (!name) return { error: QUEUE_NAME_RULE };
  if (NAME.test(name) && !/^\.+$/.test(name)) {
    return { name, note: name !== typed ? `It will be called “${name}”.` : null };
  }
  if (/^\.+$/.test(name)) return { error: `${QUEUE_NAME_RULE} Not only dots.` };
  if (name.length > 64) return { error: `${QUEUE_NAME_RULE} This one has ${name.length}.` };
  const bad = [...new Set([...name].filter((c) => !/[a-z0-9._-]/.test(c)).map((c) => (/\s/.test(c) ? "a space" : `“${c}”`)))];
  const fixed = name.replace(/[^a-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 64);
  return { error: `${QUEUE_NAME_RULE} “${typed.trim()}” has ${bad.join(" and ")}.${fixed ? ` Try “${fixed}”.` : ""}` };
}

/** Show another queue (set by initQueues: it reloads what the page shows). */
export let showQueue = () => {};

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
  // Each offered when it changes something: "Hold all" while a queue is not held,
  // "Release all" while one is; both when some are held and some not.
  const holdAll = $("queue-hold-all");
  const releaseAll = $("queue-release-all");
  const had = document.activeElement;
  holdAll.hidden = queues.length > 0 && queues.every((q) => q.held);
  releaseAll.hidden = !queues.some((q) => q.held);
  // The one pressed may go with what it did: focus goes to the other, not to the page.
  if (had === holdAll && holdAll.hidden) releaseAll.focus();
  if (had === releaseAll && releaseAll.hidden) holdAll.focus();
}

/**
 * A form of the queue bar that opens under it: `toggle` opens and closes it,
 * Esc and Cancel close it and give focus back to `toggle`.
 */
function barForm(form, toggle, { onOpen }) {
  const close = () => {
    form.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
  };
  toggle.addEventListener("click", () => {
    if (!form.hidden) {
      close();
      return;
    }
    for (const other of document.querySelectorAll(".queues__form")) other.hidden = true;
    form.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    onOpen();
  });
  const back = () => {
    close();
    toggle.focus();
  };
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") back();
  });
  form.querySelector("[data-cancel]").addEventListener("click", back);
  return close;
}

/**
 * A queue name typed in `input`, said back under it as it is typed: the
 * rule, how the name will be called (no silent change), or what is wrong.
 */
function nameField(input, note) {
  const say = (text, error = false) => {
    note.textContent = text;
    note.classList.toggle("field-error", error);
    input.setAttribute("aria-invalid", String(error));
  };
  const check = () => {
    const typed = input.value;
    if (!typed.trim()) return say(QUEUE_NAME_RULE);
    const r = checkQueueName(typed);
    say(r.error ?? r.note ?? QUEUE_NAME_RULE, Boolean(r.error));
  };
  input.addEventListener("input", check);
  return {
    check,
    /** The name to send, or null (the reason is shown). */
    name() {
      const r = checkQueueName(input.value);
      if (r.error) {
        say(r.error, true);
        input.focus();
        return null;
      }
      return r.name;
    },
    fail: (message) => say(message, true),
  };
}

export function initQueues(reload, loadClients) {
  const show = (name) => {
    setQueue(name);
    render();
    reload();
    loadClients();
  };
  showQueue = show;
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
  const everyQueue = (held) => async () => {
    try {
      await (held ? api.release() : api.hold());
      toast(held ? "Every queue released." : "Every queue held: nothing is delivered until you release them.");
    } catch (err) {
      toast(`Not changed: ${err.message}`);
    }
  };
  $("queue-hold-all").addEventListener("click", everyQueue(false));
  $("queue-release-all").addEventListener("click", everyQueue(true));

  const form = $("queue-new");
  const input = $("queue-new-name");
  const newName = nameField(input, $("queue-new-note"));
  const closeNew = barForm(form, $("queue-add"), {
    onOpen: () => {
      newName.check();
      input.focus();
    },
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = newName.name();
    if (!name) return;
    try {
      const { item } = await api.createQueue(name);
      input.value = "";
      closeNew();
      show(item.name);
    } catch (err) {
      // A name that exists already is simply shown.
      if (err.status === 409) {
        input.value = "";
        closeNew();
        show(name);
      } else newName.fail(`No queue made: ${err.message}`);
    }
  });

  const suffix = $("queue-suffix-form");
  const closeSuffix = barForm(suffix, $("queue-suffix"), {
    onOpen: () => {
      $("queue-suffix-text").value = currentQueue()?.suffix ?? "";
      $("queue-suffix-text").focus();
    },
  });
  suffix.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const { item } = await api.patchQueue(state.queue, { suffix: $("queue-suffix-text").value });
      closeSuffix();
      toast(item.suffix ? `Each instruction of ${item.name} is now delivered with that after it.` : `${item.name} has no suffix now.`);
    } catch (err) {
      toast(`Not saved: ${err.message}`); // the text stays in the box
    }
  });

  const rename = $("queue-rename-form");
  const renameInput = $("queue-rename-name");
  const newAs = nameField(renameInput, $("queue-rename-note"));
  const closeRename = barForm(rename, $("queue-rename"), {
    onOpen: () => {
      renameInput.value = state.queue;
      newAs.check();
      renameInput.select();
    },
  });
  rename.addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = newAs.name();
    if (!name) return;
    try {
      const { item } = await api.patchQueue(state.queue, { name });
      closeRename();
      toast(`Renamed to ${item.name}. Agents configured with the old URL must be pointed at the new one (Connect an agent).`);
      show(item.name);
    } catch (err) {
      newAs.fail(`Not renamed: ${err.message}`);
    }
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
