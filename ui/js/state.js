// The page's model of the queue it shows, fed by the API and the event
// stream. Views subscribe with on(); every mutation announces what changed.
// This module is the only writer of `state`: views read it and call the
// functions below. The page shows one queue at a time (`state.queue`);
// events about other queues change only the counts in the switcher.

const bus = new EventTarget();

/** The instruction events of /api/events, as the server names them. */
export const KIND = {
  created: "instruction.created",
  updated: "instruction.updated",
  deleted: "instruction.deleted",
  consumed: "instruction.consumed",
};

const QUEUE_KEY = "local-mcp.queue";

export const state = {
  /** The queue the page shows and queues into. */
  queue: localStorage.getItem(QUEUE_KEY) || "default",
  /** Pending instructions of that queue in delivery order. */
  pending: [],
  /** Consumed instructions shown in the ledger, newest first (a window, not all). */
  consumed: [],
  /** How many consumed instructions exist on the server. */
  consumedTotal: 0,
  status: null,
  settings: null,
  /**
   * The newest report the page knows of each agent, in any queue, by
   * `queue\nagent id` (see reportOf): the shown queue's loaded with it, another
   * queue's fetched for its agents (js/agents.js), both kept by report events.
   */
  reports: new Map(),
  /**
   * Questions agents asked, in any queue, by report id: what the "Needs you"
   * box shows wherever the person is (issue 39 §3). Filled from report events
   * and, for a question asked before the page opened, fetched (js/asks.js).
   */
  questions: new Map(),
  /**
   * The answer queued to each report, by report id: the instruction whose
   * `answers` names it (a reply), from any queue, as the page has heard of it.
   */
  answers: new Map(),
  /** "connecting" | "live" | "reconnecting" | "polling" | "offline" */
  conn: "connecting",
  loaded: false,
  /** The instance id of the server this page loaded from (see setStatus). */
  instance: null,
  /** Set once another program answers at this address: the page stops talking. */
  stranger: false,
};

export function on(type, fn) {
  bus.addEventListener(type, (e) => fn(e.detail));
}

function emit(type, detail) {
  bus.dispatchEvent(new CustomEvent(type, { detail }));
}

export function setConn(conn) {
  if (state.conn !== conn) {
    state.conn = conn;
    emit("conn", conn);
  }
}

/**
 * Snapshots being fetched, each with the events applied since its request
 * left. A snapshot can be older than an event that arrived while it was in
 * flight; replaying those events onto it keeps the newer truth (applying an
 * instruction event twice changes nothing).
 */
const inFlight = new Set();

/** Call before fetching a snapshot; pass the result to load(). */
export function beginSnapshot() {
  const missed = [];
  inFlight.add(missed);
  return missed;
}

export function load({ pending, consumed, status }, missed = []) {
  inFlight.delete(missed);
  if (status && !fromOurServer(status)) return;
  state.pending = pending;
  state.consumed = consumed;
  for (const item of pending) learn(KIND.updated, item);
  for (const item of consumed) learn(KIND.consumed, item);
  if (status) setStatus(status);
  for (const [kind, item, answer] of missed) mutate(kind, item, answer);
  state.loaded = true;
  emit("queue", { kind: "load" });
  emit("reports", {});
}

/**
 * Replace the pending rail with a list the server sent (e.g. after a move),
 * replaying the events that arrived while that request was in flight: an
 * answer can be older than an event (an agent took a ticket meanwhile).
 */
export function replacePending(items, missed = []) {
  inFlight.delete(missed);
  state.pending = items;
  for (const item of items) learn(KIND.updated, item);
  for (const [kind, item, answer] of missed) mutate(kind, item, answer);
  emit("queue", { kind: "load" });
}

/** A snapshot fetch failed: stop collecting for it. */
export function abandonSnapshot(missed) {
  inFlight.delete(missed);
}

export function appendConsumed(items) {
  const known = new Set(state.consumed.map((i) => i.id));
  state.consumed.push(...items.filter((i) => !known.has(i.id)));
  emit("ledger", {});
}

