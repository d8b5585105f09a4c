// The composer, the pending rail and the ledger.
//
// The rail is rendered keyed by instruction id, so a live update never steals
// focus or throws away a ticket being edited. Server text is only ever set
// with textContent.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { appendConsumed, applyInstruction, on, state } from "./state.js";
import { exact, every20s, relative } from "./time.js";

const LEDGER_PAGE = 20;
const CLAMP_CHARS = 280;
let ledgerShown = LEDGER_PAGE;
/** Tickets being edited: id → { text, conflict } (kept across re-renders). */
const editing = new Map();
const ticketEls = new Map();
let toastTimer = null;



const ICONS = {
  up: "M12 5l-7 7h4v7h6v-7h4z",
  down: "M12 19l7-7h-4V5H9v7H5z",
  edit: "M4 17.5V20h2.5L17 9.5 14.5 7 4 17.5zM19.7 6.8a1 1 0 0 0 0-1.4l-1.1-1.1a1 1 0 0 0-1.4 0L16 5.5 18.5 8l1.2-1.2z",
  delete: "M7 6h10l-1 14H8L7 6zm3-3h4l1 2H9l1-2z",
};

function iconButton(action, label) {
  const b = el("button", "icon-btn");
  b.type = "button";
  b.dataset.action = action;
  b.setAttribute("aria-label", label);
  b.title = label;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[action]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  b.append(svg);
  return b;
}

export function toast(text, action, onAction) {
  const t = $("toast");
  $("toast-text").textContent = text;
  const btn = $("toast-action");
  btn.hidden = !action;
  btn.textContent = action ?? "";
  btn.onclick = action
    ? () => {
        t.hidden = true;
        onAction();
      }
    : null;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 6000);
}

// ---- composer -------------------------------------------------------------

function composerError(msg) {
  const err = $("composer-error");
  err.textContent = msg ?? "";
  err.hidden = !msg;
  $("composer-text").setAttribute("aria-invalid", msg ? "true" : "false");
}

async function queueFromComposer() {
  const box = $("composer-text");
  const text = box.value;
  if (!text.trim()) {
    composerError("Type an instruction first — blank space can't be queued.");
    box.focus();
    return;
  }
  const submit = $("composer-submit");
  submit.disabled = true;
  try {
    const { item } = await api.add(text);
    applyInstruction("instruction.created", item);
    box.value = "";
    composerError(null);
  } catch (err) {
    // The text stays in the box: nothing typed is lost.
    composerError(`Not queued: ${err.message}`);
  } finally {
    submit.disabled = false;
    box.focus();
  }
}

// ---- the rail -------------------------------------------------------------

function fillText(p, content) {
  const long = content.length > CLAMP_CHARS || content.split("\n").length > 3;
  p.textContent = content;
  p.dataset.clamped = long && p.dataset.expanded !== "true" ? "true" : "false";
  return long;
}

