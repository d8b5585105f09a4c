// The ledger: what agents took, newest first, struck through, with "Send
// again" and the report each agent gave on it. A delivery in doubt (its
// answer was cut off) is not struck through: it says so, and "Send again"
// (to that agent, first in line) is the obvious next step. It shows a window of the
// history and loads more as one scrolls (or presses "Show more"). Filtered to one agent it reads as a
// conversation: instruction, report, instruction, report — with the
// reports that stand alone (questions, notes) in their place. The search box
// looks through the whole history on the server (instructions and reports).

import { api } from "./api.js";
import { attachmentStrip } from "./attach.js";
import { $, el } from "./dom.js";
import { appendConsumed, applyAnswer, KIND, on, state } from "./state.js";
import { reportBlock } from "./report.js";
import { markReport, markWords, wordsOf } from "./marks.js";
import { exact, every20s, relative } from "./time.js";
import { toast } from "./toast.js";

const LEDGER_PAGE = 20;
let ledgerShown = LEDGER_PAGE;

/** What the ledger says of a delivery's fate (nothing while it is on its way, sent or confirmed). */
const FATE = {
  in_doubt: (agent) => `In doubt: the answer to ${agent} was cut off — it may never have seen this. Send it again?`,
  resent: () => "Was in doubt; sent again.",
};

/** Instructions longer than this (or than 3 lines) are clamped, with "Show all". */
const CLAMP_LINES = 3;
const CLAMP_CHARS = 240;
/** Entries opened with "Show all": the ledger re-renders often (status events, the 20 s tick). */
const expanded = new Set();

function entryFor(item, now) {
  const doubt = item.delivery === "in_doubt";
  const li = el("li", doubt ? "entry entry--doubt" : "entry");
  li.dataset.id = item.id;
  if (item.delivery) li.dataset.delivery = item.delivery;
  const text = el("p", "entry__text");
  const inText = markWords(text, item.content, searchWords);
  li.append(text);
  if (item.content.length > CLAMP_CHARS || item.content.split("\n").length > CLAMP_LINES) {
    const open = expanded.has(item.id);
    text.dataset.clamped = String(!open);
    const more = el("button", "ticket__more", open ? "Show less" : "Show all");
    more.type = "button";
    more.dataset.action = "expand";
    li.append(more);
  }
  const agent = item.consumed_by_agent_id ?? "unknown agent";
  // Addressed to the agent that took it: said once ("newbie", not "newbie (for newbie)").
  const to = item.target && item.target !== item.consumed_by_agent_id ? ` (for ${item.target})` : "";
  const meta = el("p", "entry__meta", `${agent}${to} · ${relative(item.consumed_at, now)}`);
  meta.title = `taken ${exact(item.consumed_at)}`;
  // In doubt, sending again is the obvious next step: a real button then.
  const again = el("button", doubt ? "btn btn--small btn--primary entry__again" : "entry__again", "Send again");
  again.type = "button";
  again.dataset.action = "requeue";
  again.setAttribute("aria-label", `Send again: ${item.content.slice(0, 60)}`);
  li.append(meta, again);
  const fate = FATE[item.delivery];
  if (fate) li.append(el("p", "entry__fate", fate(agent)));
  if (item.attachments?.length) li.append(attachmentStrip(item));
  if (item.report) {
    const block = reportBlock(item.report);
    // The search found it by its report's words: say so, and show them.
    if (searchWords.length && !inText) {
      li.append(el("p", "entry__found", "Found in its report:"));
      markReport(block.querySelector(".report__body"), searchWords);
    }
    li.append(block);
  }
  return li;
}

/** The agent the ledger is filtered to ("" for all), and its standalone reports. */
let agentFilter = "";
let standalone = [];

function standaloneEntry(report, now) {
  const li = el("li", "entry entry--report");
  li.dataset.report = report.id;
  const meta = el("p", "entry__meta", `${report.agent_id} · ${relative(report.created_at, now)}`);
  meta.title = `reported ${exact(report.created_at)}`;
  li.append(reportBlock(report), meta);
  return li;
}

