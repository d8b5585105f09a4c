// Instructions held since an import or a restore (issue 38, finding 6): they
// came from a file, and no agent gets one until the person releases it. Above
// the rail, one line says how many of the shown queue's wait and why, with
// "Release them"; another line says which other queues hold some, each name
// a control that goes there. An import's summary, as it lands, says the same.
// The tickets themselves carry their tag (js/rail.js). Releasing is one POST;
// the tags and the line go with the instruction.updated events that follow.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { showQueue } from "./queues.js";
import { applyAnswer, currentQueue, KIND, on, state } from "./state.js";
import { HELD_FROM } from "./text.js";
import { toast } from "./toast.js";

const them = (n) => (n === 1 ? "it" : "them");

/** "3 instructions from an import wait for you: no agent gets them until you release them." */
function waiting(items) {
  const n = items.length;
  const whys = [...new Set(items.map((i) => i.held))];
  const from = whys.length === 1 && HELD_FROM[whys[0]] ? HELD_FROM[whys[0]] : "from an import or a restore";
  return `${n} ${n === 1 ? "instruction" : "instructions"} ${from} ${n === 1 ? "waits" : "wait"} for you: no agent gets ${them(n)} until you release ${them(n)}.`;
}

/** Set a text only when it changes: the line is a live region, read again on every change. */
function say(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

/** Set once the person went to another queue to release its held ones: focus its button when it shows. */
let focusRelease = false;

function render() {
  const held = state.pending.filter((i) => i.held);
  const here = $("held-here");
  here.hidden = held.length === 0;
  if (held.length) {
    say($("held-text"), waiting(held));
    say($("held-release"), `Release ${them(held.length)}`);
  }

  // Other queues, by the status report (it counts every queue's held ones).
  const others = (state.status?.queues ?? []).filter((q) => q.name !== state.queue && q.held_count > 0);
  const there = $("held-elsewhere");
  there.hidden = others.length === 0;
  const key = `${held.length > 0}|${others.map((q) => `${q.name}:${q.held_count}`).join(",")}`;
  if (there.dataset.key !== key) {
    there.dataset.key = key;
    const total = others.reduce((sum, q) => sum + q.held_count, 0);
    const where = others.length === 1 ? "another queue" : "other queues";
    const parts = [`${held.length ? "Also held" : "Held"} in ${where}, until you release ${them(total)} there: `];
    others.forEach((q, i) => {
      const go = el("button", "linkish", q.name);
      go.type = "button";
      go.dataset.heldQueue = q.name;
      go.setAttribute("aria-label", `Show ${q.name}: ${q.held_count} held`);
      parts.push(...(i ? [", "] : []), go, ` (${q.held_count})`);
    });
    parts.push(".");
    there.replaceChildren(...parts);
  }

  if (focusRelease && state.loaded) {
    focusRelease = false;
    (held.length ? $("held-release") : $("composer-text")).focus();
  }
}

/** Release the shown queue's held instructions. */
async function release() {
  const queue = state.queue;
  const button = $("held-release");
  button.disabled = true;
  try {
    const { items } = await api.releaseHeld(queue);
    // The events bring the same; the answer shows it at once (and while the stream is down).
    for (const item of items) applyAnswer(KIND.updated, item);
    const n = items.length;
    const still = currentQueue()?.held ? `: they wait with the rest until you release ${queue} itself` : `: agents get ${them(n)} now, in ${n === 1 ? "its" : "their"} place on the rail`;
    toast(n ? `${n} ${n === 1 ? "instruction" : "instructions"} released${still}.` : "Nothing was held any more.");
    // The button is gone with the line: focus goes to the first released ticket, not to the page.
    const first = items[0] && document.querySelector(`#rail li[data-id="${CSS.escape(items[0].id)}"]`);
    (first ?? $("composer-text")).focus();
  } catch (err) {
    toast(`Not released: ${err.message}`);
  } finally {
    button.disabled = false;
  }
}

/** An import as it lands: what came, and that its pending instructions wait for the person. */
function imported(s) {
  const parts = [];
  if (s.pending) {
    const n = s.pending;
    parts.push(`${n} pending ${n === 1 ? "instruction" : "instructions"}, held: no agent gets ${them(n)} until you release ${them(n)} (the Release button above the rail)`);
  }
  if (s.delivered) parts.push(`${s.delivered} delivered into the ledger`);
  toast(parts.length ? `Imported ${parts.join("; ")}.` : "Imported: nothing new.");
}

export function initHeld() {
  $("held-release").addEventListener("click", release);
  $("held-elsewhere").addEventListener("click", (e) => {
    const go = e.target.closest("[data-held-queue]");
    if (!go) return;
    focusRelease = true;
    showQueue(go.dataset.heldQueue);
  });
  on("queue", render);
  on("status", render);
  on("queue-switch", render);
  on("imported", imported);
}