function ticketBody(item, index) {
  const body = el("div", "ticket__body");
  const edit = editing.get(item.id);
  if (edit) {
    const label = el("label", "skip", `Edit instruction ${index + 1}`);
    label.htmlFor = `edit-${item.id}`;
    const box = el("textarea", "ticket__editor");
    box.id = `edit-${item.id}`;
    box.value = edit.text;
    box.dataset.editor = item.id;
    const row = el("div", "ticket__edit-row");
    const save = el("button", "btn btn--small btn--primary", "Save");
    save.type = "button";
    save.dataset.action = "save";
    const cancel = el("button", "btn btn--small", "Cancel");
    cancel.type = "button";
    cancel.dataset.action = "cancel";
    row.append(save, cancel, el("span", "hint", "Ctrl+Enter saves · Esc cancels"));
    body.append(label, box, row);
    return body;
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
  return body;
}

/** What a rendered ticket depends on: a changed key means re-render it. */
function ticketKey(item, index, total) {
  return `${item.updated_at}|${index}|${total}|${editing.has(item.id)}`;
}

function ticketFor(item, index, total) {
  const li = el("li", `ticket${index === 0 ? " ticket--head" : ""}`);
  li.dataset.id = item.id;
  li.dataset.key = ticketKey(item, index, total);
  const stub = el("div", "ticket__stub", index === 0 ? "NEXT" : String(index + 1).padStart(2, "0"));
  stub.setAttribute("aria-label", index === 0 ? "next to be delivered" : `number ${index + 1} in line`);
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

function renderRail() {
  const rail = $("rail");
  const items = state.pending;
  $("rail-loading").hidden = state.loaded;
  $("rail-empty").hidden = !state.loaded || items.length > 0;
  const n = items.length;
  $("rail-aside").textContent = n ? `${n} pending` : "";
  $("pending-count").textContent = `${n} pending`;
  document.title = n ? `(${n}) local-mcp` : "local-mcp";

  const wanted = new Set(items.map((i) => i.id));
  for (const [id, node] of ticketEls) {
    if (!wanted.has(id) && !node.classList.contains("ticket--leaving")) {
      ticketEls.delete(id);
      node.remove();
    }
  }
  items.forEach((item, index) => {
    const key = ticketKey(item, index, n);
    let node = ticketEls.get(item.id);
    if (!node || node.dataset.key !== key) {
      const fresh = ticketFor(item, index, n);
      if (node) {
        const hadFocus = node.contains(document.activeElement) ? document.activeElement.dataset.action : null;
        node.replaceWith(fresh);
        if (hadFocus) fresh.querySelector(`[data-action="${hadFocus}"]:not([disabled])`)?.focus();
      }
      node = fresh;
      ticketEls.set(item.id, node);
    }
    const at = rail.children[index];
    if (at !== node) rail.insertBefore(node, at ?? null);
  });
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
  editing.set(id, { text: item.content, conflict: false });
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
  editing.set(id, { text, conflict: false });
  if (!text.trim()) {
    showNotice(id, "An instruction can't be blank. Delete it instead, or type something.");
    return;
  }
  try {
    const { item } = await api.edit(id, text);
    editing.delete(id);
    applyInstruction("instruction.updated", item);
    ticketEls.get(id)?.querySelector('[data-action="edit"]')?.focus();
  } catch (err) {
    if (err.status === 409 || err.status === 404) conflict(id, text, err.status === 409);
    else showNotice(id, `Not saved: ${err.message}`);
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
      const { item } = await api.add(text);
      applyInstruction("instruction.created", item);
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

async function move(id, delta) {
  const order = state.pending.map((i) => i.id);
  const at = order.indexOf(id);
  const to = at + delta;
  if (at < 0 || to < 0 || to >= order.length) return;
  const where = delta < 0 ? { before_id: order[to] } : { after_id: order[to] };
  try {
    const { items } = await api.move(id, where);
    state.pending = items;
    renderRail();
    ticketEls.get(id)?.querySelector(`[data-action="${delta < 0 ? "up" : "down"}"]:not([disabled])`)?.focus();
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
    await api.remove(id);
    applyInstruction("instruction.deleted", item);
    // Keep keyboard focus on the rail.
    const focusTarget = ticketEls.get(nextId) ?? ticketEls.get(order[at - 1]);
    (focusTarget?.querySelector('[data-action="delete"]') ?? $("composer-text")).focus();
    toast("Instruction deleted.", "Undo", async () => {
      try {
        const { item: again } = await api.add(item.content);
        applyInstruction("instruction.created", again);
        if (nextId && state.pending.some((p) => p.id === nextId)) {
          const { items } = await api.move(again.id, { before_id: nextId });
          state.pending = items;
          renderRail();
        }
      } catch (err) {
        toast(`Could not undo: ${err.message}`);
      }
    });
  } catch (err) {
    toast(err.status === 409 ? "Too late: an agent already took that instruction." : `Not deleted: ${err.message}`);
  }
}

// ---- the ledger ------------------------------------------------------------

function entryFor(item, now) {
  const li = el("li", "entry");
  li.dataset.id = item.id;
  const text = el("p", "entry__text", item.content);
  const meta = el("p", "entry__meta", `${item.consumed_by_agent_id ?? "unknown agent"} · ${relative(item.consumed_at, now)}`);
  meta.title = `taken ${exact(item.consumed_at)}`;
  const again = el("button", "btn btn--small", "Send again");
  again.type = "button";
  again.dataset.action = "requeue";
  again.setAttribute("aria-label", `Send again: ${item.content.slice(0, 60)}`);
  li.append(text, meta, again);
  return li;
}

function renderLedger() {
  const now = Date.now();
  const shown = state.consumed.slice(0, ledgerShown);
  $("ledger").replaceChildren(...shown.map((i) => entryFor(i, now)));
  $("ledger-empty").hidden = state.consumed.length > 0;
  const total = Math.max(state.consumedTotal, state.consumed.length);
  $("ledger-aside").textContent = total ? `${total} delivered` : "";
  $("ledger-more").hidden = shown.length >= total;
}

async function showMore() {
  ledgerShown += LEDGER_PAGE * 5;
  if (state.consumed.length < ledgerShown && state.consumed.length < state.consumedTotal) {
    try {
      const { items } = await api.consumed(ledgerShown - state.consumed.length, state.consumed.length);
      appendConsumed(items);
      return;
    } catch (err) {
      toast(`Could not load more: ${err.message}`);
    }
  }
  renderLedger();
}

// ---- wiring ----------------------------------------------------------------

export function initInstructions() {
  const box = $("composer-text");
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    queueFromComposer();
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      queueFromComposer();
    }
  });
  box.addEventListener("input", () => {
    if (box.value.trim()) composerError(null);
  });

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
    if (editor) editing.set(editor.dataset.editor, { text: editor.value, conflict: false });
  });

  $("ledger").addEventListener("click", async (e) => {
    const btn = e.target.closest('[data-action="requeue"]');
    if (!btn) return;
    const id = btn.closest("li").dataset.id;
    btn.disabled = true;
    try {
      const { item } = await api.requeue(id);
      applyInstruction("instruction.created", item);
      toast("Sent again: it is next on the rail.");
    } catch (err) {
      toast(`Not sent again: ${err.message}`);
    } finally {
      btn.disabled = false;
    }
  });
  $("ledger-more").addEventListener("click", showMore);

  on("queue", ({ kind, item }) => {
    if (kind === "instruction.consumed" || kind === "instruction.deleted") {
      if (editing.has(item.id)) {
        const text = editing.get(item.id).text;
        conflict(item.id, text, kind === "instruction.consumed");
      } else {
        departTicket(item.id);
      }
    }
    renderRail();
    if (kind === "load" || kind === "instruction.consumed") renderLedger();
  });
  on("ledger", renderLedger);
  on("status", renderLedger);
  every20s(renderLedger);
}