/** A search of the whole history (server-side), or null for the normal view. */
let found = null;
let searchText = "";
/** The words of the search shown (none in the normal view), as the server takes them. */
let searchWords = [];
const FOUND_AT_MOST = 100;

function renderLedger() {
  const now = Date.now();
  if (found) {
    $("ledger").replaceChildren(...found.map((i) => entryFor(i, now)));
    renderAgentPicker();
    $("ledger-empty").hidden = true;
    $("ledger-aside").textContent =
      found.length === 0 ? "nothing found" : found.length >= FOUND_AT_MOST ? `newest ${FOUND_AT_MOST} found` : `${found.length} found`;
    $("ledger-more").hidden = true;
    return;
  }
  const pool = agentFilter ? state.consumed.filter((i) => i.consumed_by_agent_id === agentFilter) : state.consumed;
  const shown = pool.slice(0, ledgerShown);
  const entries = shown.map((i) => ({ at: i.consumed_at, node: () => entryFor(i, now) }));
  if (agentFilter) {
    for (const r of standalone) entries.push({ at: r.created_at, node: () => standaloneEntry(r, now) });
    entries.sort((a, b) => b.at.localeCompare(a.at));
  }
  $("ledger").replaceChildren(...entries.map((e) => e.node()));
  renderAgentPicker();
  $("ledger-empty").hidden = state.consumed.length > 0;
  const total = Math.max(state.consumedTotal, state.consumed.length);
  $("ledger-aside").textContent = total ? `${total} delivered` : "";
  $("ledger-more").hidden = shown.length >= total;
}

let loadingMore = false;

async function showMore() {
  if (loadingMore) return; // the button and the scroll can both ask at once
  loadingMore = true;
  try {
    ledgerShown += LEDGER_PAGE * 5;
    if (!(await fillLedger())) renderLedger();
  } finally {
    loadingMore = false;
  }
}

/**
 * Scrolling near the end of the ledger loads the next entries, as if "Show
 * more" was pressed (the button stays, for keyboards and for screen readers).
 * An answer that leaves the button in view asks again: a tall window fills.
 * Nothing comes after the ledger (in one column the side panel is above it),
 * so loading as one scrolls pushes nothing away.
 */
function loadWhileScrolling() {
  if (!("IntersectionObserver" in window)) return;
  const more = $("ledger-more");
  let inView = false;
  const observer = new IntersectionObserver(
    async (entries) => {
      inView = entries.some((e) => e.isIntersecting);
      while (inView && !more.hidden && !loadingMore) {
        const before = $("ledger").children.length;
        await showMore();
        if ($("ledger").children.length === before) break; // nothing more came: wait for the next scroll
        await new Promise((r) => requestAnimationFrame(r));
      }
    },
    { rootMargin: "0px 0px 400px 0px" },
  );
  observer.observe(more);
}

/**
 * Load what the ledger should show but the page does not hold yet: after
 * "Show more", and after a reload (a catch-up load brings the first page
 * only, and must not take back what "Show more" had shown). True when a
 * request went out (its answer renders).
 */
async function fillLedger() {
  if (!(state.consumed.length < ledgerShown && state.consumed.length < state.consumedTotal)) return false;
  try {
    const { items } = await api.consumed(state.queue, ledgerShown - state.consumed.length, state.consumed.length);
    appendConsumed(items);
  } catch (err) {
    toast(`Could not load more: ${err.message}`);
    renderLedger();
  }
  return true;
}

async function sendAgain(btn) {
  const id = btn.closest("li").dataset.id;
  btn.disabled = true;
  try {
    const { item } = await api.requeue(id);
    applyAnswer(KIND.created, item);
    toast(item.target ? `Sent again: it is next on the rail, for ${item.target}.` : "Sent again: it is next on the rail.");
  } catch (err) {
    toast(`Not sent again: ${err.message}`);
  } finally {
    btn.disabled = false;
  }
}