/** The shown queue as the last status report describes it. */
export function currentQueue() {
  return state.status?.queues?.find((q) => q.name === state.queue) ?? null;
}

/** Show another queue: its rail and ledger are loaded afresh by the caller. */
export function setQueue(name) {
  if (name === state.queue) return;
  state.queue = name;
  localStorage.setItem(QUEUE_KEY, name);
  state.pending = [];
  state.consumed = [];
  state.consumedTotal = currentQueue()?.consumed_count ?? 0;
  state.loaded = false;
  emit("queue-switch", name);
  emit("queue", { kind: "load" });
}

/**
 * Whether a status comes from the server this page loaded from, known by its
 * instance id (a random id of its database, the same across its restarts).
 * Another id means another program answers at this address now: nothing it
 * says is shown, and the page is told to stop talking ("stranger").
 */
function fromOurServer(status) {
  const instance = status?.server?.instance;
  if (!instance || state.stranger) return !state.stranger;
  state.instance ??= instance;
  if (instance === state.instance) return true;
  state.stranger = true;
  emit("stranger", instance);
  return false;
}

export function setStatus(status) {
  if (!fromOurServer(status)) return;
  state.status = status;
  // The shown queue's count; a queue nobody has used yet has none.
  state.consumedTotal = currentQueue()?.consumed_count ?? 0;
  state.settings = status.settings;
  emit("status", status);
}

export function setSettings(settings) {
  state.settings = settings;
  emit("settings", settings);
}

function byPosition(a, b) {
  return a.position - b.position || a.created_at.localeCompare(b.created_at);
}

const reportKey = (queue, agentId) => `${queue}\n${agentId}`;

/** The newest report the page knows of an agent of a queue, or undefined. */
export const reportOf = (queue, agentId) => state.reports.get(reportKey(queue, agentId));

/** A queue's reports, newest first (a load of the queue shown): its agents' newest, afresh. */
export function setReports(items, queue) {
  for (const key of state.reports.keys()) if (key.startsWith(`${queue}\n`)) state.reports.delete(key);
  for (const r of items) keepNewest(r);
  emit("reports", {});
}

/** Reports fetched for agents of another queue than the shown one: each agent's newest is kept. */
export function learnReports(items) {
  for (const r of items) keepNewest(r);
  if (items.length) emit("reports", {});
}

/** A report event, as the snapshots in flight record it (beside instruction events). */
const REPORT = "report.created";
/** A status event, likewise: a snapshot's older status must not replace it. */
const STATUS = "status.changed";

/** An import landed (its summary, from the event stream): views say what came, and what waits. */
export function announceImport(summary) {
  emit("imported", summary);
}

/** A status event from the stream. */
export function applyStatus(status) {
  for (const missed of inFlight) missed.push([STATUS, status]);
  setStatus(status);
}

/** Whether a report asks the person something: the engine's rule (options, or its text ends with "?"). */
export function asks(report) {
  return report.options.length > 0 || /\?\s*$/.test(report.content);
}

/** A question fetched for an agent whose `asking` names it. */
export function setQuestion(report) {
  state.questions.set(report.id, report);
  emit("reports", {});
}

/** Instructions of another queue, fetched to learn which of them answer a question. */
export function learnAnswers(items) {
  for (const item of items) if (item.answers) state.answers.set(item.answers, item);
  emit("reports", {});
}

export function applyReport(report) {
  if (asks(report)) state.questions.set(report.id, report);
  // A snapshot fetched before this report must not erase it when it lands.
  for (const missed of inFlight) missed.push([REPORT, report]);
  // Any queue's: the agent panel shows each agent's newest, whichever queue is shown.
  attachReport(report);
  emit("reports", {});
  if (report.queue === state.queue) emit("ledger", {});
}

/** Keep `report` as its agent's newest, unless a newer one is known. */
function keepNewest(report) {
  const key = reportKey(report.queue, report.agent_id);
  const newest = state.reports.get(key);
  if (!newest || newest.created_at <= report.created_at) state.reports.set(key, report);
}

