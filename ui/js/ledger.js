// The ledger: what agents took, newest first, struck through, with "Send
// again". It shows a window of the history and loads more on request.

import { api } from "./api.js";
import { $, el } from "./dom.js";
import { appendConsumed, applyInstruction, KIND, on, state } from "./state.js";
import { reportBlock } from "./report.js";
import { exact, every20s, relative } from "./time.js";
import { toast } from "./toast.js";

const LEDGER_PAGE = 20;
let ledgerShown = LEDGER_PAGE;

function entryFor(item, now) {
  const li = el("li", "entry");
  li.dataset.id = item.id;
  const text = el("p", "entry__text", item.content);
  const to = item.target ? ` (for ${item.target})` : "";
  const meta = el("p", "entry__meta", `${item.consumed_by_agent_id ?? "unknown agent"}${to} · ${relative(item.consumed_at, now)}`);
  meta.title = `taken ${exact(item.consumed_at)}`;
  const again = el("button", "btn btn--small", "Send again");
  again.type = "button";
  again.dataset.action = "requeue";
  again.setAttribute("aria-label", `Send again: ${item.content.slice(0, 60)}`);
  li.append(text, meta, again);
  if (item.report) li.append(reportBlock(item.report));
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
      const { items } = await api.consumed(state.queue, ledgerShown - state.consumed.length, state.consumed.length);
      appendConsumed(items);
      return;
    } catch (err) {
      toast(`Could not load more: ${err.message}`);
    }
  }
  renderLedger();
}

async function sendAgain(btn) {
  const id = btn.closest("li").dataset.id;
  btn.disabled = true;
  try {
    const { item } = await api.requeue(id);
    applyInstruction(KIND.created, item);
    toast("Sent again: it is next on the rail.");
  } catch (err) {
    toast(`Not sent again: ${err.message}`);
  } finally {
    btn.disabled = false;
  }
}

export function initLedger() {
  $("ledger").addEventListener("click", (e) => {
    const btn = e.target.closest('[data-action="requeue"]');
    if (btn) sendAgain(btn);
  });
  $("ledger-more").addEventListener("click", showMore);
  on("queue", ({ kind }) => {
    if (kind === "load" || kind === KIND.consumed) renderLedger();
  });
  on("ledger", renderLedger);
  on("status", renderLedger);
  every20s(renderLedger);
}