function renderAgentPicker() {
  const pick = $("ledger-agent");
  const agents = new Set(state.consumed.map((i) => i.consumed_by_agent_id).filter(Boolean));
  for (const a of state.status?.agents ?? []) if (a.queue === state.queue) agents.add(a.agent_id);
  const wanted = ["", ...[...agents].sort()];
  const have = [...pick.options].map((o) => o.value);
  if (wanted.join("\n") === have.join("\n")) return;
  pick.replaceChildren(...wanted.map((a) => new Option(a || "all", a, false, a === agentFilter)));
}

/** Bumped per filter request: only the newest one's answer is shown. */
let filterSeq = 0;

/** The start of a local calendar day (`2026-11-24` from a date input), `days` later, as an RFC 3339 time. */
function localDayStart(date, days = 0) {
  const [y, m, d] = date.split("-").map(Number);
  return new Date(y, m - 1, d + days).toISOString();
}

/**
 * Search the history for what is in the box and between the dates (with the
 * agent picked); nothing typed or picked: back to the ledger. The dates are
 * the person's own days: "to" includes the whole of its day.
 */
async function search() {
  const seq = ++filterSeq;
  const text = searchText.trim();
  const since = $("ledger-since").value;
  const until = $("ledger-until").value;
  if (!text && !since && !until) {
    found = null;
    searchWords = [];
    renderLedger();
    return;
  }
  try {
    const { items } = await api.searchLedger(
      state.queue,
      text,
      agentFilter,
      FOUND_AT_MOST,
      since ? localDayStart(since) : null,
      until ? localDayStart(until, 1) : null,
    );
    if (seq !== filterSeq) return;
    found = items;
    searchWords = wordsOf(text);
  } catch (err) {
    if (seq !== filterSeq) return;
    toast(`Search failed: ${err.message}`);
    return;
  }
  renderLedger();
}

let searchTimer = null;

/**
 * Show one agent's conversation ("" for everyone). The ledger switches in
 * one step once that agent's standalone reports are in, so it never shows
 * a conversation with its notes missing.
 */
async function filterTo(agent) {
  const seq = ++filterSeq;
  let notes = [];
  if (agent) {
    try {
      const { items } = await api.reports(state.queue, 500, agent);
      notes = items.filter((r) => !r.instruction_id);
    } catch (err) {
      toast(`Could not load ${agent}'s reports: ${err.message}`);
    }
  }
  if (seq !== filterSeq) return; // a newer choice is on its way
  agentFilter = agent;
  standalone = notes;
  if (searchText.trim()) return search();
  renderLedger();
}

export function initLedger() {
  $("ledger-agent").addEventListener("change", (e) => filterTo(e.target.value));
  on("queue-switch", () => filterTo(""));
  // Typing searches the whole history after a short pause; Enter at once.
  $("ledger-search").addEventListener("input", (e) => {
    searchText = e.target.value;
    clearTimeout(searchTimer);
    searchTimer = setTimeout(search, 200);
  });
  for (const id of ["ledger-since", "ledger-until"]) $(id).addEventListener("change", search);
  $("ledger-search-form").addEventListener("submit", (e) => {
    e.preventDefault();
    clearTimeout(searchTimer);
    search();
  });
  // A new standalone report of the agent shown joins the conversation; an answer shows under its question.
  on("reports", () => {
    if (agentFilter) filterTo(agentFilter);
    else renderLedger();
  });
  $("ledger").addEventListener("click", (e) => {
    const btn = e.target.closest("[data-action]");
    if (btn?.dataset.action === "requeue") sendAgain(btn);
    if (btn?.dataset.action === "expand") {
      const li = btn.closest("li");
      const text = li.querySelector(".entry__text");
      const clamped = text.dataset.clamped === "true";
      text.dataset.clamped = String(!clamped);
      btn.textContent = clamped ? "Show less" : "Show all";
      if (clamped) expanded.add(li.dataset.id);
      else expanded.delete(li.dataset.id);
    }
  });
  $("ledger-more").addEventListener("click", showMore);
  loadWhileScrolling();
  on("queue", ({ kind }) => {
    if (kind === "load" || kind === KIND.consumed) renderLedger();
    if (kind === "load") fillLedger();
  });
  on("ledger", renderLedger);
  on("status", renderLedger);
  every20s(renderLedger);
}