function attachReport(report) {
  keepNewest(report);
  const item = report.instruction_id && state.consumed.find((c) => c.id === report.instruction_id);
  if (item) item.report = report;
}

/**
 * What the page last learned of each instruction, by id: how far along its
 * life it is and when that version was written. An instruction is pending
 * (edited, moved, given files…), then consumed or deleted, and never pending
 * again: Send again and Undo make a new one. Events come in the order the
 * server wrote them; the answer to one of the page's own requests does not:
 * it can land after the event that delivered what it added, and used to put
 * it back on the rail as NEXT (issue 25). So each id shows what happened to
 * it last, whatever arrives last.
 */
const known = new Map();

/** 0 pending, 1 consumed, 2 deleted. */
function stageOf(kind, item) {
  if (kind === KIND.deleted) return 2;
  return item.status === "consumed" ? 1 : 0;
}

function learn(kind, item) {
  known.set(item.id, { stage: stageOf(kind, item), at: Date.parse(item.updated_at) || 0 });
  if (item.answers) {
    // A deleted answer leaves its question open again.
    if (kind === KIND.deleted) {
      if (state.answers.get(item.answers)?.id === item.id) state.answers.delete(item.answers);
    } else state.answers.set(item.answers, item);
  }
}

/**
 * Whether a version of an instruction is not older than the one the page
 * knows. An event is older only when its stage is earlier (events arrive in
 * order; their times are not compared, so a server clock set back cannot
 * freeze a ticket). An answer is older also when it was written earlier.
 */
function isNewest(kind, item, answer) {
  const prior = known.get(item.id);
  if (!prior) return true;
  const stage = stageOf(kind, item);
  if (stage !== prior.stage) return stage > prior.stage;
  return !answer || (Date.parse(item.updated_at) || 0) >= prior.at;
}

/** Apply one instruction event from the stream. */
export function applyInstruction(kind, item) {
  apply(kind, item, false);
}

/**
 * Apply the answer to one of the page's own requests (an add, an edit, a
 * reply, files attached…) as the change of `kind` it made: unless the page
 * has heard of something newer about that instruction meanwhile.
 */
export function applyAnswer(kind, item) {
  apply(kind, item, true);
}

function apply(kind, item, answer) {
  for (const missed of inFlight) missed.push([kind, item, answer]);
  if (!mutate(kind, item, answer)) return;
  emit("queue", { kind, item });
  // An answer to a question: the question's blocks say so now.
  if (item.answers) emit("reports", {});
}

/** Change the state by one event or answer; false when it was older than what is known. */
function mutate(kind, item, answer = false) {
  if (kind === REPORT) {
    attachReport(item);
    return true;
  }
  if (kind === STATUS) {
    setStatus(item);
    return true;
  }
  if (!isNewest(kind, item, answer)) return false;
  learn(kind, item);
  const i = state.pending.findIndex((p) => p.id === item.id);
  if (item.queue !== state.queue) {
    // Another queue's, or moved out of this one.
    if (i >= 0) state.pending.splice(i, 1);
    return true;
  }
  if (kind === KIND.deleted) {
    if (i >= 0) state.pending.splice(i, 1);
  } else if (kind === KIND.consumed) {
    if (i >= 0) state.pending.splice(i, 1);
    const c = state.consumed.findIndex((x) => x.id === item.id);
    if (c >= 0) {
      // Delivered again (an in-doubt one, re-sent by the setting): newest first again.
      state.consumed.splice(c, 1);
      state.consumed.unshift(item);
    } else {
      state.consumed.unshift(item);
      state.consumedTotal += 1;
    }
  } else if (item.status === "consumed") {
    // A delivery's fate changed (sent, confirmed, in doubt): keep its report.
    const c = state.consumed.findIndex((x) => x.id === item.id);
    if (c >= 0) state.consumed[c] = { ...item, report: item.report ?? state.consumed[c].report };
  } else if (item.status === "pending") {
    if (i >= 0) state.pending[i] = item;
    else state.pending.push(item);
    state.pending.sort(byPosition);
  }
  return true;
}
