// Claude Code 2.1.330 with MCP tasks past its 120 s mark, for real (about
// 2.5 minutes: run in the background by scripts/test-all.sh, `npm run
// test:slow` here, beside claude-code-slow.test.mjs). Its interactive REPL
// (tasks on by default; claude-tasks.mjs says how it runs) calls
// get_user_request with nothing queued: the server answers at once with a
// task, the model ends its turn, and Claude Code polls the task on its own.
// An instruction queued 130 s after the call — past the 120 s after which
// Claude Code moves a plain call to the background, and past the 108 s at
// which local-mcp ends a plain call's wait for it — reaches the model once,
// through the task, in a turn Claude Code starts by itself; nothing reached
// the model in between (no empty result, no note, no second call).

import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { TEXTS, served, shown, startModel, startServer, until } from "./harness.mjs";
import { backgroundNote, inNotification, interactiveClaude, notifications, taskLog, tasksOpened } from "./claude-tasks.mjs";

/** When the instruction is queued, after the call. */
const QUEUED_AFTER_S = 130;

describe("Claude Code's REPL with MCP tasks: an instruction queued 130 s after the call", () => {
  let server;
  let model;
  let claude;
  const agent = "tasks-slow";
  before(async () => {
    // A wait setting of an hour: a plain call would still end at 108 s (Claude Code's cap).
    server = await startServer({ waitSeconds: 3600, env: { LOG_LEVEL: "info" } });
    model = await startModel({ name: "Claude Code (tasks, slow)" });
    claude = await interactiveClaude({ server, model, name: "claude-tasks-slow" });
  });
  after(async () => {
    await claude?.quit();
    await model?.close();
    await server?.stop();
    if (server) rmSync(server.dir, { recursive: true, force: true });
    claude?.remove();
  });

  test("reaches the model exactly once, through the task; no wait ended early", { timeout: 400_000 }, async (t) => {
    let turn = await claude.next("the first prompt", 120_000);
    turn.call({ agent_id: agent });
    const called = Date.now();
    turn = await claude.next("the call's result (a task, moved to the background)");
    const note = backgroundNote(turn);
    assert.equal(taskLog(server, note.task).created.length, 1, server.log.join("\n"));
    await until(async () => (await server.agent(agent))?.in_task, { timeout: 30_000, what: `${agent}'s task to be polled` });
    turn.say("Waiting for the next instruction.");
    const turns = model.turns.length;

    // Until 130 s after the call: the task stays polled (the server shows the
    // agent in a task: a poll within the last three intervals), the model is
    // not asked anything, and no other call reaches the server.
    let samples = 0;
    while (Date.now() < called + QUEUED_AFTER_S * 1000) {
      await new Promise((r) => setTimeout(r, Math.min(10_000, called + QUEUED_AFTER_S * 1000 - Date.now())));
      const a = await server.agent(agent);
      const at = ((Date.now() - called) / 1000).toFixed(0);
      assert.ok(a?.in_task, `${at} s after the call the task is no longer polled: ${JSON.stringify(a)}`);
      assert.equal(model.turns.length, turns, `${at} s after the call the model was asked again:\n${shown(model.turns.at(-1).body, 4000)}`);
      samples++;
    }
    assert.equal(tasksOpened(server), 1, `another call reached the server:\n${server.log.join("\n")}`);
    assert.doesNotMatch(claude.debugLog(), /poll failure|Lost contact with task/);

    const item = await server.add(TEXTS[0]);
    const queued = Date.now();
    const queuedAt = ((queued - called) / 1000).toFixed(1);
    turn = await claude.next("the turn Claude Code starts by itself when the task completes", 30_000);
    const latency = ((Date.now() - queued) / 1000).toFixed(1);
    assert.ok(latency < 10, `the task delivered ${latency} s after the instruction was queued (polls every 2 s)`);

    // What reached the model since its end of turn: its own text, then the
    // task's notification with the instruction — no tool result in between.
    assert.equal(model.turns.length, turns + 1);
    const since = turn.sinceCall.filter((e) => e.kind !== "result");
    assert.deepEqual(since.map((e) => e.kind), ["assistant", "user"], turn.show());
    const told = notifications(since);
    assert.equal(told.length, 1, turn.show());
    assert.equal(told[0].status, "completed");
    assert.equal(told[0].task, note.task);
    assert.equal(told[0].background, note.background);
    assert.equal(told[0].served?.result_type, "instruction", told[0].text);
    assert.equal(told[0].served.instruction.id, item.id);
    assert.equal(told[0].served.instruction.content, inNotification(TEXTS[0]));
    // One call so far, and its only result was the background note: no empty result, no default_response.
    const results = turn.events.filter((e) => e.kind === "result" && turn.events.some((c) => c.kind === "call" && c.id === e.id && /get_user_request/.test(c.name)));
    assert.equal(results.length, 1, turn.show());
    assert.equal(served(results[0]), null, turn.show());
    // On the server: bound by a poll of that task, written out.
    assert.equal(taskLog(server, note.task).bound.length, 1, server.log.join("\n"));
    await until(async () => (await server.api("GET", `/api/instructions/${item.id}`)).body.item.delivery === "sent", {
      timeout: 10_000,
      what: "the instruction's delivery to be sent",
    });

    // The loop goes on; the instruction is not handed over again.
    turn.call({ agent_id: agent, report: "Done after the long wait." });
    turn = await claude.next("the next call's result");
    assert.notEqual(backgroundNote(turn).task, note.task);
    turn.say("Waiting for the next instruction.");
    assert.ok(await model.quiet(5000), "the model was asked again: the instruction came twice, or the new task ended");
    const consumed = (await server.api("GET", "/api/instructions?status=consumed")).body.items;
    assert.deepEqual(
      consumed.map((i) => [i.id, i.consumed_by_agent_id, i.delivery, i.report?.content]),
      [[item.id, agent, "confirmed", "Done after the long wait."]],
    );
    const last = model.turns.at(-1);
    assert.equal(notifications(last.events).filter((n) => n.served?.instruction?.id === item.id).length, 1, "the instruction is not in exactly one notification");
    t.diagnostic(`task polled through ${samples} samples; instruction queued ${queuedAt} s after the call; the model's turn began ${latency} s later`);
  });
});
