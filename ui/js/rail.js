// The pending rail: tickets in delivery order, edited in place, moved by
// keyboard or pointer, deleted with Undo. A ticket an agent takes slides off;
// one taken or deleted while being edited becomes a conflict panel that keeps
// the person's text.
//
// The rail is rendered keyed by instruction id, so a live update never steals
// focus or throws away a ticket being edited. Server text is only ever set
// with textContent.

import { api } from "./api.js";
import { attachmentStrip, fetchOriginals } from "./attach.js";
import { $, el, iconButton } from "./dom.js";
import { agentsOf, loudness, needingYou, stateOf } from "./presence.js";
import { abandonSnapshot, applyAnswer, beginSnapshot, currentQueue, KIND, on, replacePending, state } from "./state.js";
import { heldTag } from "./text.js";
import { toast } from "./toast.js";

const CLAMP_CHARS = 280;
/** Tickets being edited: id → the text in the editor (kept across re-renders). */
const editing = new Map();
/**
 * Tickets whose edit is on its way to the server. An agent may take one
 * meanwhile: only the answer says whether the edit landed first (saved, and
 * the agent got it) or not (409: the conflict panel keeps the text).
 */
const saving = new Set();
const ticketEls = new Map();

function fillText(p, content) {
  const long = content.length > CLAMP_CHARS || content.split("\n").length > 3;
  p.textContent = content;
  p.dataset.clamped = long && p.dataset.expanded !== "true" ? "true" : "false";
  return long;
}

/** "Queue" and "For" selects of a ticket being edited: moving or readdressing is an edit. */
function addressPickers(item) {
  const queueLabel = el("label", "ticket__pick", "Queue ");
  const queue = el("select");
  queue.dataset.pick = "queue";
  const names = new Set((state.status?.queues ?? []).map((q) => q.name));
  names.add(item.queue);
  for (const n of [...names].sort()) queue.append(new Option(n, n, false, n === item.queue));
  queueLabel.append(queue);
  const forLabel = el("label", "ticket__pick", "For ");
  const target = el("select");
  target.dataset.pick = "target";
  const agents = new Set((state.status?.agents ?? []).filter((a) => a.queue === item.queue).map((a) => a.agent_id));
  if (item.target) agents.add(item.target);
  target.append(new Option("anyone", "", false, !item.target));
  for (const a of [...agents].sort()) target.append(new Option(a, a, false, a === item.target));
  forLabel.append(target);
  return [queueLabel, forLabel];
}

function ticketBody(item, index) {
  const body = el("div", "ticket__body");
  const edit = editing.get(item.id);
  if (edit !== undefined) {
    const label = el("label", "skip", `Edit instruction ${index + 1}`);
    label.htmlFor = `edit-${item.id}`;
    const box = el("textarea", "ticket__editor");
    box.id = `edit-${item.id}`;
    box.value = edit;
    box.dataset.editor = item.id;
    const row = el("div", "ticket__edit-row");
    row.append(...addressPickers(item));
    const save = el("button", "btn btn--small btn--primary", "Save");
    save.type = "button";
    save.dataset.action = "save";
    const cancel = el("button", "btn btn--small", "Cancel");
    cancel.type = "button";
    cancel.dataset.action = "cancel";
    row.append(save, cancel, el("span", "hint", "Ctrl+Enter saves · Esc cancels"));
    body.append(label, box, row);
    if (item.attachments?.length) body.append(attachmentStrip(item, { removable: true }));
    return body;
  }
  if (item.held) {
    // Held since an import or a restore: said in words, not by its look alone (issue 38 §6).
    const tag = el("span", "chip chip--held", heldTag(item.held));
    tag.title = "No agent gets it until you release it (the Release button above the rail)";
    body.append(tag);
  }
  if (item.target) {
    const chip = el("span", "chip chip--target", `for ${item.target}`);
    chip.title = `Only ${item.target} can take this instruction`;
    body.append(chip);
  }
  const p = el("p", "ticket__text");
  const long = fillText(p, item.content);
  body.append(p);
  if (long) {
    const more = el("button", "ticket__more", p.dataset.clamped === "true" ? "Show all" : "Show less");
    more.type = "button";
    more.dataset.action = "expand";
    body.append(more);
  }
  if (item.attachments?.length) body.append(attachmentStrip(item, { removable: true }));
  return body;
}

