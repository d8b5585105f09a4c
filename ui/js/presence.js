// What each agent is doing, in a person's words: the server's `state`
// (never guessed from times here), "Needs you" for an agent waiting on the
// person's answer, and one line that says what that means now ("Took “Fix
// the…” 3 min ago", "Not heard from for 9 min"). Read by the header lamp,
// the agent panel, the queue tabs, the questions and the rail's notes, so
// that they all say the same thing. Pure functions of the state: no DOM.

import { reportOf, state } from "./state.js";
import { duration, relative } from "./time.js";

export const WORDS = {
  needs_you: "Needs you",
  listening: "Listening",
  working: "Working",
  idle: "Idle",
  offline: "Offline",
};

/** How loud each state is: the loudest is shown first and in the header. */
const LOUDNESS = { needs_you: 4, listening: 3, working: 2, idle: 1, offline: 0 };

/**
 * The agent's state as the server reports it. An engine that does not send
 * "needs_you" yet still says the agent is waiting and what it asked: a
 * waiting agent with an open question needs the person (issue 25 §2).
 */
export function stateOf(agent) {
  if (agent.state === "needs_you" || (agent.waiting && agent.asking && agent.state !== "offline")) {
    // Answered already (the answer waits on a held queue, or is on its way): it needs nobody now.
    return state.answers.has(agent.asking) ? "listening" : "needs_you";
  }
  return agent.state in WORDS ? agent.state : "idle";
}

export const wordOf = (agent) => (agent.stop_requested ? "Stopping" : WORDS[stateOf(agent)]);

export const loudness = (agent) => LOUDNESS[stateOf(agent)];

/** The question an agent's `asking` names, if the page has it (fetched or heard of, in any queue). */
export function questionOf(agent) {
  if (!agent.asking) return null;
  const known = state.questions.get(agent.asking);
  if (known) return known;
  const newest = reportOf(agent.queue, agent.agent_id);
  return newest?.id === agent.asking ? newest : null;
}

/** The agents of one queue (the shown one by default). */
export function agentsOf(queue = state.queue) {
  return (state.status?.agents ?? []).filter((a) => a.queue === queue);
}

/** Agents that need the person now, loudest first, in any queue. */
export function needingYou() {
  return (state.status?.agents ?? []).filter((a) => stateOf(a) === "needs_you");
}

/** Someone is there to take what is queued: an agent of the queue that is not offline. */
export function anyoneThere(queue = state.queue) {
  return agentsOf(queue).some((a) => stateOf(a) !== "offline");
}

/** The start of an instruction, quoted, for a line about it. */
function quote(text, max = 28) {
  const line = text.split("\n").find((l) => l.trim()) ?? "";
  return `“${line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line}”`;
}

/** The newest instruction the page knows this agent took. */
function lastTaken(agent) {
  return state.consumed.find((c) => c.consumed_by_agent_id === agent.agent_id && c.queue === agent.queue);
}

/** Whether a queue is held, as the last status report says. */
const heldQueue = (name) => Boolean((state.status?.queues ?? []).find((q) => q.name === name)?.held);

/** One line on what the state means now, for the agent panel. */
export function detail(agent, now = Date.now()) {
  if (agent.stop_requested) return "Told to stop: it ends its loop at its next call.";
  const seen = agent.last_seen_at;
  switch (stateOf(agent)) {
    case "needs_you": {
      // When it asked (the question's own time, as "Needs you" says), not when it last called.
      const asked = questionOf(agent);
      return asked ? `Asked you ${relative(asked.created_at, now)}; waiting for your answer.` : "Asked you a question; waiting for your answer.";
    }
    case "listening":
      // A held queue gives it nothing: no promise of an instruction.
      if (heldQueue(agent.queue)) return "Queue held: gets nothing until you release it.";
      return seen ? `Waiting for an instruction for ${duration(seen, now)}.` : "Waiting for an instruction.";
    case "working": {
      const took = lastTaken(agent);
      const at = agent.last_fetch_at ?? took?.consumed_at;
      if (!at) return "Working on what it took.";
      return took ? `Took ${quote(took.content)} ${relative(at, now)}.` : `Took an instruction ${relative(at, now)}.`;
    }
    case "offline":
      return seen ? `Not heard from for ${duration(seen, now)}.` : "Never heard from.";
    default:
      return seen ? `Last heard from ${relative(seen, now)}.` : "Not heard from yet.";
  }
}

/** "Claude Code 2.1.330 · waits up to 108 s", or null when the engine does not say. */
export function clientLine(agent) {
  const c = agent.client;
  if (!c?.name) return null;
  const name = c.version ? `${c.name} ${c.version}` : c.name;
  return Number.isFinite(c.wait_seconds) ? `${name} · waits up to ${c.wait_seconds} s` : name;
}