/** What a rendered ticket depends on: a changed key means re-render it. */
function ticketKey(item, index, total, place) {
  return `${item.updated_at}|${index}|${total}|${place}|${item.held ?? ""}|${editing.has(item.id)}|${item.target ?? ""}`;
}

/**
 * One ticket. `index` is its place on the rail (what the move buttons
 * change); `place` its place in line for delivery, or null while it is held
 * (since an import or a restore): a held ticket is never Next, and the
 * tickets after it are numbered as an agent will get them.
 */
function ticketFor(item, index, total, place) {
  const held = place === null;
  const li = el("li", `ticket${place === 0 ? " ticket--head" : ""}${held ? " ticket--held" : ""}`);
  li.dataset.id = item.id;
  // Focusable by script (after a move or a delete), named by its place and its words.
  li.tabIndex = -1;
  const name = held ? heldTag(item.held) : place === 0 ? "Next" : `Number ${place + 1}`;
  li.setAttribute("aria-label", `${name}: ${item.content.slice(0, 80)}`);
  li.dataset.key = ticketKey(item, index, total, place);
  const stub = el("div", "ticket__stub", held ? "HELD" : place === 0 ? "NEXT" : String(place + 1).padStart(2, "0"));
  stub.setAttribute("aria-label", held ? "held: no agent gets it until you release it" : place === 0 ? "next to be delivered" : `number ${place + 1} in line`);
  const actions = el("div", "ticket__actions");
  if (!editing.has(item.id)) {
    const up = iconButton("up", "Move up");
    up.disabled = index === 0;
    const down = iconButton("down", "Move down");
    down.disabled = index === total - 1;
    actions.append(up, down, iconButton("edit", "Edit"), iconButton("delete", "Delete"));
  }
  li.append(stub, ticketBody(item, index), actions);
  return li;
}

/** An empty rail, with an agent there: what happens to what is queued next. */
const READY = {
  needs_you: "is waiting for your answer: what you queue now goes to it at once.",
  listening: "is listening: what you queue goes to it at once.",
  working: "is working: what you queue goes to it on its next call.",
  idle: "is connected: what you queue goes to it on its next call.",
};
/** The same, while the queue is held: nothing is promised (issue 39 §2). */
const READY_HELD = {
  needs_you: "is waiting for your answer; nothing goes to it while the queue is held.",
  listening: "is listening; nothing goes to it while the queue is held.",
  working: "is working; nothing goes to it while the queue is held.",
  idle: "is connected; nothing goes to it while the queue is held.",
};

/**
 * What the rail says about who takes its work (issue 25 §3): an empty rail
 * explains how to connect an agent only while none is there; work queued
 * with nobody there says nobody will take it.
 */
function renderWhoTakes(n) {
  const there = agentsOf()
    .filter((a) => stateOf(a) !== "offline")
    .sort((x, y) => loudness(y) - loudness(x));
  const ready = $("rail-empty-ready");
  ready.hidden = there.length === 0;
  $("rail-empty-how").hidden = there.length > 0;
  $("connect").hidden = there.length > 0;
  if (there.length) {
    const [a] = there;
    const others = there.length - 1;
    const more = others ? ` (${others} more agent${others > 1 ? "s" : ""} here too)` : "";
    ready.textContent = `${a.agent_id}${more} ${(currentQueue()?.held ? READY_HELD : READY)[stateOf(a)]}`;
  }
  $("rail-nobody").hidden = !state.status || n === 0 || there.length > 0;
}

function renderRail() {
  const rail = $("rail");
  const items = state.pending;
  $("rail-loading").hidden = state.loaded;
  $("rail-empty").hidden = !state.loaded || items.length > 0;
  const n = items.length;
  renderWhoTakes(n);
  const held = currentQueue()?.held;
  $("rail-aside").textContent = `${n ? `${n} pending` : ""}${held ? `${n ? " · " : ""}held` : ""}`;
  $("rail-held").hidden = !held;
  $("pending-count").textContent = `${n} pending`;
  // "(3) needs you · local-mcp": an agent waiting on an answer, in any queue, shows in the tab too.
  document.title = `${n ? `(${n}) ` : ""}${needingYou().length ? "needs you · " : ""}local-mcp`;

  const wanted = new Set(items.map((i) => i.id));
  for (const [id, node] of ticketEls) {
    if (!wanted.has(id) && !node.classList.contains("ticket--leaving")) {
      ticketEls.delete(id);
      node.remove();
    }
  }
  // Moving a node in the DOM takes focus off it: note where focus is, to put it back after.
  const active = document.activeElement;
  const { ticket: holder, action: holding } = focusedTicket();
  // Held tickets wait out of line: the next one is the first not held.
  let line = 0;
  items.forEach((item, index) => {
    const place = item.held ? null : line++;
    const key = ticketKey(item, index, n, place);
    let node = ticketEls.get(item.id);
    if (!node || node.dataset.key !== key) {
      const fresh = ticketFor(item, index, n, place);
      node?.replaceWith(fresh);
      node = fresh;
      ticketEls.set(item.id, node);
    }
    const at = rail.children[index];
    if (at !== node) rail.insertBefore(node, at ?? null);
  });
  const back = holder && ticketEls.get(holder.dataset.id);
  if (back && !back.contains(document.activeElement)) {
    // The same control when its ticket was only moved (an editor keeps its caret), else its like.
    if (back === holder && active.isConnected) active.focus();
    else focusOn(back, holding);
  }
}

/**
 * The ticket holding focus, and where in it: the control's `data-action`,
 * or "ticket" (the ticket itself, or a control without one such as its
 * editor); `ticket` is null when focus is not on the rail.
 */
function focusedTicket() {
  const active = document.activeElement;
  const ticket = active?.closest?.("#rail > li[data-id]") ?? null;
  return { ticket, action: ticket && (ticket === active ? "ticket" : (active.dataset.action ?? "ticket")) };
}

/**
 * Put focus back on a ticket's control `action` after it was redrawn; a
 * move button that is now disabled (the ticket reached an end of the rail)
 * gives way to the other one, and else to the ticket itself: focus never
 * falls to the page (issue 39 §7).
 */
function focusOn(ticket, action) {
  const other = { up: "down", down: "up" }[action];
  const pick = (a) => ticket.querySelector(`[data-action="${a}"]:not([disabled])`);
  (pick(action) ?? (other && pick(other)) ?? ticket).focus();
}

/**
 * Where focus goes when the ticket holding it leaves the rail (an agent took
 * it, it was deleted or moved to another queue elsewhere): the ticket that
 * takes its place (the one after it, else the one before), on the same
 * control where it has one; with the rail empty, the composer. Never the
 * page. Returns what to run once the rail is redrawn, or null when focus is
 * not on a ticket that left.
 */
function focusAfterLeaving() {
  const { ticket, action } = focusedTicket();
  if (!ticket || ticket.classList.contains("ticket--leaving")) return null;
  const order = state.pending.map((i) => i.id);
  if (order.includes(ticket.dataset.id)) return null;
  // The order the person saw (the rail is not redrawn yet): the ticket after it, else the one before.
  const seen = [...$("rail").children].filter((li) => li.dataset.id && !li.classList.contains("ticket--leaving")).map((li) => li.dataset.id);
  const at = seen.indexOf(ticket.dataset.id);
  const next = seen.slice(at + 1).find((id) => order.includes(id)) ?? seen.slice(0, at).reverse().find((id) => order.includes(id));
  return () => {
    const there = next && ticketEls.get(next);
    if (there) focusOn(there, action);
    else $("composer-text").focus();
  };
}

/** A consumed ticket slides off the rail before it disappears. */
function departTicket(id) {
  const node = ticketEls.get(id);
  if (!node) return;
  ticketEls.delete(id);
  if (window.matchMedia("(prefers-reduced-motion: reduce)").matches) {
    node.remove();
    return;
  }
  node.classList.add("ticket--leaving");
  node.addEventListener("animationend", () => node.remove(), { once: true });
  setTimeout(() => node.remove(), 600);
}

// ---- editing, moving, deleting ---------------------------------------------

function startEdit(id) {
  const item = state.pending.find((i) => i.id === id);
  if (!item) return;
  editing.set(id, item.content);
  renderRail();
  const box = document.querySelector(`[data-editor="${CSS.escape(id)}"]`);
  box?.focus();
  box?.setSelectionRange(box.value.length, box.value.length);
}

function cancelEdit(id) {
  editing.delete(id);
  renderRail();
  ticketEls.get(id)?.querySelector('[data-action="edit"]')?.focus();
}

async function saveEdit(id) {
  const box = document.querySelector(`[data-editor="${CSS.escape(id)}"]`);
  const text = box?.value ?? "";
  editing.set(id, text);
  if (!text.trim()) {
    showNotice(id, "An instruction can't be blank. Delete it instead, or type something.");
    return;
  }
  const node = ticketEls.get(id);
  const before = state.pending.find((i) => i.id === id);
  const patch = { content: text };
  const queue = node?.querySelector('[data-pick="queue"]')?.value;
  const target = node?.querySelector('[data-pick="target"]')?.value ?? "";
  if (queue && queue !== before?.queue) patch.queue = queue;
  if ((target || null) !== (before?.target ?? null)) patch.target = target || null;
  saving.add(id);
  try {
    const { item } = await api.edit(id, patch);
    editing.delete(id);
    applyAnswer(KIND.updated, item);
    // Taken while the answer travelled: the agent got the saved text.
    const taken = state.consumed.some((c) => c.id === id);
    if (taken) toast("Saved, and an agent has taken it already: it got your new text.");
    else if (item.queue !== state.queue) toast(`Moved to ${item.queue}.`);
    renderRail();
    ticketEls.get(id)?.querySelector('[data-action="edit"]')?.focus();
  } catch (err) {
    if (err.status === 409 || err.status === 404) conflict(id, text, err.status === 409);
    else showNotice(id, `Not saved: ${err.message}`);
  } finally {
    saving.delete(id);
  }
}

function showNotice(id, msg) {
  const node = ticketEls.get(id);
  if (!node) return;
  node.querySelector(".ticket__notice")?.remove();
  const n = el("p", "ticket__notice", msg);
  n.setAttribute("role", "alert");
  node.querySelector(".ticket__body").append(n);
}

/**
 * The ticket left the rail while being edited (an agent took it, or it was
 * deleted elsewhere). Keep the person's text and offer to queue it as new.
 */
function conflict(id, text, consumed) {
  editing.delete(id);
  const node = ticketEls.get(id);
  node?.remove();
  ticketEls.delete(id);
  renderRail();
  const panel = el("div", "ticket ticket--conflict");
  panel.dataset.conflict = id;
  const stub = el("div", "ticket__stub", "!");
  const body = el("div", "ticket__body");
  const msg = el(
    "p",
    "ticket__notice",
    consumed
      ? "An agent picked this instruction up while you were editing it, so your changes were not applied. Your text is kept here."
      : "This instruction was deleted while you were editing it. Your text is kept here.",
  );
  msg.setAttribute("role", "alert");
  const kept = el("p", "ticket__text", text);
  const row = el("div", "ticket__edit-row");
  const requeue = el("button", "btn btn--small btn--primary", "Queue my version as new");
  requeue.type = "button";
  requeue.addEventListener("click", async () => {
    try {
      const { item } = await api.add(text, state.queue);
      applyAnswer(KIND.created, item);
      panel.remove();
    } catch (err) {
      msg.textContent = `Not queued: ${err.message}`;
    }
  });
  const dismiss = el("button", "btn btn--small", "Discard");
  dismiss.type = "button";
  dismiss.addEventListener("click", () => panel.remove());
  row.append(requeue, dismiss);
  body.append(msg, kept, row);
  panel.append(stub, body, el("div", "ticket__actions"));
  $("conflicts").prepend(panel);
  requeue.focus();
}

/** Ask the server to move a ticket; the rail becomes the order it answers with. */
async function moveTo(id, where) {
  const missed = beginSnapshot();
  try {
    const { items } = await api.move(id, where);
    replacePending(items, missed);
  } catch (err) {
    abandonSnapshot(missed);
    throw err;
  }
}

async function move(id, delta) {
  const order = state.pending.map((i) => i.id);
  const at = order.indexOf(id);
  const to = at + delta;
  if (at < 0 || to < 0 || to >= order.length) return;
  const where = delta < 0 ? { before_id: order[to] } : { after_id: order[to] };
  try {
    await moveTo(id, where);
    const ticket = ticketEls.get(id);
    if (ticket) focusOn(ticket, delta < 0 ? "up" : "down");
  } catch (err) {
    toast(`Not moved: ${err.message}`);
  }
}

async function remove(id) {
  const order = state.pending.map((i) => i.id);
  const at = order.indexOf(id);
  const item = state.pending[at];
  if (!item) return;
  const nextId = order[at + 1];
  try {
    // Its files go with it on the server: keep the originals here for Undo.
    const files = item.attachments?.length ? await fetchOriginals(item) : [];
    await api.remove(id);
    applyAnswer(KIND.deleted, item);
    // Focus on the ticket that took its place (the next one, else the one before), else the composer:
    // not on that ticket's Delete, one Enter away from deleting it too.
    (ticketEls.get(nextId) ?? ticketEls.get(order[at - 1]) ?? $("composer-text")).focus();
    toast("Instruction deleted.", "Undo", async () => {
      try {
        const { item: again } = files.length
          ? await api.addWithFiles(item.content, item.queue, item.target, files)
          : await api.add(item.content, item.queue, item.target);
        applyAnswer(KIND.created, again);
        if (nextId && state.pending.some((p) => p.id === nextId)) {
          await moveTo(again.id, { before_id: nextId });
        }
      } catch (err) {
        toast(`Could not undo: ${err.message}`);
      }
    });
  } catch (err) {
    toast(err.status === 409 ? "Too late: an agent already took that instruction." : `Not deleted: ${err.message}`);
  }
}

// ---- wiring ----------------------------------------------------------------

export function initRail() {
  const rail = $("rail");
  rail.addEventListener("click", (e) => {
    const btn = e.target.closest("[data-action]");
    const li = e.target.closest("li[data-id]");
    if (!btn || !li) return;
    const id = li.dataset.id;
    const actions = {
      up: () => move(id, -1),
      down: () => move(id, 1),
      edit: () => startEdit(id),
      delete: () => remove(id),
      save: () => saveEdit(id),
      cancel: () => cancelEdit(id),
      expand: () => {
        const p = li.querySelector(".ticket__text");
        p.dataset.expanded = p.dataset.expanded === "true" ? "false" : "true";
        p.dataset.clamped = p.dataset.expanded === "true" ? "false" : "true";
        btn.textContent = p.dataset.expanded === "true" ? "Show less" : "Show all";
      },
    };
    actions[btn.dataset.action]?.();
  });
  rail.addEventListener("keydown", (e) => {
    const editor = e.target.closest("[data-editor]");
    if (!editor) return;
    const id = editor.dataset.editor;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      saveEdit(id);
    } else if (e.key === "Escape") {
      e.preventDefault();
      cancelEdit(id);
    }
  });
  rail.addEventListener("input", (e) => {
    const editor = e.target.closest("[data-editor]");
    if (editor) editing.set(editor.dataset.editor, editor.value);
  });

  on("queue", ({ kind, item }) => {
    const gone = kind === KIND.consumed || kind === KIND.deleted;
    // A ticket being edited becomes a conflict panel, which takes focus itself.
    const conflicted = gone && editing.has(item.id) && !saving.has(item.id);
    if (conflicted) conflict(item.id, editing.get(item.id), kind === KIND.consumed);
    // Focus on a ticket that left goes to the one that took its place, not to the page.
    const refocus = focusAfterLeaving();
    if (gone && !conflicted) departTicket(item.id);
    renderRail();
    refocus?.();
  });
  // The held note follows the status report.
  on("status", renderRail);
}
